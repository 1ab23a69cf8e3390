package dev.relay.internal.admin;

import dev.relay.internal.jdbc.PerSchema;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.store.AttemptCap;
import dev.relay.internal.store.BlockedReason;

/**
 * Every statement of the admin API and of retention, one constant per operation, with the validated
 * schema name injected once.
 *
 * <p>Clock rule: decisions use {@code clock_timestamp()}, sampled in a statement that runs after
 * the rows it decides about were locked; never {@code now()}, which is frozen at transaction start.
 */
final class AdminSql {
  /**
   * The filter shared by list and the batch forms of redrive and cancel. Each criterion is bound
   * twice, {@code (? IS NULL OR column = ?)}: the driver sends the values with the statement, so
   * PostgreSQL plans it for them (a custom plan), folds away every criterion that is NULL, and can
   * use an index for the rest and for the keyset order, instead of planning one shape for every
   * filter (which reads the whole table and sorts it). Ages are measured from {@code
   * statement_timestamp()}, which the planner may compare with an index; a later operation checks
   * each row again under its lock. Followed by the keyset cursor (created_at, work_id), the states
   * an operation may touch, and the limit.
   */
  private static String filterWhere(SchemaName schema) {
    return filterConditions(schema)
        + """
         ORDER BY o.created_at, o.work_id
         LIMIT ?
        """;
  }

  /**
   * The filter's page over both tables that hold work: {@code select} (a SELECT list ending in
   * FROM, to which the table and its alias {@code o} are appended) with {@link #filterWhere}, once
   * over the work table and once over the history table, each branch in its own (created_at,
   * work_id) order and limit, then merged and limited again. Not through the work view: there the
   * planner merges the two tables' creation-order scans under one limit and walks each until its
   * first match, so a filter that one table rarely holds (done work in the work table, which holds
   * a backlog and failed work) read that whole table for every page. Planned per table, each branch
   * takes the path its own statistics favour (a partial index and a sort of the few matches, or the
   * creation order), and the history branch drops out for states it cannot hold (its check
   * constraint: failed, ready, running, blocked). Parameters: the filter and the limit of each
   * branch (the work table's first), then the outer limit; see {@link #PAGE_BRANCHES}.
   */
  private static String pageOfBoth(SchemaName schema, String select) {
    String where = filterWhere(schema);
    return "SELECT * FROM (\n("
        + select
        + " ${relay_schema}.outbox o"
        + where
        + ")\nUNION ALL\n("
        + select
        + " ${relay_schema}.work_history o"
        + where
        + ")) w\n ORDER BY w.created_at, w.work_id\n LIMIT ?";
  }

  /** The branches of {@link #pageOfBoth}: each binds the filter and a limit. */
  static final int PAGE_BRANCHES = 2;

  /** The WHERE clause of {@link #filterWhere}, without its order and limit. */
  private static String filterConditions(SchemaName schema) {
    return """
         WHERE (?::text IS NULL OR o.state = ?::text)
           AND (?::text IS NULL OR o.kind = ?::text)
           AND (?::text IS NULL OR o.queue = ?::text)
           AND (?::text IS NULL OR o.ordering_key = ?::text)
           AND (?::int8 IS NULL
                OR o.created_at <= statement_timestamp() - ?::int8 * interval '1 millisecond')
           AND (?::int8 IS NULL
                OR o.created_at > statement_timestamp() - ?::int8 * interval '1 millisecond')
           AND (?::text IS NULL OR o.last_error_kind = ?::text)
           AND (?::text IS NULL OR o.outcome = ?::text)
        """
        // blocked work: a LIKE pattern, 'dependency%' for any reason; the first two conjuncts
        // are the predicate of outbox_waiting_idx, so the reason is derived for waiting
        // dependents only
        + "   AND (?::text IS NULL OR (o.has_dependencies AND o.state = 'ready' AND "
        + BlockedReason.of(schema, "o")
        + " LIKE ?::text))\n"
        + """
           AND (?::timestamptz IS NULL OR (o.created_at, o.work_id) > (?::timestamptz, ?::text))
           AND (?::text[] IS NULL OR o.state = ANY (?::text[]))
        """;
  }

  /**
   * The work that ended done or failed in two ranges of {@code completed_at}: {@code [start,
   * headEnd)}, and after the position {@code (at, id)} in (completed_at, work_id) order up to
   * {@code end}. Read through the work view, whose two branches the planner reads separately with
   * these conditions: in the work table a range of {@code outbox_finished_idx} (failed work, and
   * work finished by an older worker or an operator), in the history table a range of {@code
   * work_history_completed_idx} in the partitions of those days only (done work a worker finished).
   * Parameters: start, headEnd, at, at, id, end.
   */
  private static final String LIVE_RANGES =
      """
      SELECT o.queue, o.kind, o.state, o.last_error_kind, o.created_at, o.completed_at
        FROM ${relay_schema}.work o
       WHERE o.state IN ('done', 'failed')
         AND o.completed_at >= ?::timestamptz AND o.completed_at < ?::timestamptz
      UNION ALL
      SELECT o.queue, o.kind, o.state, o.last_error_kind, o.created_at, o.completed_at
        FROM ${relay_schema}.work o
       WHERE o.state IN ('done', 'failed')
         AND o.completed_at >= ?::timestamptz
         AND (o.completed_at, o.work_id) > (?::timestamptz, ?::text)
         AND o.completed_at <= ?::timestamptz
      """;

