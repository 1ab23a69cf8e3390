package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.relay.test.LoopbackProxy;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Proves DESIGN rules 3 and 5 for a COMMIT whose reply is lost (the transaction commits at the
 * server, the client's connection breaks before it learns so): the worker never guesses.
 *
 * <ul>
 *   <li>When the <b>claim</b>'s commit reply is lost, the claimer recovers its authority from the
 *       stored rows ({@code WorkStore.recover}) and runs the work it did get: exactly once, by this
 *       worker, under the claim's generation 1 — the claim is neither lost (left to its lease) nor
 *       taken a second time under a new generation.
 *   <li>When the <b>completer</b>'s commit reply is lost, it re-reads the rows, sees the claim is
 *       no longer held (the done committed) and writes nothing more: the row stays {@code done}
 *       with generation 1 and no stale write is recorded against this worker.
 * </ul>
 *
 * <p>Relay's connections go through a {@link LoopbackProxy}; the drop is armed so that the commit
 * it hits is certainly the one under test (the data source records which Relay thread took each
 * connection, and the tests assert it). Leases, renewals and polls are long and notifications off,
 * so that no other commit passes the proxy in between.
 */
@RelayDatabaseTest
class RelayUncertainCommitTest {
  private static final Duration LEASE = Duration.ofMinutes(5);
  private static final Duration RENEW = Duration.ofMinutes(2);
  private static final Duration POLL = Duration.ofHours(1);

  @Test
  void claimWhoseCommitReplyIsLostIsRecoveredAndRunsOnce(TestDatabase db) throws Exception {
    try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port());
        RelayFixture f = new RelayFixture(db)) {
      TracingDataSource ds = new TracingDataSource(db.jdbcUrlVia("127.0.0.1", proxy.port()));
      Events events = new Events();
      List<Long> generations = new CopyOnWriteArrayList<>();
      List<String> workers = new CopyOnWriteArrayList<>();
      Relay relay =
          quiet(f.builder(ds), events)
              .workerId("worker-a")
              .handle(
                  "k",
                  claim -> {
                    generations.add(claim.generation());
                    workers.add(claim.workerId());
                    return RelayFixture.done(claim);
                  })
              .build();
      f.enqueue(Work.of("w", "k", "{}"));

      // start() registers the kinds on this thread (a commit through the proxy); the first
      // connection any other thread takes is the claimer's initial poll: arm the drop for it.
      Thread starter = Thread.currentThread();
      ds.armOnFirstConnectionOf(t -> t != starter, proxy::dropReplyAfterNextCommit);
      relay.start();
      try {
        // (awaitCommitReplyDropped returns at once while no drop is armed yet.)
        await().atMost(RelayFixture.PATIENCE).until(() -> ds.armedFor.get() != null);
        assertThat(ds.armedFor.get()).startsWith("relay-claimer-");
        assertThat(proxy.awaitCommitReplyDropped(RelayFixture.PATIENCE)).isTrue();

        await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
        await().atMost(RelayFixture.PATIENCE).until(() -> events.count("completed w") == 1);
      } finally {
        relay.close();
      }

      // The claim did commit (generation 1, one attempt) and was taken back from the rows.
      assertThat(events.errors).containsExactly("claim CommitOutcomeUnknownException");
      assertThat(ds.opensBy("relay-claimer-")).isEqualTo(2); // the claim, then the re-read
      assertThat(generations).containsExactly(1L);
      assertThat(workers).containsExactly("worker-a");
      assertThat(f.row("w"))
          .containsEntry("state", "done")
          .containsEntry("claim_generation", "1")
          .containsEntry("attempts", "1")
          .containsEntry("receiver_ref", "ref-w");
      assertThat(f.attempts("w")).isEmpty();
      assertThat(events.all).containsExactly("claimed w 1", "started w 1", "completed w 1");
    }
  }

  /**
   * A previous process that used the same worker ID died with a live lease. The new process's first
   * claim loses its COMMIT reply; recovering from the stored rows must take back only what that
   * claim returned, not every running row under the name: running the predecessor's claim again
   * would repeat its call under the same generation, invisibly (found by the fault suite).
   */
  @Test
  void recoveryAfterALostClaimReplyNeverAdoptsAPredecessorsClaimUnderTheSameWorkerId(
      TestDatabase db) throws Exception {
    try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port());
        RelayFixture f = new RelayFixture(db)) {
      db.execute(
          "INSERT INTO {schema}.outbox (work_id, kind, payload) VALUES ('left-behind', 'k', '{}');"
              + " UPDATE {schema}.outbox SET state = 'running', claimed_by = 'worker-a',"
              + " lease_until = clock_timestamp() + interval '5 minutes', claim_generation = 1,"
              + " attempts = 1, claimed_at = clock_timestamp(), first_attempt_at = clock_timestamp()"
              + " WHERE work_id = 'left-behind'");
      TracingDataSource ds = new TracingDataSource(db.jdbcUrlVia("127.0.0.1", proxy.port()));
      Events events = new Events();
      List<String> handled = new CopyOnWriteArrayList<>();
      Relay relay =
          quiet(f.builder(ds), events)
              .workerId("worker-a")
              .handle(
                  "k",
                  claim -> {
                    handled.add(claim.workId());
                    return RelayFixture.done(claim);
                  })
              .build();
      f.enqueue(Work.of("w", "k", "{}"));

      Thread starter = Thread.currentThread();
      ds.armOnFirstConnectionOf(t -> t != starter, proxy::dropReplyAfterNextCommit);
      relay.start();
      try {
        await().atMost(RelayFixture.PATIENCE).until(() -> ds.armedFor.get() != null);
        assertThat(proxy.awaitCommitReplyDropped(RelayFixture.PATIENCE)).isTrue();
        await().atMost(RelayFixture.PATIENCE).until(() -> events.count("completed w") == 1);
      } finally {
        relay.close();
      }

      assertThat(handled).containsExactly("w");
      assertThat(f.row("left-behind"))
          .containsEntry("state", "running")
          .containsEntry("claim_generation", "1")
          .containsEntry("attempts", "1");
      assertThat(events.all).noneMatch(e -> e.contains("left-behind"));
    }
  }

  @Test
  void completionWhoseCommitReplyIsLostIsReReadNotGuessed(TestDatabase db) throws Exception {
    try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port());
        RelayFixture f = new RelayFixture(db)) {
      TracingDataSource ds = new TracingDataSource(db.jdbcUrlVia("127.0.0.1", proxy.port()));
      Events events = new Events();
      List<Long> generations = new CopyOnWriteArrayList<>();
      AtomicReference<Integer> openedBeforeArming = new AtomicReference<>();
      Relay relay =
          quiet(f.builder(ds), events)
              .workerId("worker-b")
              .handle(
                  "k",
                  claim -> {
                    generations.add(claim.generation());
                    // The next commit through the proxy is the completer's record of this done.
                    openedBeforeArming.set(ds.opens.size());
                    proxy.dropReplyAfterNextCommit();
                    return RelayFixture.done(claim);
                  })
              .build();
      f.enqueue(Work.of("w", "k", "{}"));
      relay.start();
      try {
        await().atMost(RelayFixture.PATIENCE).until(() -> openedBeforeArming.get() != null);
        assertThat(proxy.awaitCommitReplyDropped(RelayFixture.PATIENCE)).isTrue();
        await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
        // The completer has re-read the rows once it returned its second connection.
        await().atMost(RelayFixture.PATIENCE).until(() -> ds.closesBy("relay-completer-") >= 2);
      } finally {
        relay.close(); // lets the completer finish whatever it would still write
      }

      // The worker registration's heartbeat thread also opens one, to deregister at close.
      List<String> afterArming =
          ds.opens.subList(openedBeforeArming.get(), ds.opens.size()).stream()
              .filter(name -> !name.startsWith("relay-heartbeat-"))
              .toList();
      assertThat(afterArming)
          .as("connections taken after the drop was armed: the settle, then the re-read")
          .hasSize(2)
          .allMatch(name -> name.startsWith("relay-completer-"));
      assertThat(events.errors).containsExactly("record outcomes CommitOutcomeUnknownException");
      assertThat(generations).containsExactly(1L);
      assertThat(f.row("w"))
          .containsEntry("state", "done")
          .containsEntry("claim_generation", "1")
          .containsEntry("attempts", "1")
          .containsEntry("receiver_ref", "ref-w");
      assertThat(f.attempts("w")).noneMatch(a -> a.contains("stale_write")).isEmpty();
      assertThat(events.all)
          .noneMatch(e -> e.startsWith("stale") || e.startsWith("reclaimed"))
          .containsOnlyOnce("claimed w 1", "started w 1")
          // The re-read tells that the interrupted commit did apply, so listeners hear of it.
          .containsOnlyOnce("completed w 1");
    }
  }

  /** One worker, one handler slot, and nothing that commits on its own while a test runs. */
  private static Relay.Builder quiet(Relay.Builder b, RelayEventListener events) {
    return b.notifications(false)
        .pollInterval(POLL)
        .lease(LEASE)
        .renewInterval(RENEW)
        .concurrency(1)
        .bufferSize(4)
        .batchSize(5) // a claim of one row is not a full batch: no immediate second claim
        .listener(events);
  }

  /** Records events as "name workId generation", and errors as "what ExceptionClass". */
  private static final class Events implements RelayEventListener {
    final List<String> all = new CopyOnWriteArrayList<>();
    final List<String> errors = new CopyOnWriteArrayList<>();

    long count(String prefix) {
      return all.stream().filter(e -> e.startsWith(prefix)).count();
    }

    private void add(String name, Claim c) {
      all.add(name + " " + c.workId() + " " + c.generation());
    }

    @Override
    public void claimed(Claim claim) {
      add("claimed", claim);
    }

    @Override
    public void reclaimedAfterLeaseExpiry(Claim claim, String previousOwner) {
      add("reclaimed", claim);
    }

    @Override
    public void started(Claim claim) {
      add("started", claim);
    }

    @Override
    public void completed(Claim claim) {
      add("completed", claim);
    }

    @Override
    public void retried(Claim claim, Duration delay, String errorKind, String error) {
      add("retried", claim);
    }

    @Override
    public void failed(Claim claim, String errorKind, String error) {
      add("failed", claim);
    }

    @Override
    public void released(Claim claim) {
      add("released", claim);
    }

    @Override
    public void stale(Claim claim, String operation) {
      add("stale", claim);
    }

    @Override
    public void error(String what, Throwable error) {
      errors.add(
          what
              + " "
              + (error instanceof CommitOutcomeUnknownException
                  ? "CommitOutcomeUnknownException"
                  : error.toString()));
    }
  }

  /**
   * Relay's data source: a new physical connection through the proxy each time, remembering which
   * thread took and returned each one, and optionally running an action just before a chosen
   * thread's first connection.
   */
  private static final class TracingDataSource implements DataSource {
    final List<String> opens = new CopyOnWriteArrayList<>();
    final List<String> closes = new CopyOnWriteArrayList<>();
    final AtomicReference<String> armedFor = new AtomicReference<>();
    private final PGSimpleDataSource target = new PGSimpleDataSource();
    private volatile Predicate<Thread> armWhen;
    private volatile Runnable arm;

    TracingDataSource(String url) {
      target.setURL(url);
    }

    void armOnFirstConnectionOf(Predicate<Thread> which, Runnable action) {
      arm = action;
      armWhen = which;
    }

    long opensBy(String threadPrefix) {
      return opens.stream().filter(n -> n.startsWith(threadPrefix)).count();
    }

    long closesBy(String threadPrefix) {
      return closes.stream().filter(n -> n.startsWith(threadPrefix)).count();
    }

    @Override
    public Connection getConnection() throws SQLException {
      Thread me = Thread.currentThread();
      Predicate<Thread> which = armWhen;
      if (which != null && which.test(me) && armedFor.compareAndSet(null, me.getName())) {
        arm.run();
      }
      Connection c = target.getConnection();
      opens.add(me.getName());
      return (Connection)
          Proxy.newProxyInstance(
              Connection.class.getClassLoader(),
              new Class<?>[] {Connection.class},
              (proxy, method, args) -> {
                if (method.getName().equals("close") && method.getParameterCount() == 0) {
                  try {
                    return method.invoke(c, args);
                  } catch (InvocationTargetException e) {
                    throw e.getCause();
                  } finally {
                    closes.add(Thread.currentThread().getName());
                  }
                }
                try {
                  return method.invoke(c, args);
                } catch (InvocationTargetException e) {
                  throw e.getCause();
                }
              });
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
      throw new SQLFeatureNotSupportedException("not used by Relay");
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }
}
