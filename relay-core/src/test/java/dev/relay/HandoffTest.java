package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.test.LoopbackProxy;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Local hand-off (issue 24): new work this process handles is inserted claimed by its own worker
 * and started right after the producer's commit, with every guard of a claim in force. Worker "a"
 * hands off; it polls once an hour and listens to nothing, so work it runs soon after a commit was
 * handed off, not claimed. Worker "b", where present, is an ordinary worker of the same kind.
 */
@RelayDatabaseTest
class HandoffTest {
  private RelayFixture f;
  private final List<String> ranOnA = new CopyOnWriteArrayList<>();
  private final List<String> ranOnB = new CopyOnWriteArrayList<>();
  private final List<Long> generationsOnA = new CopyOnWriteArrayList<>();
  private final List<Map<String, String>> tracesOnA = new CopyOnWriteArrayList<>();

  @BeforeEach
  void setUp(TestDatabase db) {
    f = new RelayFixture(db);
  }

  @AfterEach
  void tearDown() {
    f.close();
  }

  /** The handing-off worker "a" (lease {@code lease}, start margin half of it). */
  private Relay startA(Duration lease, Consumer<Relay.Builder> more) {
    Relay.Builder b =
        f.builder()
            .workerId("a")
            .localHandoff(true)
            .notifications(false)
            .pollInterval(Duration.ofHours(1))
            .lease(lease)
            .startMargin(lease.dividedBy(2))
            .handle(
                "mail",
                claim -> {
                  ranOnA.add(claim.workId());
                  generationsOnA.add(claim.generation());
                  tracesOnA.add(claim.traceContext());
                  return RelayFixture.done(claim);
                });
    more.accept(b);
    return f.start(b);
  }

  /** An ordinary worker "b" of kind mail; with notifications on, it never needs to poll. */
  private Relay startB(Duration poll) {
    return f.start(
        f.builder()
            .workerId("b")
            .pollInterval(poll)
            .handle(
                "mail",
                claim -> {
                  ranOnB.add(claim.workId());
                  return RelayFixture.done(claim);
                }));
  }

