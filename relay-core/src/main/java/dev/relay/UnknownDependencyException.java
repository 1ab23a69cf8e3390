package dev.relay;

/**
 * Work names a dependency ({@link Work#dependsOn}) that exists neither as work, nor as the
 * tombstone of purged work, nor as an item of the same bulk call. Refused before anything was
 * written: the caller's transaction is untouched and may continue or roll back.
 */
public final class UnknownDependencyException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String workId;
  private final String dependency;

  /**
   * @param workId the work that names the dependency
   * @param dependency the work ID that was not found
   */
  public UnknownDependencyException(String workId, String dependency) {
    super(
        "work '"
            + workId
            + "' depends on '"
            + dependency
            + "', which is neither enqueued, nor the tombstone of purged work, nor in this call");
    this.workId = workId;
    this.dependency = dependency;
  }

  /** The work that names the dependency. */
  public String workId() {
    return workId;
  }

  /** The work ID that was not found. */
  public String dependency() {
    return dependency;
  }
}
