package dev.relay.internal.runtime;

import dev.relay.RelayException;
import dev.relay.internal.store.Settlement;
import dev.relay.internal.store.WorkStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands back claims that never started (guarded, like any settlement), so another worker can take
 * them at once: through the completer while it records, directly once it has stopped. Only for
 * claims whose handler never ran: a claim whose call may be in flight is left to its lease.
 */
final class Releaser {
  private static final Logger log = LoggerFactory.getLogger(Releaser.class);

  private final Completions completions;
  private final TrackedConnections connections;
  private final WorkStore store;
  private final String workerId;
  private final Events events;
  private final LiveClaims live;

  Releaser(
      Completions completions,
      TrackedConnections connections,
      WorkStore store,
      String workerId,
      Events events,
      LiveClaims live) {
    this.completions = completions;
    this.connections = connections;
    this.store = store;
    this.workerId = workerId;
    this.events = events;
    this.live = live;
  }

  /** Releases an unstarted claim (its phase already moved to RELEASING by the caller). */
  void release(LiveClaim c) {
    if (completions.submit(c, new Settlement.Release(c.ref))) {
      return;
    }
    try (Connection conn = connections.open("release")) {
      boolean applied = store.release(conn, workerId, List.of(c.ref)).get(0).applied();
      if (applied) {
        events.released(c);
      }
    } catch (RelayException | SQLException e) {
      log.warn("releasing {} failed; it is left to its lease: {}", c, e.toString());
    } finally {
      live.ended(c);
    }
  }

  /** Releases {@code c} if it is still buffered (never started); otherwise leaves it. */
  boolean releaseIfBuffered(LiveClaim c) {
    if (c.phase.compareAndSet(LiveClaim.Phase.BUFFERED, LiveClaim.Phase.RELEASING)) {
      release(c);
      return true;
    }
    return false;
  }
}
