package dev.relay.admin;

import dev.relay.RelayException;
import java.time.Instant;

/** A redrive was refused; nothing changed. The reason says which check refused it. */
public final class RedriveRefusedException extends RelayException {
  private static final long serialVersionUID = 1L;

  /** Which check refused the redrive. */
  public enum Reason {
    /** The work is running: its worker holds a claim that may be in flight. Never overridable. */
    RUNNING,
    /** The work is not failed; {@link RedriveRequest#forced()} overrides. */
    NOT_FAILED,
    /**
     * The first attempt is older than the kind's deduplication horizon, so the receiver may no
     * longer recognise the work ID; {@link RedriveRequest#overridingHorizon()} overrides.
     */
    PAST_DEDUP_HORIZON
  }

  private final String workId;
  private final Reason reason;
  private final Instant firstAttemptAt;
  private final Instant horizonEnd;

  /**
   * @param workId the work ID
   * @param reason which check refused
   * @param message the readable account
   * @param firstAttemptAt the first attempt, for {@link Reason#PAST_DEDUP_HORIZON}, else {@code
   *     null}
   * @param horizonEnd when the horizon ended, for {@link Reason#PAST_DEDUP_HORIZON}, else {@code
   *     null}
   */
  public RedriveRefusedException(
      String workId, Reason reason, String message, Instant firstAttemptAt, Instant horizonEnd) {
    super(message);
    this.workId = workId;
    this.reason = reason;
    this.firstAttemptAt = firstAttemptAt;
    this.horizonEnd = horizonEnd;
  }

  /** The work ID. */
  public String workId() {
    return workId;
  }

  /** Which check refused. */
  public Reason reason() {
    return reason;
  }

  /** The first attempt, when the horizon refused; else {@code null}. */
  public Instant firstAttemptAt() {
    return firstAttemptAt;
  }

  /** When the dedup horizon ended, when the horizon refused; else {@code null}. */
  public Instant horizonEnd() {
    return horizonEnd;
  }
}
