package dev.relay.internal.admin;

import dev.relay.CancelResult;
import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.admin.BulkAction;
import dev.relay.admin.BulkPreview;
import dev.relay.admin.BulkProgress;
import dev.relay.admin.ChartWindow;
import dev.relay.admin.Charts;
import dev.relay.admin.CompletionMinute;
import dev.relay.admin.FailureGroup;
import dev.relay.admin.LimitUse;
import dev.relay.admin.Pause;
import dev.relay.admin.PauseEvent;
import dev.relay.admin.PayloadSearch;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.PurgeResult;
import dev.relay.admin.QueueHealth;
import dev.relay.admin.RedrivePreview;
import dev.relay.admin.RedriveRequest;
import dev.relay.admin.RedriveResult;
import dev.relay.admin.RegisteredKind;
import dev.relay.admin.SupersedeResult;
import dev.relay.admin.WorkDetail;
import dev.relay.admin.WorkFilter;
import dev.relay.admin.WorkPage;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.store.WorkStore;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * The admin operations on one connection each; {@link dev.relay.admin.Admin} validates the input
 * and hands over a connection. Every write is one short transaction of its own. Each operation
 * lives in a class of its own ({@link HealthQueries}, {@link WorkQueries}, {@link
 * RedriveOperation}, {@link SupersedeOperation}, {@link Retention}, {@link PauseOperation}); this
 * class hands each call to it.
 */
public final class AdminStore {
  private final SchemaName schema;
  private final Timeouts timeouts;
  private final AdminSql sql;
  private final WorkStore store;
  private final HealthQueries health;
  private final WorkQueries queries;
  private final RedriveOperation redrive;
  private final SupersedeOperation supersede;
  private final Retention retention;
  private final OverviewQueries overview;
  private final PauseOperation pauses;
  private final BulkOperations bulk;
  private final RollupFold rollup;

  /** A store for {@code schema}. */
  public AdminStore(SchemaName schema, Timeouts timeouts) {
    this.schema = schema;
    this.timeouts = timeouts;
    this.sql = AdminSql.of(schema);
    this.store = new WorkStore(schema, timeouts);
    Outbox outbox = Outbox.builder().schema(schema.sql()).build();
    this.pauses = new PauseOperation(schema, timeouts);
    this.health = new HealthQueries(sql, RollupSql.of(schema), timeouts, pauses);
    this.queries = new WorkQueries(sql, timeouts);
    this.redrive = new RedriveOperation(sql, timeouts, schema);
    this.supersede = new SupersedeOperation(sql, timeouts, store, outbox);
    this.retention = new Retention(sql, new HistoryDays(schema, timeouts), timeouts);
    this.overview = new OverviewQueries(sql, RollupSql.of(schema), timeouts);
    this.bulk = new BulkOperations(sql, timeouts, redrive, store);
    this.rollup =
        new RollupFold(schema, timeouts, RollupFold.DEFAULT_LAG, RollupFold.DEFAULT_BATCH);
  }

  /** The schema name. */
  public SchemaName schema() {
    return schema;
  }

  /** Health per (queue, kind), measured at one instant of the database clock. */
  public List<QueueHealth> health(Connection c, Duration window) {
    return health.health(c, window);
  }

  /** Recounts done and cancelled work into the summary; returns when the counts were taken. */
  public Instant refreshSummary(Connection c) {
    return health.refreshSummary(c);
  }

  /**
   * Folds work finished since the rollup's watermark into it, at most {@code maxBatches} bounded
   * transactions, then drops buckets past their keep; see {@link RollupFold}.
   */
  public RollupFold.Folded foldRollup(Connection c, int maxBatches) {
    return rollup.fold(c, maxBatches);
  }

  /** The charts of a window from the rollup; see {@link RollupFold#read}. */
  public Charts charts(Connection c, ChartWindow window, String queue, String kind) {
    return rollup.read(c, window, queue, kind);
  }

  /** Work done and failed per minute of the window, every minute listed, oldest first. */
  public List<CompletionMinute> completionsPerMinute(Connection c, Duration window) {
    return overview.completionsPerMinute(c, window);
  }

  /** Failed work counted per (queue, kind, reason), largest first, at most {@code limit}. */
  public List<FailureGroup> failureGroups(Connection c, int limit) {
    return overview.failureGroups(c, limit);
  }

  /** Every registered kind's policy, by kind. */
  public List<RegisteredKind> kinds(Connection c) {
    return overview.kinds(c);
  }

  /** Each limited kind's use of its limits now. */
  public List<LimitUse> limitUse(Connection c) {
    return overview.limitUse(c);
  }

  /** The redrive checks without the lock, or {@code null} when no row has the ID. */
  public RedrivePreview redrivePreview(Connection c, String workId) {
    return redrive.preview(c, workId);
  }

  /** A bounded payload search; see {@link WorkQueries#searchPayload}. */
  public PayloadSearch searchPayload(
      Connection c, WorkFilter filter, String json, int scanCap, int limit) {
    return queries.searchPayload(c, filter, json, scanCap, limit);
  }

