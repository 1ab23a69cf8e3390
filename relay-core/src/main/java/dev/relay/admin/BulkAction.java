package dev.relay.admin;

/** What a bulk action does to each matching item ({@link Admin#startBulk}). */
public enum BulkAction {
  /**
   * {@link Admin#redrive(String, RedriveRequest)} each item: failed work back to ready (with force,
   * also work that is not failed); running work and work past its kind's deduplication horizon are
   * refused.
   */
  REDRIVE,
  /**
   * {@link Admin#cancel(String, String, String)} each item: ready and failed work at once, running
   * work by request; ended work is refused.
   */
  CANCEL;

  /** The name stored and shown: {@code redrive} or {@code cancel}. */
  public String sql() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }

  /** The action of {@link #sql()}'s name. */
  public static BulkAction of(String name) {
    for (BulkAction a : values()) {
      if (a.sql().equals(name)) {
        return a;
      }
    }
    throw new InvalidAdminRequestException(
        "action", "'" + name + "' is not a bulk action (redrive or cancel)");
  }
}
