package dev.relay.admin;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * Throughput, failures by reason and creation-to-completion percentiles over a {@link ChartWindow},
 * for every queue and kind or one of each, read by {@link Admin#charts} from the rollup that the
 * maintenance leader folds ({@link Maintenance}), never from the work table.
 *
 * <p><b>What the numbers are.</b> Each finished item is counted once, in the bucket of its {@code
 * completed_at}, when the leader folds it: a redriven item that ends again is counted again there
 * (an end, not an item). Work still running is not in it, and work that finished within the last
 * minute or so may not be yet: everything up to {@link #foldedThrough()} is. Purging work does not
 * change the rollup.
 *
 * <p><b>Percentiles and their error.</b> Each bucket keeps a histogram of its done work's
 * creation-to-completion times in 128 bins on a fixed log scale (four bins per doubling, from 1 ms
 * to about 35 days); histograms add bin by bin, so a percentile over many buckets comes from their
 * sum. The percentile is the nearest-rank one (the smallest time with at least that share of the
 * items at or below it), reported as the geometric middle of its bin: within 9.05 % (2^(1/8) - 1)
 * of the exact value for times from 1 ms to 35 days; below 1 ms as 0.5 ms; above 35 days as 35 days
 * (a lower bound).
 *
 * @param window the window
 * @param queue the queue asked for, or {@code null} for every queue
 * @param kind the kind asked for, or {@code null} for every kind
 * @param from the start of the first point
 * @param foldedThrough everything that finished at or before this instant is counted ({@code null}
 *     before the first fold)
 * @param points one per step of the window, oldest first, steps without any work as zeros
 * @param failuresByReason failed work in the window by recorded error kind ({@code unknown} without
 *     one), largest first
 * @param done done work in the window
 * @param failed failed work in the window
 * @param cancelled cancelled work in the window
 * @param p50 the median creation-to-completion time of the window's done work, or {@code null}
 * @param p95 the 95th percentile, or {@code null}
 * @param pairs every (queue, kind) that finished work in the window (whatever was asked), busiest
 *     first, at most {@link Admin#MAX_CHART_PAIRS}
 */
public record Charts(
    ChartWindow window,
    String queue,
    String kind,
    Instant from,
    Instant foldedThrough,
    List<ChartPoint> points,
    Map<String, Long> failuresByReason,
    long done,
    long failed,
    long cancelled,
    Duration p50,
    Duration p95,
    List<ChartPair> pairs) {
  /** Copies the lists and map (read-only; the map keeps its order). */
  public Charts {
    points = List.copyOf(points);
    failuresByReason =
        java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(failuresByReason));
    pairs = List.copyOf(pairs);
  }
}
