package dev.relay.internal.store;

import java.time.Duration;

/**
 * A guarded write that ends a claim. Each names the claim it ends; the store applies it only if
 * that claim is still current (running, owned by this worker, same generation, lease unexpired).
 */
public sealed interface Settlement {
  /** The longest error or reason text stored; longer text is cut and ends with "...". */
  int MAX_TEXT = 4000;

  /** The claim this settlement ends. */
  ClaimRef ref();

  /**
   * {@code text} cut to {@link #MAX_TEXT} characters (never inside a surrogate pair), so a handler
   * that returns a megabyte of reason does not bloat every row version it settles.
   */
  static String clip(String text) {
    if (text.length() <= MAX_TEXT) {
      return text;
    }
    int end = Character.isHighSurrogate(text.charAt(MAX_TEXT - 1)) ? MAX_TEXT - 1 : MAX_TEXT;
    return text.substring(0, end) + "...";
  }

  /** Evidence of the effect, as stored in {@code outcome}. */
  enum Evidence {
    /** The receiver accepted it. */
    DELIVERED("delivered"),
    /** Known not to have reached the receiver. */
    NOT_DELIVERED("not_delivered"),
    /** May or may not have had its effect. */
    UNKNOWN("unknown");

    private final String sql;

    Evidence(String sql) {
      this.sql = sql;
    }

    /** The value stored in the database. */
    public String sql() {
      return sql;
    }
  }

  /**
   * Done: the receiver accepted the work.
   *
   * @param ref the claim
   * @param receiverRef the receiver's reference for the effect, or {@code null}
   * @param resultJson the result as JSON text, or {@code null}
   * @param milestone what the acceptance means ({@code accepted}, {@code queued}, {@code
   *     delivered}), or {@code null}
   */
  record Complete(ClaimRef ref, String receiverRef, String resultJson, String milestone)
      implements Settlement {}

  /**
   * Back to ready after {@code delay} on the database clock, with the error recorded.
   *
   * @param ref the claim
   * @param delay the delay before the next attempt
   * @param errorKind a short classification of the error
   * @param error the error text
   * @param evidence what is known about the effect of this attempt
   */
  record Retry(ClaimRef ref, Duration delay, String errorKind, String error, Evidence evidence)
      implements Settlement {}

  /**
   * Back to ready after {@code delay} on the database clock, the attempt given back, because the
   * attempt is known not to have had its effect. The store counts it against the kind's snooze cap;
   * past the cap it is recorded as an ordinary retry (error kind {@value #SNOOZE_LIMIT}).
   *
   * @param ref the claim
   * @param delay the delay before the next attempt
   * @param reason why, stored as the last error
   */
  record Snooze(ClaimRef ref, Duration delay, String reason) implements Settlement {
    /** The error kind of a snooze past its kind's cap, recorded as a retry. */
    public static final String SNOOZE_LIMIT = "snooze_limit";
  }

  /**
   * Failed permanently, with its evidence kept for a deliberate redrive.
   *
   * @param ref the claim
   * @param errorKind a short classification, for example {@code permanent} or {@code timeout}
   * @param error the error text
   * @param evidence what is known about the effect of this attempt
   */
  record Fail(ClaimRef ref, String errorKind, String error, Evidence evidence)
      implements Settlement {}

  /**
   * Back to ready now, for another worker, because the handler never started: the attempt is not
   * counted.
   *
   * @param ref the claim
   */
  record Release(ClaimRef ref) implements Settlement {}

  /**
   * Cancelled: the worker answered a cancel request.
   *
   * @param ref the claim
   * @param reason why
   * @param evidence what is known about the effect of this attempt
   */
  record Cancelled(ClaimRef ref, String reason, Evidence evidence) implements Settlement {}
}
