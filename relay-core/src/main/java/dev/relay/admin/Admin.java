package dev.relay.admin;

import dev.relay.CancelResult;
import dev.relay.Outbox;
import dev.relay.Relay;
import dev.relay.RetryableException;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.WorkState;
import dev.relay.internal.admin.AdminStore;
import dev.relay.internal.admin.Cursor;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.SqlErrors;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.store.DependencyReader;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Stream;
import javax.sql.DataSource;

/**
 * The operator's view of Relay: queue health, listing and showing work, and the audited actions
 * (redrive, supersede, cancel, purge, pause and resume). It is what the {@code relay} command and
 * your own tools call, so they apply the same rules and the same per-kind policy (from the {@code
 * kind} table) that the workers use.
 *
 * <pre>{@code
 * Admin admin = Admin.create(dataSource);                  // schema "relay"; share one instance
 * for (QueueHealth h : admin.health(Duration.ofMinutes(15))) { ... }
 * admin.redrive("order-103-ack", RedriveRequest.of("mina", "provider outage over, INC-42"));
 * }</pre>
 *
 * <p>Each call takes one connection from the data source (in auto-commit mode) for one or a few
 * short transactions of its own, and never joins a caller's transaction. Bad input (an empty actor
 * or reason, a limit out of range, an unknown state) throws {@link InvalidAdminRequestException}
 * before anything is sent. Refusals are typed: {@link RedriveRefusedException}, {@link
 * SupersedeRefusedException}, {@link WorkNotFoundException}; database errors come as {@link
 * dev.relay.RelayException}, retryable ones as {@link dev.relay.RetryableException}.
 *
 * <p>What it cannot do: recall a call already in flight (cancel only asks the worker), make a
 * receiver forget a work ID (purge only deletes Relay's rows), or prove that failed work had no
 * effect. A redrive sends the same work ID again, so it is only safe while the receiver still
 * deduplicates it: that is why it is refused past the kind's deduplication horizon unless
 * overridden. Thread-safe; holds no connection.
 */
public final class Admin {
  /** Most items in one list page. */
  public static final int MAX_PAGE_SIZE = 1_000;

  /** Most items one batch redrive or cancel touches. */
  public static final int MAX_BATCH = 10_000;

  /** Items a bulk action's batch handles in one transaction ({@link #runBulk}). */
  public static final int BULK_BATCH = 200;

  /** Most items {@link #bulkPreview} counts. */
  public static final int MAX_BULK_PREVIEW = 1_000_000;

  /** Most groups {@link #failureGroups()} returns. */
  public static final int MAX_FAILURE_GROUPS = 1_000;

  /** Most items one payload search reads ({@link #searchPayload}). */
  public static final int MAX_SEARCH_SCAN = 100_000;

  /** Most (queue, kind) pairs {@link #charts} lists. */
  public static final int MAX_CHART_PAIRS = 500;

  /** Longest actor name, in characters. */
  public static final int MAX_ACTOR_LENGTH = 200;

  /** Longest reason, in characters. */
  public static final int MAX_REASON_LENGTH = 2_000;

  /** The shortest window {@link #health} counts failures and completion times over: 1 second. */
  public static final Duration MIN_HEALTH_WINDOW = Duration.ofSeconds(1);

  /** The longest window {@link #health} counts failures and completion times over: 365 days. */
  public static final Duration MAX_HEALTH_WINDOW = Duration.ofDays(365);

  private final DataSource dataSource;
  private final AdminStore store;
  private final DependencyReader dependencyReader;

  private Admin(DataSource dataSource, SchemaName schema) {
    this.dataSource = dataSource;
    this.store = new AdminStore(schema, Timeouts.DEFAULT);
    this.dependencyReader = new DependencyReader(schema);
  }

  /** An admin on schema {@link Relay#DEFAULT_SCHEMA}. */
  public static Admin create(DataSource dataSource) {
    return create(dataSource, Relay.DEFAULT_SCHEMA);
  }

  /**
   * An admin on {@code schema}.
   *
   * @throws dev.relay.InvalidConfigurationException if the schema name is not a plain identifier
   */
  public static Admin create(DataSource dataSource, String schema) {
    return new Admin(Objects.requireNonNull(dataSource, "dataSource"), SchemaName.of(schema));
  }

  /** The schema this admin works on. */
  public String schema() {
    return store.schema().sql();
  }

