package dev.relay.faults;

import dev.relay.CancelResult;
import dev.relay.RelayException;
import dev.relay.Work;
import dev.relay.admin.Admin;
import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.Pause;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.PurgeResult;
import dev.relay.admin.RedriveRefusedException;
import dev.relay.admin.RedriveRequest;
import dev.relay.admin.SupersedeRefusedException;
import dev.relay.admin.SupersedeResult;
import dev.relay.admin.WorkFilter;
import dev.relay.admin.WorkItem;
import dev.relay.admin.WorkNotFoundException;
import dev.relay.receiver.FenceTokens;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;

/**
 * The seeded operator: a thread of the harness that acts on the queue through Relay's real {@link
 * Admin} API, on connections of its own through its own loopback proxy, while the workers are
 * killed, paused and cut off. It redrives (failed work, and now and then done work with force; past
 * the deduplication horizon only with the override, half the times it is refused), cancels ready
 * and running work, supersedes it with a corrected intention, pauses and resumes the kind or the
 * queue, and purges done and cancelled work past a one-minute retention. Every action carries a
 * unique tag ({@code op#N}) in its reason, and its result goes into a history the {@link Checker}
 * reads against the audit tables.
 *
 * <p>The sequence of actions, their timing and their coin flips are drawn from the seed (a fixed
 * number of draws per step, whatever the database says); which item an action hits depends on the
 * state it finds, as with any real operator.
 *
 * <p>In the recovery phase ({@link #sweep()}) it does what an operator does after an incident:
 * resumes every pause and resolves failed work (redrive with the horizon override, or cancel;
 * deadline failures are cancelled, since a redrive would fail them again at once), so that keys
 * held by a failed item are released and the queue can drain.
 */
final class Operator implements Runnable {
  /** What an action did. */
  enum Op {
    REDRIVE,
    REDRIVE_OVERRIDE,
    CANCEL,
    SUPERSEDE,
    PAUSE,
    RESUME,
    PURGE,
    PURGE_DRY_RUN
  }

  /** How an action ended, as the operator saw it. */
  enum Status {
    /** Relay accepted it; {@code detail} says what it did. */
    OK,
    /** Relay refused it with a typed refusal; nothing changed. */
    REFUSED,
    /** The call failed on the connection: it may or may not have happened. */
    UNCERTAIN,
    /**
     * No connection could be opened (SQLState 08001 or 57P03, PostgreSQL down or starting up):
     * nothing was sent, so nothing happened.
     */
    NOT_SENT
  }

  /**
   * One action and its result.
   *
   * @param n its number, also its tag {@code op#n} in every audit row it writes
   * @param op what it did
   * @param workId the work it acted on ({@code null} for pause, resume and purge)
   * @param newWorkId a supersede's replacement, else {@code null}
   * @param status how it ended
   * @param detail what Relay said: a cancel's status, a refusal's reason, a purge's count, the
   *     error
   */
  record Action(int n, Op op, String workId, String newWorkId, Status status, String detail) {
    String tag() {
      return tag(n);
    }

    static String tag(int n) {
      return "op#" + n;
    }
  }

  static final String ACTOR = "fault-suite-operator";

  /** The retention the operator purges with: the shortest Relay allows. */
  static final PurgePolicy PURGE_POLICY =
      PurgePolicy.DEFAULT.withWorkRetention(Duration.ofMinutes(1));

  private final Admin admin;
  private final DataSource dataSource;
  private final Random random;
  private final long meanGapMillis;
  private final List<Action> history = new CopyOnWriteArrayList<>();
  private final FenceTokens tokens = FenceTokens.create();
  private volatile boolean stop;
  private int n;
  private String pausedQueue;
  private String pausedKind;
  private boolean paused;
  private long resumeAtNanos;

  /**
   * @param dataSource connections through the operator's own proxy
   * @param seed the seed of its actions
   * @param meanGapMillis the mean time between two actions
   */
  Operator(DataSource dataSource, long seed, long meanGapMillis) {
    this.dataSource = dataSource;
    this.admin = Admin.create(dataSource);
    this.random = new Random(seed);
    this.meanGapMillis = meanGapMillis;
  }

  List<Action> history() {
    return List.copyOf(history);
  }

  void stop() {
    stop = true;
  }

