package dev.relay.admin;

import dev.relay.RelayException;

/** No work has the ID (it was never enqueued, or it was purged). Nothing changed. */
public final class WorkNotFoundException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String workId;

  /**
   * @param workId the ID that was not found
   */
  public WorkNotFoundException(String workId) {
    super("no work has ID '" + workId + "' (never enqueued, or purged)");
    this.workId = workId;
  }

  /** The ID that was not found. */
  public String workId() {
    return workId;
  }
}
