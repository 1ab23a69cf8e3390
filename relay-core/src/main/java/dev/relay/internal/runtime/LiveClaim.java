package dev.relay.internal.runtime;

import dev.relay.Claim;
import dev.relay.KindPolicy;
import dev.relay.internal.json.StringMapJson;
import dev.relay.internal.store.ClaimRef;
import dev.relay.internal.store.ClaimedWork;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One claim held by this worker, from the claim until its outcome is recorded (or it is given up):
 * the handler's {@link Claim} view plus the runtime's bookkeeping. Local timing uses the monotonic
 * clock of its {@link TimeSource} only; database instants are reported, never compared with the
 * local clock.
 */
final class LiveClaim implements Claim {
  private static final Logger log = LoggerFactory.getLogger(LiveClaim.class);

  /** Where the claim is in its local life. */
  enum Phase {
    /** In the local buffer, waiting for a handler slot; not renewed. */
    BUFFERED,
    /** The handler (or the reconciler) is running; renewed unless timed out or stale. */
    RUNNING,
    /**
     * The outcome is waiting for the completer; still renewed (unless timed out or stale) until it
     * is recorded, so a slow or retried batch does not turn it stale.
     */
    FINISHING,
    /** Being released unstarted. */
    RELEASING,
    /** Settled, released, or given up. */
    ENDED
  }

  final ClaimedWork work;
  final ClaimRef ref;
  final KindPolicy policy;
  final AtomicReference<Phase> phase = new AtomicReference<>(Phase.BUFFERED);
  private final String workerId;
  private final long leaseNanos;
  private final TimeSource time;

  // Lease bookkeeping, written by the claimer and the lease keeper.
  private volatile Instant leaseUntil;
  private volatile long leaseBaseNanos; // local time just before the claim/renewal was sent
  volatile long startedNanos;
  volatile boolean timedOut;

  /**
   * Stopped by {@code close()} after the shutdown grace: what the handler then returns or throws is
   * recorded as a shutdown (see {@link Decider}).
   */
  volatile boolean stoppedForShutdown;

  volatile boolean stale;
  private volatile boolean cancelRequested;
  private volatile StopReason stopReason;

  // Renewal and recording exclude each other (guarded by writeLock): a renewal that reached the row
  // just after the outcome was committed would be refused and recorded as a stale write.
  private final Object writeLock = new Object();
  private boolean renewing;
  private boolean recording;

  /** The stored trace context, read on first use. */
  private volatile Map<String, String> trace;

  /** The attempt span's context, set on the handler thread when the tracing scope opens. */
  volatile Map<String, String> callTrace;

  // Guarded by this.
  private Thread thread;
  private Future<?> stage; // an asynchronous handler's stage in flight
  private final List<Runnable> stopActions = new ArrayList<>();

  LiveClaim(
      ClaimedWork work,
      KindPolicy policy,
      String workerId,
      Duration lease,
      long sentNanos,
      TimeSource time) {
    this.work = work;
    this.ref = work.ref();
    this.policy = policy;
    this.workerId = workerId;
    this.leaseNanos = lease.toNanos();
    this.leaseUntil = work.leaseUntil();
    this.leaseBaseNanos = sentNanos;
    this.time = time;
  }

  // ---- Claim ----

  @Override
  public String workId() {
    return work.workId();
  }

  @Override
  public String kind() {
    return work.kind();
  }

  @Override
  public String queue() {
    return work.queue();
  }

  @Override
  public String payload() {
    return work.payload();
  }

  @Override
  public long generation() {
    return work.generation();
  }

  @Override
  public int attempt() {
    return work.attempt();
  }

  @Override
  public int maxAttempts() {
    return work.maxAttempts();
  }

  @Override
  public Instant deadline() {
    return work.deadline();
  }

  @Override
  public Instant leaseUntil() {
    return leaseUntil;
  }

  @Override
  public Instant createdAt() {
    return work.createdAt();
  }

  @Override
  public Instant firstAttemptAt() {
    return work.firstAttemptAt();
  }

  @Override
  public boolean reclaimed() {
    return work.reclaimed();
  }

  @Override
  public Duration leaseRemaining() {
    long left = localLeaseDeadline() - time.nanoTime();
    return left > 0 && !stale ? Duration.ofNanos(left) : Duration.ZERO;
  }

  @Override
  public Duration runTimeRemaining() {
    long limit = policy.maxRunTime().toNanos();
    long left = phase.get() == Phase.BUFFERED ? limit : limit - (time.nanoTime() - startedNanos);
    Duration run = left > 0 ? Duration.ofNanos(left) : Duration.ZERO;
    if (work.deadline() != null) {
      Duration toDeadline = Duration.between(estimatedDatabaseNow(), work.deadline());
      if (toDeadline.compareTo(run) < 0) {
        return toDeadline.isNegative() ? Duration.ZERO : toDeadline;
      }
    }
    return run;
  }

  @Override
  public boolean isLeaseLost() {
    return stale;
  }

  @Override
  public String orderingKey() {
    return work.orderingKey();
  }

  @Override
  public Long sequence() {
    return work.sequence();
  }

  @Override
  public Long previousDeliveredSequence() {
    return work.previousDeliveredSequence();
  }

