package dev.relay;

/**
 * What {@link Relay#cancel} did. Every call is recorded in the cancel audit with its actor and
 * reason, whatever the result.
 *
 * @param workId the work ID
 * @param status what happened
 * @param previousState the state the work had, or {@code null} when it does not exist
 */
public record CancelResult(String workId, Status status, String previousState) {
  /** What happened. */
  public enum Status {
    /**
     * The work was ready (or waiting for a retry), or failed, and is now {@code cancelled}: a
     * failed item is cancelled to release the ordering key it holds.
     */
    CANCELLED,
    /**
     * The work is running: a cancel request was recorded. Its worker sees it at the next lease
     * renewal and tells the handler; the work ends {@code cancelled}, or {@code done} if the effect
     * happened anyway. An in-flight call is not recalled.
     */
    CANCEL_REQUESTED,
    /** The work had already ended ({@code done} or {@code cancelled}): unchanged. */
    ALREADY_FINISHED,
    /** No work has this ID. */
    NOT_FOUND
  }
}