  /**
   * Health per (queue, kind) that has unfinished, failed or recently done work or a row in the
   * done/cancelled summary, ordered by queue and kind, measured at one instant of the database
   * clock. It never scans the whole work table: ready, running and failed counts (with the oldest
   * eligible age, expired leases and blocked keys) are exact, read through partial indexes whose
   * cost grows with unfinished and failed work only. Done and cancelled counts come from the
   * summary that {@link Maintenance} refreshes on every run (or {@link #refreshSummary()}), as of
   * {@link QueueHealth#finishedCountsAsOf()}.
   *
   * <p>The window's completions, failures by reason and percentiles count the work that ended
   * within it, read from the charts' rollup (see {@link #charts}) as far as the maintenance
   * leader's fold has reached, and from the work table before the rollup's first whole bucket in
   * the window (under a minute for windows up to 3 hours; 15 minutes up to 26 hours; an hour up to
   * 8 days) and after the fold's position (a minute or two behind a running leader). So their cost
   * follows the rollup's rows and the work not folded yet, not the work in the window; without a
   * maintenance leader the whole window is read from the table (an index range). Work counted by
   * the rollup stays counted once purged, and a failure redriven later still counts as a failure.
   * Percentiles are the rollup histogram's (nearest rank, within {@code 9.05 %} of a value in the
   * same bin; see {@link Charts}).
   *
   * @param window how far back failures and completion times are counted ({@link
   *     #MIN_HEALTH_WINDOW} to {@link #MAX_HEALTH_WINDOW}: 1 s to 365 days)
   */
  public List<QueueHealth> health(Duration window) {
    requireDuration("window", window, MIN_HEALTH_WINDOW, MAX_HEALTH_WINDOW);
    return withConnection("queue health", c -> store.health(c, window));
  }

  /**
   * Work done and failed per minute over {@code window}, on the database clock: one entry per
   * minute from the window's start (rounded down to the minute) to the current, partial minute,
   * oldest first, minutes without any as zeros. For a chart of the last hour. Counted as {@link
   * #health}'s window: from the rollup's 1-minute tier as far as the maintenance leader's fold has
   * reached (it keeps 3 hours), from the work table before it and after the fold's position; so its
   * cost follows the rollup's rows and the work not folded yet, never the table.
   *
   * @param window how far back (1 min to 24 h)
   */
  public List<CompletionMinute> completionsPerMinute(Duration window) {
    requireDuration("window", window, Duration.ofMinutes(1), Duration.ofHours(24));
    return withConnection("completions per minute", c -> store.completionsPerMinute(c, window));
  }

  /**
   * Throughput, failures by reason and creation-to-completion p50/p95 over {@code window}, for
   * every queue and kind or one of each, read from the rollup that {@link Maintenance}'s leader
   * folds finished work into on every run: a page of the rollup's rows (at most one per point of
   * the window and (queue, kind)), never the work table. Without a maintenance leader running, the
   * rollup stays empty. See {@link Charts} for what the numbers are and the percentiles' error.
   *
   * @param window the window
   * @param queue one queue, or {@code null} for every queue
   * @param kind one kind, or {@code null} for every kind
   * @throws InvalidAdminRequestException if the window is null
   */
  public Charts charts(ChartWindow window, String queue, String kind) {
    if (window == null) {
      throw new InvalidAdminRequestException("window", "is required (1h, 24h or 7d)");
    }
    return withConnection("charts", c -> store.charts(c, window, queue, kind));
  }

  /**
   * Failed work now, counted per (queue, kind, reason), largest groups first, at most {@link
   * #MAX_FAILURE_GROUPS}. It reads failed work only (through a partial index), never the whole work
   * table. The reason is the recorded {@code last_error_kind}, which {@link
   * WorkFilter#errorKind(String)} filters on.
   */
  public List<FailureGroup> failureGroups() {
    return withConnection("failure groups", c -> store.failureGroups(c, MAX_FAILURE_GROUPS));
  }

  /**
   * Every kind's policy as the workers registered it (the {@code kind} table, with flow limits from
   * the {@code limiter} table), by kind. Kinds that no worker registered are absent: tools judge
   * them by {@link dev.relay.KindPolicy#DEFAULT}.
   */
  public List<RegisteredKind> kinds() {
    return withConnection("kinds", store::kinds);
  }

  /**
   * Each kind with flow limits (the {@code limiter} table), with its use of them now: live claims
   * against the global limit, the busiest groups against a per-group limit, and the claims inside
   * the rate window, in kind order, on one sample of the database clock. Reads the limiter table
   * and running work through an index, never the whole work table.
   */
  public List<LimitUse> limitUse() {
    return withConnection("limit use", store::limitUse);
  }

  /**
   * Recounts done and cancelled work per (queue, kind) into the summary that {@link #health} reads,
   * in one transaction (readers keep the previous counts until it commits; two refreshes take
   * turns). This one statement does read every done and cancelled row: {@link Maintenance}'s leader
   * runs it once per interval, so call it yourself only when no maintenance runs or a test needs
   * fresh counts.
   *
   * @return when the counts were taken (the database clock)
   */
  public Instant refreshSummary() {
    return withConnection("refresh summary", store::refreshSummary);
  }

