package dev.relay.internal.receiver;

import dev.relay.RetryableException;
import dev.relay.internal.jdbc.BoundText;
import dev.relay.internal.jdbc.Coordination;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.SqlErrors;
import dev.relay.receiver.EffectFailedException;
import dev.relay.receiver.InboxEffect;
import dev.relay.receiver.InboxResult;
import dev.relay.receiver.PayloadMismatchException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The inbox's statements on the caller's connection, inside the caller's transaction: never
 * commits, rolls back or swallows an error. Inputs are validated by the public types first.
 */
public final class InboxStore {
  private final SchemaName schema;
  private final InboxSql sql;
  private final int maxResultBytes;

  /** A store for {@code schema}; results larger than {@code maxResultBytes} are refused. */
  public InboxStore(SchemaName schema, int maxResultBytes) {
    this.schema = schema;
    this.sql = InboxSql.of(schema);
    this.maxResultBytes = maxResultBytes;
  }

  /**
   * Records the message, runs the effect and saves its result, or returns the saved result of an
   * equal earlier delivery. With {@code wait} false, a message being applied by another open
   * transaction yields {@link InboxResult.Status#IN_PROGRESS} at once, having written nothing.
   */
  public InboxResult process(
      Connection c,
      String consumer,
      String messageId,
      String payload,
      InboxEffect effect,
      boolean wait) {
    try {
      // Waits for (or, without wait, detects) another transaction processing this message.
      try (PreparedStatement ps =
          c.prepareStatement(
              wait ? Coordination.LOCK_INBOX_MESSAGE : Coordination.TRY_LOCK_INBOX_MESSAGE)) {
        ps.setString(1, Coordination.inboxMessageKey(schema, consumer, messageId));
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (!wait && !rs.getBoolean(1)) {
            return new InboxResult(consumer, messageId, InboxResult.Status.IN_PROGRESS, null, null);
          }
        }
      }
      Instant receivedAt = null;
      try (PreparedStatement ps = c.prepareStatement(sql.insert)) {
        ps.setString(1, consumer);
        ps.setString(2, messageId);
        ps.setString(3, payload);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            receivedAt = rs.getTimestamp(1).toInstant();
          }
        }
      }
      if (receivedAt == null) {
        return repeat(c, consumer, messageId, payload);
      }
      String result = runEffect(c, consumer, messageId, effect);
      try (PreparedStatement ps = c.prepareStatement(sql.saveResult)) {
        ps.setString(1, result);
        ps.setString(2, consumer);
        ps.setString(3, messageId);
        ps.executeUpdate();
      }
      return new InboxResult(consumer, messageId, InboxResult.Status.APPLIED, result, receivedAt);
    } catch (SQLException e) {
      throw SqlErrors.translate("inbox " + consumer + " message '" + messageId + "'", e);
    }
  }

  private String runEffect(Connection c, String consumer, String messageId, InboxEffect effect) {
    String result;
    try {
      result = effect.apply(c);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new EffectFailedException(consumer, messageId, e);
    }
    // Text Relay stores must never fail a write: NULs and lone surrogates (which jsonb refuses)
    // become U+FFFD. The rest is checked before the UPDATE is sent, so a bad result never aborts
    // the transaction by itself.
    return ReceiverInput.json("effect result", BoundText.json(result), maxResultBytes);
  }

  private InboxResult repeat(Connection c, String consumer, String messageId, String payload)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.compare)) {
      ps.setString(1, payload);
      ps.setString(2, consumer);
      ps.setString(3, messageId);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          // Skipped by ON CONFLICT, yet gone now: purged by a concurrent transaction.
          throw new RetryableException(
              "inbox " + consumer + " message '" + messageId + "' changed concurrently; retry",
              null,
              null);
        }
        if (!rs.getBoolean("same_payload")) {
          throw new PayloadMismatchException(
              consumer, messageId, rs.getString("stored_digest"), rs.getString("requested_digest"));
        }
        return new InboxResult(
            consumer,
            messageId,
            InboxResult.Status.DUPLICATE,
            rs.getString("result"),
            rs.getTimestamp("received_at").toInstant());
      }
    }
  }

  /** A consumer's horizon, if registered. */
  public Optional<Duration> horizon(Connection c, String consumer) {
    try (PreparedStatement ps = c.prepareStatement(sql.horizon)) {
      ps.setString(1, consumer);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(Duration.ofSeconds(rs.getLong(1))) : Optional.empty();
      }
    } catch (SQLException e) {
      throw SqlErrors.translate("reading the inbox horizon of " + consumer, e);
    }
  }

  /** Every registered horizon by consumer, in name order. */
  public Map<String, Duration> horizons(Connection c) {
    try (PreparedStatement ps = c.prepareStatement(sql.horizons);
        ResultSet rs = ps.executeQuery()) {
      Map<String, Duration> all = new LinkedHashMap<>();
      while (rs.next()) {
        all.put(rs.getString(1), Duration.ofSeconds(rs.getLong(2)));
      }
      return all;
    } catch (SQLException e) {
      throw SqlErrors.translate("reading the inbox horizons", e);
    }
  }

  /** Registers or changes a consumer's horizon (whole seconds). */
  public void setHorizon(Connection c, String consumer, Duration horizon) {
    try (PreparedStatement ps = c.prepareStatement(sql.setHorizon)) {
      ps.setString(1, consumer);
      ps.setLong(2, horizon.toSeconds());
      ps.executeUpdate();
    } catch (SQLException e) {
      throw SqlErrors.translate("setting the inbox horizon of " + consumer, e);
    }
  }

  /** Deletes up to {@code limit} rows of {@code consumer} older than its horizon. */
  public int purge(Connection c, String consumer, int limit) {
    try (PreparedStatement ps = c.prepareStatement(sql.purge)) {
      ps.setString(1, consumer);
      ps.setString(2, consumer);
      ps.setInt(3, limit);
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw SqlErrors.translate("purging inbox " + consumer, e);
    }
  }
}
