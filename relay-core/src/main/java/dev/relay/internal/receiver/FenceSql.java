package dev.relay.internal.receiver;

import dev.relay.internal.jdbc.PerSchema;
import dev.relay.internal.jdbc.SchemaName;

/**
 * Every statement on the fence tables ({@code fence}, {@code fence_counter}), schema injected,
 * composed once per schema.
 */
final class FenceSql {
  private static final PerSchema<FenceSql> CATALOG = new PerSchema<>(FenceSql::new);

  /**
   * Advances a resource's highest token when the offered one is not lower, in one statement. ON
   * CONFLICT DO UPDATE locks the existing row and evaluates its WHERE against the latest committed
   * version (waiting for a concurrent writer first), so two racing tokens are decided in turn, and
   * the lock is held to the end of the protected write's transaction. A refused token returns no
   * row; the conflicting row stays locked, so reading it next sees the value that refused it.
   */
  final String advance;

  /** The highest token of a resource. */
  final String highest;

  /** Hands out the next token of a resource's own counter, in the caller's transaction. */
  final String nextToken;

  /** The statements for {@code schema}. */
  static FenceSql of(SchemaName schema) {
    return CATALOG.of(schema);
  }

  private FenceSql(SchemaName schema) {
    advance =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.fence AS f (resource, highest_token)
            VALUES (?, ?)
            ON CONFLICT (resource) DO UPDATE
               SET highest_token = EXCLUDED.highest_token, updated_at = clock_timestamp()
             WHERE f.highest_token <= EXCLUDED.highest_token
            RETURNING highest_token""");
    highest = schema.inject("SELECT highest_token FROM ${relay_schema}.fence WHERE resource = ?");
    nextToken =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.fence_counter AS c (resource, last_token)
            VALUES (?, 1)
            ON CONFLICT (resource) DO UPDATE SET last_token = c.last_token + 1
            RETURNING last_token""");
  }
}