  /**
   * {@link LatencyHistogram#bin} of the row {@code l}'s creation-to-completion time: 0 under a
   * millisecond, else {@code min(127, 1 + floor(4 log2(ms)))} on the time in whole microseconds.
   */
  private static final String LATENCY_BIN =
      "CASE WHEN l.completed_at - l.created_at < interval '1 millisecond' THEN 0"
          + " ELSE least(127, 1 + floor(4 * ln((extract(epoch FROM l.completed_at - l.created_at)"
          + " * 1000000)::int8 / 1000.0::float8) / ln(2::float8)))::int END";

  /** The columns of a {@link dev.relay.admin.WorkItem}, from the outbox row {@code o}. */
  private static String itemColumns(SchemaName schema) {
    return """
    o.work_id, o.kind, o.queue, o.state, o.priority, o.claim_generation, o.attempts,
    """
        + AttemptCap.of(schema, "o")
        + """
         AS max_attempts, o.created_at, o.available_at, o.first_attempt_at, o.claimed_by,
        o.lease_until, o.completed_at, o.deadline, o.ordering_key, o.sequence, o.last_error_kind,
        o.last_error, o.outcome, o.receiver_ref, o.cancel_requested_at
        """;
  }

  /**
   * One page of work in (created_at, work_id) order after the cursor, unfinished and finished: the
   * work table's page and the history table's, merged ({@link #pageOfBoth}).
   */
  final String listWork;

  /**
   * {@link #listWork} for a filter on ready or running work: the same rows, from the work table
   * alone (the history table holds neither), with one branch's parameters (the filter, the limit),
   * read through the partial claim index ({@code outbox_claim_idx}, ready and running rows only).
   * Ready work is the newest, so {@link #listWork}'s walk of {@code outbox_created_idx} from the
   * oldest row passes every finished row before it finds a page (5.6 s at 5M rows). Here the
   * MATERIALIZED CTE reads the matching unfinished rows (its WHERE repeats the index's predicate
   * verbatim, so the planner may use it, and the CTE keeps it from walking the creation order
   * instead), keeps the first page's keys by a top-N sort, and fetches those rows by primary key:
   * its cost follows the unfinished work, never the table.
   */
  final String listBacklog;

  /**
   * A bulk action's candidates: the filter's items in (created_at, work_id) order after the cursor,
   * from both tables as {@link #listWork} (finished work in the history table too), with their
   * state, whether their kind's deduplication horizon has passed since the first attempt (a
   * redrive's test) and whether they ended within it (a purge's test) (parameters 1 and 2: the
   * default horizon in milliseconds, for kinds without a registered policy; then those of {@link
   * #pageOfBoth}).
   */
  final String bulkCandidates;

  /** The candidates of {@link #bulkCandidates}, counted per state and horizon tests (a preview). */
  final String bulkPreview;

  /** A new bulk action; returns its row. */
  final String insertBulk;

  /** A bulk action's row, locked: a batch holds it until it commits, so batches take turns. */
  final String lockBulk;

  /** A bulk action's row. */
  final String bulk;

  /** The newest bulk actions, newest first. */
  final String recentBulks;

  /** A batch's progress: the cursor, the counts added, and whether it was the last. */
  final String bulkProgress;

  /**
   * A bulk purge of one item whose row the transaction already locked ({@link #lockWork}), so the
   * clock is sampled after the wait: if it is done or cancelled and ended longer ago than its
   * kind's deduplication horizon (the retention purge's rule, without the retention), it leaves a
   * tombstone as {@link #purgeWork} writes it and a {@code purge_item_audit} row, and the row is
   * deleted, all in one statement. Deletes nothing otherwise (the caller names the refusal). A
   * concurrent enqueue of the ID meets the row lock and, after the commit, the tombstone.
   * Parameters: the work ID, the default horizon in milliseconds, the bulk action, actor, reason.
   */
  final String purgeItem;

  /**
   * A payload search, bounded: the newest items created within the window (and, optionally, before
   * its far end), at most the scan cap of them whatever their kind, read newest first through the
   * work view ({@code outbox_created_idx} and the history partitions' creation indexes, merged);
   * then, among those, the ones of the kind, queue and state asked whose payload contains the JSON
   * ({@code @>}, jsonb containment), newest first, up to the limit. The cap is applied before the
   * kind and queue, so a rare kind never makes it read further. The MATERIALIZED CTE keeps the
   * planner from pushing the filters into the capped read. Returns how many items were read ({@code
   * scanned}) with every row.
   */
  final String searchPayload;

  /** The database clock, sampled once for a read that runs several statements. */
  final String clock;

  /**
   * Per (queue, kind): counts by state, expired leases and the oldest eligible moment, at the
   * instant given (parameter 1, sampled by {@link #clock}), for every pair with unfinished or
   * failed work, a row in the summary, or one of the pairs given (parameters 2 and 3: queues and
   * kinds, the pairs with work finished in the window). Never scans the whole work table: ready and
   * running work through the partial claim index, failed work index-only through {@code
   * outbox_failed_counts_idx} (V23); done and cancelled counts come from {@code finished_summary},
   * returned with its refresh time. Completions within the window are not read here: {@link
   * RollupSql#windowTotals} and {@link #windowLive}.
   */
  final String health;

  /**
   * Work that ended done or failed in the parts of a window the rollup does not hold, counted per
   * (queue, kind, state, failure reason, latency bin): from the window's start up to the rollup's
   * first whole bucket (less than one bucket), and after the fold's position up to the window's end
   * (the work not folded yet: a minute or two behind a running maintenance leader, the whole window
   * without one). Two ranges of the partial index of finished work on {@code (state,
   * completed_at)}: the cost follows the rows in those ranges, never the table. The latency bin is
   * {@link LatencyHistogram#bin}'s, computed on the database (a time exactly on a bin's edge may
   * fall on the other side of it, as doubles round). Parameters: those of {@link #LIVE_RANGES}.
   */
  final String windowLive;

