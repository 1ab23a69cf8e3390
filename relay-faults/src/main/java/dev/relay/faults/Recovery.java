package dev.relay.faults;

import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;

/**
 * The recovery phase's wait, which tells a slow recovery from a stuck one. It samples Relay's
 * tables once a second (open work, work finished, leases expiring, claims per worker) and waits as
 * long as work keeps finishing: past the base time while progress continues (a loaded machine is
 * slow, not wrong), up to a hard cap. It calls the recovery <em>stuck</em> when nothing finished
 * for a stall window of several leases while work was open, and then says what holds the open work:
 * ready work due now and unclaimed, ordering keys held by an earlier item, dependencies, pauses,
 * flow limits, live leases by worker, expired leases, retries not yet due, and whether the worker
 * processes are up.
 *
 * <p>Progress is work that ended ({@code done}, {@code failed}, {@code cancelled}, or purged into a
 * tombstone) or left the open set; lease expiries and retries are activity, not progress. It reads
 * through a direct connection on the database clock and never changes anything.
 */
final class Recovery {
  /** How the wait ended. */
  enum Verdict {
    /** Nothing open remained within the base time. */
    SETTLED,
    /** Nothing open remained, after waiting past the base time while work kept finishing. */
    SLOW,
    /** Nothing finished for the stall window while work was open. */
    STUCK,
    /** Work was still finishing when the hard cap ran out. */
    CAPPED
  }

  /**
   * What the wait saw.
   *
   * @param verdict how it ended
   * @param millis how long it waited
   * @param baseMillis the base time
   * @param slowestPerMinute the lowest rate of finishing over a minute-long window while waiting
   *     (items per minute), or -1 when the wait was shorter than a minute
   * @param openAtEnd work still ready or running at the end
   * @param holding what holds the open work, when stuck or capped (empty otherwise)
   */
  record Report(
      Verdict verdict,
      long millis,
      long baseMillis,
      long slowestPerMinute,
      long openAtEnd,
      List<String> holding) {
    boolean settled() {
      return verdict == Verdict.SETTLED || verdict == Verdict.SLOW;
    }

    String summary() {
      String rate = slowestPerMinute < 0 ? "" : ", slowest " + slowestPerMinute + " items/min";
      return switch (verdict) {
        case SETTLED -> "recovery: all work settled in " + millis / 1000 + " s" + rate;
        case SLOW ->
            "recovery: SLOW, not stuck: all work settled in "
                + millis / 1000
                + " s, past the base "
                + baseMillis / 1000
                + " s, while work kept finishing"
                + rate;
        case STUCK ->
            "recovery: STUCK: nothing finished for the stall window with "
                + openAtEnd
                + " items open, after "
                + millis / 1000
                + " s"
                + rate;
        case CAPPED ->
            "recovery: still finishing at the cap ("
                + millis / 1000
                + " s) with "
                + openAtEnd
                + " items open: slow, not stuck"
                + rate;
      };
    }
  }

  /** One sample of the database. */
  record Sample(
      long atMillis,
      long open,
      long readyDue,
      long readyLater,
      long runningLive,
      long runningExpired,
      long finished,
      long leaseExpiries,
      long retries,
      Map<String, Long> claimsByWorker) {}

  /** Opens a direct connection to Relay's database. */
  interface Connector {
    Connection connect() throws SQLException;
  }

  // The work view: finished work is counted in the work table (older writers, the operator) and
  // in the history table (what workers completed or cancelled), then purged work by tombstone.
  static final String SAMPLE =
      """
      SELECT count(*) FILTER (WHERE state IN ('ready', 'running')),
             count(*) FILTER (WHERE state = 'ready' AND available_at <= clock_timestamp()),
             count(*) FILTER (WHERE state = 'ready' AND available_at > clock_timestamp()),
             count(*) FILTER (WHERE state = 'running' AND lease_until > clock_timestamp()),
             count(*) FILTER (WHERE state = 'running' AND lease_until <= clock_timestamp()),
             count(*) FILTER (WHERE state IN ('done', 'failed', 'cancelled'))
                 + (SELECT count(*) FROM relay.tombstone),
             (SELECT count(*) FROM relay.attempt WHERE ending = 'lease_expired'),
             (SELECT count(*) FROM relay.attempt WHERE ending = 'retry')
        FROM relay.work
      """;

  static final String CLAIMS_BY_WORKER =
      """
      SELECT claimed_by, count(*) FROM relay.outbox
       WHERE state = 'running' AND lease_until > clock_timestamp()
       GROUP BY claimed_by ORDER BY claimed_by
      """;

