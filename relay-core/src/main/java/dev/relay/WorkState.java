package dev.relay;

/**
 * The state of a work row, as stored in {@code outbox.state}. Work starts {@link #READY}, is {@link
 * #RUNNING} while a worker holds a claim on it, and ends {@link #DONE}, {@link #FAILED} or {@link
 * #CANCELLED}; a retry or a released claim returns it to ready, and a redrive returns ended work to
 * ready.
 */
public enum WorkState {
  /** Waiting to be claimed (now, or from its {@code available_at}). */
  READY("ready"),
  /** Claimed: a worker holds a lease on it. */
  RUNNING("running"),
  /** Finished: the receiver accepted it. */
  DONE("done"),
  /** Stopped without success; its evidence is kept for a deliberate redrive. */
  FAILED("failed"),
  /** Cancelled before it could finish. */
  CANCELLED("cancelled");

  private final String sql;

  WorkState(String sql) {
    this.sql = sql;
  }

  /** The value stored in the database, for example {@code ready}. */
  public String sql() {
    return sql;
  }

  /** Whether work in this state has ended (done, failed or cancelled). */
  public boolean isFinished() {
    return this == DONE || this == FAILED || this == CANCELLED;
  }

  /**
   * The state stored as {@code value}.
   *
   * @throws IllegalArgumentException naming the value when it is not a state
   */
  public static WorkState fromSql(String value) {
    for (WorkState s : values()) {
      if (s.sql.equals(value)) {
        return s;
      }
    }
    throw new IllegalArgumentException(
        "'" + value + "' is not a work state (ready, running, done, failed, cancelled)");
  }
}
