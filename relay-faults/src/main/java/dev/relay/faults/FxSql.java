package dev.relay.faults;

/**
 * The receiver's own tables, in schema {@code fx}, apart from Relay's schema: what the receiver saw
 * and applied. The checker reads them together with Relay's tables.
 */
final class FxSql {
  private FxSql() {}

  static final String CREATE =
      """
      CREATE SCHEMA IF NOT EXISTS fx;
      -- Every call that reached the receiver, before it decided anything: the raw count.
      CREATE TABLE IF NOT EXISTS fx.raw_effect (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          work_id text NOT NULL, generation bigint NOT NULL, worker text NOT NULL,
          pid bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp(),
          -- when the claim behind the call was made, for the checker (NULL when unknown)
          claimed_at timestamptz);
      -- The effect behind Relay's inbox: written in the inbox's transaction, once per message.
      CREATE TABLE IF NOT EXISTS fx.inbox_effect (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          work_id text NOT NULL, generation bigint NOT NULL,
          at timestamptz NOT NULL DEFAULT clock_timestamp());
      -- The fenced resource: every accepted write with its token, in the order applied.
      CREATE TABLE IF NOT EXISTS fx.fenced_write (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          resource text NOT NULL, token bigint NOT NULL, work_id text NOT NULL);
      CREATE TABLE IF NOT EXISTS fx.fence_refused (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          resource text NOT NULL, token bigint NOT NULL, highest bigint NOT NULL,
          work_id text NOT NULL);
      -- Keyed items in the order the strict-history receiver applied them.
      CREATE TABLE IF NOT EXISTS fx.applied_order (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          ordering_key text NOT NULL, sequence bigint NOT NULL, work_id text NOT NULL);
      -- Anything the receiver found impossible (a first delivery behind its key's position).
      CREATE TABLE IF NOT EXISTS fx.anomaly (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, work_id text, what text NOT NULL);
      -- The producer's business rows, one per transaction, committed with its work.
      CREATE TABLE IF NOT EXISTS fx.business (tx_id text PRIMARY KEY, items int NOT NULL);
      -- Receiver slowness the harness switches on and off (the slow-receiver fault).
      CREATE TABLE IF NOT EXISTS fx.control (id int PRIMARY KEY, slow_ms int NOT NULL);
      INSERT INTO fx.control VALUES (1, 0) ON CONFLICT DO NOTHING;
      """;

  static final String RAW =
      "INSERT INTO fx.raw_effect (work_id, generation, worker, pid) VALUES (?, ?, ?, ?)";

  /**
   * The raw record with the time of the claim behind the call, read from Relay's row while it still
   * carries that generation (NULL once another claim took it over; the checker then uses the
   * attempt history). Only where the receiver shares Relay's server: an oracle's peek for the
   * checker's horizon and deadline invariant, nothing a receiver would do.
   */
  static final String RAW_WITH_CLAIM =
      """
      INSERT INTO fx.raw_effect (work_id, generation, worker, pid, claimed_at)
      VALUES (?, ?, ?, ?, (SELECT claimed_at FROM relay.work
                            WHERE work_id = ? AND claim_generation = ?))
      """;

  static final String SLOW =
      "SELECT pg_sleep((SELECT slow_ms FROM fx.control WHERE id = 1) / 1000.0)";
  static final String INBOX_EFFECT =
      "INSERT INTO fx.inbox_effect (work_id, generation) VALUES (?, ?)";
  static final String FENCED_WRITE =
      "INSERT INTO fx.fenced_write (resource, token, work_id) VALUES (?, ?, ?)";
  static final String FENCE_REFUSED =
      "INSERT INTO fx.fence_refused (resource, token, highest, work_id) VALUES (?, ?, ?, ?)";
  static final String APPLIED =
      "INSERT INTO fx.applied_order (ordering_key, sequence, work_id) VALUES (?, ?, ?)";
  static final String ANOMALY = "INSERT INTO fx.anomaly (work_id, what) VALUES (?, ?)";
  static final String BUSINESS = "INSERT INTO fx.business (tx_id, items) VALUES (?, ?)";
  static final String SET_SLOW = "UPDATE fx.control SET slow_ms = ? WHERE id = 1";

  /**
   * The unsafe completion of mode {@code unguarded}: the naive "complete if I own it" by worker
   * name only, with no generation, no row lock first and no lease check on the database clock. With
   * worker IDs reused after a restart, a paused old process passes it for a claim its replacement
   * holds.
   */
  static final String UNGUARDED_COMPLETE =
      """
      UPDATE relay.outbox
         SET state = 'done', completed_at = clock_timestamp(), outcome = 'delivered',
             result = jsonb_build_object('generation', ?::bigint), receiver_ref = 'unguarded',
             claimed_by = NULL, lease_until = NULL
       WHERE work_id = ? AND claimed_by = ? AND state = 'running'
      """;
}
