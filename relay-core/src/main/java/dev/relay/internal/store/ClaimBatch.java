package dev.relay.internal.store;

import java.util.List;

/**
 * The result of one claim transaction. An empty batch does not mean the queue is empty: rows locked
 * by another claimer were skipped, not waited for.
 *
 * @param claimed rows now held by this worker
 * @param retired rows ended by a cap instead (deadline, exhausted attempts, horizon passed, cancel
 *     request)
 * @param last the last of those rows in claim order, where a following claim may resume; {@code
 *     null} when the batch is empty
 */
public record ClaimBatch(List<ClaimedWork> claimed, List<RetiredWork> retired, ClaimPosition last) {
  /** A batch without a resume position. */
  public ClaimBatch(List<ClaimedWork> claimed, List<RetiredWork> retired) {
    this(claimed, retired, null);
  }

  /** Copies the lists. */
  public ClaimBatch {
    claimed = List.copyOf(claimed);
    retired = List.copyOf(retired);
  }

  /** How many claims took over an expired lease. */
  public long reclaimed() {
    return claimed.stream().filter(ClaimedWork::reclaimed).count()
        + retired.stream().filter(RetiredWork::afterExpiredLease).count();
  }
}
