package dev.relay.docs;

import dev.relay.Migrator;
import javax.sql.DataSource;

/** The code of docs/protocol.md. */
final class ProtocolSnippets {
  private ProtocolSnippets() {}

  static void migrate(DataSource dataSource) {
    // docs:begin protocol-migrate
    Migrator.migrate(dataSource, "relay");
    // docs:end
  }
}
