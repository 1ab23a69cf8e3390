package dev.relay.transport.http;

import dev.relay.Claim;
import java.time.Duration;
import java.time.Instant;

/** A claim value for calling the handler directly, as the runtime would. */
record TestClaim(
    String workId,
    String kind,
    String payload,
    long generation,
    Instant leaseUntil,
    Instant deadline,
    String orderingKey,
    Long sequence,
    Long previousDeliveredSequence,
    Duration runTime)
    implements Claim {

  static TestClaim of(String workId, String kind, String payload, long generation) {
    return new TestClaim(
        workId,
        kind,
        payload,
        generation,
        Instant.now().plus(Duration.ofSeconds(30)),
        null,
        null,
        null,
        null,
        null);
  }

  TestClaim withLease(Duration left) {
    return new TestClaim(
        workId,
        kind,
        payload,
        generation,
        Instant.now().plus(left),
        deadline,
        orderingKey,
        sequence,
        previousDeliveredSequence,
        runTime);
  }

  TestClaim withDeadline(Instant d) {
    return new TestClaim(
        workId,
        kind,
        payload,
        generation,
        leaseUntil,
        d,
        orderingKey,
        sequence,
        previousDeliveredSequence,
        runTime);
  }

  TestClaim withOrdering(String key, long seq, Long previous) {
    return new TestClaim(
        workId, kind, payload, generation, leaseUntil, deadline, key, seq, previous, runTime);
  }

  /** The run time left, as the runtime's claims report it (unset: the interface's default). */
  TestClaim withRunTime(Duration left) {
    return new TestClaim(
        workId,
        kind,
        payload,
        generation,
        leaseUntil,
        deadline,
        orderingKey,
        sequence,
        previousDeliveredSequence,
        left);
  }

  @Override
  public Duration runTimeRemaining() {
    return runTime != null ? runTime : Claim.super.runTimeRemaining();
  }

  @Override
  public String queue() {
    return "default";
  }

  @Override
  public int attempt() {
    return (int) generation;
  }

  @Override
  public int maxAttempts() {
    return 25;
  }

  @Override
  public Instant createdAt() {
    return Instant.now();
  }

  @Override
  public Instant firstAttemptAt() {
    return Instant.now();
  }

  @Override
  public boolean reclaimed() {
    return generation > 1;
  }

  @Override
  public String workerId() {
    return "test-worker";
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
}
