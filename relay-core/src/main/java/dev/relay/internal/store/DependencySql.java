package dev.relay.internal.store;

import dev.relay.internal.jdbc.PerSchema;
import dev.relay.internal.jdbc.SchemaName;

/**
 * The statements on the {@code dependency} table, one constant per operation, with the validated
 * schema name injected once. The claim's dependency condition lives with the claim in {@link
 * WorkSql}.
 */
final class DependencySql {
  /**
   * Enqueue, before the insert: which of the named IDs exist as work or as a tombstone, locking
   * each found row FOR KEY SHARE until the producer's transaction ends, so a concurrent purge (a
   * DELETE) waits instead of removing a dependency the new work is about to name. Rows are locked
   * in ID order, as every other multi-row lock. Returns each found ID once. Runs through the
   * function {@code lock_dependencies} (V11), so a producer needs EXECUTE on it, not UPDATE.
   */
  final String lockExisting;

  /** Enqueue, after the insert: one row per (dependent, dependency) of the inserted work. */
  final String insert;

  /**
   * The dependencies of one item with what each is now: the row's state, else the tombstone's final
   * state, else NULL (gone); and whether a replacement supersedes it.
   */
  final String statesOf;

  /**
   * The direct dependents of one item (what waits for it) with what each is now, as {@link
   * #statesOf} reads dependencies; found through {@code dependency_depends_on_idx}, bounded.
   */
  final String dependentsOf;

  /**
   * The nearest dependency that blocks one item: walks from the item through dependencies still on
   * their way (ready or running) and returns the closest one that is failed, cancelled or gone.
   * Dependencies form no cycle (each existed before its dependent), so the walk ends; the depth
   * bound is a guard only.
   */
  final String blockedBy;

  /**
   * The dependents of one item that still wait (ready), direct and through other waiting
   * dependents, nearest first, each once; for a cascading cancel. Bounded by the limit and a depth
   * guard; found through {@code dependency_depends_on_idx}.
   */
  final String waitingDependents;

  private static final PerSchema<DependencySql> CATALOG = new PerSchema<>(DependencySql::new);

  static DependencySql of(SchemaName schema) {
    return CATALOG.of(schema);
  }

  DependencySql(SchemaName schema) {
    // The check and the lock run in a SECURITY DEFINER function (migration V11): a row lock needs
    // UPDATE on the table, which a producer role does not have.
    lockExisting =
        schema.inject(
            "SELECT f.work_id FROM ${relay_schema}.lock_dependencies(?::text[]) AS f(work_id)");
    insert =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.dependency (work_id, depends_on)
            SELECT u.work_id, u.depends_on
              FROM unnest(?::text[], ?::text[]) AS u(work_id, depends_on)
             ORDER BY u.work_id, u.depends_on
                ON CONFLICT DO NOTHING
            """);
    waitingDependents =
        schema.inject(
            """
            WITH RECURSIVE down (work_id, depth) AS (
                SELECT d.work_id, 1
                  FROM ${relay_schema}.dependency d
                 WHERE d.depends_on = ?
                UNION
                -- by key, once per found dependent (see BlockedReason)
                SELECT x.work_id, n.depth + 1
                  FROM down n
                 CROSS JOIN LATERAL (
                       SELECT d.work_id FROM ${relay_schema}.dependency d
                        WHERE d.depends_on = n.work_id
                          AND (SELECT w.state FROM ${relay_schema}.outbox w
                                WHERE w.work_id = n.work_id) = 'ready'
                        LIMIT 10000) x
                 WHERE n.depth < 1000
            ), waiting AS (
                SELECT n.work_id, n.depth FROM down n
                 WHERE (SELECT w.state FROM ${relay_schema}.outbox w
                         WHERE w.work_id = n.work_id) = 'ready'
            )
            SELECT work_id FROM waiting GROUP BY work_id ORDER BY min(depth), work_id LIMIT ?
            """);
    statesOf =
        schema.inject(
            """
            SELECT d.depends_on, coalesce(p.state, t.final_state) AS state,
                   EXISTS (SELECT 1 FROM ${relay_schema}.supersedes s
                            WHERE s.supersedes_work_id = d.depends_on) AS superseded
              FROM ${relay_schema}.dependency d
              LEFT JOIN ${relay_schema}.work p ON p.work_id = d.depends_on  -- unfinished or finished
              LEFT JOIN ${relay_schema}.tombstone t ON t.work_id = d.depends_on
             WHERE d.work_id = ?
             ORDER BY d.depends_on
            """);
    dependentsOf =
        schema.inject(
            """
            SELECT d.work_id AS depends_on, coalesce(p.state, t.final_state) AS state,
                   EXISTS (SELECT 1 FROM ${relay_schema}.supersedes s
                            WHERE s.supersedes_work_id = d.work_id) AS superseded
              FROM ${relay_schema}.dependency d
              LEFT JOIN ${relay_schema}.work p ON p.work_id = d.work_id  -- unfinished or finished
              LEFT JOIN ${relay_schema}.tombstone t ON t.work_id = d.work_id
             WHERE d.depends_on = ?
             ORDER BY d.work_id
             LIMIT ?
            """);
    blockedBy =
        schema.inject(
            """
            WITH RECURSIVE up (work_id, depth) AS (
                SELECT d.depends_on, 1 FROM ${relay_schema}.dependency d WHERE d.work_id = ?
                UNION
                SELECT d.depends_on, u.depth + 1
                  FROM up u
                  JOIN ${relay_schema}.outbox w
                    ON w.work_id = u.work_id AND w.state IN ('ready', 'running')
                  JOIN ${relay_schema}.dependency d ON d.work_id = u.work_id
                 WHERE u.depth < 1000
            )
            SELECT u.work_id AS depends_on, coalesce(p.state, t.final_state) AS state,
                   EXISTS (SELECT 1 FROM ${relay_schema}.supersedes s
                            WHERE s.supersedes_work_id = u.work_id) AS superseded
              FROM up u
              LEFT JOIN ${relay_schema}.work p ON p.work_id = u.work_id  -- unfinished or finished
              LEFT JOIN ${relay_schema}.tombstone t ON t.work_id = u.work_id
             WHERE coalesce(p.state, t.final_state) IS NULL
                OR coalesce(p.state, t.final_state) NOT IN ('ready', 'running', 'done')
             ORDER BY u.depth, u.work_id
             LIMIT 1
            """);
  }
}
