package dev.relay;

/**
 * What an enqueue did with one item.
 *
 * @param workId the work ID
 * @param status whether a row was inserted or an equal intention was already stored
 */
public record EnqueueResult(String workId, Status status) {
  /** Whether the call inserted the work. */
  public enum Status {
    /** A new row was inserted in the caller's transaction. */
    ENQUEUED,
    /**
     * The same ID, kind and a jsonb-equal payload were already stored (or purged, leaving a
     * tombstone): an idempotent producer retry. Nothing was inserted.
     */
    ALREADY_ENQUEUED
  }

  /** Whether this call inserted the row. */
  public boolean inserted() {
    return status == Status.ENQUEUED;
  }
}
