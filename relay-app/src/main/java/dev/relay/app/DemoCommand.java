package dev.relay.app;

import dev.relay.test.JdbcUrls;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Mina's order 103, end to end on a real database: the purchase and its outbox row in one
 * transaction, the retried request, the rollback counterexample, a worker that stops after the
 * receiver accepted, recovery under the next claim generation, the repeat absorbed by the
 * receiver's inbox (and the duplicate a receiver without one sends), the stale completion refused,
 * the fence, and the queue's final state. Each step prints the rows it changed.
 */
@Command(
    name = "demo",
    header = "Runs Mina's order 103 end to end, narrating every row it changes.",
    mixinStandardHelpOptions = true,
    description = {
      "Mina's order 103 end to end: purchase + outbox row in one transaction, a retried request, a rolled-back purchase, a worker that stops after the receiver accepted, recovery by a second worker, the receiver absorbing the repeat, the stale completion refused, a fence.",
      "",
      "Uses a throwaway embedded PostgreSQL 18 unless --jdbc-url (or env RELAY_JDBC_URL) names a database; the demo then replaces its own schemas relay_demo and shop_demo there.",
      ""
    })
final class DemoCommand implements Callable<Integer> {
  /** The story, in module relay-example-demo (a runtime dependency of this one). */
  static final String STORY_CLASS = "dev.relay.examples.demo.OrderStory";

  @Option(
      names = "--jdbc-url",
      paramLabel = "URL",
      description =
          "JDBC URL of a PostgreSQL 15+ database, like"
              + " jdbc:postgresql://host:5432/db?user=u&password=p. Default: env RELAY_JDBC_URL;"
              + " without either, a throwaway embedded PostgreSQL 18 (an empty URL is a usage"
              + " error).")
  String jdbcUrl;

  @Spec CommandSpec spec;

  @Option(names = "--step", description = "Pause after each step until Enter is pressed.")
  boolean step;

  @Option(
      names = "--keep",
      description = "Leave the database running at the end and print how to connect with psql.")
  boolean keep;

  private final PrintStream out = System.out;
  private final BufferedReader in =
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

  @Override
  public Integer call() throws Exception {
    String url = DbCommand.jdbcUrl(spec.commandLine(), jdbcUrl);
    try (Database db = Database.open(url, DbCommand.urlSource(jdbcUrl), System.err)) {
      run(db.dataSource());
      if (keep) {
        keepRunning(db);
      }
      return 0;
    } catch (SQLException e) {
      System.err.println(
          "relay demo: database unavailable: " + Messages.oneLine(JdbcUrls.describe(e, url)));
      return 3;
    }
  }

  /**
   * Tells the story, which lives in the demo example ({@value #STORY_CLASS}): relay-app depends on
   * that example at runtime only, so the command's code compiles against no example type.
   */
  private void run(DataSource ds) throws Exception {
    Runnable afterStep = step ? this::waitForEnter : () -> {};
    Method tell;
    try {
      tell =
          Class.forName(STORY_CLASS)
              .getMethod("tell", DataSource.class, PrintStream.class, Runnable.class);
    } catch (ClassNotFoundException | NoSuchMethodException e) {
      throw new IllegalStateException(
          "the demo's story ("
              + STORY_CLASS
              + ".tell) is not on the class path; it ships in relay-example-demo",
          e);
    }
    try {
      tell.invoke(null, ds, out, afterStep);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof Exception ex) {
        throw ex;
      }
      throw e;
    }
  }

  private void waitForEnter() {
    out.print("(Enter for the next step) ");
    out.flush();
    try {
      in.readLine();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void keepRunning(Database db) throws IOException {
    Matcher m =
        Pattern.compile("jdbc:postgresql://([^:/?]+)(?::(\\d+))?/([^?]*)(?:\\?.*user=([^&]+))?")
            .matcher(db.url());
    if (m.find()) {
      out.println("The database is still running. Connect with:");
      out.println(
          "    psql -h "
              + m.group(1)
              + " -p "
              + (m.group(2) == null ? "5432" : m.group(2))
              + " -U "
              + (m.group(4) == null ? "postgres" : m.group(4))
              + " -d "
              + m.group(3));
    } else {
      out.println("The database is still running at " + Messages.maskPasswords(db.url()));
    }
    out.println("    then e.g.: SELECT * FROM relay_demo.work; SELECT * FROM shop_demo.orders;");
    if (db.embedded()) {
      out.println("Press Enter (or Ctrl-C) to stop it.");
    } else {
      out.println("Press Enter (or Ctrl-C) to exit.");
    }
    out.flush();
    in.readLine();
  }
}
