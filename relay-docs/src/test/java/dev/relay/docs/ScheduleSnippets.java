package dev.relay.docs;

import dev.relay.Outcome;
import dev.relay.Relay;
import dev.relay.Schedule;
import dev.relay.Schedule.MissedSlots;
import dev.relay.schedule.ScheduleStatus;
import dev.relay.schedule.Scheduler;
import java.time.Duration;
import javax.sql.DataSource;

/** The code of docs/scheduling.md. */
final class ScheduleSnippets {
  private ScheduleSnippets() {}

  /** Builds the nightly report for the slot named in the payload. */
  interface Reports {
    String build(String slotPayload);
  }

  static void scheduler(DataSource dataSource) {
    // docs:begin schedule-scheduler
    Scheduler scheduler = Scheduler.builder(dataSource)
        .schedule("nightly-report", "report",
            Schedule.cron("30 2 * * *", "Europe/Berlin"))                  // 02:30 Berlin time
        .schedule("stock-sync", "stock_sync",
            Schedule.every(Duration.ofMinutes(5))                          // :00, :05, ... UTC
                .missedSlots(MissedSlots.each(Duration.ofHours(1))))
        .build();
    scheduler.start();          // registers the schedules, then decides due slots
    // ... on shutdown:
    scheduler.close();
    // docs:end
  }

  static void handler(DataSource dataSource, Reports reports) {
    // docs:begin schedule-handler
    // The slot's work: ID "nightly-report@2026-12-02T01:30:00Z",
    // payload {"schedule": "nightly-report", "slot": "2026-12-02T01:30:00Z"}.
    Relay relay = Relay.builder(dataSource)
        .handle("report", claim -> Outcome.done(reports.build(claim.payload())))
        .build();
    // docs:end
    relay.close();
  }

  static void policies() {
    // docs:begin schedule-policies
    Schedule dropLate = Schedule.cron("0 * * * *", "UTC").missedSlots(MissedSlots.skip());
    Schedule runOnce = Schedule.cron("0 * * * *", "UTC").missedSlots(MissedSlots.latest());
    Schedule catchUp = Schedule.cron("0 * * * *", "UTC")
        .missedSlots(MissedSlots.each(Duration.ofHours(6)));
    // docs:end
    if (dropLate.equals(runOnce) || runOnce.equals(catchUp)) {
      throw new AssertionError();
    }
  }

  static void list(DataSource dataSource) {
    // docs:begin schedule-list
    for (ScheduleStatus s : ScheduleStatus.list(dataSource, "relay")) {
      System.out.println(s.name() + " last " + s.lastSlot() + " next " + s.nextSlot());
    }
    // docs:end
  }
}
