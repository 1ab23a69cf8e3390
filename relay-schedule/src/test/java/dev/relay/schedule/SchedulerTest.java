package dev.relay.schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.CommitOutcomeUnknownException;
import dev.relay.InvalidConfigurationException;
import dev.relay.Schedule;
import dev.relay.Schedule.MissedSlots;
import dev.relay.ScheduleException;
import dev.relay.test.LoopbackProxy;
import dev.relay.test.PgBouncer;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import javax.sql.DataSource;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.postgresql.ds.PGSimpleDataSource;

@RelayDatabaseTest
class SchedulerTest {
  private static final Schedule EVERY_SECOND = Schedule.every(Duration.ofSeconds(1));

  /**
   * How long the several-instances test runs; {@code -Drelay.schedule.test.seconds=20} for more.
   */
  private static final int SECONDS = Integer.getInteger("relay.schedule.test.seconds", 8);

  private static Scheduler.Builder builder(DataSource ds, TestDatabase db) {
    return Scheduler.builder(ds).schema(db.schema()).notifications(false);
  }

  private static Instant dbNow(TestDatabase db) throws SQLException {
    try (Connection c = db.connection();
        PreparedStatement ps = c.prepareStatement("SELECT clock_timestamp()");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getObject(1, OffsetDateTime.class).toInstant();
    }
  }

