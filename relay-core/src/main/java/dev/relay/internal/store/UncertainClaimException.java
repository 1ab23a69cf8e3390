package dev.relay.internal.store;

import dev.relay.CommitOutcomeUnknownException;

/**
 * A claim whose statement ran and returned its rows, but whose COMMIT reply was lost: the claim may
 * or may not have committed. Carries what the statement returned, so the worker can ask the stored
 * rows about exactly those claims (same work, same generation, still its own) instead of adopting
 * every running row under its name, which a previous process with the same worker ID may also have
 * left behind.
 */
public final class UncertainClaimException extends CommitOutcomeUnknownException {
  private static final long serialVersionUID = 1L;

  private final transient ClaimBatch attempted;

  UncertainClaimException(ClaimBatch attempted, CommitOutcomeUnknownException cause) {
    super(cause.getMessage(), cause.sqlState(), cause);
    this.attempted = attempted;
  }

  /** What the claim statement returned before its commit outcome was lost. */
  public ClaimBatch attempted() {
    return attempted;
  }
}