  /**
   * Work done and failed per minute in the same two ranges as {@link #windowLive} (parameters
   * alike): the minutes of a chart the rollup's 1-minute tier does not hold yet.
   */
  final String minutesLive;

  /** Refresh, step one: one refresher at a time; readers (ACCESS SHARE) are not blocked. */
  final String lockSummary;

  /** Refresh, step two: forget the previous counts (readers keep them until this commits). */
  final String clearSummary;

  /**
   * Refresh, step three: done and cancelled counts per (queue, kind), and the refresh time, which
   * is the start of this statement (its snapshot). Counts both tables through the work view:
   * finished work a worker moved to the history table, and finished rows left in the work table
   * (older workers, operators). Returns the time and the number of pairs.
   */
  final String refreshSummary;

  /** Who purged or dry-ran a purge, why, under which policy, and the counts. */
  final String auditPurge;

  /**
   * Failed work counted per (queue, kind, last_error_kind), largest groups first. Reads failed work
   * only, index-only through {@code outbox_failed_counts_idx} (V23, partial: {@code state =
   * 'failed'}): its cost grows with failed work, never with the table.
   */
  final String failureGroups;

  /** Every registered kind's policy, with its flow limits when it has any, by kind. */
  final String kinds;

  /**
   * Each limited kind's use of its limits now: live claims (running with an unexpired lease, read
   * through {@code outbox_running_group_idx}), the busiest groups of a per-group limit (at most 10
   * per kind), and the claims inside the rate window (a range of {@code claim_log_window_idx}), on
   * one sample of the database clock. Reads the small limiter table and running work only.
   */
  final String limitUse;

  /**
   * Dependents held by a dependency, counted per (queue, kind, reason): read through the partial
   * index of waiting dependents, so the cost follows them, not the work table. The MATERIALIZED CTE
   * derives each row's reason once (a flattened subquery would repeat it in the filter).
   */
  final String blockedByReason;

  /**
   * The whole row of one item, unfinished or finished: the work view, a key lookup in the work
   * table and in each history partition.
   */
  final String showWork;

  /** The attempt history of one item, oldest first. */
  final String showAttempts;

  /** The redrive audit of one item, oldest first. */
  final String showRedrives;

  /** The cancel audit of one item, oldest first. */
  final String showCancels;

  /** The link naming the work this item replaces. */
  final String showSupersedes;

  /** The links of the items that replace this one. */
  final String showSupersededBy;

  /**
   * Redrive, step one: lock the row, so the decision rests on its current state. The work table
   * only: finished work in the history table is first judged there ({@link #previewHorizon}) and,
   * if the action goes ahead, moved back by {@link #reopenHistory}, then locked here.
   */
  final String lockWork;

  /**
   * Moves finished rows named by ID (a text array) back from the history table into the work table,
   * unchanged, and returns the IDs moved (V25's {@code reopen_history}): before an operator's write
   * on finished work (a redrive, a purge of one item), which then runs on the work table exactly as
   * for a finished row an older worker left there. An ID not in the history table is not returned.
   */
  final String reopenHistory;

  /**
   * Supersede, before anything else in its transaction: read committed, whatever the connection's
   * default. The decision (is the old work already superseded?) is read after waiting for the old
   * row's lock, and only under READ COMMITTED does that later statement see what the transaction it
   * waited for committed; REPEATABLE READ would keep the snapshot taken before the wait.
   */
  final String supersedeReadCommitted = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";

  /**
   * Redrive, step two, a later statement than the lock: the database clock now, when the kind's
   * dedup horizon ends for this item (first attempt plus horizon; kinds no worker registered get
   * the default horizon, bound as a parameter), and whether the item ended within that horizon (a
   * purge's test). Parameters: the default horizon in milliseconds, the work ID.
   */
  final String horizon;

  /**
   * {@link #horizon} read through the work view, without a lock: the redrive preview (the state and
   * generation it returns are read, not locked), and the judgement of finished work in the history
   * table before an action moves it back. A history row never changes in place (it is only moved or
   * retired), so what this reads of it is what the locked statements would read after moving it.
   */
  final String previewHorizon;

  /**
   * Redrive, step three: ready again with a new attempt budget. The generation is left alone, so
   * the next claim takes a higher one; ID and payload are immutable anyway. First attempt time is
   * kept: the receiver's memory of the ID dates from it, so a later redrive is judged against it. A
   * redrive that overrides a passed horizon (first parameter true) starts a new horizon instead.
   */
  final String redrive;

  /** Who redrove, why, from which state and generation, and whether an override was needed. */
  final String auditRedrive;

  /** The replacement's link to the work it supersedes. */
  final String insertSupersedes;

  /**
   * Purge, one batch. The MATERIALIZED CTE locks at most n rows with SKIP LOCKED (never waiting on
   * a worker) and cannot be flattened into the DELETE, so exactly the locked rows get a tombstone
   * and are deleted. A concurrent enqueue of one of these IDs meets the row lock and compares
   * against the row or, after this commits, against the tombstone. The clock is sampled once per
   * statement ({@code (SELECT clock_timestamp())}); SKIP LOCKED never waits, so that is sound.
   * Failed work is never selected; done and cancelled work only once both the retention and the
   * kind's dedup horizon have passed since it ended. Oldest first within each state (cancelled,
   * then done): the order of {@code outbox_finished_idx}, so a batch reads about the rows it takes,
   * whatever the backlog of purgeable rows (docs/operations.md, History at scale).
   */
  final String purgeWork;

  /** Dry run of {@link #purgeWork}: the same predicate, counted, nothing locked. */
  final String countPurgeableWork;