  @Override
  public void run() {
    while (!stop) {
      // A fixed number of draws per step: the seed decides the sequence whatever the state.
      long gap = meanGapMillis / 2 + (long) (random.nextDouble() * meanGapMillis);
      int choice = random.nextInt(100);
      int pick = random.nextInt(1 << 20);
      boolean coin = random.nextBoolean();
      long pauseMillis = 1000 + random.nextInt(2000);
      int resource = random.nextInt(4);
      sleep(gap);
      if (stop) {
        break;
      }
      if (paused && System.nanoTime() >= resumeAtNanos) {
        resume(pausedQueue, pausedKind);
        paused = false;
      }
      if (choice < 25) {
        redriveFailed(pick, coin);
      } else if (choice < 35) {
        redriveDone(pick, coin);
      } else if (choice < 55) {
        cancel(pick, coin);
      } else if (choice < 70) {
        supersede(pick, coin, resource);
      } else if (choice < 85) {
        if (!paused) {
          pausedQueue = coin ? "default" : null;
          pausedKind = coin ? null : WorkerMain.KIND;
          pause(pausedQueue, pausedKind);
          paused = true;
          resumeAtNanos = System.nanoTime() + pauseMillis * 1_000_000;
        }
      } else {
        purge();
      }
    }
  }

  /**
   * The end of an incident: lift every pause, then resolve every failed item (deadline failures are
   * cancelled; others are redriven, with the horizon override when a plain redrive is refused for
   * it, or cancelled, by the seed's coin). Returns how many failed items it found.
   */
  int sweep() {
    try {
      for (Pause p : admin.pauses()) {
        resume(p.queue(), p.kind());
      }
      paused = false;
      List<WorkItem> failed =
          admin.list(WorkFilter.all().state("failed"), null, Admin.MAX_PAGE_SIZE).items();
      for (WorkItem w : failed) {
        boolean coin = random.nextBoolean();
        if ("deadline".equals(w.lastErrorKind()) || !coin) {
          cancelItem(w.workId());
        } else {
          redrive(w.workId(), false, true);
        }
      }
      return failed.size();
    } catch (RelayException e) {
      return -1; // the database is restarting: the next sweep resolves it
    }
  }

  /**
   * The last purge, after recovery: audited dry runs every 3 s until some work is past the
   * one-minute retention (at most {@code maxWaitMillis}), then the purge, so that even a short run
   * leaves tombstones for the producer's late retries ({@link Producer#reusePurged}).
   */
  void finalPurge(long maxWaitMillis) {
    long end = System.nanoTime() + maxWaitMillis * 1_000_000;
    while (true) {
      int k = next();
      try {
        PurgeResult r =
            admin.purge(
                PURGE_POLICY, true, ACTOR, Action.tag(k) + " dry run before the last purge");
        record(k, Op.PURGE_DRY_RUN, null, null, Status.OK, "eligible " + r.work());
        if (r.work() > 0) {
          break;
        }
      } catch (RelayException e) {
        record(k, Op.PURGE_DRY_RUN, null, null, failed(e), e.getMessage());
      }
      if (System.nanoTime() > end) {
        break;
      }
      sleep(3000);
    }
    purge();
  }

  private void redriveFailed(int pick, boolean overrideIfPast) {
    WorkItem w = pickItem("failed", pick);
    if (w != null) {
      redrive(w.workId(), false, overrideIfPast);
    }
  }

  /** A forced redrive of done work: the receiver must deduplicate the repeat. */
  private void redriveDone(int pick, boolean overrideIfPast) {
    WorkItem w = pickItem("done", pick);
    if (w != null) {
      redrive(w.workId(), true, overrideIfPast);
    }
  }

  /**
   * A plain redrive (forced when the work is not failed); when it is refused as past the
   * deduplication horizon and {@code overrideIfPast}, again with the override.
   */
  private void redrive(String workId, boolean force, boolean overrideIfPast) {
    int k = next();
    RedriveRequest request =
        RedriveRequest.of(ACTOR, Action.tag(k) + " redrive after the incident");
    if (force) {
      request = request.forced();
    }
    try {
      admin.redrive(workId, request);
      record(k, Op.REDRIVE, workId, null, Status.OK, "redriven");
    } catch (RedriveRefusedException e) {
      record(k, Op.REDRIVE, workId, null, Status.REFUSED, e.reason().name());
      if (e.reason() == RedriveRefusedException.Reason.PAST_DEDUP_HORIZON && overrideIfPast) {
        int o = next();
        RedriveRequest over =
            RedriveRequest.of(ACTOR, Action.tag(o) + " redrive past the horizon, accepted risk")
                .overridingHorizon();
        if (force) {
          over = over.forced();
        }
        try {
          admin.redrive(workId, over);
          record(o, Op.REDRIVE_OVERRIDE, workId, null, Status.OK, "redriven");
        } catch (RedriveRefusedException again) {
          record(o, Op.REDRIVE_OVERRIDE, workId, null, Status.REFUSED, again.reason().name());
        } catch (WorkNotFoundException gone) {
          record(o, Op.REDRIVE_OVERRIDE, workId, null, Status.REFUSED, "not found");
        } catch (RelayException lost) {
          record(o, Op.REDRIVE_OVERRIDE, workId, null, failed(lost), lost.getMessage());
        }
      }
    } catch (WorkNotFoundException e) {
      record(k, Op.REDRIVE, workId, null, Status.REFUSED, "not found");
    } catch (RelayException e) {
      record(k, Op.REDRIVE, workId, null, failed(e), e.getMessage());
    }
  }

