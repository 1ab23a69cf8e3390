package dev.relay.schedule;

/**
 * The statements on {@code schedule_state} (migration V7 of relay-core), one constant per
 * operation, with the schema injected once by {@link #ScheduleSql(String)}.
 */
final class ScheduleSql {
  /** Bounds every scheduler transaction; the lock wait is short because the lock is skipped. */
  static final String TIMEOUTS =
      "SET LOCAL statement_timeout = '30s'; SET LOCAL lock_timeout = '5s';"
          + " SET LOCAL idle_in_transaction_session_timeout = '60s'";

  /** The database clock, sampled in its own statement after any lock is held. */
  static final String CLOCK = "SELECT clock_timestamp()";

  final String register;
  final String definitions;
  final String lockState;
  final String stateExists;
  final String recordDecision;
  final String list;

  ScheduleSql(String schema) {
    String t = "\"" + schema + "\".schedule_state";
    // A row another process registered first is kept as it is; the definitions are compared by
    // the next statement (DEFINITIONS), so a different one is refused, never silently merged.
    register =
        """
        INSERT INTO %s (name, kind, definition, next_slot)
        VALUES (?, ?, ?, ?)
        ON CONFLICT (name) DO NOTHING"""
            .formatted(t);
    definitions =
        """
        SELECT name, kind, definition FROM %s WHERE name = ANY (?)"""
            .formatted(t);
    // SKIP LOCKED: a row locked by another process means that process is deciding this schedule's
    // slots right now; waiting would only find them decided. The clock is read by CLOCK afterwards.
    lockState =
        """
        SELECT last_slot, created_at, kind, definition FROM %s
         WHERE name = ? FOR UPDATE SKIP LOCKED"""
            .formatted(t);
    // Without a lock: tells a row another process holds (it is deciding) from one that is gone.
    stateExists = "SELECT 1 FROM %s WHERE name = ?".formatted(t);
    // greatest(): last_slot never moves back, whatever a slower process computed.
    recordDecision =
        """
        UPDATE %s
           SET last_slot = greatest(last_slot, ?),
               next_slot = ?,
               decided_at = ?,
               decided_by = ?,
               enqueued = enqueued + ?,
               skipped = skipped + ?,
               conflicts = conflicts + ?
         WHERE name = ?"""
            .formatted(t);
    list =
        """
        SELECT name, kind, definition, last_slot, next_slot, decided_at, decided_by,
               enqueued, skipped, conflicts, created_at
          FROM %s
         ORDER BY name"""
            .formatted(t);
  }
}