  /** Tombstones older than the identity horizon, one batch (the ID may be reused afterwards). */
  final String purgeTombstones;

  /** Dry run of {@link #purgeTombstones}. */
  final String countTombstones;

  /**
   * The longest catch-up window ({@code missed=each(<ISO-8601 duration>)} in a schedule's stored
   * definition) in milliseconds, 0 without one: tombstones are kept at least that long.
   */
  final String longestCatchUp;

  /** Attempt history past retention whose work is purged or ended done or cancelled. */
  final String purgeAttempts;

  /** Dry run of {@link #purgeAttempts}. */
  final String countAttempts;

  /** Redrive audit rows past retention whose work is purged or ended done or cancelled. */
  final String purgeRedriveAudit;

  /** Dry run of {@link #purgeRedriveAudit}. */
  final String countRedriveAudit;

  /** Cancel audit rows past retention whose work is purged or ended done or cancelled. */
  final String purgeCancelAudit;

  /** Dry run of {@link #purgeCancelAudit}. */
  final String countCancelAudit;

  /** Supersedes links past retention whose two items are both purged or ended. */
  final String purgeSupersedes;

  /** Dry run of {@link #purgeSupersedes}. */
  final String countSupersedes;

  /** Purge audit rows past the history retention, one batch (they concern no work item). */
  final String purgePurgeAudit;

  /** Dry run of {@link #purgePurgeAudit}. */
  final String countPurgeAudit;

  /**
   * A bulk purge's per-item audit rows past the history retention, one batch (the work is gone).
   */
  final String purgePurgeItemAudit;

  /** Dry run of {@link #purgePurgeItemAudit}. */
  final String countPurgeItemAudit;

  private static final PerSchema<AdminSql> CATALOG = new PerSchema<>(AdminSql::new);

  /** The statements for {@code schema}, composed once per schema and shared. */
  static AdminSql of(SchemaName schema) {
    return CATALOG.of(schema);
  }

