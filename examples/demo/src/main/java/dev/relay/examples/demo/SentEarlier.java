package dev.relay.examples.demo;

import dev.relay.Claim;
import java.time.Duration;
import java.time.Instant;

/**
 * A claim as it looked when its worker sent a request that arrives only now, delayed on the way:
 * its lease was still valid then. Everything but the lease comes from the claim itself; the story
 * uses it to replay worker A's delayed request at a receiver.
 */
final class SentEarlier implements Claim {
  private final Claim claim;
  private final Instant leaseUntil;
  private final Duration leaseRemaining;

  SentEarlier(Claim claim, Duration leaseRemaining) {
    this.claim = claim;
    this.leaseUntil = Instant.now().plus(leaseRemaining);
    this.leaseRemaining = leaseRemaining;
  }

  @Override
  public Instant leaseUntil() {
    return leaseUntil;
  }

  @Override
  public Duration leaseRemaining() {
    return leaseRemaining;
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
  public boolean isCancelRequested() {
    return false;
  }

  @Override
  public String workId() {
    return claim.workId();
  }

  @Override
  public String kind() {
    return claim.kind();
  }

  @Override
  public String queue() {
    return claim.queue();
  }

  @Override
  public String payload() {
    return claim.payload();
  }

  @Override
  public long generation() {
    return claim.generation();
  }

  @Override
  public int attempt() {
    return claim.attempt();
  }

  @Override
  public int maxAttempts() {
    return claim.maxAttempts();
  }

  @Override
  public Instant deadline() {
    return claim.deadline();
  }

  @Override
  public Instant createdAt() {
    return claim.createdAt();
  }

  @Override
  public Instant firstAttemptAt() {
    return claim.firstAttemptAt();
  }

  @Override
  public boolean reclaimed() {
    return claim.reclaimed();
  }

  @Override
  public String orderingKey() {
    return claim.orderingKey();
  }

  @Override
  public Long sequence() {
    return claim.sequence();
  }

  @Override
  public Long previousDeliveredSequence() {
    return claim.previousDeliveredSequence();
  }

  @Override
  public String workerId() {
    return claim.workerId();
  }
}
