package dev.relay.internal.receiver;

import dev.relay.internal.jdbc.PerSchema;
import dev.relay.internal.jdbc.SchemaName;

/** Every statement on {@code receiver_key_position}, schema injected, composed once per schema. */
final class KeyPositionSql {
  private static final PerSchema<KeyPositionSql> CATALOG = new PerSchema<>(KeyPositionSql::new);

  /**
   * Creates the row at position 0 (nothing applied) if missing, and locks it either way; returns
   * the position. ON CONFLICT DO UPDATE locks the latest version of an existing row, so a
   * concurrent delivery for the same key waits here until the first commits or rolls back.
   */
  final String lock;

  /** Moves the locked row to a new position. */
  final String move;

  /** The statements for {@code schema}. */
  static KeyPositionSql of(SchemaName schema) {
    return CATALOG.of(schema);
  }

  private KeyPositionSql(SchemaName schema) {
    lock =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.receiver_key_position AS r (consumer, ordering_key, position)
            VALUES (?, ?, 0)
                ON CONFLICT (consumer, ordering_key) DO UPDATE SET position = r.position
            RETURNING position""");
    move =
        schema.inject(
            """
            UPDATE ${relay_schema}.receiver_key_position
               SET position = ?, updated_at = clock_timestamp()
             WHERE consumer = ? AND ordering_key = ?""");
  }
}
