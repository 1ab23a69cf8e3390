package dev.relay.internal.runtime;

import dev.relay.internal.store.Settlement;

/**
 * Where finished claims' outcomes go to be recorded ({@link Completer}). The dispatcher, the
 * releaser and the claimer hand outcomes over through this and nothing else.
 */
interface Completions {
  /**
   * Queues an outcome to be recorded; {@code false} once recording has stopped (relay is closing),
   * in which case nothing was queued and the caller keeps the claim.
   */
  boolean submit(LiveClaim claim, Settlement settlement);

  /** Outcomes queued or being written: they hold no claim capacity, but count against memory. */
  int pending();
}
