package dev.relay;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

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
 * <p>Two methods check their argument when called, and throw {@link InvalidWorkException} naming
 * the field: {@link #dependsOn} when the array is null ({@code dependsOn is null}) or holds a null
 * ID ({@code dependsOn contains null}), and {@link #traceContext} when the map is null ({@code
 * traceContext is null}) or holds a null name or value ({@code traceContext contains null}).
 * Nothing else is checked here, not even by those two (an ID's form, the number of dependencies, a
 * field's name or length): {@link Outbox#enqueue} validates every field before anything is sent and
 * names the first problem in an {@link InvalidWorkException}; {@link Outbox#validate} does the same
 * with no connection.
 */
public final class Work {
  /** The queue used when none is named. */
  public static final String DEFAULT_QUEUE = "default";

  /** Attempts allowed when none are named (the kind's policy may stop earlier). */
  public static final int DEFAULT_MAX_ATTEMPTS = 25;

  /** The fields; never changed once a work item holds them (each method changes a copy). */
  private final Fields f;

  private Work(Fields f) {
    this.f = f;
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
    Fields n = new Fields();
    n.workId = workId;
    n.kind = kind;
    n.payload = payloadJson;
    return new Work(n);
  }

  private Work with(Consumer<Fields> change) {
    Fields copy = f.copy();
    change.accept(copy);
    return new Work(copy);
  }

  /** A copy in {@code queue} (1-100 characters from {@code A-Z a-z 0-9 . _ - :}). */
  public Work queue(String queue) {
    return with(n -> n.queue = queue);
  }

  /** A copy with a claim priority: higher is claimed first among eligible work of a queue. */
  public Work priority(int priority) {
    return with(n -> n.priority = priority);
  }

  /** A copy that no worker claims before {@code instant} (replaces any delay). */
  public Work availableAt(Instant instant) {
    return with(
        n -> {
          n.availableAt = instant;
          n.delay = null;
        });
  }

  /**
   * A copy that no worker claims before {@code delay} has passed on the database clock, counted
   * from the enqueue (replaces any {@link #availableAt(Instant)}).
   */
  public Work delay(Duration delay) {
    return with(
        n -> {
          n.availableAt = null;
          n.delay = delay;
        });
  }

  /**
   * A copy with a business deadline: once the database clock passes it, the work is not started
   * again and becomes {@code failed} with reason {@code deadline}. It cannot undo an action a
   * receiver already accepted. A deadline not after an explicit {@link #availableAt} is refused (it
   * could never run); one that has already passed when the work is enqueued (or that passes during
   * a {@link #delay}) is accepted, and the first claim ends the work as {@code failed} ({@code
   * deadline}), visibly, without running it: the producer's transaction is not failed for work that
   * came too late.
   */
  public Work deadline(Instant deadline) {
    return with(n -> n.deadline = deadline);
  }

  /** A copy allowing at most {@code maxAttempts} claims (1-10,000). */
  public Work maxAttempts(int maxAttempts) {
    return with(n -> n.maxAttempts = maxAttempts);
  }

  /**
   * A copy with an ordering key: work with the same key is delivered in enqueue order, one item at
   * a time. The enqueue assigns the next sequence of the key in the producer's transaction; an item
   * is claimed only when every lower sequence of its key is done or cancelled (a failed item holds
   * its key until redriven or cancelled). Work without a key is unordered. Key: 1-200 characters
   * from the work-ID set.
   */
  public Work orderingKey(String orderingKey) {
    return with(n -> n.orderingKey = orderingKey);
  }

  /**
   * A copy in a group, the unit of a per-group concurrency limit ({@link
   * KindPolicy#withMaxRunningPerGroup}): for example the customer whose receiver a limit protects.
   * 1-200 characters from the work-ID set, or {@code ""} for none (the default). Like the kind, the
   * group is fixed at the first enqueue: it is not part of the identity check, so a repeat under
   * the same ID with another group is "already enqueued" and keeps the stored group.
   */
  public Work group(String group) {
    return with(n -> n.group = group);
  }

  /**
   * A copy that waits for other work: no worker claims it until every named work item is {@code
   * done}. Each ID must exist when this work is enqueued, as a row, a tombstone, or an item of the
   * same bulk call; a failed, cancelled or superseded dependency holds this work, shown as blocked
   * with reason {@code dependency_<state>}, until the dependency is redriven or this work is
   * cancelled. Like the group, dependencies are fixed by the first enqueue and are not part of the
   * identity check. Replaces any earlier list; duplicates count once.
   *
   * @throws InvalidWorkException when {@code workIds} is null or holds null; the IDs' form and
   *     number are checked by the enqueue
   */
  public Work dependsOn(String... workIds) {
    if (workIds == null) {
      throw new InvalidWorkException(f.workId, "dependsOn", "is null");
    }
    List<String> ids = new ArrayList<>();
    for (String id : workIds) {
      if (id == null) {
        throw new InvalidWorkException(f.workId, "dependsOn", "contains null");
      }
      if (!ids.contains(id)) {
        ids.add(id);
      }
    }
    return with(n -> n.dependsOn = List.copyOf(ids));
  }

  /**
   * A copy carrying its own trace context: W3C Trace Context carrier fields ({@code traceparent},
   * {@code tracestate}, {@code baggage}) stored with the work in place of what the outbox's {@link
   * RelayTracing} would capture, for example when a bulk enqueue gathers items from several
   * incoming requests, each with its own trace. An empty map stores no context (even when a trace
   * is current). Like the group, the context is fixed by the first enqueue: it is neither part of
   * the payload nor of the identity check, nor of this object's equality. At most 16 fields, names
   * of 1-64 characters from {@code a-z 0-9 - _ .}, values of at most 4,096 characters.
   *
   * @throws InvalidWorkException when {@code fields} is null or holds a null name or value; the
   *     fields' number, names and lengths are checked by the enqueue
   */
  public Work traceContext(Map<String, String> fields) {
    if (fields == null) {
      throw new InvalidWorkException(f.workId, "traceContext", "is null");
    }
    Map<String, String> copy = new LinkedHashMap<>();
    fields.forEach(
        (k, v) -> {
          if (k == null || v == null) {
            throw new InvalidWorkException(f.workId, "traceContext", "contains null");
          }
          copy.put(k, v);
        });
    Map<String, String> fixed = Collections.unmodifiableMap(copy);
    return with(n -> n.traceContext = fixed);
  }

  /**
   * The trace context named by {@link #traceContext(Map)}, or {@code null} when none was named
   * (then the outbox's {@link RelayTracing} supplies the current one).
   */
  public Map<String, String> traceContext() {
    return f.traceContext;
  }

  /** The work IDs this work waits for, in the order named; empty when it waits for nothing. */
  public List<String> dependsOn() {
    return f.dependsOn;
  }

  /** The group for per-group limits, or {@code ""} for none. */
  public String group() {
    return f.group;
  }

  /** The work ID. */
  public String workId() {
    return f.workId;
  }

  /** The kind. */
  public String kind() {
    return f.kind;
  }

  /** The payload as JSON text. */
  public String payload() {
    return f.payload;
  }

  /** The queue. */
  public String queue() {
    return f.queue;
  }

  /** The claim priority. */
  public int priority() {
    return f.priority;
  }

  /** The earliest claim time, or {@code null} (see {@link #delay()}). */
  public Instant availableAt() {
    return f.availableAt;
  }

  /** The delay from enqueue, or {@code null}. */
  public Duration delay() {
    return f.delay;
  }

  /** The business deadline, or {@code null}. */
  public Instant deadline() {
    return f.deadline;
  }

  /**
   * The attempt cap named by {@link #maxAttempts(int)}, or {@link #DEFAULT_MAX_ATTEMPTS} when none
   * was named (then the kind's registered policy decides, and this default applies only to a kind
   * with none).
   */
  public int maxAttempts() {
    return f.maxAttempts == null ? DEFAULT_MAX_ATTEMPTS : f.maxAttempts;
  }

  /**
   * Whether the producer named a cap with {@link #maxAttempts(int)}. Only a named cap is stored
   * with the work; the claim applies the lower of it and the kind's registered cap.
   */
  public boolean hasMaxAttempts() {
    return f.maxAttempts != null;
  }

  /** The ordering key, or {@code null} for unordered work. */
  public String orderingKey() {
    return f.orderingKey;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Work w && f.values().equals(w.f.values());
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        f.workId, f.kind, f.payload, f.queue, f.priority, f.availableAt, f.delay, f.deadline);
  }

  @Override
  public String toString() {
    return "Work[" + f.workId + ", kind=" + f.kind + ", queue=" + f.queue + "]";
  }

  /** The fields, changed only on a copy before the work item that holds it is made. */
  private static final class Fields {
    String workId;
    String kind;
    String payload;
    String queue = DEFAULT_QUEUE;
    int priority;
    Instant availableAt;
    Duration delay;
    Instant deadline;
    Integer maxAttempts; // null: not named by the producer
    String orderingKey;
    String group = ""; // "": no group
    List<String> dependsOn = List.of(); // empty: waits for nothing
    Map<String, String> traceContext; // null: the outbox's RelayTracing decides

    Fields copy() {
      Fields n = new Fields();
      n.workId = workId;
      n.kind = kind;
      n.payload = payload;
      n.queue = queue;
      n.priority = priority;
      n.availableAt = availableAt;
      n.delay = delay;
      n.deadline = deadline;
      n.maxAttempts = maxAttempts;
      n.orderingKey = orderingKey;
      n.group = group;
      n.dependsOn = dependsOn;
      n.traceContext = traceContext;
      return n;
    }

    /** Every field but the trace context, in order, for equality (nulls kept). */
    List<Object> values() {
      return Arrays.asList(
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
  }
}
