package dev.relay;

/**
 * A work ID is already used by a different intention: another kind, or a payload that is not
 * jsonb-equal to the stored one (also when the stored work was purged and only its tombstone
 * remains: see {@link #purged()}). Relay never merges the two silently. The caller must roll back
 * its transaction: the business change that wanted this work cannot commit without it.
 *
 * <p>A corrected intention belongs under a new work ID (see supersede in the guide).
 */
public final class WorkConflictException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String workId;
  private final String storedKind;
  private final String requestedKind;
  private final String storedPayloadDigest;
  private final String requestedPayloadDigest;
  private final boolean purged;

  /**
   * @param workId the contested ID
   * @param storedKind the kind already stored under it
   * @param requestedKind the kind this call asked for
   * @param storedPayloadDigest hex SHA-256 of the stored canonical payload
   * @param requestedPayloadDigest hex SHA-256 of the requested canonical payload
   * @param purged whether the stored work survives only as a tombstone
   */
  public WorkConflictException(
      String workId,
      String storedKind,
      String requestedKind,
      String storedPayloadDigest,
      String requestedPayloadDigest,
      boolean purged) {
    super(
        "work ID '"
            + workId
            + "' is already used by a different intention"
            + (purged ? " (purged; its tombstone remains)" : "")
            + ": stored kind "
            + storedKind
            + " payload sha256:"
            + storedPayloadDigest
            + ", requested kind "
            + requestedKind
            + " payload sha256:"
            + requestedPayloadDigest
            + "; roll back, and use a new work ID for a corrected intention");
    this.workId = workId;
    this.storedKind = storedKind;
    this.requestedKind = requestedKind;
    this.storedPayloadDigest = storedPayloadDigest;
    this.requestedPayloadDigest = requestedPayloadDigest;
    this.purged = purged;
  }

  /** The contested work ID. */
  public String workId() {
    return workId;
  }

  /** The kind stored under the ID. */
  public String storedKind() {
    return storedKind;
  }

  /** The kind this call asked for. */
  public String requestedKind() {
    return requestedKind;
  }

  /** Hex SHA-256 of the stored payload in canonical form. */
  public String storedPayloadDigest() {
    return storedPayloadDigest;
  }

  /** Hex SHA-256 of the requested payload in canonical form. */
  public String requestedPayloadDigest() {
    return requestedPayloadDigest;
  }

  /**
   * Whether the stored work was purged and only its tombstone remains: the ID stays taken by the
   * old intention (kind and payload digest) although its row, history and payload are gone. A
   * tombstone is not a live conflict to inspect in the admin view; use a new work ID.
   */
  public boolean purged() {
    return purged;
  }
}
