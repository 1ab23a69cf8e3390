package dev.relay;

import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import javax.sql.DataSource;

/** Shared set-up for runtime tests: enqueue, build relays that close after the test, read rows. */
final class RelayFixture implements AutoCloseable {
  /** Generous: the machine running the tests is small and loaded. */
  static final Duration PATIENCE = Duration.ofSeconds(60);

  final TestDatabase db;
  final Outbox outbox;
  private final List<Relay> relays = new CopyOnWriteArrayList<>();

  RelayFixture(TestDatabase db) {
    this.db = db;
    this.outbox = Outbox.builder().schema(db.schema()).build();
  }

  /** A builder on the test's schema and pool, with quick polling; closed with the fixture. */
  Relay.Builder builder() {
    return builder(db.dataSource());
  }

  Relay.Builder builder(DataSource ds) {
    return Relay.builder(ds)
        .schema(db.schema())
        .pollInterval(Duration.ofMillis(200))
        .virtualThreads(VIRTUAL_THREADS);
  }

  /**
   * {@code -Drelay.test.virtualThreads=true} (on Java 21 or later) runs every runtime test built
   * from this fixture with handlers on virtual threads: .ci/run runs the lease, heartbeat,
   * cancellation, limit, timeout and shutdown tests so on a Java 25 JDK.
   */
  static final boolean VIRTUAL_THREADS = Boolean.getBoolean("relay.test.virtualThreads");

  /** Builds, remembers (to close) and starts. */
  Relay start(Relay.Builder b) {
    Relay r = b.build();
    relays.add(r);
    r.start();
    return r;
  }

  void enqueue(Work... works) {
    enqueue(List.of(works));
  }

  void enqueue(List<Work> works) {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      for (int from = 0; from < works.size(); from += 1000) {
        outbox.enqueueAll(c, works.subList(from, Math.min(works.size(), from + 1000)));
      }
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  String state(String workId) {
    return column(workId, "state");
  }

  /** One column of one work row, as text. */
  String column(String workId, String column) {
    return row(workId).get(column);
  }

  /** One work row, as text values. */
  Map<String, String> row(String workId) {
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement("SELECT * FROM " + db.schema() + ".work WHERE work_id = ?")) {
      ps.setString(1, workId);
      try (ResultSet rs = ps.executeQuery()) {
        Map<String, String> row = new HashMap<>();
        if (rs.next()) {
          for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
            row.put(rs.getMetaData().getColumnName(i), rs.getString(i));
          }
        }
        return row;
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The attempt history of one work ID, in order: "generation ending error_kind outcome". */
  List<String> attempts(String workId) {
    return attempts(workId, "TRUE", "generation", "ending", "error_kind", "outcome");
  }

  /**
   * The attempt history rows of one work ID that match {@code condition} (SQL over the attempt
   * table), in order, each as its {@code columns} joined by spaces.
   */
  List<String> attempts(String workId, String condition, String... columns) {
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT "
                    + String.join(", ", columns)
                    + " FROM "
                    + db.schema()
                    + ".attempt WHERE work_id = ? AND ("
                    + condition
                    + ") ORDER BY id")) {
      ps.setString(1, workId);
      List<String> rows = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          List<String> values = new ArrayList<>();
          for (int i = 1; i <= columns.length; i++) {
            values.add(rs.getString(i));
          }
          rows.add(String.join(" ", values));
        }
      }
      return rows;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  long count(String whereSql) {
    try {
      return db.queryLong("SELECT count(*) FROM {schema}.work WHERE " + whereSql);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    for (Relay r : relays) {
      r.close();
    }
  }

  static Outcome done(Claim c) {
    return Outcome.done("ref-" + c.workId());
  }

  /** Records every event as "name workId[ detail]". */
  static final class Recorder implements RelayEventListener {
    final List<String> events = Collections.synchronizedList(new ArrayList<>());
    final Map<String, List<Duration>> retryDelays = new ConcurrentHashMap<>();
    volatile Consumer<String> tap = e -> {};

    private void add(String e) {
      events.add(e);
      tap.accept(e);
    }

    long count(String prefix) {
      synchronized (events) {
        return events.stream().filter(e -> e.startsWith(prefix)).count();
      }
    }

    @Override
    public void claimed(Claim claim) {
      add("claimed " + claim.workId());
    }

    @Override
    public void reclaimedAfterLeaseExpiry(Claim claim, String previousOwner) {
      add("reclaimed " + claim.workId() + " " + previousOwner);
    }

    @Override
    public void started(Claim claim) {
      add("started " + claim.workId());
    }

    @Override
    public void completed(Claim claim) {
      add("completed " + claim.workId());
    }

    @Override
    public void retried(Claim claim, Duration delay, String errorKind, String error) {
      retryDelays.computeIfAbsent(claim.workId(), k -> new CopyOnWriteArrayList<>()).add(delay);
      add("retried " + claim.workId() + " " + errorKind);
    }

    @Override
    public void snoozed(Claim claim, Duration delay, String reason) {
      add("snoozed " + claim.workId() + " " + delay.toMillis());
    }

    @Override
    public void failed(Claim claim, String errorKind, String error) {
      add("failed " + claim.workId() + " " + errorKind);
    }

    @Override
    public void cancelled(Claim claim, String reason) {
      add("cancelled " + claim.workId());
    }

    @Override
    public void released(Claim claim) {
      add("released " + claim.workId());
    }

    @Override
    public void stale(Claim claim, String operation) {
      add("stale " + claim.workId() + " " + operation + " " + claim.generation());
    }

    @Override
    public void timedOut(Claim claim) {
      add("timedOut " + claim.workId());
    }

    @Override
    public void cancelRequested(Claim claim) {
      add("cancelRequested " + claim.workId());
    }

    @Override
    public void retired(String workId, String kind, String state, String reason) {
      add("retired " + workId + " " + state + " " + reason);
    }

    @Override
    public void listenerConnected() {
      add("listenerConnected");
    }

    @Override
    public void listenerLost(Throwable error) {
      add("listenerLost");
    }
  }
}
