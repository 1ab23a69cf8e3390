package dev.relay.internal.admin;

import dev.relay.internal.jdbc.PerSchema;
import dev.relay.internal.jdbc.SchemaName;

/**
 * Every statement on the day partitions of the history table ({@code work_history}, V25), one
 * constant per operation, with the validated schema name injected once: maintenance creating days
 * ahead, and retention retiring whole days.
 *
 * <p>Partitions are read from the catalog, by the name {@code add_history_day} gives them ({@code
 * work_history_YYYYMMDD}): {@code retire_history_day} finds a day's partition by that same name,
 * and a name, unlike the text of a partition bound, does not depend on the session's time zone.
 * Rows are only ever read through the parent table: the grants are on it, not on its partitions.
 */
final class HistorySql {
  /** The days that have a partition, oldest first. */
  private static final String PARTITION_DAYS =
      """
      SELECT to_date(substring(c.relname FROM '^work_history_([0-9]{8})$'), 'YYYYMMDD') AS day
        FROM pg_catalog.pg_inherits i
        JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = '${relay_schema}.work_history'::regclass
         AND c.relname ~ '^work_history_[0-9]{8}$'
      """;

  /**
   * The edge of retention for whole days: the database clock minus the longest of the work
   * retention, the default deduplication horizon (parameters 1 and 2, in milliseconds) and every
   * registered kind's horizon (a day holds rows of any kind, so the longest decides; {@code
   * greatest} skips the NULL of an empty kind table). Returns that instant and its UTC day: the
   * days before that day ended before it.
   */
  final String keepUntil;

  /** The days that have a partition and ended before the day given, oldest first. */
  final String partitionDaysBefore;

  /**
   * The stretches of days without a partition, as [lo, hi) in days, NULL for unbounded: before the
   * oldest partition, between two that are not adjacent, after the newest (or everything when there
   * is none). Rows of those days can only be in the default partition.
   */
  final String gaps;

  /**
   * The distinct UTC days of the rows in one stretch of {@link #gaps} (parameters lo and hi, NULL
   * for unbounded), oldest first. Bounds computed from constants, so the planner keeps only the
   * default partition (no other partition's range meets the stretch): the default is read, through
   * the parent, and usually found empty.
   */
  final String daysInDefault;

  /** The rows of the history table that ended before the start of the day given (a dry run). */
  final String countBefore;

  /** Creates a day's partition if missing (moving that day's rows out of the default). */
  final String addDay;

  /**
   * Creates the partition of the day {@code ?} days after today (UTC, database clock) if missing.
   */
  final String addDayAhead;

  /**
   * Writes the tombstones of one day's rows and drops its partition (parameters: the day, and the
   * edge of retention the function checks the day against); NULL when the day has no partition.
   */
  final String retireDay;

  private static final PerSchema<HistorySql> CATALOG = new PerSchema<>(HistorySql::new);

  static HistorySql of(SchemaName schema) {
    return CATALOG.of(schema);
  }

  private HistorySql(SchemaName schema) {
    keepUntil =
        schema.inject(
            """
            SELECT k.keep_until, (k.keep_until AT TIME ZONE 'UTC')::date
              FROM (SELECT clock_timestamp()
                           - greatest(? * interval '1 millisecond', ? * interval '1 millisecond',
                                      (SELECT max(dedup_horizon) FROM ${relay_schema}.kind))
                           AS keep_until) k
            """);
    partitionDaysBefore =
        schema.inject(
            "SELECT p.day FROM (" + PARTITION_DAYS + ") p WHERE p.day < ?::date ORDER BY p.day");
    gaps =
        schema.inject(
            "WITH p AS (\n"
                + PARTITION_DAYS
                + """
                ), g AS (
                    SELECT lag(p.day) OVER (ORDER BY p.day) + 1 AS lo, p.day AS hi FROM p
                    UNION ALL
                    SELECT max(p.day) + 1, NULL FROM p
                )
                SELECT g.lo, g.hi FROM g WHERE g.lo IS NULL OR g.hi IS NULL OR g.lo < g.hi
                """);
    daysInDefault =
        schema.inject(
            """
            SELECT DISTINCT (h.completed_at AT TIME ZONE 'UTC')::date AS day
              FROM ${relay_schema}.work_history h
             WHERE h.completed_at >= coalesce((?::date)::timestamp AT TIME ZONE 'UTC',
                                              '-infinity'::timestamptz)
               AND h.completed_at < coalesce((?::date)::timestamp AT TIME ZONE 'UTC',
                                             'infinity'::timestamptz)
             ORDER BY 1
            """);
    countBefore =
        schema.inject(
            """
            SELECT count(*) FROM ${relay_schema}.work_history h
             WHERE h.completed_at < (?::date)::timestamp AT TIME ZONE 'UTC'
            """);
    addDay = schema.inject("SELECT ${relay_schema}.add_history_day(?::date)");
    addDayAhead =
        schema.inject(
            "SELECT ${relay_schema}.add_history_day((clock_timestamp() AT TIME ZONE 'UTC')::date"
                + " + ?)");
    retireDay = schema.inject("SELECT ${relay_schema}.retire_history_day(?::date, ?)");
  }
}
