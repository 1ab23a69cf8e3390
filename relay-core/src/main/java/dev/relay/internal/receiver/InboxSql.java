package dev.relay.internal.receiver;

import dev.relay.internal.jdbc.PerSchema;
import dev.relay.internal.jdbc.SchemaName;

/**
 * Every statement on the inbox tables ({@code inbox}, {@code inbox_consumer}), schema injected,
 * composed once per schema.
 */
final class InboxSql {
  private static final PerSchema<InboxSql> CATALOG = new PerSchema<>(InboxSql::new);

  /**
   * Records the first delivery. ON CONFLICT DO NOTHING also waits on an uncommitted row of the same
   * key (a writer that did not take the advisory lock of {@link
   * dev.relay.internal.jdbc.Coordination#LOCK_INBOX_MESSAGE}) and then skips it if that one
   * committed; the skip is never silent: the caller reads and compares the stored row next.
   */
  final String insert;

  /** Saves the effect's result in the same transaction as the row and the effect. */
  final String saveResult;

  /**
   * The stored row compared with a repeat. A separate statement from the insert: under READ
   * COMMITTED it takes a new snapshot and sees the row a concurrent transaction committed. jsonb
   * equality ignores key order and whitespace and compares numbers as numbers (29.00 = 29.0).
   */
  final String compare;

  /** A consumer's retention horizon, in seconds. */
  final String horizon;

  /** Every registered horizon, for operators. */
  final String horizons;

  /** Registers or changes a consumer's horizon. */
  final String setHorizon;

  /**
   * Deletes up to ? of one consumer's rows older than its horizon, oldest first. The cutoff uses
   * the database clock; rows locked by a running transaction are skipped, not waited for.
   */
  final String purge;

  /** The statements for {@code schema}. */
  static InboxSql of(SchemaName schema) {
    return CATALOG.of(schema);
  }

  private InboxSql(SchemaName schema) {
    insert =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.inbox (consumer, message_id, payload)
            VALUES (?, ?, ?::jsonb)
            ON CONFLICT (consumer, message_id) DO NOTHING
            RETURNING received_at""");
    saveResult =
        schema.inject(
            """
            UPDATE ${relay_schema}.inbox
               SET result = ?::jsonb, processed_at = clock_timestamp()
             WHERE consumer = ? AND message_id = ?""");
    compare =
        schema.inject(
            """
            WITH r AS (SELECT ?::jsonb AS payload)
            SELECT i.payload = r.payload AS same_payload,
                   -- digests only name a mismatch; equal payloads never pay for them
                   CASE WHEN i.payload <> r.payload
                        THEN ${relay_schema}.payload_digest(i.payload) END AS stored_digest,
                   CASE WHEN i.payload <> r.payload
                        THEN ${relay_schema}.payload_digest(r.payload) END AS requested_digest,
                   i.result::text AS result,
                   i.received_at AS received_at
              FROM ${relay_schema}.inbox AS i, r
             WHERE i.consumer = ? AND i.message_id = ?""");
    horizon =
        schema.inject(
            """
            SELECT extract(epoch FROM horizon)::bigint
              FROM ${relay_schema}.inbox_consumer WHERE consumer = ?""");
    horizons =
        schema.inject(
            """
            SELECT consumer, extract(epoch FROM horizon)::bigint
              FROM ${relay_schema}.inbox_consumer ORDER BY consumer""");
    setHorizon =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.inbox_consumer (consumer, horizon)
            VALUES (?, justify_hours(make_interval(secs => ?)))
            ON CONFLICT (consumer) DO UPDATE
               SET horizon = EXCLUDED.horizon, updated_at = clock_timestamp(),
                   updated_by = current_user""");
    purge =
        schema.inject(
            """
            WITH h AS (
                SELECT horizon FROM ${relay_schema}.inbox_consumer WHERE consumer = ?
            ), doomed AS MATERIALIZED (
                -- MATERIALIZED: the LIMIT must bound the rows deleted, not just the rows read.
                SELECT i.consumer, i.message_id
                  FROM ${relay_schema}.inbox AS i, h
                 WHERE i.consumer = ?
                   AND i.received_at < clock_timestamp() - h.horizon
                 ORDER BY i.received_at
                 LIMIT ?
                   FOR UPDATE OF i SKIP LOCKED
            )
            DELETE FROM ${relay_schema}.inbox AS i
             USING doomed AS d
             WHERE i.consumer = d.consumer AND i.message_id = d.message_id""");
  }
}