  /**
   * The checks a redrive of {@code workId} would meet now, read without locking or changing
   * anything: its state, its first attempt and when its kind's deduplication horizon ends, and what
   * a plain redrive would be refused for. For showing before acting; {@link #redrive(String,
   * RedriveRequest)} checks again under a row lock.
   *
   * @throws WorkNotFoundException if no work has the ID
   */
  public RedrivePreview redrivePreview(String workId) {
    requireWorkId(workId);
    RedrivePreview p =
        withConnection("redrive preview " + workId, c -> store.redrivePreview(c, workId));
    if (p == null) {
      throw new WorkNotFoundException(workId);
    }
    return p;
  }

  /**
   * Work whose payload contains {@code json} (jsonb containment, {@code payload @> json}: {@code
   * {"customer": {"id": 42}}} finds every payload with that customer ID, whatever else it holds),
   * newest first. Bounded: it reads the newest items created within {@code filter}'s {@link
   * WorkFilter#newerThan} window (before its {@link WorkFilter#olderThan}, if set), at most {@link
   * #MAX_SEARCH_SCAN} of them whatever their kind, through the creation-time index, and then keeps
   * those of the filter's kind, queue and state whose payload matches. So a search never reads the
   * whole table; {@link PayloadSearch#capped()} says when older items of the window went unread.
   * Other criteria of the filter (key, error kind, outcome, blocked) are refused, not ignored.
   *
   * @param filter the window ({@code newerThan} required, at most 7 days) and optionally kind,
   *     queue, state and {@code olderThan}
   * @param json a JSON object or array (at most 10,000 characters)
   * @param limit most matches returned (1-1,000)
   * @throws InvalidAdminRequestException without a window, with a window over 7 days, with invalid
   *     JSON or another filter criterion; nothing is read
   */
  public PayloadSearch searchPayload(WorkFilter filter, String json, int limit) {
    Objects.requireNonNull(filter, "filter");
    if (filter.newerThan() == null) {
      throw new InvalidAdminRequestException(
          "filter",
          "a payload search needs a window (newer than): it reads the items created in it");
    }
    if (filter.newerThan().compareTo(MAX_SEARCH_WINDOW) > 0) {
      throw new InvalidAdminRequestException(
          "filter", "a payload search window is at most 7 days, was " + filter.newerThan());
    }
    if (filter.orderingKey() != null
        || filter.errorKind() != null
        || filter.outcome() != null
        || filter.blockedOnly()) {
      throw new InvalidAdminRequestException(
          "filter",
          "a payload search narrows by kind, queue, state and age only; remove the other criteria");
    }
    String j = json == null ? "" : json.strip();
    if (j.isEmpty()
        || j.length() > 10_000
        || !(j.startsWith("{") && j.endsWith("}") || j.startsWith("[") && j.endsWith("]"))) {
      throw new InvalidAdminRequestException(
          "json", "must be a JSON object or array of at most 10,000 characters");
    }
    if (limit < 1 || limit > MAX_PAGE_SIZE) {
      throw new InvalidAdminRequestException(
          "limit", "must be between 1 and " + MAX_PAGE_SIZE + ", was " + limit);
    }
    try {
      return withConnection(
          "search payloads", c -> store.searchPayload(c, filter, j, MAX_SEARCH_SCAN, limit));
    } catch (dev.relay.RelayException e) {
      if ("22P02".equals(e.sqlState())) { // invalid_text_representation: not valid JSON
        throw new InvalidAdminRequestException("json", "is not valid JSON: " + e.getMessage());
      }
      throw e;
    }
  }

  /** The widest window {@link #searchPayload} accepts. */
  private static final Duration MAX_SEARCH_WINDOW = Duration.ofDays(7);

  /**
   * One page of work matching {@code filter}, oldest first (creation time, then ID). Keyset
   * pagination: pages neither skip nor repeat items when work is added or removed meanwhile (items
   * created later than the cursor appear on later pages).
   *
   * @param filter which work ({@link WorkFilter#all()} for everything)
   * @param cursor {@code null} for the first page, else {@link WorkPage#nextCursor()}
   * @param limit items per page (1-1,000)
   * @throws InvalidAdminRequestException if the filter, the cursor ({@link #validateCursor}) or the
   *     limit is refused (nothing is sent)
   */
  public WorkPage list(WorkFilter filter, String cursor, int limit) {
    requireFilter(filter);
    requireLimit(limit, MAX_PAGE_SIZE);
    Cursor after = cursor == null ? null : Cursor.decode(cursor);
    return withConnection("list work", c -> store.list(c, filter, after, limit));
  }

  /**
   * Checks {@code cursor} as {@link #list} does, with no connection: {@code null} (the first page)
   * or the text of a {@link WorkPage#nextCursor()}. For a tool that takes a cursor from a person (a
   * command line, a link) and wants to refuse a mangled one before it opens a connection; whether
   * any work still follows the position is for {@link #list} to say.
   *
   * @throws InvalidAdminRequestException (field {@code cursor}) if it is not such a text
   */
  public static void validateCursor(String cursor) {
    if (cursor != null) {
      Cursor.decode(cursor);
    }
  }

