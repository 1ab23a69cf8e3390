package dev.relay.app;

import dev.relay.Claim;
import dev.relay.internal.store.ClaimedWork;
import java.time.Instant;

/**
 * The demo's view of a claim it took itself with the store (the runtime's own claims come from
 * {@code Relay}): lets the demo call the HTTP transport's handler exactly as a worker would, and
 * then decide, as the story needs, not to record the outcome.
 */
final class DemoClaim implements Claim {
  private final ClaimedWork work;
  private final String workerId;
  private final Instant leaseUntil;

  DemoClaim(ClaimedWork work, String workerId) {
    this(work, workerId, work.leaseUntil());
  }

  private DemoClaim(ClaimedWork work, String workerId, Instant leaseUntil) {
    this.work = work;
    this.workerId = workerId;
    this.leaseUntil = leaseUntil;
  }

  /**
   * The claim as it looked when its worker sent a request that is only now arriving: the lease was
   * still valid then. Used to replay a delayed request; the database is not asked.
   */
  static DemoClaim asWhenSent(ClaimedWork work, String workerId) {
    return new DemoClaim(work, workerId, Instant.now().plusSeconds(10));
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
  public String workerId() {
    return workerId;
  }

  @Override
  public boolean isCancelRequested() {
    return false;
  }

  @Override
  public boolean shouldStop() {
    return false;
  }

  @Override
  public StopReason stopReason() {
    return null;
  }

  @Override
  public void onStop(Runnable action) {}

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
}
