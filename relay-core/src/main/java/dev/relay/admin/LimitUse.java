package dev.relay.admin;

import dev.relay.FlowLimits;
import java.time.Instant;
import java.util.List;

/**
 * One limited kind's use of its flow limits now, read by {@link Admin#limitUse()}: what the next
 * claim of the kind would be measured against.
 *
 * @param kind the kind
 * @param limits its limits as the workers registered them (the {@code limiter} table)
 * @param running live claims of the kind (running with an unexpired lease), against {@link
 *     FlowLimits#maxRunning()}
 * @param busiestGroups with a per-group limit, the groups with the most live claims (at most 10,
 *     busiest first); empty without one or when none runs
 * @param windowClaims with a rate limit, the claims within the last {@link
 *     FlowLimits#rateInterval()}, against {@link FlowLimits#rateLimit()}; {@code null} without one
 * @param at when it was measured (the database clock)
 */
public record LimitUse(
    String kind,
    FlowLimits limits,
    long running,
    List<GroupUse> busiestGroups,
    Long windowClaims,
    Instant at) {

  /**
   * Live claims of one group of a kind, against {@link FlowLimits#maxRunningPerGroup()}.
   *
   * @param group the group key ({@code ""}: work enqueued without a group)
   * @param running its live claims
   */
  public record GroupUse(String group, long running) {}
}