  /** One item with its history and links, or empty when no work has the ID (or it was purged). */
  public Optional<WorkDetail> show(String workId) {
    requireWorkId(workId);
    return withConnection("show " + workId, c -> store.show(c, workId));
  }

  /**
   * What {@code workId} waits for ({@link Work#dependsOn}): each direct dependency with its state,
   * in ID order; empty when it waits for nothing or no work has the ID.
   */
  public List<Dependency> dependencies(String workId) {
    requireWorkId(workId);
    try (Connection c = dataSource.getConnection()) {
      return dependencyReader.dependencies(c, workId);
    } catch (SQLException e) {
      throw SqlErrors.translate("dependencies of " + workId, e);
    }
  }

  /**
   * What waits for {@code workId}: its direct dependents (work that named it in {@link
   * Work#dependsOn}), each with its state, in ID order, at most {@code limit} (1 to {@link
   * #MAX_PAGE_SIZE}); empty when nothing names it. Read through the dependency table's index on the
   * dependency.
   */
  public List<Dependency> dependents(String workId, int limit) {
    requireWorkId(workId);
    if (limit < 1 || limit > MAX_PAGE_SIZE) {
      throw new InvalidAdminRequestException(
          "limit", "must be between 1 and " + MAX_PAGE_SIZE + ", was " + limit);
    }
    try (Connection c = dataSource.getConnection()) {
      return dependencyReader.dependents(c, workId, limit);
    } catch (SQLException e) {
      throw SqlErrors.translate("dependents of " + workId, e);
    }
  }

  /**
   * Why {@code workId} is held beyond waiting: the nearest dependency, direct or through
   * dependencies still ready or running, that is failed, cancelled, superseded or gone; its {@link
   * Dependency#blockedReason()} is the reason ({@code dependency_failed}, ...). Empty when nothing
   * blocks it. Redriving that dependency releases the dependents once it is done; {@link #cancel}
   * ends a dependent instead.
   */
  public Optional<Dependency> blockedBy(String workId) {
    requireWorkId(workId);
    try (Connection c = dataSource.getConnection()) {
      return dependencyReader.blockedBy(c, workId);
    } catch (SQLException e) {
      throw SqlErrors.translate("blocking dependency of " + workId, e);
    }
  }

  /**
   * Puts failed work back to {@code ready}: same ID and payload, a new attempt budget (attempts
   * start again at zero), the claim generation keeps rising (the next claim takes a higher one, so
   * a late write of an old claim is still refused), claim fields cleared. Writes a redrive audit
   * row (actor, reason, time, previous state and generation, whether an override was needed).
   *
   * <p>Refused when the work is running (never overridable), when it is not failed (unless {@link
   * RedriveRequest#forced()}), and when its first attempt is older than its kind's deduplication
   * horizon from the {@code kind} table (unless {@link RedriveRequest#overridingHorizon()}): past
   * that horizon the receiver may apply the same ID twice. A kind no worker registered is judged by
   * {@link dev.relay.KindPolicy#DEFAULT_DEDUP_HORIZON}.
   *
   * @throws WorkNotFoundException if no work has the ID
   * @throws RedriveRefusedException if a check refused it (nothing changed)
   */
  public RedriveResult redrive(String workId, RedriveRequest request) {
    requireWorkId(workId);
    requireRequest(request);
    RedriveResult r = withConnection("redrive " + workId, c -> store.redrive(c, workId, request));
    if (r == null) {
      throw new WorkNotFoundException(workId);
    }
    if (!r.redriven()) {
      throw r.toException();
    }
    return r;
  }

  /**
   * Redrives up to {@code limit} items matching {@code filter}, oldest first, each in its own
   * transaction with the checks of {@link #redrive(String, RedriveRequest)}. Without force only
   * failed work is selected; running work is never selected. Refusals are reported per item, not
   * thrown.
   */
  public List<RedriveResult> redrive(WorkFilter filter, RedriveRequest request, int limit) {
    requireFilter(filter);
    requireRequest(request);
    requireLimit(limit, MAX_BATCH);
    List<String> states =
        request.force()
            ? sql(WorkState.READY, WorkState.DONE, WorkState.FAILED, WorkState.CANCELLED)
            : sql(WorkState.FAILED);
    List<String> ids = withConnection("select work", c -> store.select(c, filter, states, limit));
    return withConnection("redrive work", c -> store.redrive(c, ids, request, BULK_BATCH));
  }

