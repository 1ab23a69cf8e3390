package dev.relay.internal.admin;

import dev.relay.admin.ChartPair;
import dev.relay.admin.ChartPoint;
import dev.relay.admin.ChartWindow;
import dev.relay.admin.Charts;
import dev.relay.internal.jdbc.BoundText;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The rollup behind the console's charts (V20): the maintenance leader's fold of finished work into
 * it, and the reads of a chart.
 *
 * <p>The fold reads finished work (the work table's and the history table's, {@link
 * RollupSql#foldBatch}) in (completed_at, work_id) order after the watermark's position, a bounded
 * batch per transaction, adds it to the buckets of three tiers and moves the position, in one
 * transaction that first locks the watermark: a crash rolls back the batch and the position
 * together, and a second leader waits for the first and continues after its position. It only reads
 * up to a bound behind which every finished row is committed ({@link RollupSql#foldBound}).
 */
public final class RollupFold {
  /** Rows per fold transaction. */
  public static final int DEFAULT_BATCH = 5_000;

  /** Transactions per maintenance run: up to 100,000 rows a run; the rest waits for the next. */
  public static final int DEFAULT_MAX_BATCHES = 20;

  /**
   * How far behind the clock the fold stays: a transaction that set {@code completed_at} and has
   * not committed yet, in a session the reader cannot see in {@code pg_stat_activity}, is missed if
   * it commits later than this.
   */
  public static final Duration DEFAULT_LAG = Duration.ofMinutes(1);

  /** The tiers' bucket widths, in seconds. */
  static final int[] SPANS = {60, 900, 3600};

  private final RollupSql sql;
  private final Timeouts timeouts;
  private final Duration lag;
  private final int batch;

  /** A fold on {@code schema} with the given lag and batch size. */
  public RollupFold(SchemaName schema, Timeouts timeouts, Duration lag, int batch) {
    this.sql = RollupSql.of(schema);
    this.timeouts = timeouts;
    this.lag = lag;
    this.batch = batch;
  }

  /** What a fold did: rows folded and how far everything is folded. */
  public record Folded(long rows, Instant foldedThrough) {}

  /**
   * Folds until a batch comes back short or {@code maxBatches} ran, then drops buckets past their
   * tier's keep.
   */
  public Folded fold(Connection c, int maxBatches) {
    long rows = 0;
    Instant through = null;
    for (int b = 0; b < maxBatches; b++) {
      Folded f = foldOnce(c);
      rows += f.rows();
      through = f.foldedThrough();
      if (f.rows() < batch) {
        break;
      }
    }
    Tx.run(
        c,
        timeouts,
        "purge rollup buckets",
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.purgeBuckets)) {
            return ps.executeUpdate();
          }
        });
    return new Folded(rows, through);
  }

  private record Key(int span, Instant start, String queue, String kind) {}

  private static final class Bucket {
    long done;
    long failed;
    long cancelled;
    final Map<String, Long> failures = new TreeMap<>();
    final Integer[] latency = new Integer[LatencyHistogram.BINS];

    Bucket() {
      java.util.Arrays.fill(latency, 0);
    }
  }

  /** One batch in one transaction. */
  public Folded foldOnce(Connection c) {
    return Tx.run(
        c,
        timeouts,
        "fold rollup",
        tx -> {
          OffsetDateTime lastAt = null;
          String lastId = null;
          Instant through = null;
          for (int attempt = 0; lastAt == null && attempt < 2; attempt++) {
            if (attempt > 0) {
              try (PreparedStatement ps = tx.prepareStatement(sql.startWatermark)) {
                ps.executeUpdate();
              }
            }
            try (PreparedStatement ps = tx.prepareStatement(sql.lockWatermark);
                ResultSet rs = ps.executeQuery()) {
              if (rs.next()) {
                lastAt = rs.getObject("last_completed_at", OffsetDateTime.class);
                lastId = rs.getString("last_work_id");
                through = rs.getObject("folded_through", OffsetDateTime.class).toInstant();
              }
            }
          }
          if (lastAt == null) {
            throw new SQLException("the rollup watermark row could not be created (V20)");
          }
          OffsetDateTime bound;
          try (PreparedStatement ps = tx.prepareStatement(sql.foldBound)) {
            ps.setLong(1, lag.toMillis());
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              bound = rs.getObject("bound", OffsetDateTime.class);
            }
          }
          Map<Key, Bucket> buckets = new LinkedHashMap<>();
          int n = 0;
          try (PreparedStatement ps = tx.prepareStatement(sql.foldBatch)) {
            int i = 1;
            for (int branch = 0; branch < RollupSql.FOLD_BRANCHES; branch++) {
              ps.setObject(i++, lastAt);
              ps.setObject(i++, lastAt);
              ps.setString(i++, lastId);
              ps.setObject(i++, bound);
              ps.setInt(i++, batch);
            }
            ps.setInt(i, batch);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                n++;
                OffsetDateTime completed = rs.getObject("completed_at", OffsetDateTime.class);
                OffsetDateTime created = rs.getObject("created_at", OffsetDateTime.class);
                add(buckets, rs, completed.toInstant(), created.toInstant());
                lastAt = completed;
                lastId = rs.getString("work_id");
              }
            }
          }
          if (!buckets.isEmpty()) {
            upsert(tx, buckets);
          }
          // A full batch may have left rows at its last instant: everything before it is in.
          Instant now =
              n < batch ? bound.toInstant() : lastAt.toInstant().minus(1, ChronoUnit.MICROS);
          if (now.isAfter(through)) {
            through = now;
          }
          try (PreparedStatement ps = tx.prepareStatement(sql.advance)) {
            ps.setObject(1, lastAt);
            ps.setString(2, lastId);
            ps.setObject(3, through.atOffset(ZoneOffset.UTC));
            ps.setLong(4, n);
            ps.executeUpdate();
          }
          return new Folded(n, through);
        });
  }

  private static void add(
      Map<Key, Bucket> buckets, ResultSet rs, Instant completed, Instant created)
      throws SQLException {
    String queue = rs.getString("queue");
    String kind = rs.getString("kind");
    String state = rs.getString("state");
    String reason = rs.getString("last_error_kind");
    long micros = Math.max(0, ChronoUnit.MICROS.between(created, completed));
    int bin = LatencyHistogram.bin(micros);
    for (int span : SPANS) {
      Instant start = Instant.ofEpochSecond(Math.floorDiv(completed.getEpochSecond(), span) * span);
      Bucket b = buckets.computeIfAbsent(new Key(span, start, queue, kind), k -> new Bucket());
      switch (state) {
        case "done" -> {
          b.done++;
          b.latency[bin]++;
        }
        case "failed" -> {
          b.failed++;
          b.failures.merge(reason == null ? "unknown" : reason, 1L, Long::sum);
        }
        default -> b.cancelled++;
      }
    }
  }

  private void upsert(Connection tx, Map<Key, Bucket> buckets) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(sql.upsert)) {
      for (Map.Entry<Key, Bucket> e : buckets.entrySet()) {
        Key k = e.getKey();
        Bucket b = e.getValue();
        ps.setInt(1, k.span());
        ps.setObject(2, k.start().atOffset(ZoneOffset.UTC));
        ps.setString(3, k.queue());
        ps.setString(4, k.kind());
        ps.setLong(5, b.done);
        ps.setLong(6, b.failed);
        ps.setLong(7, b.cancelled);
        ps.setArray(8, BoundText.textArray(tx, b.failures.keySet().toArray(String[]::new)));
        ps.setArray(9, tx.createArrayOf("int8", b.failures.values().toArray(Long[]::new)));
        ps.setArray(10, tx.createArrayOf("int4", b.latency));
        ps.addBatch();
      }
      ps.executeBatch();
    }
  }

  /** The charts of {@code window} for {@code queue} and {@code kind} (null for every one). */
  public Charts read(Connection c, ChartWindow window, String queue, String kind) {
    return Tx.run(
        c,
        timeouts,
        "read charts",
        tx -> {
          Instant now;
          Instant through;
          try (PreparedStatement ps = tx.prepareStatement(sql.watermark);
              ResultSet rs = ps.executeQuery()) {
            rs.next();
            through = AdminRows.instant(rs, "folded_through");
            now = AdminRows.instant(rs, "now");
          }
          long step = window.step().toSeconds();
          Instant last = Instant.ofEpochSecond(Math.floorDiv(now.getEpochSecond(), step) * step);
          Instant from = last.minusSeconds(step * (window.points() - 1));
          Map<Instant, ChartPoint> byStart = new TreeMap<>();
          long[] total = new long[LatencyHistogram.BINS];
          long done = 0;
          long failed = 0;
          long cancelled = 0;
          try (PreparedStatement ps = tx.prepareStatement(sql.points)) {
            bindWindow(ps, (int) step, from, queue, kind);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                long[] counts = new long[LatencyHistogram.BINS];
                Array bins = rs.getArray("bins");
                Array ns = rs.getArray("counts");
                if (bins != null && ns != null) {
                  Object[] bs = (Object[]) bins.getArray();
                  Object[] cs = (Object[]) ns.getArray();
                  for (int i = 0; i < bs.length; i++) {
                    int b = ((Number) bs[i]).intValue();
                    long v = ((Number) cs[i]).longValue();
                    counts[b] += v;
                    total[b] += v;
                  }
                }
                ChartPoint p =
                    new ChartPoint(
                        AdminRows.instant(rs, "bucket_start"),
                        rs.getLong("done"),
                        rs.getLong("failed"),
                        rs.getLong("cancelled"),
                        LatencyHistogram.quantile(counts, 0.5),
                        LatencyHistogram.quantile(counts, 0.95));
                done += p.done();
                failed += p.failed();
                cancelled += p.cancelled();
                byStart.put(p.start(), p);
              }
            }
          }
          List<ChartPoint> points = new ArrayList<>(window.points());
          for (int i = 0; i < window.points(); i++) {
            Instant t = from.plusSeconds(step * i);
            ChartPoint p = byStart.get(t);
            points.add(p != null ? p : new ChartPoint(t, 0, 0, 0, null, null));
          }
          Map<String, Long> failures = new LinkedHashMap<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.failures)) {
            bindWindow(ps, (int) step, from, queue, kind);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                failures.put(rs.getString("reason"), rs.getLong("n"));
              }
            }
          }
          List<ChartPair> pairs = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.pairs)) {
            ps.setInt(1, (int) step);
            ps.setObject(2, from.atOffset(ZoneOffset.UTC));
            ps.setInt(3, dev.relay.admin.Admin.MAX_CHART_PAIRS);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                pairs.add(
                    new ChartPair(
                        rs.getString("queue"),
                        rs.getString("kind"),
                        rs.getLong("done"),
                        rs.getLong("failed"),
                        rs.getLong("cancelled")));
              }
            }
          }
          return new Charts(
              window,
              queue,
              kind,
              from,
              through,
              points,
              failures,
              done,
              failed,
              cancelled,
              LatencyHistogram.quantile(total, 0.5),
              LatencyHistogram.quantile(total, 0.95),
              pairs);
        });
  }

  private static void bindWindow(
      PreparedStatement ps, int span, Instant from, String queue, String kind) throws SQLException {
    ps.setInt(1, span);
    ps.setObject(2, from.atOffset(ZoneOffset.UTC));
    setText(ps, 3, queue);
    setText(ps, 4, queue);
    setText(ps, 5, kind);
    setText(ps, 6, kind);
  }

  private static void setText(PreparedStatement ps, int i, String v) throws SQLException {
    if (v == null) {
      ps.setNull(i, Types.VARCHAR);
    } else {
      ps.setString(i, v);
    }
  }
}
