package dev.relay;

import dev.relay.internal.jdbc.Coordination;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.SqlErrors;
import dev.relay.internal.jdbc.Tx;
import dev.relay.internal.json.JsonText;
import dev.relay.internal.runtime.Handoffs;
import dev.relay.internal.store.Enqueuer;
import dev.relay.internal.store.WorkStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The producer side: adds work to the outbox inside the caller's own transaction, on the caller's
 * own connection, so that the work and the business change commit or roll back together.
 *
 * <pre>{@code
 * Outbox outbox = Outbox.create();                 // schema "relay"; share one instance
 * try (Connection c = dataSource.getConnection()) {
 *   c.setAutoCommit(false);
 *   shop.storeOrder(c, order103);
 *   outbox.enqueue(c, Work.of("order-103-ack", "order_received", ackJson));
 *   c.commit();                                    // both or neither
 * }
 * }</pre>
 *
 * <p><b>On any exception from {@code enqueue}, roll back the whole transaction</b>, business change
 * included: the business change must not commit without the work it called for. Relay never
 * commits, rolls back, or swallows an error on the caller's connection.
 *
 * <p>Identity: enqueueing an ID that is already stored with the same kind and a jsonb-equal payload
 * (key order, whitespace and {@code 29.00} versus {@code 29.0} do not matter) returns {@link
 * EnqueueResult.Status#ALREADY_ENQUEUED}; anything else under a used ID throws {@link
 * WorkConflictException}, also when the old work has been purged and only its tombstone remains.
 * Under REPEATABLE READ or SERIALIZABLE, a duplicate inserted by a concurrent transaction surfaces
 * as a {@link RetryableException} (SQLState 40001).
 *
 * <p>What enqueueing promises, and what it does not: committed work will be attempted by a running
 * worker, and rolled-back work never exists. It does not make the receiver's effect happen exactly
 * once (delivery can repeat; the receiver deduplicates on the work ID), it orders nothing except
 * work that shares an ordering key (by its sequence), and purging the work later does not make a
 * receiver forget it: its tombstone only keeps the ID bound to this payload.
 *
 * <p>Validation happens before anything is sent: a refused item throws {@link InvalidWorkException}
 * and the transaction is untouched; {@link #validate} and {@link #validateAll} run the same checks
 * with no connection, for a tool that refuses bad input before it opens one. A payload must be one
 * JSON value that {@code jsonb} accepts, at most {@link #DEFAULT_MAX_PAYLOAD_BYTES} of UTF-8 unless
 * configured, nested at most 512 levels of arrays and objects (deeper JSON is refused as "too
 * deeply nested"). Thread-safe; holds no connection.
 */
public final class Outbox {
  /** The payload limit used when none is configured: 1 MiB of UTF-8. */
  public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1 << 20;

  /** Longest work ID, in characters. */
  public static final int MAX_WORK_ID_LENGTH = 200;

  /** The most work items one item may wait for ({@link Work#dependsOn}). */
  public static final int MAX_DEPENDENCIES = 100;

  /** Longest kind or queue name, in characters. */
  public static final int MAX_NAME_LENGTH = 100;

  /** Most items in one bulk call. */
  public static final int MAX_BATCH_SIZE = 10_000;

  /**
   * The longest {@link Work#delay} (100 years, as 36,500 days; the database's own enqueue function
   * holds the same bound). Delays run from zero to this, both included.
   */
  public static final Duration MAX_DELAY = Duration.ofDays(36_500);

  private static final Pattern WORK_ID = Pattern.compile("[A-Za-z0-9._\\-:/@+=#]+");
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._\\-:]+");
  private static final int MAX_ATTEMPTS_LIMIT = 10_000;
  private static final Pattern TRACE_FIELD = Pattern.compile("[a-z0-9._\\-]{1,64}");
  private static final int MAX_TRACE_FIELDS = 16;
  private static final int MAX_TRACE_VALUE_LENGTH = 4096;
  private static final Instant EARLIEST = Instant.EPOCH;
  private static final Instant LATEST = Instant.parse("9999-12-31T00:00:00Z");

  private final SchemaName schema;
  private final int maxPayloadBytes;
  private final Enqueuer enqueuer;
  private final RelayTracing tracing;
  private final Relay handoffTo; // null: no local hand-off

  private Outbox(
      SchemaName schema,
      int maxPayloadBytes,
      Enqueuer enqueuer,
      RelayTracing tracing,
      Relay handoffTo) {
    this.schema = schema;
    this.maxPayloadBytes = maxPayloadBytes;
    this.enqueuer = enqueuer;
    this.tracing = tracing;
    this.handoffTo = handoffTo;
  }

  /** An outbox on schema {@code relay} with the default payload limit. */
  public static Outbox create() {
    return builder().build();
  }

  /** A builder for a configured outbox. */
  public static Builder builder() {
    return new Builder();
  }

  /** Configures an {@link Outbox}; every setting is validated at {@link #build()}. */
  public static final class Builder {
    private String schema = "relay";
    private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;
    private boolean notifications = true;
    private RelayTracing tracing = RelayTracing.NONE;

    private Builder() {}

    /** The schema holding Relay's tables (default {@code relay}). */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** The largest payload accepted, in UTF-8 bytes (1 to 64 MiB; default 1 MiB). */
    public Builder maxPayloadBytes(int maxPayloadBytes) {
      this.maxPayloadBytes = maxPayloadBytes;
      return this;
    }

    /**
     * Whether a transaction that enqueues work wakes the workers with {@code NOTIFY} on channel
     * {@code relay_<schema>} (default on). One notification per transaction reaches the listeners,
     * however many items it enqueues: PostgreSQL delivers identical notifications of one
     * transaction once, and it sends them only at commit. NOTIFY takes a database-wide lock while
     * committing, which serialises the commits of notifying transactions; at very high enqueue
     * rates turn it off and let the workers poll.
     */
    public Builder notifications(boolean notifications) {
      this.notifications = notifications;
      return this;
    }

    /**
     * The tracing hook (default {@link RelayTracing#NONE}): each enqueue stores the trace context
     * it reports as current with the work, in the same statement, unless an item names its own
     * ({@link Work#traceContext(java.util.Map)}). With none, nothing is read or stored.
     */
    public Builder tracing(RelayTracing tracing) {
      this.tracing = Objects.requireNonNull(tracing, "tracing");
      return this;
    }

    /** Validates the settings and builds the outbox. */
    public Outbox build() {
      JsonText.checkLimitSetting(maxPayloadBytes);
      SchemaName name = SchemaName.of(schema);
      if (notifications) {
        Coordination.checkedChannel(name, "schema");
      }
      return new Outbox(name, maxPayloadBytes, new Enqueuer(name, notifications), tracing, null);
    }
  }

  /** The schema this outbox writes to. */
  public String schema() {
    return schema.sql();
  }

  /**
   * This outbox (same schema, payload limit and notifications), handing new work off to {@code
   * relay}, a runtime of this process built with {@link Relay.Builder#localHandoff(boolean)
   * localHandoff(true)} on the same schema: work that a claim of {@code relay} would take now is
   * inserted already claimed by it, and starts as soon as {@link #commitAndStart} has committed,
   * with no claim round trip. While {@code relay} is not running, or for any other work, it
   * enqueues as usual.
   *
   * <pre>{@code
   * Outbox outbox = Outbox.create().handingOffTo(relay);
   * try (Connection c = dataSource.getConnection()) {
   *   c.setAutoCommit(false);
   *   shop.storeOrder(c, order103);
   *   outbox.enqueue(c, Work.of("order-103-ack", "order_received", ackJson));
   *   outbox.commitAndStart(c);   // commits; then the handler starts here at once
   * }
   * }</pre>
   *
   * <p>Nothing starts without proof of commit: only {@link #commitAndStart} (or {@link
   * HandedOffWork#start()} after a commit a framework performed) starts handed-off work, and only
   * when the COMMIT returned normally. After a rollback, a failed or an uncertain commit, or a
   * commit made directly on the connection, committed work waits out its lease and is then claimed
   * by any worker. The database has the last word on every item (see {@code docs/protocol.md},
   * "Local hand-off"); the statement needs INSERT on the claim columns and EXECUTE on {@code
   * handoff_lease}.
   *
   * @throws InvalidConfigurationException if {@code relay} does not hand off or uses another schema
   */
  public Outbox handingOffTo(Relay relay) {
    Objects.requireNonNull(relay, "relay");
    if (!relay.localHandoff()) {
      throw new InvalidConfigurationException(
          "localHandoff",
          "the relay must be built with localHandoff(true) to take work by hand-off");
    }
    if (!relay.config().schema().equals(schema.sql())) {
      throw new InvalidConfigurationException(
          "schema",
          "the outbox writes to '"
              + schema.sql()
              + "' but the relay claims from '"
              + relay.config().schema()
              + "'");
    }
    return new Outbox(schema, maxPayloadBytes, enqueuer, tracing, relay);
  }

  /**
   * Commits the transaction open on {@code c} and then, only if the COMMIT returned normally,
   * starts the work it handed off (see {@link #handingOffTo}). Without hand-off this is {@code
   * c.commit()}.
   *
   * @throws TransactionRequiredException if {@code c} is closed or in auto-commit mode
   * @throws CommitOutcomeUnknownException if the connection was lost during COMMIT: the transaction
   *     may or may not have committed; nothing was started. Not a {@link RetryableException}:
   *     re-read whether the transaction's rows are there before repeating it
   * @throws RetryableException if the commit failed in a way that a repeat may cure (nothing was
   *     committed or started)
   */
  public void commitAndStart(Connection c) {
    if (Tx.requireOpen(c)) {
      throw new TransactionRequiredException(
          "commitAndStart commits the caller's transaction: the connection is in auto-commit"
              + " mode, so there is none");
    }
    Handoffs handoffs = handoffTo == null ? null : handoffTo.handoffs();
    HandedOffWork work = HandedOffWork.none();
    if (handoffs != null && handoffs.hasWaiting(c)) {
      String transaction;
      try {
        transaction = WorkStore.currentTransaction(c, schema);
      } catch (SQLException e) {
        throw SqlErrors.translate("reading the transaction to commit", e);
      }
      // Only rows this very transaction inserted: a transaction that ended without this outbox
      // seeing it (the caller committed or rolled back itself) proves nothing about its rows.
      work = HandedOffWork.of(handoffs, handoffs.take(c, transaction == null ? "" : transaction));
    }
    try {
      c.commit();
    } catch (SQLException e) {
      work.discard();
      throw SqlErrors.translateCommit("commit", e);
    } catch (RuntimeException e) {
      work.discard();
      throw e;
    }
    work.start();
  }

  /**
   * Rolls back the transaction open on {@code c} and gives up the work it handed off (nothing of it
   * starts). Without hand-off this is {@code c.rollback()}.
   *
   * @throws TransactionRequiredException if {@code c} is closed or in auto-commit mode
   */
  public void rollback(Connection c) {
    if (Tx.requireOpen(c)) {
      throw new TransactionRequiredException(
          "rollback rolls back the caller's transaction: the connection is in auto-commit mode,"
              + " so there is none");
    }
    Handoffs handoffs = handoffTo == null ? null : handoffTo.handoffs();
    HandedOffWork work =
        handoffs == null
            ? HandedOffWork.none()
            : HandedOffWork.of(handoffs, handoffs.take(c, null));
    try {
      c.rollback();
    } catch (SQLException e) {
      throw SqlErrors.translate("rollback", e);
    } finally {
      work.discard();
    }
  }

  /**
   * Takes the work that the transaction open on {@code c} handed off so far, for a caller that
   * commits by other means (a framework's transaction manager): call {@link HandedOffWork#start()}
   * only after that commit returned normally, {@link HandedOffWork#discard()} otherwise. Take it
   * after the transaction's last enqueue, or take again after later ones; each item is returned
   * once. Empty without hand-off.
   */
  public HandedOffWork takeHandedOff(Connection c) {
    Handoffs handoffs = handoffTo == null ? null : handoffTo.handoffs();
    return handoffs == null
        ? HandedOffWork.none()
        : HandedOffWork.of(handoffs, handoffs.take(c, null));
  }

  /**
   * Adds {@code work} in the transaction open on {@code c}. See the class comment for identity and
   * errors; on any exception, roll back.
   *
   * @throws TransactionRequiredException if {@code c} is closed or in auto-commit mode
   * @throws InvalidWorkException if the work is invalid (nothing was sent)
   * @throws WorkConflictException if the ID is used by a different intention
   * @throws RetryableException on a serialization failure, deadlock or lost connection
   */
  public EnqueueResult enqueue(Connection c, Work work) {
    return enqueueAll(c, List.of(requireWork(work, 0))).get(0);
  }

  /**
   * Adds every item in one round trip, in the transaction open on {@code c}. A call that names one
   * ID twice is refused, not merged. Results come in the order of {@code works}. On any exception,
   * roll back.
   *
   * @throws TransactionRequiredException if {@code c} is closed or in auto-commit mode
   * @throws InvalidWorkException if any item is invalid or an ID repeats (nothing was sent)
   * @throws WorkConflictException if an ID is used by a different intention
   * @throws RetryableException on a serialization failure, deadlock or lost connection
   */
  public List<EnqueueResult> enqueueAll(Connection c, List<Work> works) {
    validateAll(works);
    if (Tx.requireOpen(c)) {
      throw new TransactionRequiredException(
          "enqueue needs the business transaction: the connection is in auto-commit mode, so"
              + " the work would commit on its own; call setAutoCommit(false) first");
    }
    if (works.isEmpty()) {
      return List.of();
    }
    Map<String, String> current = null;
    if (tracing != RelayTracing.NONE) {
      current = tracing.currentContext();
      validateTraceContext(null, current);
    }
    Handoffs handoffs = handoffTo == null ? null : handoffTo.handoffs();
    Enqueuer.HandoffRequest request = handoffs == null ? null : handoffs.reserve(works);
    if (request == null) {
      return enqueuer.enqueue(c, works, current);
    }
    List<Enqueuer.HandedOff> handedOff = new ArrayList<>();
    long sent = handoffs.nanoTime();
    boolean ok = false;
    try {
      List<EnqueueResult> results = enqueuer.enqueue(c, works, current, request, handedOff);
      ok = true;
      return results;
    } finally {
      // After any exception the transaction must roll back: nothing of it is handed off.
      handoffs.inserted(c, request, works, ok ? handedOff : List.of(), sent);
    }
  }

  /**
   * Checks {@code work} as {@link #enqueue} does before it sends anything, with no connection:
   * every field against the rules its {@link Work} setter names and this outbox's payload limit.
   * For a tool that takes work from a person (a form, a command line) and wants to refuse bad input
   * before it opens a connection or a transaction. Calling it is optional: enqueue checks again.
   *
   * <p>What needs the database is not checked here: whether the ID is used by another intention,
   * whether the dependencies exist, and the trace context that the outbox's {@link RelayTracing}
   * supplies at enqueue.
   *
   * @throws InvalidWorkException naming the first problem: the field, and the allowed range
   */
  public void validate(Work work) {
    checkFields(requireWork(work, 0));
  }

  /**
   * Checks {@code works} as {@link #enqueueAll} does before it sends anything, with no connection:
   * each item as {@link #validate(Work)} does, at most {@link #MAX_BATCH_SIZE} items, no ID named
   * twice, and no dependency cycle among the items. What needs the database is left to enqueue, as
   * for {@link #validate(Work)}.
   *
   * @throws InvalidWorkException naming the first problem: the item's ID and the field
   */
  public void validateAll(List<Work> works) {
    if (works == null) {
      throw new InvalidWorkException(null, "works", "is null");
    }
    if (works.size() > MAX_BATCH_SIZE) {
      throw new InvalidWorkException(
          null, "works", "has " + works.size() + " items; the limit is " + MAX_BATCH_SIZE);
    }
    Set<String> ids = new HashSet<>();
    for (int i = 0; i < works.size(); i++) {
      Work w = requireWork(works.get(i), i);
      checkFields(w);
      if (!ids.add(w.workId())) {
        throw new InvalidWorkException(
            w.workId(), "workId", "appears more than once in one bulk call");
      }
    }
    refuseCycles(works);
  }

  /**
   * Refuses a cycle among the items of one call (a dependency outside the call already exists, so
   * it cannot wait for anything in the call): depth-first, naming the first item found on a cycle.
   */
  private static void refuseCycles(List<Work> works) {
    Map<String, List<String>> edges = new HashMap<>();
    for (Work w : works) {
      if (!w.dependsOn().isEmpty()) {
        edges.put(w.workId(), w.dependsOn());
      }
    }
    Map<String, Boolean> finished = new HashMap<>(); // false: on the current path
    for (String start : edges.keySet()) {
      Deque<Iterator<String>> path = new ArrayDeque<>();
      Deque<String> names = new ArrayDeque<>();
      if (finished.containsKey(start)) {
        continue;
      }
      finished.put(start, false);
      path.push(edges.get(start).iterator());
      names.push(start);
      while (!path.isEmpty()) {
        Iterator<String> next = path.peek();
        if (!next.hasNext()) {
          finished.put(names.pop(), true);
          path.pop();
          continue;
        }
        String d = next.next();
        Boolean seen = finished.get(d);
        if (Boolean.FALSE.equals(seen)) {
          throw new InvalidWorkException(
              d, "dependsOn", "is part of a dependency cycle within one bulk call");
        }
        if (seen == null && edges.containsKey(d)) {
          finished.put(d, false);
          path.push(edges.get(d).iterator());
          names.push(d);
        }
      }
    }
  }

  private static Work requireWork(Work w, int index) {
    if (w == null) {
      throw new InvalidWorkException(null, "works[" + index + "]", "is null");
    }
    return w;
  }

  /**
   * At most 16 fields, names 1-64 characters from a-z 0-9 - _ ., values up to 4,096 characters
   * without NUL.
   */
  private static void validateTraceContext(String id, Map<String, String> fields) {
    if (fields == null) {
      return;
    }
    if (fields.size() > MAX_TRACE_FIELDS) {
      throw new InvalidWorkException(
          id, "traceContext", "has " + fields.size() + " fields; the limit is " + MAX_TRACE_FIELDS);
    }
    for (Map.Entry<String, String> e : fields.entrySet()) {
      if (e.getKey() == null || !TRACE_FIELD.matcher(e.getKey()).matches()) {
        throw new InvalidWorkException(
            id,
            "traceContext",
            "field name '" + e.getKey() + "' must be 1-64 characters from a-z 0-9 - _ .");
      }
      if (e.getValue() == null || e.getValue().length() > MAX_TRACE_VALUE_LENGTH) {
        throw new InvalidWorkException(
            id,
            "traceContext",
            "field '"
                + e.getKey()
                + "' must have a value of at most "
                + MAX_TRACE_VALUE_LENGTH
                + " characters");
      }
      if (e.getValue().indexOf('\u0000') >= 0) {
        // PostgreSQL's text and jsonb cannot hold it: the insert would fail and abort the
        // producer's transaction
        throw new InvalidWorkException(
            id, "traceContext", "field '" + e.getKey() + "' has a NUL character (\\u0000)");
      }
    }
  }

  /** The checks of one item's fields, in the order its problems are reported. */
  private void checkFields(Work w) {
    String id = w.workId();
    validateTraceContext(id, w.traceContext());
    if (id == null || id.isEmpty()) {
      throw new InvalidWorkException(null, "workId", "is empty");
    }
    if (id.length() > MAX_WORK_ID_LENGTH) {
      throw new InvalidWorkException(
          null, "workId", "has " + id.length() + " characters; the limit is " + MAX_WORK_ID_LENGTH);
    }
    if (!WORK_ID.matcher(id).matches()) {
      throw new InvalidWorkException(
          null, "workId", "'" + id + "' may only contain A-Z a-z 0-9 . _ - : / @ + = #");
    }
    name(id, "kind", w.kind());
    String key = w.orderingKey();
    if (key != null
        && (key.isEmpty()
            || key.length() > MAX_WORK_ID_LENGTH
            || !WORK_ID.matcher(key).matches())) {
      throw new InvalidWorkException(
          id,
          "orderingKey",
          "'"
              + key
              + "' must be 1-"
              + MAX_WORK_ID_LENGTH
              + " characters from A-Z a-z 0-9 . _ - : / @ + = #");
    }
    name(id, "queue", w.queue());
    String group = w.group();
    if (group == null
        || group.length() > MAX_WORK_ID_LENGTH
        || !(group.isEmpty() || WORK_ID.matcher(group).matches())) {
      throw new InvalidWorkException(
          id,
          "group",
          "'"
              + group
              + "' must be empty (no group) or 1-"
              + MAX_WORK_ID_LENGTH
              + " characters from A-Z a-z 0-9 . _ - : / @ + = #");
    }
    if (w.dependsOn().size() > MAX_DEPENDENCIES) {
      throw new InvalidWorkException(
          id,
          "dependsOn",
          "names " + w.dependsOn().size() + " work items; the limit is " + MAX_DEPENDENCIES);
    }
    for (String dependency : w.dependsOn()) {
      if (dependency.isEmpty()
          || dependency.length() > MAX_WORK_ID_LENGTH
          || !WORK_ID.matcher(dependency).matches()) {
        throw new InvalidWorkException(
            id,
            "dependsOn",
            "'"
                + dependency
                + "' must be a work ID: 1-"
                + MAX_WORK_ID_LENGTH
                + " characters from A-Z a-z 0-9 . _ - : / @ + = #");
      }
      if (dependency.equals(id)) {
        throw new InvalidWorkException(id, "dependsOn", "names the work itself");
      }
    }
    String problem = JsonText.problem(w.payload(), maxPayloadBytes);
    if (problem != null) {
      throw new InvalidWorkException(id, "payload", problem);
    }
    if (w.maxAttempts() < 1 || w.maxAttempts() > MAX_ATTEMPTS_LIMIT) {
      throw new InvalidWorkException(
          id,
          "maxAttempts",
          "must be between 1 and " + MAX_ATTEMPTS_LIMIT + ", was " + w.maxAttempts());
    }
    Duration delay = w.delay();
    if (delay != null && (delay.isNegative() || delay.compareTo(MAX_DELAY) > 0)) {
      throw new InvalidWorkException(
          id, "delay", "must be between zero and 100 years, was " + delay);
    }
    instant(id, "availableAt", w.availableAt());
    instant(id, "deadline", w.deadline());
    if (w.deadline() != null && w.availableAt() != null && !w.deadline().isAfter(w.availableAt())) {
      throw new InvalidWorkException(
          id,
          "deadline",
          w.deadline() + " is not after availableAt " + w.availableAt() + ": it could never run");
    }
  }

  private static void instant(String id, String field, Instant value) {
    if (value != null && (value.isBefore(EARLIEST) || value.isAfter(LATEST))) {
      throw new InvalidWorkException(
          id, field, value + " is outside the years 1970 to 9999 that Relay accepts");
    }
  }

  private static void name(String id, String field, String value) {
    String problem = nameProblem(value);
    if (problem != null) {
      throw new InvalidWorkException(id, field, problem);
    }
  }

  /**
   * What is wrong with {@code name} as a kind or queue name, or {@code null} when nothing is: the
   * rule {@link #validate} applies to a work item's kind and queue, for callers that check a name
   * before any work exists (a pause, a worker's configuration).
   *
   * @return {@code "is empty"}, or {@code "'NAME' must be 1-100 characters from A-Z a-z 0-9 . _ -
   *     :"}, or null
   */
  public static String nameProblem(String name) {
    if (name == null || name.isEmpty()) {
      return "is empty";
    }
    if (name.length() > MAX_NAME_LENGTH || !NAME.matcher(name).matches()) {
      return "'" + name + "' must be 1-" + MAX_NAME_LENGTH + " characters from A-Z a-z 0-9 . _ - :";
    }
    return null;
  }
}
