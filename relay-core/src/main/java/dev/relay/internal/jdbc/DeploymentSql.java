package dev.relay.internal.jdbc;

/** The statements {@link Deployment} reads the server's facts with; no schema is involved. */
final class DeploymentSql {
  private DeploymentSql() {}

  /** The server process behind this session. */
  static final String BACKEND_PID = "SELECT pg_backend_pid()";

  /**
   * The replication facts that decide whether a returned commit survives a failover. Walsenders of
   * a base backup and of logical replication (a change-data-capture slot) are not standbys that
   * could be promoted, so they are not counted. Columns other than the pid of {@code
   * pg_stat_replication} read as null without {@code pg_read_all_stats}, so a hidden {@code
   * sync_state} is told apart from an asynchronous one.
   */
  static final String REPLICATION =
      """
      SELECT current_setting('synchronous_commit'),
             current_setting('synchronous_standby_names'),
             count(r.pid),
             count(r.pid) FILTER (WHERE r.sync_state IN ('sync', 'quorum')),
             count(r.pid) FILTER (WHERE r.sync_state IS NULL)
        FROM pg_stat_replication r
       WHERE r.state IS DISTINCT FROM 'backup'
         AND NOT EXISTS (SELECT 1 FROM pg_replication_slots s
                          WHERE s.active_pid = r.pid AND s.slot_type = 'logical')
      """;
}