  /**
   * Replaces work with a corrected intention, in one transaction: {@code replacement} is enqueued
   * under its own new ID, a {@code supersedes} row links it to the old work, and the old work is
   * cancelled as {@link #cancel(String, String, String)} does (ready: cancelled at once; running: a
   * cancel request, which its worker answers at its next renewal, and an in-flight call is not
   * recalled; failed: cancelled, its evidence kept; cancelled: left as it is). Repeating the same
   * supersede is recognised and changes nothing. Work has at most one replacement: a supersede of
   * work already superseded by another replacement is refused (supersede that replacement to
   * correct the intention again), also when two supersedes of the same work run at once.
   *
   * @throws WorkNotFoundException if the old work does not exist
   * @throws SupersedeRefusedException if the old work is done (its effect happened: correct it with
   *     a compensation, new work with its own identity), is already superseded by another
   *     replacement ({@link SupersedeRefusedException#replacementWorkId()} names it), or the
   *     replacement ID is used
   * @throws InvalidAdminRequestException if the replacement is null, has the old work's ID or
   *     depends on the old work (cancelled by the supersede, it would hold the replacement for
   *     good), or the actor or reason is empty or too long (nothing changes)
   * @throws dev.relay.InvalidWorkException if the replacement is invalid
   * @throws WorkConflictException if the replacement ID survives as a tombstone of other work
   */
  public SupersedeResult supersede(
      String oldWorkId, Work replacement, String actor, String reason) {
    requireWorkId(oldWorkId);
    if (replacement == null) {
      throw new InvalidAdminRequestException("replacement", "is null");
    }
    requireText("actor", actor, MAX_ACTOR_LENGTH);
    requireText("reason", reason, MAX_REASON_LENGTH);
    if (oldWorkId.equals(replacement.workId())) {
      throw new InvalidAdminRequestException(
          "replacement", "has the old work's ID; a corrected intention needs a new work ID");
    }
    if (replacement.dependsOn().contains(oldWorkId)) {
      throw new InvalidAdminRequestException(
          "replacement",
          "depends on the work it supersedes, which the supersede cancels: it could never run");
    }
    return withConnection(
        "supersede " + oldWorkId, c -> store.supersede(c, oldWorkId, replacement, actor, reason));
  }

  /**
   * Cancels one item exactly as {@link Relay#cancel} does, audited with {@code actor} and {@code
   * reason}: ready and failed work at once (a failed item holds its ordering key until then),
   * running work by request (an in-flight call is not recalled).
   */
  public CancelResult cancel(String workId, String actor, String reason) {
    requireWorkId(workId);
    requireText("actor", actor, MAX_ACTOR_LENGTH);
    requireText("reason", reason, MAX_REASON_LENGTH);
    return withConnection("cancel " + workId, c -> store.cancel(c, workId, actor, reason));
  }

  /**
   * Cancels {@code workId} as {@link #cancel(String, String, String)} does, then every dependent
   * that waits for it (ready), directly or through other waiting dependents, nearest first, at most
   * {@link #MAX_BATCH}: the cascading form for a dependency that will not be done. Each cancel is
   * its own transaction and audit row, with the same actor and reason. Returns the item's result
   * first, then each dependent's; a dependent enqueued while this runs is not included.
   */
  public List<CancelResult> cancelWithDependents(String workId, String actor, String reason) {
    requireWorkId(workId);
    requireText("actor", actor, MAX_ACTOR_LENGTH);
    requireText("reason", reason, MAX_REASON_LENGTH);
    List<CancelResult> results = new ArrayList<>();
    results.add(withConnection("cancel " + workId, c -> store.cancel(c, workId, actor, reason)));
    List<String> dependents;
    try (Connection c = dataSource.getConnection()) {
      dependents = dependencyReader.waitingDependents(c, workId, MAX_BATCH);
    } catch (SQLException e) {
      throw SqlErrors.translate("dependents of " + workId, e);
    }
    for (String id : dependents) {
      results.add(withConnection("cancel " + id, c -> store.cancel(c, id, actor, reason)));
    }
    return results;
  }

  /**
   * Cancels up to {@code limit} items that are ready, running or failed and match {@code filter},
   * oldest first, each in its own transaction as {@link #cancel(String, String, String)}.
   */
  public List<CancelResult> cancel(WorkFilter filter, String actor, String reason, int limit) {
    requireFilter(filter);
    requireText("actor", actor, MAX_ACTOR_LENGTH);
    requireText("reason", reason, MAX_REASON_LENGTH);
    requireLimit(limit, MAX_BATCH);
    List<String> ids =
        withConnection(
            "select work",
            c ->
                store.select(
                    c, filter, sql(WorkState.READY, WorkState.RUNNING, WorkState.FAILED), limit));
    return withConnection("cancel work", c -> store.cancel(c, ids, actor, reason, BULK_BATCH));
  }

