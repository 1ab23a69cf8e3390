package dev.relay.internal.store;

import dev.relay.KindPolicy;
import dev.relay.internal.jdbc.Coordination;
import dev.relay.internal.jdbc.PerSchema;
import dev.relay.internal.jdbc.SchemaName;

/**
 * Every statement on the work table family ({@code outbox}, {@code attempt}, {@code tombstone}),
 * one constant per operation, with the validated schema name injected once.
 *
 * <p>Clock rule: eligibility, leases and deadlines use {@code clock_timestamp()}, the database
 * clock at the moment of evaluation, never {@code now()}, which is frozen at transaction start and
 * so is wrong for a statement that waited.
 */
final class WorkSql {
  /**
   * Inserts a batch given as parallel arrays (one round trip for any number of items). Rows whose
   * ID is taken, or whose ID survives as a tombstone, are skipped and compared afterwards by {@link
   * #IDENTITY_CHECK}: one statement cannot see a row that a concurrent transaction inserted, so the
   * comparison must be a second statement. The caller sends the arrays sorted by work ID, so two
   * bulk producers with overlapping IDs wait for each other instead of deadlocking.
   */
  final String enqueueMany;

  /**
   * {@link #enqueueMany} for exactly one unkeyed item that is not handed off, with its twelve
   * values bound as scalars: the same insert, the same tombstone probe, {@code ON CONFLICT} and
   * trigger, without the arrays and the CTEs around it. It returns one row (the ID) when it
   * inserted, and none when it skipped: the caller compares the ID as for a batch.
   */
  final String enqueueOne;

  /**
   * {@link #enqueueOne} notifying as {@link #enqueueManyNotify} does: the notification is computed
   * in {@code RETURNING}, so only an inserted row sends it, at COMMIT.
   */
  final String enqueueOneNotify;

  /**
   * Keyed enqueue, step one: lock the counter row of every ordering key of the batch, creating
   * missing ones, in key order (the caller sends the keys sorted), so producers of one key
   * serialise here and two bulk producers over overlapping keys cannot deadlock.
   */
  final String lockKeys;

  /**
   * Keyed enqueue, step two, after the counters are locked: a later statement, so its snapshot sees
   * what a producer that held a counter before us committed. IDs already stored (or tombstoned)
   * take no sequence, so an idempotent repeat consumes none; each key's new items get the next
   * sequences in the caller's order, and the counters move by as many. Unkeyed items in the same
   * batch are inserted as by {@link #enqueueMany}.
   */
  final String enqueueKeyed;

  /** {@link #enqueueKeyed} with the notification of {@link #enqueueManyNotify}. */
  final String enqueueKeyedNotify;

  /**
   * {@link #enqueueMany} for a producer whose process runs a worker that may take its new work by
   * local hand-off: each row the caller marked (a local handler slot is reserved for it) is
   * inserted already claimed by that worker when the database agrees, and {@code ready} otherwise.
   * Returns the skipped IDs as {@link #enqueueMany} does, plus the handed-off rows. See {@code
   * docs/protocol.md}, "Local hand-off".
   */
  final String enqueueHandoff;

  /** {@link #enqueueHandoff} notifying when it inserted a {@code ready} row (only then). */
  final String enqueueHandoffNotify;

  /**
   * Registers this worker's hand-off of its kinds on its queues with its lease (replacing an
   * earlier registration under the same ID), in key order like every multi-row write.
   */
  final String registerHandoff;

  /** Removes this worker's hand-off registration (at close). */
  final String unregisterHandoff;

  /** The current transaction's ID, if it has one: proves hand-offs belong to it. */
  final String currentTransaction;

  /** For IDs the insert skipped: the stored kind and payload equality, or the tombstone's. */
  final String identityCheck;

  /**
   * Claims up to n eligible rows in one statement. The MATERIALIZED CTE is an optimisation fence:
   * the planner cannot flatten it into the UPDATE, so exactly the rows it locked (at most n) are
   * updated. SKIP LOCKED never waits, so sampling the clock once per statement with {@code (SELECT
   * clock_timestamp())} is sound, and as an InitPlan it can be compared against the partial index;
   * a bare volatile call could not. The same statement applies the caps (cancel request, deadline,
   * exhausted attempts) and records an expired lease in the attempt history, taking the previous
   * owner from the CTE ({@code RETURNING OLD} exists only from PostgreSQL 18).
   */
  final String claimBatch;

  /** {@link #claimBatch} over several queues at once, each scanned in claim order. */
  final String claimBatchQueues;

  /** {@link #claimBatchQueues} resuming after a position, as {@link #claimBatchResume} does. */
  final String claimBatchQueuesResume;

  /**
   * {@link #claimBatch} resuming after a position of the claim order, within its priority: see
   * {@link ClaimRequest#resumeAfter()}.
   */
  final String claimBatchResume;

  /**
   * Step one of a claim of limited kinds: lock their limiter rows in kind order, waiting (not SKIP
   * LOCKED: a skipped limiter would let two claimers count in parallel). Returns the kinds that
   * have a row, so it also tells which of the requested kinds are limited.
   */
  final String lockLimiters;

  /** Which of the given kinds have a limiter row (read without locking). */
  final String limitedKinds;

  /** Upserts the limiter rows of the kinds a worker limits (the last registration wins). */
  final String registerLimits;

  /**
   * Step two, with the limiter rows locked: sample the clock, count each kind's live claims (per
   * group too) and its claims within the rate window, and claim at most the room left, in claim
   * order, logging each claim of a rate-limited kind. The same caps as {@link #claimBatch} apply.
   */
  final String claimLimited;

  /** {@link #claimLimited} over several queues at once, each scanned in claim order. */
  final String claimLimitedQueues;

  /**
   * Step one of every guarded write: lock the named rows in work-ID order (so two batches cannot
   * deadlock). The guard is evaluated by the next statement, after any wait here. A single UPDATE
   * with the lease condition in its WHERE evaluates that condition when it first reads the row,
   * then waits for the row lock; if the holder ends without changing the row (it only locked it, or
   * rolled back), PostgreSQL applies the update without evaluating anything again, so a lease that
   * expired during the wait is accepted.
   */
  final String lockClaimed;

  /**
   * Step two: with the rows locked, sample the clock and apply each settlement only where the row
   * is still running, owned by this worker, at this generation, with an unexpired lease. Refused
   * rows are recorded as stale writes in the attempt history, with what the row held instead.
   */
  final String settleIfOwned;

  /** Step two for renewals: extend the lease of live claims; refused ones are recorded as stale. */
  final String renewIfOwned;

  /** This worker's live claims, to recover authority after a claim whose commit is uncertain. */
  final String recoverClaims;

  /** The state, generation, owner and lease liveness of named rows (after an uncertain commit). */
  final String readStates;

  /**
   * {@link #enqueueMany} followed by one {@code pg_notify} on the schema's channel when the insert
   * added a row. The payload is constant, so PostgreSQL folds every such notification of one
   * transaction into one delivery (identical channel and payload within a transaction are delivered
   * once), however many enqueue calls the transaction makes. The notification is sent at COMMIT
   * only; a rolled-back transaction wakes nobody. The CTE holding the volatile {@code pg_notify} is
   * evaluated once, through the one-row aggregate the final SELECT joins.
   */
  final String enqueueManyNotify;

  /**
   * Registers each kind's policy as this worker runs it (the last registration wins), in kind order
   * so that workers starting together take the row locks in the same order.
   */
  final String registerKinds;

  /** Cancel, step one: lock the work row so that the decision below rests on its current state. */
  final String lockForCancel;

  /**
   * Cancel, when step one found no row: the state of work a worker finished, in the history table
   * (it is never changed there, so it needs no lock).
   */
  final String finishedState;

