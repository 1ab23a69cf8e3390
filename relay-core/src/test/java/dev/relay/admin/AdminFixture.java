package dev.relay.admin;

import dev.relay.EnqueueResult;
import dev.relay.KindPolicy;
import dev.relay.Outbox;
import dev.relay.Rows;
import dev.relay.Work;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.store.ClaimRequest;
import dev.relay.internal.store.ClaimedWork;
import dev.relay.internal.store.Settlement;
import dev.relay.internal.store.WorkStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/** Drives work into each state through the real claim protocol, and reads the tables back. */
final class AdminFixture {
  static final Duration LONG = Duration.ofMinutes(5);

  final DataSource ds;
  final String schema;
  final WorkStore store;
  final Outbox outbox;
  final Admin admin;

  AdminFixture(DataSource ds, String schema) {
    this.ds = ds;
    this.schema = schema;
    this.store = new WorkStore(SchemaName.of(schema), Timeouts.DEFAULT);
    this.outbox = Outbox.builder().schema(schema).build();
    this.admin = Admin.create(ds, schema);
  }

  List<EnqueueResult> enqueue(Work... works) {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      List<EnqueueResult> r = outbox.enqueueAll(c, List.of(works));
      c.commit();
      return r;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  List<ClaimedWork> claim(String kind, int n) {
    return claim(kind, n, LONG);
  }

  List<ClaimedWork> claim(String kind, int n, Duration lease) {
    try (Connection c = ds.getConnection()) {
      return store
          .claim(c, new ClaimRequest("worker-1", List.of("default"), List.of(kind), n, lease))
          .claimed();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  ClaimedWork claimOne(String kind) {
    List<ClaimedWork> c = claim(kind, 1);
    if (c.size() != 1) {
      throw new IllegalStateException("nothing to claim of " + kind);
    }
    return c.get(0);
  }

  void settle(Settlement s) {
    try (Connection c = ds.getConnection()) {
      if (!store.settle(c, "worker-1", List.of(s)).get(0).applied()) {
        throw new IllegalStateException("settlement refused: " + s);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  void complete(ClaimedWork w) {
    settle(new Settlement.Complete(w.ref(), "ref-" + w.workId(), null, "accepted"));
  }

  void fail(ClaimedWork w, String errorKind) {
    settle(new Settlement.Fail(w.ref(), errorKind, "boom", Settlement.Evidence.NOT_DELIVERED));
  }

  void retry(ClaimedWork w, String errorKind) {
    settle(
        new Settlement.Retry(
            w.ref(), Duration.ZERO, errorKind, "later", Settlement.Evidence.UNKNOWN));
  }

  /** Enqueues one item of {@code kind}, claims it and fails it. */
  ClaimedWork failed(String workId, String kind) {
    enqueue(Work.of(workId, kind, "{\"id\":\"" + workId + "\"}"));
    ClaimedWork w = claimOne(kind);
    fail(w, "http_500");
    return w;
  }

  /** Enqueues one item of {@code kind}, claims it and completes it. */
  ClaimedWork done(String workId, String kind) {
    enqueue(Work.of(workId, kind, "{\"id\":\"" + workId + "\"}"));
    ClaimedWork w = claimOne(kind);
    complete(w);
    return w;
  }

  /**
   * Moves finished items back from the history table into the work table ({@code reopen_history},
   * V25): where a worker of an earlier release left its finished work, and where the retention
   * purge still deletes it row by row.
   */
  void toWorkTable(String... workIds) {
    query("SELECT * FROM {schema}.reopen_history(?::text[])", (Object) workIds);
  }

  /** {@link #done}, left in the work table as an earlier release's worker leaves it. */
  ClaimedWork doneInWorkTable(String workId, String kind) {
    ClaimedWork w = done(workId, kind);
    toWorkTable(workId);
    return w;
  }

  void registerKind(String kind, Duration horizon) {
    KindPolicy p = KindPolicy.DEFAULT;
    try (Connection c = ds.getConnection()) {
      store.registerKinds(
          c,
          "test",
          List.of(
              new WorkStore.KindRow(
                  kind,
                  p.backoffBase(),
                  p.backoffCap(),
                  p.maxAttempts(),
                  horizon.compareTo(p.maxElapsed()) < 0 ? horizon : p.maxElapsed(),
                  Duration.ofSeconds(30),
                  horizon,
                  "retry")));
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  Map<String, Object> row(String workId) {
    return Rows.work(ds, schema, workId);
  }

  long count(String sql, Object... params) {
    return Rows.count(ds, schema, sql, params);
  }

  int update(String sql, Object... params) {
    return Rows.update(ds, schema, sql, params);
  }

  List<Map<String, Object>> query(String sql, Object... params) {
    return Rows.query(ds, schema, sql, params);
  }
}
