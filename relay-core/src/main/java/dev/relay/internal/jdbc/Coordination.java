package dev.relay.internal.jdbc;

import dev.relay.InvalidConfigurationException;
import java.nio.charset.StandardCharsets;

/**
 * The names by which Relay processes sharing a schema find each other in PostgreSQL, built here and
 * nowhere else: the LISTEN/NOTIFY channel and the advisory-lock keys, with the statements that use
 * them.
 *
 * <p>These values are a wire protocol between versions: during a rolling upgrade, processes of an
 * old and a new Relay run against one schema. A changed channel leaves the old workers deaf to the
 * new producers' enqueues; a changed lock key lets two migrations, two maintenance leaders or two
 * deliveries of one inbox message run at once. {@code CoordinationTest} pins every value, including
 * the lock identities PostgreSQL derives from them; change one only with a migration plan.
 *
 * <p>Every key includes the schema name, so two Relay schemas in one database never wake or block
 * each other. A hash collision between two keys only makes two unrelated operations wait for each
 * other.
 */
public final class Coordination {
  /** The longest channel name PostgreSQL accepts (NAMEDATALEN - 1). */
  public static final int MAX_CHANNEL_BYTES = 63;

  private static final String CHANNEL_PREFIX = "relay_";

  /** Advisory-lock class (first key) of inbox messages: "RELI". */
  static final int INBOX_LOCK_CLASS = 0x52454C49;

  /** Advisory-lock class (first key) of migrations: "RELM". */
  static final int MIGRATION_LOCK_CLASS = 0x52454C4D;

  /**
   * Waits for any other transaction processing the same inbox message to end; bind {@link
   * #inboxMessageKey}. Transaction level, so COMMIT or ROLLBACK releases it and a pooled connection
   * never keeps it.
   */
  public static final String LOCK_INBOX_MESSAGE =
      "SELECT pg_advisory_xact_lock(" + INBOX_LOCK_CLASS + ", hashtext(?))";

  /** As {@link #LOCK_INBOX_MESSAGE}, but answers false at once instead of waiting. */
  public static final String TRY_LOCK_INBOX_MESSAGE =
      "SELECT pg_try_advisory_xact_lock(" + INBOX_LOCK_CLASS + ", hashtext(?))";

  /**
   * Serialises migrations of one schema; bind {@link #migrationKey}. Transaction level: released by
   * the migration's COMMIT.
   */
  public static final String LOCK_MIGRATION =
      "SELECT pg_advisory_xact_lock(" + MIGRATION_LOCK_CLASS + ", hashtext(?))";

  /**
   * {@link #LOCK_MIGRATION} without waiting: true when taken. A migrator waits for another between
   * attempts with no transaction open, because a waiting transaction holds a snapshot, and a
   * concurrent index build of the migrator holding the lock waits for every older snapshot (a
   * deadlock if the waiter waited inside a statement).
   */
  public static final String TRY_LOCK_MIGRATION =
      "SELECT pg_try_advisory_xact_lock(" + MIGRATION_LOCK_CLASS + ", hashtext(?))";

  /**
   * Takes the schema's maintenance lock if free; bind {@link #maintenanceKey}. Session level (one
   * 64-bit key), so it must be held on a dedicated connection, never a pooled one.
   */
  public static final String TRY_LOCK_MAINTENANCE =
      "SELECT pg_try_advisory_lock(hashtextextended(?, 0))";

  /** Gives the maintenance lock back; bind {@link #maintenanceKey}. */
  public static final String UNLOCK_MAINTENANCE =
      "SELECT pg_advisory_unlock(hashtextextended(?, 0))";

  /**
   * Wakes the listeners of a channel at commit; bind {@link #channel}. The payload is constant, so
   * PostgreSQL folds all such notifications of one transaction into one delivery.
   */
  public static final String NOTIFY = "SELECT pg_notify(?, '')";

  /**
   * A notification with a payload of its own, sent once when a LISTEN connection may not be a
   * session of its own, to see whether it arrives; bind {@link #channel} and a unique token. Other
   * listeners take it for an ordinary wake-up and poll once.
   */
  public static final String NOTIFY_PROBE = "SELECT pg_notify(?, ?)";

  /** Stops every LISTEN of the session, so a pooled connection does not keep listening. */
  public static final String UNLISTEN_ALL = "UNLISTEN *";

  /** A round trip on a quiet LISTEN connection, so a silently dead one is noticed. */
  public static final String PING = "SELECT 1";

  private Coordination() {}

  /**
   * The LISTEN/NOTIFY channel of {@code schema}: {@code relay_<schema>}. Not checked against
   * PostgreSQL's length limit; see {@link #checkedChannel}.
   */
  public static String channel(SchemaName schema) {
    return CHANNEL_PREFIX + schema.sql();
  }

  /**
   * The channel of {@code schema}, as a quoted SQL literal for statements that notify without a
   * parameter. The schema name is a validated plain identifier, so it needs no escaping.
   */
  public static String channelLiteral(SchemaName schema) {
    return "'" + channel(schema) + "'";
  }

  /**
   * {@link #channel}, or {@link InvalidConfigurationException} naming {@code setting} when it would
   * be longer than PostgreSQL allows: with notifications on, the schema name may have at most 57
   * characters.
   */
  public static String checkedChannel(SchemaName schema, String setting) {
    String channel = channel(schema);
    int bytes = channel.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > MAX_CHANNEL_BYTES) {
      throw new InvalidConfigurationException(
          setting,
          "with notifications on, the channel "
              + channel
              + " has "
              + bytes
              + " bytes; PostgreSQL allows at most "
              + MAX_CHANNEL_BYTES
              + ": use a schema name of at most "
              + (MAX_CHANNEL_BYTES - CHANNEL_PREFIX.length())
              + " characters, or turn notifications off");
    }
    return channel;
  }

  /**
   * Starts listening on {@code channel}, a name from {@link #checkedChannel} (LISTEN takes no
   * parameter; the name is a plain identifier).
   */
  public static String listen(String channel) {
    return "LISTEN " + channel;
  }

  /** The text hashed into the lock key of one (consumer, message) of an inbox. */
  public static String inboxMessageKey(SchemaName schema, String consumer, String messageId) {
    return schema.sql() + "/" + consumer + "/" + messageId;
  }

  /** The text hashed into the migration lock key of {@code schema}. */
  public static String migrationKey(SchemaName schema) {
    return schema.sql();
  }

  /** The text hashed into the maintenance lock key of {@code schema}. */
  public static String maintenanceKey(SchemaName schema) {
    return "relay_maintenance:" + schema.sql();
  }
}
