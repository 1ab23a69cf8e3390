package dev.relay;

import dev.relay.internal.json.StringMapJson;
import dev.relay.internal.store.ClaimedWork;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A claim taken by hand with {@link ManualClaims}: the same authority a worker's claim carries
 * (work ID, generation, worker ID, lease on the database clock), usable as the {@link Claim} a
 * {@link Handler} receives.
 *
 * <p>Nothing renews it in the background: its lease ends when the lease given to the claim ends,
 * unless {@link ManualClaims#renew} extends it. A renewal that is refused marks it lost ({@link
 * Claim.StopReason#LEASE_LOST}); a renewal that sees a cancel request marks it {@link
 * Claim.StopReason#CANCEL_REQUESTED}; either runs the {@link #onStop} actions. Thread-safe.
 */
public final class HeldClaim implements Claim {
  private static final Logger LOG = LoggerFactory.getLogger(HeldClaim.class);

  private final ClaimedWork work;
  private final String workerId;
  private final Object lock = new Object();
  private final List<Runnable> stopActions = new ArrayList<>(); // guarded by lock
  private Instant leaseUntil; // guarded by lock
  private long leaseEndsNanos; // guarded by lock; monotonic
  private boolean cancelRequested; // guarded by lock
  private StopReason stopReason; // guarded by lock

  HeldClaim(ClaimedWork work, String workerId, long claimStartedNanos, Duration lease) {
    this.work = work;
    this.workerId = workerId;
    this.leaseUntil = work.leaseUntil();
    // The lease was granted no earlier than the claim statement was sent: counting from then errs
    // on the safe side, whatever the clocks of this machine and the database say.
    this.leaseEndsNanos = claimStartedNanos + lease.toNanos();
  }

  ClaimedWork work() {
    return work;
  }

  /**
   * The worker whose expired lease this claim took over, when {@link #reclaimed()}; otherwise
   * {@code null}.
   */
  public String previousOwner() {
    return work.previousOwner();
  }

  /** Records an applied renewal: the new lease deadline and whether cancellation was requested. */
  void renewed(Instant newLeaseUntil, long renewStartedNanos, Duration lease, boolean cancel) {
    List<Runnable> run = List.of();
    synchronized (lock) {
      leaseUntil = newLeaseUntil;
      leaseEndsNanos = renewStartedNanos + lease.toNanos();
      if (cancel && !cancelRequested) {
        cancelRequested = true;
        run = stopWith(StopReason.CANCEL_REQUESTED);
      }
    }
    runAll(run);
  }

  /** Records that a guarded write found this claim stale. */
  void lost() {
    List<Runnable> run;
    synchronized (lock) {
      run = stopWith(StopReason.LEASE_LOST);
    }
    runAll(run);
  }

  private List<Runnable> stopWith(StopReason reason) {
    if (stopReason != null) {
      return List.of();
    }
    stopReason = reason;
    List<Runnable> run = List.copyOf(stopActions);
    stopActions.clear();
    return run;
  }

  private static void runAll(List<Runnable> actions) {
    for (Runnable action : actions) {
      try {
        action.run();
      } catch (RuntimeException e) {
        LOG.warn("An onStop action threw", e);
      }
    }
  }

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
    synchronized (lock) {
      return leaseUntil;
    }
  }

  /** Measured on the monotonic clock from the moment the claim (or last renewal) was sent. */
  @Override
  public Duration leaseRemaining() {
    long left;
    synchronized (lock) {
      left = leaseEndsNanos - System.nanoTime();
    }
    return left <= 0 ? Duration.ZERO : Duration.ofNanos(left);
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
    return StringMapJson.readStored(work.traceContext());
  }

  @Override
  public String workerId() {
    return workerId;
  }

  @Override
  public boolean isCancelRequested() {
    synchronized (lock) {
      return cancelRequested;
    }
  }

  @Override
  public boolean shouldStop() {
    return stopReason() != null;
  }

  @Override
  public StopReason stopReason() {
    synchronized (lock) {
      return stopReason;
    }
  }

  @Override
  public void onStop(Runnable action) {
    boolean now;
    synchronized (lock) {
      now = stopReason != null;
      if (!now) {
        stopActions.add(action);
      }
    }
    if (now) {
      runAll(List.of(action));
    }
  }

  @Override
  public String toString() {
    return "HeldClaim[" + workId() + " generation " + generation() + " by " + workerId + "]";
  }
}
