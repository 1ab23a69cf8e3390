package dev.relay.faults;

import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.receiver.FenceTokens;
import dev.relay.test.LoopbackProxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
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

  private final String url;
  private final LoopbackProxy proxy;
  private final Random random;
  private final int items;
  private final long spreadMillis;
  private final int keys;
  private final Outbox outbox = Outbox.create();
  private final FenceTokens tokens = FenceTokens.create();
  private final List<Tx> log = new CopyOnWriteArrayList<>();
  private volatile boolean stop;
  private int produced;

  Producer(String url, LoopbackProxy proxy, long seed, int items, long spreadMillis, int keys) {
    this.url = url;
    this.proxy = proxy;
    this.random = new Random(seed);
    this.items = items;
    this.spreadMillis = spreadMillis;
    this.keys = keys;
  }

  List<Tx> log() {
    return List.copyOf(log);
  }

  void stop() {
    stop = true;
  }

  @Override
  public void run() {
    long pause = Math.max(5, spreadMillis / Math.max(1, items / 2));
    Connection c = null;
    int n = 0;
    while (!stop && produced < items) {
      String txId = "t" + (++n);
      int count = Math.min(1 + random.nextInt(3), items - produced);
      boolean rollback = random.nextInt(100) < 10;
      boolean dropReply = !rollback && random.nextInt(100) < 6;
      boolean[] keyed = new boolean[count];
      int[] key = new int[count];
      int[] resource = new int[count];
      for (int j = 0; j < count; j++) {
        keyed[j] = random.nextInt(100) < 40;
        key[j] = random.nextInt(keys);
        resource[j] = random.nextInt(4);
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
          }
          outbox.enqueue(c, w);
          ids.add(id);
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
