package dev.relay.internal.runtime;

import dev.relay.Claim;
import dev.relay.Outcome;
import dev.relay.RelayEventListener;
import dev.relay.RelayTracing;
import java.time.Duration;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The user's {@link RelayEventListener} (and the {@link RelayTracing} hook, when one is
 * configured), called so that an exception from either is logged and otherwise ignored: a listener
 * must never break the runtime.
 */
final class Events {
  private static final Logger log = LoggerFactory.getLogger(Events.class);

  private final RelayEventListener[] listeners;

  /** The user's listener alone. */
  Events(RelayEventListener listener) {
    this(listener, RelayTracing.NONE);
  }

  /** The user's listener, then the tracing hook (left out when it is {@link RelayTracing#NONE}). */
  Events(RelayEventListener listener, RelayTracing tracing) {
    this.listeners =
        tracing == RelayTracing.NONE
            ? new RelayEventListener[] {listener}
            : new RelayEventListener[] {listener, tracing};
  }

  void abandoned(Claim c, String operation) {
    eachForClaim("abandoned", c, l -> l.abandoned(c, operation));
  }

  void claimed(Claim c) {
    each("claimed", l -> l.claimed(c));
  }

  void reclaimed(Claim c, String previousOwner) {
    each("reclaimedAfterLeaseExpiry", l -> l.reclaimedAfterLeaseExpiry(c, previousOwner));
  }

  void started(Claim c) {
    each("started", l -> l.started(c));
  }

  void finished(Claim c, Outcome o, Throwable e, Duration d) {
    each("finished", l -> l.finished(c, o, e, d));
  }

  void completed(Claim c) {
    eachForClaim("completed", c, l -> l.completed(c));
  }

  void retried(Claim c, Duration delay, String kind, String error) {
    eachForClaim("retried", c, l -> l.retried(c, delay, kind, error));
  }

  void snoozed(Claim c, Duration delay, String reason) {
    eachForClaim("snoozed", c, l -> l.snoozed(c, delay, reason));
  }

  void failed(Claim c, String kind, String error) {
    eachForClaim("failed", c, l -> l.failed(c, kind, error));
  }

  void cancelled(Claim c, String reason) {
    eachForClaim("cancelled", c, l -> l.cancelled(c, reason));
  }

  void released(Claim c) {
    eachForClaim("released", c, l -> l.released(c));
  }

  void stale(Claim c, String operation) {
    eachForClaim("stale", c, l -> l.stale(c, operation));
  }

  void timedOut(Claim c) {
    each("timedOut", l -> l.timedOut(c));
  }

  void cancelRequested(Claim c) {
    each("cancelRequested", l -> l.cancelRequested(c));
  }

  void retired(String workId, String kind, String queue, String state, String reason) {
    each("retired", l -> l.retired(workId, kind, queue, state, reason));
  }

  void listenerConnected() {
    each("listenerConnected", RelayEventListener::listenerConnected);
  }

  void listenerLost(Throwable e) {
    each("listenerLost", l -> l.listenerLost(e));
  }

  void notificationsUnavailable(String reason) {
    each("notificationsUnavailable", l -> l.notificationsUnavailable(reason));
  }

  void failoverUnsafe(String reason) {
    each("failoverUnsafe", l -> l.failoverUnsafe(reason));
  }

  void error(String what, Throwable e) {
    each("error", l -> l.error(what, e));
  }

  /** {@link #each}, with the claim's {@link dev.relay.RelayMdc} keys on this thread meanwhile. */
  private void eachForClaim(String event, Claim c, Consumer<RelayEventListener> call) {
    AttemptMdc.put(c);
    try {
      each(event, call);
    } finally {
      AttemptMdc.clear();
    }
  }

  private void each(String event, Consumer<RelayEventListener> call) {
    for (RelayEventListener l : listeners) {
      try {
        call.accept(l);
      } catch (RuntimeException e) {
        log.warn("RelayEventListener.{} threw; ignored (listeners must not throw)", event, e);
      }
    }
  }
}