  private void cancel(int pick, boolean running) {
    WorkItem w = pickItem(running ? "running" : "ready", pick);
    if (w != null) {
      cancelItem(w.workId());
    }
  }

  private void cancelItem(String workId) {
    int k = next();
    try {
      CancelResult r = admin.cancel(workId, ACTOR, Action.tag(k) + " cancel during the incident");
      record(k, Op.CANCEL, workId, null, Status.OK, r.status().name());
    } catch (RelayException e) {
      record(k, Op.CANCEL, workId, null, failed(e), e.getMessage());
    }
  }

  /** A corrected intention: new ID, a fencing token of its own, the old work cancelled. */
  private void supersede(int pick, boolean running, int resource) {
    WorkItem w = pickItem(running ? "running" : "ready", pick);
    if (w == null) {
      return;
    }
    int k = next();
    String newId = "op-" + k + "-r";
    String res = "res-" + resource;
    long token;
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      token = tokens.next(c, res);
      c.commit();
    } catch (SQLException | RelayException e) {
      // Only the token: the supersede itself was not sent.
      record(k, Op.SUPERSEDE, w.workId(), newId, Status.NOT_SENT, e.getMessage());
      return;
    }
    try {
      Work replacement =
          Work.of(newId, WorkerMain.KIND, new Item("op-" + k, res, token).json()).maxAttempts(1000);
      SupersedeResult r =
          admin.supersede(w.workId(), replacement, ACTOR, Action.tag(k) + " corrected intention");
      record(k, Op.SUPERSEDE, w.workId(), newId, Status.OK, r.oldWork().name());
    } catch (SupersedeRefusedException | WorkNotFoundException e) {
      record(k, Op.SUPERSEDE, w.workId(), newId, Status.REFUSED, e.getMessage());
    } catch (RelayException e) {
      record(k, Op.SUPERSEDE, w.workId(), newId, failed(e), e.getMessage());
    }
  }

  private void pause(String queue, String kind) {
    int k = next();
    try {
      Pause p = admin.pause(queue, kind, ACTOR, Action.tag(k) + " pause during the incident", null);
      record(k, Op.PAUSE, null, null, Status.OK, p.target());
    } catch (InvalidAdminRequestException e) {
      record(k, Op.PAUSE, null, null, Status.REFUSED, e.getMessage());
    } catch (RelayException e) {
      record(k, Op.PAUSE, null, null, failed(e), e.getMessage());
    }
  }

  private void resume(String queue, String kind) {
    int k = next();
    try {
      boolean lifted = admin.resume(queue, kind, ACTOR, Action.tag(k) + " resume").isPresent();
      record(k, Op.RESUME, null, null, Status.OK, lifted ? "lifted" : "nothing paused");
    } catch (RelayException e) {
      record(k, Op.RESUME, null, null, failed(e), e.getMessage());
    }
  }

  private void purge() {
    int k = next();
    try {
      PurgeResult r = admin.purge(PURGE_POLICY, false, ACTOR, Action.tag(k) + " retention");
      record(k, Op.PURGE, null, null, Status.OK, "purged " + r.work());
    } catch (RelayException e) {
      record(k, Op.PURGE, null, null, failed(e), e.getMessage());
    }
  }

  /** An item in {@code state}, picked by the seed's draw among the first page; null if none. */
  private WorkItem pickItem(String state, int pick) {
    try {
      List<WorkItem> items =
          admin.list(WorkFilter.all().state(state).kind(WorkerMain.KIND), null, 200).items();
      return items.isEmpty() ? null : items.get(pick % items.size());
    } catch (RelayException e) {
      return null;
    }
  }

  /** How a failed call ended: not sent when no connection could be opened, else uncertain. */
  private static Status failed(RelayException e) {
    String state = e.sqlState();
    return "08001".equals(state) || "57P03".equals(state) ? Status.NOT_SENT : Status.UNCERTAIN;
  }

  private synchronized int next() {
    return ++n;
  }

  private void record(int k, Op op, String workId, String newId, Status s, String detail) {
    history.add(new Action(k, op, workId, newId, s, detail));
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
