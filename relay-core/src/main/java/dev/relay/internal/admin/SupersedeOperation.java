package dev.relay.internal.admin;

import dev.relay.CancelResult;
import dev.relay.EnqueueResult;
import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.WorkState;
import dev.relay.admin.SupersedeRefusedException;
import dev.relay.admin.SupersedeResult;
import dev.relay.admin.WorkDetail;
import dev.relay.admin.WorkNotFoundException;
import dev.relay.internal.jdbc.BoundText;
import dev.relay.internal.jdbc.Timeouts;
import dev.relay.internal.jdbc.Tx;
import dev.relay.internal.store.WorkStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.List;

/** Supersede: cancel one item and enqueue its corrected replacement atomically, linked to it. */
final class SupersedeOperation {
  private final Timeouts timeouts;
  private final AdminSql sql;
  private final WorkStore store;
  private final Outbox outbox;

  SupersedeOperation(AdminSql sql, Timeouts timeouts, WorkStore store, Outbox outbox) {
    this.sql = sql;
    this.timeouts = timeouts;
    this.store = store;
    this.outbox = outbox;
  }

  /**
   * Enqueues the replacement, records the link and cancels the old work, in one transaction. The
   * old row is locked first, so a worker cannot finish it between the check and the cancel, and two
   * supersedes of the same work take turns: the second sees the first's link and is refused (one
   * live replacement per work; the replacement is what a later correction supersedes).
   */
  public SupersedeResult supersede(
      Connection c, String oldWorkId, Work replacement, String actor, String reason) {
    return Tx.run(
        c,
        timeouts,
        "supersede " + oldWorkId,
        tx -> {
          try (Statement s = tx.createStatement()) {
            s.execute(sql.supersedeReadCommitted);
          }
          LockedWork old = LockedWork.lock(tx, sql, oldWorkId);
          if (old == null) {
            // Finished work a worker moved to the history table: back into the work table, so
            // the checks and the cancel below meet it there as any finished row. Refused (done),
            // the transaction rolls back and it stays where it was.
            old = LockedWork.reopenAndLock(tx, sql, oldWorkId);
          }
          if (old == null) {
            throw new WorkNotFoundException(oldWorkId);
          }
          String state = old.state();
          // Read after the lock: a supersede of the same work that held it has committed its link.
          for (WorkDetail.SupersedeLink earlier :
              WorkQueries.links(tx, sql.showSupersededBy, oldWorkId)) {
            if (!earlier.workId().equals(replacement.workId())) {
              throw alreadySuperseded(oldWorkId, earlier.workId());
            }
          }
          List<WorkDetail.SupersedeLink> existing =
              WorkQueries.links(tx, sql.showSupersedes, replacement.workId());
          EnqueueResult enqueued = outbox.enqueue(tx, replacement);
          if (!enqueued.inserted()) {
            if (existing.size() == 1 && existing.get(0).supersedesWorkId().equals(oldWorkId)) {
              return new SupersedeResult(
                  oldWorkId, replacement.workId(), CancelResult.Status.ALREADY_FINISHED, true);
            }
            throw new SupersedeRefusedException(
                oldWorkId,
                "cannot supersede '"
                    + oldWorkId
                    + "': the replacement ID '"
                    + replacement.workId()
                    + "' is already used by other work; a corrected intention needs a new ID");
          }
          if (state.equals(WorkState.DONE.sql())) {
            throw new SupersedeRefusedException(
                oldWorkId,
                "cannot supersede '"
                    + oldWorkId
                    + "': it is done, so its effect happened; a correction now is a compensation,"
                    + " new work with its own identity");
          }
          try (PreparedStatement ps = tx.prepareStatement(sql.insertSupersedes)) {
            ps.setString(1, replacement.workId());
            ps.setString(2, oldWorkId);
            BoundText.bind(ps, 3, actor);
            BoundText.bind(ps, 4, reason);
            ps.executeUpdate();
          }
          WorkStore.CancelRow row =
              store.cancelInTransaction(
                  tx, oldWorkId, actor, "superseded by " + replacement.workId() + ": " + reason);
          return new SupersedeResult(
              oldWorkId, replacement.workId(), AdminStore.cancelStatus(row.result()), false);
        });
  }

  private static SupersedeRefusedException alreadySuperseded(String oldWorkId, String current) {
    return new SupersedeRefusedException(
        oldWorkId,
        current,
        "cannot supersede '"
            + oldWorkId
            + "': it is already superseded by '"
            + current
            + "'; to correct it again, supersede '"
            + current
            + "'");
  }
}
