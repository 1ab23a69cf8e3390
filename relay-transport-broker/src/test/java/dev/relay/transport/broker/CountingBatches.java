package dev.relay.transport.broker;

import dev.relay.BatchHandler;
import dev.relay.Claim;
import dev.relay.Outcome;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Test support (shipped in this module's test jar): a {@link BatchHandler} that passes every batch
 * the runtime hands it to a transport, and counts calls, claims and the largest batch, so a test
 * can show that a real {@code Relay} hands its transport batches.
 */
public final class CountingBatches implements BatchHandler {
  private final BatchHandler transport;
  private final AtomicLong calls = new AtomicLong();
  private final AtomicLong claims = new AtomicLong();
  private final AtomicInteger largest = new AtomicInteger();

  /** Counts what reaches {@code transport}. */
  public CountingBatches(BatchHandler transport) {
    this.transport = transport;
  }

  @Override
  public List<Outcome> handleAll(List<? extends Claim> batch) throws Exception {
    calls.incrementAndGet();
    claims.addAndGet(batch.size());
    largest.accumulateAndGet(batch.size(), Math::max);
    return transport.handleAll(batch);
  }

  @Override
  public int maxBatchSize() {
    return transport.maxBatchSize();
  }

  /** Calls of {@link #handleAll} (a lone claim through {@code handle} counts as a call of one). */
  public long calls() {
    return calls.get();
  }

  /** Claims handed over in all calls. */
  public long claims() {
    return claims.get();
  }

  /** The largest batch handed over. */
  public int largest() {
    return largest.get();
  }

  @Override
  public String toString() {
    return calls() + " calls, " + claims() + " claims, largest batch " + largest();
  }
}
