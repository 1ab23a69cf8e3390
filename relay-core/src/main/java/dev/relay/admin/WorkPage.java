package dev.relay.admin;

import java.util.List;

/**
 * One page of {@link Admin#list}, oldest work first (by creation time, then work ID).
 *
 * @param items the items of this page
 * @param nextCursor pass it to the next call for the following page; {@code null} when this was the
 *     last page. Opaque: do not build or parse it
 */
public record WorkPage(List<WorkItem> items, String nextCursor) {
  /** Copies the items. */
  public WorkPage {
    items = List.copyOf(items);
  }

  /** Whether another page follows. */
  public boolean hasMore() {
    return nextCursor != null;
  }
}
