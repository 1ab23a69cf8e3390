package dev.relay.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.Outcome;
import dev.relay.Relay;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A Relay worker in a JVM of its own, started by the bench to measure what needs separate
 * processes: work stranded by a {@code kill -9}, and burn-down by several worker processes on one
 * PostgreSQL. It runs Relay at its defaults with a no-op handler of {@link RelayBench#KIND} (or one
 * that sleeps {@code handlerMillis}), prints {@code ready} once started, and closes when its
 * standard input ends or says {@code stop}.
 *
 * <p>{@code java -cp relay-bench-all.jar dev.relay.bench.WorkerProcess JDBC_URL SCHEMA WORKER_ID
 * HANDLER_MILLIS [JDBC_URL2 SCHEMA2]}: with a second database, one process serves both (two Relays,
 * one per database).
 */
public final class WorkerProcess {
  private WorkerProcess() {}

  /** Runs the worker; see the class comment for the arguments. */
  public static void main(String[] args) throws Exception {
    String workerId = args[2];
    long handlerMillis = Long.parseLong(args[3]);
    List<String[]> databases = new ArrayList<>();
    databases.add(new String[] {args[0], args[1]});
    if (args.length >= 6) {
      databases.add(new String[] {args[4], args[5]});
    }
    List<HikariDataSource> pools = new ArrayList<>();
    List<Relay> relays = new ArrayList<>();
    for (String[] db : databases) {
      String url = db[0];
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(url);
      config.setPoolName("worker-" + relays.size());
      config.setMaximumPoolSize(10);
      HikariDataSource pool = new HikariDataSource(config);
      pools.add(pool);
      relays.add(
          Relay.builder(pool)
              .schema(db[1])
              .workerId(workerId + (relays.isEmpty() ? "" : "-db" + relays.size()))
              .handle(
                  RelayBench.KIND,
                  claim -> {
                    if (handlerMillis > 0) {
                      TimeUnit.MILLISECONDS.sleep(handlerMillis);
                    }
                    return Outcome.done();
                  })
              .listenConnections(() -> DriverManager.getConnection(url))
              .shutdownGrace(Duration.ofSeconds(10))
              .build());
    }
    for (Relay r : relays) {
      r.start();
    }
    System.out.println("ready");
    System.out.flush();
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null && !line.strip().equals("stop")) {
        // wait for the bench to say stop (or to go away)
      }
    } finally {
      for (Relay r : relays) {
        r.close();
      }
      for (HikariDataSource p : pools) {
        p.close();
      }
    }
  }
}
