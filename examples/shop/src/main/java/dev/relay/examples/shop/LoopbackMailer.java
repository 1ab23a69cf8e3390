package dev.relay.examples.shop;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.relay.receiver.Fence;
import dev.relay.receiver.FenceResult;
import dev.relay.receiver.Inbox;
import dev.relay.receiver.http.Delivery;
import dev.relay.receiver.http.HttpReceiver;
import dev.relay.receiver.http.HttpReply;
import dev.relay.receiver.http.RelayHeaders;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * A loopback email service for the demo and the tests: an HTTP server on 127.0.0.1 that "sends" an
 * email for each delivery by recording it in its table {@code <schema>.sent_email}, addressed to
 * the customer's <i>current</i> address, read from the shop at delivery time.
 *
 * <p>With deduplication (the default) it is built with {@link HttpReceiver}: one email per {@code
 * Idempotency-Key}, the stored reply returned on a repeat (for the configured horizon), 422 for a
 * changed body under a used key, and 409 with {@code Retry-After} while a same-key delivery is
 * still in progress. Without deduplication every delivery sends another email: that is how an
 * ordinary mail API behaves, and why a repeat after a lost reply shows up as a second email.
 *
 * <p>Endpoints: {@code POST /mail} (the email) and {@code POST /fenced} (a fenced resource: the
 * {@code Relay-Fencing-Resource} and {@code Relay-Fencing-Token} headers are checked with a {@link
 * Fence}; a lower token than the highest seen gets 412 and changes nothing). Faults for tests:
 * {@link #dropNextReply()} sends the email and then closes the connection without a reply; {@link
 * #holdNextEmail()} keeps the next email's transaction open until released. Not a mail server: it
 * sends nothing anywhere. Close it after use.
 */
public final class LoopbackMailer implements AutoCloseable {
  private static final Pattern CUSTOMER = Pattern.compile("\"customer_id\"\\s*:\\s*(\\d+)");

  private final DataSource ds;
  private final Shop shop;
  private final String name;
  private final String table;
  private final boolean deduplicate;
  private final HttpReceiver receiver;
  private final Fence fence;
  private final HttpServer server;
  private final ExecutorService executor;
  private final AtomicInteger dropReplies = new AtomicInteger();
  private final AtomicReference<CountDownLatch[]> hold = new AtomicReference<>();
  private final AtomicInteger deliveries = new AtomicInteger();

  private LoopbackMailer(Builder b) throws IOException, SQLException {
    this.ds = b.ds;
    this.shop = b.shop;
    this.name = b.name;
    this.table = b.shop.schema() + ".sent_email";
    this.deduplicate = b.deduplicate;
    this.receiver =
        HttpReceiver.builder(ds)
            .schema(b.relaySchema)
            .consumer(b.name)
            .retryAfter(Duration.ofSeconds(1))
            .build();
    this.fence = Fence.forSchema(b.relaySchema);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE IF NOT EXISTS "
              + table
              + " (email_id bigserial PRIMARY KEY, mailer text NOT NULL, message_id text NOT NULL,"
              + " recipient text NOT NULL, body jsonb NOT NULL,"
              + " sent_at timestamptz NOT NULL DEFAULT clock_timestamp());"
              + "CREATE TABLE IF NOT EXISTS "
              + b.shop.schema()
              + ".fenced_write (resource text NOT NULL, token bigint NOT NULL,"
              + " message_id text NOT NULL, written_at timestamptz NOT NULL DEFAULT"
              + " clock_timestamp())");
      if (deduplicate) {
        c.setAutoCommit(true);
        Inbox.builder().schema(b.relaySchema).build().setHorizon(c, b.name, b.horizon);
      }
    }
    this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    this.executor = Executors.newFixedThreadPool(8);
    server.setExecutor(executor);
    server.createContext("/mail", this::mail);
    server.createContext("/fenced", this::fenced);
    server.start();
  }

  /**
   * A builder.
   *
   * @param ds the mail service's database (here the shop's, for the customer lookup)
   * @param shop the shop whose customer records hold the addresses
   * @param relaySchema the schema with Relay's inbox and fence tables
   * @return the builder
   */
  public static Builder builder(DataSource ds, Shop shop, String relaySchema) {
    return new Builder(ds, shop, relaySchema);
  }

  /** Configures a {@link LoopbackMailer}. */
  public static final class Builder {
    private final DataSource ds;
    private final Shop shop;
    private final String relaySchema;
    private String name = "mailer";
    private boolean deduplicate = true;
    private Duration horizon = Duration.ofDays(7);

    private Builder(DataSource ds, Shop shop, String relaySchema) {
      this.ds = ds;
      this.shop = shop;
      this.relaySchema = relaySchema;
    }

    /** The mailer's name: its inbox consumer, and the {@code mailer} column of its emails. */
    public Builder name(String name) {
      this.name = name;
      return this;
    }

    /** Whether repeats of one {@code Idempotency-Key} are absorbed (default true). */
    public Builder deduplicate(boolean deduplicate) {
      this.deduplicate = deduplicate;
      return this;
    }

    /** How long delivered keys and their replies are retained (default 7 days). */
    public Builder horizon(Duration horizon) {
      this.horizon = horizon;
      return this;
    }

    /** Creates the table if needed and starts the server on a free loopback port. */
    public LoopbackMailer start() throws IOException, SQLException {
      return new LoopbackMailer(this);
    }
  }

  /** The email endpoint, {@code http://127.0.0.1:<port>/mail}. */
  public URI mailUri() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/mail");
  }

  /** The fenced-resource endpoint, {@code http://127.0.0.1:<port>/fenced}. */
  public URI fencedUri() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/fenced");
  }

  /** Whether this mailer deduplicates by {@code Idempotency-Key}. */
  public boolean deduplicates() {
    return deduplicate;
  }

  /** How many HTTP requests reached {@code /mail}. */
  public int deliveries() {
    return deliveries.get();
  }

  /**
   * How many emails this mailer sent (committed rows in its table).
   *
   * @throws SQLException if the database fails
   */
  public int emailsSent() throws SQLException {
    return count("SELECT count(*) FROM " + table + " WHERE mailer = ?");
  }

  /**
   * How many emails this mailer sent for one message.
   *
   * @param messageId the {@code Idempotency-Key}
   * @throws SQLException if the database fails
   */
  public int emailsSent(String messageId) throws SQLException {
    return count(
        "SELECT count(*) FROM "
            + table
            + " WHERE mailer = ? AND message_id = '"
            + messageId.replace("'", "''")
            + "'");
  }

  /** The next email is sent (committed), then the connection is closed with no reply at all. */
  public void dropNextReply() {
    dropReplies.incrementAndGet();
  }

  /**
   * The next email's transaction stays open (its inbox row locked) until the returned gate is
   * released; {@code entered} of the pair counts down once it is inside. Use it to show 409.
   *
   * @return {@code [entered, release]}
   */
  public CountDownLatch[] holdNextEmail() {
    CountDownLatch[] gate = {new CountDownLatch(1), new CountDownLatch(1)};
    hold.set(gate);
    return gate;
  }

  private int count(String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  private void mail(HttpExchange exchange) throws IOException {
    deliveries.incrementAndGet();
    String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
    HttpReply reply;
    if (deduplicate) {
      reply =
          receiver.handle(
              exchange.getRequestHeaders()::getFirst,
              body,
              (tx, delivery) -> sendEmail(tx, delivery.messageId(), body));
    } else {
      reply = sendWithoutDeduplication(exchange, body);
    }
    if (reply.status() / 100 == 2 && dropReplies.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      // The email went out (committed); the sender never hears so. The JDK server closes the
      // connection when a handler throws before sending headers.
      throw new IllegalStateException("loopback mailer: dropping the reply on purpose");
    }
    send(exchange, reply);
  }

  private HttpReply sendWithoutDeduplication(HttpExchange exchange, String body) {
    String key = exchange.getRequestHeaders().getFirst(RelayHeaders.IDEMPOTENCY_KEY);
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      try {
        HttpReply reply = sendEmail(c, key == null ? "(none)" : key, body);
        c.commit();
        return reply;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      return HttpReply.text(503, "mail database unavailable: " + e.getMessage())
          .withHeader(RelayHeaders.RETRY_AFTER, "1");
    }
  }

  private HttpReply sendEmail(Connection tx, String messageId, String body) throws SQLException {
    Matcher m = CUSTOMER.matcher(body);
    if (!m.find()) {
      return HttpReply.text(400, "no customer_id in the payload");
    }
    // The address is resolved now, from the customer record: never captured in the payload.
    String recipient = shop.recipientOf(tx, Long.parseLong(m.group(1)));
    long emailId;
    try (PreparedStatement ps =
        tx.prepareStatement(
            "INSERT INTO "
                + table
                + " (mailer, message_id, recipient, body) VALUES (?, ?, ?, ?::jsonb)"
                + " RETURNING email_id")) {
      ps.setString(1, name);
      ps.setString(2, messageId);
      ps.setString(3, recipient);
      ps.setString(4, body);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        emailId = rs.getLong(1);
      }
    }
    CountDownLatch[] gate = hold.getAndSet(null);
    if (gate != null) {
      gate[0].countDown();
      try {
        if (!gate[1].await(60, TimeUnit.SECONDS)) {
          throw new IllegalStateException("held email was never released");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
    return HttpReply.json(
        202, "{\"email_id\":\"" + name + "-" + emailId + "\",\"recipient\":\"" + recipient + "\"}");
  }

  private void fenced(HttpExchange exchange) throws IOException {
    String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
    HttpReply reply;
    try (Connection c = ds.getConnection()) {
      Delivery d = Delivery.read(exchange.getRequestHeaders()::getFirst, body);
      if (d.fencingToken() == null) {
        reply = HttpReply.text(400, "a fenced resource needs Relay-Fencing-Resource and -Token");
      } else {
        c.setAutoCommit(false);
        try {
          // Check and write in one transaction: the fence row stays locked until commit.
          FenceResult f = fence.advance(c, d.fencingResource(), d.fencingToken());
          if (f.refused()) {
            c.rollback();
            reply =
                HttpReply.text(
                    412,
                    "stale fencing token "
                        + f.token()
                        + " for "
                        + f.resource()
                        + ": token "
                        + f.highestToken()
                        + " was already accepted");
          } else {
            try (PreparedStatement ps =
                c.prepareStatement(
                    "INSERT INTO "
                        + shop.schema()
                        + ".fenced_write (resource, token, message_id) VALUES (?, ?, ?)")) {
              ps.setString(1, d.fencingResource());
              ps.setLong(2, d.fencingToken());
              ps.setString(3, d.messageId());
              ps.executeUpdate();
            }
            c.commit();
            reply = HttpReply.json(200, "{\"accepted_token\":" + d.fencingToken() + "}");
          }
        } finally {
          if (!c.getAutoCommit()) {
            c.rollback();
            c.setAutoCommit(true);
          }
        }
      }
    } catch (dev.relay.receiver.InvalidReceiverInputException e) {
      reply = HttpReply.text(400, e.getMessage());
    } catch (SQLException e) {
      reply = HttpReply.text(503, "database unavailable").withHeader(RelayHeaders.RETRY_AFTER, "1");
    }
    send(exchange, reply);
  }

  private static void send(HttpExchange exchange, HttpReply reply) throws IOException {
    byte[] out = reply.body().getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", reply.contentType());
    reply.headers().forEach((k, v) -> exchange.getResponseHeaders().set(k, v));
    exchange.sendResponseHeaders(reply.status(), out.length == 0 ? -1 : out.length);
    try (OutputStream os = exchange.getResponseBody()) {
      os.write(out);
    }
  }

  /** Stops the server at once (exchanges in progress are cut off). */
  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