  /**
   * Counts what a bulk {@code action} over {@code filter} would do now, without locking or changing
   * anything: per item the checks the action makes ({@link #redrive(String, RedriveRequest)}:
   * running, not failed unless {@code force}, past the kind's deduplication horizon; {@link
   * #cancel(String, String, String)}: ready and failed at once, running by request, ended refused;
   * {@link BulkAction#PURGE}: done and cancelled work that ended longer ago than its kind's
   * horizon, the rest refused). Reads the filter's items as the work list does, at most {@link
   * #MAX_BULK_PREVIEW} of them.
   *
   * @throws InvalidAdminRequestException for a bad filter (nothing is read)
   */
  public BulkPreview bulkPreview(WorkFilter filter, BulkAction action, boolean force) {
    requireFilter(filter);
    Objects.requireNonNull(action, "action");
    return withConnection(
        "bulk preview",
        c ->
            store.bulkPreview(
                c, filter, action, force && action == BulkAction.REDRIVE, MAX_BULK_PREVIEW));
  }

  /**
   * Stores a bulk action over {@code filter} in {@code bulk_operation} and returns it, running with
   * nothing done yet; {@link #runBulk} does the work. Every item matching the filter and created
   * before this call is handled once, oldest first, in batches of {@link #BULK_BATCH}: each batch
   * is one transaction that locks each item's row and checks it as the single-item action does (a
   * refusal is counted, not thrown), writes one audit row per item with {@code actor} and {@code
   * reason}, and moves the stored cursor and counts. Never overrides the deduplication horizon. A
   * purge ({@link BulkAction#PURGE}) leaves a tombstone per item exactly as the retention purge
   * does, with a {@code purge_item_audit} row per item; it needs the operator role's right to
   * delete work, as {@link Maintenance} does.
   *
   * @param force for a redrive, also redrive work that is not failed (never running work)
   * @throws InvalidAdminRequestException for a bad filter, an empty or too long actor or reason
   *     (nothing is stored)
   */
  public BulkProgress startBulk(
      WorkFilter filter, BulkAction action, boolean force, String actor, String reason) {
    requireFilter(filter);
    Objects.requireNonNull(action, "action");
    requireText("actor", actor, MAX_ACTOR_LENGTH);
    requireText("reason", reason, MAX_REASON_LENGTH);
    return withConnection(
        "start bulk",
        c ->
            store.startBulk(
                c, filter, action, force && action == BulkAction.REDRIVE, actor, reason));
  }

  /**
   * Runs bulk action {@code id} to its end, batch after batch (see {@link #startBulk}), and returns
   * it as it ended. Safe to call again at any time: after a crash (each batch committed its items
   * with its progress, so it continues after the last committed item), and while another call runs
   * it (batches lock the bulk action's row and take turns; a call that waited past the lock timeout
   * for another call's batch, on a slow or loaded server, reads the action again and goes on). An
   * action already ended is returned as it is.
   *
   * @throws InvalidAdminRequestException if no bulk action has the ID
   * @throws RetryableException if the action's row stayed locked for two lock timeouts in a row
   *     with no batch committed meanwhile (held by something other than a runner making progress)
   */
  public BulkProgress runBulk(long id) {
    BulkProgress p = bulk(id).orElseThrow(() -> noBulk(id));
    boolean waitedWithoutProgress = false;
    while (p.running()) {
      try {
        p = withConnection("bulk batch", c -> store.runBulkBatch(c, id, BULK_BATCH));
        waitedWithoutProgress = false;
      } catch (RetryableException e) {
        if (!LOCK_TIMEOUT.equals(e.sqlState())) {
          throw e;
        }
        // Something held the bulk row past the lock timeout: nothing of ours was written (the
        // batch is one transaction). Another runner's batch commits in the end, so read where
        // the action stands and go on; twice in a row with no progress is not such a batch.
        BulkProgress now = bulk(id).orElseThrow(() -> noBulk(id));
        boolean progressed = !now.equals(p);
        if (!progressed && waitedWithoutProgress) {
          throw e;
        }
        waitedWithoutProgress = !progressed;
        p = now;
      }
    }
    return p;
  }

  private static final String LOCK_TIMEOUT = "55P03";

  /** Bulk action {@code id} as stored now, or empty. */
  public Optional<BulkProgress> bulk(long id) {
    return Optional.ofNullable(withConnection("bulk " + id, c -> store.bulk(c, id)));
  }

  /** The newest bulk actions, newest first, at most {@code limit} (1 to {@link #MAX_PAGE_SIZE}). */
  public List<BulkProgress> bulks(int limit) {
    requireLimit(limit, MAX_PAGE_SIZE);
    return withConnection("bulk actions", c -> store.bulks(c, limit));
  }

  private static InvalidAdminRequestException noBulk(long id) {
    return new InvalidAdminRequestException("id", "no bulk action has ID " + id);
  }

