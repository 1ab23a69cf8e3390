package dev.relay.internal.runtime;

import dev.relay.InvalidConfigurationException;
import dev.relay.internal.jdbc.SchemaName;
import java.nio.charset.StandardCharsets;

/**
 * The LISTEN/NOTIFY channel of a schema: {@code relay_<schema>}, so that two Relay schemas in one
 * database never wake each other. PostgreSQL identifiers, channel names included, are at most 63
 * bytes, so with notifications on the schema name may have at most 57 characters.
 */
public final class Channels {
  /** The longest channel name PostgreSQL accepts (NAMEDATALEN - 1). */
  public static final int MAX_CHANNEL_BYTES = 63;

  private Channels() {}

  /**
   * The channel for {@code schema}; throws {@link InvalidConfigurationException} naming {@code
   * setting} when it would be longer than PostgreSQL allows.
   */
  public static String channelFor(SchemaName schema, String setting) {
    String channel = "relay_" + schema.sql();
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
              + (MAX_CHANNEL_BYTES - "relay_".length())
              + " characters, or turn notifications off");
    }
    return channel;
  }
}
