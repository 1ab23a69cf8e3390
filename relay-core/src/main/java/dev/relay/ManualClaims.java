package dev.relay;

import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import dev.relay.internal.runtime.WorkerIds;
import dev.relay.internal.store.ClaimBatch;
import dev.relay.internal.store.ClaimRequest;
import dev.relay.internal.store.ClaimedWork;
import dev.relay.internal.store.RetiredWork;
import dev.relay.internal.store.Settlement;
import dev.relay.internal.store.UncertainClaimException;
import dev.relay.internal.store.WorkStore;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Claims and settles work by hand, with every guard of the protocol: the low-level API that test
 * kits, demos and tools use where a {@link Relay} worker would run everything on its own threads.
 * relay-test's {@code ManualWorker} is built on it.
 *
 * <pre>{@code
 * ManualClaims claims = ManualClaims.forSchema("relay");
 * try (Connection c = dataSource.getConnection()) {
 *   Optional<HeldClaim> next =
 *       claims.claimNext(c, "worker-a", "default", "order_received", Duration.ofSeconds(30));
 *   if (next.isPresent()) {
 *     ManualClaims.Write w = claims.settle(c, next.get(), Outcome.done("email-1"));
 *     // w.applied(): recorded; w.stale(): refused, another generation owns the work
 *   }
 * }
 * }</pre>
 *
 * <p>Each call is one short transaction of its own on the given connection, which must be open and
 * in auto-commit mode ({@link TransactionRequiredException} otherwise). The claim is the runtime's
 * claim statement ({@code FOR UPDATE SKIP LOCKED}, the database clock, the caps that retire work at
 * claim time); every write after it locks the row first and then checks state, worker, generation
 * and lease against {@code clock_timestamp()} in a later statement. A write whose claim has gone
 * stale changes nothing but the attempt history and is reported as {@link Write#stale()}: never an
 * exception.
 *
 * <p>What it deliberately does not do: no background renewal (call {@link #renew}), no handler
 * execution or timeouts, no listener events or metrics, and no attempt policy of a kind. An {@link
 * Outcome} is written as it says: a {@link Outcome.Retry} without its own delay makes the work
 * available again at once (the runtime would apply the kind's backoff), and neither the kind's
 * retry window nor its unknown-outcome policy is consulted. The attempt cap still holds, because
 * the claim statement retires exhausted work. A claim that takes work over from an expired lease
 * marks the row's evidence {@code unknown} (the expired attempt may have reached the receiver),
 * unless a worker registered the kind as reconciling ({@link UnknownOutcomePolicy#reconcile}): the
 * runtime then asks the receiver first, and so should code that claims such work by hand. Immutable
 * and thread-safe.
 */
public final class ManualClaims {
  /** The lease {@link #expireLease} renews to before it waits for the database clock to pass. */
  private static final Duration EXPIRE_LEASE = Duration.ofMillis(1);

  /**
   * The longest lease a claim or renewal may ask for, as for a {@link Relay} worker: a claim is
   * renewed, never taken for good (a lease of centuries would hold the work where no claim, redrive
   * or cancel reaches it).
   */
  public static final Duration MAX_LEASE = Duration.ofHours(24);

  /** How long {@link #expireLease} waits for the database clock, on the monotonic clock. */
  private static final Duration EXPIRE_WAIT = Duration.ofSeconds(10);

  private final SchemaName schema;
  private final WorkStore store;

  private ManualClaims(SchemaName schema) {
    this.schema = schema;
    this.store = new WorkStore(schema, Timeouts.DEFAULT);
  }

  /** Claims in schema {@code relay}. */
  public static ManualClaims create() {
    return forSchema("relay");
  }

  /**
   * Claims in {@code schema}.
   *
   * @throws InvalidConfigurationException if {@code schema} is not a plain lower-case identifier
   */
  public static ManualClaims forSchema(String schema) {
    return new ManualClaims(SchemaName.of(schema));
  }

  /** The schema this instance works in. */
  public String schema() {
    return schema.sql();
  }

  /**
   * Work that a claim ended instead of claiming it, because a cap applied at claim time.
   *
   * @param workId the work ID
   * @param kind the kind
   * @param queue the queue
   * @param state the state it now has ({@code failed} or {@code cancelled})
   * @param reason why: {@code deadline}, {@code attempts_exhausted}, {@code horizon_passed} or
   *     {@code cancelled} (a cancel request)
   * @param afterExpiredLease whether it was running under a lease that had expired
   */
  public record Retired(
      String workId,
      String kind,
      String queue,
      String state,
      String reason,
      boolean afterExpiredLease) {}

  /**
   * What one claim transaction did.
   *
   * @param claimed the claims now held, in work-ID order
   * @param retired work ended by a cap instead of being claimed
   */
  public record Batch(List<HeldClaim> claimed, List<Retired> retired) {
    /** Copies the lists. */
    public Batch {
      claimed = List.copyOf(claimed);
      retired = List.copyOf(retired);
    }
  }

  /**
   * Whether one guarded write applied.
   *
   * @param workId the work the write named
   * @param generation the claim generation the write named
   * @param applied whether it applied; {@code false} means the claim was stale (another generation
   *     owns the work, the lease expired, or the work already ended) and nothing changed but the
   *     attempt history
   * @param leaseUntil for a renewal that applied, the new lease deadline on the database clock;
   *     otherwise {@code null}
   * @param cancelRequested for a renewal that applied, whether an operator asked to cancel
   */
  public record Write(
      String workId,
      long generation,
      boolean applied,
      Instant leaseUntil,
      boolean cancelRequested) {
    /** Whether the write was refused because the claim was stale. */
    public boolean stale() {
      return !applied;
    }
  }

  /**
   * Claims up to {@code limit} eligible items of {@code kinds} from {@code queues} for {@code
   * workerId}, each under a lease of {@code lease} on the database clock. An empty result does not
   * prove the queue empty: rows another claimer holds locked are skipped, not waited for.
   *
   * @throws IllegalArgumentException if an argument is out of range, naming it: a worker ID not of
   *     1-200 characters or blank; no queue or no kind, or one that no work can have ({@link
   *     Outbox#nameProblem}); a limit outside 1-10,000; a lease under 1 ms or over {@link
   *     #MAX_LEASE}. Nothing is claimed then.
   * @throws CommitOutcomeUnknownException if the claim may or may not have committed: call {@link
   *     #recover} before running anything
   */
  public Batch claim(
      Connection c,
      String workerId,
      Collection<String> queues,
      Collection<String> kinds,
      int limit,
      Duration lease) {
    requireWorkerId(workerId);
    ClaimRequest request =
        new ClaimRequest(
            workerId, names("queues", queues), names("kinds", kinds), limit, lease(lease));
    requireAutoCommit(c, "claim");
    long started = System.nanoTime();
    ClaimBatch batch;
    try {
      batch = store.claim(c, request);
    } catch (UncertainClaimException e) {
      // The runtime's own type carries what the statement returned; a caller gets the public one.
      throw (CommitOutcomeUnknownException) e.getCause();
    }
    List<HeldClaim> claimed = new ArrayList<>();
    for (ClaimedWork w : batch.claimed()) {
      claimed.add(new HeldClaim(w, workerId, started, lease));
    }
    List<Retired> retired = new ArrayList<>();
    for (RetiredWork r : batch.retired()) {
      retired.add(
          new Retired(
              r.workId(), r.kind(), r.queue(), r.state(), r.reason(), r.afterExpiredLease()));
    }
    return new Batch(claimed, retired);
  }

  /**
   * Claims the next eligible item of {@code kind} in {@code queue} (claim order: priority, then
   * availability, then work ID), or nothing when none is eligible now.
   *
   * @see #claim
   */
  public Optional<HeldClaim> claimNext(
      Connection c, String workerId, String queue, String kind, Duration lease) {
    // singletonList, not List.of: a null name is refused by claim's check, naming it
    List<HeldClaim> claimed =
        claim(
                c,
                workerId,
                Collections.singletonList(queue),
                Collections.singletonList(kind),
                1,
                lease)
            .claimed();
    return claimed.isEmpty() ? Optional.empty() : Optional.of(claimed.get(0));
  }

  /**
   * Records {@code outcome} for {@code claim} with the runtime's guarded write: done, a retry
   * (available after the retry's delay, or at once without one), a permanent failure, or a
   * cancellation. A refused write marks the claim lost.
   *
   * @throws NullPointerException if {@code claim} or {@code outcome} is {@code null}
   * @throws IllegalArgumentException if a retry's or snooze's delay is negative or longer than
   *     {@link Outbox#MAX_DELAY}; nothing is sent
   */
  public Write settle(Connection c, HeldClaim claim, Outcome outcome) {
    Objects.requireNonNull(claim, "claim");
    Objects.requireNonNull(outcome, "outcome");
    return write(c, claim, settlement(claim, outcome));
  }

  /**
   * Gives the claim back without counting an attempt, for another worker at once: for work whose
   * handler never started. A refused write marks the claim lost.
   *
   * @throws NullPointerException if {@code claim} is {@code null}
   */
  public Write release(Connection c, HeldClaim claim) {
    Objects.requireNonNull(claim, "claim");
    return write(c, claim, new Settlement.Release(claim.work().ref()));
  }

  private Write write(Connection c, HeldClaim claim, Settlement settlement) {
    requireAutoCommit(c, "settle");
    boolean applied = store.settle(c, claim.workerId(), List.of(settlement)).get(0).applied();
    if (!applied) {
      claim.lost();
    }
    return new Write(claim.workId(), claim.generation(), applied, null, false);
  }

  /**
   * Extends the claim's lease to {@code lease} from now on the database clock, if the claim is
   * still current. An applied renewal updates the claim's {@link HeldClaim#leaseUntil()} and, when
   * an operator asked to cancel, its stop reason; a refused one marks the claim lost.
   *
   * @throws IllegalArgumentException if {@code lease} is under 1 ms or over {@link #MAX_LEASE}
   * @throws NullPointerException if {@code claim} is {@code null}
   */
  public Write renew(Connection c, HeldClaim claim, Duration lease) {
    Objects.requireNonNull(claim, "claim");
    lease(lease);
    requireAutoCommit(c, "renew");
    long started = System.nanoTime();
    dev.relay.internal.store.WriteResult r =
        store.renew(c, claim.workerId(), List.of(claim.work().ref()), lease).get(0);
    if (r.applied()) {
      claim.renewed(r.leaseUntil(), started, lease, r.cancelRequested());
    } else {
      claim.lost();
    }
    return new Write(
        claim.workId(), claim.generation(), r.applied(), r.leaseUntil(), r.cancelRequested());
  }

  /**
   * Ends the claim's lease now on the database clock, as if its worker had stopped renewing and the
   * lease had run out, and returns once the database clock has passed it: the next claim may take
   * the work over with a higher generation, and this claim's later writes are refused as stale. It
   * is a guarded renewal to a 1 ms lease, so it applies only while the claim is current ({@link
   * Write#stale()} otherwise, and nothing changes). The row stays {@code running} until the next
   * claim, as after any expired lease.
   *
   * @throws IllegalStateException if the database clock does not pass the lease within 10 s
   */
  public Write expireLease(Connection c, HeldClaim claim) {
    Write renewed = renew(c, claim, EXPIRE_LEASE);
    if (renewed.stale()) {
      return renewed;
    }
    long giveUp = System.nanoTime() + EXPIRE_WAIT.toNanos();
    while (true) {
      // Each read samples the database clock; the lease ends 1 ms after the renewal, so this
      // takes a round trip or two. The database clock, not a local one, decides.
      Map<String, WorkStore.StoredState> states = store.readStates(c, List.of(claim.work().ref()));
      WorkStore.StoredState state = states.get(claim.workId());
      if (state == null || !state.leaseLive()) {
        break;
      }
      if (System.nanoTime() - giveUp > 0) {
        throw new IllegalStateException(
            "the lease of " + claim + " did not end on the database clock within " + EXPIRE_WAIT);
      }
      Thread.onSpinWait();
    }
    claim.lost();
    return renewed;
  }

  /**
   * The live claims {@code workerId} holds according to the stored rows (running, owned by it,
   * lease unexpired). Sound only while the worker ID names one process; use it after a claim whose
   * commit was uncertain ({@link CommitOutcomeUnknownException}). No local clock measured these
   * leases, so each returned claim's {@link HeldClaim#leaseRemaining()} is zero: renew it first.
   *
   * @throws IllegalArgumentException if {@code workerId} is not of 1-200 characters or is blank
   */
  public List<HeldClaim> recover(Connection c, String workerId) {
    requireWorkerId(workerId);
    requireAutoCommit(c, "recover");
    long started = System.nanoTime();
    List<HeldClaim> held = new ArrayList<>();
    for (ClaimedWork w : store.recover(c, workerId)) {
      // Nothing local measured these leases: each counts as already due for renewal.
      held.add(new HeldClaim(w, workerId, started, Duration.ZERO));
    }
    return held;
  }

  /** A worker ID as a {@link Relay} worker's: 1-200 characters, not blank. */
  private static void requireWorkerId(String workerId) {
    String problem = WorkerIds.problem(workerId);
    if (problem != null) {
      throw new IllegalArgumentException("workerId " + problem);
    }
  }

  /** Queue or kind names that work can have, each checked as enqueue checks a work item's. */
  private static List<String> names(String what, Collection<String> names) {
    if (names == null || names.isEmpty()) {
      throw new IllegalArgumentException(what + " must name at least one");
    }
    for (String name : names) {
      String problem = Outbox.nameProblem(name);
      if (problem != null) {
        throw new IllegalArgumentException(what + ": a name " + problem);
      }
    }
    return List.copyOf(names);
  }

  private static Duration lease(Duration lease) {
    if (lease == null
        || lease.compareTo(Duration.ofMillis(1)) < 0
        || lease.compareTo(MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "lease must be at least 1 ms and at most " + MAX_LEASE + ", was " + lease);
    }
    return lease;
  }

  /**
   * Refuses a connection that is null, closed or inside a transaction before anything is sent, so
   * that a caller's open transaction is neither committed nor rolled back by this call.
   */
  private static void requireAutoCommit(Connection c, String what) {
    if (!Tx.requireOpen(c)) {
      throw new TransactionRequiredException(
          what
              + " runs its own transaction: pass a connection in auto-commit mode, not one inside"
              + " a transaction");
    }
  }

  private static Settlement settlement(HeldClaim claim, Outcome outcome) {
    var ref = claim.work().ref();
    if (outcome instanceof Outcome.Done d) {
      return new Settlement.Complete(ref, d.receiverRef(), d.resultJson(), d.milestone().sql());
    }
    if (outcome instanceof Outcome.Retry r) {
      return new Settlement.Retry(
          ref,
          r.delay() == null ? Duration.ZERO : delay("a retry's", r.delay()),
          "retry",
          text(r.reason(), "retry"),
          evidence(r.effect()));
    }
    if (outcome instanceof Outcome.Snooze z) {
      return new Settlement.Snooze(
          ref, delay("a snooze's", z.delay()), text(z.reason(), "snoozed"));
    }
    if (outcome instanceof Outcome.Fail f) {
      return new Settlement.Fail(
          ref, "permanent", text(f.reason(), "failed"), evidence(f.effect()));
    }
    Outcome.Cancel x = (Outcome.Cancel) outcome;
    return new Settlement.Cancelled(ref, text(x.reason(), "cancelled"), evidence(x.effect()));
  }

  /** A retry's or snooze's delay, refused before anything is sent when out of Relay's range. */
  private static Duration delay(String whose, Duration delay) {
    if (delay.isNegative() || delay.compareTo(Outbox.MAX_DELAY) > 0) {
      throw new IllegalArgumentException(
          whose
              + " delay must be between 0 and "
              + Outbox.MAX_DELAY.toDays()
              + " days, was "
              + delay);
    }
    return delay;
  }

  private static Settlement.Evidence evidence(Outcome.Effect effect) {
    return effect == Outcome.Effect.NOT_DELIVERED
        ? Settlement.Evidence.NOT_DELIVERED
        : Settlement.Evidence.UNKNOWN;
  }

  private static String text(String reason, String fallback) {
    return reason == null || reason.isBlank() ? fallback : Settlement.clip(reason);
  }
}
