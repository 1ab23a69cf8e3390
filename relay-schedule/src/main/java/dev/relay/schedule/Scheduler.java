package dev.relay.schedule;

import dev.relay.CommitOutcomeUnknownException;
import dev.relay.EnqueueResult;
import dev.relay.InvalidConfigurationException;
import dev.relay.Migrator;
import dev.relay.Outbox;
import dev.relay.RelayException;
import dev.relay.Schedule;
import dev.relay.ScheduleException;
import dev.relay.SqlFailures;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the due slots of recurring schedules into ordinary work: one work item per slot, with the
 * work ID {@code <schedule-name>@<slot>} (for example {@code nightly-report@2026-12-02T01:30:00Z}),
 * {@code available_at} = the slot, and the payload {@code {"schedule": name, "slot": slot}}.
 *
 * <pre>{@code
 * Scheduler scheduler = Scheduler.builder(dataSource)
 *     .schedule("nightly-report", "report", Schedule.cron("30 2 * * *", "Europe/Berlin"))
 *     .build();
 * scheduler.start();        // registers the schedules, then decides due slots in a thread
 * // ... scheduler.close() on shutdown
 * }</pre>
 *
 * <p>Run one in every process that should keep the schedules going (beside a {@link
 * dev.relay.Relay} that handles the kind, or anywhere else that reaches the database): slots are
 * decided on the database clock, in a transaction that locks the schedule's {@code schedule_state}
 * row and moves its last slot forward, so however many schedulers run, each slot is decided once.
 * The slot's work ID backs this up: enqueueing it again finds the same work ({@code
 * ALREADY_ENQUEUED}) and is counted as a conflict, not an error. It needs no session state, so a
 * pooled data source serves it, even the pool the workers use.
 *
 * <p>A slot is on time if it is decided at most {@link Builder#lateAfter} after it came due; later
 * slots (every scheduler was down, or the database was unreachable) follow the schedule's {@link
 * Schedule.MissedSlots} policy. Slots count from the moment the schedule was first registered: a
 * new schedule does not catch up on its past.
 *
 * <p>What it does not do: run anything. One work item per slot is not one execution: the item's
 * delivery can repeat like any other work's (a lease expiry, a retry), so the handler must be safe
 * to repeat, and an item can fail. A schedule's name is bound to its definition: registering the
 * name with another kind, timing or policy is refused ({@link
 * ScheduleException.Problem#DEFINITION_CONFLICT}).
 */
public final class Scheduler implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Scheduler.class);

  /** Names: like kinds, and without {@code @}, so the work ID splits unambiguously. */
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._:-]{1,100}");

  /** Default time between checks for due slots. */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);

  /** Default lateness up to which a slot is on time. */
  public static final Duration DEFAULT_LATE_AFTER = Duration.ofMinutes(1);

  /** Longest a scheduler trusts its estimate of the next slot without asking the database. */
  private static final Duration MAX_QUIET = Duration.ofMinutes(1);

  private final DataSource dataSource;
  private final String schema;
  private final ScheduleSql sql;
  private final Outbox outbox;
  private final List<Entry> entries;
  private final Duration pollInterval;
  private final Duration lateAfter;
  private final String schedulerId;

  /** Slots this scheduler inserted as new work (conflicts excluded); for tests and logs. */
  final AtomicLong inserted = new AtomicLong();

  private ScheduledExecutorService loop; // guarded by this
  private boolean registered; // guarded by this

  private Scheduler(Builder b, List<Entry> entries) {
    this.dataSource = b.dataSource;
    this.schema = b.schema;
    this.sql = new ScheduleSql(b.schema);
    this.outbox = Outbox.builder().schema(b.schema).notifications(b.notifications).build();
    this.entries = entries;
    this.pollInterval = b.pollInterval;
    this.lateAfter = b.lateAfter;
    this.schedulerId = b.schedulerId;
  }

  /** A builder for a scheduler on {@code dataSource} (schema {@code relay} unless set). */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** Configures a {@link Scheduler}; everything is validated at {@link #build()}. */
  public static final class Builder {
    private final DataSource dataSource;
    private final Map<String, Entry> entries = new LinkedHashMap<>();
    private final List<RuntimeException> refusals = new ArrayList<>();
    private String schema = "relay";
    private Duration pollInterval = DEFAULT_POLL_INTERVAL;
    private Duration lateAfter = DEFAULT_LATE_AFTER;
    private boolean notifications = true;
    private String schedulerId = "scheduler-" + UUID.randomUUID().toString().substring(0, 8);
    private String queue = Work.DEFAULT_QUEUE;

    private Builder(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    /** The schema holding Relay's tables (default {@code relay}). */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /**
     * Adds a schedule: each due slot of {@code schedule} becomes work of {@code kind} in the
     * builder's queue (see {@link #queue}).
     *
     * @param name 1-100 characters from {@code A-Z a-z 0-9 . _ - :}; the stored identity of the
     *     schedule and the first part of each slot's work ID
     * @param kind the kind of the work, which selects its handler
     * @param schedule the timing and missed-slot policy
     */
    public Builder schedule(String name, String kind, Schedule schedule) {
      if (name == null || !NAME.matcher(name).matches()) {
        refusals.add(
            new ScheduleException(
                ScheduleException.Problem.INVALID_NAME,
                name,
                "a schedule name must be 1-100 characters from A-Z a-z 0-9 . _ - :"));
        return this;
      }
      if (kind == null || !NAME.matcher(kind).matches()) {
        refusals.add(
            new ScheduleException(
                ScheduleException.Problem.INVALID_NAME,
                name,
                "kind '" + kind + "' must be 1-100 characters from A-Z a-z 0-9 . _ - :"));
        return this;
      }
      if (schedule == null) {
        refusals.add(
            new ScheduleException(
                ScheduleException.Problem.INVALID_CRON, name, "the schedule is missing"));
        return this;
      }
      Entry previous = entries.get(name);
      Entry entry;
      try {
        entry = new Entry(name, kind, schedule, Slots.of(name, schedule), queue);
      } catch (RuntimeException e) {
        refusals.add(e);
        return this;
      }
      if (previous != null && !previous.sameDefinition(entry)) {
        refusals.add(
            new ScheduleException(
                ScheduleException.Problem.DEFINITION_CONFLICT,
                name,
                "added twice: kind "
                    + previous.kind
                    + " "
                    + previous.schedule.definition()
                    + ", then kind "
                    + kind
                    + " "
                    + schedule.definition()));
        return this;
      }
      entries.put(name, entry);
      return this;
    }

    /**
     * The queue of the work that schedules added after this call enqueue (default {@code default}).
     */
    public Builder queue(String queue) {
      this.queue = queue;
      return this;
    }

    /** How often to check for due slots (10 ms to 1 minute; default 1 second). */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
      return this;
    }

    /**
     * How late a slot may be decided and still count as on time (100 ms to 1 day; default 1
     * minute); later slots follow the missed-slot policy. Use the same value in every process.
     */
    public Builder lateAfter(Duration lateAfter) {
      this.lateAfter = lateAfter;
      return this;
    }

    /**
     * Whether enqueued slots wake listening workers with NOTIFY (default on); see {@link Outbox}.
     */
    public Builder notifications(boolean notifications) {
      this.notifications = notifications;
      return this;
    }

    /**
     * The name recorded as {@code decided_by} (default {@code scheduler-} and a random suffix):
     * 1-200 characters, no control characters (NUL included) or unpaired surrogates.
     */
    public Builder schedulerId(String schedulerId) {
      this.schedulerId = schedulerId;
      return this;
    }

    /**
     * Validates everything and builds the scheduler. Nothing touches the database until {@link
     * #start()} or {@link #register()}.
     *
     * @throws ScheduleException for the first schedule refused (invalid cron, unknown zone, bad
     *     interval or name, one name added with two definitions)
     * @throws InvalidConfigurationException for a setting out of range
     */
    public Scheduler build() {
      if (!refusals.isEmpty()) {
        throw refusals.get(0);
      }
      if (dataSource == null) {
        throw new InvalidConfigurationException("dataSource", "is null");
      }
      Migrator.forSchema(schema); // validates the name
      range("pollInterval", pollInterval, Duration.ofMillis(10), Duration.ofMinutes(1));
      range("lateAfter", lateAfter, Duration.ofMillis(100), Duration.ofDays(1));
      if (schedulerId == null || schedulerId.isBlank() || schedulerId.length() > 200) {
        throw new InvalidConfigurationException("schedulerId", "must be 1-200 characters");
      }
      int bad = Chars.firstUnstorable(schedulerId);
      if (bad >= 0) {
        // Stored as decided_by at every decision: PostgreSQL refuses NUL in text.
        throw new InvalidConfigurationException(
            "schedulerId",
            "'"
                + Chars.escaped(schedulerId)
                + "' contains "
                + Chars.describe(schedulerId, bad)
                + ": no control characters or unpaired surrogates");
      }
      if (entries.isEmpty()) {
        throw new InvalidConfigurationException("schedules", "none added");
      }
      for (Entry e : entries.values()) {
        // The outbox would refuse a bad queue name at every enqueue; refuse it here instead.
        if (e.queue == null || !NAME.matcher(e.queue).matches()) {
          throw new InvalidConfigurationException(
              "queue", "'" + e.queue + "' must be 1-100 characters from A-Z a-z 0-9 . _ - :");
        }
      }
      return new Scheduler(this, List.copyOf(entries.values()));
    }

    private static void range(String setting, Duration value, Duration min, Duration max) {
      if (value == null || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
        throw new InvalidConfigurationException(
            setting, "must be between " + min + " and " + max + ", was " + value);
      }
    }
  }

  /**
   * Checks a schedule as {@link Builder#schedule} does, without a database: for readers of
   * configuration files that want to refuse a bad schedule before anything starts.
   *
   * @throws ScheduleException naming the problem (invalid name or kind, cron that does not parse)
   */
  public static void validate(String name, String kind, Schedule schedule) {
    Builder b = new Builder(null).schedule(name, kind, schedule);
    if (!b.refusals.isEmpty()) {
      throw b.refusals.get(0);
    }
  }

  /**
   * Registers the schedules (if not yet) and starts deciding due slots on a thread of its own,
   * every poll interval. Idempotent.
   *
   * @throws ScheduleException if a name is stored with another definition (nothing was written)
   * @throws CommitOutcomeUnknownException if the connection was lost during the registration's
   *     COMMIT: it may have been stored; calling {@code start()} again re-reads it
   * @throws RelayException if the database refuses ({@link RelayException#isRetryable()} says
   *     whether trying again may help)
   */
  public synchronized void start() {
    if (loop != null) {
      return;
    }
    register();
    loop =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "relay-scheduler-" + schema);
              t.setDaemon(true);
              return t;
            });
    loop.scheduleWithFixedDelay(this::tick, 0, pollInterval.toMillis(), TimeUnit.MILLISECONDS);
  }

  /**
   * Stops deciding slots; a decision in progress finishes first (at most the statement timeout).
   * Work already enqueued stays. Idempotent.
   */
  @Override
  public synchronized void close() {
    if (loop == null) {
      return;
    }
    loop.shutdown();
    try {
      if (!loop.awaitTermination(40, TimeUnit.SECONDS)) {
        loop.shutdownNow();
      }
    } catch (InterruptedException e) {
      loop.shutdownNow();
      Thread.currentThread().interrupt();
    }
    loop = null;
  }

  /**
   * Stores each schedule's definition if its name is new, and checks that a stored name has the
   * same kind and definition; all in one transaction. {@link #start()} calls it.
   *
   * @throws ScheduleException if a name is stored with another definition (the transaction is
   *     rolled back: nothing was written)
   * @throws CommitOutcomeUnknownException if the connection was lost during COMMIT: the schedules
   *     may or may not be stored; calling {@code register()} again re-reads and compares them
   * @throws RelayException if the database refuses ({@link RelayException#isRetryable()} says
   *     whether trying again may help)
   */
  public synchronized void register() {
    if (registered) {
      return;
    }
    inTransaction(
        "registering schedules",
        c -> {
          Instant now = clock(c);
          try (PreparedStatement ps = c.prepareStatement(sql.register)) {
            for (Entry e : entries) {
              ps.setString(1, e.name);
              ps.setString(2, e.kind);
              ps.setString(3, e.schedule.definition());
              ps.setObject(4, offset(e.slots.next(now)));
              ps.addBatch();
            }
            ps.executeBatch();
          }
          Array names = c.createArrayOf("text", entries.stream().map(e -> e.name).toArray());
          try (PreparedStatement ps = c.prepareStatement(sql.definitions)) {
            ps.setArray(1, names);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                Entry e = entry(rs.getString(1));
                String kind = rs.getString(2);
                String definition = rs.getString(3);
                if (!e.kind.equals(kind) || !e.schedule.definition().equals(definition)) {
                  throw new ScheduleException(
                      ScheduleException.Problem.DEFINITION_CONFLICT,
                      e.name,
                      "stored with kind "
                          + kind
                          + " "
                          + definition
                          + ", registered now with kind "
                          + e.kind
                          + " "
                          + e.schedule.definition()
                          + ": use a new name, or stop every scheduler of it and update"
                          + " schedule_state");
                }
              }
            }
          }
          return null;
        });
    registered = true;
  }

  /**
   * Decides every schedule whose slot may be due, once; what the thread started by {@link #start()}
   * does each poll interval. For tests and for callers that drive their own timing.
   *
   * @return one decision per schedule that was examined
   */
  List<Decision> runOnce() {
    register();
    List<Decision> decisions = new ArrayList<>();
    for (Entry e : entries) {
      decisions.add(decide(e));
    }
    return decisions;
  }

  private void tick() {
    for (Entry e : entries) {
      if (!e.mayBeDue()) {
        continue;
      }
      try {
        Decision d = decide(e);
        if (d.skipped() > 0) {
          log.warn(
              "schedule {}: {} late slot(s) dropped by policy {}",
              e.name,
              d.skipped(),
              e.schedule.missedSlots().definition());
        }
      } catch (CommitOutcomeUnknownException ex) {
        // Maybe committed, maybe not: the next decision locks the row and reads its last slot,
        // which says which, so nothing is enqueued twice or lost.
        e.forget();
        log.warn(
            "schedule {}: the outcome of deciding due slots is unknown (the connection was lost"
                + " during COMMIT); the next decision re-reads the stored state: {}",
            e.name,
            ex.toString());
      } catch (RuntimeException ex) {
        e.forget();
        log.warn(
            "schedule {}: deciding due slots failed; will try again: {}", e.name, ex.toString());
      }
    }
  }

  /** One transaction: lock the state row, read the clock, enqueue the due slots, record. */
  Decision decide(Entry e) {
    Decision d = decideInTransaction(e);
    inserted.addAndGet(d.enqueued().size() - d.conflicts()); // committed by now
    return d;
  }

  private Decision decideInTransaction(Entry e) {
    return inTransaction(
        "deciding schedule " + e.name,
        c -> {
          Instant after;
          try (PreparedStatement ps = c.prepareStatement(sql.lockState)) {
            ps.setString(1, e.name);
            try (ResultSet rs = ps.executeQuery()) {
              if (!rs.next()) {
                e.forget();
                if (!stateExists(c, e)) {
                  e.warnOnce(
                      "gone",
                      "schedule {}: its schedule_state row is gone (deleted while this scheduler"
                          + " ran), so no slot is decided here; restart the scheduler to register it"
                          + " anew",
                      e.name);
                }
                // else another scheduler holds it: it is deciding these slots right now
                return Decision.busy(e.name);
              }
              String kind = rs.getString(3);
              String definition = rs.getString(4);
              if (!e.kind.equals(kind) || !e.schedule.definition().equals(definition)) {
                // changed by hand while this scheduler ran: deciding by either definition would
                // interleave two series of slots under one name
                e.forget();
                e.warnOnce(
                    "changed",
                    "schedule {}: its stored definition is now kind {} {}, not this scheduler's"
                        + " kind {} {}; no slot is decided here until the definitions agree"
                        + " (stop every scheduler of the name before changing its row)",
                    e.name,
                    kind,
                    definition,
                    e.kind,
                    e.schedule.definition());
                return Decision.busy(e.name);
              }
              e.warnOnce(null, null);
              Instant last = ScheduleStatus.instant(rs, 1);
              after = last != null ? last : ScheduleStatus.instant(rs, 2);
            }
          }
          Instant now = clock(c);
          Plan plan = Plan.decide(e.slots, e.schedule.missedSlots(), after, now, lateAfter);
          int conflicts = enqueue(c, e, plan.enqueue());
          try (PreparedStatement ps = c.prepareStatement(sql.recordDecision)) {
            // Nothing due leaves last_slot as it was (NULL before the first slot: greatest()
            // ignores NULL).
            ps.setObject(1, plan.lastSlot().equals(after) ? null : offset(plan.lastSlot()));
            ps.setObject(2, offset(plan.nextSlot()));
            ps.setObject(3, offset(now));
            ps.setString(4, schedulerId);
            ps.setLong(5, plan.enqueue().size() - conflicts);
            ps.setLong(6, plan.skipped());
            ps.setLong(7, conflicts);
            ps.setString(8, e.name);
            ps.executeUpdate();
          }
          e.remember(now, plan.nextSlot());
          return new Decision(e.name, now, plan.enqueue(), plan.skipped(), conflicts, false);
        });
  }

  private boolean stateExists(Connection c, Entry e) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.stateExists)) {
      ps.setString(1, e.name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /**
   * Enqueues the slots in the caller's transaction; returns how many were taken already. A slot's
   * ID taken by an equal item is {@code ALREADY_ENQUEUED}; taken by a different one (someone else's
   * work under this ID) it is refused by the outbox: that slot is counted and left alone, under a
   * savepoint so the other slots still commit.
   */
  private int enqueue(Connection c, Entry e, List<Instant> slots) throws SQLException {
    if (slots.isEmpty()) {
      return 0;
    }
    List<Work> works = new ArrayList<>();
    for (Instant slot : slots) {
      works.add(e.work(slot));
    }
    Savepoint all = c.setSavepoint();
    try {
      int taken = taken(outbox.enqueueAll(c, works));
      c.releaseSavepoint(all);
      return taken;
    } catch (WorkConflictException conflict) {
      c.rollback(all);
    }
    int taken = 0;
    for (Work w : works) {
      Savepoint one = c.setSavepoint();
      try {
        taken += taken(List.of(outbox.enqueue(c, w)));
        c.releaseSavepoint(one);
      } catch (WorkConflictException conflict) {
        c.rollback(one);
        taken++;
        log.warn("schedule {}: slot left alone: {}", e.name, conflict.getMessage());
      }
    }
    return taken;
  }

  private static int taken(List<EnqueueResult> results) {
    int n = 0;
    for (EnqueueResult r : results) {
      if (!r.inserted()) {
        n++;
      }
    }
    return n;
  }

  private Entry entry(String name) {
    for (Entry e : entries) {
      if (e.name.equals(name)) {
        return e;
      }
    }
    throw new IllegalStateException("no schedule " + name);
  }

  private static Instant clock(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(ScheduleSql.CLOCK)) {
      rs.next();
      return ScheduleStatus.instant(rs, 1);
    }
  }

  private static OffsetDateTime offset(Instant instant) {
    return instant == null ? null : instant.atOffset(ZoneOffset.UTC);
  }

  private interface Body<T> {
    T run(Connection c) throws SQLException;
  }

  /**
   * Runs {@code body} in a transaction of its own and commits. Errors are classified as
   * docs/protocol.md "SQLState classification" says: a COMMIT that fails with the connection lost
   * may have committed ({@link CommitOutcomeUnknownException}); a failed rollback or close after an
   * error is added to that error as suppressed, never reported instead of it.
   */
  private <T> T inTransaction(String what, Body<T> body) {
    String doing = what + " in schema " + schema;
    Connection c;
    try {
      c = dataSource.getConnection();
    } catch (SQLException ex) {
      throw translate(doing, ex);
    }
    RuntimeException failure = null;
    try {
      T result;
      try {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.execute(ScheduleSql.TIMEOUTS);
        }
        result = body.run(c);
      } catch (SQLException ex) {
        rollback(c, ex);
        failure = translate(doing, ex);
        throw failure;
      } catch (RuntimeException ex) {
        rollback(c, ex);
        failure = ex;
        throw failure;
      }
      try {
        c.commit();
      } catch (SQLException ex) {
        rollback(c, ex); // a COMMIT refused by the server leaves the transaction open
        failure = translateCommit(doing, ex);
        throw failure;
      }
      return result;
    } finally {
      release(c, failure);
    }
  }

  /** Rolls back after {@code failure}; a rollback that fails too is added to it as suppressed. */
  private static void rollback(Connection c, Throwable failure) {
    try {
      if (!c.isClosed()) {
        c.rollback();
      }
    } catch (SQLException ex) {
      failure.addSuppressed(ex);
    }
  }

  /**
   * Restores auto-commit and closes (returns to its pool) the connection. After a failure, what
   * fails here is added to it; after a commit, it is only logged: the transaction's outcome is
   * known, and a broken connection is the pool's to discard.
   */
  private static void release(Connection c, RuntimeException failure) {
    try (c) {
      if (!c.isClosed()) {
        c.setAutoCommit(true);
      }
    } catch (SQLException ex) {
      if (failure != null) {
        failure.addSuppressed(ex);
      } else {
        log.debug("closing a scheduler connection after its commit: {}", ex.toString());
      }
    }
  }

  /**
   * A driver error of the scheduler's own statements, classified as relay-core classifies its own.
   */
  private static RelayException translate(String doing, SQLException ex) {
    return SqlFailures.of(doing, ex);
  }

  /**
   * A driver error raised by COMMIT: with the connection lost, the transaction may or may not have
   * committed, and only a re-read can tell; every statement the scheduler commits can be repeated
   * and re-reads what is stored (registering compares the stored definitions, deciding reads the
   * stored last slot).
   */
  private static RelayException translateCommit(String doing, SQLException ex) {
    return SqlFailures.ofCommit(doing, ex);
  }

  /**
   * What one decision did for one schedule.
   *
   * @param schedule the schedule's name
   * @param now the database clock the decision used ({@code null} if {@code busy})
   * @param enqueued the slots handed to the outbox, oldest first (conflicts included)
   * @param skipped late slots dropped by the policy
   * @param conflicts slots whose work ID was already taken
   * @param busy whether another scheduler held the state row, so nothing was decided here
   */
  record Decision(
      String schedule,
      Instant now,
      List<Instant> enqueued,
      long skipped,
      int conflicts,
      boolean busy) {
    static Decision busy(String schedule) {
      return new Decision(schedule, null, List.of(), 0, 0, true);
    }
  }

  /** One schedule as this process runs it, with its estimate of when it is next due. */
  static final class Entry {
    final String name;
    final String kind;
    final Schedule schedule;
    final Slots slots;
    final String queue;
    // Local timing only: the database clock at the last decision and the monotonic time then.
    private volatile Instant knownNext;
    private volatile Instant knownNow;
    private volatile long knownAtNanos;
    private volatile String warned; // the condition last logged by warnOnce, or null

    Entry(String name, String kind, Schedule schedule, Slots slots, String queue) {
      this.name = name;
      this.kind = kind;
      this.schedule = schedule;
      this.slots = slots;
      this.queue = queue;
    }

    boolean sameDefinition(Entry other) {
      return kind.equals(other.kind)
          && queue.equals(other.queue)
          && schedule.definition().equals(other.schedule.definition());
    }

    Work work(Instant slot) {
      String payload = "{\"schedule\":\"" + name + "\",\"slot\":\"" + slot + "\"}";
      return Work.of(name + "@" + slot, kind, payload).availableAt(slot).queue(queue);
    }

    void remember(Instant now, Instant next) {
      knownNow = now;
      knownAtNanos = System.nanoTime();
      knownNext = next;
    }

    void forget() {
      knownNow = null;
    }

    /**
     * Logs {@code message} at WARN once while {@code condition} lasts ({@code null}: the schedule
     * is decided normally again, and the next condition is logged anew).
     */
    void warnOnce(String condition, String message, Object... args) {
      String previous = warned;
      warned = condition;
      if (condition != null && !condition.equals(previous)) {
        log.warn(message, args);
      }
    }

    /**
     * Whether the database clock may have reached the next slot, estimated from the last decision
     * and the monotonic time since; the database decides. Asks at least every {@link #MAX_QUIET}.
     */
    boolean mayBeDue() {
      Instant now = knownNow;
      if (now == null) {
        return true;
      }
      Duration since = Duration.ofNanos(System.nanoTime() - knownAtNanos);
      if (since.compareTo(MAX_QUIET) > 0) {
        return true;
      }
      Instant next = knownNext;
      return next != null && !now.plus(since).isBefore(next);
    }
  }
}