  /**
   * {@code workId} was never run by "a" and was finished by "b" at generation 2, after the first
   * generation ended as {@code ending} in the attempt history.
   */
  private void assertDoneByBAtGenerationTwo(String workId, String ending) {
    await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state(workId)));
    assertThat(ranOnA).isEmpty();
    assertThat(ranOnB).containsExactly(workId);
    assertThat(f.column(workId, "claim_generation")).isEqualTo("2");
    assertThat(f.attempts(workId)).anyMatch(e -> e.startsWith("1 " + ending));
  }

  private Connection transaction() throws SQLException {
    Connection c = f.db.connection();
    c.setAutoCommit(false);
    return c;
  }

  @Nested
  class AfterProofOfCommit {
    @Test
    void handedOffWorkRunsRightAfterCommitAndStartAsGenerationOne() throws Exception {
      Relay a = startA(Duration.ofSeconds(30), b -> {});
      Outbox outbox = f.outbox.handingOffTo(a);

      try (Connection c = transaction()) {
        outbox.enqueue(c, Work.of("w1", "mail", "{\"to\": \"mina\"}"));
        assertThat(f.state("w1")).as("not visible before commit").isNull();
        outbox.commitAndStart(c);
      }

      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w1")));
      assertThat(ranOnA).containsExactly("w1");
      assertThat(generationsOnA).containsExactly(1L);
      assertThat(f.column("w1", "claim_generation")).isEqualTo("1");
      assertThat(f.column("w1", "attempts")).isEqualTo("1");
      assertThat(f.column("w1", "first_attempt_at")).isNotNull();
    }

    @Test
    void handedOffWorkKeepsItsTraceContext() throws Exception {
      Relay a = startA(Duration.ofSeconds(30), b -> {});
      Outbox outbox = f.outbox.handingOffTo(a);
      Map<String, String> trace =
          Map.of("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");

      try (Connection c = transaction()) {
        outbox.enqueue(c, Work.of("w1", "mail", "{}").traceContext(trace));
        outbox.commitAndStart(c);
      }

      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w1")));
      assertThat(generationsOnA).as("handed off").containsExactly(1L);
      assertThat(tracesOnA).containsExactly(trace);
      assertThat(f.column("w1", "trace_context")).contains("00-4bf92f3577b34da6a3ce929d0e0e4736");
    }

    @Test
    void anEqualRepeatIsNotHandedOffAgain() throws Exception {
      Relay a = startA(Duration.ofSeconds(30), b -> {});
      Outbox outbox = f.outbox.handingOffTo(a);
      try (Connection c = transaction()) {
        outbox.enqueue(c, Work.of("w1", "mail", "{}"));
        outbox.commitAndStart(c);
      }
      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w1")));

      try (Connection c = transaction()) {
        assertThat(outbox.enqueue(c, Work.of("w1", "mail", "{}")).status())
            .isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
        outbox.enqueue(c, Work.of("w2", "mail", "{}"));
        outbox.commitAndStart(c);
      }
      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w2")));
      assertThat(ranOnA).containsExactly("w1", "w2");
    }

    @Test
    void afterARollbackNothingRuns() throws Exception {
      Relay a = startA(Duration.ofSeconds(30), b -> {});
      Outbox outbox = f.outbox.handingOffTo(a);
      try (Connection c = transaction()) {
        outbox.enqueue(c, Work.of("rolled-back-1", "mail", "{}"));
        outbox.rollback(c);
        // Rolled back on the connection itself, then a later transaction commits through the
        // outbox: that commit proves nothing about the earlier transaction's rows.
        outbox.enqueue(c, Work.of("rolled-back-2", "mail", "{}"));
        c.rollback();
        outbox.enqueue(c, Work.of("committed", "mail", "{}"));
        outbox.commitAndStart(c);
      }

      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("committed")));
      assertThat(ranOnA).containsExactly("committed");
      assertThat(f.count("true")).isEqualTo(1);
    }

    @Test
    void aCommitWhoseReplyIsLostStartsNothingHereAndAnotherWorkerFinishesAfterTheLease()
        throws Exception {
      Relay a = startA(Duration.ofSeconds(1), b -> {});
      Outbox outbox = f.outbox.handingOffTo(a);
      try (LoopbackProxy proxy = LoopbackProxy.start(f.db.host(), f.db.port());
          Connection c = DriverManager.getConnection(f.db.jdbcUrlVia("127.0.0.1", proxy.port()))) {
        c.setAutoCommit(false);
        outbox.enqueue(c, Work.of("lost-reply", "mail", "{}"));
        proxy.dropReplyAfterNextCommit();

        assertThatThrownBy(() -> outbox.commitAndStart(c))
            .isInstanceOf(CommitOutcomeUnknownException.class);
      }
      startB(Duration.ofMillis(200));

      assertDoneByBAtGenerationTwo("lost-reply", "lease_expired");
    }

    @Test
    void aCrashAfterTheCommitIsRecoveredAfterTheLeaseAtGenerationTwo() throws Exception {
      Relay a = startA(Duration.ofSeconds(1), b -> {});
      Outbox outbox = f.outbox.handingOffTo(a);
      try (Connection c = transaction()) {
        outbox.enqueue(c, Work.of("crashed", "mail", "{}"));
        c.commit(); // committed; the process dies before it starts anything
      }
      a.close();
      assertThat(f.state("crashed")).isEqualTo("running");
      startB(Duration.ofMillis(200));

      assertDoneByBAtGenerationTwo("crashed", "lease_expired");
    }

    @Test
    void aSlowCallerTransactionIsReleasedAndTakenByAnotherWorkerAtOnce() throws Exception {
      // Lease 4 s, start margin 2 s: a transaction open longer than 2 s after its INSERT cannot
      // start its hand-off, which is released (not counted) while the lease still holds.
      Relay a = startA(Duration.ofSeconds(4), b -> {});
      Outbox outbox = f.outbox.handingOffTo(a);
      startB(Duration.ofHours(1)); // only the release's notification wakes it
      try (Connection c = transaction()) {
        outbox.enqueue(c, Work.of("slow", "mail", "{}"));
        try (Statement s = c.createStatement()) {
          s.execute("SELECT pg_sleep(2.5)"); // the caller's own slow work, in its transaction
        }
        outbox.commitAndStart(c);
      }

      assertDoneByBAtGenerationTwo("slow", "released");
      assertThat(f.column("slow", "attempts")).as("the release was not counted").isEqualTo("1");
    }
  }

  @Nested
  class OnlyWhatAClaimWouldAllow {
    private Outbox outbox;

    @BeforeEach
    void startA() {
      Relay a =
          HandoffTest.this.startA(
              Duration.ofSeconds(30),
              b ->
                  b.handle("limited", KindPolicy.DEFAULT.withMaxRunning(5), claim -> Outcome.done())
                      .handle("batched", (BatchHandler) claims -> List.of()));
      outbox = f.outbox.handingOffTo(a);
    }

    /** The IDs of the rows matching {@code condition}, read on {@code c}. */
    private List<String> inserted(Connection c, String condition) throws SQLException {
      List<String> ids = new java.util.ArrayList<>();
      try (Statement s = c.createStatement();
          var rs =
              s.executeQuery("SELECT work_id FROM " + f.db.schema() + ".work WHERE " + condition)) {
        while (rs.next()) {
          ids.add(rs.getString(1));
        }
      }
      return ids;
    }

    private void enqueueAndCommit(Work... works) throws SQLException {
      try (Connection c = transaction()) {
        outbox.enqueueAll(c, List.of(works));
        outbox.commitAndStart(c);
      }
    }

    @Test
    void keyedDependentDelayedLimitedBatchedOrForeignWorkIsInsertedReady() throws SQLException {
      enqueueAndCommit(Work.of("first", "other", "{}"));
      try (Connection c = transaction()) {
        outbox.enqueueAll(
            c,
            List.of(
                Work.of("keyed", "mail", "{}").orderingKey("order-103"),
                Work.of("dependent", "mail", "{}").dependsOn("first"),
                Work.of("delayed", "mail", "{}").delay(Duration.ofMinutes(5)),
                Work.of("limited", "limited", "{}"),
                Work.of("batched", "batched", "{}"),
                Work.of("other-queue", "mail", "{}").queue("bulk"),
                Work.of("not-served", "other", "{}")));
        // As inserted, read in the inserting transaction (no claim can have touched them).
        assertThat(inserted(c, "claimed_by IS NULL AND claim_generation = 0 AND state = 'ready'"))
            .containsExactlyInAnyOrder(
                "first",
                "keyed",
                "dependent",
                "delayed",
                "limited",
                "batched",
                "other-queue",
                "not-served");
        outbox.rollback(c);
      }
    }

    @Test
    void aKindLimitedByAnotherWorkersRegistrationIsInsertedReady() throws SQLException {
      // The database has the last word: a limiter row this worker does not know of.
      f.db.execute("INSERT INTO {schema}.limiter (kind, max_running) VALUES ('mail', 1)");
      try (Connection c = transaction()) {
        outbox.enqueue(c, Work.of("w1", "mail", "{}"));
        assertThat(inserted(c, "state = 'ready' AND claimed_by IS NULL")).containsExactly("w1");
        outbox.rollback(c);
      }
    }

    /** The state work item {@code workId}, enqueued alone by hand-off, is inserted in. */
    private String insertedState(String workId) throws SQLException {
      try (Connection c = transaction()) {
        outbox.enqueue(c, Work.of(workId, "mail", "{}"));
        List<String> running = inserted(c, "state = 'running' AND claim_generation = 1");
        List<String> ready =
            inserted(c, "state = 'ready' AND claimed_by IS NULL AND claim_generation = 0");
        outbox.rollback(c);
        return running.contains(workId) ? "running" : ready.contains(workId) ? "ready" : "?";
      }
    }

    @Test
    void workOfAPausedKindOrQueueIsInsertedReadyUntilTheResume() throws SQLException {
      // A hand-off respects pauses as a claim does: the database asks the pause table per row.
      f.db.execute(
          "INSERT INTO {schema}.pause (queue, kind, actor, reason)"
              + " VALUES (NULL, 'mail', 'olga', 'receiver down')");
      assertThat(insertedState("kind-paused")).isEqualTo("ready");
      f.db.execute("DELETE FROM {schema}.pause");
      f.db.execute(
          "INSERT INTO {schema}.pause (queue, kind, actor, reason)"
              + " VALUES ('default', NULL, 'olga', 'maintenance')");
      assertThat(insertedState("queue-paused")).isEqualTo("ready");
      // Its automatic resume passed: handed off again.
      f.db.execute("UPDATE {schema}.pause SET resume_at = clock_timestamp() - interval '1 second'");
      assertThat(insertedState("resumed")).isEqualTo("running");
    }

    @Test
    void whileNoHandlerSlotIsFreeWorkIsInsertedReady() throws SQLException {
      // concurrency 8: nine items in one call, eight handed off, the ninth ready
      Work[] works = new Work[9];
      for (int i = 0; i < works.length; i++) {
        works[i] = Work.of("w" + i, "mail", "{}");
      }
      try (Connection c = transaction()) {
        outbox.enqueueAll(c, List.of(works));
        assertThat(f.db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();
        assertThat(inserted(c, "state = 'running'")).hasSize(8);
        assertThat(inserted(c, "state = 'ready'")).hasSize(1);
        outbox.rollback(c);
      }
    }
  }
}
