package dev.relay.internal.store;

import java.time.OffsetDateTime;
import java.util.Objects;

/**
 * Where a claim scan stopped, in claim order ({@code priority} descending, then {@code
 * available_at}, then {@code work_id}): the last row a claim took or ended. The next claim of a
 * backlog may resume after it instead of reading the claim index from its start; see {@link
 * ClaimRequest#resumeAfter()}.
 *
 * @param priority the row's priority
 * @param availableAt the row's {@code available_at}, at the database's microsecond precision
 * @param workId the row's work ID
 */
public record ClaimPosition(int priority, OffsetDateTime availableAt, String workId) {
  /** Checks the parts. */
  public ClaimPosition {
    Objects.requireNonNull(availableAt, "availableAt");
    Objects.requireNonNull(workId, "workId");
  }
}