  @Override
  public Map<String, String> traceContext() {
    Map<String, String> t = trace;
    if (t == null) {
      t = StringMapJson.readStored(work.traceContext()); // read at most once or twice per claim
      trace = t;
    }
    return t;
  }

  @Override
  public Map<String, String> callTraceContext() {
    Map<String, String> during = callTrace;
    return during != null ? during : traceContext();
  }

  @Override
  public String workerId() {
    return workerId;
  }

  @Override
  public boolean isCancelRequested() {
    return cancelRequested;
  }

  @Override
  public boolean shouldStop() {
    return stopReason != null;
  }

  @Override
  public StopReason stopReason() {
    return stopReason;
  }

  @Override
  public void onStop(Runnable action) {
    boolean runNow;
    synchronized (this) {
      runNow = stopReason != null;
      if (!runNow) {
        stopActions.add(action);
      }
    }
    if (runNow) {
      runQuietly(action);
    }
  }

  @Override
  public String toString() {
    return "claim " + work.workId() + " generation " + work.generation();
  }

  // ---- runtime ----

  /** Local monotonic time after which this worker must assume the lease is gone. */
  long localLeaseDeadline() {
    return leaseBaseNanos + leaseNanos;
  }

  long leaseBaseNanos() {
    return leaseBaseNanos;
  }

  /** Records a renewal sent at {@code sentNanos} that set the lease to {@code until}. */
  void renewed(Instant until, long sentNanos) {
    this.leaseUntil = until;
    this.leaseBaseNanos = sentNanos;
  }

  /** Whether the work's deadline has passed on the estimate of the database clock. */
  boolean deadlinePassed() {
    return work.deadline() != null && !estimatedDatabaseNow().isBefore(work.deadline());
  }

  /**
   * An estimate of the database clock now: the lease's start on the database clock plus the local
   * monotonic time since the claim or renewal was sent. Errs late, which is the safe side for a
   * retry window.
   */
  Instant estimatedDatabaseNow() {
    long since = time.nanoTime() - leaseBaseNanos;
    return leaseUntil.minusNanos(leaseNanos).plusNanos(Math.max(0, since));
  }

  /**
   * This worker no longer holds the claim (a renewal was refused, or the local lease passed): stop
   * renewing it and tell the handler; an asynchronous handler's stage is cancelled. Idempotent.
   */
  void leaseLost() {
    stale = true;
    signal(StopReason.LEASE_LOST);
    Future<?> f;
    synchronized (this) {
      f = stage;
    }
    if (f != null) {
      f.cancel(true);
    }
  }

  /**
   * Takes this claim into a renewal, unless its outcome is being recorded. Every successful call is
   * paired with {@link #renewalEnded()}.
   */
  boolean holdForRenewal() {
    synchronized (writeLock) {
      if (recording) {
        return false;
      }
      renewing = true;
      return true;
    }
  }

  /** Whether the completer is writing this claim's outcome now. */
  boolean isRecording() {
    synchronized (writeLock) {
      return recording;
    }
  }

  void renewalEnded() {
    synchronized (writeLock) {
      renewing = false;
      writeLock.notifyAll();
    }
  }

  /**
   * The completer is about to write this claim's outcome: no renewal starts from now on, and one in
   * flight is waited for (it is bounded by the renewal timeouts).
   */
  void recordingStarts() {
    synchronized (writeLock) {
      recording = true;
      while (renewing) {
        try {
          writeLock.wait();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /** The outcome's write certainly did not happen (rolled back): renew it again meanwhile. */
  void recordingFailed() {
    synchronized (writeLock) {
      recording = false;
    }
  }

  void markCancelRequested() {
    cancelRequested = true;
    signal(StopReason.CANCEL_REQUESTED);
  }

  /** Records the first stop reason and runs the registered stop actions once. */
  void signal(StopReason reason) {
    List<Runnable> actions;
    synchronized (this) {
      if (stopReason != null) {
        return;
      }
      stopReason = reason;
      actions = new ArrayList<>(stopActions);
      stopActions.clear();
    }
    actions.forEach(LiveClaim::runQuietly);
  }

  synchronized void bindThread(Thread t) {
    thread = t;
  }

  synchronized void unbindThread() {
    thread = null;
  }

  /**
   * Binds an asynchronous handler's stage: {@link #interrupt} then cancels it, and so does a lost
   * lease. A claim whose lease was already lost has its stage cancelled at once.
   */
  void bindStage(Future<?> f) {
    synchronized (this) {
      stage = f;
    }
    if (stale) {
      f.cancel(true);
    }
  }

  synchronized void unbindStage() {
    stage = null;
  }

  /**
   * Interrupts the handler's thread if the handler is still running on it, and cancels an
   * asynchronous handler's stage still in flight.
   */
  void interrupt() {
    Future<?> f;
    synchronized (this) {
      if (thread != null) {
        thread.interrupt();
      }
      f = stage;
    }
    if (f != null) {
      f.cancel(true); // outside the lock: cancelling runs the stage's completions
    }
  }

  private static void runQuietly(Runnable action) {
    try {
      action.run();
    } catch (RuntimeException e) {
      log.warn("a Claim.onStop action threw; ignored", e);
    }
  }
}
