package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Pause and resume through the admin API and the real claim statement: what a pause holds and what
 * it does not, the audit of every call, the automatic resume, and bad input refused with nothing
 * changed.
 */
@RelayDatabaseTest
class PauseTest {
  @Nested
  class WhatAPauseHolds {
    @Test
    void aPausedKindIsNotClaimedAndOtherKindsAndQueuesAre(TestDatabase db) throws SQLException {
      AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
      f.enqueue(Work.of("a1", "a", "{}"), Work.of("b1", "b", "{}"));
      f.admin.pause(null, "a", "olga", "receiver down", null);

      assertThat(f.claim("a", 10)).isEmpty();
      assertThat(f.claim("b", 10)).extracting(w -> w.workId()).containsExactly("b1");
      // new work is still accepted, and kept ready
      f.enqueue(Work.of("a2", "a", "{}"));
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM {schema}.work WHERE kind = 'a'"
                      + " AND state = 'ready' AND attempts = 0"))
          .isEqualTo(2);

      assertThat(f.admin.resume(null, "a", "olga", "receiver back")).isPresent();
      assertThat(f.claim("a", 10)).hasSize(2);
    }

    @Test
    void aQueuePauseHoldsEveryKindOfItsQueueAndAPairOnlyThePair(TestDatabase db) {
      AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
      f.enqueue(Work.of("a1", "a", "{}"), Work.of("b1", "b", "{}"));
      f.admin.pause("default", null, "olga", "queue drained for a migration", null);
      assertThat(f.claim("a", 10)).isEmpty();
      assertThat(f.claim("b", 10)).isEmpty();
      // resuming one kind does not lift the queue's pause
      assertThat(f.admin.resume(null, "a", "olga", "wrong target")).isEmpty();
      assertThat(f.claim("a", 10)).isEmpty();

      f.admin.resume("default", null, "olga", "done");
      f.admin.pause("default", "a", "olga", "pair only", null);
      assertThat(f.claim("a", 10)).isEmpty();
      assertThat(f.claim("b", 10)).hasSize(1);
      f.admin.pause("other", "b", "olga", "another queue", null);
      assertThat(f.admin.pauses())
          .extracting(Pause::target)
          .containsExactly("queue 'default', kind 'a'", "queue 'other', kind 'b'");
    }

    @Test
    void delayedWorkKeepsItsTimeAndHealthShowsSinceWhen(TestDatabase db) throws SQLException {
      AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
      f.enqueue(Work.of("d", "a", "{}").delay(Duration.ofHours(1)), Work.of("r", "a", "{}"));
      String before =
          db.queryString("SELECT available_at::text FROM {schema}.work WHERE work_id = 'd'");
      Pause p = f.admin.pause(null, "a", "olga", "receiver down", null);
      f.admin.resume(null, "a", "olga", "receiver back");
      assertThat(db.queryString("SELECT available_at::text FROM {schema}.work WHERE work_id = 'd'"))
          .isEqualTo(before);

      Pause again = f.admin.pause(null, "a", "olga", "down again", null);
      assertThat(again.pausedAt()).isAfter(p.pausedAt());
      // a repeated pause of a target in force keeps its start and takes the new reason
      Pause renewed = f.admin.pause(null, "a", "mina", "still down", null);
      assertThat(renewed.pausedAt()).isEqualTo(again.pausedAt());
      assertThat(renewed.reason()).isEqualTo("still down");
      assertThat(f.admin.health(Duration.ofHours(1)))
          .singleElement()
          .satisfies(h -> assertThat(h.pausedSince()).isEqualTo(again.pausedAt()));
    }
  }

  @Nested
  class Audit {
    @Test
    void everyPauseAndResumeIsAuditedWithWhoWhyAndWhen(TestDatabase db) throws SQLException {
      AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
      Instant resumeAt = Instant.now().plus(Duration.ofHours(2));
      Pause p = f.admin.pause("default", "a", "olga", "receiver down, INC-7", resumeAt);
      f.admin.resume("default", "a", "mina", "receiver back");
      f.admin.resume("default", "a", "mina", "once more");
      assertThat(
              db.queryString(
                  "SELECT string_agg(concat_ws(' ', action, queue, kind, actor, reason,"
                      + " paused_at IS NOT NULL, resume_at IS NOT NULL), ' | ' ORDER BY id)"
                      + " FROM {schema}.pause_audit"))
          .isEqualTo(
              "pause default a olga receiver down, INC-7 t t"
                  + " | resume default a mina receiver back t t"
                  + " | resume default a mina once more f f");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.pause")).isZero();
      // the same rows through the admin API, newest first
      assertThat(f.admin.pauseHistory(2))
          .extracting(e -> e.action() + " " + e.target() + " " + e.actor() + ": " + e.reason())
          .containsExactly(
              "resume queue 'default', kind 'a' mina: once more",
              "resume queue 'default', kind 'a' mina: receiver back");
      assertThat(f.admin.pauseHistory(10).get(2).resumeAt()).isNotNull();
      assertThatThrownBy(() -> f.admin.pauseHistory(0))
          .isInstanceOf(InvalidAdminRequestException.class);
      assertThat(p.resumeAt())
          .isCloseTo(
              resumeAt,
              org.assertj.core.api.Assertions.within(1, java.time.temporal.ChronoUnit.MILLIS));
    }

    @Test
    void anExpiredPauseHoldsNothingAndMaintenanceRecordsItsResume(TestDatabase db)
        throws SQLException {
      AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
      f.enqueue(Work.of("a1", "a", "{}"));
      f.admin.pause(null, "a", "olga", "short window", Instant.now().plusSeconds(3600));
      assertThat(f.claim("a", 1)).isEmpty();
      // the database clock passes the automatic resume (moved back rather than waited for)
      db.execute("UPDATE {schema}.pause SET resume_at = clock_timestamp() - interval '1 ms'");
      assertThat(f.admin.pauses()).isEmpty();
      assertThat(f.claim("a", 1)).hasSize(1);

      try (Maintenance m =
          Maintenance.create(
              db.dataSource(),
              () -> DriverManager.getConnection(db.jdbcUrl()),
              MaintenanceConfig.DEFAULT.withSchema(db.schema()))) {
        m.runOnce();
      }
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.pause")).isZero();
      assertThat(
              db.queryString(
                  "SELECT concat_ws(' ', action, kind, actor) FROM {schema}.pause_audit"
                      + " WHERE action = 'auto_resume'"))
          .isEqualTo("auto_resume a relay maintenance");
    }
  }

  @Nested
  class BadInput {
    @Test
    void isRefusedWithTheFieldNamedAndChangesNothing(TestDatabase db) throws SQLException {
      Admin admin = new AdminFixture(db.dataSource(), db.schema()).admin;
      assertRefused(() -> admin.pause(null, null, "olga", "why", null), "queue and kind");
      assertRefused(() -> admin.pause(null, "a", "olga", " ", null), "reason");
      assertRefused(() -> admin.pause(null, "a", "", "why", null), "actor");
      assertRefused(() -> admin.pause(" ", "a", "olga", "why", null), "queue");
      assertRefused(() -> admin.pause(null, "k".repeat(101), "olga", "why", null), "kind");
      // names no work can have: the pause would hold nothing
      assertRefused(() -> admin.pause("a b", null, "olga", "why", null), "queue");
      assertRefused(() -> admin.pause(null, "mail ", "olga", "why", null), "kind");
      assertThatThrownBy(() -> admin.pause(null, "mail ", "olga", "why", null))
          .hasMessageContaining("'mail ' must be 1-100 characters from");
      assertRefused(
          () -> admin.pause(null, "a", "olga", "why", Instant.now().minusSeconds(60)), "resumeAt");
      assertRefused(() -> admin.resume(null, null, "olga", "why"), "queue and kind");
      assertRefused(() -> admin.resume(null, "a", "olga", ""), "reason");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.pause")).isZero();
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.pause_audit")).isZero();
    }

    private void assertRefused(Runnable call, String field) {
      assertThatThrownBy(call::run)
          .isInstanceOf(InvalidAdminRequestException.class)
          .satisfies(e -> assertThat(((InvalidAdminRequestException) e).field()).isEqualTo(field));
    }
  }
}