  private final Connector db;
  private final long leaseMillis;
  private final PrintStream out;
  private final BooleanSupplier workersUp;

  /**
   * @param db direct connections to Relay's database
   * @param leaseMillis the workers' lease: the stall window is counted in leases
   * @param out where progress lines go (one about every 15 s)
   * @param workersUp whether every worker process is alive now
   */
  Recovery(Connector db, long leaseMillis, PrintStream out, BooleanSupplier workersUp) {
    this.db = db;
    this.leaseMillis = leaseMillis;
    this.out = out;
    this.workersUp = workersUp;
  }

  /** The stall window: no progress for this long with work open is stuck. */
  long stallMillis() {
    return Math.max(60_000, 20 * leaseMillis);
  }

  /**
   * Waits until no work is ready or running. Waits at least {@code baseMillis} (unless it settles
   * first); past it, goes on while work keeps finishing, until {@code capMillis}.
   */
  Report await(long baseMillis, long capMillis) throws InterruptedException {
    long t0 = System.nanoTime();
    List<Sample> samples = new ArrayList<>();
    long lastProgressAt = 0;
    long lastPrint = 0;
    while (true) {
      long now = (System.nanoTime() - t0) / 1_000_000;
      Sample s = sample(now);
      if (s != null) {
        Sample prev = samples.isEmpty() ? null : samples.get(samples.size() - 1);
        if (prev != null && (s.finished() > prev.finished() || s.open() < prev.open())) {
          lastProgressAt = now;
        }
        samples.add(s);
        if (s.open() == 0) {
          Verdict v = now <= baseMillis ? Verdict.SETTLED : Verdict.SLOW;
          return new Report(v, now, baseMillis, slowestPerMinute(samples), 0, List.of());
        }
        if (now - lastPrint >= 15_000) {
          lastPrint = now;
          out.println("  " + progressLine(samples));
        }
      }
      boolean stalled = now - lastProgressAt >= stallMillis();
      if (stalled || now >= capMillis) {
        Sample last = samples.isEmpty() ? null : samples.get(samples.size() - 1);
        long open = last == null ? -1 : last.open();
        Verdict v = stalled ? Verdict.STUCK : Verdict.CAPPED;
        List<String> holding = new ArrayList<>();
        if (last != null) {
          holding.add("last sample: " + progressLine(samples));
        }
        holding.addAll(holding());
        return new Report(v, now, baseMillis, slowestPerMinute(samples), open, holding);
      }
      Thread.sleep(1000);
    }
  }

  /** One sample, or {@code null} when the database cannot be read now (it may be restarting). */
  private Sample sample(long atMillis) {
    try (Connection c = db.connect();
        Statement st = c.createStatement()) {
      Map<String, Long> claims = new TreeMap<>();
      try (ResultSet r = st.executeQuery(CLAIMS_BY_WORKER)) {
        while (r.next()) {
          claims.put(r.getString(1), r.getLong(2));
        }
      }
      try (ResultSet r = st.executeQuery(SAMPLE)) {
        r.next();
        return new Sample(
            atMillis,
            r.getLong(1),
            r.getLong(2),
            r.getLong(3),
            r.getLong(4),
            r.getLong(5),
            r.getLong(6),
            r.getLong(7),
            r.getLong(8),
            claims);
      }
    } catch (SQLException e) {
      return null;
    }
  }

  /** The rate over the last minute and what the newest sample says. */
  static String progressLine(List<Sample> samples) {
    Sample s = samples.get(samples.size() - 1);
    Sample before = s;
    for (int i = samples.size() - 1; i >= 0; i--) {
      before = samples.get(i);
      if (s.atMillis() - before.atMillis() >= 60_000) {
        break;
      }
    }
    long span = Math.max(1, s.atMillis() - before.atMillis());
    return String.format(
        "+%ds: %d open (ready due %d, ready later %d, running %d, expired leases %d);"
            + " finished +%d over %d s; lease expiries +%d, retries +%d; live claims %s",
        s.atMillis() / 1000,
        s.open(),
        s.readyDue(),
        s.readyLater(),
        s.runningLive(),
        s.runningExpired(),
        s.finished() - before.finished(),
        span / 1000,
        s.leaseExpiries() - before.leaseExpiries(),
        s.retries() - before.retries(),
        s.claimsByWorker());
  }

