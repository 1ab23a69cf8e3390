package dev.relay.admin;

import java.time.Instant;

/**
 * A pause in force: work of {@code queue} and {@code kind} (either may be {@code null}, meaning
 * every queue or every kind, never both) is not claimed by any worker until it is resumed ({@link
 * Admin#resume}) or {@code resumeAt} passes on the database clock. Running work finishes, new work
 * is still accepted, and delayed or retried work keeps its times. See {@link Admin#pause}.
 *
 * @param queue the paused queue, or {@code null} for every queue
 * @param kind the paused kind, or {@code null} for every kind
 * @param actor who paused it
 * @param reason why
 * @param pausedAt when the pause began (on the database clock); a repeated pause of the same target
 *     keeps the first one's time
 * @param resumeAt when the pause ends by itself, or {@code null} for never (until resumed)
 */
public record Pause(
    String queue, String kind, String actor, String reason, Instant pausedAt, Instant resumeAt) {

  /** Whether this pause holds work of {@code queue} and {@code kind}. */
  public boolean holds(String queue, String kind) {
    return (this.queue == null || this.queue.equals(queue))
        && (this.kind == null || this.kind.equals(kind));
  }

  /** The target in words: {@code queue 'q'}, {@code kind 'k'} or {@code queue 'q', kind 'k'}. */
  public String target() {
    if (queue == null) {
      return "kind '" + kind + "'";
    }
    return kind == null ? "queue '" + queue + "'" : "queue '" + queue + "', kind '" + kind + "'";
  }
}
