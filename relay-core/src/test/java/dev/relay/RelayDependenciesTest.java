package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import dev.relay.admin.Admin;
import dev.relay.admin.Dependency;
import dev.relay.admin.RedriveRequest;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Work that waits for other work ({@link Work#dependsOn}), with the Relay runtime and real workers:
 * completion order, a failed or cancelled dependency holding its dependents (with the reason the
 * admin API shows), a redrive releasing them, and bad input refused with nothing written.
 */
@RelayDatabaseTest
class RelayDependenciesTest {
  /** When each handler run started and ended, on one shared counter. */
  record Run(long start, long end) {}

  /** A "step" handler that records its runs and fails the IDs in {@code failing} once each. */
  static final class Steps {
    final AtomicInteger tick = new AtomicInteger();
    final Map<String, Run> runs = new ConcurrentHashMap<>();
    final Map<String, AtomicBoolean> failing = new ConcurrentHashMap<>();

    Handler handler() {
      return claim -> {
        long start = tick.incrementAndGet();
        AtomicBoolean fail = failing.get(claim.workId());
        if (fail != null && fail.getAndSet(false)) {
          return Outcome.fail("told to fail once");
        }
        runs.put(claim.workId(), new Run(start, tick.incrementAndGet()));
        return Outcome.done();
      };
    }

    /** {@code later} started after {@code earlier} ended. */
    void assertAfter(String later, String earlier) {
      assertThat(runs.get(later).start())
          .as("%s starts after %s ended (%s)", later, earlier, runs)
          .isGreaterThan(runs.get(earlier).end());
    }
  }

  private static void startWorkers(RelayFixture f, TestDatabase db, Steps steps) {
    for (String worker : List.of("w1", "w2")) {
      f.start(
          f.builder(db.newDataSource("relay-" + worker, 4))
              .workerId(worker)
              .concurrency(4)
              .handle("step", steps.handler()));
    }
  }

  private static void awaitState(RelayFixture f, String state, String... ids) {
    await()
        .atMost(RelayFixture.PATIENCE)
        .untilAsserted(
            () -> {
              for (String id : ids) {
                assertThat(f.state(id)).as(id).isEqualTo(state);
              }
            });
  }

  /** Unrelated work enqueued now and done: the workers have polled since, with the rows as read. */
  private static void awaitAPoll(RelayFixture f, String probeId) {
    f.enqueue(Work.of(probeId, "step", "{}"));
    awaitState(f, "done", probeId);
  }

  @Test
  void chainAndFanInCompleteInDependencyOrder(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      Steps steps = new Steps();
      // Dependents first in the call: an item may wait for one named later in the same call.
      f.enqueue(
          Work.of("c", "step", "{}").dependsOn("b"),
          Work.of("d", "step", "{}").dependsOn("a", "b"),
          Work.of("b", "step", "{}").dependsOn("a"),
          Work.of("a", "step", "{}"));
      startWorkers(f, db, steps);

      awaitState(f, "done", "a", "b", "c", "d");
      steps.assertAfter("b", "a");
      steps.assertAfter("c", "b");
      steps.assertAfter("d", "a");
      steps.assertAfter("d", "b");
      assertThat(f.count("has_dependencies")).isEqualTo(3);
    }
  }

  @Test
  void aFailedDependencyHoldsItsDependentsUntilRedriven(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      Steps steps = new Steps();
      steps.failing.put("a", new AtomicBoolean(true));
      f.enqueue(
          Work.of("a", "step", "{}").maxAttempts(1),
          Work.of("b", "step", "{}").dependsOn("a"),
          Work.of("c", "step", "{}").dependsOn("b"),
          Work.of("d", "step", "{}").dependsOn("a", "x"),
          Work.of("x", "step", "{}"));
      startWorkers(f, db, steps);
      awaitState(f, "failed", "a");
      awaitState(f, "done", "x");
      awaitAPoll(f, "probe-1");

      assertThat(List.of(f.state("b"), f.state("c"), f.state("d"))).containsOnly("ready");
      assertThat(f.count("attempts > 0 AND work_id IN ('b', 'c', 'd')")).isZero();
      Admin admin = Admin.create(db.dataSource(), db.schema());
      assertThat(admin.blockedBy("b").map(Dependency::blockedReason)).hasValue("dependency_failed");
      // c waits for b, which waits for the failed a: the reason names a
      assertThat(admin.blockedBy("c").orElseThrow())
          .extracting(Dependency::workId, Dependency::blockedReason)
          .containsExactly("a", "dependency_failed");
      assertThat(admin.dependencies("d"))
          .extracting(Dependency::workId, Dependency::state, Dependency::blockedReason)
          .containsExactly(tuple("a", "failed", "dependency_failed"), tuple("x", "done", null));

      admin.redrive("a", RedriveRequest.of("mina@ops", "receiver fixed"));
      awaitState(f, "done", "a", "b", "c", "d");
      steps.assertAfter("b", "a");
      steps.assertAfter("c", "b");
      steps.assertAfter("d", "a");
      assertThat(admin.blockedBy("c")).isEmpty();
    }
  }

  @Test
  void aCancelledDependencyBlocksItsDependentUntilTheOperatorCancelsIt(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      Steps steps = new Steps();
      // "manual" has no handler: a stays ready until the operator cancels it.
      f.enqueue(
          Work.of("a", "manual", "{}"),
          Work.of("b", "step", "{}").dependsOn("a"),
          Work.of("c", "step", "{}").dependsOn("b"));
      startWorkers(f, db, steps);
      Admin admin = Admin.create(db.dataSource(), db.schema());
      assertThat(admin.blockedBy("b")).as("a is on its way, b only waits").isEmpty();

      admin.cancel("a", "mina@ops", "order withdrawn");
      awaitAPoll(f, "probe-1");
      assertThat(f.state("b")).isEqualTo("ready");
      assertThat(admin.blockedBy("b").map(Dependency::blockedReason))
          .hasValue("dependency_cancelled");
      assertThat(admin.blockedBy("c").map(Dependency::blockedReason))
          .hasValue("dependency_cancelled");

      admin.cancel("b", "mina@ops", "its order was withdrawn");
      assertThat(f.state("b")).isEqualTo("cancelled");
      // c now waits for a cancelled b: blocked by b, until the operator ends it as well
      assertThat(admin.blockedBy("c").orElseThrow())
          .extracting(Dependency::workId, Dependency::blockedReason)
          .containsExactly("b", "dependency_cancelled");
      admin.cancel("c", "mina@ops", "its order was withdrawn");
      assertThat(f.state("c")).isEqualTo("cancelled");
      assertThat(steps.runs).containsOnlyKeys("probe-1");
    }
  }

  @Test
  void aSupersededDependencyBlocksWithItsOwnReason(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      f.enqueue(Work.of("a", "manual", "{}"), Work.of("b", "step", "{}").dependsOn("a"));
      Admin admin = Admin.create(db.dataSource(), db.schema());
      admin.supersede("a", Work.of("a-v2", "manual", "{}"), "mina@ops", "wrong amount");
      assertThat(admin.blockedBy("b").orElseThrow())
          .extracting(Dependency::workId, Dependency::state, Dependency::blockedReason)
          .containsExactly("a", "cancelled", "dependency_superseded");
    }
  }

  @Test
  void aDoneTombstoneCountsAsDone(TestDatabase db) throws Exception {
    try (RelayFixture f = new RelayFixture(db)) {
      db.execute(
          "INSERT INTO {schema}.tombstone (work_id, kind, payload_digest, last_generation,"
              + " final_state) VALUES ('old', 'step', 'x', 1, 'done'),"
              + " ('old-failed', 'step', 'x', 1, 'failed')");
      f.enqueue(
          Work.of("after-done", "step", "{}").dependsOn("old"),
          Work.of("after-failed", "step", "{}").dependsOn("old-failed"));
      Steps steps = new Steps();
      startWorkers(f, db, steps);
      awaitState(f, "done", "after-done");
      awaitAPoll(f, "probe-1");
      assertThat(f.state("after-failed")).isEqualTo("ready");
      assertThat(
              Admin.create(db.dataSource(), db.schema())
                  .blockedBy("after-failed")
                  .map(Dependency::blockedReason))
          .hasValue("dependency_failed");
    }
  }

  @Nested
  class BadInput {
    @Test
    void aDependencyOnItselfIsRefused(TestDatabase db) throws Exception {
      try (RelayFixture f = new RelayFixture(db)) {
        assertRefusedWithNothingWritten(
            f,
            db,
            List.of(Work.of("a", "step", "{}").dependsOn("a")),
            InvalidWorkException.class,
            "invalid work 'a': dependsOn names the work itself");
      }
    }

    @Test
    void aCycleInsideOneBulkCallIsRefused(TestDatabase db) throws Exception {
      try (RelayFixture f = new RelayFixture(db)) {
        assertRefusedWithNothingWritten(
            f,
            db,
            List.of(
                Work.of("a", "step", "{}").dependsOn("c"),
                Work.of("b", "step", "{}").dependsOn("a"),
                Work.of("c", "step", "{}").dependsOn("b"),
                Work.of("d", "step", "{}")),
            InvalidWorkException.class,
            "is part of a dependency cycle within one bulk call");
      }
    }

    @Test
    void aDependencyThatNeverExistedIsRefusedNamingIt(TestDatabase db) throws Exception {
      try (RelayFixture f = new RelayFixture(db)) {
        f.enqueue(Work.of("known", "step", "{}"));
        assertRefusedWithNothingWritten(
            f,
            db,
            List.of(
                Work.of("a", "step", "{}"),
                Work.of("b", "step", "{}").dependsOn("a", "known", "ghost")),
            UnknownDependencyException.class,
            "work 'b' depends on 'ghost'");
      }
    }

    @Test
    void malformedDependencyIdsAreRefused(TestDatabase db) {
      assertThatThrownBy(() -> Work.of("a", "step", "{}").dependsOn("b", null))
          .isInstanceOf(InvalidWorkException.class);
      Outbox outbox = Outbox.builder().schema(db.schema()).build();
      assertThatThrownBy(
              () -> {
                try (Connection c = db.connection()) {
                  c.setAutoCommit(false);
                  outbox.enqueue(c, Work.of("a", "step", "{}").dependsOn("has space"));
                }
              })
          .isInstanceOfSatisfying(
              InvalidWorkException.class, e -> assertThat(e.field()).isEqualTo("dependsOn"));
    }

    @Test
    void aRepeatKeepsTheStoredDependencies(TestDatabase db) throws Exception {
      try (RelayFixture f = new RelayFixture(db)) {
        f.enqueue(Work.of("a", "step", "{}"), Work.of("b", "step", "{}"));
        f.enqueue(Work.of("c", "step", "{}").dependsOn("a"));
        try (Connection c = db.connection()) {
          c.setAutoCommit(false);
          assertThat(f.outbox.enqueue(c, Work.of("c", "step", "{}").dependsOn("b")).status())
              .isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
          c.commit();
        }
        assertThat(db.queryString("SELECT string_agg(depends_on, ',') FROM {schema}.dependency"))
            .isEqualTo("a");
      }
    }

    private void assertRefusedWithNothingWritten(
        RelayFixture f,
        TestDatabase db,
        List<Work> works,
        Class<? extends RelayException> type,
        String message)
        throws Exception {
      long before = db.queryLong("SELECT count(*) FROM {schema}.work");
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        assertThatThrownBy(() -> f.outbox.enqueueAll(c, works))
            .isInstanceOf(type)
            .hasMessageContaining(message);
        // the transaction is untouched: it can go on and commit other work
        f.outbox.enqueue(c, Work.of("after-refusal", "step", "{}"));
        c.commit();
      }
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(before + 1);
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.dependency")).isZero();
    }
  }
}