  /**
   * Cancel of ready work (including work waiting for a retry) or failed work: cancelled at once.
   * The outcome evidence is kept (never attempted: known not delivered).
   */
  final String cancelReady;

  /**
   * Cancel of running work: only a request. The worker sees it at its next renewal and answers with
   * a guarded write; an in-flight call is not recalled.
   */
  final String requestCancel;

  /** Every cancel call, whatever it found, with who asked and why. */
  final String auditCancel;

  /**
   * Outcomes a worker gave up, one attempt row each with ending {@code abandoned}. The work row is
   * not touched: the claim's authority is gone. The partial unique index on (work ID, generation)
   * makes a repeat (after a COMMIT whose outcome was unknown) add nothing.
   */
  final String recordAbandoned;

  private static final PerSchema<WorkSql> CATALOG = new PerSchema<>(WorkSql::new);

  /** The statements for {@code schema}, composed once per schema and shared. */
  static WorkSql of(SchemaName schema) {
    return CATALOG.of(schema);
  }

  WorkSql(SchemaName schema) {
    // The insert itself, from a source named u with the twelve columns below: the arrays of a
    // batch (enqueueMany) or one row of scalars (enqueueOne).
    String columns =
        """
        u(work_id, kind, payload, queue, priority, available_at, delay_ms, max_attempts,
          deadline, group_key, has_dependencies, trace_context)""";
    String insertFromU =
        """
            INSERT INTO ${relay_schema}.outbox
                   (work_id, kind, payload, queue, priority, available_at, max_attempts, deadline,
                    group_key, has_dependencies, trace_context)
            SELECT u.work_id, u.kind, u.payload::jsonb, u.queue, u.priority,
                   coalesce(u.available_at::timestamptz,
                            clock_timestamp() + u.delay_ms * interval '1 millisecond'),
                   u.max_attempts, u.deadline::timestamptz, u.group_key, u.has_dependencies,
                   u.trace_context::jsonb
              FROM {source}
             WHERE NOT EXISTS (SELECT 1 FROM ${relay_schema}.tombstone t
                                WHERE t.work_id = u.work_id)
                ON CONFLICT (work_id) DO NOTHING
            RETURNING work_id""";
    String insertMany =
        """
        WITH u AS (
            SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::int4[],
                                 ?::text[], ?::int8[], ?::int4[], ?::text[], ?::text[],
                                 ?::bool[], ?::text[])
                   AS {columns}
        ), inserted AS (
        {insert}
        )
        """
            .replace("{columns}", columns)
            .replace("{insert}", insertFromU.replace("{source}", "u"));
    // One item: no arrays to bind and unnest, no CTE to materialise and anti-join; about a third
    // less execution time than one-element arrays through the CTEs (docs/performance.md, "One
    // item, one statement").
    String insertOne =
        insertFromU.replace(
            "{source}",
            """
            (VALUES (?::text, ?::text, ?::text, ?::text, ?::int4, ?::text, ?::int8, ?::int4,
                           ?::text, ?::text, ?::bool, ?::text))
                   AS\s"""
                + columns);
    enqueueOne = schema.inject(insertOne);
    enqueueOneNotify =
        schema.inject(
            insertOne + ", pg_notify(" + Coordination.channelLiteral(schema) + ", '') AS woke");
    // The batch statement returns the IDs it did NOT insert (taken, or tombstoned): in the usual
    // case none, so a batch of 1,000 new items sends back no rows instead of 1,000 IDs.
    String skipped =
        "SELECT u.work_id FROM u WHERE u.work_id NOT IN (SELECT work_id FROM inserted)";
    String notified =
        "\n, notified AS (\n    SELECT pg_notify("
            + Coordination.channelLiteral(schema)
            + ", '')\n      FROM (SELECT 1 FROM inserted LIMIT 1) AS any_row\n)\n";
    // The aggregate over notified is the outer side of the join, so it is always evaluated (and
    // notifies when the insert added a row); the join yields one NULL row when nothing was skipped.
    String skippedAfterNotify =
        "SELECT s.work_id FROM (SELECT count(*) FROM notified) AS n LEFT JOIN ("
            + skipped
            + ") AS s ON true";
    enqueueMany = schema.inject(insertMany + skipped);
    enqueueManyNotify = schema.inject(insertMany + notified + skippedAfterNotify);
    // The hand-off form. One clock sample for the statement (k.now) is the claim time, first
    // attempt and lease start of every row it hands off; the trigger
    // outbox_inserted_claim_is_a_handoff
    // later requires lease_until <= its own, later, clock_timestamp() + the registered lease.
    // A marked row is claimed only if the database agrees, in this statement: handoff_lease is
    // NULL unless this worker registered the kind and queue and the kind has no limiter row; the
    // row must be available now with its deadline ahead. AND stops at the first false, so rows the
    // caller did not mark never call the function.
    String handoffCtes =
        """
        WITH u AS (
            SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::int4[],
                                 ?::text[], ?::int8[], ?::int4[], ?::text[], ?::text[],
                                 ?::bool[], ?::text[], ?::bool[])
                   AS u(work_id, kind, payload, queue, priority,
                        available_at, delay_ms, max_attempts, deadline, group_key,
                        has_dependencies, trace_context, hand_off)
        ), k AS (
            SELECT ?::text AS worker, ?::int8 * interval '1 millisecond' AS lease,
                   clock_timestamp() AS now
        ), d AS (
            SELECT a.*,
                   a.hand_off
                   AND a.available <= a.now
                   AND (a.deadline IS NULL OR a.deadline::timestamptz > a.now)
                   AND ${relay_schema}.handoff_lease(a.worker, a.kind, a.queue) >= a.lease
                   AS claimed
              FROM (SELECT u.*, k.worker, k.lease, k.now,
                           coalesce(u.available_at::timestamptz,
                                    k.now + u.delay_ms * interval '1 millisecond') AS available
                      FROM u CROSS JOIN k) AS a
        ), inserted AS (
            INSERT INTO ${relay_schema}.outbox
                   (work_id, kind, payload, queue, priority, available_at, max_attempts, deadline,
                    group_key, has_dependencies, trace_context, state, claimed_by, lease_until,
                    claim_generation, attempts, claimed_at, first_attempt_at, retry_window_start)
            SELECT d.work_id, d.kind, d.payload::jsonb, d.queue, d.priority, d.available,
                   d.max_attempts, d.deadline::timestamptz, d.group_key, d.has_dependencies,
                   d.trace_context::jsonb,
                   CASE WHEN d.claimed THEN 'running' ELSE 'ready' END,
                   CASE WHEN d.claimed THEN d.worker END,
                   CASE WHEN d.claimed THEN d.now + d.lease END,
                   CASE WHEN d.claimed THEN 1 ELSE 0 END,
                   CASE WHEN d.claimed THEN 1 ELSE 0 END,
                   CASE WHEN d.claimed THEN d.now END,
                   CASE WHEN d.claimed THEN d.now END,
                   CASE WHEN d.claimed THEN d.now END
              FROM d
             WHERE NOT EXISTS (SELECT 1 FROM ${relay_schema}.tombstone t
                                WHERE t.work_id = d.work_id)
                ON CONFLICT (work_id) DO NOTHING
            RETURNING work_id
        )
        """;
    // Skipped IDs (handed_off false), then the handed-off rows with what their claim needs. The
    // lease and times come from the statement's clock sample, not from RETURNING, so a producer
    // needs no SELECT on the claim columns. The payload and trace context are returned as a claim
    // returns them (jsonb's text), so a handler sees the same text either way. The transaction ID
    // lets the commit that
    // starts them prove they belong to the transaction it commits.
    String handoffResult =
        """
        SELECT u.work_id, false AS handed_off, NULL::text AS payload,
               NULL::timestamptz AS lease_until, NULL::timestamptz AS claimed_at,
               NULL::text AS xact, NULL::text AS trace_context
          FROM u WHERE u.work_id NOT IN (SELECT work_id FROM inserted)
        UNION ALL
        SELECT d.work_id, true, d.payload::jsonb::text, d.now + d.lease, d.now,
               pg_current_xact_id()::text, d.trace_context::jsonb::text
          FROM d JOIN inserted i ON i.work_id = d.work_id
         WHERE d.claimed
        """;
    // Handed-off rows wake nobody: only a ready row notifies.
    String handoffNotified =
        "\n, notified AS (\n    SELECT pg_notify("
            + Coordination.channelLiteral(schema)
            + ", '')\n      FROM (SELECT 1 FROM inserted i JOIN d ON d.work_id = i.work_id"
            + " WHERE NOT d.claimed LIMIT 1) AS any_row\n)\n";
    enqueueHandoff = schema.inject(handoffCtes + handoffResult);
    enqueueHandoffNotify =
        schema.inject(
            handoffCtes
                + handoffNotified
                + "SELECT s.* FROM (SELECT count(*) FROM notified) AS n LEFT JOIN ("
                + handoffResult
                + ") AS s ON true");
    registerHandoff =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.handoff AS h (worker_id, kind, queue, lease)
            SELECT ?, k.kind, q.queue, ? * interval '1 millisecond'
              FROM unnest(?::text[]) AS k(kind) CROSS JOIN unnest(?::text[]) AS q(queue)
             ORDER BY k.kind, q.queue
                ON CONFLICT (worker_id, kind, queue) DO UPDATE
               SET lease = EXCLUDED.lease, registered_at = clock_timestamp()
            """);
    unregisterHandoff = schema.inject("DELETE FROM ${relay_schema}.handoff WHERE worker_id = ?");
    currentTransaction = "SELECT pg_current_xact_id_if_assigned()::text";
    lockKeys =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.key_sequence AS k (ordering_key, last_sequence)
            SELECT key, 0 FROM unnest(?::text[]) AS key ORDER BY key
                ON CONFLICT (ordering_key) DO UPDATE SET last_sequence = k.last_sequence
            """);
    String keyedCtes =
        """
        WITH u AS (
            SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::int4[],
                                 ?::text[], ?::int8[], ?::int4[], ?::text[], ?::text[],
                                 ?::bool[], ?::text[], ?::text[], ?::int4[])
                   AS u(work_id, kind, payload, queue, priority, available_at, delay_ms,
                        max_attempts, deadline, group_key, has_dependencies, trace_context,
                        ordering_key, ord)
        ), fresh AS (
            SELECT u.* FROM u
             WHERE NOT EXISTS (SELECT 1 FROM ${relay_schema}.outbox o WHERE o.work_id = u.work_id)
               AND NOT EXISTS (SELECT 1 FROM ${relay_schema}.tombstone t
                                WHERE t.work_id = u.work_id)
        ), numbered AS (
            SELECT f.*, row_number() OVER (PARTITION BY f.ordering_key ORDER BY f.ord) AS n
              FROM fresh f
        ), bumped AS (
            UPDATE ${relay_schema}.key_sequence k
               SET last_sequence = k.last_sequence + c.cnt
              FROM (SELECT ordering_key, count(*) AS cnt FROM numbered
                     WHERE ordering_key IS NOT NULL GROUP BY ordering_key) AS c
             WHERE k.ordering_key = c.ordering_key
         RETURNING k.ordering_key, k.last_sequence - c.cnt AS base
        ), inserted AS (
            INSERT INTO ${relay_schema}.outbox
                   (work_id, kind, payload, queue, priority, available_at, max_attempts, deadline,
                    group_key, has_dependencies, trace_context, ordering_key, sequence)
            SELECT n.work_id, n.kind, n.payload::jsonb, n.queue, n.priority,
                   coalesce(n.available_at::timestamptz,
                            clock_timestamp() + n.delay_ms * interval '1 millisecond'),
                   n.max_attempts, n.deadline::timestamptz,
                   n.group_key, n.has_dependencies, n.trace_context::jsonb, n.ordering_key,
                   b.base + n.n
              FROM numbered n
              LEFT JOIN bumped b ON b.ordering_key = n.ordering_key
             ORDER BY n.work_id
                ON CONFLICT (work_id) DO NOTHING
            RETURNING work_id
        )
        """;
    enqueueKeyed = schema.inject(keyedCtes + skipped);
    enqueueKeyedNotify = schema.inject(keyedCtes + notified + skippedAfterNotify);
    identityCheck =
        schema.inject(
            """
            SELECT u.work_id,
                   o.work_id IS NOT NULL AS stored,
                   t.work_id IS NOT NULL AS purged,
                   coalesce(o.kind, t.kind) AS stored_kind,
                   CASE WHEN o.work_id IS NOT NULL THEN o.payload = u.payload::jsonb
                        ELSE t.payload_digest = ${relay_schema}.payload_digest(u.payload::jsonb)
                   END AS same_payload,
                   -- digests name a conflict; an idempotent repeat never pays for them
                   CASE WHEN o.work_id IS NULL THEN t.payload_digest
                        WHEN o.kind <> u.kind OR o.payload <> u.payload::jsonb
                        THEN ${relay_schema}.payload_digest(o.payload) END AS stored_digest,
                   CASE WHEN o.work_id IS NULL OR o.kind <> u.kind
                             OR o.payload <> u.payload::jsonb
                        THEN ${relay_schema}.payload_digest(u.payload::jsonb)
                   END AS requested_digest
              FROM unnest(?::text[], ?::text[], ?::text[]) AS u(work_id, kind, payload)
              -- unfinished or finished work (the work view), else a tombstone
              LEFT JOIN ${relay_schema}.work o ON o.work_id = u.work_id
              LEFT JOIN ${relay_schema}.tombstone t ON t.work_id = u.work_id
            """);
    // The candidates of a claim, locked; {limit_condition} is empty for unlimited kinds.
    String claimCandidates =
        """
                SELECT o.work_id,
                       o.state AS prev_state, o.claimed_by AS prev_owner,
                       o.claim_generation AS prev_generation, o.claimed_at AS prev_claimed_at,
                       CASE WHEN o.cancel_requested_at IS NOT NULL THEN 'cancelled'
                            WHEN o.deadline <= (SELECT clock_timestamp()) THEN 'deadline'
                            -- Never claimed (most of a backlog): no cap is reached (every cap is
                            -- at least 1), so the kind's cap is not looked up twice per row.
                            WHEN o.attempts = 0 AND o.first_attempt_at IS NULL THEN 'claim'
                            WHEN o.attempts >= {cap} THEN 'attempts_exhausted'
                            -- Never attempted: no receiver has seen the ID, so no horizon applies,
                            -- and fresh work (most of a backlog) never reads the kind table here.
                            WHEN o.first_attempt_at IS NULL THEN 'claim'
                            -- The receiver's deduplication horizon, measured from the first
                            -- attempt (or from a redrive that overrode it): past it, a repeat may
                            -- be applied twice, whichever path brought the row here (a takeover
                            -- of an expired lease, a retry claimed late). A zero horizon (the
                            -- receiver keeps no memory; or a known-undelivered retry of a kind
                            -- that parks or reconciles) is none: nullif makes the sum NULL.
                            WHEN coalesce(o.horizon_start, o.first_attempt_at)
                                 + nullif({horizon}, interval '0') <= (SELECT clock_timestamp())
                            THEN 'horizon_passed'
                            ELSE 'claim'
                       END AS decision,
                       -- the row's own cap (only when its producer named one) and its kind's
                       {cap} AS cap{order_columns}
                  FROM ${relay_schema}.outbox o
                 WHERE o.state IN ('ready', 'running')
                   AND {queue_condition}{resume_condition}
                   AND o.kind = ANY (?::text[])
                   -- Paused: a pause naming the row's queue, kind or both holds it until the
                   -- pause is deleted or its resume_at passes. The first arm is an InitPlan, one
                   -- probe of the tiny pause table per statement: with no pause (the usual case)
                   -- it is true and no row evaluates the per-row subquery (the OR stays in the
                   -- written order). Reading the table holds its ACCESS SHARE lock until this
                   -- claim commits, so a pause (which locks it exclusively) waits for claims in
                   -- flight, and claims after it see it.
                   AND ((SELECT NOT EXISTS (SELECT 1 FROM ${relay_schema}.pause))
                        OR NOT EXISTS (SELECT 1 FROM ${relay_schema}.pause ps
                                        WHERE (ps.queue IS NULL OR ps.queue = o.queue)
                                          AND (ps.kind IS NULL OR ps.kind = o.kind)
                                          AND (ps.resume_at IS NULL
                                               OR ps.resume_at > (SELECT clock_timestamp()))))
                   AND o.available_at <= (SELECT clock_timestamp())
                   AND (o.lease_until IS NULL OR o.lease_until <= (SELECT clock_timestamp()))
                   -- Ordered delivery: a keyed item waits until every lower sequence of its key
                   -- is done or cancelled. A lower item still ready, running or failed holds
                   -- the key, so at most one item per key is in flight and one batch never
                   -- takes two of a key. Unkeyed rows never evaluate the subquery.
                   AND (o.ordering_key IS NULL
                        OR NOT EXISTS (SELECT 1 FROM ${relay_schema}.outbox p
                                        WHERE p.ordering_key = o.ordering_key
                                          AND p.sequence < o.sequence
                                          AND p.state IN ('ready', 'running', 'failed')))
                   -- Dependencies: eligible only when every dependency is done, as a row (of the
                   -- work table or, finished, of its history) or as the tombstone of purged work
                   -- (a dependency gone entirely holds the row).
                   -- Only rows enqueued with dependencies evaluate the subquery. A scalar
                   -- subquery, not NOT EXISTS: the planner may turn an EXISTS with an equality
                   -- correlation into a hashed subplan over every dependency joined to the whole
                   -- work table; this form stays per row, three primary-key lookups per dependency.
                   AND (NOT o.has_dependencies
                        OR"""
            + BlockedReason.UNMET_DEPENDENCY
            + """
                           IS NULL){limit_condition}
                 ORDER BY o.priority DESC, o.available_at, o.work_id
                 LIMIT ?
                   FOR UPDATE SKIP LOCKED
            """;
    String claimUpdate =
        """
            ), updated AS (
                UPDATE ${relay_schema}.outbox j
                   SET state = CASE c.decision WHEN 'claim' THEN 'running'
                                               WHEN 'cancelled' THEN 'cancelled'
                                               ELSE 'failed' END,
                       claimed_by = CASE WHEN c.decision = 'claim' THEN ? END,
                       lease_until = CASE WHEN c.decision = 'claim'
                                          THEN clock_timestamp() + ? * interval '1 millisecond' END,
                       claim_generation = j.claim_generation
                                          + CASE WHEN c.decision = 'claim' THEN 1 ELSE 0 END,
                       attempts = j.attempts + CASE WHEN c.decision = 'claim' THEN 1 ELSE 0 END,
                       claimed_at = CASE WHEN c.decision = 'claim' THEN clock_timestamp()
                                         ELSE j.claimed_at END,
                       first_attempt_at = CASE WHEN c.decision = 'claim'
                                               THEN coalesce(j.first_attempt_at, clock_timestamp())
                                               ELSE j.first_attempt_at END,
                       -- A redrive clears the window (and attempts): its first claim starts a
                       -- new one. A row from before V6 has none yet: its first attempt's.
                       retry_window_start = CASE WHEN c.decision = 'claim'
                                                 THEN coalesce(j.retry_window_start,
                                                               CASE WHEN j.attempts = 0
                                                                    THEN clock_timestamp()
                                                                    ELSE j.first_attempt_at END)
                                                 ELSE j.retry_window_start END,
                       completed_at = CASE WHEN c.decision = 'claim' THEN NULL
                                           ELSE clock_timestamp() END,
                       last_error_kind = CASE WHEN c.decision = 'claim' THEN j.last_error_kind
                                              ELSE c.decision END,
                       last_error = CASE c.decision
                           WHEN 'claim' THEN j.last_error
                           WHEN 'cancelled' THEN 'cancel requested'
                           WHEN 'deadline' THEN 'deadline passed before the work could start'
                           WHEN 'horizon_passed' THEN format(
                               'not run again: first attempted at %s, and the receiver''s'
                               ' deduplication horizon (%s) ended at %s, so it may no longer'
                               ' recognise the work ID; redrive with the horizon override to run'
                               ' it anyway',
                               coalesce(j.horizon_start, j.first_attempt_at), {horizon_j},
                               coalesce(j.horizon_start, j.first_attempt_at) + {horizon_j})
                           ELSE format('all %s attempts used', c.cap) END
                           || CASE WHEN c.prev_state = 'running'
                                   THEN '; the last lease expired with the outcome unknown'
                                   ELSE '' END,
                       outcome = CASE WHEN j.outcome = 'delivered' THEN j.outcome
                                      -- A takeover: the expired attempt's effect is unknown,
                                      -- and the row says so from now on, whatever later
                                      -- attempts report (evidence accumulates; the settle
                                      -- statement keeps it). Not for a kind that reconciles:
                                      -- its reconciler asks the receiver before the handler
                                      -- runs, and the answer is the evidence (accepted: done;
                                      -- cannot tell: parked as unknown; not accepted: the
                                      -- attempt the handler then makes).
                                      WHEN c.decision = 'claim' THEN
                                          CASE WHEN c.prev_state = 'running'
                                                    AND {unknown_outcome} <> 'reconcile'
                                               THEN 'unknown'
                                               ELSE j.outcome END
                                      WHEN c.prev_state = 'running' THEN 'unknown'
                                      -- attempted before, maybe before a redrive that reset
                                      -- the attempts: the evidence so far, else unknown
                                      WHEN c.decision = 'horizon_passed'
                                      THEN coalesce(j.outcome, 'unknown')
                                      WHEN j.attempts = 0 THEN 'not_delivered'
                                      ELSE j.outcome END
                  FROM candidates c
                 WHERE j.work_id = c.work_id
             RETURNING j.work_id, j.kind, j.queue, j.payload::text AS payload,
                       j.priority, j.available_at,
                       j.claim_generation, j.attempts, c.cap AS max_attempts, j.lease_until,
                       j.deadline, j.created_at, j.retry_window_start, j.state,
                       c.decision, c.prev_state, c.prev_owner, c.prev_generation,
                       c.prev_claimed_at, j.ordering_key, j.sequence,
                       j.trace_context::text AS trace_context,
                       -- the last delivered item before this one: a cancelled item in between
                       -- reads as a deliberate gap, not a lost message
                       CASE WHEN j.ordering_key IS NOT NULL THEN
                           (SELECT p.sequence FROM ${relay_schema}.work p
                             WHERE p.ordering_key = j.ordering_key
                               AND p.sequence < j.sequence AND p.state = 'done'
                             ORDER BY p.sequence DESC LIMIT 1)
                       END AS previous_delivered_sequence,
                       CASE WHEN c.decision = 'horizon_passed' THEN j.last_error END
                           AS horizon_error,
                       j.outcome
            ), history AS (
                -- an expired lease taken over, and (after it, for the same generation) why work
                -- past its horizon was not run again, by the worker whose claim decided it
                INSERT INTO ${relay_schema}.attempt
                       (work_id, generation, worker, claimed_at, ending, error_kind, error, outcome)
                SELECT u.work_id, u.prev_generation, u.prev_owner, u.prev_claimed_at,
                       'lease_expired', 'lease_expired',
                       'lease expired before the worker recorded an outcome', 'unknown'
                  FROM updated u
                 WHERE u.prev_state = 'running'
                UNION ALL
                SELECT u.work_id, u.claim_generation, ?, NULL, 'failed', 'horizon_passed',
                       u.horizon_error, u.outcome
                  FROM updated u
                 WHERE u.decision = 'horizon_passed'
            )
            """;
    String claimResult =
        """
            -- in claim order, sorted by the database's collation: the last row is where a
            -- following claim may resume
            SELECT * FROM updated ORDER BY priority DESC, available_at, work_id
            """;
    // A kind with a limiter row is claimed only by claimLimited, under its lock. The limiter table
    // is tiny: one hashed subplan per statement.
    String unlimitedCandidates =
        claimCandidates.replace(
            "{limit_condition}",
            "\n                   AND o.kind NOT IN (SELECT l.kind FROM ${relay_schema}.limiter l)");
    String claimTemplate =
        claimStatement(
            schema,
            "WITH candidates AS MATERIALIZED (\n"
                + unlimitedCandidates.replace("{order_columns}", "")
                + claimUpdate
                + claimResult);
    // One queue: equality on the index's leading column, so the scan returns rows in claim order
    // and stops after the batch.
    String oneQueue = claimTemplate.replace("{queue_condition}", "o.queue = ?");
    claimBatch = oneQueue.replace("{resume_condition}", "");
    claimBatchResume = oneQueue.replace("{resume_condition}", RESUME_CONDITION);
    // Several queues: each queue is scanned as one queue is (see eachQueue), resuming too: the
    // position is the last row taken in the claim order of all the worker's queues, so in every one
    // of them each eligible row before it was taken, locked by another claim, or not eligible.
    String queuesTemplate =
        claimStatement(
            schema,
            "WITH candidates AS MATERIALIZED (\n"
                + eachQueue(unlimitedCandidates)
                + claimUpdate
                + claimResult);
    claimBatchQueues = queuesTemplate.replace("{resume_condition}", "");
    claimBatchQueuesResume = queuesTemplate.replace("{resume_condition}", RESUME_CONDITION);
    lockLimiters =
        schema.inject(
            """
            SELECT kind FROM ${relay_schema}.limiter
             WHERE kind = ANY (?::text[])
             ORDER BY kind
               FOR UPDATE
            """);
    limitedKinds =
        schema.inject(
            """
            SELECT kind FROM ${relay_schema}.limiter WHERE kind = ANY (?::text[]) ORDER BY kind
            """);
    registerLimits =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.limiter AS l
                   (kind, max_running, max_running_per_group, rate_limit, rate_interval,
                    registered_by, registered_at)
            SELECT u.kind, u.max_running, u.per_group, u.rate_limit,
                   u.rate_ms * interval '1 millisecond', ?, clock_timestamp()
              FROM unnest(?::text[], ?::int4[], ?::int4[], ?::int4[], ?::int8[])
                   AS u(kind, max_running, per_group, rate_limit, rate_ms)
             ORDER BY u.kind
                ON CONFLICT (kind) DO UPDATE
               SET max_running = EXCLUDED.max_running,
                   max_running_per_group = EXCLUDED.max_running_per_group,
                   rate_limit = EXCLUDED.rate_limit,
                   rate_interval = EXCLUDED.rate_interval,
                   registered_by = EXCLUDED.registered_by,
                   registered_at = EXCLUDED.registered_at
            """);
    String limitCtes =
        """
        WITH clock AS (
            -- Sampled in a statement after lockLimiters: its snapshot is taken after the lock was
            -- granted, so every claim of these kinds committed before it is counted here.
            SELECT clock_timestamp() AS now
        ), lim AS (
            SELECT l.kind, l.max_running, l.max_running_per_group, l.rate_limit, l.rate_interval
              FROM ${relay_schema}.limiter l
             WHERE l.kind = ANY (?::text[])
        ), live AS (
            -- live claims per group: running under an unexpired lease, whether the handler runs
            -- or the claim waits in a worker's buffer
            SELECT o.kind, o.group_key, count(*) AS n
              FROM ${relay_schema}.outbox o JOIN lim ON lim.kind = o.kind, clock k
             WHERE o.state = 'running' AND o.lease_until > k.now
             GROUP BY o.kind, o.group_key
        ), recent AS (
            -- claims within the rate window; released and reclaimed claims still count
            SELECT lim.kind, count(g.kind) AS n
              FROM lim CROSS JOIN clock k
              LEFT JOIN ${relay_schema}.claim_log g
                     ON g.kind = lim.kind AND g.claimed_at > k.now - lim.rate_interval
             GROUP BY lim.kind
        ), room AS (
            -- how many more claims each kind may take now (NULL: no kind-wide bound); least()
            -- ignores a NULL argument
            SELECT lim.kind, lim.max_running_per_group AS per_group,
                   least(lim.max_running - coalesce((SELECT sum(v.n) FROM live v
                                                      WHERE v.kind = lim.kind), 0),
                         lim.rate_limit - r.n) AS free
              FROM lim JOIN recent r ON r.kind = lim.kind
        ), candidates AS MATERIALIZED (
            -- The pool below is locked (SKIP LOCKED) in claim order; here each group keeps at
            -- most its free places, then each kind at most its free places. Window functions
            -- cannot share a level with FOR UPDATE, hence the nesting.
            SELECT f.work_id, f.group_key, f.prev_state, f.prev_owner, f.prev_generation,
                   f.prev_claimed_at, f.decision, f.cap
              FROM (SELECT g.*, row_number() OVER (PARTITION BY g.kind
                                                   ORDER BY g.priority DESC, g.available_at,
                                                            g.work_id) AS in_kind
                      FROM (SELECT s.*, w.kind, w.group_key, w.priority, w.available_at,
                                   row_number() OVER (PARTITION BY w.kind, w.group_key
                                                      ORDER BY w.priority DESC, w.available_at,
                                                               w.work_id) AS in_group
                              FROM (
        """;
    String limitPool =
        """
                                   ) AS s
                              JOIN ${relay_schema}.outbox w ON w.work_id = s.work_id) AS g
                      JOIN room r ON r.kind = g.kind
                     WHERE r.per_group IS NULL
                        OR g.in_group <= r.per_group
                                         - coalesce((SELECT v.n FROM live v
                                                      WHERE v.kind = g.kind
                                                        AND v.group_key = g.group_key), 0)
                   ) AS f
              JOIN room r ON r.kind = f.kind
             WHERE r.free IS NULL OR f.in_kind <= r.free
        """;
    // Only kinds and groups with room enter the pool, so a full group with a deep backlog does not
    // fill the pool and starve the others.
    String roomCondition =
        """

                   AND EXISTS (SELECT 1 FROM room r
                                WHERE r.kind = o.kind
                                  AND coalesce(r.free, 1) > 0
                                  AND (r.per_group IS NULL
                                       OR r.per_group > coalesce(
                                           (SELECT v.n FROM live v
                                             WHERE v.kind = o.kind
                                               AND v.group_key = o.group_key), 0)))""";
    String logClaims =
        """
            , logged AS (
                -- one row per claim of a rate-limited kind, stamped after the counts above
                INSERT INTO ${relay_schema}.claim_log (kind, group_key, work_id, claimed_at)
                SELECT u.kind, c.group_key, u.work_id, clock_timestamp()
                  FROM updated u
                  JOIN candidates c ON c.work_id = u.work_id
                  JOIN lim ON lim.kind = u.kind
                 WHERE u.decision = 'claim' AND lim.rate_limit IS NOT NULL
            ), purged AS (
                -- kept an hour past the window, for operators; the lock makes this the only
                -- claim of the kind running now
                DELETE FROM ${relay_schema}.claim_log g
                 USING lim, clock k
                 WHERE g.kind = lim.kind
                   AND g.claimed_at < k.now - coalesce(lim.rate_interval, interval '0')
                                            - interval '1 hour'
            )
            """;
    String limitedCandidates =
        claimCandidates
            .replace("{limit_condition}", roomCondition)
            .replace("{resume_condition}", "");
    String limitedTail = limitPool + claimUpdate + logClaims + claimResult;
    // as for claimBatch: equality on one queue keeps the index's order, so the scan stops after the
    // pool instead of sorting every eligible row; several queues are scanned one by one likewise
    claimLimited =
        claimStatement(
            schema,
            limitCtes
                + limitedCandidates
                    .replace("{order_columns}", "")
                    .replace("{queue_condition}", "o.queue = ?")
                + limitedTail);
    claimLimitedQueues =
        claimStatement(schema, limitCtes + eachQueue(limitedCandidates) + limitedTail);
    lockClaimed =
        schema.inject(
            """
            SELECT work_id FROM ${relay_schema}.outbox
             WHERE work_id = ANY (?::text[])
             ORDER BY work_id
               FOR UPDATE
            """);
    settleIfOwned =
        schema.inject(
            """
            WITH requested AS (
                SELECT * FROM unnest(?::text[], ?::int8[], ?::text[], ?::int8[], ?::text[],
                                     ?::text[], ?::text[], ?::text[], ?::text[], ?::text[])
                       AS r(work_id, generation, action, delay_ms, error_kind,
                            error, outcome, receiver_ref, result, milestone)
            ), capped AS (
                -- The rows are locked (step one), so the attempts and snoozes read here are
                -- current.
                SELECT r.*, w.attempts, {cap} AS cap, w.snoozes,
                       coalesce(kd.max_snoozes, {default_max_snoozes}) AS snooze_cap
                  FROM requested r
                  LEFT JOIN ${relay_schema}.outbox w ON w.work_id = r.work_id
                  LEFT JOIN ${relay_schema}.kind kd ON kd.kind = w.kind
            ), input AS (
                -- A snooze past its kind's snooze cap is an ordinary retry: it spends the attempt,
                -- so the attempt cap ends a receiver that always says "later". A retry past the
                -- attempt cap (the row's and its kind's, as at claim time) fails instead, whatever
                -- the worker's local policy said.
                SELECT c.work_id, c.generation, c.action AS requested_action,
                       CASE WHEN c.exhausted THEN 'fail'
                            WHEN c.over_snoozed THEN 'retry'
                            ELSE c.action END AS action,
                       c.delay_ms,
                       CASE WHEN c.exhausted THEN 'attempts_exhausted'
                            WHEN c.over_snoozed THEN 'snooze_limit'
                            ELSE c.error_kind END AS error_kind,
                       CASE WHEN c.exhausted
                            THEN format('all %s attempts used; last error (%s): %s',
                                        c.cap, c.error_kind, c.error)
                            WHEN c.over_snoozed
                            THEN format('snoozed %s times, the kind''s cap; counted as a retry: %s',
                                        c.snoozes, c.error)
                            ELSE c.error END AS error,
                       c.outcome, c.receiver_ref, c.result, c.milestone
                  FROM (SELECT s.*,
                               (s.action = 'retry' OR s.over_snoozed) AND s.attempts >= s.cap
                                   AS exhausted
                          FROM (SELECT capped.*,
                                       capped.action = 'snooze'
                                           AND capped.snoozes >= capped.snooze_cap
                                           AS over_snoozed
                                  FROM capped) AS s) AS c
            ), clock AS (
                SELECT clock_timestamp() AS now,  -- sampled after the rows were locked
                       ?::text AS worker          -- bound once, used by every step below
            ), changed AS (
                -- Retry, snooze, release and fail: the row stays in the work table.
                UPDATE ${relay_schema}.outbox o
                   SET state = CASE i.action WHEN 'fail' THEN 'failed' ELSE 'ready' END,
                       claimed_by = NULL,
                       lease_until = NULL,
                       completed_at = CASE WHEN i.action = 'fail' THEN k.now END,
                       available_at = CASE i.action
                           WHEN 'retry' THEN k.now + i.delay_ms * interval '1 millisecond'
                           WHEN 'snooze' THEN k.now + i.delay_ms * interval '1 millisecond'
                           WHEN 'release' THEN k.now
                           ELSE o.available_at END,
                       -- A snooze gives its attempt back (the effect is known not to have
                       -- happened) and is counted instead, against the kind's snooze cap.
                       attempts = o.attempts - CASE WHEN i.action IN ('release', 'snooze')
                                                    THEN 1 ELSE 0 END,
                       snoozes = o.snoozes + CASE WHEN i.action = 'snooze' THEN 1 ELSE 0 END,
                       -- A release is not an attempt. When this claim is the only one counted
                       -- (attempts = 1: every earlier claim was released, or there was none; a
                       -- takeover counts) and no attempt ever ended with evidence (every ending
                       -- stores one; a redrive keeps it), no receiver has seen the ID: the
                       -- deduplication horizon must not start from this claim, or work waiting
                       -- out a long backlog after a shutdown would be failed as past its horizon
                       -- without having run. Read from the row alone: no other table is named,
                       -- so a worker role needs no new grant.
                       first_attempt_at = CASE
                           WHEN i.action = 'release' AND o.attempts = 1 AND o.outcome IS NULL
                           THEN NULL ELSE o.first_attempt_at END,
                       last_error = CASE WHEN i.action IN ('retry', 'snooze', 'fail', 'cancelled')
                                         THEN i.error ELSE o.last_error END,
                       last_error_kind = CASE WHEN i.action IN ('retry', 'snooze', 'fail',
                                                                'cancelled')
                                              THEN i.error_kind ELSE o.last_error_kind END,
                       -- Evidence accumulates over attempts: delivered > unknown >
                       -- not_delivered. A later "not delivered" never hides an earlier attempt
                       -- whose effect is unknown.
                       outcome = CASE WHEN i.action = 'complete' OR o.outcome = 'delivered'
                                      THEN 'delivered'
                                      WHEN i.action = 'release' THEN o.outcome
                                      WHEN 'unknown' IN (o.outcome, i.outcome) THEN 'unknown'
                                      ELSE coalesce(i.outcome, o.outcome) END,
                       receiver_ref = CASE WHEN i.action = 'complete' THEN i.receiver_ref
                                           ELSE o.receiver_ref END,
                       result = CASE WHEN i.action = 'complete' THEN i.result::jsonb
                                     ELSE o.result END,
                       milestone = CASE WHEN i.action = 'complete' THEN i.milestone
                                        ELSE o.milestone END
                  FROM input i, clock k
                 WHERE o.work_id = i.work_id
                   AND i.action NOT IN ('complete', 'cancelled')
                   -- The guard is one CASE so that the planner cannot split it into conditions
                   -- on outbox alone: each row is then found by primary key from its input row.
                   -- Split, with statistics that show few running rows, it scanned this worker's
                   -- running rows by owner and compared each with every input row (quadratic).
                   AND CASE WHEN o.state = 'running'
                             AND o.claimed_by = k.worker
                             AND o.claim_generation = i.generation
                             AND o.lease_until > k.now
                            THEN true ELSE false END
             RETURNING o.work_id, o.claimed_at, i.action
            ), moved AS (
                -- Complete and cancelled: the row leaves the work table for the history table
                -- (filed, below), under the same guard. A move, not an update to 'done': the work
                -- table keeps only unfinished and failed work, and retention drops whole days of
                -- history instead of deleting rows one by one (docs/operations.md, section 17).
                DELETE FROM ${relay_schema}.outbox o
                 USING input i, clock k
                 WHERE o.work_id = i.work_id
                   AND i.action IN ('complete', 'cancelled')
                   -- one CASE, so rows are found by primary key (see changed)
                   AND CASE WHEN o.state = 'running'
                             AND o.claimed_by = k.worker
                             AND o.claim_generation = i.generation
                             AND o.lease_until > k.now
                            THEN true ELSE false END
             RETURNING o.*, i.action AS settle_action, i.error AS i_error,
                       i.error_kind AS i_error_kind, i.outcome AS i_outcome,
                       i.receiver_ref AS i_receiver_ref, i.result AS i_result,
                       i.milestone AS i_milestone
            ), filed AS (
                -- what the update to 'done' or 'cancelled' wrote, as the history row
                INSERT INTO ${relay_schema}.work_history
                       (work_id, kind, payload, state, available_at, claim_generation, claimed_by,
                        lease_until, completed_at, created_at, queue, priority, attempts,
                        max_attempts, deadline, ordering_key, sequence, claimed_at,
                        first_attempt_at, last_error, last_error_kind, outcome, milestone,
                        receiver_ref, result, cancel_requested_at, retry_window_start, group_key,
                        has_dependencies, horizon_start, trace_context, snoozes)
                SELECT m.work_id, m.kind, m.payload,
                       CASE m.settle_action WHEN 'complete' THEN 'done' ELSE 'cancelled' END,
                       m.available_at, m.claim_generation, NULL, NULL, k.now, m.created_at,
                       m.queue, m.priority, m.attempts, m.max_attempts, m.deadline,
                       m.ordering_key, m.sequence, m.claimed_at, m.first_attempt_at,
                       CASE WHEN m.settle_action = 'cancelled' THEN m.i_error
                            ELSE m.last_error END,
                       CASE WHEN m.settle_action = 'cancelled' THEN m.i_error_kind
                            ELSE m.last_error_kind END,
                       -- as in changed: evidence accumulates
                       CASE WHEN m.settle_action = 'complete' OR m.outcome = 'delivered'
                            THEN 'delivered'
                            WHEN 'unknown' IN (m.outcome, m.i_outcome) THEN 'unknown'
                            ELSE coalesce(m.i_outcome, m.outcome) END,
                       CASE WHEN m.settle_action = 'complete' THEN m.i_milestone
                            ELSE m.milestone END,
                       CASE WHEN m.settle_action = 'complete' THEN m.i_receiver_ref
                            ELSE m.receiver_ref END,
                       CASE WHEN m.settle_action = 'complete' THEN m.i_result::jsonb
                            ELSE m.result END,
                       m.cancel_requested_at, m.retry_window_start, m.group_key,
                       m.has_dependencies, m.horizon_start, m.trace_context, m.snoozes
                  FROM moved m, clock k
             RETURNING work_id, kind, payload, claim_generation, state, outcome, completed_at
            ), marked AS (
                -- The ID's tombstone, written as it is filed: enqueue then finds a finished ID
                -- with one probe of the tombstone table instead of one per day of history, and
                -- retiring a day only drops it (docs/operations.md, section 17). The tombstone
                -- purge spares it while the history row is retained.
                INSERT INTO ${relay_schema}.tombstone
                       (work_id, kind, payload_digest, last_generation, final_state, outcome,
                        purged_at)
                SELECT f.work_id, f.kind, ${relay_schema}.payload_digest(f.payload),
                       f.claim_generation, f.state, f.outcome, f.completed_at
                  FROM filed f
                    ON CONFLICT (work_id) DO NOTHING
            ), settled AS (
                SELECT work_id, claimed_at, action FROM changed
                UNION ALL
                SELECT work_id, claimed_at, settle_action FROM moved
            ), history AS (
                INSERT INTO ${relay_schema}.attempt
                       (work_id, generation, worker, claimed_at, ended_at, ending,
                        error_kind, error, outcome)
                SELECT i.work_id, i.generation, k.worker, s.claimed_at, k.now,
                       CASE i.action WHEN 'fail' THEN 'failed'
                                     WHEN 'release' THEN 'released'
                                     WHEN 'snooze' THEN 'snoozed'
                                     ELSE i.action END,
                       i.error_kind, i.error, i.outcome
                  FROM input i JOIN settled s USING (work_id), clock k
                 WHERE i.action <> 'complete'
                UNION ALL
                SELECT i.work_id, i.generation, k.worker, NULL, k.now, 'stale_write',
                       'stale_' || i.requested_action,
                       format('refused %s: stored state %s, generation %s, owner %s,'
                              ' lease until %s', i.requested_action, o.state, o.claim_generation,
                              o.claimed_by, o.lease_until),
                       NULL
                  FROM input i
                  LEFT JOIN ${relay_schema}.work o ON o.work_id = i.work_id, clock k
                 WHERE NOT EXISTS (SELECT 1 FROM settled s WHERE s.work_id = i.work_id)
            )
            SELECT work_id, action FROM settled  -- action: as recorded (a capped snooze: retry)
            """
                .replace("{cap}", AttemptCap.joined("w", "kd"))
                .replace(
                    "{default_max_snoozes}", Integer.toString(KindPolicy.DEFAULT_MAX_SNOOZES)));
    renewIfOwned =
        schema.inject(
            """
            WITH input AS (
                SELECT * FROM unnest(?::text[], ?::int8[]) AS i(work_id, generation)
            ), clock AS (
                SELECT clock_timestamp() AS now,  -- sampled after the rows were locked
                       ?::text AS worker, ?::int8 AS lease_ms
            ), renewed AS (
                UPDATE ${relay_schema}.outbox o
                   SET lease_until = k.now + k.lease_ms * interval '1 millisecond'
                  FROM input i, clock k
                 WHERE o.work_id = i.work_id
                   -- one CASE, so rows are found by primary key (see settleIfOwned)
                   AND CASE WHEN o.state = 'running'
                             AND o.claimed_by = k.worker
                             AND o.claim_generation = i.generation
                             AND o.lease_until > k.now
                            THEN true ELSE false END
             RETURNING o.work_id, o.lease_until, o.cancel_requested_at IS NOT NULL AS cancel_requested
            ), stale AS (
                INSERT INTO ${relay_schema}.attempt
                       (work_id, generation, worker, ended_at, ending, error_kind, error)
                SELECT i.work_id, i.generation, k.worker, k.now, 'stale_write', 'stale_renew',
                       format('refused renew: stored state %s, generation %s, owner %s,'
                              ' lease until %s', o.state, o.claim_generation, o.claimed_by,
                              o.lease_until)
                  FROM input i
                  LEFT JOIN ${relay_schema}.work o ON o.work_id = i.work_id, clock k
                 WHERE NOT EXISTS (SELECT 1 FROM renewed r WHERE r.work_id = i.work_id)
            )
            SELECT * FROM renewed
            """);
    recoverClaims =
        schema.inject(
            """
            SELECT j.work_id, j.kind, j.queue, j.payload::text AS payload, j.claim_generation,
                   j.attempts, {cap_j} AS max_attempts, j.lease_until, j.deadline, j.created_at,
                   coalesce(j.retry_window_start, j.first_attempt_at) AS retry_window_start,
                   j.ordering_key, j.sequence, j.trace_context::text AS trace_context,
                   CASE WHEN j.ordering_key IS NOT NULL THEN
                       (SELECT p.sequence FROM ${relay_schema}.work p
                         WHERE p.ordering_key = j.ordering_key
                           AND p.sequence < j.sequence AND p.state = 'done'
                         ORDER BY p.sequence DESC LIMIT 1)
                   END AS previous_delivered_sequence
              FROM ${relay_schema}.outbox j
             WHERE claimed_by = ?
               AND state = 'running'
               AND lease_until > clock_timestamp()
             ORDER BY work_id
            """
                .replace("{cap_j}", AttemptCap.of(schema, "j")));
    readStates =
        schema.inject(
            """
            SELECT work_id, state, claim_generation, claimed_by,
                   coalesce(lease_until > clock_timestamp(), false) AS lease_live
              FROM ${relay_schema}.work  -- a settled row may have moved to the history table
             WHERE work_id = ANY (?::text[])
            """);
    registerKinds =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.kind AS k
                   (kind, backoff_base, backoff_cap, max_attempts, max_elapsed, handler_timeout,
                    dedup_horizon, unknown_outcome, max_snoozes, registered_by, registered_at)
            SELECT u.kind, u.base_ms * interval '1 millisecond',
                   u.cap_ms * interval '1 millisecond', u.max_attempts,
                   u.elapsed_ms * interval '1 millisecond', u.timeout_ms * interval '1 millisecond',
                   u.horizon_ms * interval '1 millisecond', u.unknown_outcome, u.max_snoozes, ?,
                   clock_timestamp()
              FROM unnest(?::text[], ?::int8[], ?::int8[], ?::int4[], ?::int8[], ?::int8[],
                          ?::int8[], ?::text[], ?::int4[])
                   AS u(kind, base_ms, cap_ms, max_attempts, elapsed_ms, timeout_ms, horizon_ms,
                        unknown_outcome, max_snoozes)
             ORDER BY u.kind
                ON CONFLICT (kind) DO UPDATE
               SET backoff_base = EXCLUDED.backoff_base,
                   backoff_cap = EXCLUDED.backoff_cap,
                   max_attempts = EXCLUDED.max_attempts,
                   max_elapsed = EXCLUDED.max_elapsed,
                   handler_timeout = EXCLUDED.handler_timeout,
                   dedup_horizon = EXCLUDED.dedup_horizon,
                   unknown_outcome = EXCLUDED.unknown_outcome,
                   max_snoozes = EXCLUDED.max_snoozes,
                   registered_by = EXCLUDED.registered_by,
                   registered_at = EXCLUDED.registered_at
            """);
    lockForCancel =
        schema.inject(
            """
            SELECT state, claim_generation FROM ${relay_schema}.outbox
             WHERE work_id = ?
               FOR UPDATE
            """);
    finishedState =
        schema.inject(
            "SELECT state, claim_generation FROM ${relay_schema}.work_history WHERE work_id = ?");
    cancelReady =
        schema.inject(
            """
            UPDATE ${relay_schema}.outbox
               SET state = 'cancelled',
                   completed_at = clock_timestamp(),
                   cancel_requested_at = coalesce(cancel_requested_at, clock_timestamp()),
                   last_error_kind = 'cancelled',
                   last_error = ?,
                   -- never attempted: known not delivered; otherwise keep the last evidence
                   outcome = CASE WHEN attempts = 0 THEN 'not_delivered' ELSE outcome END
             WHERE work_id = ?
               AND state IN ('ready', 'failed')
            """);
    requestCancel =
        schema.inject(
            """
            UPDATE ${relay_schema}.outbox
               SET cancel_requested_at = coalesce(cancel_requested_at, clock_timestamp())
             WHERE work_id = ?
               AND state = 'running'
            """);
    auditCancel =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.cancel_audit
                   (work_id, actor, reason, from_state, from_generation, result)
            VALUES (?, ?, ?, ?, ?, ?)
            """);
    recordAbandoned =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.attempt
                   (work_id, generation, worker, ended_at, ending, action, error_kind, error,
                    outcome, receiver_ref)
            SELECT u.work_id, u.generation, ?, clock_timestamp(), 'abandoned', u.action,
                   u.error_kind, u.error, u.outcome, u.receiver_ref
              FROM unnest(?::text[], ?::int8[], ?::text[], ?::text[], ?::text[], ?::text[],
                          ?::text[])
                   AS u(work_id, generation, action, error_kind, error, outcome, receiver_ref)
             ORDER BY u.work_id, u.generation
                ON CONFLICT (work_id, generation) WHERE ending = 'abandoned' DO NOTHING
            """);
  }

  /**
   * Resumes a claim after a position of the claim order, within its priority: equality on the claim
   * index's first two columns and a row comparison on the next two, so the scan starts right after
   * the position instead of walking every entry before it.
   */
  private static final String RESUME_CONDITION =
      "\n                   AND o.priority = ?"
          + " AND (o.available_at, o.work_id) > (?::timestamptz, ?)";

  /**
   * The candidates of several queues, each queue scanned as one queue is. With {@code = ANY} on the
   * claim index's leading column a single scan does not keep claim order, so PostgreSQL would read
   * every eligible row of those queues and sort them (400 ms a claim over a backlog of 500,000).
   * Here each queue's scan runs in claim order and locks at most the limit (SKIP LOCKED), and the
   * first rows of those in claim order are kept. The rows locked and not kept (at most the limit
   * per further queue) are released at commit: another claimer meanwhile skips them, as it skips
   * any row in a claim under way. Parameters: the queue names, then the candidates' own, then the
   * limit of the whole.
   */
  private static String eachQueue(String candidates) {
    return """
                SELECT c.*
                  FROM unnest(?::text[]) AS q(name)
                 CROSS JOIN LATERAL (
            """
        + candidates
            .replace(
                "{order_columns}",
                ",\n                       o.priority AS claim_priority,"
                    + " o.available_at AS claim_available_at")
            .replace("{queue_condition}", "o.queue = q.name")
        + """
                     ) AS c
                 ORDER BY c.claim_priority DESC, c.claim_available_at, c.work_id
                 LIMIT ?
            """;
  }

  /** A claim statement's text with the attempt cap, the horizons and the schema filled in. */
  private static String claimStatement(SchemaName schema, String text) {
    return schema.inject(
        text.replace("{cap}", AttemptCap.of(schema, "o"))
            .replace(
                "{unknown_outcome}",
                kindColumn(
                    schema,
                    "j",
                    "kd.unknown_outcome",
                    "'" + KindPolicy.DEFAULT.unknownOutcome().storedName() + "'"))
            .replace("{horizon}", claimHorizon(schema, "o"))
            .replace("{horizon_j}", kindHorizon(schema, "j", "kd.dedup_horizon")));
  }

  /**
   * The horizon a claim of the row named {@code alias} must respect, as an SQL interval reading the
   * {@code kind} table: the kind's registered deduplication horizon ({@link
   * KindPolicy#DEFAULT_DEDUP_HORIZON} for a kind no worker registered, as a redrive judges it), but
   * zero (none) for a retry of a kind that parks or reconciles unknown outcomes: every retry such a
   * kind schedules is of work known not delivered, which the receiver has nothing to remember of
   * (docs/guide.md). A takeover of an expired lease ({@code state = 'running'}) always has it: the
   * expired attempt's effect is unknown.
   */
  private static String claimHorizon(SchemaName schema, String alias) {
    return kindHorizon(
        schema,
        alias,
        "CASE WHEN "
            + alias
            + ".state = 'running' OR kd.unknown_outcome = 'retry' THEN kd.dedup_horizon"
            + " ELSE interval '0' END");
  }

  /**
   * {@code column} of the {@code kind} row of the row named {@code alias}, or the default horizon.
   */
  private static String kindHorizon(SchemaName schema, String alias, String column) {
    return kindColumn(
        schema,
        alias,
        column,
        "interval '" + KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis() + " milliseconds'");
  }

  /**
   * {@code column} of the {@code kind} row of the row named {@code alias}, or {@code otherwise}
   * (SQL) for a kind no worker registered.
   */
  private static String kindColumn(
      SchemaName schema, String alias, String column, String otherwise) {
    return "coalesce((SELECT "
        + column
        + " FROM "
        + schema.sql()
        + ".kind kd WHERE kd.kind = "
        + alias
        + ".kind), "
        + otherwise
        + ")";
  }
}
