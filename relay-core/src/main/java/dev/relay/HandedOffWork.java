package dev.relay;

import dev.relay.internal.runtime.Handoffs;
import java.util.List;

/**
 * Work that one transaction inserted already claimed by this process's worker (a local hand-off),
 * waiting for proof that the transaction committed. {@link Outbox#commitAndStart} uses it for you;
 * a framework that commits by itself takes it with {@link Outbox#takeHandedOff} and calls {@link
 * #start()} only once the commit returned normally (Spring: from an after-commit synchronization),
 * or {@link #discard()} otherwise.
 *
 * <p>What it promises: nothing starts without {@link #start()}, and {@link #start()} starts each
 * item at most once, as generation 1 of its claim, with every guard of a claim (the lease keeper
 * renews it, the outcome is a guarded write). An item whose lease, counted from its INSERT, has
 * less than the start margin left is released instead (guarded, not counted as an attempt), and the
 * workers are woken to take it. What it does not: after {@link #discard()}, after a rollback, or
 * after a commit that failed or whose outcome is unknown, committed items are not started here;
 * they wait out their lease and are then claimed (generation 2) by any worker. Not thread-safe: one
 * owner, the transaction's.
 */
public final class HandedOffWork {
  private static final HandedOffWork NONE = new HandedOffWork(null, null);

  private final Handoffs handoffs;
  private final Handoffs.Taken taken;

  private HandedOffWork(Handoffs handoffs, Handoffs.Taken taken) {
    this.handoffs = handoffs;
    this.taken = taken;
  }

  static HandedOffWork of(Handoffs handoffs, Handoffs.Taken taken) {
    return taken.size() == 0 ? NONE : new HandedOffWork(handoffs, taken);
  }

  static HandedOffWork none() {
    return NONE;
  }

  /** How many items wait to be started. */
  public int size() {
    return taken == null ? 0 : taken.size();
  }

  /** The work IDs of the items, in the order they were inserted. */
  public List<String> workIds() {
    return taken == null ? List.of() : taken.workIds();
  }

  /**
   * Starts the items on this process's worker. Call only after the transaction's COMMIT returned
   * normally; a second call does nothing.
   */
  public void start() {
    if (taken != null) {
      handoffs.start(taken);
    }
  }

  /**
   * Gives the items up without starting them (the transaction rolled back, or its commit failed or
   * is uncertain): their reserved handler slots are free again, and committed items are claimed
   * after their lease. A second call, or a call after {@link #start()}, does nothing.
   */
  public void discard() {
    if (taken != null) {
      handoffs.discard(taken);
    }
  }

  @Override
  public String toString() {
    return "HandedOffWork" + workIds();
  }
}
