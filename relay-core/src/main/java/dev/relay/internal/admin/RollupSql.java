package dev.relay.internal.admin;

import dev.relay.internal.jdbc.PerSchema;
import dev.relay.internal.jdbc.SchemaName;

/**
 * Every statement on the rollup family ({@code rollup}, {@code rollup_watermark}, V20), one
 * constant per operation, with the validated schema name injected once: the maintenance leader's
 * fold of finished work and the console's chart reads.
 */
final class RollupSql {
  /**
   * Fold, step one: lock the watermark row. A second leader (a lock handed over mid-run, a stalled
   * one coming back) waits here and then reads the position the first one committed, so the two
   * never fold the same rows.
   */
  final String lockWatermark;

  /**
   * Fold, step two: the bound up to which every finished row is committed, on the database clock. A
   * row's {@code completed_at} is sampled inside the transaction that finishes it, so a row
   * finished earlier can still appear when its transaction commits late. The bound is the clock
   * minus the lag, and no later than the start of the oldest transaction in this database that
   * holds a transaction ID (it may be finishing work whose time lies before now); sessions of other
   * roles show no start unless the reader may see them (pg_read_all_stats), and for those the lag
   * alone stands. Parameter: the lag in milliseconds.
   */
  final String foldBound;

  /**
   * Fold, step three: the next rows after the position, up to the bound, in (completed_at, work_id)
   * order, at most the limit, from both tables that hold finished work. In the work table (failed
   * work, and work finished by an older worker or an operator) one branch per finished state, each
   * a range of the partial index {@code outbox_finished_idx (state, completed_at)} read in order
   * with its own limit (one scan for {@code state IN (...)} could not return completed_at order);
   * the {@code >=} on completed_at is the index condition, and the row comparison then drops the
   * rows already folded at that same instant. In the history table (done and cancelled work a
   * worker moved there) one branch: a range of {@code work_history_completed_idx (completed_at,
   * work_id)}, whose order is the fold's, in the partitions of the days from the position to the
   * bound only (the {@code >=} prunes the others), merged across them. So the statement reads at
   * most four limits' worth of index entries and never a whole table. A row is in one table at any
   * instant (a move deletes and inserts in one transaction), so the statement's one snapshot reads
   * it once. Parameters per branch: position time (twice), position ID, bound, limit; then the
   * outer limit.
   */
  final String foldBatch;

  /** The branches of {@link #foldBatch}, each bound with the same five parameters. */
  static final int FOLD_BRANCHES = 4;

  /**
   * Fold, step four: add one bucket's counts to its row, creating it when new. Counters add;
   * failure counts add per reason (given as two arrays, reasons and counts); histograms add bin by
   * bin.
   */
  final String upsert;

  /** Fold, step five: the new position and how far everything is folded; commits with step four. */
  final String advance;

  /**
   * Drops buckets past their tier's keep (1-minute: 3 h; 15-minute: 26 h; 1-hour: 8 d 2 h), through
   * the primary key's leading columns.
   */
  final String purgeBuckets;

  /**
   * The watermark (how far everything is folded, and how many rows so far; NULLs before the first
   * fold) and the database clock.
   */
  final String watermark;

  /**
   * Recreates the watermark row (8 days back, where V20 starts it) when it is missing, for a table
   * emptied by hand; a no-op otherwise.
   */
  final String startWatermark;

  /**
   * One tier's buckets from the window's start, summed per bucket over the queues and kinds asked
   * (NULL for all): counts, and the histogram as two arrays of its non-zero bins and their counts.
   * Parameters: span, from, queue (twice), kind (twice).
   */
  final String points;

  /** Failed work in the window per reason, largest first; parameters as {@link #points}. */
  final String failures;

  /**
   * Totals per (queue, kind) in the window, busiest first; parameters: span, from, then the limit.
   */
  final String pairs;

  /**
   * A window's finished work per (queue, kind) from one tier's buckets from the first one given,
   * with the fold's position, in one statement, so that both come from one snapshot (a fold that
   * commits meanwhile moves both or neither, and the work after the position is read from the work
   * table). One row per (queue, kind) and measure: {@code done} (its count in {@code n}), {@code
   * bin} (the latency histogram's non-zero bins: {@code bin} and its count), {@code failed} (per
   * {@code reason}); a single row of NULL measure when the window has no buckets, and no row when
   * the watermark row is missing. Parameters: span, from.
   */
  final String windowTotals;

