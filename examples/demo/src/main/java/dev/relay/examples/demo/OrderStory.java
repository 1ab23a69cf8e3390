package dev.relay.examples.demo;

import dev.relay.Claim;
import dev.relay.HeldClaim;
import dev.relay.ManualClaims;
import dev.relay.Migrator;
import dev.relay.Outcome;
import dev.relay.admin.Admin;
import dev.relay.admin.QueueHealth;
import dev.relay.examples.shop.LoopbackMailer;
import dev.relay.examples.shop.Purchase;
import dev.relay.examples.shop.Receipt;
import dev.relay.examples.shop.Shop;
import dev.relay.examples.shop.SoldOutException;
import dev.relay.test.EmbeddedServer;
import dev.relay.testkit.ManualWorker;
import dev.relay.transport.http.HttpRoute;
import dev.relay.transport.http.HttpTransport;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Mina's order 103, end to end on a real database: the purchase and its outbox row in one
 * transaction, the retried request, the rollback counterexample, a worker that stops after the
 * receiver accepted, recovery under the next claim generation, the repeat absorbed by the
 * receiver's inbox (and the duplicate a receiver without one sends), the stale completion refused,
 * the fence, and the queue's final state. Each step prints the rows it changed.
 *
 * <p>The two workers are relay-test's {@link ManualWorker}s, driven one step at a time, so the
 * story can stop worker A after its call and before it records anything. Run it with {@code relay
 * demo}, or on its own: {@code main} takes an optional JDBC URL (default: an embedded PostgreSQL
 * 18). It replaces its own schemas {@value #RELAY_SCHEMA} and {@value #SHOP_SCHEMA}.
 */
public final class OrderStory {
  /** The Relay schema the story creates (dropped first if it exists). */
  public static final String RELAY_SCHEMA = "relay_demo";

  /** The shop schema the story creates (dropped first if it exists). */
  public static final String SHOP_SCHEMA = "shop_demo";

  /** The acknowledgement's work ID. */
  public static final String WORK_ID = "order-103-ack";

  /** The name of the mailer without deduplication, in its emails' {@code mailer} column. */
  static final String PLAIN_MAILER = "plain-mailer";

  /** Worker B's lease: long enough to finish while someone reads the steps one at a time. */
  static final Duration LONG_LEASE = Duration.ofMinutes(10);

  private final PrintStream out;
  private final Runnable afterStep;
  private int stepNo;

  private OrderStory(PrintStream out, Runnable afterStep) {
    this.out = out;
    this.afterStep = afterStep;
  }

  /**
   * Tells the story on {@code dataSource}, printing to {@code out} and calling {@code afterStep}
   * after each step (for example to wait for Enter).
   *
   * @throws Exception if the database fails, or a step does not go as the story says
   */
  public static void tell(DataSource dataSource, PrintStream out, Runnable afterStep)
      throws Exception {
    new OrderStory(out, afterStep).run(dataSource);
  }

  /**
   * Runs the story on the database named by the first argument (a JDBC URL), or on an embedded
   * PostgreSQL 18 when there is none.
   *
   * @param args an optional JDBC URL
   * @throws Exception if the database fails or cannot be started
   */
  public static void main(String[] args) throws Exception {
    if (args.length > 0) {
      PGSimpleDataSource ds = new PGSimpleDataSource();
      ds.setURL(args[0]);
      tell(ds, System.out, () -> {});
      return;
    }
    try (EmbeddedServer pg = EmbeddedServer.builder().stopOnExit(true).start()) {
      tell(pg.dataSource(), System.out, () -> {});
    }
  }

  private void run(DataSource ds) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "DROP SCHEMA IF EXISTS "
              + RELAY_SCHEMA
              + " CASCADE;"
              + "DROP SCHEMA IF EXISTS "
              + SHOP_SCHEMA
              + " CASCADE");
    }
    Migrator.Report report = Migrator.migrate(ds, RELAY_SCHEMA);
    Shop shop = Shop.create(SHOP_SCHEMA, RELAY_SCHEMA);
    shop.install(ds);
    intro(report);

    Receipt receipt = shop.purchase(ds, "purchase-103", Purchase.of(1, "P3", 1, "P9", 2));
    step(
        "Purchase: request purchase-103 stores order 103 and enqueues " + WORK_ID,
        "One transaction wrote the order, its lines, the stock decrements, the work, and the\n"
            + "request's stored answer. Receipt: order "
            + receipt.orderId()
            + ", total "
            + receipt.total()
            + ", "
            + receipt.status()
            + ", work "
            + receipt.workId()
            + ".",
        query(ds, "SELECT order_id, customer_id, total, status, payment_ref FROM shop_demo.orders"),
        query(
            ds,
            "SELECT order_id, line_no, sku, unit_price, quantity FROM shop_demo.order_line"
                + " ORDER BY line_no"),
        query(ds, "SELECT sku, quantity AS stock FROM shop_demo.stock ORDER BY sku"),
        query(ds, "SELECT work_id, kind, state, payload FROM relay_demo.work"),
        query(
            ds,
            "SELECT consumer, message_id, result FROM relay_demo.inbox WHERE consumer = 'purchase'"));

    Receipt again = shop.purchase(ds, "purchase-103", Purchase.of(1, "P3", 1, "P9", 2));
    step(
        "Retried request: purchase-103 again (the client never saw the first answer)",
        "The request token finds the stored answer: order "
            + again.orderId()
            + ", total "
            + again.total()
            + ", replayed="
            + again.replayed()
            + ". Nothing new was written.",
        query(
            ds,
            "SELECT (SELECT count(*) FROM shop_demo.orders) AS orders,"
                + " (SELECT count(*) FROM relay_demo.work) AS work_rows,"
                + " (SELECT string_agg(sku || '=' || quantity, ' ' ORDER BY sku)"
                + " FROM shop_demo.stock) AS stock"));

    String refusal;
    try {
      shop.purchase(ds, "purchase-p7", Purchase.of(1, "P7", 1));
      refusal = "UNEXPECTED: the purchase of P7 succeeded";
    } catch (SoldOutException e) {
      refusal = "Refused: " + e.getMessage() + ".";
    }
    step(
        "Rollback counterexample: purchase-p7 asks for P7, which is sold out",
        refusal
            + "\nThe order, its work and its request record rolled back together: still one order"
            + "\nand one work row; no row mentions purchase-p7.",
        query(
            ds,
            "SELECT (SELECT count(*) FROM shop_demo.orders) AS orders,"
                + " (SELECT count(*) FROM relay_demo.work) AS work_rows,"
                + " (SELECT count(*) FROM relay_demo.inbox WHERE message_id = 'purchase-p7')"
                + " AS p7_requests,"
                + " (SELECT string_agg(sku || '=' || quantity, ' ' ORDER BY sku)"
                + " FROM shop_demo.stock) AS stock"));

    try (LoopbackMailer mailer = LoopbackMailer.builder(ds, shop, RELAY_SCHEMA).start();
        LoopbackMailer plain =
            LoopbackMailer.builder(ds, shop, RELAY_SCHEMA)
                .name(PLAIN_MAILER)
                .deduplicate(false)
                .start()) {
      story(ds, mailer, plain);
    }
  }

  private void story(DataSource ds, LoopbackMailer mailer, LoopbackMailer plain) throws Exception {
    HttpTransport toMailer =
        HttpTransport.builder()
            .route(HttpRoute.of(Shop.ACK_KIND, mailer.mailUri()).withReceiverRefField("email_id"))
            .build();
    HttpTransport toPlain =
        HttpTransport.builder()
            .route(HttpRoute.of(Shop.ACK_KIND, plain.mailUri()).withReceiverRefField("email_id"))
            .build();
    HttpTransport toFenced =
        HttpTransport.builder().route(HttpRoute.of(Shop.ACK_KIND, mailer.fencedUri())).build();
    ManualWorker workerA =
        ManualWorker.builder(ds)
            .schema(RELAY_SCHEMA)
            .workerId("worker-a")
            .handle(Shop.ACK_KIND, toMailer)
            .build();
    ManualWorker workerB =
        ManualWorker.builder(ds)
            .schema(RELAY_SCHEMA)
            .workerId("worker-b")
            .lease(LONG_LEASE)
            .handle(Shop.ACK_KIND, toMailer)
            .build();

    // Start the counter at 6, so that A holds generation 7 and B 8, as in docs/protocol.md's
    // "Two workers, generations 7 and 8".
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.executeUpdate(
          "UPDATE relay_demo.outbox SET claim_generation = 6 WHERE work_id = '" + WORK_ID + "'");
    }
    HeldClaim a = claimOne(workerA);
    // A makes its call and then stops before recording anything: nothing is written.
    Outcome aOutcome = workerA.call(a).outcome();
    step(
        "Worker A claims " + WORK_ID + " (generation " + a.generation() + "); the mailer accepts",
        "(The generation counter was set to 6 first, so that A holds 7 and B 8, as in"
            + "\ndocs/protocol.md.) A's claim committed before any call; its lease is on the"
            + "\ndatabase clock."
            + "\nA POSTed the payload with Idempotency-Key: "
            + WORK_ID
            + " and got: "
            + describe(aOutcome)
            + "\nThen A stops (a pause, a crash) BEFORE recording completion: the row still says"
            + " running.",
        row(ds),
        query(
            ds,
            "SELECT email_id, mailer, message_id, recipient FROM shop_demo.sent_email"
                + " ORDER BY email_id"));

    // Instead of waiting out A's lease, end it now on the database clock (the test kit's step).
    workerA.expireLease(a);
    step(
        "The lease expires",
        "The database clock passed lease_until. A is not known to be dead; the lease only"
            + "\nsays another worker may now take over. A still believes it holds the work."
            + "\n(The demo ended A's lease at once on the database clock instead of waiting it out.)",
        query(
            ds,
            "SELECT work_id, state, claim_generation, claimed_by,"
                + " clock_timestamp() > lease_until AS lease_expired FROM relay_demo.work"));

    HeldClaim b = claimOne(workerB);
    Outcome bOutcome = workerB.call(b).outcome();
    step(
        "Worker B claims the next generation (" + b.generation() + ") and delivers again",
        "Generations: A held "
            + a.generation()
            + ", B now holds "
            + b.generation()
            + " (reclaimed="
            + b.reclaimed()
            + ", previous owner "
            + b.previousOwner()
            + ")."
            + "\nB sends the same work ID and payload. The mailer's inbox recognises the key and"
            + "\nreturns its retained result instead of sending again: "
            + describe(bOutcome)
            + "\nEmails sent by the deduplicating mailer: "
            + mailer.emailsSent()
            + " (one email with deduplication).",
        row(ds),
        query(
            ds,
            "SELECT work_id, generation, worker, ending, outcome FROM relay_demo.attempt"
                + " ORDER BY id"),
        query(
            ds,
            "SELECT consumer, message_id, result FROM relay_demo.inbox WHERE consumer = 'mailer'"));

    // A's request as A sent it while its lease was valid, then B's repeat.
    toPlain.handle(asWhenSent(a));
    toPlain.handle(b);
    step(
        "The same two deliveries to a mailer WITHOUT deduplication",
        "Replayed against a mailer with no inbox, as an ordinary mail API behaves: generation\n"
            + a.generation()
            + "'s delivery and generation "
            + b.generation()
            + "'s repeat are two emails (listed below; the deduplicating"
            + "\nmailer's one email is not among them)."
            + "\nEmails sent without deduplication: "
            + plain.emailsSent()
            + " (two without deduplication). A local 'sent' flag"
            + "\ncould not prevent this: it is the very write A never made.",
        query(
            ds,
            "SELECT email_id, mailer, message_id, recipient FROM shop_demo.sent_email"
                + " WHERE mailer = '"
                + PLAIN_MAILER
                + "' ORDER BY email_id"));

    ManualClaims.Write late = workerA.settle(a, aOutcome);
    step(
        "A wakes up and tries to record its completion (generation " + a.generation() + ")",
        (late.stale()
                ? "Refused as stale: generation "
                    + a.generation()
                    + " no longer owns the row (B holds "
                    + b.generation()
                    + "); zero rows changed."
                : "UNEXPECTED: A's stale completion applied")
            + "\nThe refusal protects the record; it cannot take back A's email (the mailer's"
            + "\ninbox is what made the repeat harmless).",
        row(ds),
        query(
            ds,
            "SELECT work_id, generation, worker, ending FROM relay_demo.attempt"
                + " WHERE ending = 'stale_write' ORDER BY id"));

    ManualClaims.Write done = workerB.settle(b, bOutcome);
    step(
        "B records its completion (generation " + b.generation() + ")",
        (done.applied() ? "Applied" : "UNEXPECTED: refused")
            + ": the row is done, with the mailer's reference as evidence.",
        row(ds));

    Outcome fencedB = toFenced.handle(b);
    // A's request left while A's lease was valid, and was delayed on the way: it arrives now.
    Outcome fencedA = toFenced.handle(asWhenSent(a));
    step(
        "A fenced resource refuses A's delayed lower token",
        "A resource that must not accept stale authority keeps the highest fencing token it has"
            + "\nseen, checked in the same transaction as its write (here resource "
            + WORK_ID
            + ").\nB's request (token "
            + b.generation()
            + "): "
            + describe(fencedB)
            + "\nA's request, sent before its lease ended but delayed on the way (token "
            + a.generation()
            + "): "
            + describe(fencedA)
            + "\nClaim generations order only this job's attempts; a resource shared by several"
            + "\njobs takes tokens from its own counter (FenceTokens).",
        query(ds, "SELECT resource, highest_token FROM relay_demo.fence"),
        query(
            ds,
            "SELECT resource, token, message_id FROM shop_demo.fenced_write ORDER BY written_at"));

    StringBuilder health = new StringBuilder();
    Admin admin = Admin.create(ds, RELAY_SCHEMA);
    // Done and cancelled counts come from the summary the maintenance leader refreshes; the demo
    // runs no maintenance, so it recounts once here.
    admin.refreshSummary();
    for (QueueHealth h : admin.health(Duration.ofHours(1))) {
      // Times (completion percentiles) vary from run to run; the counts do not.
      health
          .append("    queue=")
          .append(h.queue())
          .append("  kind=")
          .append(h.kind())
          .append("  ready=")
          .append(h.ready())
          .append("  running=")
          .append(h.running())
          .append("  done=")
          .append(h.done())
          .append("  failed=")
          .append(h.failed())
          .append("  cancelled=")
          .append(h.cancelled())
          .append("  expired_leases=")
          .append(h.expiredLeases())
          .append("  oldest_eligible_age=")
          .append(h.oldestEligibleAge())
          .append("  completed_last_hour=")
          .append(h.completedInWindow())
          .append('\n');
    }
    step(
        "Final queue health",
        "From the admin API (Admin.health), then the attempt history and the emails per mailer.",
        health.toString().stripTrailing(),
        query(
            ds,
            "SELECT ending, count(*) AS attempts FROM relay_demo.attempt GROUP BY ending"
                + " ORDER BY ending"),
        query(
            ds,
            "SELECT mailer, count(*) AS emails FROM shop_demo.sent_email GROUP BY mailer"
                + " ORDER BY mailer"));

    out.println("Relay kept order 103 and its acknowledgement together, recovered the work after");
    out.println("A stopped, and refused A's stale write. It never claims the email went out");
    out.println("exactly once: the mailer's inbox made the repeat harmless (one email), and the");
    out.println("mailer without one sent two. See docs/guide.md.");
  }

  private static HeldClaim claimOne(ManualWorker worker) {
    Optional<HeldClaim> claimed = worker.claimNext(Shop.ACK_KIND);
    if (claimed.isEmpty()) {
      throw new IllegalStateException(worker.workerId() + " found nothing to claim");
    }
    return claimed.get();
  }

  /**
   * The claim as it looked when its worker sent a request that is only now arriving: the lease was
   * still valid then. Used to replay a delayed request; the database is not asked.
   */
  private static Claim asWhenSent(HeldClaim claim) {
    return new SentEarlier(claim, Duration.ofSeconds(10));
  }

  private static String describe(Outcome o) {
    if (o instanceof Outcome.Done) {
      Outcome.Done d = (Outcome.Done) o;
      return d.receiverRef() == null
          ? "accepted"
          : "done (receiver reference " + d.receiverRef() + ")";
    }
    if (o instanceof Outcome.Retry) {
      Outcome.Retry r = (Outcome.Retry) o;
      return "retry, effect " + r.effect() + " (" + r.reason() + ")";
    }
    if (o instanceof Outcome.Fail) {
      Outcome.Fail f = (Outcome.Fail) o;
      return "refused: " + f.reason().strip();
    }
    return String.valueOf(o);
  }

  private void intro(Migrator.Report report) {
    out.println("Mina's order 103, end to end on PostgreSQL.");
    out.println(
        "Relay schema "
            + RELAY_SCHEMA
            + " (version "
            + report.currentVersion()
            + "), shop schema "
            + SHOP_SCHEMA
            + ": customer 1 is Mina;");
    out.println("stock P3 (blue mug, 20.00) 11, P7 (sold out) 0, P9 (green tea, 4.50) 6.");
    out.println();
  }

  private static String row(DataSource ds) throws SQLException {
    return query(
        ds,
        "SELECT work_id, state, claim_generation, claimed_by, attempts, outcome, receiver_ref,"
            + " lease_until IS NOT NULL AS leased, completed_at IS NOT NULL AS completed"
            + " FROM relay_demo.work WHERE work_id = '"
            + WORK_ID
            + "'");
  }

  private static String query(DataSource ds, String sql) throws SQLException {
    StringBuilder b = new StringBuilder();
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      int n = rs.getMetaData().getColumnCount();
      boolean any = false;
      while (rs.next()) {
        any = true;
        b.append("    ");
        for (int i = 1; i <= n; i++) {
          if (i > 1) {
            b.append("  ");
          }
          b.append(rs.getMetaData().getColumnLabel(i)).append('=').append(rs.getString(i));
        }
        b.append('\n');
      }
      if (!any) {
        b.append("    (no rows)\n");
      }
    }
    return b.toString().stripTrailing();
  }

  private void step(String title, String narration, String... rows) {
    stepNo++;
    out.println("== " + stepNo + ". " + title);
    out.println(narration);
    for (String r : rows) {
      out.println(r);
    }
    out.println();
    afterStep.run();
  }
}