  /** The lowest number of items finished over any minute of the wait; -1 under a minute. */
  static long slowestPerMinute(List<Sample> samples) {
    long slowest = -1;
    int j = 0;
    for (int i = 0; i < samples.size(); i++) {
      Sample s = samples.get(i);
      while (j < i && s.atMillis() - samples.get(j + 1).atMillis() >= 60_000) {
        j++;
      }
      Sample from = samples.get(j);
      long span = s.atMillis() - from.atMillis();
      if (span >= 60_000) {
        long perMinute = (s.finished() - from.finished()) * 60_000 / span;
        slowest = slowest < 0 ? perMinute : Math.min(slowest, perMinute);
      }
    }
    return slowest;
  }

  /** What holds the open work now: one line per cause found. */
  List<String> holding() {
    List<String> lines = new ArrayList<>();
    lines.add("worker processes all up: " + workersUp.getAsBoolean());
    try (Connection c = db.connect();
        Statement st = c.createStatement()) {
      for (String[] q : HOLDING) {
        try (ResultSet r = st.executeQuery(q[1])) {
          List<String> rows = new ArrayList<>();
          int cols = r.getMetaData().getColumnCount();
          while (r.next()) {
            StringBuilder b = new StringBuilder();
            for (int i = 1; i <= cols; i++) {
              if (i > 1) {
                b.append(' ');
              }
              b.append(r.getMetaData().getColumnLabel(i)).append('=').append(r.getString(i));
            }
            rows.add(b.toString());
          }
          if (!rows.isEmpty()) {
            lines.add(q[0] + ": " + String.join("; ", rows));
          }
        }
      }
    } catch (SQLException e) {
      lines.add("the database could not be read: " + e.getMessage());
    }
    return lines;
  }

  /** The causes looked for when stuck: a label and a query, each returning a few rows. */
  private static final String[][] HOLDING = {
    {
      "ready work due now by ordering key, with the key's lowest unfinished item",
      """
      SELECT o.ordering_key AS key, count(*) AS ready,
             (SELECT h.work_id || ' ' || h.state || ' seq ' || h.sequence
                     || coalesce(' ' || h.last_error_kind, '')
                FROM relay.outbox h
               WHERE h.ordering_key = o.ordering_key AND h.state IN ('ready', 'running', 'failed')
               ORDER BY h.sequence LIMIT 1) AS head
        FROM relay.outbox o
       WHERE o.state = 'ready' AND o.available_at <= clock_timestamp()
         AND o.ordering_key IS NOT NULL
       GROUP BY o.ordering_key ORDER BY count(*) DESC LIMIT 5
      """
    },
    {
      "ready unkeyed work due now (claimable unless paused, limited or waiting for a dependency)",
      """
      SELECT count(*) AS items, count(*) FILTER (WHERE has_dependencies) AS with_dependencies,
             min(available_at) AS oldest_due
        FROM relay.outbox
       WHERE state = 'ready' AND available_at <= clock_timestamp() AND ordering_key IS NULL
      HAVING count(*) > 0
      """
    },
    {
      "ready work not due yet (retry or delay)",
      """
      SELECT count(*) AS items, min(available_at) - clock_timestamp() AS next_due_in
        FROM relay.outbox WHERE state = 'ready' AND available_at > clock_timestamp()
      HAVING count(*) > 0
      """
    },
    {
      "pauses in force",
      """
      SELECT queue, kind, actor, reason, resume_at FROM relay.pause
       WHERE resume_at IS NULL OR resume_at > clock_timestamp()
      """
    },
    {"flow limits", "SELECT * FROM relay.limiter LIMIT 5"},
    {
      "running work by worker (live / expired leases)",
      """
      SELECT claimed_by AS worker,
             count(*) FILTER (WHERE lease_until > clock_timestamp()) AS live,
             count(*) FILTER (WHERE lease_until <= clock_timestamp()) AS expired,
             max(clock_timestamp() - claimed_at) AS oldest_claim
        FROM relay.outbox WHERE state = 'running' GROUP BY claimed_by ORDER BY claimed_by
      """
    },
    {
      "workers registered (heartbeat age)",
      """
      SELECT worker_id, clock_timestamp() - heartbeat_at AS heartbeat_age
        FROM relay.worker ORDER BY worker_id
      """
    },
    {
      "failed work by reason (holds its key until redriven or cancelled)",
      """
      SELECT last_error_kind AS reason, count(*) AS items,
             count(*) FILTER (WHERE ordering_key IS NOT NULL) AS keyed
        FROM relay.outbox WHERE state = 'failed' GROUP BY last_error_kind
      """
    },
    {
      "open work's last errors",
      """
      SELECT last_error_kind AS kind, count(*) AS items, max(attempts) AS max_attempts
        FROM relay.outbox WHERE state IN ('ready', 'running') AND last_error_kind IS NOT NULL
       GROUP BY last_error_kind ORDER BY count(*) DESC LIMIT 5
      """
    }
  };
}