  /**
   * The 1-minute tier's buckets from the first one given, done and failed summed per minute over
   * every queue and kind, with the fold's position, in one statement as {@link #windowTotals}; a
   * single row of NULL minute when there is none. Parameter: from.
   */
  final String windowMinutes;

  private static final PerSchema<RollupSql> CATALOG = new PerSchema<>(RollupSql::new);

  static RollupSql of(SchemaName schema) {
    return CATALOG.of(schema);
  }

  private RollupSql(SchemaName schema) {
    lockWatermark =
        schema.inject(
            """
            SELECT last_completed_at, last_work_id, folded_through
              FROM ${relay_schema}.rollup_watermark
               FOR UPDATE
            """);
    foldBound =
        """
        SELECT least(clock_timestamp() - ? * interval '1 millisecond',
                     (SELECT min(a.xact_start) FROM pg_stat_activity a
                       WHERE a.datname = current_database() AND a.backend_xid IS NOT NULL
                         AND a.pid <> pg_backend_pid())) AS bound
        """;
    // one table and state condition per branch: %1$s the table, %2$s the states
    String branch =
        """
        (SELECT o.work_id, o.queue, o.kind, o.state, o.created_at, o.completed_at,
                o.last_error_kind
           FROM ${relay_schema}.%1$s o
          WHERE o.state %2$s
            AND o.completed_at >= ?::timestamptz
            AND (o.completed_at, o.work_id) > (?::timestamptz, ?::text)
            AND o.completed_at <= ?::timestamptz
          ORDER BY o.completed_at, o.work_id
          LIMIT ?)
        """;
    foldBatch =
        schema.inject(
            "SELECT * FROM (\n"
                + branch.formatted("outbox", "= 'done'")
                + "UNION ALL\n"
                + branch.formatted("outbox", "= 'failed'")
                + "UNION ALL\n"
                + branch.formatted("outbox", "= 'cancelled'")
                + "UNION ALL\n"
                // every history row is done or cancelled (its check); no state to pick
                + branch.formatted("work_history", "IN ('done', 'cancelled')")
                + ") b\n ORDER BY b.completed_at, b.work_id\n LIMIT ?");
    upsert =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.rollup AS r
                   (span_s, bucket_start, queue, kind, done, failed, cancelled, failures, latency)
            VALUES (?, ?, ?, ?, ?, ?, ?,
                    (SELECT coalesce(jsonb_object_agg(u.reason, u.n), '{}'::jsonb)
                       FROM unnest(?::text[], ?::int8[]) AS u(reason, n)),
                    ?::integer[])
                ON CONFLICT (span_s, bucket_start, queue, kind) DO UPDATE
               SET done = r.done + excluded.done,
                   failed = r.failed + excluded.failed,
                   cancelled = r.cancelled + excluded.cancelled,
                   failures = (SELECT coalesce(jsonb_object_agg(f.reason, f.n), '{}'::jsonb)
                                 FROM (SELECT e.key AS reason, sum(e.value::bigint) AS n
                                         FROM (SELECT * FROM jsonb_each_text(r.failures)
                                               UNION ALL
                                               SELECT * FROM jsonb_each_text(excluded.failures))
                                              AS e
                                        GROUP BY e.key) AS f),
                   latency = ARRAY(SELECT a + b
                                     FROM unnest(r.latency, excluded.latency)
                                          WITH ORDINALITY AS h(a, b, i)
                                    ORDER BY h.i)
            """);
    advance =
        schema.inject(
            """
            UPDATE ${relay_schema}.rollup_watermark
               SET last_completed_at = ?, last_work_id = ?, folded_through = ?,
                   folded = folded + ?, folded_at = clock_timestamp()
            """);
    purgeBuckets =
        schema.inject(
            """
            DELETE FROM ${relay_schema}.rollup
             WHERE (span_s = 60 AND bucket_start < clock_timestamp() - interval '3 hours')
                OR (span_s = 900 AND bucket_start < clock_timestamp() - interval '26 hours')
                OR (span_s = 3600 AND bucket_start < clock_timestamp() - interval '8 days 2 hours')
            """);
    watermark =
        schema.inject(
            """
            SELECT w.folded_through, w.folded, w.folded_at, clock_timestamp() AS now
              FROM (SELECT 1) AS one
              LEFT JOIN ${relay_schema}.rollup_watermark w ON true
            """);
    startWatermark =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.rollup_watermark
                   (last_completed_at, last_work_id, folded_through)
            VALUES (clock_timestamp() - interval '8 days', '', clock_timestamp() - interval '8 days')
                ON CONFLICT (only_row) DO NOTHING
            """);
    windowTotals =
        schema.inject(
            """
            WITH w AS MATERIALIZED (
                SELECT last_completed_at, last_work_id FROM ${relay_schema}.rollup_watermark
            ),
            r AS MATERIALIZED (
                SELECT r.queue, r.kind, r.done, r.failed, r.failures, r.latency
                  FROM ${relay_schema}.rollup r
                 WHERE r.span_s = ? AND r.bucket_start >= ?
            ),
            t AS (
                SELECT r.queue, r.kind, 'done' AS measure, NULL::int AS bin, NULL::text AS reason,
                       sum(r.done)::int8 AS n
                  FROM r GROUP BY r.queue, r.kind
                UNION ALL
                SELECT r.queue, r.kind, 'bin', (h.i - 1)::int, NULL, sum(h.n)::int8
                  FROM r, unnest(r.latency) WITH ORDINALITY AS h(n, i)
                 WHERE h.n > 0
                 GROUP BY r.queue, r.kind, h.i
                UNION ALL
                SELECT r.queue, r.kind, 'failed', NULL, e.key, sum(e.value::bigint)::int8
                  FROM r, jsonb_each_text(r.failures) AS e
                 WHERE r.failed > 0
                 GROUP BY r.queue, r.kind, e.key
            )
            SELECT w.last_completed_at, w.last_work_id, t.queue, t.kind, t.measure, t.bin,
                   t.reason, t.n
              FROM w LEFT JOIN t ON true
            """);
    windowMinutes =
        schema.inject(
            """
            WITH w AS MATERIALIZED (
                SELECT last_completed_at, last_work_id FROM ${relay_schema}.rollup_watermark
            ),
            m AS (
                SELECT r.bucket_start AS minute, sum(r.done)::int8 AS done,
                       sum(r.failed)::int8 AS failed
                  FROM ${relay_schema}.rollup r
                 WHERE r.span_s = 60 AND r.bucket_start >= ?
                 GROUP BY r.bucket_start
            )
            SELECT w.last_completed_at, w.last_work_id, m.minute, m.done, m.failed
              FROM w LEFT JOIN m ON true
            """);
    String window =
        """
          FROM ${relay_schema}.rollup r
         WHERE r.span_s = ? AND r.bucket_start >= ?
           AND (?::text IS NULL OR r.queue = ?::text)
           AND (?::text IS NULL OR r.kind = ?::text)
        """;
    points =
        schema.inject(
            "WITH r AS MATERIALIZED (\n SELECT r.bucket_start, r.done, r.failed, r.cancelled,"
                + " r.latency\n"
                + window
                + """
                ), bins AS (
                    SELECT r.bucket_start, h.i, sum(h.n) AS n
                      FROM r, unnest(r.latency) WITH ORDINALITY AS h(n, i)
                     WHERE h.n > 0
                     GROUP BY r.bucket_start, h.i
                ), totals AS (
                    SELECT r.bucket_start, sum(r.done) AS done, sum(r.failed) AS failed,
                           sum(r.cancelled) AS cancelled
                      FROM r GROUP BY r.bucket_start
                )
                SELECT t.bucket_start, t.done, t.failed, t.cancelled,
                       (SELECT array_agg(b.i - 1 ORDER BY b.i) FROM bins b
                         WHERE b.bucket_start = t.bucket_start) AS bins,
                       (SELECT array_agg(b.n ORDER BY b.i) FROM bins b
                         WHERE b.bucket_start = t.bucket_start) AS counts
                  FROM totals t
                 ORDER BY t.bucket_start
                """);
    failures =
        schema.inject(
            """
            SELECT e.key AS reason, sum(e.value::bigint) AS n
              FROM ${relay_schema}.rollup r
             CROSS JOIN LATERAL jsonb_each_text(r.failures) AS e
             WHERE r.span_s = ? AND r.bucket_start >= ?
               AND (?::text IS NULL OR r.queue = ?::text)
               AND (?::text IS NULL OR r.kind = ?::text)
               AND r.failed > 0
             GROUP BY e.key
             ORDER BY n DESC, reason
            """);
    pairs =
        schema.inject(
            """
            SELECT r.queue, r.kind, sum(r.done) AS done, sum(r.failed) AS failed,
                   sum(r.cancelled) AS cancelled
              FROM ${relay_schema}.rollup r
             WHERE r.span_s = ? AND r.bucket_start >= ?
             GROUP BY r.queue, r.kind
             ORDER BY sum(r.done + r.failed + r.cancelled) DESC, r.queue, r.kind
             LIMIT ?
            """);
  }
}