  /** The slots enqueued for {@code schedule} after {@code after}, by available_at. */
  private static List<Instant> slots(TestDatabase db, String schedule, Instant after)
      throws SQLException {
    List<Instant> slots = new ArrayList<>();
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT work_id, available_at, payload::text FROM "
                    + db.schema()
                    + ".work WHERE work_id LIKE ? AND available_at > ? ORDER BY available_at")) {
      ps.setString(1, schedule + "@%");
      ps.setObject(2, after.atOffset(ZoneOffset.UTC));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          Instant slot = rs.getObject(2, OffsetDateTime.class).toInstant();
          // The ID and the payload are pure functions of (schedule, slot).
          assertThat(rs.getString(1)).isEqualTo(schedule + "@" + slot);
          assertThat(rs.getString(3))
              .isEqualTo("{\"slot\": \"" + slot + "\", \"schedule\": \"" + schedule + "\"}");
          slots.add(slot);
        }
      }
    }
    return slots;
  }

  private static ScheduleStatus status(TestDatabase db, String name) {
    return ScheduleStatus.list(db.dataSource(), db.schema()).stream()
        .filter(s -> s.name().equals(name))
        .findFirst()
        .orElseThrow();
  }

  private static void assertConsecutiveSeconds(List<Instant> slots) {
    for (int i = 1; i < slots.size(); i++) {
      assertThat(Duration.between(slots.get(i - 1), slots.get(i)))
          .as("gap or double between slot %d and %d", i - 1, i)
          .isEqualTo(Duration.ofSeconds(1));
    }
  }

  @Nested
  class SeveralSchedulers {
    @Test
    void everySecondWithThreeSchedulersGivesExactlyOneItemPerSlot(TestDatabase db)
        throws Exception {
      List<Scheduler> schedulers = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        schedulers.add(
            builder(db.newDataSource("scheduler-" + i, 2), db)
                .schedulerId("scheduler-" + i)
                .pollInterval(Duration.ofMillis(50))
                .schedule("pulse", "pulse", EVERY_SECOND)
                .build());
      }
      Instant started = dbNow(db);
      try {
        schedulers.forEach(Scheduler::start);
        Instant until = started.plusSeconds(SECONDS);
        await()
            .atMost(Duration.ofSeconds(SECONDS + 60))
            .pollInterval(Duration.ofMillis(200))
            .until(() -> !dbNow(db).isBefore(until));
      } finally {
        schedulers.forEach(Scheduler::close);
      }

      List<Instant> slots = slots(db, "pulse", Instant.EPOCH);
      ScheduleStatus state = status(db, "pulse");
      // None missing, none doubled: consecutive seconds from the first slot after registration
      // to the last one decided, and no scheduler ever found a slot's ID already taken.
      assertThat(slots).hasSizeGreaterThanOrEqualTo(SECONDS - 2);
      assertThat(slots.get(0)).isAfter(state.createdAt());
      assertThat(Duration.between(state.createdAt(), slots.get(0)))
          .isLessThanOrEqualTo(Duration.ofSeconds(1));
      assertConsecutiveSeconds(slots);
      assertThat(slots.get(slots.size() - 1)).isEqualTo(state.lastSlot());
      assertThat(state.enqueued()).isEqualTo(slots.size());
      // Every row was inserted by exactly one scheduler.
      assertThat(schedulers.stream().mapToLong(s -> s.inserted.get()).sum())
          .isEqualTo(slots.size());
      assertThat(state.conflicts()).isZero();
      assertThat(state.skipped()).isZero();
      assertThat(state.nextSlot()).isEqualTo(state.lastSlot().plusSeconds(1));
    }
  }

  @Nested
  class BehindPgBouncer {
    /**
     * Schedulers need no session of their own: two of them through PgBouncer in transaction pooling
     * mode decide each slot once.
     */
    @Test
    void twoSchedulersThroughPgBouncerGiveExactlyOneItemPerSlot(TestDatabase db) throws Exception {
      List<Scheduler> schedulers = new ArrayList<>();
      List<HikariDataSource> pools = new ArrayList<>();
      try (PgBouncer bouncer = PgBouncer.inFrontOf(db)) {
        for (int i = 0; i < 2; i++) {
          HikariConfig config = new HikariConfig();
          config.setJdbcUrl(bouncer.jdbcUrl(db));
          config.setMaximumPoolSize(2);
          HikariDataSource pool = new HikariDataSource(config);
          pools.add(pool);
          schedulers.add(
              builder(pool, db)
                  .schedulerId("bounced-" + i)
                  .pollInterval(Duration.ofMillis(50))
                  .schedule("pulse", "pulse", EVERY_SECOND)
                  .build());
        }
        Instant until = dbNow(db).plusSeconds(5);
        try {
          schedulers.forEach(Scheduler::start);
          await()
              .atMost(Duration.ofSeconds(65))
              .pollInterval(Duration.ofMillis(200))
              .until(() -> !dbNow(db).isBefore(until));
        } finally {
          schedulers.forEach(Scheduler::close);
          pools.forEach(HikariDataSource::close);
        }
      }
      List<Instant> slots = slots(db, "pulse", Instant.EPOCH);
      assertThat(slots).hasSizeGreaterThanOrEqualTo(3);
      assertConsecutiveSeconds(slots);
      ScheduleStatus state = status(db, "pulse");
      assertThat(state.enqueued()).isEqualTo(slots.size());
      assertThat(state.conflicts()).isZero();
    }
  }

  @Nested
  class Restart {
    @Test
    void restartAfterAStopAppliesEachMissedSlotPolicy(TestDatabase db) throws Exception {
      Map<String, MissedSlots> policies = new LinkedHashMap<>();
      policies.put("skip", MissedSlots.skip());
      policies.put("latest", MissedSlots.latest());
      policies.put("each", MissedSlots.each(Duration.ofHours(1)));
      Scheduler before = schedulers(db, policies);
      // Run until every schedule has decided a slot, then stop deciding.
      await()
          .atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(100))
          .until(
              () -> {
                before.runOnce();
                return policies.keySet().stream().allMatch(n -> status(db, n).lastSlot() != null);
              });
      Map<String, Instant> stoppedAt = new LinkedHashMap<>();
      for (String name : policies.keySet()) {
        stoppedAt.put(name, status(db, name).lastSlot());
      }
      // Down for at least four slots: 4.6 s by default, 10.6 s with the 20 s setting.
      Instant latestStop = stoppedAt.values().stream().max(Instant::compareTo).orElseThrow();
      Duration down = Duration.ofMillis(SECONDS * 500L + 600);
      await()
          .atMost(down.plusSeconds(30))
          .pollInterval(Duration.ofMillis(100))
          .until(() -> !dbNow(db).isBefore(latestStop.plus(down)));

      Scheduler after = schedulers(db, policies); // a new process with the same definitions
      Map<String, Scheduler.Decision> decisions = new LinkedHashMap<>();
      for (Scheduler.Decision d : after.runOnce()) {
        decisions.put(d.schedule(), d);
      }

      // each: every missed slot, in order, up to the latest due one.
      Scheduler.Decision each = decisions.get("each");
      List<Instant> eachSlots = slots(db, "each", stoppedAt.get("each"));
      assertThat(eachSlots).hasSizeGreaterThanOrEqualTo((int) down.toSeconds());
      assertThat(eachSlots.get(0)).isEqualTo(stoppedAt.get("each").plusSeconds(1));
      assertConsecutiveSeconds(eachSlots);
      assertThat(eachSlots.get(eachSlots.size() - 1)).isEqualTo(latestAtOrBefore(each.now()));
      assertThat(status(db, "each").skipped()).isZero();

      // latest: one item, the latest due slot; the older missed ones dropped.
      Scheduler.Decision latest = decisions.get("latest");
      assertThat(slots(db, "latest", stoppedAt.get("latest")))
          .containsExactly(latestAtOrBefore(latest.now()));
      assertThat(latest.skipped()).isGreaterThanOrEqualTo(3);

      // skip: the late slots dropped; only a slot at most lateAfter (500 ms) old runs.
      Scheduler.Decision skip = decisions.get("skip");
      Instant newest = latestAtOrBefore(skip.now());
      boolean onTime =
          !(Duration.between(newest, skip.now()).compareTo(Duration.ofMillis(500)) > 0);
      assertThat(slots(db, "skip", stoppedAt.get("skip")))
          .containsExactlyElementsOf(onTime ? List.of(newest) : List.of());
      assertThat(skip.skipped()).isGreaterThanOrEqualTo(onTime ? 3 : 4);
      for (String name : policies.keySet()) {
        assertThat(status(db, name).lastSlot())
            .isEqualTo(latestAtOrBefore(decisions.get(name).now()));
      }
    }

    private static Instant latestAtOrBefore(Instant now) {
      return Instant.ofEpochSecond(now.getEpochSecond());
    }

    private static Scheduler schedulers(TestDatabase db, Map<String, MissedSlots> policies) {
      Scheduler.Builder b = builder(db.dataSource(), db).lateAfter(Duration.ofMillis(500));
      policies.forEach(
          (name, policy) -> b.schedule(name, "tick", EVERY_SECOND.missedSlots(policy)));
      return b.build();
    }
  }

  @Nested
  class Identity {
    @Test
    void slotEnqueuedAgainIsCountedAsAConflictNotAnError(TestDatabase db) throws Exception {
      Scheduler s = builder(db.dataSource(), db).schedule("pulse", "pulse", EVERY_SECOND).build();
      await()
          .atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(100))
          .until(
              () -> {
                s.runOnce();
                return status(db, "pulse").enqueued() >= 3;
              });
      Instant last = status(db, "pulse").lastSlot();
      // An operator rewinds the state: the rewound slots' IDs are already taken by equal work.
      db.execute("UPDATE {schema}.schedule_state SET last_slot = last_slot - interval '3 seconds'");
      Scheduler.Decision again = s.runOnce().get(0);
      assertThat(again.conflicts()).isEqualTo(3);
      assertThat(status(db, "pulse").conflicts()).isEqualTo(again.conflicts());
      assertThat(status(db, "pulse").lastSlot()).isAfterOrEqualTo(last);
      assertConsecutiveSeconds(slots(db, "pulse", Instant.EPOCH));
    }

    @Test
    void nameStoredWithAnotherDefinitionIsRefusedAndNothingIsWritten(TestDatabase db)
        throws Exception {
      builder(db.dataSource(), db)
          .schedule("report", "report", Schedule.cron("0 2 * * *", "UTC"))
          .build()
          .register();
      Scheduler changed =
          builder(db.dataSource(), db)
              .schedule("other", "other", Schedule.every(Duration.ofMinutes(1)))
              .schedule("report", "report", Schedule.cron("0 3 * * *", "UTC"))
              .build();
      assertThatThrownBy(changed::start)
          .isInstanceOfSatisfying(
              ScheduleException.class,
              e -> {
                assertThat(e.problem()).isEqualTo(ScheduleException.Problem.DEFINITION_CONFLICT);
                assertThat(e.scheduleName()).isEqualTo("report");
              })
          .hasMessageContaining("cron \"0 2 * * *\" UTC")
          .hasMessageContaining("cron \"0 3 * * *\" UTC");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.schedule_state")).isEqualTo(1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();
    }

    /**
     * An operator changes or deletes a schedule's row while a scheduler runs it (the docs ask to
     * stop every scheduler first): the running scheduler decides no slot by a definition that is
     * not the row's, and does not take a missing row for one another scheduler holds for good.
     */
    @Test
    void aRowChangedOrDeletedUnderARunningSchedulerDecidesNothing(TestDatabase db)
        throws Exception {
      Scheduler s = builder(db.dataSource(), db).schedule("pulse", "pulse", EVERY_SECOND).build();
      assertThat(s.runOnce().get(0).busy()).isFalse();

      db.execute(
          "UPDATE {schema}.schedule_state SET definition = 'every PT3S missed=latest'"
              + " WHERE name = 'pulse'");
      Scheduler.Decision changed = s.runOnce().get(0);
      assertThat(changed.busy()).isTrue();
      assertThat(changed.enqueued()).isEmpty();

      // the definitions agree again: decided as before
      db.execute(
          "UPDATE {schema}.schedule_state SET definition = '"
              + EVERY_SECOND.definition()
              + "' WHERE name = 'pulse'");
      assertThat(s.runOnce().get(0).busy()).isFalse();

      db.execute("DELETE FROM {schema}.schedule_state WHERE name = 'pulse'");
      Scheduler.Decision gone = s.runOnce().get(0);
      assertThat(gone.busy()).isTrue();
      assertThat(gone.enqueued()).isEmpty();
      // not registered again behind the operator's back
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.schedule_state")).isZero();
    }

    @Test
    void sameDefinitionRegisteredTwiceIsAccepted(TestDatabase db) {
      for (int i = 0; i < 2; i++) {
        builder(db.dataSource(), db)
            .schedule("report", "report", Schedule.cron("0 2 * * *", "UTC"))
            .build()
            .register();
      }
      assertThat(status(db, "report").definition())
          .isEqualTo("cron \"0 2 * * *\" UTC missed=latest");
      assertThat(status(db, "report").nextSlot()).isNotNull();
    }
  }

  /**
   * A COMMIT that reaches the server but whose reply is lost: the scheduler cannot know whether it
   * committed, so it says so ({@link CommitOutcomeUnknownException}, docs/protocol.md "SQLState
   * classification") instead of reporting the failed rollback that follows, and the next attempt
   * re-reads what was stored.
   */
  @Nested
  class LostCommitReply {
    private DataSource via(LoopbackProxy proxy, TestDatabase db) {
      PGSimpleDataSource ds = new PGSimpleDataSource();
      ds.setUrl(db.jdbcUrlVia("127.0.0.1", proxy.port()));
      return ds;
    }

    private static void assertOutcomeUnknown(ThrowingCallable committing, String doing) {
      assertThatThrownBy(committing)
          .isInstanceOfSatisfying(
              CommitOutcomeUnknownException.class,
              e -> {
                assertThat(e.isRetryable()).isFalse(); // find out first: it may have committed
                assertThat(e.sqlState()).startsWith("08");
                // the COMMIT's own I/O error, not the rollback's "connection has been closed"
                assertThat(e.getCause()).isInstanceOf(SQLException.class);
                assertThat(e.getCause().getMessage()).doesNotContain("has been closed");
              })
          .hasMessageContaining(doing)
          .hasMessageContaining("outcome is unknown");
    }

    @Test
    void registrationWhoseCommitReplyIsLostReportsAnUnknownOutcome(TestDatabase db)
        throws Exception {
      try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port())) {
        Scheduler s = builder(via(proxy, db), db).schedule("pulse", "pulse", EVERY_SECOND).build();
        proxy.dropReplyAfterNextCommit();
        assertOutcomeUnknown(s::register, "registering schedules");
        assertThat(proxy.awaitCommitReplyDropped(Duration.ofSeconds(30))).isTrue();
        // It had committed; registering again re-reads it and agrees.
        assertThat(db.queryLong("SELECT count(*) FROM {schema}.schedule_state")).isEqualTo(1);
        s.register();
        assertThat(status(db, "pulse").definition()).isEqualTo(EVERY_SECOND.definition());
      }
    }

    @Test
    void decisionWhoseCommitReplyIsLostReportsAnUnknownOutcomeAndTheNextOneRereads(TestDatabase db)
        throws Exception {
      try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port())) {
        Scheduler s = builder(via(proxy, db), db).schedule("pulse", "pulse", EVERY_SECOND).build();
        s.register();
        Instant due = status(db, "pulse").createdAt().plusMillis(1500); // a slot is due by then
        await()
            .atMost(Duration.ofSeconds(30))
            .pollInterval(Duration.ofMillis(100))
            .until(() -> !dbNow(db).isBefore(due));
        proxy.dropReplyAfterNextCommit();
        assertOutcomeUnknown(s::runOnce, "deciding schedule pulse");
        assertThat(proxy.awaitCommitReplyDropped(Duration.ofSeconds(30))).isTrue();
        List<Instant> decided = slots(db, "pulse", Instant.EPOCH);
        assertThat(decided).isNotEmpty(); // it had committed
        assertThat(status(db, "pulse").lastSlot()).isEqualTo(decided.get(decided.size() - 1));

        // The next decision reads the stored last slot: no slot is enqueued twice.
        assertThat(s.runOnce().get(0).conflicts()).isZero();
        assertThat(status(db, "pulse").conflicts()).isZero();
        assertConsecutiveSeconds(slots(db, "pulse", Instant.EPOCH));
      }
    }

    @Test
    void theSchedulerThreadLogsALostDecisionCommitAsUnknownNotFailed(TestDatabase db)
        throws Exception {
      ByteArrayOutputStream captured = new ByteArrayOutputStream();
      PrintStream stderr = System.err;
      try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port())) {
        Scheduler s =
            builder(via(proxy, db), db)
                .pollInterval(Duration.ofMillis(50))
                .schedule("pulse", "pulse", EVERY_SECOND)
                .build();
        // slf4j-simple writes to whatever System.err is at the time of each message.
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
          s.start();
          proxy.dropReplyAfterNextCommit();
          assertThat(proxy.awaitCommitReplyDropped(Duration.ofSeconds(30))).isTrue();
          await()
              .atMost(Duration.ofSeconds(30))
              .pollInterval(Duration.ofMillis(100))
              .until(() -> captured.toString(StandardCharsets.UTF_8).contains("schedule pulse:"));
          // ... and it goes on deciding
          long before = status(db, "pulse").enqueued();
          await()
              .atMost(Duration.ofSeconds(30))
              .pollInterval(Duration.ofMillis(100))
              .until(() -> status(db, "pulse").enqueued() >= before + 2);
        } finally {
          s.close();
          System.setErr(stderr);
        }
      }
      String log = captured.toString(StandardCharsets.UTF_8);
      stderr.print(log);
      assertThat(log)
          .contains("schedule pulse: the outcome of deciding due slots is unknown")
          .doesNotContain("deciding due slots failed")
          .doesNotContain("has been closed");
      assertThat(status(db, "pulse").conflicts()).isZero();
      assertConsecutiveSeconds(slots(db, "pulse", Instant.EPOCH));
    }
  }

  @Nested
  class Permissions {
    @Test
    void schedulerNeedsOnlyTheProducersGrantsAndItsStateTable(TestDatabase db) throws Exception {
      String role = "relay_scheduler_" + db.schema();
      db.execute("CREATE ROLE " + role + " NOLOGIN");
      try {
        // The grants docs/scheduling.md lists: the producer's, plus the state table. Enqueue
        // compares an ID with finished work too (the history table, and the work view over both).
        db.execute(
            ("GRANT USAGE ON SCHEMA {schema} TO %1$s;"
                    + " GRANT INSERT (work_id, kind, payload, queue, priority, available_at,"
                    + " max_attempts, deadline, group_key, ordering_key, sequence, has_dependencies,"
                    + " trace_context)"
                    + " ON {schema}.outbox TO %1$s;"
                    + " GRANT SELECT (work_id, kind, payload) ON {schema}.outbox TO %1$s;"
                    + " GRANT SELECT (work_id, kind, payload) ON {schema}.work_history TO %1$s;"
                    + " GRANT SELECT (work_id, kind, payload) ON {schema}.work TO %1$s;"
                    + " GRANT SELECT ON {schema}.tombstone TO %1$s;"
                    + " GRANT SELECT, INSERT, UPDATE ON {schema}.schedule_state TO %1$s")
                .formatted(role));
        com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
        config.setJdbcUrl(db.jdbcUrl());
        config.setMaximumPoolSize(2);
        config.setConnectionInitSql("SET ROLE " + role);
        try (com.zaxxer.hikari.HikariDataSource asRole =
            new com.zaxxer.hikari.HikariDataSource(config)) {
          Scheduler s = builder(asRole, db).schedule("pulse", "pulse", EVERY_SECOND).build();
          await()
              .atMost(Duration.ofSeconds(30))
              .pollInterval(Duration.ofMillis(100))
              .until(() -> !s.runOnce().get(0).enqueued().isEmpty());
          // ... and may not rewrite work.
          try (Connection c = asRole.getConnection()) {
            assertThatThrownBy(
                    () ->
                        c.createStatement()
                            .executeUpdate("UPDATE " + db.schema() + ".outbox SET payload = '{}'"))
                .isInstanceOf(SQLException.class)
                .hasMessageContaining("permission denied");
          }
        }
      } finally {
        db.execute("DROP OWNED BY " + role + "; DROP ROLE " + role);
      }
      assertThat(slots(db, "pulse", Instant.EPOCH)).isNotEmpty();
    }
  }

  @Nested
  class BadInput {
    @Test
    void oneNameWithTwoDefinitionsInOneBuilderIsRefused() {
      assertThatThrownBy(
              () ->
                  Scheduler.builder(new NoDatabase())
                      .schedule("report", "report", Schedule.cron("0 2 * * *", "UTC"))
                      .schedule("report", "report", Schedule.cron("0 3 * * *", "UTC"))
                      .build())
          .isInstanceOfSatisfying(
              ScheduleException.class,
              e -> assertThat(e.problem()).isEqualTo(ScheduleException.Problem.DEFINITION_CONFLICT))
          .hasMessageContaining("added twice");
    }

    @Test
    void invalidCronIsRefusedByTheBuilderNamingTheSchedule() {
      assertThatThrownBy(
              () ->
                  Scheduler.builder(new NoDatabase())
                      .schedule("nightly", "report", Schedule.cron("0 25 * * *", "UTC"))
                      .build())
          .isInstanceOfSatisfying(
              ScheduleException.class,
              e -> {
                assertThat(e.problem()).isEqualTo(ScheduleException.Problem.INVALID_CRON);
                assertThat(e.scheduleName()).isEqualTo("nightly");
              })
          .hasMessageContaining("'0 25 * * *'");
    }

    /**
     * PostgreSQL refuses NUL in text; cron-utils accepted one in the last field, so the builder
     * passed it and registering failed with a raw database error.
     */
    @ParameterizedTest
    @ValueSource(
        strings = {
          "* * * * *\u0000",
          "* * * * MON\u0000",
          "\u0000* * * * *",
          "* * * * *\u0001",
          "0 0 * * *\ud800",
          "0 0 * * \u00a0*"
        })
    void cronWithACharacterOutsidePrintableAsciiIsRefusedByTheBuilder(String cron) {
      Scheduler.Builder builder =
          Scheduler.builder(new NoDatabase())
              .schedule("nightly", "report", Schedule.cron(cron, "UTC"));
      assertThat(catchThrowable(builder::build))
          .isInstanceOfSatisfying(
              ScheduleException.class,
              e -> {
                assertThat(e.problem()).isEqualTo(ScheduleException.Problem.INVALID_CRON);
                assertThat(e.scheduleName()).isEqualTo("nightly");
                // the message names the character and does not carry it
                assertThat(e.getMessage()).containsPattern("U\\+[0-9A-F]{4}");
                assertThat(e.getMessage()).doesNotContain(cron.strip());
                assertThat(e.getMessage().chars().allMatch(ch -> ch >= 0x20 && ch < 0x7f)).isTrue();
              });
      assertProblem(
          () -> Scheduler.validate("nightly", "report", Schedule.cron(cron, ZoneOffset.UTC)),
          ScheduleException.Problem.INVALID_CRON);
    }

    @Test
    void everyOtherTextWithNulIsRefusedBeforeAnythingIsWritten() {
      assertProblem(
          () -> Scheduler.validate("nightly\u0000", "report", EVERY_SECOND),
          ScheduleException.Problem.INVALID_NAME);
      assertProblem(
          () -> Scheduler.validate("nightly", "report\u0000", EVERY_SECOND),
          ScheduleException.Problem.INVALID_NAME);
      assertProblem(
          () -> Schedule.cron("0 2 * * *", "UTC\u0000"), ScheduleException.Problem.UNKNOWN_ZONE);
      assertSetting(builder -> builder.queue("default\u0000"), "queue");
      assertSetting(builder -> builder.schema("relay\u0000"), "schema");
    }

    /** The scheduler ID is stored as decided_by at every decision. */
    @ParameterizedTest
    @ValueSource(strings = {"node-1\u0000", "node\u00011", "node-\ud800"})
    void schedulerIdThatPostgresqlCannotStoreIsRefused(String id) {
      assertThat(assertSetting(builder -> builder.schedulerId(id), "schedulerId")).contains("U+");
    }

    private static void assertProblem(ThrowingCallable refused, ScheduleException.Problem problem) {
      assertThatThrownBy(refused)
          .isInstanceOfSatisfying(
              ScheduleException.class, e -> assertThat(e.problem()).isEqualTo(problem));
    }

    /** Builds a scheduler with one valid schedule and {@code setting}; returns the message. */
    private static String assertSetting(UnaryOperator<Scheduler.Builder> setting, String name) {
      Scheduler.Builder builder =
          setting
              .apply(Scheduler.builder(new NoDatabase()))
              .schedule("nightly", "report", EVERY_SECOND);
      Throwable refused = catchThrowable(builder::build);
      assertThat(refused)
          .isInstanceOfSatisfying(
              InvalidConfigurationException.class, e -> assertThat(e.setting()).isEqualTo(name));
      return refused.getMessage();
    }

    @Test
    void schedulerIdMayHoldAnyOtherText() {
      Scheduler.builder(new NoDatabase())
          .schedule("nightly", "report", EVERY_SECOND)
          .schedulerId("Überwachung 1 \ud83d\ude00 host/pid 42")
          .build();
    }

    @Test
    void nameThatCannotFormAWorkIdIsRefused() {
      assertThatThrownBy(
              () -> Scheduler.builder(new NoDatabase()).schedule("a@b", "k", EVERY_SECOND).build())
          .isInstanceOfSatisfying(
              ScheduleException.class,
              e -> assertThat(e.problem()).isEqualTo(ScheduleException.Problem.INVALID_NAME));
    }

    @Test
    void settingsOutOfRangeAreRefused() {
      assertThatThrownBy(
              () ->
                  Scheduler.builder(new NoDatabase())
                      .schedule("p", "k", EVERY_SECOND)
                      .lateAfter(Duration.ZERO)
                      .build())
          .isInstanceOfSatisfying(
              InvalidConfigurationException.class,
              e -> assertThat(e.setting()).isEqualTo("lateAfter"));
      assertThatThrownBy(() -> Scheduler.builder(new NoDatabase()).build())
          .isInstanceOfSatisfying(
              InvalidConfigurationException.class,
              e -> assertThat(e.setting()).isEqualTo("schedules"));
    }
  }

  /** A data source that fails the test if anything connects: the builder must not. */
  private static final class NoDatabase extends org.postgresql.ds.PGSimpleDataSource {
    private static final long serialVersionUID = 1L;

    @Override
    public Connection getConnection() {
      throw new AssertionError("the builder connected to the database");
    }
  }
}