  /**
   * Pauses work across every worker: items of {@code queue} and {@code kind} ({@code null} for
   * every queue or every kind, not both) are not claimed until {@link #resume} or until {@code
   * resumeAt} passes on the database clock. The test is part of the claim statement, so it holds
   * for every worker of this release at once, without restarting them. Running work finishes (a
   * pause recalls nothing), new work is still accepted, and delayed and retried work keeps its
   * times: it becomes claimable at its time or at the resume, whichever is later. Pausing a target
   * already paused replaces the actor, reason and automatic resume and keeps the start. Stored with
   * who, why and when, and audited in {@code pause_audit}.
   *
   * <p>What holds: the pause locks the pause table exclusively, which waits for every claim in
   * flight to commit, so once this call returns no claim of the paused work is made. Work claimed
   * before it (in a worker's buffer, or running) still runs. Workers of a release before the pause
   * table existed do not read it.
   *
   * @param queue the queue, or {@code null} for every queue
   * @param kind the kind, or {@code null} for every kind
   * @param resumeAt when the pause ends by itself, or {@code null} for never; must be after the
   *     database clock's now
   * @return the pause as stored
   * @throws InvalidAdminRequestException if both queue and kind are null, a name is one no work can
   *     have ({@link Outbox#nameProblem}: a pause of {@code "mail "} would hold nothing), the actor
   *     or reason is empty or too long, or {@code resumeAt} is not in the future (nothing changes)
   */
  public Pause pause(String queue, String kind, String actor, String reason, Instant resumeAt) {
    requireTarget(queue, kind);
    requireWorkName("queue", queue);
    requireWorkName("kind", kind);
    requireText("actor", actor, MAX_ACTOR_LENGTH);
    requireText("reason", reason, MAX_REASON_LENGTH);
    return withConnection("pause", c -> store.pause(c, queue, kind, actor, reason, resumeAt));
  }

  /**
   * Lifts the pause of exactly this target (the same queue and kind as paused; a pause of a queue
   * is not lifted by resuming one of its kinds) and wakes the workers with the notification that a
   * new item sends, so the held work is claimed at once. Audited whether or not a pause was in
   * force.
   *
   * @return the pause lifted, or empty when none was in force for this target
   * @throws InvalidAdminRequestException if both queue and kind are null, a name is blank or too
   *     long, or the actor or reason is empty or too long (nothing changes). Unlike {@link #pause},
   *     any other name is taken, so that a pause stored before names were checked can be lifted.
   */
  public Optional<Pause> resume(String queue, String kind, String actor, String reason) {
    requireTarget(queue, kind);
    requireText("actor", actor, MAX_ACTOR_LENGTH);
    requireText("reason", reason, MAX_REASON_LENGTH);
    return withConnection("resume", c -> store.resume(c, queue, kind, actor, reason));
  }

  /**
   * The pauses in force now (on the database clock), every-queue and every-kind ones first, then by
   * queue and kind. A pause whose automatic resume has passed holds nothing and is not listed.
   */
  public List<Pause> pauses() {
    return withConnection("list pauses", store::pauses);
  }

  /**
   * The newest rows of the pause audit, newest first: every pause and resume with who, why and
   * when, and each automatic resume the maintenance leader recorded. Read through the audit's index
   * on its time.
   *
   * @param limit most rows returned (1 to {@link #MAX_PAGE_SIZE})
   */
  public List<PauseEvent> pauseHistory(int limit) {
    requireLimit(limit, MAX_PAGE_SIZE);
    return withConnection("pause history", c -> store.pauseHistory(c, limit));
  }

  /**
   * Applies {@code policy}: purges done and cancelled work past its retention and its kind's
   * deduplication horizon (never failed work), leaving one tombstone per item; purges tombstones
   * past the identity horizon and history and audit rows past their retention. Works in batches of
   * {@link PurgePolicy#batchSize()} rows, each its own short transaction, locking only rows no one
   * else holds. Finished work in the history table goes a whole day at a time, each day one short
   * transaction that writes its tombstones and drops its partition, once the day ended more than
   * the longest of the retention and every deduplication horizon ago ({@link PurgePolicy}); days
   * whose rows wait in the default partition first get their partition. With {@code dryRun}, counts
   * what is eligible now and changes nothing.
   *
   * <p>Not audited: this is the form {@link Maintenance} runs on its interval (it logs what it
   * purged). An operator's purge should use {@link #purge(PurgePolicy, boolean, String, String)}.
   *
   * @see PurgePolicy
   */
  public PurgeResult purge(PurgePolicy policy, boolean dryRun) {
    requirePolicy(policy);
    return withConnection("purge", c -> store.purge(c, policy, dryRun));
  }

  /**
   * Purges (or dry-runs) as {@link #purge(PurgePolicy, boolean)}, then records a row in the purge
   * audit: {@code actor}, {@code reason}, the time, whether it was a dry run, the policy and the
   * counts. The audit row is written after the batches (each of which commits on its own); rows of
   * the purge audit are themselves purged after the policy's history retention.
   *
   * @throws InvalidAdminRequestException if the actor or reason is empty or too long (nothing is
   *     purged)
   */
  public PurgeResult purge(PurgePolicy policy, boolean dryRun, String actor, String reason) {
    requirePolicy(policy);
    requireText("actor", actor, MAX_ACTOR_LENGTH);
    requireText("reason", reason, MAX_REASON_LENGTH);
    return withConnection("purge", c -> store.purge(c, policy, dryRun, actor, reason));
  }

