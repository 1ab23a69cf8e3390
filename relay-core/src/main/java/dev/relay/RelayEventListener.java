package dev.relay;

import java.time.Duration;

/**
 * Receives a {@link Relay}'s events, for metrics and tracing. Every method has a no-op default;
 * override the ones you need.
 *
 * <p><b>Contract:</b> methods are called synchronously on Relay's own threads (claimer, handler,
 * completer, lease keeper, listener), so they <b>must be fast and must not block</b>; they must not
 * throw (an exception is caught, logged at WARN, and otherwise ignored); they may be called
 * concurrently from several threads. Events are reported after the fact they describe: {@link
 * #completed} after the done was committed, never before.
 *
 * <table>
 *   <caption>Events</caption>
 *   <tr><th>Event</th><th>When</th><th>Pairs with</th></tr>
 *   <tr><td>{@link #claimed}</td><td>a claim committed</td><td>started, or released</td></tr>
 *   <tr><td>{@link #reclaimedAfterLeaseExpiry}</td><td>the claim took over an expired lease
 *       (counted: a repeated claim)</td><td>-</td></tr>
 *   <tr><td>{@link #started}</td><td>a handler starts</td><td>finished</td></tr>
 *   <tr><td>{@link #finished}</td><td>a handler returned or threw</td>
 *       <td>completed / retried / snoozed / failed / cancelled / stale</td></tr>
 *   <tr><td>{@link #completed}, {@link #retried}, {@link #snoozed}, {@link #failed},
 *       {@link #cancelled}</td>
 *       <td>the outcome was recorded</td><td>-</td></tr>
 *   <tr><td>{@link #released}</td><td>an unstarted claim was given back</td><td>-</td></tr>
 *   <tr><td>{@link #stale}</td><td>a guarded write (outcome or renewal) was refused</td>
 *       <td>-</td></tr>
 *   <tr><td>{@link #timedOut}</td><td>a handler passed its kind's max run time</td><td>finished, later</td></tr>
 *   <tr><td>{@link #cancelRequested}</td><td>a renewal saw a cancel request</td><td>-</td></tr>
 *   <tr><td>{@link #retired}</td><td>the claim statement ended work by a cap (deadline,
 *       attempts, cancel request)</td><td>-</td></tr>
 *   <tr><td>{@link #listenerConnected}, {@link #listenerLost}</td><td>the LISTEN connection came
 *       up / went down</td><td>-</td></tr>
 *   <tr><td>{@link #notificationsUnavailable}</td><td>the LISTEN connection cannot receive
 *       notifications (a transaction pooler); the worker polls instead</td><td>-</td></tr>
 *   <tr><td>{@link #failoverUnsafe}</td><td>at start: a failover of the database could lose
 *       commits that returned</td><td>-</td></tr>
 *   <tr><td>{@link #error}</td><td>a database operation failed and will be retried</td>
 *       <td>-</td></tr>
 * </table>
 */
public interface RelayEventListener {
  /** A listener that ignores every event. */
  RelayEventListener NONE = new RelayEventListener() {};

  /** A claim committed; the work waits in the local buffer for a handler slot. */
  default void claimed(Claim claim) {}

  /** The claim took over from {@code previousOwner}, whose lease had expired. */
  default void reclaimedAfterLeaseExpiry(Claim claim, String previousOwner) {}

  /** A handler starts. */
  default void started(Claim claim) {}

  /**
   * A handler returned ({@code outcome} set) or threw ({@code error} set) after {@code duration}.
   */
  default void finished(Claim claim, Outcome outcome, Throwable error, Duration duration) {}

  /** Done was recorded. */
  default void completed(Claim claim) {}

  /** A retry was recorded, available again after {@code delay}. */
  default void retried(Claim claim, Duration delay, String errorKind, String error) {}

  /**
   * A {@linkplain Outcome#snooze snooze} was recorded: the work is available again after {@code
   * delay}, its attempt given back. A snooze past its kind's {@link KindPolicy#maxSnoozes()} is
   * recorded as a retry and reported by {@link #retried} (error kind {@code snooze_limit}) or, with
   * the attempts used up, {@link #failed} ({@code attempts_exhausted}) instead.
   */
  default void snoozed(Claim claim, Duration delay, String reason) {}

  /** The work was recorded as {@code failed}. */
  default void failed(Claim claim, String errorKind, String error) {}

  /** The work was recorded as {@code cancelled}. */
  default void cancelled(Claim claim, String reason) {}

  /** An unstarted claim was released for another worker. */
  default void released(Claim claim) {}

  /**
   * A guarded write ({@code operation}: {@code renew}, {@code complete}, {@code retry}, ...) was
   * refused: the claim is stale. Counted and recorded; never retried.
   */
  default void stale(Claim claim, String operation) {}

  /**
   * This worker gave up an outcome ({@code operation}: {@code complete}, {@code retry}, {@code
   * fail}, {@code cancelled} or {@code release}) without recording it: PostgreSQL could not be
   * reached before the claim's lease passed, so the write could no longer apply. The work runs
   * again under a new claim. The outcome is kept in the attempt history (ending {@code abandoned},
   * with its evidence and receiver reference) once PostgreSQL can be reached again.
   */
  default void abandoned(Claim claim, String operation) {}

  /**
   * A handler passed its kind's {@link KindPolicy#maxRunTime()}: interrupted, and its lease is no
   * longer renewed.
   */
  default void timedOut(Claim claim) {}

  /** A renewal saw that an operator asked to cancel the work. */
  default void cancelRequested(Claim claim) {}

  /**
   * The claim statement ended work instead of claiming it, because of a cap.
   *
   * @param workId the work ID
   * @param kind the kind
   * @param state {@code failed} or {@code cancelled}
   * @param reason {@code deadline}, {@code attempts_exhausted}, {@code horizon_passed} or {@code
   *     cancelled}
   */
  default void retired(String workId, String kind, String state, String reason) {}

  /**
   * The claim statement ended work instead of claiming it, because of a cap; the same event as
   * {@link #retired(String, String, String, String)} with the work's queue. Relay calls this one;
   * its default calls the four-argument form, so override either.
   *
   * @param workId the work ID
   * @param kind the kind
   * @param queue the queue
   * @param state {@code failed} or {@code cancelled}
   * @param reason {@code deadline}, {@code attempts_exhausted}, {@code horizon_passed} or {@code
   *     cancelled}
   */
  default void retired(String workId, String kind, String queue, String state, String reason) {
    retired(workId, kind, state, reason);
  }

  /** The LISTEN connection is (again) listening. */
  default void listenerConnected() {}

  /** The LISTEN connection failed; it is re-established with backoff. */
  default void listenerLost(Throwable error) {}

  /**
   * The LISTEN connection goes through a connection pooler that does not keep a session per client
   * (PgBouncer in transaction pooling mode): a notification sent to it did not arrive. The runtime
   * stops listening and finds new work by polling every poll interval; give it a direct connection
   * ({@link Relay.Builder#listenConnections}) to wake at once again. Logged at WARN.
   *
   * @param reason what was seen, naming the setting to change
   */
  default void notificationsUnavailable(String reason) {}

  /**
   * At start: standbys stream from the database asynchronously (or commits do not wait for them),
   * so a failover to one can lose commits that returned and hand one claim generation out twice.
   * Logged at WARN; see {@code docs/operations.md}, Failover.
   *
   * @param reason the replication facts seen and what to change
   */
  default void failoverUnsafe(String reason) {}

  /** A database operation ({@code what}) failed; Relay retries it. */
  default void error(String what, Throwable error) {}
}
