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
  CANCEL,
  /**
   * Deletes each item that is done or cancelled and ended longer ago than its kind's deduplication
   * horizon, leaving a tombstone (work ID, kind, payload digest, last generation, final state and
   * outcome) exactly as {@link Admin#purge(PurgePolicy, boolean)} does, so a late producer retry is
   * still recognised and a different payload under the ID still refused. Refused: running work,
   * unfinished or failed work (failed work waits for a person: redrive or cancel it first), and
   * work that ended within its kind's horizon. The policy's work retention does not apply: the
   * filter is the operator's choice. Each purged item gets a {@code purge_item_audit} row.
   */
  PURGE;

  /** The name stored and shown: {@code redrive}, {@code cancel} or {@code purge}. */
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
        "action", "'" + name + "' is not a bulk action (redrive, cancel or purge)");
  }
}