  static void requirePolicy(PurgePolicy p) {
    if (p == null) {
      throw new InvalidAdminRequestException("policy", "is null");
    }
    Duration min = PurgePolicy.MIN_RETENTION;
    Duration max = PurgePolicy.MAX_RETENTION;
    requireDuration("workRetention", p.workRetention(), min, max);
    requireDuration("historyRetention", p.historyRetention(), min, max);
    requireDuration("identityHorizon", p.identityHorizon(), min, max);
    if (p.batchSize() < 1 || p.batchSize() > PurgePolicy.MAX_BATCH_SIZE) {
      throw new InvalidAdminRequestException(
          "batchSize",
          "must be between 1 and " + PurgePolicy.MAX_BATCH_SIZE + ", was " + p.batchSize());
    }
    if (p.maxBatches() < 1 || p.maxBatches() > PurgePolicy.MAX_BATCHES) {
      throw new InvalidAdminRequestException(
          "maxBatches",
          "must be between 1 and " + PurgePolicy.MAX_BATCHES + ", was " + p.maxBatches());
    }
  }

  private <T> T withConnection(String what, Function<Connection, T> body) {
    try (Connection c = dataSource.getConnection()) {
      return body.apply(c);
    } catch (SQLException e) {
      throw SqlErrors.translate(what, e);
    }
  }

  private static List<String> sql(WorkState... states) {
    return Stream.of(states).map(WorkState::sql).toList();
  }

  private static void requireRequest(RedriveRequest r) {
    if (r == null) {
      throw new InvalidAdminRequestException("request", "is null");
    }
    requireText("actor", r.actor(), MAX_ACTOR_LENGTH);
    requireText("reason", r.reason(), MAX_REASON_LENGTH);
  }

  private static void requireWorkId(String workId) {
    requireText("workId", workId, Outbox.MAX_WORK_ID_LENGTH);
  }

  private static void requireText(String field, String value, int max) {
    if (value == null || value.isBlank()) {
      throw new InvalidAdminRequestException(field, "is empty");
    }
    if (value.length() > max) {
      throw new InvalidAdminRequestException(
          field, "has " + value.length() + " characters; the limit is " + max);
    }
  }

  private static void requireTarget(String queue, String kind) {
    if (queue == null && kind == null) {
      throw new InvalidAdminRequestException(
          "queue and kind", "are both null; name a queue, a kind, or both");
    }
    if (queue != null) {
      requireText("queue", queue, Outbox.MAX_NAME_LENGTH);
    }
    if (kind != null) {
      requireText("kind", kind, Outbox.MAX_NAME_LENGTH);
    }
  }

  /** A name work can have, or null (every queue or kind). */
  private static void requireWorkName(String field, String name) {
    String problem = name == null ? null : Outbox.nameProblem(name);
    if (problem != null) {
      throw new InvalidAdminRequestException(field, problem);
    }
  }

  private static void requireLimit(int limit, int max) {
    if (limit < 1 || limit > max) {
      throw new InvalidAdminRequestException(
          "limit", "must be between 1 and " + max + ", was " + limit);
    }
  }

  private static void requireDuration(String field, Duration d, Duration min, Duration max) {
    if (d == null || d.compareTo(min) < 0 || d.compareTo(max) > 0) {
      throw new InvalidAdminRequestException(
          field, "must be between " + min + " and " + max + ", was " + d);
    }
  }

  private static void requireFilter(WorkFilter f) {
    if (f == null) {
      throw new InvalidAdminRequestException("filter", "is null (use WorkFilter.all())");
    }
    if (f.state() != null && !WorkFilter.STATES.contains(f.state())) {
      throw new InvalidAdminRequestException(
          "filter.state", "'" + f.state() + "' is not one of " + WorkFilter.STATES);
    }
    if (f.outcome() != null && !WorkFilter.OUTCOMES.contains(f.outcome())) {
      throw new InvalidAdminRequestException(
          "filter.outcome", "'" + f.outcome() + "' is not one of " + WorkFilter.OUTCOMES);
    }
    if (f.blockedReason() != null && !WorkFilter.BLOCKED_REASONS.contains(f.blockedReason())) {
      throw new InvalidAdminRequestException(
          "filter.blockedReason",
          "'" + f.blockedReason() + "' is not one of " + WorkFilter.BLOCKED_REASONS);
    }
    for (Duration d : new Duration[] {f.olderThan(), f.newerThan()}) {
      if (d != null && (d.isNegative() || d.compareTo(WorkFilter.MAX_AGE) > 0)) {
        throw new InvalidAdminRequestException(
            "filter age", "must be between zero and 100 years, was " + d);
      }
    }
  }
}