  /** One page after {@code after} (or from the start when {@code null}). */
  public WorkPage list(Connection c, WorkFilter filter, Cursor after, int limit) {
    return queries.list(c, filter, after, limit);
  }

  /**
   * The IDs matching {@code filter} in one of {@code states}, oldest first, at most {@code limit}.
   */
  public List<String> select(Connection c, WorkFilter filter, List<String> states, int limit) {
    return queries.select(c, filter, states, limit);
  }

  /** One item with its history, or empty when no row has the ID. */
  public Optional<WorkDetail> show(Connection c, String workId) {
    return queries.show(c, workId);
  }

  /** Redrives one item; see {@link RedriveOperation#redrive}. */
  public RedriveResult redrive(Connection c, String workId, RedriveRequest r) {
    return redrive.redrive(c, workId, r);
  }

  /** Redrives {@code ids} in batches, each one transaction; see {@link BulkOperations}. */
  public List<RedriveResult> redrive(Connection c, List<String> ids, RedriveRequest r, int batch) {
    return bulk.redrive(c, ids, r, batch);
  }

  /** Cancels {@code ids} in batches, each one transaction; see {@link BulkOperations}. */
  public List<CancelResult> cancel(
      Connection c, List<String> ids, String actor, String reason, int batch) {
    return bulk.cancel(c, ids, actor, reason, batch);
  }

  /** Counts what a bulk action would do now; see {@link BulkOperations#preview}. */
  public BulkPreview bulkPreview(
      Connection c, WorkFilter filter, BulkAction action, boolean force, int cap) {
    return bulk.preview(c, filter, action, force, cap);
  }

  /** Stores a new bulk action; see {@link BulkOperations#start}. */
  public BulkProgress startBulk(
      Connection c,
      WorkFilter filter,
      BulkAction action,
      boolean force,
      String actor,
      String reason) {
    return bulk.start(c, filter, action, force, actor, reason);
  }

  /** Runs a bulk action's next batch; see {@link BulkOperations#runBatch}. */
  public BulkProgress runBulkBatch(Connection c, long id, int batch) {
    return bulk.runBatch(c, id, batch);
  }

  /** A bulk action, or {@code null}. */
  public BulkProgress bulk(Connection c, long id) {
    return bulk.get(c, id);
  }

  /** The newest bulk actions. */
  public List<BulkProgress> bulks(Connection c, int limit) {
    return bulk.recent(c, limit);
  }

  /** Supersedes one item; see {@link SupersedeOperation#supersede}. */
  public SupersedeResult supersede(
      Connection c, String oldWorkId, Work replacement, String actor, String reason) {
    return supersede.supersede(c, oldWorkId, replacement, actor, reason);
  }

  /** Runs (or counts, for a dry run) every retention step in bounded batches. */
  public PurgeResult purge(Connection c, PurgePolicy p, boolean dryRun) {
    return retention.purge(c, p, dryRun);
  }

  /** Runs (or counts) a purge like {@link #purge}, then records who asked and why. */
  public PurgeResult purge(
      Connection c, PurgePolicy p, boolean dryRun, String actor, String reason) {
    PurgeResult r = retention.purge(c, p, dryRun);
    retention.audit(c, p, r, actor, reason);
    return r;
  }

  /** Cancels one item with the runtime's cancel; see {@link WorkStore#cancel}. */
  public CancelResult cancel(Connection c, String workId, String actor, String reason) {
    WorkStore.CancelRow row = store.cancel(c, workId, actor, reason);
    return new CancelResult(workId, cancelStatus(row.result()), row.fromState());
  }

  /** Pauses a target; see {@link PauseOperation#pause}. */
  public Pause pause(
      Connection c, String queue, String kind, String actor, String reason, Instant resumeAt) {
    return pauses.pause(c, queue, kind, actor, reason, resumeAt);
  }

  /** Resumes a target; see {@link PauseOperation#resume}. */
  public Optional<Pause> resume(
      Connection c, String queue, String kind, String actor, String reason) {
    return pauses.resume(c, queue, kind, actor, reason);
  }

  /** The pauses in force, by queue then kind. */
  public List<Pause> pauses(Connection c) {
    return pauses.active(c);
  }

  /** The newest pause audit rows, newest first. */
  public List<PauseEvent> pauseHistory(Connection c, int limit) {
    return pauses.history(c, limit);
  }

  /** Removes expired pauses (audited) and wakes the workers; returns how many. */
  public int expirePauses(Connection c) {
    return pauses.expire(c);
  }

  /** Maps the store's cancel result to the public status. */
  public static CancelResult.Status cancelStatus(String result) {
    switch (result) {
      case "cancelled":
        return CancelResult.Status.CANCELLED;
      case "cancel_requested":
        return CancelResult.Status.CANCEL_REQUESTED;
      case "already_finished":
        return CancelResult.Status.ALREADY_FINISHED;
      default:
        return CancelResult.Status.NOT_FOUND;
    }
  }
}
