package dev.relay.internal.runtime;

import dev.relay.Claim;
import dev.relay.Outcome;
import dev.relay.RelayEventListener;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The user's {@link RelayEventListener}, called so that an exception from it is logged and
 * otherwise ignored: a listener must never break the runtime.
 */
final class Events {
  private static final Logger log = LoggerFactory.getLogger(Events.class);

  private final RelayEventListener l;

  Events(RelayEventListener listener) {
    this.l = listener;
  }

  void abandoned(Claim c, String operation) {
    safe("abandoned", () -> l.abandoned(c, operation));
  }

  void claimed(Claim c) {
    safe("claimed", () -> l.claimed(c));
  }

  void reclaimed(Claim c, String previousOwner) {
    safe("reclaimedAfterLeaseExpiry", () -> l.reclaimedAfterLeaseExpiry(c, previousOwner));
  }

  void started(Claim c) {
    safe("started", () -> l.started(c));
  }

  void finished(Claim c, Outcome o, Throwable e, Duration d) {
    safe("finished", () -> l.finished(c, o, e, d));
  }

  void completed(Claim c) {
    safe("completed", () -> l.completed(c));
  }

  void retried(Claim c, Duration delay, String kind, String error) {
    safe("retried", () -> l.retried(c, delay, kind, error));
  }

  void failed(Claim c, String kind, String error) {
    safe("failed", () -> l.failed(c, kind, error));
  }

  void cancelled(Claim c, String reason) {
    safe("cancelled", () -> l.cancelled(c, reason));
  }

  void released(Claim c) {
    safe("released", () -> l.released(c));
  }

  void stale(Claim c, String operation) {
    safe("stale", () -> l.stale(c, operation));
  }

  void timedOut(Claim c) {
    safe("timedOut", () -> l.timedOut(c));
  }

  void cancelRequested(Claim c) {
    safe("cancelRequested", () -> l.cancelRequested(c));
  }

  void retired(String workId, String kind, String queue, String state, String reason) {
    safe("retired", () -> l.retired(workId, kind, queue, state, reason));
  }

  void listenerConnected() {
    safe("listenerConnected", l::listenerConnected);
  }

  void listenerLost(Throwable e) {
    safe("listenerLost", () -> l.listenerLost(e));
  }

  void notificationsUnavailable(String reason) {
    safe("notificationsUnavailable", () -> l.notificationsUnavailable(reason));
  }

  void failoverUnsafe(String reason) {
    safe("failoverUnsafe", () -> l.failoverUnsafe(reason));
  }

  void error(String what, Throwable e) {
    safe("error", () -> l.error(what, e));
  }

  private static void safe(String event, Runnable call) {
    try {
      call.run();
    } catch (RuntimeException e) {
      log.warn("RelayEventListener.{} threw; ignored (listeners must not throw)", event, e);
    }
  }
}
