package dev.relay.internal.runtime;

import dev.relay.RelayException;
import dev.relay.internal.jdbc.Coordination;
import dev.relay.internal.store.Settlement;
import dev.relay.internal.store.WorkStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
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

  /**
   * Releases an unstarted claim at once, on its own connection, then wakes the workers on {@code
   * channel} (when not null) so that another one takes it now rather than at its next poll. For a
   * handed-off claim that cannot start within its lease's start margin (issue 24): its row was
   * inserted claimed, so no notification announced it. The release is guarded and not counted, as
   * every release; if it fails, the claim is left to its lease.
   */
  void releaseNow(LiveClaim c, String channel) {
    try (Connection conn = connections.open("release")) {
      boolean applied = store.release(conn, workerId, List.of(c.ref)).get(0).applied();
      if (applied) {
        events.released(c);
        if (channel != null) {
          try (PreparedStatement ps = conn.prepareStatement(Coordination.NOTIFY)) {
            ps.setString(1, channel);
            ps.execute(); // auto-commit: sent at once, after the release committed
          }
        }
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
