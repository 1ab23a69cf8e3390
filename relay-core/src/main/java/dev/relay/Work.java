package dev.relay;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One intention to enqueue: a stable work ID, a kind that selects the handler, and a JSON payload
 * that captures what must stay as it was when the intention was made (the agreed total, not a price
 * looked up later). Immutable; each {@code with}-style method returns a copy.
 *
 * <pre>{@code
 * Work ack = Work.of("order-103-ack", "order_received", ackJson)
 *     .queue("mail")
 *     .deadline(placedAt.plus(Duration.ofDays(2)));
 * }</pre>
 *
 * <p>Nothing is checked here (except that {@link #dependsOn} refuses null IDs); {@link
 * Outbox#enqueue} validates every field before anything is sent and names the first problem in an
 * {@link InvalidWorkException}.
 */
public final class Work {
  /** The queue used when none is named. */
  public static final String DEFAULT_QUEUE = "default";

  /** Attempts allowed when none are named (the kind's policy may stop earlier). */
  public static final int DEFAULT_MAX_ATTEMPTS = 25;

  private final String workId;
  private final String kind;
  private final String payload;
  private final String queue;
  private final int priority;
  private final Instant availableAt;
  private final Duration delay;
  private final Instant deadline;
  private final Integer maxAttempts; // null: not named by the producer
  private final String orderingKey;
  private final String group; // "" : no group
  private final List<String> dependsOn; // never null; empty: waits for nothing

  private Work(
      String workId,
      String kind,
      String payload,
      String queue,
      int priority,
      Instant availableAt,
      Duration delay,
      Instant deadline,
      Integer maxAttempts,
      String orderingKey,
      String group,
      List<String> dependsOn) {
    this.workId = workId;
    this.kind = kind;
    this.payload = payload;
    this.queue = queue;
    this.priority = priority;
    this.availableAt = availableAt;
    this.delay = delay;
    this.deadline = deadline;
    this.maxAttempts = maxAttempts;
    this.orderingKey = orderingKey;
    this.group = group;
    this.dependsOn = dependsOn;
  }

  /**
   * New work, available at once, in the default queue.
   *
   * @param workId the stable identity of this intention: 1-200 characters from {@code A-Z a-z 0-9 .
   *     _ - : / @ + = #}
   * @param kind selects the handler: 1-100 characters from {@code A-Z a-z 0-9 . _ - :}
   * @param payloadJson one JSON value (at most the outbox's payload limit, 1 MiB by default)
   */
  public static Work of(String workId, String kind, String payloadJson) {
    return new Work(
        workId, kind, payloadJson, DEFAULT_QUEUE, 0, null, null, null, null, null, "", List.of());
  }

  /** A copy in {@code queue} (1-100 characters from {@code A-Z a-z 0-9 . _ - :}). */
  public Work queue(String queue) {
    return new Work(
        workId,
        kind,
        payload,
        queue,
        priority,
        availableAt,
        delay,
        deadline,
        maxAttempts,
        orderingKey,
        group,
        dependsOn);
  }

  /** A copy with a claim priority: higher is claimed first among eligible work of a queue. */
  public Work priority(int priority) {
    return new Work(
        workId,
        kind,
        payload,
        queue,
        priority,
        availableAt,
        delay,
        deadline,
        maxAttempts,
        orderingKey,
        group,
        dependsOn);
  }

  /** A copy that no worker claims before {@code instant} (replaces any delay). */
  public Work availableAt(Instant instant) {
    return new Work(
        workId,
        kind,
        payload,
        queue,
        priority,
        instant,
        null,
        deadline,
        maxAttempts,
        orderingKey,
        group,
        dependsOn);
  }

  /**
   * A copy that no worker claims before {@code delay} has passed on the database clock, counted
   * from the enqueue (replaces any {@link #availableAt(Instant)}).
   */
  public Work delay(Duration delay) {
    return new Work(
        workId,
        kind,
        payload,
        queue,
        priority,
        null,
        delay,
        deadline,
        maxAttempts,
        orderingKey,
        group,
        dependsOn);
  }

  /**
   * A copy with a business deadline: once the database clock passes it, the work is not started
   * again and becomes {@code failed} with reason {@code deadline}. It cannot undo an action a
   * receiver already accepted.
   */
  public Work deadline(Instant deadline) {
    return new Work(
        workId,
        kind,
        payload,
        queue,
        priority,
        availableAt,
        delay,
        deadline,
        maxAttempts,
        orderingKey,
        group,
        dependsOn);
  }

  /** A copy allowing at most {@code maxAttempts} claims (1-10,000). */
  public Work maxAttempts(int maxAttempts) {
    return new Work(
        workId,
        kind,
        payload,
        queue,
        priority,
        availableAt,
        delay,
        deadline,
        maxAttempts,
        orderingKey,
        group,
        dependsOn);
  }

  /**
   * A copy with an ordering key: work with the same key is delivered in enqueue order, one item at
   * a time. The enqueue assigns the next sequence of the key in the producer's transaction; an item
   * is claimed only when every lower sequence of its key is done or cancelled (a failed item holds
   * its key until redriven or cancelled). Work without a key is unordered. Key: 1-200 characters
   * from the work-ID set.
   */
  public Work orderingKey(String orderingKey) {
    return new Work(
        workId,
        kind,
        payload,
        queue,
        priority,
        availableAt,
        delay,
        deadline,
        maxAttempts,
        orderingKey,
        group,
        dependsOn);
  }

  /**
   * A copy in a group, the unit of a per-group concurrency limit ({@link
   * KindPolicy#withMaxRunningPerGroup}): for example the customer whose receiver a limit protects.
   * 1-200 characters from the work-ID set, or {@code ""} for none (the default). Like the kind, the
   * group is fixed at the first enqueue: it is not part of the identity check, so a repeat under
   * the same ID with another group is "already enqueued" and keeps the stored group.
   */
  public Work group(String group) {
    return new Work(
        workId,
        kind,
        payload,
        queue,
        priority,
        availableAt,
        delay,
        deadline,
        maxAttempts,
        orderingKey,
        group,
        dependsOn);
  }

  /**
   * A copy that waits for other work: no worker claims it until every named work item is {@code
   * done}. Each ID must exist when this work is enqueued, as a row, a tombstone, or an item of the
   * same bulk call; a failed, cancelled or superseded dependency holds this work, shown as blocked
   * with reason {@code dependency_<state>}, until the dependency is redriven or this work is
   * cancelled. Like the group, dependencies are fixed by the first enqueue and are not part of the
   * identity check. Replaces any earlier list; duplicates count once.
   */
  public Work dependsOn(String... workIds) {
    if (workIds == null) {
      throw new InvalidWorkException(workId, "dependsOn", "is null");
    }
    List<String> ids = new ArrayList<>();
    for (String id : workIds) {
      if (id == null) {
        throw new InvalidWorkException(workId, "dependsOn", "contains null");
      }
      if (!ids.contains(id)) {
        ids.add(id);
      }
    }
    return new Work(
        workId,
        kind,
        payload,
        queue,
        priority,
        availableAt,
        delay,
        deadline,
        maxAttempts,
        orderingKey,
        group,
        List.copyOf(ids));
  }

  /** The work IDs this work waits for, in the order named; empty when it waits for nothing. */
  public List<String> dependsOn() {
    return dependsOn;
  }

  /** The group for per-group limits, or {@code ""} for none. */
  public String group() {
    return group;
  }

  /** The work ID. */
  public String workId() {
    return workId;
  }

  /** The kind. */
  public String kind() {
    return kind;
  }

  /** The payload as JSON text. */
  public String payload() {
    return payload;
  }

  /** The queue. */
  public String queue() {
    return queue;
  }

  /** The claim priority. */
  public int priority() {
    return priority;
  }

  /** The earliest claim time, or {@code null} (see {@link #delay()}). */
  public Instant availableAt() {
    return availableAt;
  }

  /** The delay from enqueue, or {@code null}. */
  public Duration delay() {
    return delay;
  }

  /** The business deadline, or {@code null}. */
  public Instant deadline() {
    return deadline;
  }

  /**
   * The attempt cap named by {@link #maxAttempts(int)}, or {@link #DEFAULT_MAX_ATTEMPTS} when none
   * was named (then the kind's registered policy decides, and this default applies only to a kind
   * with none).
   */
  public int maxAttempts() {
    return maxAttempts == null ? DEFAULT_MAX_ATTEMPTS : maxAttempts;
  }

  /**
   * Whether the producer named a cap with {@link #maxAttempts(int)}. Only a named cap is stored
   * with the work; the claim applies the lower of it and the kind's registered cap.
   */
  public boolean hasMaxAttempts() {
    return maxAttempts != null;
  }

  /** The ordering key, or {@code null} for unordered work. */
  public String orderingKey() {
    return orderingKey;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Work w
        && Objects.equals(workId, w.workId)
        && Objects.equals(kind, w.kind)
        && Objects.equals(payload, w.payload)
        && Objects.equals(queue, w.queue)
        && priority == w.priority
        && Objects.equals(availableAt, w.availableAt)
        && Objects.equals(delay, w.delay)
        && Objects.equals(deadline, w.deadline)
        && Objects.equals(maxAttempts, w.maxAttempts)
        && Objects.equals(orderingKey, w.orderingKey)
        && Objects.equals(group, w.group)
        && dependsOn.equals(w.dependsOn);
  }

  @Override
  public int hashCode() {
    return Objects.hash(workId, kind, payload, queue, priority, availableAt, delay, deadline);
  }

  @Override
  public String toString() {
    return "Work[" + workId + ", kind=" + kind + ", queue=" + queue + "]";
  }
}
