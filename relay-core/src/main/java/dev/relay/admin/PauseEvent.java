package dev.relay.admin;

import java.time.Instant;

/**
 * One row of the pause audit: a pause, a resume, or an automatic resume that the maintenance leader
 * recorded when a pause's {@code resumeAt} had passed. See {@link Admin#pauseHistory(int)}.
 *
 * @param action {@code pause}, {@code resume} or {@code auto_resume}
 * @param queue the target's queue, or {@code null} for every queue
 * @param kind the target's kind, or {@code null} for every kind
 * @param actor who paused or resumed ({@code relay maintenance} for an automatic resume)
 * @param reason why
 * @param at when, on the database clock
 * @param resumeAt for a pause, the automatic resume asked for; for a resume, the lifted pause's; or
 *     {@code null}
 * @param pausedAt for a resume, when the lifted pause began; {@code null} when nothing was paused
 */
public record PauseEvent(
    String action,
    String queue,
    String kind,
    String actor,
    String reason,
    Instant at,
    Instant resumeAt,
    Instant pausedAt) {

  /** The target in words, as {@link Pause#target()} writes it. */
  public String target() {
    return new Pause(queue, kind, actor, reason, pausedAt, resumeAt).target();
  }
}
