package dev.relay.internal.runtime;

import dev.relay.KindPolicy;
import dev.relay.RelayConfig;
import dev.relay.RelayEventListener;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.store.ClaimedWork;
import dev.relay.internal.store.Settlement;
import dev.relay.internal.store.WorkStore;
import java.lang.reflect.Proxy;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;

/** Runtime parts built without a database, for tests of their decisions. */
final class RuntimeFixture {
  static final String WORKER = "worker-1";
  static final Duration LEASE = Duration.ofSeconds(30);
  static final Duration START_MARGIN = Duration.ofSeconds(5);

  private RuntimeFixture() {}

  /**
   * Settings for the tests: 4 slots, a buffer of 8, claims of 10, completion batches of 20, a 30 s
   * lease with a 5 s start margin, renewed every {@code renewInterval}.
   */
  static RelayConfig config(Duration renewInterval, KindPolicy policy) {
    return new RelayConfig(
        WORKER,
        "relay",
        List.of("default"),
        10,
        4,
        8,
        LEASE,
        renewInterval,
        START_MARGIN,
        Duration.ofSeconds(1),
        0.0,
        false,
        Duration.ofSeconds(1),
        20,
        Duration.ofMillis(20),
        Duration.ofSeconds(30),
        Duration.ofSeconds(5),
        Duration.ofSeconds(60),
        Map.of("k", policy));
  }

  static RelayConfig config() {
    return config(Duration.ofSeconds(10), KindPolicy.DEFAULT);
  }

  /** A claim of {@code id} at generation 1, sent at {@code sentNanos} on {@code time}. */
  static LiveClaim claim(String id, KindPolicy policy, long sentNanos, TimeSource time) {
    return claim(id, "k", policy, sentNanos, time);
  }

  /** A claim of {@code id} of {@code kind} at generation 1, sent at {@code sentNanos}. */
  static LiveClaim claim(
      String id, String kind, KindPolicy policy, long sentNanos, TimeSource time) {
    Instant now = time.now();
    ClaimedWork w =
        new ClaimedWork(
            id,
            kind,
            "default",
            "{}",
            1,
            1,
            25,
            now.plus(LEASE),
            null,
            now,
            now,
            false,
            null,
            null,
            null,
            null,
            null);
    return new LiveClaim(w, policy, WORKER, LEASE, sentNanos, time);
  }

  static WorkStore store() {
    return new WorkStore(
        SchemaName.of("relay"),
        new Timeouts(Duration.ofSeconds(30), Duration.ofSeconds(5), Duration.ofSeconds(60)));
  }

  static Events events() {
    return new Events(new RelayEventListener() {});
  }

  /**
   * A releaser that hands claims to {@code completions}, else writes through {@code connections}.
   */
  static Releaser releaser(
      Completions completions, TrackedConnections connections, LiveClaims live) {
    return new Releaser(completions, connections, store(), WORKER, events(), live);
  }

  /** A data source that has no database: every connection request fails. */
  static DataSource noDatabase() {
    return (DataSource)
        Proxy.newProxyInstance(
            DataSource.class.getClassLoader(),
            new Class<?>[] {DataSource.class},
            (proxy, method, args) -> {
              throw new SQLException("no database in this test", "08001");
            });
  }

  /** Completions that keep what they are given, or refuse it once {@link #close()}d. */
  static final class Recorded implements Completions {
    final List<Settlement> submitted = new CopyOnWriteArrayList<>();
    private volatile boolean closed;

    @Override
    public boolean submit(LiveClaim claim, Settlement settlement) {
      if (closed) {
        return false;
      }
      submitted.add(settlement);
      return true;
    }

    void close() {
      closed = true;
    }

    @Override
    public int pending() {
      return submitted.size();
    }
  }
}
