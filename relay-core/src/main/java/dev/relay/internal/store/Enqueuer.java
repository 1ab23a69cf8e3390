package dev.relay.internal.store;

import dev.relay.EnqueueResult;
import dev.relay.RetryableException;
import dev.relay.UnknownDependencyException;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.SqlErrors;
import dev.relay.internal.json.StringMapJson;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Inserts validated work on the caller's connection, inside the caller's transaction: never
 * commits, rolls back or swallows an error. Called by {@link dev.relay.Outbox} after validation.
 */
public final class Enqueuer {
  private final WorkSql sql;

  private final DependencySql dependencies;

  private final boolean notify;

  /** An enqueuer for {@code schema} that notifies the schema's channel when it inserts. */
  public Enqueuer(SchemaName schema) {
    this(schema, true);
  }

  /**
   * An enqueuer for {@code schema}; with {@code notify}, a transaction that inserts work sends one
   * notification on channel {@code relay_<schema>} at commit (see {@link
   * WorkSql#enqueueManyNotify}).
   */
  public Enqueuer(SchemaName schema, boolean notify) {
    this.sql = WorkSql.of(schema);
    this.dependencies = DependencySql.of(schema);
    this.notify = notify;
  }

  /**
   * Inserts {@code works} (distinct IDs, already validated) in one round trip, then compares any ID
   * that was already taken. Returns one result per item, in the caller's order.
   */
  public List<EnqueueResult> enqueue(Connection c, List<Work> works) {
    return enqueue(c, works, null);
  }

  /**
   * As {@link #enqueue(Connection, List)}, storing {@code traceContext} (may be null or empty: no
   * context) with each inserted item that names no trace context of its own.
   */
  public List<EnqueueResult> enqueue(
      Connection c, List<Work> works, Map<String, String> traceContext) {
    return enqueue(c, works, traceContext, null, null);
  }

  /**
   * A local hand-off's part of an enqueue: the worker that would hold the claims, its lease, and
   * the IDs the caller reserved a local handler slot for (each already judged eligible as far as
   * the caller can tell: unkeyed, without dependencies, of a kind and queue the worker serves).
   *
   * @param workerId the worker ID stored in {@code claimed_by}
   * @param leaseMillis the lease, which the database bounds by the registered one
   * @param candidates the IDs that may be handed off
   */
  public record HandoffRequest(String workerId, long leaseMillis, Set<String> candidates) {}

  /**
   * A row this call inserted already claimed by the requesting worker, at generation 1.
   *
   * @param workId the work ID
   * @param payload the payload as a claim returns it (jsonb's text)
   * @param leaseUntil the lease deadline on the database clock
   * @param claimedAt the claim time on the database clock (also the first attempt)
   * @param transaction the ID of the transaction that inserted it
   * @param traceContext the trace context stored with it, as a claim returns it, or {@code null}
   */
  public record HandedOff(
      String workId,
      String payload,
      Instant leaseUntil,
      Instant claimedAt,
      String transaction,
      String traceContext) {}

  /**
   * {@link #enqueue(Connection, List, Map)}, handing off what {@code handoff} marks and the
   * database allows; the rows inserted claimed are added to {@code handedOff}. A call with an
   * ordering key hands nothing off (keyed work is never handed off; the keyed statement has no
   * hand-off form).
   */
  public List<EnqueueResult> enqueue(
      Connection c,
      List<Work> works,
      Map<String, String> traceContext,
      HandoffRequest handoff,
      List<HandedOff> handedOff) {
    // Sorted by ID: concurrent bulk producers with overlapping IDs then meet in the same order.
    List<Work> sorted = new ArrayList<>(works);
    sorted.sort(Comparator.comparing(Work::workId));
    // Items of one ordering key take their sequences in the caller's order, not ID order.
    Map<String, Integer> callerOrder = new HashMap<>();
    for (int i = 0; i < works.size(); i++) {
      callerOrder.put(works.get(i).workId(), i);
    }
    try {
      // Before anything is written: an unknown dependency refuses the call with nothing changed.
      requireDependencies(c, sorted);
      Set<String> notInserted = insert(c, sorted, callerOrder, traceContext, handoff, handedOff);
      insertDependencies(c, sorted, notInserted);
      Map<String, EnqueueResult> byId = new HashMap<>();
      List<Work> skipped = new ArrayList<>();
      for (Work w : sorted) {
        if (notInserted.contains(w.workId())) {
          skipped.add(w);
        } else {
          byId.put(w.workId(), new EnqueueResult(w.workId(), EnqueueResult.Status.ENQUEUED));
        }
      }
      if (!skipped.isEmpty()) {
        compare(c, skipped, byId);
      }
      List<EnqueueResult> results = new ArrayList<>(works.size());
      for (Work w : works) {
        results.add(byId.get(w.workId()));
      }
      return results;
    } catch (SQLException e) {
      throw SqlErrors.translate("enqueue", e);
    }
  }

