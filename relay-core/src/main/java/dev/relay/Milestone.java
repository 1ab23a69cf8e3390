package dev.relay;

/**
 * What a receiver's acceptance means, recorded with a {@link Outcome.Done}. A provider's "200 OK"
 * may mean "queued for sending", not "arrived": say which, so an operator reading the row knows how
 * far the work got. Relay stores the milestone; it does not check it.
 */
public enum Milestone {
  /** The receiver accepted responsibility for the work (for example HTTP 202). */
  ACCEPTED("accepted"),
  /** The receiver queued it for a later step (for example a mail provider's send queue). */
  QUEUED("queued"),
  /** The receiver reports the final effect happened (for example a delivery receipt). */
  DELIVERED("delivered");

  private final String sql;

  Milestone(String sql) {
    this.sql = sql;
  }

  /** The value stored in the {@code milestone} column. */
  public String sql() {
    return sql;
  }
}
