package dev.relay.internal.runtime;

import dev.relay.KindPolicy;
import dev.relay.RelayConfig;
import dev.relay.Work;
import dev.relay.internal.store.ClaimedWork;
import dev.relay.internal.store.Enqueuer.HandedOff;
import dev.relay.internal.store.Enqueuer.HandoffRequest;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Local hand-off (issue 24): new work that this worker handles is inserted already claimed by it,
 * and started right after the producer's commit, with no claim round trip.
 *
 * <p>The steps, each guarded:
 *
 * <ol>
 *   <li>{@link #reserve}: before the INSERT, each item that a claim would take (unkeyed, no
 *       dependencies, no delay, a kind with a one-claim handler and no limits, a queue this worker
 *       serves) gets a handler slot of this worker, while one is free. The database decides the
 *       rest in the INSERT (registration, limiter, availability, deadline; see {@code
 *       WorkSql.enqueueHandoff}); everything else is inserted ready.
 *   <li>{@link #inserted}: slots of items the database did not hand off are given back; the
 *       handed-off rows wait, per connection, for proof of commit.
 *   <li>{@link #take} then {@link #start} once the COMMIT returned normally: each claim joins the
 *       live claims (so the lease keeper renews it) and starts in its reserved slot, unless the
 *       time since its INSERT was sent leaves less lease than the start margin: then it is released
 *       at once (guarded, not counted) and the workers are woken. {@link #discard} after a
 *       rollback, a failed or an uncertain commit: nothing starts and the slots are given back;
 *       committed rows wait out their lease and are then claimed at generation 2.
 * </ol>
 *
 * <p>A reservation whose transaction never reaches {@link #take} (the caller committed or rolled
 * back the connection itself) is given back once it could no longer start anyway ({@link #sweep}).
 */
public final class Handoffs {
  private static final Logger log = LoggerFactory.getLogger(Handoffs.class);

  private final RelayConfig config;
  private final Set<String> kinds;
  private final Dispatcher dispatcher;
  private final LiveClaims live;
  private final Releaser releaser;
  private final Events events;
  private final TimeSource time;
  private final String channel;
  private final long leaseNanos;
  private final long marginNanos;
  // Handed-off rows waiting for their transaction's commit, per connection; guarded by itself.
  private final Map<Connection, List<Waiting>> waiting = new IdentityHashMap<>();
  private volatile boolean open = true;

  /** A handed-off row, from its INSERT until its commit is proven or given up. */
  private static final class Waiting {
    final HandedOff row;
    final Work work;
    final long sentNanos;
    boolean holdsSlot = true; // guarded by the map's lock until taken

    Waiting(HandedOff row, Work work, long sentNanos) {
      this.row = row;
      this.work = work;
      this.sentNanos = sentNanos;
    }

    HandedOff row() {
      return row;
    }

    Work work() {
      return work;
    }

    long sentNanos() {
      return sentNanos;
    }
  }

  /**
   * The rows {@link #take} found for one transaction: start them after its COMMIT returned, or
   * discard them. Each call to {@link #start} or {@link #discard} acts once.
   */
  public static final class Taken {
    private final List<Waiting> rows;
    private boolean done;

    private Taken(List<Waiting> rows) {
      this.rows = rows;
    }

    /** How many handed-off rows this holds. */
    public int size() {
      return rows.size();
    }

    /** The work IDs, in insert order. */
    public List<String> workIds() {
      return rows.stream().map(w -> w.row().workId()).toList();
    }
  }

  Handoffs(
      RelayConfig config,
      Set<String> kinds,
      Dispatcher dispatcher,
      LiveClaims live,
      Releaser releaser,
      Events events,
      TimeSource time,
      String channel) {
    this.config = config;
    this.kinds = Set.copyOf(kinds);
    this.dispatcher = dispatcher;
    this.live = live;
    this.releaser = releaser;
    this.events = events;
    this.time = time;
    this.channel = channel;
    this.leaseNanos = config.lease().toNanos();
    this.marginNanos = config.startMargin().toNanos();
  }

  /** Monotonic nanoseconds on this runtime's clock: taken just before the INSERT is sent. */
  public long nanoTime() {
    return time.nanoTime();
  }

  /** The kinds this worker may take by hand-off (handlers that take one claim at a time). */
  public Set<String> kinds() {
    return kinds;
  }

  /**
   * Reserves a handler slot for each of {@code works} that a claim would let this worker take now,
   * as far as this worker can tell, while slots are free. Returns {@code null} when none got one.
   */
  public HandoffRequest reserve(List<Work> works) {
    sweep();
    if (!open) {
      return null;
    }
    Set<String> marked = null;
    for (Work w : works) {
      if (!eligible(w)) {
        continue;
      }
      if (!dispatcher.reserve()) {
        break; // no slot free: the rest goes the ordinary way
      }
      if (marked == null) {
        marked = new HashSet<>();
      }
      marked.add(w.workId());
    }
    if (marked == null) {
      return null;
    }
    return new HandoffRequest(config.workerId(), config.lease().toMillis(), marked);
  }

  private boolean eligible(Work w) {
    return kinds.contains(w.kind())
        && config.queues().contains(w.queue())
        && w.orderingKey() == null
        && w.dependsOn().isEmpty()
        && (w.delay() == null || w.delay().isZero());
  }

  /**
   * After the INSERT returned: gives back the slots of items that were not handed off and keeps the
   * handed-off rows of {@code c} waiting for the commit. {@code handedOff} is empty and {@code
   * sentNanos} unused when the INSERT failed.
   */
  public void inserted(
      Connection c,
      HandoffRequest request,
      List<Work> works,
      List<HandedOff> handedOff,
      long sentNanos) {
    int unused = request.candidates().size() - handedOff.size();
    for (int i = 0; i < unused; i++) {
      dispatcher.unreserve();
    }
    if (handedOff.isEmpty()) {
      return;
    }
    Map<String, Work> byId = new HashMap<>();
    for (Work w : works) {
      byId.put(w.workId(), w);
    }
    synchronized (waiting) {
      List<Waiting> rows = waiting.computeIfAbsent(c, k -> new ArrayList<>());
      for (HandedOff h : handedOff) {
        rows.add(new Waiting(h, byId.get(h.workId()), sentNanos));
      }
    }
  }

  /** Whether rows of {@code c} wait for a commit. */
  public boolean hasWaiting(Connection c) {
    synchronized (waiting) {
      return waiting.containsKey(c);
    }
  }

  /**
   * Takes the rows waiting on {@code c} that {@code transaction} inserted; rows of another
   * transaction (one the caller committed or rolled back itself) are discarded: nothing proves
   * their commit. With {@code transaction} null, takes every row waiting on {@code c}.
   */
  public Taken take(Connection c, String transaction) {
    List<Waiting> rows;
    synchronized (waiting) {
      rows = waiting.remove(c);
    }
    if (rows == null) {
      return new Taken(List.of());
    }
    if (transaction == null) {
      return new Taken(rows);
    }
    List<Waiting> mine = new ArrayList<>(rows.size());
    List<Waiting> other = new ArrayList<>();
    for (Waiting w : rows) {
      (transaction.equals(w.row().transaction()) ? mine : other).add(w);
    }
    if (!other.isEmpty()) {
      log.warn(
          "{} handed-off work items ({}) were inserted by a transaction that ended without"
              + " Outbox.commitAndStart or Outbox.rollback: not started here; if that transaction"
              + " committed, they are claimed after their lease",
          other.size(),
          other.stream().map(w -> w.row().workId()).limit(5).toList());
      giveBack((int) other.stream().filter(w -> w.holdsSlot).count());
    }
    return new Taken(mine);
  }

  /**
   * Starts the rows of {@code taken}: to be called only after their transaction's COMMIT returned
   * normally. Each becomes a live claim (renewed by the lease keeper from now on) and starts in its
   * reserved slot, unless too little of its lease is left: then it is released at once.
   */
  public void start(Taken taken) {
    if (taken.done) {
      return;
    }
    taken.done = true;
    for (Waiting w : taken.rows) {
      if (!open) {
        // Closing: the row stays claimed and is taken by a claim after its lease.
        if (w.holdsSlot) {
          dispatcher.unreserve();
        }
        continue;
      }
      HandedOff h = w.row();
      Work work = w.work();
      KindPolicy policy = config.kinds().get(work.kind());
      int cap =
          work.hasMaxAttempts()
              ? Math.min(work.maxAttempts(), policy.maxAttempts())
              : policy.maxAttempts();
      ClaimedWork claimed =
          new ClaimedWork(
              h.workId(),
              work.kind(),
              work.queue(),
              h.payload(),
              1,
              1,
              cap,
              h.leaseUntil(),
              work.deadline(),
              h.claimedAt(),
              h.claimedAt(),
              false,
              null,
              null,
              null,
              null,
              h.traceContext());
      LiveClaim c =
          new LiveClaim(claimed, policy, config.workerId(), config.lease(), w.sentNanos(), time);
      live.add(c);
      events.claimed(c);
      if (w.holdsSlot) {
        dispatcher.startReserved(c, released -> releaser.releaseNow(released, channel));
      } else {
        // Past its start margin already (the sweep gave its slot back): released at once.
        c.phase.set(LiveClaim.Phase.RELEASING);
        releaser.releaseNow(c, channel);
      }
    }
  }

  /**
   * Gives up the rows of {@code taken}: their transaction rolled back, or its commit failed or may
   * not have happened. Nothing starts; a row that did commit is claimed after its lease.
   */
  public void discard(Taken taken) {
    if (taken.done) {
      return;
    }
    taken.done = true;
    giveBack((int) taken.rows.stream().filter(w -> w.holdsSlot).count());
  }

  /**
   * Gives back the slots of waiting rows that could no longer start (less than the start margin of
   * their lease is left, counted from the INSERT): their transaction is slow, or the caller ended
   * it itself. Such a row is still released at once if its commit is proven later; once its whole
   * lease has passed it is forgotten (its claim is stale; a claim takes the row).
   */
  void sweep() {
    long now = time.nanoTime();
    int freed = 0;
    synchronized (waiting) {
      for (Iterator<List<Waiting>> it = waiting.values().iterator(); it.hasNext(); ) {
        List<Waiting> rows = it.next();
        for (Iterator<Waiting> r = rows.iterator(); r.hasNext(); ) {
          Waiting w = r.next();
          if (w.holdsSlot && now - (w.sentNanos + leaseNanos - marginNanos) >= 0) {
            w.holdsSlot = false;
            freed++;
          }
          if (now - (w.sentNanos + leaseNanos) >= 0) {
            r.remove();
          }
        }
        if (rows.isEmpty()) {
          it.remove();
        }
      }
    }
    giveBack(freed);
  }

  /** No new reservations; rows still waiting are left to their leases. */
  void close() {
    open = false;
    int left = 0;
    synchronized (waiting) {
      for (List<Waiting> rows : waiting.values()) {
        left += (int) rows.stream().filter(w -> w.holdsSlot).count();
      }
      waiting.clear();
    }
    giveBack(left);
  }

  private void giveBack(int slots) {
    for (int i = 0; i < slots; i++) {
      dispatcher.unreserve();
    }
  }

  /** How long a reservation may wait for its commit before {@link #sweep} gives it back. */
  Duration reservationLimit() {
    return Duration.ofNanos(leaseNanos - marginNanos);
  }
}
