package dev.relay.admin;

import dev.relay.WorkState;
import dev.relay.internal.store.BlockedReason;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;

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
  /** The states {@link #state(String)} takes, in the order work moves through them. */
  public static final List<String> STATES =
      Stream.of(WorkState.values()).map(WorkState::sql).toList();

  /** The outcome evidence {@link #outcome(String)} takes. */
  public static final List<String> OUTCOMES = List.of("delivered", "not_delivered", "unknown");

  /** The reasons {@link #blockedReason(String)} takes, in the order the docs list them. */
  public static final List<String> BLOCKED_REASONS = BlockedReason.REASONS;

  /**
   * The longest age {@link #olderThan(Duration)} and {@link #newerThan(Duration)} take: 36,500 days
   * (100 years). Ages run from zero to this, both included.
   */
  public static final Duration MAX_AGE = Duration.ofDays(36_500);

  private static final WorkFilter ALL = new WorkFilter(new Criteria());

  /** The criteria; never changed once a filter holds them (each method changes a copy). */
  private final Criteria c;

  private WorkFilter(Criteria c) {
    this.c = c;
  }

  /** A filter that matches all work. */
  public static WorkFilter all() {
    return ALL;
  }

  private WorkFilter with(Consumer<Criteria> change) {
    Criteria copy = c.copy();
    change.accept(copy);
    return new WorkFilter(copy);
  }

  /**
   * Only work in {@code state}: {@code ready}, {@code running}, {@code done}, {@code failed} or
   * {@code cancelled}.
   */
  public WorkFilter state(String state) {
    return with(n -> n.state = state);
  }

  /** Only work in {@code state}. */
  public WorkFilter state(WorkState state) {
    return state(state.sql());
  }

  /** Only work of {@code kind}. */
  public WorkFilter kind(String kind) {
    return with(n -> n.kind = kind);
  }

  /** Only work in {@code queue}. */
  public WorkFilter queue(String queue) {
    return with(n -> n.queue = queue);
  }

  /** Only work with ordering key {@code key}. */
  public WorkFilter orderingKey(String key) {
    return with(n -> n.orderingKey = key);
  }

  /** Only work created at least {@code age} ago (zero to {@link #MAX_AGE}). */
  public WorkFilter olderThan(Duration age) {
    return with(n -> n.olderThan = age);
  }

  /** Only work created less than {@code age} ago (zero to {@link #MAX_AGE}). */
  public WorkFilter newerThan(Duration age) {
    return with(n -> n.newerThan = age);
  }

  /** Only work whose last error kind is {@code errorKind} (for example {@code deadline}). */
  public WorkFilter errorKind(String errorKind) {
    return with(n -> n.errorKind = errorKind);
  }

  /**
   * Only work whose outcome evidence is {@code outcome}: {@code delivered}, {@code not_delivered}
   * or {@code unknown}.
   */
  public WorkFilter outcome(String outcome) {
    return with(n -> n.outcome = outcome);
  }

  /**
   * Only work held by a dependency: ready, waiting for a dependency that failed, was cancelled or
   * superseded, or is gone, directly or through the work it waits for (docs/dependencies.md). Such
   * work is listed through the index of waiting dependents.
   */
  public WorkFilter blocked() {
    return with(
        n -> {
          n.blockedOnly = true;
          n.blockedReason = null;
        });
  }

  /**
   * Only work held by a dependency for {@code reason}: {@code dependency_failed}, {@code
   * dependency_cancelled}, {@code dependency_superseded} or {@code dependency_missing} (implies
   * {@link #blocked()}).
   */
  public WorkFilter blockedReason(String reason) {
    return with(
        n -> {
          n.blockedOnly = true;
          n.blockedReason = reason;
        });
  }

  /** Whether only work held by a dependency matches ({@link #blocked()}). */
  public boolean blockedOnly() {
    return c.blockedOnly;
  }

  /** The blocked-reason criterion, or {@code null} (any reason, when {@link #blockedOnly()}). */
  public String blockedReason() {
    return c.blockedReason;
  }

  /** The state criterion, or {@code null}. */
  public String state() {
    return c.state;
  }

  /** The kind criterion, or {@code null}. */
  public String kind() {
    return c.kind;
  }

  /** The queue criterion, or {@code null}. */
  public String queue() {
    return c.queue;
  }

  /** The ordering-key criterion, or {@code null}. */
  public String orderingKey() {
    return c.orderingKey;
  }

  /** The minimum age, or {@code null}. */
  public Duration olderThan() {
    return c.olderThan;
  }

  /** The maximum age, or {@code null}. */
  public Duration newerThan() {
    return c.newerThan;
  }

  /** The error-kind criterion, or {@code null}. */
  public String errorKind() {
    return c.errorKind;
  }

  /** The outcome criterion, or {@code null}. */
  public String outcome() {
    return c.outcome;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof WorkFilter f && c.values().equals(f.c.values());
  }

  @Override
  public int hashCode() {
    return c.values().hashCode();
  }

  @Override
  public String toString() {
    return "WorkFilter[state="
        + c.state
        + ", kind="
        + c.kind
        + ", queue="
        + c.queue
        + ", orderingKey="
        + c.orderingKey
        + ", olderThan="
        + c.olderThan
        + ", newerThan="
        + c.newerThan
        + ", errorKind="
        + c.errorKind
        + ", outcome="
        + c.outcome
        + ", blockedOnly="
        + c.blockedOnly
        + ", blockedReason="
        + c.blockedReason
        + "]";
  }

  /** The criteria as fields; a filter's copy is changed only before the filter is made. */
  private static final class Criteria {
    String state;
    String kind;
    String queue;
    String orderingKey;
    Duration olderThan;
    Duration newerThan;
    String errorKind;
    String outcome;
    boolean blockedOnly;
    String blockedReason;

    Criteria copy() {
      Criteria n = new Criteria();
      n.state = state;
      n.kind = kind;
      n.queue = queue;
      n.orderingKey = orderingKey;
      n.olderThan = olderThan;
      n.newerThan = newerThan;
      n.errorKind = errorKind;
      n.outcome = outcome;
      n.blockedOnly = blockedOnly;
      n.blockedReason = blockedReason;
      return n;
    }

    /** Every criterion, in order, for equality (nulls kept). */
    List<Object> values() {
      return Arrays.asList(
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
  }
}
