package dev.relay.faults;

import dev.relay.EnqueueResult;
import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.receiver.FenceTokens;
import dev.relay.test.LoopbackProxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Commits work in business transactions through its own loopback proxy and records what it knows of
 * each: committed, rolled back on purpose, aborted before COMMIT was sent, or uncertain (COMMIT was
 * sent and no reply came: the proxy dropped it on purpose, or PostgreSQL crashed).
 */
final class Producer implements Runnable {
  /** What the producer knows of one transaction. */
  enum Status {
    COMMITTED,
    ROLLED_BACK,
    ABORTED,
    UNCERTAIN
  }

  /** One transaction: its ID, its work IDs, and what the producer knows of it. */
  record Tx(String id, List<String> workIds, Status status) {}

  /** What an enqueue of a purged work ID returned. */
  enum ReuseResult {
    /**
     * Recognised as the same intention (its tombstone's payload digest matched): nothing stored.
     */
    ALREADY_ENQUEUED,
    /** A row was inserted: the purged ID came back as new work. */
    ENQUEUED,
    /** Refused as a conflict with the tombstone ({@code WorkConflictException}). */
    CONFLICT,
    /** The transaction failed on the connection; its outcome is not known. */
    UNCERTAIN
  }

  /**
   * One attempt to enqueue a purged ID again, in a transaction of its own.
   *
   * @param workId the purged ID
   * @param samePayload whether the payload was the one first enqueued under it
   * @param result what the enqueue said
   */
  record Reuse(String workId, boolean samePayload, ReuseResult result) {}

  private final String url;
  private final LoopbackProxy proxy;
  private final Random random;
  private final int items;
  private final long spreadMillis;
  private final int keys;
  private final Outbox outbox = Outbox.create();
  private final FenceTokens tokens = FenceTokens.create();
  private final List<Tx> log = new CopyOnWriteArrayList<>();
  private final List<Reuse> reuses = new CopyOnWriteArrayList<>();
  private final Map<String, String> payloads = new HashMap<>();
  private volatile boolean stop;
  private int produced;
  private boolean withOperator;
  private long reuseUntilMillis;

  Producer(String url, LoopbackProxy proxy, long seed, int items, long spreadMillis, int keys) {
    this.url = url;
    this.proxy = proxy;
    this.random = new Random(seed);
    this.items = items;
    this.spreadMillis = spreadMillis;
    this.keys = keys;
  }

  /**
   * With an operator that purges: about 5 % of unkeyed items get a business deadline 3-25 s out,
   * and about every fifth step, and after the last item until {@code reuseUntilMillis} from the
   * start, the producer enqueues a purged ID again (from the tombstone table), with its first
   * payload or with another, in a transaction of its own.
   */
  Producer withOperator(long reuseUntilMillis) {
    this.withOperator = true;
    this.reuseUntilMillis = reuseUntilMillis;
    return this;
  }

  List<Tx> log() {
    return List.copyOf(log);
  }

  List<Reuse> reuses() {
    return List.copyOf(reuses);
  }

  void stop() {
    stop = true;
  }

