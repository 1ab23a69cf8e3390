package dev.relay.internal.jdbc;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;
import org.postgresql.PGConnection;

/**
 * What Relay checks about how it reaches PostgreSQL: whether a connection is a session of its own
 * (not one lent by a connection pooler such as PgBouncer) and whether a failover can lose commits
 * that returned.
 */
public final class Deployment {
  private Deployment() {}

  /**
   * Whether {@code c} is a session of its own: pgjdbc's process ID from the server's start-up
   * message is the one the server reports. A pooler (PgBouncer) hands its clients a made-up key and
   * runs their statements on whichever server session is free.
   */
  public static boolean direct(Connection c) throws SQLException {
    int announced = c.unwrap(PGConnection.class).getBackendPID();
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery(DeploymentSql.BACKEND_PID)) {
      r.next();
      return r.getInt(1) == announced;
    }
  }

  /**
   * Why a failover of this server could lose a commit that returned, or empty when it cannot (no
   * standby streams from it, or its standbys are synchronous and commits wait for them).
   */
  public static Optional<String> failoverRisk(Connection c) throws SQLException {
    String commit;
    String standbys;
    long replicas;
    long sync;
    long hidden;
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery(DeploymentSql.REPLICATION)) {
      r.next();
      commit = r.getString(1);
      standbys = r.getString(2);
      replicas = r.getLong(3);
      sync = r.getLong(4);
      hidden = r.getLong(5);
    }
    return failoverRisk(commit, standbys, replicas, sync, hidden);
  }

  /** The rule of {@link #failoverRisk(Connection)}, on the facts it reads. */
  static Optional<String> failoverRisk(
      String synchronousCommit, String standbyNames, long replicas, long sync, long hidden) {
    if (replicas == 0) {
      return Optional.empty();
    }
    String standbys = replicas + (replicas == 1 ? " standby streams" : " standbys stream");
    String consequence =
        ": a failover to one of them can lose commits that returned, so a claim can be handed out"
            + " twice under one generation; make the standbys synchronous (synchronous_standby_names,"
            + " synchronous_commit = on or remote_apply) or accept that risk (docs/operations.md,"
            + " Failover)";
    if (standbyNames == null || standbyNames.isBlank()) {
      return Optional.of(
          standbys
              + " from this server asynchronously (synchronous_standby_names is empty)"
              + consequence);
    }
    if ("off".equals(synchronousCommit) || "local".equals(synchronousCommit)) {
      return Optional.of(
          standbys
              + " from this server, but synchronous_commit is "
              + synchronousCommit
              + ", so commits do not wait for them"
              + consequence);
    }
    if (sync == 0 && hidden == 0) {
      return Optional.of(
          standbys
              + " from this server, none of them synchronous (synchronous_standby_names = '"
              + standbyNames
              + "' names none that is connected)"
              + consequence);
    }
    return Optional.empty();
  }
}
