package dev.relay.internal.store;

import dev.relay.CommitOutcomeUnknownException;
import dev.relay.FlowLimits;
import dev.relay.KindPolicy;
import dev.relay.WorkState;
import dev.relay.internal.jdbc.BoundText;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The storage operations of the claim protocol, used by the worker runtime. Each operation is one
 * short transaction of its own on the given connection (which must be in auto-commit mode) and
 * returns a result value; a stale claim is reported per row, never thrown.
 *
 * <p>Every write after a claim locks its rows first (in work-ID order) and only then, in a later
 * statement, samples the database clock and checks state, owner, generation and lease. See {@link
 * WorkSql} for why one statement is not enough.
 *
 * <p>A {@link dev.relay.CommitOutcomeUnknownException} from {@link #claim} means the claim may have
 * committed: call {@link #recover} on a new connection before running anything.
 */
public final class WorkStore {
  private final WorkSql sql;
  private final Timeouts timeouts;

  /** A store for {@code schema} whose transactions use {@code timeouts}. */
  public WorkStore(SchemaName schema, Timeouts timeouts) {
    this.sql = WorkSql.of(schema);
    this.timeouts = timeouts;
  }

  /**
   * Claims up to {@code request.limit()} eligible rows; see {@link ClaimBatch}. Kinds with a
   * limiter row are claimed under its lock within their limits (an extra round trip); see {@link
   * #claim(Connection, ClaimRequest, boolean)}.
   */
  public ClaimBatch claim(Connection c, ClaimRequest request) {
    return claim(c, request, true);
  }

  /**
   * Claims up to {@code request.limit()} eligible rows; see {@link ClaimBatch}.
   *
   * @param checkLimits whether some requested kinds may be limited: then their limiter rows are
   *     locked first and those kinds are claimed within their limits, the others by the ordinary
   *     claim for the rest of the limit. Without it only the ordinary claim runs, which never takes
   *     a kind that has a limiter row (so a worker that does not know of a new limit delays that
   *     kind's work, never exceeds the limit).
   */
  public ClaimBatch claim(Connection c, ClaimRequest request, boolean checkLimits) {
    ClaimBatch[] returned = new ClaimBatch[1];
    try {
      return Tx.runTimeoutsInBody(
          c, "claim", tx -> returned[0] = claimRows(tx, request, checkLimits));
    } catch (CommitOutcomeUnknownException e) {
      if (returned[0] == null) {
        throw e;
      }
      throw new UncertainClaimException(returned[0], e);
    }
  }

  /** Which of {@code kinds} have a limiter row now. */
  public Set<String> limitedKinds(Connection c, List<String> kinds) {
    return Tx.run(
        c,
        timeouts,
        "read limited kinds",
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.limitedKinds)) {
            ps.setArray(1, tx.createArrayOf("text", kinds.toArray()));
            return kindsOf(ps);
          }
        });
  }

  private static Set<String> kindsOf(PreparedStatement ps) throws SQLException {
    Set<String> kinds = new TreeSet<>();
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        kinds.add(rs.getString(1));
      }
    }
    return kinds;
  }

  private ClaimBatch claimRows(Connection tx, ClaimRequest request, boolean checkLimits)
      throws SQLException {
    List<ClaimedWork> claimed = new ArrayList<>();
    List<RetiredWork> retired = new ArrayList<>();
    List<String> unlimited = request.kinds();
    boolean timeoutsSent = false; // the first statement carries them (Tx.runTimeoutsInBody)
    if (checkLimits) {
      Set<String> limited = new TreeSet<>();
      try (PreparedStatement ps =
          tx.prepareStatement(Tx.withTimeouts(timeouts, sql.lockLimiters))) {
        ps.setArray(1, tx.createArrayOf("text", request.kinds().toArray()));
        try (ResultSet rs = Tx.firstResult(ps)) {
          while (rs.next()) {
            limited.add(rs.getString(1));
          }
        }
      }
      timeoutsSent = true;
      if (!limited.isEmpty()) {
        boolean oneQueue = request.queues().size() == 1;
        try (PreparedStatement ps =
            tx.prepareStatement(oneQueue ? sql.claimLimited : sql.claimLimitedQueues)) {
          ps.setArray(1, tx.createArrayOf("text", limited.toArray()));
          if (oneQueue) {
            ps.setString(2, request.queues().get(0));
          } else {
            ps.setArray(2, tx.createArrayOf("text", request.queues().toArray()));
          }
          ps.setArray(3, tx.createArrayOf("text", limited.toArray()));
          int i = 4;
          ps.setInt(i++, request.limit());
          if (!oneQueue) {
            ps.setInt(i++, request.limit()); // each queue's pool, and the pool of them all
          }
          ps.setString(i++, request.workerId());
          ps.setLong(i++, request.lease().toMillis());
          ps.setString(i, request.workerId()); // the history row of work past its horizon
          try (ResultSet rs = ps.executeQuery()) {
            readClaims(rs, claimed, retired);
          }
        }
        unlimited = request.kinds().stream().filter(k -> !limited.contains(k)).toList();
      }
    }
    int left = request.limit() - claimed.size() - retired.size();
    ClaimPosition last = null;
    if (left > 0 && !unlimited.isEmpty()) {
      last = claimUnlimited(tx, request, unlimited, left, claimed, retired, !timeoutsSent);
    } else if (!timeoutsSent) {
      try (Statement st = tx.createStatement()) {
        st.execute(timeouts.setLocalSql()); // nothing to claim; the transaction stays bounded
      }
    }
    claimed.sort(Comparator.comparing(ClaimedWork::workId));
    return new ClaimBatch(claimed, retired, last);
  }

  private ClaimPosition claimUnlimited(
      Connection tx,
      ClaimRequest request,
      List<String> kinds,
      int limit,
      List<ClaimedWork> claimed,
      List<RetiredWork> retired,
      boolean withTimeouts)
      throws SQLException {
    boolean oneQueue = request.queues().size() == 1;
    ClaimPosition after = request.resumeAfter();
    String text =
        oneQueue
            ? (after != null ? sql.claimBatchResume : sql.claimBatch)
            : (after != null ? sql.claimBatchQueuesResume : sql.claimBatchQueues);
    try (PreparedStatement ps =
        tx.prepareStatement(withTimeouts ? Tx.withTimeouts(timeouts, text) : text)) {
      int i = 1;
      if (oneQueue) {
        ps.setString(i++, request.queues().get(0));
      } else {
        ps.setArray(i++, tx.createArrayOf("text", request.queues().toArray()));
      }
      if (after != null) {
        ps.setInt(i++, after.priority());
        ps.setObject(i++, after.availableAt());
        ps.setString(i++, after.workId());
      }
      ps.setArray(i++, tx.createArrayOf("text", kinds.toArray()));
      ps.setInt(i++, limit);
      if (!oneQueue) {
        ps.setInt(i++, limit); // each queue's scan takes at most the batch, and so does the claim
      }
      ps.setString(i++, request.workerId());
      ps.setLong(i++, request.lease().toMillis());
      ps.setString(i, request.workerId()); // the history row of work past its horizon
      try (ResultSet rs = withTimeouts ? Tx.firstResult(ps) : ps.executeQuery()) {
        return readClaims(rs, claimed, retired);
      }
    }
  }

  /** Reads a claim statement's rows; returns the last in claim order, or null when none. */
  private static ClaimPosition readClaims(
      ResultSet rs, List<ClaimedWork> claimed, List<RetiredWork> retired) throws SQLException {
    ClaimPosition last = null;
    while (rs.next()) {
      // rows come in claim order (the statement sorts them): the last one read is the last
      last =
          new ClaimPosition(
              rs.getInt("priority"),
              rs.getObject("available_at", OffsetDateTime.class),
              rs.getString("work_id"));
      boolean afterExpiry = WorkState.RUNNING.sql().equals(rs.getString("prev_state"));
      String decision = rs.getString("decision");
      if (decision.equals("claim")) {
        claimed.add(claimedWork(rs, afterExpiry, afterExpiry ? rs.getString("prev_owner") : null));
      } else {
        retired.add(
            new RetiredWork(
                rs.getString("work_id"),
                rs.getString("kind"),
                rs.getString("queue"),
                rs.getString("state"),
                decision,
                afterExpiry));
      }
    }
    return last;
  }

  /**
   * Extends the leases of this worker's live claims by {@code lease} from now on the database
   * clock. Per claim: applied (with the new deadline and whether cancellation was requested) or
   * stale.
   */
  public List<WriteResult> renew(
      Connection c, String workerId, List<ClaimRef> claims, Duration lease) {
    if (claims.isEmpty()) {
      return List.of();
    }
    List<ClaimRef> sorted = sortedDistinct(claims);
    Map<String, ClaimRef> byId = new HashMap<>();
    sorted.forEach(r -> byId.put(r.workId(), r));
    return Tx.run(
        c,
        timeouts,
        "renew",
        tx -> {
          lock(tx, sorted);
          Map<String, WriteResult> renewed = new HashMap<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.renewIfOwned)) {
            ps.setArray(1, tx.createArrayOf("text", ids(sorted)));
            ps.setArray(2, tx.createArrayOf("int8", generations(sorted)));
            ps.setString(3, workerId);
            ps.setLong(4, lease.toMillis());
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                String id = rs.getString("work_id");
                renewed.put(
                    id,
                    new WriteResult(
                        byId.get(id),
                        true,
                        instant(rs, "lease_until"),
                        rs.getBoolean("cancel_requested")));
              }
            }
          }
          List<WriteResult> results = new ArrayList<>();
          for (ClaimRef ref : claims) {
            WriteResult r = renewed.get(ref.workId());
            results.add(r != null ? r : new WriteResult(ref, false, null, false));
          }
          return results;
        });
  }

  /**
   * Ends claims with their settlements in one transaction, the guard applied per row. Results are
   * in the order given; a stale one is recorded in the attempt history and changes nothing else.
   */
  public List<WriteResult> settle(Connection c, String workerId, List<Settlement> settlements) {
    if (settlements.isEmpty()) {
      return List.of();
    }
    Set<String> seen = new HashSet<>();
    for (Settlement s : settlements) {
      if (!seen.add(s.ref().workId())) {
        throw new IllegalArgumentException("one batch settles " + s.ref().workId() + " twice");
      }
    }
    List<Settlement> sorted = new ArrayList<>(settlements);
    sorted.sort(Comparator.comparing(s -> s.ref().workId()));
    List<ClaimRef> refs = sorted.stream().map(Settlement::ref).toList();
    Map<String, String> applied =
        Tx.runTimeoutsInBody(c, "settle", tx -> settleLocked(tx, workerId, sorted, refs));
    List<WriteResult> results = new ArrayList<>();
    for (Settlement s : settlements) {
      String recorded = applied.get(s.ref().workId());
      results.add(new WriteResult(s.ref(), recorded != null, null, false, recorded));
    }
    return results;
  }

  /** Records done for one claim; see {@link #settle}. */
  public WriteResult complete(
      Connection c,
      String workerId,
      ClaimRef ref,
      String receiverRef,
      String result,
      String milestone) {
    return settle(
            c, workerId, List.of(new Settlement.Complete(ref, receiverRef, result, milestone)))
        .get(0);
  }

  /** Schedules a retry of one claim; see {@link #settle}. */
  public WriteResult retry(
      Connection c,
      String workerId,
      ClaimRef ref,
      Duration delay,
      String errorKind,
      String error,
      Settlement.Evidence evidence) {
    return settle(
            c, workerId, List.of(new Settlement.Retry(ref, delay, errorKind, error, evidence)))
        .get(0);
  }

  /** Fails one claim permanently; see {@link #settle}. */
  public WriteResult fail(
      Connection c,
      String workerId,
      ClaimRef ref,
      String errorKind,
      String error,
      Settlement.Evidence evidence) {
    return settle(c, workerId, List.of(new Settlement.Fail(ref, errorKind, error, evidence)))
        .get(0);
  }

  /**
   * Releases claims whose handlers never started, for another worker at once; see {@link #settle}.
   */
  public List<WriteResult> release(Connection c, String workerId, List<ClaimRef> refs) {
    return settle(c, workerId, refs.stream().<Settlement>map(Settlement.Release::new).toList());
  }

  /** Records that one claim answered a cancel request; see {@link #settle}. */
  public WriteResult recordCancelled(
      Connection c, String workerId, ClaimRef ref, String reason, Settlement.Evidence evidence) {
    return settle(c, workerId, List.of(new Settlement.Cancelled(ref, reason, evidence))).get(0);
  }

  /**
   * This worker's live claims (running, owned by {@code workerId}, lease unexpired), read from the
   * stored rows. Sound only while a worker ID names one process: a previous process that used the
   * same ID and died with live leases would have its claims returned too. The runtime therefore
   * recovers from an uncertain claim by the rows that claim returned ({@link
   * UncertainClaimException}); this is for tools and tests that own their IDs.
   */
  public List<ClaimedWork> recover(Connection c, String workerId) {
    return Tx.run(
        c,
        timeouts,
        "recover claims",
        tx -> {
          List<ClaimedWork> claims = new ArrayList<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.recoverClaims)) {
            ps.setString(1, workerId);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                claims.add(claimedWork(rs, false, null));
              }
            }
          }
          return claims;
        });
  }

  /**
   * What a row holds now, as far as one claim is concerned.
   *
   * @param workId the work ID
   * @param state the stored state
   * @param generation the stored claim generation
   * @param claimedBy the stored owner, or {@code null}
   * @param leaseLive whether the stored lease is unexpired on the database clock
   */
  public record StoredState(
      String workId, String state, long generation, String claimedBy, boolean leaseLive) {
    /** {@link #state()} as a {@link WorkState}. */
    public WorkState workState() {
      return WorkState.fromSql(state);
    }

    /** Whether {@code ref} is still a live claim of {@code workerId}: nothing settled it. */
    public boolean heldBy(String workerId, ClaimRef ref) {
      return state.equals(WorkState.RUNNING.sql())
          && workerId.equals(claimedBy)
          && generation == ref.generation()
          && leaseLive;
    }
  }

  /**
   * The current state of the named rows, keyed by work ID (absent rows are missing). A plain read:
   * it decides what an uncertain commit did, and any write that follows is guarded anyway.
   */
  public Map<String, StoredState> readStates(Connection c, List<ClaimRef> refs) {
    if (refs.isEmpty()) {
      return Map.of();
    }
    return Tx.run(
        c,
        timeouts,
        "read work states",
        tx -> {
          Map<String, StoredState> states = new HashMap<>();
          try (PreparedStatement ps = tx.prepareStatement(sql.readStates)) {
            ps.setArray(1, tx.createArrayOf("text", ids(refs)));
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                StoredState st =
                    new StoredState(
                        rs.getString("work_id"),
                        rs.getString("state"),
                        rs.getLong("claim_generation"),
                        rs.getString("claimed_by"),
                        rs.getBoolean("lease_live"));
                states.put(st.workId(), st);
              }
            }
          }
          return states;
        });
  }

  /**
   * One kind's policy as registered in the {@code kind} table.
   *
   * @param kind the kind
   * @param backoffBase the first backoff ceiling
   * @param backoffCap the largest backoff ceiling
   * @param maxAttempts attempts allowed
   * @param maxElapsed the retry window from the first attempt
   * @param handlerTimeout how long one attempt may run
   * @param dedupHorizon how long the receiver remembers a work ID
   * @param unknownOutcome {@code retry}, {@code park} or {@code reconcile}
   * @param limits the kind's flow limits, stored in the {@code limiter} table when set
   * @param maxSnoozes how many times one item may snooze before a snooze counts as a retry
   */
  public record KindRow(
      String kind,
      Duration backoffBase,
      Duration backoffCap,
      int maxAttempts,
      Duration maxElapsed,
      Duration handlerTimeout,
      Duration dedupHorizon,
      String unknownOutcome,
      FlowLimits limits,
      int maxSnoozes) {
    /** A kind with the default snooze cap. */
    public KindRow(
        String kind,
        Duration backoffBase,
        Duration backoffCap,
        int maxAttempts,
        Duration maxElapsed,
        Duration handlerTimeout,
        Duration dedupHorizon,
        String unknownOutcome,
        FlowLimits limits) {
      this(
          kind,
          backoffBase,
          backoffCap,
          maxAttempts,
          maxElapsed,
          handlerTimeout,
          dedupHorizon,
          unknownOutcome,
          limits,
          KindPolicy.DEFAULT_MAX_SNOOZES);
    }

    /** A kind without flow limits. */
    public KindRow(
        String kind,
        Duration backoffBase,
        Duration backoffCap,
        int maxAttempts,
        Duration maxElapsed,
        Duration handlerTimeout,
        Duration dedupHorizon,
        String unknownOutcome) {
      this(
          kind,
          backoffBase,
          backoffCap,
          maxAttempts,
          maxElapsed,
          handlerTimeout,
          dedupHorizon,
          unknownOutcome,
          FlowLimits.NONE);
    }
  }

  /**
   * Registers {@code workerId} to take new work of {@code kinds} on {@code queues} by local
   * hand-off, with claims of at most {@code lease}, in its own transaction.
   */
  public void registerHandoff(
      Connection c, String workerId, List<String> kinds, List<String> queues, Duration lease) {
    Tx.run(
        c,
        timeouts,
        "register hand-off",
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.registerHandoff)) {
            ps.setString(1, workerId);
            ps.setLong(2, lease.toMillis());
            ps.setArray(3, tx.createArrayOf("text", kinds.toArray()));
            ps.setArray(4, tx.createArrayOf("text", queues.toArray()));
            return ps.executeUpdate();
          }
        });
  }

  /** Removes the hand-off registration of {@code workerId}, in its own transaction. */
  public void unregisterHandoff(Connection c, String workerId) {
    Tx.run(
        c,
        timeouts,
        "unregister hand-off",
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.unregisterHandoff)) {
            ps.setString(1, workerId);
            return ps.executeUpdate();
          }
        });
  }

  /**
   * The ID of the transaction open on {@code c} (the caller's), or {@code null} when it has none
   * yet. Runs in the caller's transaction and changes nothing.
   */
  public static String currentTransaction(Connection c, SchemaName schema) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(WorkSql.of(schema).currentTransaction);
        ResultSet rs = ps.executeQuery()) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  /**
   * Registers (upserts) the policies of the kinds {@code workerId} runs, in one transaction. The
   * last registration of a kind wins.
   */
  public void registerKinds(Connection c, String workerId, List<KindRow> kinds) {
    if (kinds.isEmpty()) {
      return;
    }
    int n = kinds.size();
    String[] names = new String[n];
    Long[] bases = new Long[n];
    Long[] caps = new Long[n];
    Integer[] attempts = new Integer[n];
    Long[] elapsed = new Long[n];
    Long[] handlerTimeouts = new Long[n];
    Long[] horizons = new Long[n];
    String[] unknown = new String[n];
    Integer[] snoozes = new Integer[n];
    for (int i = 0; i < n; i++) {
      KindRow k = kinds.get(i);
      snoozes[i] = k.maxSnoozes();
      names[i] = k.kind();
      bases[i] = k.backoffBase().toMillis();
      caps[i] = k.backoffCap().toMillis();
      attempts[i] = k.maxAttempts();
      elapsed[i] = k.maxElapsed().toMillis();
      handlerTimeouts[i] = k.handlerTimeout().toMillis();
      horizons[i] = k.dedupHorizon().toMillis();
      unknown[i] = k.unknownOutcome();
    }
    Tx.run(
        c,
        timeouts,
        "register kinds",
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.registerKinds)) {
            ps.setString(1, workerId);
            ps.setArray(2, tx.createArrayOf("text", names));
            ps.setArray(3, tx.createArrayOf("int8", bases));
            ps.setArray(4, tx.createArrayOf("int8", caps));
            ps.setArray(5, tx.createArrayOf("int4", attempts));
            ps.setArray(6, tx.createArrayOf("int8", elapsed));
            ps.setArray(7, tx.createArrayOf("int8", handlerTimeouts));
            ps.setArray(8, tx.createArrayOf("int8", horizons));
            ps.setArray(9, tx.createArrayOf("text", unknown));
            ps.setArray(10, tx.createArrayOf("int4", snoozes));
            ps.executeUpdate();
          }
          registerLimits(tx, workerId, kinds);
          return null;
        });
  }

  /**
   * Upserts the limiter rows of the kinds that have limits, so every worker's claim applies the
   * same limits. A kind registered without limits leaves an existing limiter row as it is.
   */
  private void registerLimits(Connection tx, String workerId, List<KindRow> kinds)
      throws SQLException {
    List<KindRow> limited = kinds.stream().filter(k -> k.limits().limited()).toList();
    if (limited.isEmpty()) {
      return;
    }
    int n = limited.size();
    String[] names = new String[n];
    Integer[] maxRunning = new Integer[n];
    Integer[] perGroup = new Integer[n];
    Integer[] rate = new Integer[n];
    Long[] rateMillis = new Long[n];
    for (int i = 0; i < n; i++) {
      KindRow k = limited.get(i);
      FlowLimits l = k.limits();
      names[i] = k.kind();
      maxRunning[i] = l.maxRunning();
      perGroup[i] = l.maxRunningPerGroup();
      rate[i] = l.rateLimit();
      rateMillis[i] = l.rateInterval() == null ? null : l.rateInterval().toMillis();
    }
    try (PreparedStatement ps = tx.prepareStatement(sql.registerLimits)) {
      ps.setString(1, workerId);
      ps.setArray(2, tx.createArrayOf("text", names));
      ps.setArray(3, tx.createArrayOf("int4", maxRunning));
      ps.setArray(4, tx.createArrayOf("int4", perGroup));
      ps.setArray(5, tx.createArrayOf("int4", rate));
      ps.setArray(6, tx.createArrayOf("int8", rateMillis));
      ps.executeUpdate();
    }
  }

  /**
   * What a cancel call did.
   *
   * @param result {@code cancelled}, {@code cancel_requested}, {@code already_finished} or {@code
   *     not_found}
   * @param fromState the state the work had, or {@code null} when no work has the ID
   */
  public record CancelRow(String result, String fromState) {}

  /**
   * Cancels work in one transaction: the row is locked first, then ready (or failed) work becomes
   * cancelled at once, running work gets a cancel request (answered by its worker with a guarded
   * write), ended work is left alone. Every call is audited with its actor and reason.
   */
  public CancelRow cancel(Connection c, String workId, String actor, String reason) {
    return Tx.run(c, timeouts, "cancel", tx -> cancelInTransaction(tx, workId, actor, reason));
  }

  /**
   * {@link #cancel} inside a transaction the caller opened on {@code tx} (and commits): the row
   * lock, the decision and the audit row join it, so a supersede can cancel the old work and
   * enqueue its replacement atomically.
   */
  public CancelRow cancelInTransaction(Connection tx, String workId, String actor, String reason)
      throws SQLException {
    String state = null;
    Long generation = null;
    try (PreparedStatement ps = tx.prepareStatement(sql.lockForCancel)) {
      ps.setString(1, workId);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          state = rs.getString("state");
          generation = rs.getLong("claim_generation");
        }
      }
    }
    if (state == null) {
      // Finished by a worker: moved to the history table. A new statement, so a move that
      // committed while the lock above waited for it is seen.
      try (PreparedStatement ps = tx.prepareStatement(sql.finishedState)) {
        ps.setString(1, workId);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            state = rs.getString("state");
            generation = rs.getLong("claim_generation");
          }
        }
      }
    }
    String result;
    if (state == null) {
      result = "not_found";
    } else if (state.equals(WorkState.READY.sql()) || state.equals(WorkState.FAILED.sql())) {
      // A failed item is cancelled too: that is how an operator releases an ordering key its
      // failed head holds, when redriving it is not wanted.
      try (PreparedStatement ps = tx.prepareStatement(sql.cancelReady)) {
        BoundText.bind(ps, 1, "cancelled by " + actor + ": " + reason);
        ps.setString(2, workId);
        ps.executeUpdate();
      }
      result = "cancelled";
    } else if (state.equals(WorkState.RUNNING.sql())) {
      try (PreparedStatement ps = tx.prepareStatement(sql.requestCancel)) {
        ps.setString(1, workId);
        ps.executeUpdate();
      }
      result = "cancel_requested";
    } else {
      result = "already_finished";
    }
    try (PreparedStatement ps = tx.prepareStatement(sql.auditCancel)) {
      ps.setString(1, workId);
      BoundText.bind(ps, 2, actor);
      BoundText.bind(ps, 3, reason);
      ps.setString(4, state);
      if (generation == null) {
        ps.setNull(5, java.sql.Types.BIGINT);
      } else {
        ps.setLong(5, generation);
      }
      ps.setString(6, result);
      ps.executeUpdate();
    }
    return new CancelRow(result, state);
  }

  /**
   * Records outcomes this worker gave up (see {@link AbandonedOutcome}) in the attempt history, one
   * row per claim with ending {@code abandoned}, in one transaction. Never touches the work rows.
   * Safe to repeat: a claim already recorded as abandoned is skipped, so a call whose COMMIT
   * outcome was unknown can simply be made again. Two items for the same claim in one call keep the
   * first.
   *
   * @return how many rows were added (0 when every claim was recorded before)
   */
  public int recordAbandoned(Connection c, String workerId, List<AbandonedOutcome> items) {
    if (items.isEmpty()) {
      return 0;
    }
    int n = items.size();
    String[] ids = new String[n];
    Long[] generations = new Long[n];
    String[] actions = new String[n];
    String[] errorKinds = new String[n];
    String[] errors = new String[n];
    String[] outcomes = new String[n];
    String[] receiverRefs = new String[n];
    for (int i = 0; i < n; i++) {
      AbandonedOutcome a = items.get(i);
      ids[i] = a.ref().workId();
      generations[i] = a.ref().generation();
      actions[i] = a.operation().sql();
      errorKinds[i] = a.errorKind();
      errors[i] = a.error();
      outcomes[i] = a.evidence() == null ? null : a.evidence().sql();
      receiverRefs[i] = a.receiverRef();
    }
    return Tx.run(
        c,
        timeouts,
        "record abandoned outcomes",
        tx -> {
          try (PreparedStatement ps = tx.prepareStatement(sql.recordAbandoned)) {
            ps.setString(1, workerId);
            ps.setArray(2, tx.createArrayOf("text", ids));
            ps.setArray(3, tx.createArrayOf("int8", generations));
            ps.setArray(4, tx.createArrayOf("text", actions));
            ps.setArray(5, BoundText.textArray(tx, errorKinds));
            ps.setArray(6, BoundText.textArray(tx, errors));
            ps.setArray(7, tx.createArrayOf("text", outcomes));
            ps.setArray(8, BoundText.textArray(tx, receiverRefs));
            return ps.executeUpdate();
          }
        });
  }

  /**
   * Locks the rows and settles them: the timeouts, the lock and the guarded write go in one round
   * trip, and stay three steps on the server (the guard's statement starts only once the lock
   * statement has every row, so its {@code clock_timestamp()} is sampled after any wait). Returns
   * the work IDs that applied, each with the action recorded.
   */
  private Map<String, String> settleLocked(
      Connection tx, String workerId, List<Settlement> sorted, List<ClaimRef> refs)
      throws SQLException {
    int n = sorted.size();
    String[] ids = new String[n];
    Long[] generations = new Long[n];
    String[] actions = new String[n];
    Long[] delays = new Long[n];
    String[] errorKinds = new String[n];
    String[] errors = new String[n];
    String[] outcomes = new String[n];
    String[] receiverRefs = new String[n];
    String[] results = new String[n];
    String[] milestones = new String[n];
    for (int i = 0; i < n; i++) {
      Settlement s = sorted.get(i);
      ids[i] = s.ref().workId();
      generations[i] = s.ref().generation();
      delays[i] = 0L;
      if (s instanceof Settlement.Complete d) {
        actions[i] = "complete";
        receiverRefs[i] = d.receiverRef();
        results[i] = d.resultJson();
        milestones[i] = d.milestone();
      } else if (s instanceof Settlement.Retry r) {
        actions[i] = "retry";
        delays[i] = r.delay().toMillis();
        errorKinds[i] = r.errorKind();
        errors[i] = r.error();
        outcomes[i] = r.evidence().sql();
      } else if (s instanceof Settlement.Snooze z) {
        actions[i] = "snooze";
        delays[i] = z.delay().toMillis();
        errorKinds[i] = "snoozed";
        errors[i] = z.reason();
        outcomes[i] = Settlement.Evidence.NOT_DELIVERED.sql();
      } else if (s instanceof Settlement.Fail f) {
        actions[i] = "fail";
        errorKinds[i] = f.errorKind();
        errors[i] = f.error();
        outcomes[i] = f.evidence().sql();
      } else if (s instanceof Settlement.Release) {
        actions[i] = "release";
      } else if (s instanceof Settlement.Cancelled x) {
        actions[i] = "cancelled";
        errorKinds[i] = "cancelled";
        errors[i] = x.reason();
        outcomes[i] = x.evidence().sql();
      }
    }
    Map<String, String> applied = new HashMap<>();
    try (PreparedStatement ps =
        tx.prepareStatement(Tx.withTimeouts(timeouts, sql.lockClaimed, sql.settleIfOwned))) {
      ps.setArray(1, tx.createArrayOf("text", ids(refs))); // the lock
      ps.setArray(2, tx.createArrayOf("text", ids)); // the guarded write
      ps.setArray(3, tx.createArrayOf("int8", generations));
      ps.setArray(4, tx.createArrayOf("text", actions));
      ps.setArray(5, tx.createArrayOf("int8", delays));
      ps.setArray(6, BoundText.textArray(tx, errorKinds));
      ps.setArray(7, BoundText.textArray(tx, errors));
      ps.setArray(8, tx.createArrayOf("text", outcomes));
      ps.setArray(9, BoundText.textArray(tx, receiverRefs));
      ps.setArray(10, BoundText.jsonArray(tx, results));
      ps.setArray(11, BoundText.textArray(tx, milestones));
      ps.setString(12, workerId);
      try (ResultSet locked = Tx.firstResult(ps)) {
        while (locked.next()) {
          // Rows are locked as they are read; the values are not needed.
        }
      }
      try (ResultSet rs = Tx.nextResult(ps)) {
        while (rs.next()) {
          applied.put(rs.getString(1), rs.getString(2));
        }
      }
    }
    return applied;
  }

  /** Step one of a guarded write: lock the rows, in work-ID order. */
  private void lock(Connection tx, List<ClaimRef> sorted) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement(sql.lockClaimed)) {
      ps.setArray(1, tx.createArrayOf("text", ids(sorted)));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          // Rows are locked as they are read; the values are not needed.
        }
      }
    }
  }

  private static List<ClaimRef> sortedDistinct(List<ClaimRef> refs) {
    Map<String, ClaimRef> byId = new HashMap<>();
    for (ClaimRef r : refs) {
      if (byId.put(r.workId(), r) != null) {
        throw new IllegalArgumentException("one batch names " + r.workId() + " twice");
      }
    }
    List<ClaimRef> sorted = new ArrayList<>(byId.values());
    sorted.sort(Comparator.comparing(ClaimRef::workId));
    return sorted;
  }

  private static String[] ids(List<ClaimRef> refs) {
    return refs.stream().map(ClaimRef::workId).toArray(String[]::new);
  }

  private static Long[] generations(List<ClaimRef> refs) {
    return refs.stream().map(ClaimRef::generation).toArray(Long[]::new);
  }

  private static ClaimedWork claimedWork(ResultSet rs, boolean reclaimed, String previousOwner)
      throws SQLException {
    return new ClaimedWork(
        rs.getString("work_id"),
        rs.getString("kind"),
        rs.getString("queue"),
        rs.getString("payload"),
        rs.getLong("claim_generation"),
        rs.getInt("attempts"),
        rs.getInt("max_attempts"),
        instant(rs, "lease_until"),
        instant(rs, "deadline"),
        instant(rs, "created_at"),
        instant(rs, "retry_window_start"),
        reclaimed,
        previousOwner,
        rs.getString("ordering_key"),
        nullableLong(rs, "sequence"),
        nullableLong(rs, "previous_delivered_sequence"),
        rs.getString("trace_context"));
  }

  private static Long nullableLong(ResultSet rs, String column) throws SQLException {
    long v = rs.getLong(column);
    return rs.wasNull() ? null : v;
  }

  private static Instant instant(ResultSet rs, String column) throws SQLException {
    OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
    return t == null ? null : t.toInstant();
  }
}
