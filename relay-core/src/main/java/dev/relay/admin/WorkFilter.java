package dev.relay.admin;

import dev.relay.WorkState;
import java.time.Duration;
import java.util.Objects;

/**
 * Which work an admin operation applies to. Every criterion is optional and they combine with AND;
 * {@link #all()} matches everything. Immutable: each method returns a copy.
 *
 * <pre>{@code
 * WorkFilter stuck = WorkFilter.all().state("failed").kind("order_received").errorKind("http_503");
 * }</pre>
 *
 * <p>Ages are measured from {@code created_at} on the database clock. Values are checked when the
 * filter is used (an unknown state or a negative age is refused before anything is sent).
 */
public final class WorkFilter {
  private static final WorkFilter ALL =
      new WorkFilter(null, null, null, null, null, null, null, null, false, null);

  private final String state;
  private final String kind;
  private final String queue;
  private final String orderingKey;
  private final Duration olderThan;
  private final Duration newerThan;
  private final String errorKind;
  private final String outcome;
  private final boolean blockedOnly;
  private final String blockedReason;

  private WorkFilter(
      String state,
      String kind,
      String queue,
      String orderingKey,
      Duration olderThan,
      Duration newerThan,
      String errorKind,
      String outcome,
      boolean blockedOnly,
      String blockedReason) {
    this.state = state;
    this.kind = kind;
    this.queue = queue;
    this.orderingKey = orderingKey;
    this.olderThan = olderThan;
    this.newerThan = newerThan;
    this.errorKind = errorKind;
    this.outcome = outcome;
    this.blockedOnly = blockedOnly;
    this.blockedReason = blockedReason;
  }

  /** A filter that matches all work. */
  public static WorkFilter all() {
    return ALL;
  }

  /**
   * Only work in {@code state}: {@code ready}, {@code running}, {@code done}, {@code failed} or
   * {@code cancelled}.
   */
  public WorkFilter state(String state) {
    return new WorkFilter(
        state,
        kind,
        queue,
        orderingKey,
        olderThan,
        newerThan,
        errorKind,
        outcome,
        blockedOnly,
        blockedReason);
  }

  /** Only work in {@code state}. */
  public WorkFilter state(WorkState state) {
    return state(state.sql());
  }

  /** Only work of {@code kind}. */
  public WorkFilter kind(String kind) {
    return new WorkFilter(
        state,
        kind,
        queue,
        orderingKey,
        olderThan,
        newerThan,
        errorKind,
        outcome,
        blockedOnly,
        blockedReason);
  }

  /** Only work in {@code queue}. */
  public WorkFilter queue(String queue) {
    return new WorkFilter(
        state,
        kind,
        queue,
        orderingKey,
        olderThan,
        newerThan,
        errorKind,
        outcome,
        blockedOnly,
        blockedReason);
  }

  /** Only work with ordering key {@code key}. */
  public WorkFilter orderingKey(String key) {
    return new WorkFilter(
        state,
        kind,
        queue,
        key,
        olderThan,
        newerThan,
        errorKind,
        outcome,
        blockedOnly,
        blockedReason);
  }

  /** Only work created at least {@code age} ago. */
  public WorkFilter olderThan(Duration age) {
    return new WorkFilter(
        state,
        kind,
        queue,
        orderingKey,
        age,
        newerThan,
        errorKind,
        outcome,
        blockedOnly,
        blockedReason);
  }

  /** Only work created less than {@code age} ago. */
  public WorkFilter newerThan(Duration age) {
    return new WorkFilter(
        state,
        kind,
        queue,
        orderingKey,
        olderThan,
        age,
        errorKind,
        outcome,
        blockedOnly,
        blockedReason);
  }

  /** Only work whose last error kind is {@code errorKind} (for example {@code deadline}). */
  public WorkFilter errorKind(String errorKind) {
    return new WorkFilter(
        state,
        kind,
        queue,
        orderingKey,
        olderThan,
        newerThan,
        errorKind,
        outcome,
        blockedOnly,
        blockedReason);
  }

  /**
   * Only work whose outcome evidence is {@code outcome}: {@code delivered}, {@code not_delivered}
   * or {@code unknown}.
   */
  public WorkFilter outcome(String outcome) {
    return new WorkFilter(
        state,
        kind,
        queue,
        orderingKey,
        olderThan,
        newerThan,
        errorKind,
        outcome,
        blockedOnly,
        blockedReason);
  }

  /**
   * Only work held by a dependency: ready, waiting for a dependency that failed, was cancelled or
   * superseded, or is gone, directly or through the work it waits for (docs/dependencies.md). Such
   * work is listed through the index of waiting dependents.
   */
  public WorkFilter blocked() {
    return new WorkFilter(
        state, kind, queue, orderingKey, olderThan, newerThan, errorKind, outcome, true, null);
  }

  /**
   * Only work held by a dependency for {@code reason}: {@code dependency_failed}, {@code
   * dependency_cancelled}, {@code dependency_superseded} or {@code dependency_missing} (implies
   * {@link #blocked()}).
   */
  public WorkFilter blockedReason(String reason) {
    return new WorkFilter(
        state, kind, queue, orderingKey, olderThan, newerThan, errorKind, outcome, true, reason);
  }

  /** Whether only work held by a dependency matches ({@link #blocked()}). */
  public boolean blockedOnly() {
    return blockedOnly;
  }

  /** The blocked-reason criterion, or {@code null} (any reason, when {@link #blockedOnly()}). */
  public String blockedReason() {
    return blockedReason;
  }

  /** The state criterion, or {@code null}. */
  public String state() {
    return state;
  }

  /** The kind criterion, or {@code null}. */
  public String kind() {
    return kind;
  }

  /** The queue criterion, or {@code null}. */
  public String queue() {
    return queue;
  }

  /** The ordering-key criterion, or {@code null}. */
  public String orderingKey() {
    return orderingKey;
  }

  /** The minimum age, or {@code null}. */
  public Duration olderThan() {
    return olderThan;
  }

  /** The maximum age, or {@code null}. */
  public Duration newerThan() {
    return newerThan;
  }

  /** The error-kind criterion, or {@code null}. */
  public String errorKind() {
    return errorKind;
  }

  /** The outcome criterion, or {@code null}. */
  public String outcome() {
    return outcome;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof WorkFilter f
        && Objects.equals(state, f.state)
        && Objects.equals(kind, f.kind)
        && Objects.equals(queue, f.queue)
        && Objects.equals(orderingKey, f.orderingKey)
        && Objects.equals(olderThan, f.olderThan)
        && Objects.equals(newerThan, f.newerThan)
        && Objects.equals(errorKind, f.errorKind)
        && Objects.equals(outcome, f.outcome)
        && blockedOnly == f.blockedOnly
        && Objects.equals(blockedReason, f.blockedReason);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        state,
        kind,
        queue,
        orderingKey,
        olderThan,
        newerThan,
        errorKind,
        outcome,
        blockedOnly,
        blockedReason);
  }

  @Override
  public String toString() {
    return "WorkFilter[state="
        + state
        + ", kind="
        + kind
        + ", queue="
        + queue
        + ", orderingKey="
        + orderingKey
        + ", olderThan="
        + olderThan
        + ", newerThan="
        + newerThan
        + ", errorKind="
        + errorKind
        + ", outcome="
        + outcome
        + ", blockedOnly="
        + blockedOnly
        + ", blockedReason="
        + blockedReason
        + "]";
  }
}