  @Override
  public void run() {
    long pause = Math.max(5, spreadMillis / Math.max(1, items / 2));
    long t0 = System.nanoTime();
    Connection c = null;
    int n = 0;
    while (!stop
        && (produced < items
            || withOperator && (System.nanoTime() - t0) / 1_000_000 < reuseUntilMillis)) {
      if (withOperator) {
        boolean reuse = produced >= items || random.nextInt(5) == 0;
        int pick = random.nextInt(1 << 20);
        boolean same = random.nextBoolean();
        if (reuse) {
          c = reusePurgedId(c, pick, same);
          sleep(produced >= items ? 300 : pause);
          continue;
        }
      }
      String txId = "t" + (++n);
      int count = Math.min(1 + random.nextInt(3), items - produced);
      boolean rollback = random.nextInt(100) < 10;
      boolean dropReply = !rollback && random.nextInt(100) < 6;
      boolean[] keyed = new boolean[count];
      int[] key = new int[count];
      int[] resource = new int[count];
      int[] deadline = new int[count];
      for (int j = 0; j < count; j++) {
        keyed[j] = random.nextInt(100) < 40;
        key[j] = random.nextInt(keys);
        resource[j] = random.nextInt(4);
        if (withOperator) {
          deadline[j] = random.nextInt(100) < 5 ? 3 + random.nextInt(23) : 0;
        }
      }
      List<String> ids = new ArrayList<>();
      boolean commitSent = false;
      try {
        if (c == null || c.isClosed()) {
          c = DriverManager.getConnection(url);
        }
        c.setAutoCommit(false);
        for (int j = 0; j < count; j++) {
          String id = txId + "-" + j;
          String res = "res-" + resource[j];
          long token = tokens.next(c, res);
          Work w =
              Work.of(id, WorkerMain.KIND, new Item(txId, res, token).json()).maxAttempts(1000);
          if (keyed[j]) {
            w = w.orderingKey("key-" + key[j]);
          } else if (deadline[j] > 0) {
            w = w.deadline(Instant.now().plusSeconds(deadline[j]));
          }
          outbox.enqueue(c, w);
          ids.add(id);
          payloads.put(id, w.payload());
        }
        try (PreparedStatement ps = c.prepareStatement(FxSql.BUSINESS)) {
          ps.setString(1, txId);
          ps.setInt(2, count);
          ps.executeUpdate();
        }
        if (rollback) {
          c.rollback();
          log.add(new Tx(txId, ids, Status.ROLLED_BACK));
        } else {
          if (dropReply) {
            proxy.dropReplyAfterNextCommit();
          }
          commitSent = true;
          c.commit();
          log.add(new Tx(txId, ids, Status.COMMITTED));
          produced += count;
        }
      } catch (SQLException | RuntimeException e) {
        if (commitSent) {
          log.add(new Tx(txId, ids, Status.UNCERTAIN));
          produced += count;
        } else {
          for (int j = ids.size(); j < count; j++) {
            ids.add(txId + "-" + j);
          }
          log.add(new Tx(txId, ids, Status.ABORTED));
        }
        closeQuietly(c);
        c = null;
      }
      sleep(pause);
    }
    closeQuietly(c);
  }

  /**
   * After the run (the producing thread has ended): up to {@code attempts} enqueues of purged IDs,
   * alternately with the first payload and with another, as late producer retries.
   */
  void reusePurged(int attempts) {
    Connection c = null;
    for (int i = 0; i < attempts; i++) {
      c = reusePurgedId(c, random.nextInt(1 << 20), i % 2 == 0);
    }
    closeQuietly(c);
  }

  /**
   * Enqueues a purged ID again, picked by {@code pick} among the newest tombstones of this run's
   * items, with the payload first enqueued under it ({@code same}) or another one (a higher token).
   * Returns the connection to go on with ({@code null} after a failure).
   */
  private Connection reusePurgedId(Connection c, int pick, boolean same) {
    String id = null;
    try {
      if (c == null || c.isClosed()) {
        c = DriverManager.getConnection(url);
      }
      c.setAutoCommit(true);
      List<String> purged = new ArrayList<>();
      try (PreparedStatement ps = c.prepareStatement(PURGED_IDS);
          ResultSet r = ps.executeQuery()) {
        while (r.next()) {
          if (payloads.containsKey(r.getString(1))) {
            purged.add(r.getString(1));
          }
        }
      }
      if (purged.isEmpty()) {
        return c;
      }
      id = purged.get(pick % purged.size());
      String payload = payloads.get(id);
      if (!same) {
        Item first = Item.parse(payload);
        payload = new Item(first.tx(), first.resource(), first.token() + 1_000_000).json();
      }
      c.setAutoCommit(false);
      ReuseResult result;
      try {
        EnqueueResult r =
            outbox.enqueue(c, Work.of(id, WorkerMain.KIND, payload).maxAttempts(1000));
        c.commit();
        result = r.inserted() ? ReuseResult.ENQUEUED : ReuseResult.ALREADY_ENQUEUED;
      } catch (WorkConflictException e) {
        c.rollback();
        result = ReuseResult.CONFLICT;
      }
      reuses.add(new Reuse(id, same, result));
      return c;
    } catch (SQLException | RuntimeException e) {
      if (id != null) {
        reuses.add(new Reuse(id, same, ReuseResult.UNCERTAIN));
      }
      closeQuietly(c);
      return null;
    }
  }

  /** The newest tombstones of producer items (operator replacements are named op-...). */
  static final String PURGED_IDS =
      "SELECT work_id FROM relay.tombstone WHERE work_id LIKE 't%' ORDER BY purged_at DESC LIMIT 50";

  private static void closeQuietly(Connection c) {
    if (c != null) {
      try {
        c.close();
      } catch (SQLException ignored) {
        // gone already
      }
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
