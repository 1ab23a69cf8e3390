package dev.relay.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.Migrator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Scale-out: 1, 2 and 4 worker processes ({@link WorkerProcess}, separate JVMs at Relay's defaults)
 * drain one backlog on one PostgreSQL; then one process serving two databases of the same server
 * (two Relays, one per database) drains a backlog in each. The rate is taken from the database
 * clock (first claim to last completion of the backlog). While they drain, the server's backends
 * are sampled every 50 ms ({@code pg_stat_activity}): the share of samples on the CPU (no wait),
 * waiting on WAL (flush or write), on locks (heavyweight or lightweight) or on the client, which
 * says where PostgreSQL saturates.
 */
final class ScaleOutBench {
  static final String SECOND_DATABASE = "relay_bench_2";

  private final BenchDb db;
  private final RelayBench relay;
  private final Sizes sizes;
  private final Report report;

  ScaleOutBench(BenchDb db, RelayBench relay, Sizes sizes, Report report) {
    this.db = db;
    this.relay = relay;
    this.sizes = sizes;
    this.report = report;
  }

  void run() throws Exception {
    for (int processes : new int[] {1, 2, 4}) {
      Map<String, Object> p = RelayBench.params("jobs", sizes.jobs(), "processes", processes);
      Scenario rate = report.add(new Scenario("scale-out", "relay", p, "jobs/s"));
      Map<String, Scenario> waits = waitScenarios(p);
      for (int run = 0; run < sizes.runs(); run++) {
        relay.truncate();
        relay.vacuum();
        List<List<String>> workers = new ArrayList<>();
        for (int i = 0; i < processes; i++) {
          workers.add(List.of(db.url(), RelayBench.SCHEMA, "scale-" + run + "-" + i, "0"));
        }
        Map<String, Double> w = new LinkedHashMap<>();
        rate.add(drain(workers, List.of(db.url()), w));
        w.forEach((k, v) -> waits.get(k).add(v));
      }
    }
    twoDatabases();
    relay.truncate();
    relay.vacuum();
  }

  /** One process, two Relays: one per database (both on this server). */
  private void twoDatabases() throws Exception {
    db.exec("DROP DATABASE IF EXISTS " + SECOND_DATABASE, "CREATE DATABASE " + SECOND_DATABASE);
    String url2 = otherDatabaseUrl();
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url2);
    config.setMaximumPoolSize(2);
    try (HikariDataSource second = new HikariDataSource(config)) {
      Migrator.migrate(second, RelayBench.SCHEMA);
    }
    Map<String, Object> p =
        RelayBench.params("jobs", 2 * sizes.jobs(), "processes", 1, "databases", 2);
    Scenario rate = report.add(new Scenario("scale-out", "relay", p, "jobs/s"));
    Map<String, Scenario> waits = waitScenarios(p);
    for (int run = 0; run < sizes.runs(); run++) {
      relay.truncate();
      relay.vacuum();
      exec(
          url2,
          "TRUNCATE "
              + RelayBench.SCHEMA
              + ".outbox, "
              + RelayBench.SCHEMA
              + ".work_history, "
              + RelayBench.SCHEMA
              + ".tombstone, "
              + RelayBench.SCHEMA
              + ".attempt CASCADE");
      List<String> args =
          List.of(db.url(), RelayBench.SCHEMA, "two-db-" + run, "0", url2, RelayBench.SCHEMA);
      Map<String, Double> w = new LinkedHashMap<>();
      rate.add(drain(List.of(args), List.of(db.url(), url2), w));
      w.forEach((k, v) -> waits.get(k).add(v));
    }
  }

  private Map<String, Scenario> waitScenarios(Map<String, Object> p) {
    Map<String, Scenario> m = new LinkedHashMap<>();
    for (String what : new String[] {"cpu", "wal", "lock", "client"}) {
      m.put(what, report.add(new Scenario("scale-out-backends-" + what, "relay", p, "share")));
    }
    return m;
  }

  /**
   * Starts the worker processes, fills every database in {@code urls} with {@code --jobs} rows at
   * once, waits until all are done; returns jobs per second over all databases (database clock).
   */
  private double drain(List<List<String>> workers, List<String> urls, Map<String, Double> waits)
      throws Exception {
    Path log = Files.createTempFile("relay-bench-scale", ".log");
    try (Processes processes = new Processes()) {
      for (List<String> args : workers) {
        processes.start(args, log);
      }
      for (String url : urls) {
        exec(
            url,
            "INSERT INTO "
                + RelayBench.SCHEMA
                + ".outbox (work_id, kind, payload) SELECT 'b-' || g, '"
                + RelayBench.KIND
                + "', jsonb_build_object('n', g) FROM generate_series(1, "
                + sizes.jobs()
                + ") AS g",
            "NOTIFY relay_" + RelayBench.SCHEMA);
      }
      long[] samples = new long[5]; // cpu, wal, lock, client, all
      long deadline = System.nanoTime() + 30L * 60 * 1_000_000_000L;
      try (Connection watch = DriverManager.getConnection(db.url())) {
        while (remaining(urls) > 0) {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException("scale-out did not drain; see " + log);
          }
          sample(watch, samples);
          Thread.sleep(50);
        }
      }
      String[] names = {"cpu", "wal", "lock", "client"};
      for (int i = 0; i < names.length; i++) {
        waits.put(names[i], samples[4] == 0 ? 0.0 : (double) samples[i] / samples[4]);
      }
      double rate = 0;
      for (String url : urls) {
        rate += rate(url);
      }
      Files.deleteIfExists(log);
      return rate;
    }
  }

  /** One look at the server's active backends other than this one: what each waits on. */
  private static void sample(Connection c, long[] samples) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT wait_event_type, wait_event FROM pg_stat_activity WHERE pid <>"
                    + " pg_backend_pid() AND backend_type = 'client backend' AND state ="
                    + " 'active' AND query NOT LIKE 'LISTEN%'")) {
      while (rs.next()) {
        String type = rs.getString(1);
        String event = rs.getString(2);
        samples[4]++;
        if (type == null) {
          samples[0]++;
        } else if (event != null && event.startsWith("WAL")) {
          samples[1]++;
        } else if (type.equals("Lock") || type.equals("LWLock")) {
          samples[2]++;
        } else if (type.equals("Client")) {
          samples[3]++;
        }
      }
    }
  }

  /** Work not yet done: all of it in the work table (completion moves a row out of it). */
  private long remaining(List<String> urls) throws SQLException {
    long n = 0;
    for (String url : urls) {
      try (Connection c = DriverManager.getConnection(url);
          Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery(
                  "SELECT count(*) FROM " + RelayBench.SCHEMA + ".outbox WHERE state <> 'done'")) {
        rs.next();
        n += rs.getLong(1);
      }
    }
    return n;
  }

  /**
   * Jobs per second in one database: first claim to last completion, on its clock. Done work is
   * read through the work view: its rows moved to the history table.
   */
  private double rate(String url) throws SQLException {
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) / EXTRACT(EPOCH FROM max(completed_at) - min(claimed_at)) FROM "
                    + RelayBench.SCHEMA
                    + ".work WHERE state = 'done'")) {
      rs.next();
      return rs.getDouble(1);
    }
  }

  private String otherDatabaseUrl() throws SQLException {
    try (Connection c = db.connect()) {
      String current = c.getCatalog();
      return db.url().replaceFirst("/" + current + "(?=\\?|$)", "/" + SECOND_DATABASE);
    }
  }

  private static void exec(String url, String... statements) throws SQLException {
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    }
  }
}
