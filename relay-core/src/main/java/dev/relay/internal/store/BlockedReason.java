package dev.relay.internal.store;

import dev.relay.internal.jdbc.SchemaName;

/**
 * Why a waiting dependent is held, as an SQL fragment for the admin statements (status counts and
 * the list filter), written once so that they and {@code Admin.blockedBy} agree: the same walk as
 * {@link DependencySql#blockedBy}, from the row through dependencies still on their way (ready or
 * running), to the nearest one that is failed, cancelled, superseded or gone. The expression is
 * {@code dependency_failed}, {@code dependency_cancelled}, {@code dependency_superseded} or {@code
 * dependency_missing}, and NULL when nothing holds the row. Callers evaluate it only for rows with
 * {@code has_dependencies AND state = 'ready'} (the partial index {@code outbox_waiting_idx}), so
 * its cost follows the waiting dependents, never the work table.
 */
public final class BlockedReason {
  private BlockedReason() {}

  /** Every reason the expression returns, in the order the docs list them. */
  public static final java.util.List<String> REASONS =
      java.util.List.of(
          "dependency_failed",
          "dependency_cancelled",
          "dependency_superseded",
          "dependency_missing");

  /**
   * A scalar subquery that is {@code true} when some dependency of the {@code outbox} row aliased
   * {@code o} is not done (as a row of the work table or, finished, of its history, or as the
   * tombstone of purged work; a dependency gone entirely holds the row), and NULL when every one
   * is: the claim's eligibility rule, which the status counts' oldest eligible age follows. Written
   * with {@code ${relay_schema}} for {@code SchemaName.inject}; a scalar subquery, not NOT EXISTS,
   * so that the planner keeps it per row (three primary-key lookups per dependency) rather than a
   * hashed subplan over every dependency joined to the whole work table.
   */
  public static final String UNMET_DEPENDENCY =
      """
      (SELECT true FROM ${relay_schema}.dependency d
         LEFT JOIN ${relay_schema}.outbox p ON p.work_id = d.depends_on
         LEFT JOIN ${relay_schema}.work_history h ON h.work_id = d.depends_on
         LEFT JOIN ${relay_schema}.tombstone t ON t.work_id = d.depends_on
        WHERE d.work_id = o.work_id
          AND coalesce(p.state, h.state, t.final_state) IS DISTINCT FROM 'done'
        LIMIT 1)""";

  /** The reason the {@code outbox} row named {@code alias} is held, as a scalar subquery. */
  public static String of(SchemaName schema, String alias) {
    String s = schema.sql();
    // Every lookup is by key, as a scalar subquery or a LATERAL with a LIMIT (at most
    // Outbox.MAX_DEPENDENCIES rows per item), which the planner cannot turn into a merge or hash
    // join: it runs once per waiting dependent, and a join strategy that suits one call (a sorted
    // scan of outbox_pkey) would repeat a range scan of the work table for each of them.
    return """
        (WITH RECURSIVE up (work_id, depth) AS (
             SELECT d.depends_on, 1 FROM %1$s.dependency d WHERE d.work_id = %2$s.work_id
             UNION
             SELECT x.depends_on, u.depth + 1
               FROM up u
              CROSS JOIN LATERAL (
                    SELECT d.depends_on FROM %1$s.dependency d
                     WHERE d.work_id = u.work_id
                       AND (SELECT w.state FROM %1$s.outbox w WHERE w.work_id = u.work_id)
                           IN ('ready', 'running')
                     LIMIT 100) x
              WHERE u.depth < 1000
         )
         SELECT CASE WHEN b.state IS NULL THEN 'dependency_missing'
                     WHEN b.state = 'cancelled'
                          AND EXISTS (SELECT 1 FROM %1$s.supersedes s
                                       WHERE s.supersedes_work_id = b.work_id)
                     THEN 'dependency_superseded'
                     ELSE 'dependency_' || b.state END
           FROM (SELECT u.work_id, u.depth,
                        coalesce((SELECT p.state FROM %1$s.work p WHERE p.work_id = u.work_id LIMIT 1),
                                 (SELECT t.final_state FROM %1$s.tombstone t
                                   WHERE t.work_id = u.work_id)) AS state
                   FROM up u) b
          WHERE b.state IS NULL OR b.state NOT IN ('ready', 'running', 'done')
          ORDER BY b.depth, b.work_id
          LIMIT 1)"""
        .formatted(s, alias);
  }
}