  AdminSql(SchemaName schema) {
    listWork = schema.inject(pageOfBoth(schema, "SELECT " + itemColumns(schema) + " FROM"));
    listBacklog =
        schema.inject(
            """
            WITH backlog AS MATERIALIZED (
                SELECT o.created_at, o.work_id
                  FROM ${relay_schema}.outbox o
            """
                + filterConditions(schema)
                + """
                   AND o.state IN ('ready', 'running')
            ), page AS (
                SELECT b.work_id FROM backlog b ORDER BY b.created_at, b.work_id LIMIT ?
            )
            SELECT
            """
                + itemColumns(schema)
                + """
              FROM ${relay_schema}.outbox o
             WHERE o.work_id = ANY (ARRAY(SELECT p.work_id FROM page p))
             ORDER BY o.created_at, o.work_id
            """);
    bulkCandidates =
        schema.inject(
            """
            SELECT c.work_id, c.created_at, c.state,
                   c.first_attempt_at IS NOT NULL
                   AND coalesce(c.horizon_start, c.first_attempt_at)
                       + coalesce(k.dedup_horizon, ? * interval '1 millisecond')
                       <= clock_timestamp() AS past_horizon,
                   c.completed_at
                       > clock_timestamp() - coalesce(k.dedup_horizon, ? * interval '1 millisecond')
                       AS ended_within_horizon
              FROM (
            """
                + pageOfBoth(
                    schema,
                    """
                    SELECT o.work_id, o.created_at, o.state, o.kind, o.first_attempt_at,
                           o.horizon_start, o.completed_at
                      FROM""")
                + """
              ) c
              LEFT JOIN ${relay_schema}.kind k ON k.kind = c.kind
             ORDER BY c.created_at, c.work_id
            """);
    bulkPreview =
        "SELECT c.state, c.past_horizon, c.ended_within_horizon, count(*) AS n FROM ("
            + bulkCandidates
            + ") c GROUP BY c.state, c.past_horizon, c.ended_within_horizon";
    String bulkColumns =
        """
        id, action, force, f_state, f_kind, f_queue, f_ordering_key,
        (extract(epoch FROM f_older_than) * 1000)::int8 AS f_older_than_ms,
        (extract(epoch FROM f_newer_than) * 1000)::int8 AS f_newer_than_ms,
        f_error_kind, f_outcome, f_blocked_only, f_blocked_reason, actor, reason, state,
        created_at, updated_at, finished_at, after_created_at, after_work_id, batches, handled,
        changed, requested, refused_running, refused_horizon, refused_state, gone
        """;
    insertBulk =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.bulk_operation
                   (action, force, f_state, f_kind, f_queue, f_ordering_key, f_older_than,
                    f_newer_than, f_error_kind, f_outcome, f_blocked_only, f_blocked_reason,
                    actor, reason)
            VALUES (?, ?, ?, ?, ?, ?, ?::int8 * interval '1 millisecond',
                    ?::int8 * interval '1 millisecond', ?, ?, ?, ?, ?, ?)
            RETURNING
            """
                + bulkColumns);
    lockBulk =
        schema.inject(
            "SELECT "
                + bulkColumns
                + " FROM ${relay_schema}.bulk_operation WHERE id = ? FOR UPDATE");
    bulk =
        schema.inject(
            "SELECT " + bulkColumns + " FROM ${relay_schema}.bulk_operation WHERE id = ?");
    recentBulks =
        schema.inject(
            "SELECT "
                + bulkColumns
                + " FROM ${relay_schema}.bulk_operation ORDER BY id DESC LIMIT ?");
    bulkProgress =
        schema.inject(
            """
            UPDATE ${relay_schema}.bulk_operation
               SET after_created_at = coalesce(?::timestamptz, after_created_at),
                   after_work_id = coalesce(?::text, after_work_id),
                   batches = batches + 1,
                   handled = handled + ?,
                   changed = changed + ?,
                   requested = requested + ?,
                   refused_running = refused_running + ?,
                   refused_horizon = refused_horizon + ?,
                   refused_state = refused_state + ?,
                   gone = gone + ?,
                   state = CASE WHEN ? THEN 'done' ELSE state END,
                   finished_at = CASE WHEN ? THEN clock_timestamp() ELSE finished_at END,
                   updated_at = clock_timestamp()
             WHERE id = ?
            RETURNING
            """
                + bulkColumns);
    searchPayload =
        schema.inject(
            """
            WITH candidates AS MATERIALIZED (
                SELECT o.*
                  FROM ${relay_schema}.work o
                 WHERE o.created_at > statement_timestamp() - ?::int8 * interval '1 millisecond'
                   AND (?::int8 IS NULL
                        OR o.created_at <= statement_timestamp() - ?::int8 * interval '1 millisecond')
                 ORDER BY o.created_at DESC, o.work_id DESC
                 LIMIT ?
            )
            SELECT
            """
                + itemColumns(schema)
                + """
                , (SELECT count(*) FROM candidates) AS scanned
              FROM candidates o
             WHERE (?::text IS NULL OR o.kind = ?::text)
               AND (?::text IS NULL OR o.queue = ?::text)
               AND (?::text IS NULL OR o.state = ?::text)
               AND o.payload @> ?::jsonb
             ORDER BY o.created_at DESC, o.work_id DESC
             LIMIT ?
            """);
    clock = "SELECT clock_timestamp() AS now";
    health =
        schema.inject(
            """
            WITH k AS MATERIALIZED (SELECT ?::timestamptz AS now),
            -- unfinished work, through the partial claim index (its predicate, verbatim)
            live AS (
                SELECT o.queue, o.kind,
                       count(*) FILTER (WHERE o.state = 'ready') AS ready,
                       count(*) FILTER (WHERE o.state = 'running') AS running,
                       count(*) FILTER (WHERE o.state = 'running' AND o.lease_until <= k.now)
                           AS expired_leases,
                       -- eligible since: ready work from available_at, an expired claim from
                       -- the moment its lease ended; a dependent only once every dependency is
                       -- done, as the claim decides (one held for good would page forever)
                       min(CASE WHEN o.state = 'ready' AND o.available_at <= k.now
                                THEN CASE WHEN NOT o.has_dependencies
                                            OR"""
                + BlockedReason.UNMET_DEPENDENCY
                + """
                                               IS NULL
                                          THEN o.available_at END
                                WHEN o.state = 'running' AND o.lease_until <= k.now
                                THEN o.lease_until END) AS eligible_since
                  FROM ${relay_schema}.outbox o, k
                 WHERE o.state IN ('ready', 'running')
                 GROUP BY o.queue, o.kind
            ),
            -- failed work, through the partial index of finished work; a failed keyed item
            -- holds its key: nothing behind it runs until it is redriven or cancelled
            failed AS (
                SELECT o.queue, o.kind, count(*) AS failed,
                       count(DISTINCT o.ordering_key) AS blocked_keys
                  FROM ${relay_schema}.outbox o
                 WHERE o.state = 'failed'
                 GROUP BY o.queue, o.kind
            ),
            pairs AS (
                SELECT queue, kind FROM live
                UNION SELECT queue, kind FROM failed
                UNION SELECT queue, kind FROM ${relay_schema}.finished_summary
                UNION SELECT queue, kind FROM unnest(?::text[], ?::text[]) AS w(queue, kind)
            )
            SELECT p.queue, p.kind, k.now,
                   coalesce(l.ready, 0) AS ready, coalesce(l.running, 0) AS running,
                   coalesce(s.done, 0) AS done, coalesce(f.failed, 0) AS failed,
                   coalesce(s.cancelled, 0) AS cancelled,
                   coalesce(l.expired_leases, 0) AS expired_leases,
                   coalesce(f.blocked_keys, 0) AS blocked_keys,
                   extract(epoch FROM k.now - l.eligible_since) AS oldest_eligible_s,
                   (SELECT as_of FROM ${relay_schema}.finished_summary_refresh) AS summary_as_of
              FROM pairs p
              CROSS JOIN k
              LEFT JOIN live l ON l.queue = p.queue AND l.kind = p.kind
              LEFT JOIN failed f ON f.queue = p.queue AND f.kind = p.kind
              LEFT JOIN ${relay_schema}.finished_summary s
                     ON s.queue = p.queue AND s.kind = p.kind
             ORDER BY p.queue, p.kind
            """);
    windowLive =
        schema.inject(
            """
            SELECT l.queue, l.kind, l.state,
                   CASE WHEN l.state = 'failed' THEN coalesce(l.last_error_kind, 'unknown') END
                       AS reason,
                   CASE WHEN l.state = 'done' THEN
            """
                + LATENCY_BIN
                + """
                 END AS bin,
                   count(*) AS n
              FROM (
            """
                + LIVE_RANGES
                + """
            ) l
             GROUP BY 1, 2, 3, 4, 5
            """);
    minutesLive =
        schema.inject(
            """
            SELECT date_trunc('minute', l.completed_at) AS minute,
                   count(*) FILTER (WHERE l.state = 'done') AS done,
                   count(*) FILTER (WHERE l.state = 'failed') AS failed
              FROM (
            """
                + LIVE_RANGES
                + """
            ) l
             GROUP BY 1
            """);
    lockSummary = schema.inject("LOCK TABLE ${relay_schema}.finished_summary IN EXCLUSIVE MODE");
    clearSummary = schema.inject("DELETE FROM ${relay_schema}.finished_summary");
    refreshSummary =
        schema.inject(
            """
            WITH counted AS (
                INSERT INTO ${relay_schema}.finished_summary (queue, kind, done, cancelled)
                SELECT queue, kind, count(*) FILTER (WHERE state = 'done'),
                       count(*) FILTER (WHERE state = 'cancelled')
                  FROM ${relay_schema}.work
                 WHERE state IN ('done', 'cancelled')
                 GROUP BY queue, kind
                RETURNING 1
            )
            INSERT INTO ${relay_schema}.finished_summary_refresh (only_row, as_of)
            SELECT true, statement_timestamp()
                ON CONFLICT (only_row) DO UPDATE SET as_of = EXCLUDED.as_of
            RETURNING as_of, (SELECT count(*) FROM counted) AS pairs
            """);
    auditPurge =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.purge_audit
                   (actor, reason, dry_run, policy, work, tombstones, attempts, audits, complete)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """);
    failureGroups =
        schema.inject(
            """
            SELECT queue, kind, last_error_kind AS reason, count(*) AS n,
                   max(completed_at) AS latest
              FROM ${relay_schema}.outbox
             WHERE state = 'failed'
             GROUP BY queue, kind, last_error_kind
             ORDER BY n DESC, queue, kind, reason NULLS LAST
             LIMIT ?
            """);
    kinds =
        schema.inject(
            """
            SELECT k.kind, extract(epoch FROM k.backoff_base) AS backoff_base_s,
                   extract(epoch FROM k.backoff_cap) AS backoff_cap_s, k.max_attempts,
                   extract(epoch FROM k.max_elapsed) AS max_elapsed_s,
                   extract(epoch FROM k.handler_timeout) AS handler_timeout_s,
                   extract(epoch FROM k.dedup_horizon) AS dedup_horizon_s, k.unknown_outcome,
                   l.max_running, l.max_running_per_group, l.rate_limit,
                   extract(epoch FROM l.rate_interval) AS rate_interval_s,
                   k.registered_by, k.registered_at
              FROM ${relay_schema}.kind k
              LEFT JOIN ${relay_schema}.limiter l ON l.kind = k.kind
             ORDER BY k.kind
            """);
    limitUse =
        schema.inject(
            """
            WITH now AS MATERIALIZED (SELECT clock_timestamp() AS t)
            SELECT l.kind, l.max_running, l.max_running_per_group, l.rate_limit,
                   extract(epoch FROM l.rate_interval) AS rate_interval_s,
                   (SELECT count(*) FROM ${relay_schema}.outbox o
                     WHERE o.kind = l.kind AND o.state = 'running'
                       AND o.lease_until > (SELECT t FROM now)) AS running,
                   CASE WHEN l.rate_interval IS NOT NULL THEN
                       (SELECT count(*) FROM ${relay_schema}.claim_log c
                         WHERE c.kind = l.kind
                           AND c.claimed_at > (SELECT t FROM now) - l.rate_interval)
                   END AS window_claims,
                   g.group_keys, g.group_running, (SELECT t FROM now) AS at
              FROM ${relay_schema}.limiter l
             CROSS JOIN LATERAL (
                   SELECT array_agg(x.group_key ORDER BY x.n DESC, x.group_key) AS group_keys,
                          array_agg(x.n ORDER BY x.n DESC, x.group_key) AS group_running
                     FROM (SELECT o.group_key, count(*) AS n
                             FROM ${relay_schema}.outbox o
                            WHERE l.max_running_per_group IS NOT NULL
                              AND o.kind = l.kind AND o.state = 'running'
                              AND o.lease_until > (SELECT t FROM now)
                            GROUP BY o.group_key
                            ORDER BY n DESC, o.group_key
                            LIMIT 10) x) g
             ORDER BY l.kind
            """);
    blockedByReason =
        schema.inject(
            """
            WITH waiting AS MATERIALIZED (
                SELECT o.queue, o.kind,
            """
                + BlockedReason.of(schema, "o")
                + """
                        AS reason
                  FROM ${relay_schema}.outbox o
                 WHERE o.has_dependencies AND o.state = 'ready'
            )
            SELECT queue, kind, reason, count(*) AS n
              FROM waiting
             WHERE reason IS NOT NULL
             GROUP BY 1, 2, 3
            """);
    showWork =
        schema.inject(
            "SELECT "
                + itemColumns(schema)
                + """
                , o.payload::text AS payload, o.result::text AS result, o.milestone
                  FROM ${relay_schema}.work o
                 WHERE o.work_id = ?
                """);
    showAttempts =
        schema.inject(
            """
            SELECT generation, worker, claimed_at, ended_at, ending, error_kind, error, outcome,
                   action, receiver_ref
              FROM ${relay_schema}.attempt WHERE work_id = ? ORDER BY generation, id
            """);
    showRedrives =
        schema.inject(
            """
            SELECT actor, reason, redriven_at, from_state, from_generation, forced
              FROM ${relay_schema}.redrive_audit WHERE work_id = ? ORDER BY id
            """);
    showCancels =
        schema.inject(
            """
            SELECT actor, reason, requested_at, from_state, result
              FROM ${relay_schema}.cancel_audit WHERE work_id = ? ORDER BY id
            """);
    showSupersedes =
        schema.inject(
            """
            SELECT work_id, supersedes_work_id, actor, reason, created_at
              FROM ${relay_schema}.supersedes WHERE work_id = ?
            """);
    showSupersededBy =
        schema.inject(
            """
            SELECT work_id, supersedes_work_id, actor, reason, created_at
              FROM ${relay_schema}.supersedes WHERE supersedes_work_id = ? ORDER BY created_at
            """);
    lockWork =
        schema.inject(
            """
            SELECT state, claim_generation FROM ${relay_schema}.outbox
             WHERE work_id = ?
               FOR UPDATE
            """);
    horizon = horizon(schema, "outbox");
    previewHorizon = horizon(schema, "work");
    reopenHistory = schema.inject("SELECT * FROM ${relay_schema}.reopen_history(?::text[])");
    redrive =
        schema.inject(
            """
            UPDATE ${relay_schema}.outbox
               SET state = 'ready',
                   claimed_by = NULL,
                   lease_until = NULL,
                   claimed_at = NULL,
                   completed_at = NULL,
                   cancel_requested_at = NULL,
                   available_at = clock_timestamp(),
                   attempts = 0,
                   snoozes = 0,
                   -- a fresh budget: attempts, snoozes and the retry window; first_attempt_at
                   -- stays, as the receiver's deduplication horizon is measured from it
                   retry_window_start = NULL,
                   -- unless this redrive overrides a passed horizon: a new one starts now, and
                   -- every claim measures from it (the work is protected again)
                   horizon_start = CASE WHEN ? THEN clock_timestamp() ELSE horizon_start END
             WHERE work_id = ?
            """);
    auditRedrive =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.redrive_audit
                   (work_id, actor, reason, from_state, from_generation, forced)
            VALUES (?, ?, ?, ?, ?, ?)
            """);
    insertSupersedes =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.supersedes (work_id, supersedes_work_id, actor, reason)
            VALUES (?, ?, ?, ?)
            """);
    String purgeablePredicate =
        """
          FROM ${relay_schema}.outbox o
          LEFT JOIN ${relay_schema}.kind k ON k.kind = o.kind
         WHERE o.state IN ('done', 'cancelled')
           AND o.completed_at < (SELECT clock_timestamp()) - ? * interval '1 millisecond'
           AND o.completed_at < (SELECT clock_timestamp())
                                - coalesce(k.dedup_horizon, ? * interval '1 millisecond')
        """;
    // The tombstone of each row of a purge's `doomed` CTE (its work ID, kind, payload, generation,
    // state and outcome): the one shape of a tombstone, for the retention and the bulk purge.
    String tombstonesOfDoomed =
        """
        tombs AS (
            INSERT INTO ${relay_schema}.tombstone
                   (work_id, kind, payload_digest, last_generation, final_state, outcome)
            SELECT d.work_id, d.kind, ${relay_schema}.payload_digest(d.payload),
                   d.claim_generation, d.state, d.outcome
              FROM doomed d
                ON CONFLICT (work_id) DO NOTHING
        )
        """;
    purgeWork =
        schema.inject(
            "WITH doomed AS MATERIALIZED (\n SELECT o.work_id, o.kind, o.payload,"
                + " o.claim_generation, o.state, o.outcome\n"
                + purgeablePredicate
                + """
                 -- state first: the order of outbox_finished_idx (state, completed_at), so the
                 -- scan stops after n rows; by completed_at alone, every batch read and sorted
                 -- all purgeable rows (seconds per batch at a million, quadratic overall)
                 ORDER BY o.state, o.completed_at
                 LIMIT ?
                   FOR UPDATE OF o SKIP LOCKED
                ),
                """
                + tombstonesOfDoomed
                + """
                -- = ANY (ARRAY(...)): a primary-key lookup whatever the row estimate; a join with
                -- the CTE let a generic plan (LIMIT ? guessed large) scan the whole table per batch
                DELETE FROM ${relay_schema}.outbox o
                 WHERE o.work_id = ANY (ARRAY(SELECT d.work_id FROM doomed d))
                """);
    countPurgeableWork = schema.inject("SELECT count(*)\n" + purgeablePredicate);
    purgeItem =
        schema.inject(
            """
            WITH doomed AS MATERIALIZED (
                SELECT o.work_id, o.kind, o.payload, o.claim_generation, o.state, o.outcome
                  FROM ${relay_schema}.outbox o
                  LEFT JOIN ${relay_schema}.kind k ON k.kind = o.kind
                 WHERE o.work_id = ?
                   AND o.state IN ('done', 'cancelled')
                   AND o.completed_at < (SELECT clock_timestamp())
                                        - coalesce(k.dedup_horizon, ? * interval '1 millisecond')
            ),
            """
                + tombstonesOfDoomed
                + """
            , audit AS (
                INSERT INTO ${relay_schema}.purge_item_audit
                       (work_id, bulk_id, actor, reason, from_state, last_generation, outcome)
                SELECT d.work_id, ?::int8, ?::text, ?::text, d.state, d.claim_generation, d.outcome
                  FROM doomed d
            )
            DELETE FROM ${relay_schema}.outbox o
             WHERE o.work_id = ANY (ARRAY(SELECT d.work_id FROM doomed d))
            """);
    // A finished ID's tombstone is written when its row is filed in the history table (schema
    // version 25) and must hold the ID as long as that row is retained: none goes while it is not
    // older than the oldest history row (one probe of each day's index of completion).
    String historyKept =
        " AND purged_at < (SELECT coalesce(min(h.completed_at), 'infinity')"
            + " FROM ${relay_schema}.work_history h)";
    purgeTombstones = agePurge(schema, "tombstone", "work_id", "purged_at", historyKept);
    countTombstones = ageCount(schema, "tombstone", "purged_at", historyKept);
    longestCatchUp =
        schema.inject(
            """
            SELECT coalesce(max(extract(epoch FROM
                       substring(s.definition FROM 'missed=each\\(([^)]+)\\)')::interval)), 0)
                   * 1000
              FROM ${relay_schema}.schedule_state s
            """);
    purgeAttempts = historyPurge(schema, "attempt", "id", "ended_at", "work_id");
    countAttempts = historyCount(schema, "attempt", "ended_at", "work_id");
    purgeRedriveAudit = historyPurge(schema, "redrive_audit", "id", "redriven_at", "work_id");
    countRedriveAudit = historyCount(schema, "redrive_audit", "redriven_at", "work_id");
    purgeCancelAudit = historyPurge(schema, "cancel_audit", "id", "requested_at", "work_id");
    countCancelAudit = historyCount(schema, "cancel_audit", "requested_at", "work_id");
    purgeSupersedes =
        historyPurge(schema, "supersedes", "work_id", "created_at", "supersedes_work_id");
    countSupersedes = historyCount(schema, "supersedes", "created_at", "supersedes_work_id");
    purgePurgeAudit = agePurge(schema, "purge_audit", "id", "requested_at");
    countPurgeAudit = ageCount(schema, "purge_audit", "requested_at");
    purgePurgeItemAudit = agePurge(schema, "purge_item_audit", "id", "purged_at");
    countPurgeItemAudit = ageCount(schema, "purge_item_audit", "purged_at");
  }

  /** {@link #horizon} over {@code relation}: the work table, or the work view. */
  private static String horizon(SchemaName schema, String relation) {
    return schema.inject(
        """
        SELECT o.state, o.claim_generation, c.now, o.first_attempt_at, o.horizon_start,
               -- from the first attempt, or from a redrive that overrode the horizon: the
               -- start every claim measures from too
               coalesce(o.horizon_start, o.first_attempt_at) + c.horizon AS horizon_end,
               o.completed_at > c.now - c.horizon AS ended_within_horizon,
               k.dedup_horizon IS NOT NULL AS registered
          FROM ${relay_schema}.%s o
          LEFT JOIN ${relay_schema}.kind k ON k.kind = o.kind
         CROSS JOIN LATERAL (
               SELECT clock_timestamp() AS now,
                      coalesce(k.dedup_horizon, ? * interval '1 millisecond') AS horizon) c
         WHERE o.work_id = ?
        """
            .formatted(relation));
  }

  /**
   * Rows of {@code table} older than a retention by {@code timeColumn}, one batch, oldest first,
   * with SKIP LOCKED in a MATERIALIZED CTE like {@link #purgeWork}, deleted by key lookups as
   * there; for tables whose rows depend on nothing else (tombstones, the purge audit).
   */
  private static String agePurge(SchemaName schema, String table, String key, String timeColumn) {
    return agePurge(schema, table, key, timeColumn, "");
  }

  /**
   * {@link #agePurge(SchemaName, String, String, String)} with {@code also} added to its filter.
   */
  private static String agePurge(
      SchemaName schema, String table, String key, String timeColumn, String also) {
    return schema.inject(
        "WITH doomed AS MATERIALIZED (\n SELECT "
            + key
            + " AS key FROM ${relay_schema}."
            + table
            + "\n WHERE "
            + timeColumn
            + " < (SELECT clock_timestamp()) - ? * interval '1 millisecond'"
            + also
            + "\n ORDER BY "
            + timeColumn
            + "\n LIMIT ?\n FOR UPDATE SKIP LOCKED\n)\nDELETE FROM ${relay_schema}."
            + table
            + " t WHERE t."
            + key
            + " = ANY (ARRAY(SELECT d.key FROM doomed d))");
  }

  private static String ageCount(SchemaName schema, String table, String timeColumn) {
    return ageCount(schema, table, timeColumn, "");
  }

  private static String ageCount(SchemaName schema, String table, String timeColumn, String also) {
    return schema.inject(
        "SELECT count(*) FROM ${relay_schema}."
            + table
            + " WHERE "
            + timeColumn
            + " < clock_timestamp() - ? * interval '1 millisecond'"
            + also);
  }

  /**
   * The evidence of failed or unfinished work stays: a history row goes only when its work (and for
   * links, both works) is purged or ended done or cancelled. Batches by primary key with SKIP
   * LOCKED in a MATERIALIZED CTE, like {@link #purgeWork}.
   */
  private static String historyPurge(
      SchemaName schema, String table, String key, String timeColumn, String secondWorkColumn) {
    return schema.inject(
        "WITH doomed AS MATERIALIZED (\n SELECT h."
            + key
            + " AS key FROM ${relay_schema}."
            + table
            + " h\n"
            + historyPredicate(timeColumn, secondWorkColumn)
            + " ORDER BY h."
            + timeColumn
            + "\n LIMIT ?\n FOR UPDATE OF h SKIP LOCKED\n)\nDELETE FROM ${relay_schema}."
            + table
            + " h WHERE h."
            + key
            + " = ANY (ARRAY(SELECT d.key FROM doomed d))");
  }

  private static String historyCount(
      SchemaName schema, String table, String timeColumn, String secondWorkColumn) {
    return schema.inject(
        "SELECT count(*) FROM ${relay_schema}."
            + table
            + " h\n"
            + historyPredicate(timeColumn, secondWorkColumn));
  }

  private static String historyPredicate(String timeColumn, String secondWorkColumn) {
    return " WHERE h."
        + timeColumn
        + " < (SELECT clock_timestamp()) - ? * interval '1 millisecond'\n"
        + "   AND NOT EXISTS (SELECT 1 FROM ${relay_schema}.outbox o\n"
        + "                    WHERE o.work_id IN (h.work_id, h."
        + secondWorkColumn
        + ")\n"
        + "                      AND o.state IN ('ready', 'running', 'failed'))\n";
  }
}