  /**
   * Locks every dependency named outside the call (FOR KEY SHARE, until the transaction ends) and
   * refuses the first one that exists neither as work nor as a tombstone. A dependency purged
   * between the two reads of the statement (the row deleted, its tombstone not yet visible to the
   * statement's snapshot) is looked up once more in a new statement before it is refused.
   */
  private void requireDependencies(Connection c, List<Work> works) throws SQLException {
    Set<String> inCall = new HashSet<>();
    TreeSet<String> outside = new TreeSet<>();
    for (Work w : works) {
      inCall.add(w.workId());
    }
    for (Work w : works) {
      for (String d : w.dependsOn()) {
        if (!inCall.contains(d)) {
          outside.add(d);
        }
      }
    }
    if (outside.isEmpty()) {
      return;
    }
    outside.removeAll(lockExisting(c, outside));
    if (!outside.isEmpty()) {
      outside.removeAll(lockExisting(c, outside));
    }
    for (Work w : works) {
      for (String d : w.dependsOn()) {
        if (outside.contains(d)) {
          throw new UnknownDependencyException(w.workId(), d);
        }
      }
    }
  }

  private Set<String> lockExisting(Connection c, Set<String> ids) throws SQLException {
    Set<String> found = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(dependencies.lockExisting)) {
      ps.setArray(1, c.createArrayOf("text", ids.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          found.add(rs.getString(1));
        }
      }
    }
    return found;
  }

  /**
   * Records the dependencies of the work this call inserted. A repeat of stored work keeps the
   * stored dependencies (they are not part of the identity check).
   */
  private void insertDependencies(Connection c, List<Work> works, Set<String> notInserted)
      throws SQLException {
    List<String> dependents = new ArrayList<>();
    List<String> dependsOn = new ArrayList<>();
    for (Work w : works) {
      if (notInserted.contains(w.workId())) {
        continue;
      }
      for (String d : w.dependsOn()) {
        dependents.add(w.workId());
        dependsOn.add(d);
      }
    }
    if (dependents.isEmpty()) {
      return;
    }
    try (PreparedStatement ps = c.prepareStatement(dependencies.insert)) {
      ps.setArray(1, c.createArrayOf("text", dependents.toArray()));
      ps.setArray(2, c.createArrayOf("text", dependsOn.toArray()));
      ps.executeUpdate();
    }
  }

  /** Inserts what it can; returns the IDs it skipped (taken or tombstoned), usually none. */
  private Set<String> insert(
      Connection c,
      List<Work> works,
      Map<String, Integer> callerOrder,
      Map<String, String> traceContext,
      HandoffRequest handoff,
      List<HandedOff> handedOff)
      throws SQLException {
    int n = works.size();
    boolean mayHandOff = handoff != null && !handoff.candidates().isEmpty();
    if (n == 1 && works.get(0).orderingKey() == null && !mayHandOff) {
      String[] trace = traceTexts(works, traceContext);
      return insertOne(c, works.get(0), trace == null ? null : trace[0]);
    }
    String[] ids = new String[n];
    String[] kinds = new String[n];
    String[] payloads = new String[n];
    String[] queues = new String[n];
    Integer[] priorities = new Integer[n];
    String[] availableAt = new String[n];
    Long[] delays = new Long[n];
    Integer[] maxAttempts = new Integer[n];
    String[] deadlines = new String[n];
    String[] keys = new String[n];
    Integer[] order = new Integer[n];
    String[] groups = new String[n];
    Boolean[] hasDependencies = new Boolean[n];
    String[] traces = traceTexts(works, traceContext);
    TreeSet<String> distinctKeys = new TreeSet<>();
    for (int i = 0; i < n; i++) {
      Work w = works.get(i);
      ids[i] = w.workId();
      kinds[i] = w.kind();
      payloads[i] = w.payload();
      queues[i] = w.queue();
      priorities[i] = w.priority();
      availableAt[i] = instantText(w.availableAt());
      delays[i] = delayMillis(w);
      maxAttempts[i] = namedCap(w);
      deadlines[i] = instantText(w.deadline());
      keys[i] = w.orderingKey();
      order[i] = callerOrder.get(w.workId());
      groups[i] = w.group();
      hasDependencies[i] = !w.dependsOn().isEmpty();
      if (w.orderingKey() != null) {
        distinctKeys.add(w.orderingKey());
      }
    }
    boolean keyed = !distinctKeys.isEmpty();
    if (keyed) {
      // Step one of a keyed enqueue: the key counters, locked in key order.
      try (PreparedStatement ps = c.prepareStatement(sql.lockKeys)) {
        ps.setArray(1, c.createArrayOf("text", distinctKeys.toArray()));
        ps.executeUpdate();
      }
    }
    boolean handingOff = handoff != null && !keyed && !handoff.candidates().isEmpty();
    String statement =
        keyed
            ? (notify ? sql.enqueueKeyedNotify : sql.enqueueKeyed)
            : handingOff
                ? (notify ? sql.enqueueHandoffNotify : sql.enqueueHandoff)
                : (notify ? sql.enqueueManyNotify : sql.enqueueMany);
    Set<String> notInserted = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(statement)) {
      ps.setArray(1, c.createArrayOf("text", ids));
      ps.setArray(2, c.createArrayOf("text", kinds));
      ps.setArray(3, c.createArrayOf("text", payloads));
      ps.setArray(4, c.createArrayOf("text", queues));
      ps.setArray(5, c.createArrayOf("int4", priorities));
      ps.setArray(6, c.createArrayOf("text", availableAt));
      ps.setArray(7, c.createArrayOf("int8", delays));
      ps.setArray(8, c.createArrayOf("int4", maxAttempts));
      ps.setArray(9, c.createArrayOf("text", deadlines));
      ps.setArray(10, c.createArrayOf("text", groups));
      ps.setArray(11, c.createArrayOf("bool", hasDependencies));
      // NULL when no item has a trace context: unnest pads the column with NULLs
      ps.setArray(12, traces == null ? null : c.createArrayOf("text", traces));
      if (keyed) {
        ps.setArray(13, c.createArrayOf("text", keys));
        ps.setArray(14, c.createArrayOf("int4", order));
      } else if (handingOff) {
        Boolean[] marked = new Boolean[n];
        for (int i = 0; i < n; i++) {
          marked[i] = handoff.candidates().contains(ids[i]);
        }
        ps.setArray(13, c.createArrayOf("bool", marked));
        ps.setString(14, handoff.workerId());
        ps.setLong(15, handoff.leaseMillis());
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String id = rs.getString(1);
          if (id == null) {
            continue;
          }
          if (handingOff && rs.getBoolean(2)) {
            handedOff.add(
                new HandedOff(
                    id,
                    rs.getString(3),
                    rs.getObject(4, OffsetDateTime.class).toInstant(),
                    rs.getObject(5, OffsetDateTime.class).toInstant(),
                    rs.getString(6),
                    rs.getString(7)));
          } else {
            notInserted.add(id);
          }
        }
      }
    }
    return notInserted;
  }

  /**
   * One unkeyed item that is not handed off, by {@link WorkSql#enqueueOne}: the values bound as
   * scalars, in the order and with the conversions of the batch statement's arrays. Returns the ID
   * when the insert skipped it (taken or tombstoned).
   */
  private Set<String> insertOne(Connection c, Work w, String trace) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(notify ? sql.enqueueOneNotify : sql.enqueueOne)) {
      ps.setString(1, w.workId());
      ps.setString(2, w.kind());
      ps.setString(3, w.payload());
      ps.setString(4, w.queue());
      ps.setInt(5, w.priority());
      ps.setString(6, instantText(w.availableAt()));
      ps.setLong(7, delayMillis(w));
      ps.setObject(8, namedCap(w), Types.INTEGER);
      ps.setString(9, instantText(w.deadline()));
      ps.setString(10, w.group());
      ps.setBoolean(11, !w.dependsOn().isEmpty());
      ps.setString(12, trace);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Set.of() : Set.of(w.workId());
      }
    }
  }

  /**
   * Each item's trace context as JSON text (its own, else {@code traceContext}), or {@code null}
   * when no item has one: then nothing is encoded or sent.
   */
  private static String[] traceTexts(List<Work> works, Map<String, String> traceContext) {
    String current = StringMapJson.write(traceContext);
    String[] texts = null;
    for (int i = 0; i < works.size(); i++) {
      Map<String, String> own = works.get(i).traceContext();
      String text = own != null ? StringMapJson.write(own) : current;
      if (text != null) {
        if (texts == null) {
          texts = new String[works.size()];
        }
        texts[i] = text;
      }
    }
    return texts;
  }

  private void compare(Connection c, List<Work> skipped, Map<String, EnqueueResult> byId)
      throws SQLException {
    Map<String, Work> requested = new HashMap<>();
    String[] ids = new String[skipped.size()];
    String[] kinds = new String[skipped.size()];
    String[] payloads = new String[skipped.size()];
    for (int i = 0; i < skipped.size(); i++) {
      Work w = skipped.get(i);
      requested.put(w.workId(), w);
      ids[i] = w.workId();
      kinds[i] = w.kind();
      payloads[i] = w.payload();
    }
    try (PreparedStatement ps = c.prepareStatement(sql.identityCheck)) {
      ps.setArray(1, c.createArrayOf("text", ids));
      ps.setArray(2, c.createArrayOf("text", kinds));
      ps.setArray(3, c.createArrayOf("text", payloads));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String id = rs.getString("work_id");
          Work w = requested.get(id);
          boolean stored = rs.getBoolean("stored");
          boolean purged = rs.getBoolean("purged");
          if (!stored && !purged) {
            // Skipped by ON CONFLICT, yet gone now: deleted by a concurrent transaction.
            throw new RetryableException(
                "work ID '" + id + "' changed concurrently during enqueue; retry the transaction",
                null,
                null);
          }
          String storedKind = rs.getString("stored_kind");
          if (!storedKind.equals(w.kind()) || !rs.getBoolean("same_payload")) {
            throw new WorkConflictException(
                id,
                storedKind,
                w.kind(),
                rs.getString("stored_digest"),
                rs.getString("requested_digest"),
                !stored);
          }
          byId.put(id, new EnqueueResult(id, EnqueueResult.Status.ALREADY_ENQUEUED));
        }
      }
    }
  }

  /** The item's delay in milliseconds, 0 when it has none. */
  private static long delayMillis(Work w) {
    Duration d = w.delay();
    return d == null ? 0L : d.toMillis();
  }

  /** The producer's attempt cap, or {@code null}: then the kind's registered cap applies. */
  private static Integer namedCap(Work w) {
    return w.hasMaxAttempts() ? w.maxAttempts() : null;
  }

  private static String instantText(Instant instant) {
    return instant == null ? null : instant.toString();
  }
}
