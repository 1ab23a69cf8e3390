package dev.relay.internal.runtime;

import dev.relay.internal.store.ClaimRef;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * This worker's live claims, from the claim until the claim needs nothing more from it (recorded,
 * released or given up). The only owner of that table: the claimer {@linkplain #add adds}, whoever
 * finishes with a claim calls {@link #ended}, the lease keeper and {@code close()} read {@linkplain
 * #snapshot snapshots}.
 */
final class LiveClaims {
  private final ConcurrentHashMap<ClaimRef, LiveClaim> claims = new ConcurrentHashMap<>();
  private final AtomicInteger count = new AtomicInteger();
  private final Runnable onEnded;

  /**
   * @param onEnded run after a claim ended (its capacity is free: the claimer looks again)
   */
  LiveClaims(Runnable onEnded) {
    this.onEnded = onEnded;
  }

  void add(LiveClaim c) {
    claims.put(c.ref, c);
    count.incrementAndGet();
  }

  /** The claim needs nothing more from this worker. Idempotent. */
  void ended(LiveClaim c) {
    if (c.phase.getAndSet(LiveClaim.Phase.ENDED) != LiveClaim.Phase.ENDED) {
      claims.remove(c.ref, c);
      count.decrementAndGet();
      onEnded.run();
    }
  }

  boolean contains(ClaimRef ref) {
    return claims.containsKey(ref);
  }

  /** How many claims are live (buffered, running, finishing or releasing). */
  int size() {
    return count.get();
  }

  /** The live claims now, for a pass that may end some of them. */
  List<LiveClaim> snapshot() {
    return List.copyOf(claims.values());
  }

  /** Whether any claim's handler (or reconciler) is running. */
  boolean anyRunning() {
    for (LiveClaim c : claims.values()) {
      if (c.phase.get() == LiveClaim.Phase.RUNNING) {
        return true;
      }
    }
    return false;
  }
}
