package dev.relay.internal.admin;

import dev.relay.internal.jdbc.PerSchema;
import dev.relay.internal.jdbc.SchemaName;

/**
 * Every statement on the pause table family ({@code pause}, {@code pause_audit}), one constant per
 * operation, with the validated schema name injected once. The claim's pause test lives with the
 * claim, in {@code WorkSql}.
 */
final class PauseSql {
  /**
   * Pause, step one: every claim reads the pause table and holds its ACCESS SHARE lock until it
   * commits; ACCESS EXCLUSIVE waits for those claims, and holds back new ones until the pause
   * commits. So no claim that commits after the pause was taken without seeing it.
   */
  final String lockPauses;

  /** The database clock, and whether a requested automatic resume is already past. */
  final String resumeAtPassed;

  /**
   * Pauses a target, or renews a pause of it: the actor, reason and automatic resume are replaced;
   * the start stays that of a pause still in force. Returns the pause as stored.
   */
  final String pause;

  /**
   * Deletes the pause of a target (queue and kind, either NULL for every), reporting if it held.
   */
  final String resume;

  /** One audit row: action, queue, kind, actor, reason, resume_at, paused_at. */
  final String audit;

  /** The pauses in force now, on the database clock, by queue then kind (every-one first). */
  final String active;

  /** The newest pause audit rows, newest first, at most {@code ?}. */
  final String history;

  /**
   * Deletes pauses whose automatic resume has passed and audits each as {@code auto_resume}; the
   * maintenance leader runs it so that the table stays small and the history shows the resume.
   */
  final String expire;

  private static final PerSchema<PauseSql> CATALOG = new PerSchema<>(PauseSql::new);

  static PauseSql of(SchemaName schema) {
    return CATALOG.of(schema);
  }

  private PauseSql(SchemaName schema) {
    lockPauses = schema.inject("LOCK TABLE ${relay_schema}.pause IN ACCESS EXCLUSIVE MODE");
    resumeAtPassed =
        """
        SELECT clock_timestamp() AS now, ?::timestamptz <= clock_timestamp() AS passed
        """;
    pause =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.pause AS p (queue, kind, actor, reason, resume_at)
            VALUES (?, ?, ?, ?, ?::timestamptz)
                ON CONFLICT (queue, kind) DO UPDATE
               SET actor = EXCLUDED.actor,
                   reason = EXCLUDED.reason,
                   resume_at = EXCLUDED.resume_at,
                   paused_at = CASE WHEN p.resume_at IS NULL OR p.resume_at > clock_timestamp()
                                    THEN p.paused_at
                                    ELSE EXCLUDED.paused_at END
            RETURNING queue, kind, actor, reason, paused_at, resume_at
            """);
    resume =
        schema.inject(
            """
            DELETE FROM ${relay_schema}.pause
             WHERE queue IS NOT DISTINCT FROM ?::text AND kind IS NOT DISTINCT FROM ?::text
            RETURNING queue, kind, actor, reason, paused_at, resume_at,
                      resume_at IS NULL OR resume_at > clock_timestamp() AS in_force
            """);
    audit =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.pause_audit
                   (action, queue, kind, actor, reason, resume_at, paused_at)
            VALUES (?, ?, ?, ?, ?, ?::timestamptz, ?::timestamptz)
            """);
    active =
        schema.inject(
            """
            SELECT queue, kind, actor, reason, paused_at, resume_at
              FROM ${relay_schema}.pause
             WHERE resume_at IS NULL OR resume_at > clock_timestamp()
             ORDER BY queue NULLS FIRST, kind NULLS FIRST
            """);
    history =
        schema.inject(
            """
            SELECT action, queue, kind, actor, reason, at, resume_at, paused_at
              FROM ${relay_schema}.pause_audit
             ORDER BY at DESC, id DESC
             LIMIT ?
            """);
    expire =
        schema.inject(
            """
            WITH gone AS (
                DELETE FROM ${relay_schema}.pause
                 WHERE resume_at <= clock_timestamp()
             RETURNING queue, kind, actor, reason, paused_at, resume_at
            )
            INSERT INTO ${relay_schema}.pause_audit
                   (action, queue, kind, actor, reason, resume_at, paused_at)
            SELECT 'auto_resume', queue, kind, 'relay maintenance',
                   'automatic resume of the pause by ' || actor || ': ' || reason,
                   resume_at, paused_at
              FROM gone
            """);
  }
}
