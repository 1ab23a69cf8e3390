package dev.relay.transport.http;

import dev.relay.AsyncHandler;
import dev.relay.Claim;
import dev.relay.InvalidConfigurationException;
import dev.relay.Outcome;
import dev.relay.Outcome.Effect;
import dev.relay.RelayTracing;
import dev.relay.receiver.FenceTokens;
import dev.relay.receiver.http.RelayHeaders;
import java.io.IOException;
import java.net.ConnectException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * A handler ({@link AsyncHandler}) that delivers work over HTTP: each attempt POSTs the payload to
 * its kind's URL and turns the reply into an {@link Outcome}. Build one per process and register it
 * for every kind it routes; it shares one {@link HttpClient} per route.
 *
 * <pre>{@code
 * HttpTransport http = HttpTransport.builder()
 *     .route(HttpRoute.of("order_received", URI.create("http://127.0.0.1:8081/mail"))
 *         .withReceiverRefField("email_id"))
 *     .build();
 * Relay relay = Relay.builder(dataSource).handle("order_received", http).build();
 * }</pre>
 *
 * <p>Every request carries:
 *
 * <ul>
 *   <li>{@code Idempotency-Key}: the work ID, the same on every attempt and redrive;
 *   <li>{@code Relay-Fencing-Resource} and {@code Relay-Fencing-Token}: by default the work ID and
 *       the claim generation (orders this job's own attempts only); or, with {@link
 *       HttpRoute.Fencing#RESOURCE}, the resource's name and a token from its own counter,
 *       allocated for this attempt;
 *   <li>{@code Relay-Ordering-Key}, {@code Relay-Sequence}, {@code Relay-Previous-Sequence} for
 *       keyed work: the claim's key, sequence and previous delivered sequence (the last header is
 *       left out when no earlier item of the key was delivered);
 *   <li>{@value #DEADLINE_HEADER}: the business deadline (ISO-8601), when the work has one;
 *   <li>{@code traceparent} and {@code tracestate} (W3C Trace Context) when the work has a trace:
 *       {@link Claim#callTraceContext()}, the attempt span's context under a configured tracing
 *       hook, else the producer's stored one.
 * </ul>
 *
 * <table>
 *   <caption>Replies and what they become</caption>
 *   <tr><th>Reply</th><th>Outcome</th></tr>
 *   <tr><td>2xx</td><td>done, with the receiver reference (configured header or JSON field), the
 *       body as result and the route's milestone</td></tr>
 *   <tr><td>connection refused or connect timeout (nothing sent)</td><td>retry, not delivered</td></tr>
 *   <tr><td>request timeout, connection lost after sending, 5xx</td><td>retry, effect unknown</td></tr>
 *   <tr><td>409 (the same key is being applied)</td><td>retry later (Retry-After), effect
 *       unknown</td></tr>
 *   <tr><td>429 with a Retry-After (seconds or an HTTP date)</td><td>{@link
 *       Outcome#retryAfter snooze} for that long: no attempt spent, not delivered</td></tr>
 *   <tr><td>429 without a readable Retry-After</td><td>retry (the kind's backoff), not
 *       delivered</td></tr>
 *   <tr><td>503</td><td>retry after Retry-After (the kind's backoff without one), effect unknown:
 *       never a snooze, since Relay's own receiver answers 503 when its commit is in
 *       doubt</td></tr>
 *   <tr><td>400, 422</td><td>failed permanently, not delivered, the body as evidence</td></tr>
 *   <tr><td>412 (stale fencing token)</td><td>failed permanently, not delivered</td></tr>
 *   <tr><td>other 4xx</td><td>failed permanently, not delivered</td></tr>
 *   <tr><td>anything else</td><td>retry, effect unknown</td></tr>
 * </table>
 *
 * <p>Timeouts stay inside the attempt's run time: the request timeout is capped by {@link
 * Claim#runTimeRemaining()} (less a margin), the time left before the kind's max run time or the
 * business deadline, whichever is first. It is not capped by the lease: the lease is renewed while
 * the handler runs, so a slow receiver may take longer than one lease (for the runtime's claims the
 * run time is measured on a monotonic local clock, never this machine's wall clock against the
 * database's). The JDK client does not retry a POST and follows no redirects: Relay's retry is the
 * only one. Passing the max run time interrupts the handler thread, which aborts the call: its
 * effect is then unknown. It never claims the receiver did nothing unless nothing was sent.
 *
 * <p>It is an {@link AsyncHandler}: the runtime sends with {@link HttpClient#sendAsync}, so an
 * attempt waiting on a slow receiver holds one of the worker's {@code concurrency} slots but no
 * thread (raise {@code concurrency} to keep more requests in flight; on Java 17 too). At the max
 * run time, on a lost lease and at the end of the shutdown grace the runtime cancels the exchange
 * instead of interrupting a thread. {@link #handle} (a direct call) sends synchronously.
 */
public final class HttpTransport implements AsyncHandler {
  /** The W3C Trace Context headers sent when the work has a trace. */

  /** The header carrying the business deadline. */
  public static final String DEADLINE_HEADER = "Relay-Deadline";

  /** Most characters of a reply body kept as evidence. */
  public static final int MAX_EVIDENCE_CHARS = 2000;

  /** Time kept free before the run time ends. */
  static final Duration RUN_TIME_MARGIN = Duration.ofMillis(100);

  private static final DateTimeFormatter HTTP_DATE = DateTimeFormatter.RFC_1123_DATE_TIME;

  /**
   * The ordering facts of one claim, for the ordering headers.
   *
   * @param key the ordering key
   * @param sequence the claim's sequence within the key
   * @param previousSequence the key's previous delivered sequence, or {@code null}
   */
  public record Ordering(String key, long sequence, Long previousSequence) {}

  private final Map<String, HttpRoute> routes;
  private final Map<String, HttpClient> clients;
  private final DataSource fenceDataSource;
  private final FenceTokens fenceTokens;
  private final Function<Claim, String> fenceResource;
  private final Function<Claim, Optional<Ordering>> ordering;

  private HttpTransport(Builder b) {
    this.routes = Map.copyOf(b.routes);
    Map<String, HttpClient> cs = new LinkedHashMap<>();
    for (HttpRoute r : b.routes.values()) {
      cs.put(
          r.kind(),
          HttpClient.newBuilder()
              .version(HttpClient.Version.HTTP_1_1)
              .followRedirects(HttpClient.Redirect.NEVER)
              .connectTimeout(r.connectTimeout())
              .build());
    }
    this.clients = Map.copyOf(cs);
    this.fenceDataSource = b.fenceDataSource;
    this.fenceTokens = b.fenceTokens;
    this.fenceResource = b.fenceResource;
    this.ordering = b.ordering;
  }

  /** A builder; add at least one route. */
  public static Builder builder() {
    return new Builder();
  }

  /** Configures an {@link HttpTransport}; validated at {@link #build()}. */
  public static final class Builder {
    private final Map<String, HttpRoute> routes = new LinkedHashMap<>();
    private DataSource fenceDataSource;
    private FenceTokens fenceTokens;
    private Function<Claim, String> fenceResource;
    private Function<Claim, Optional<Ordering>> ordering = HttpTransport::orderingOf;

    private Builder() {}

    /** Adds (or replaces) the route of {@code route.kind()}. */
    public Builder route(HttpRoute route) {
      routes.put(route.kind(), route);
      return this;
    }

    /** Adds every route. */
    public Builder routes(List<HttpRoute> all) {
      all.forEach(this::route);
      return this;
    }

    /**
     * Per-resource fencing tokens for routes with {@link HttpRoute.Fencing#RESOURCE}: for each
     * attempt, a token is allocated from {@code tokens} for the resource {@code resourceOf} names,
     * in a short transaction of its own on {@code ds} (the database holding Relay's tables).
     */
    public Builder fenceTokens(
        DataSource ds, FenceTokens tokens, Function<Claim, String> resourceOf) {
      this.fenceDataSource = ds;
      this.fenceTokens = tokens;
      this.fenceResource = resourceOf;
      return this;
    }

    /**
     * Where the ordering headers come from. By default the claim's own ordering key, sequence and
     * previous delivered sequence; replace it only to map them onto another scheme.
     */
    public Builder ordering(Function<Claim, Optional<Ordering>> source) {
      this.ordering = source;
      return this;
    }

    /** Validates and builds. */
    public HttpTransport build() {
      if (routes.isEmpty()) {
        throw new InvalidConfigurationException("routes", "is empty: add a route per kind");
      }
      boolean needsTokens =
          routes.values().stream().anyMatch(r -> r.fencing() == HttpRoute.Fencing.RESOURCE);
      if (needsTokens
          && (fenceDataSource == null || fenceTokens == null || fenceResource == null)) {
        throw new InvalidConfigurationException(
            "fenceTokens", "a route uses resource fencing; configure fenceTokens(...)");
      }
      if (ordering == null) {
        throw new InvalidConfigurationException("ordering", "is null");
      }
      return new HttpTransport(this);
    }
  }

  /** The kinds this transport routes. */
  public java.util.Set<String> kinds() {
    return routes.keySet();
  }

  @Override
  public Outcome handle(Claim claim) throws Exception {
    Prepared p = prepare(claim);
    if (p.early() != null) {
      return p.early();
    }
    HttpResponse<String> response;
    try {
      response = p.client().send(p.request(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      return outcomeOf(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Outcome.retry("interrupted while the request was in flight", Effect.UNKNOWN);
    }
    return outcomeOf(p.route(), response);
  }

  /**
   * Sends the request with {@link HttpClient#sendAsync} and returns at once: the attempt then holds
   * a handler slot, not a thread, while the receiver answers. The reply becomes an outcome as for
   * {@link #handle}. Cancelling the returned stage (the runtime does at the max run time, on a lost
   * lease and at the end of the shutdown grace) cancels the exchange; its effect is then unknown.
   * With resource fencing, the token is allocated before this method returns.
   */
  @Override
  public CompletableFuture<Outcome> handleAsync(Claim claim) throws Exception {
    Prepared p = prepare(claim);
    if (p.early() != null) {
      return CompletableFuture.completedFuture(p.early());
    }
    CompletableFuture<HttpResponse<String>> sent =
        p.client().sendAsync(p.request(), HttpResponse.BodyHandlers.ofString());
    CompletableFuture<Outcome> outcome =
        sent.handle(
            (response, error) -> {
              if (error == null) {
                return outcomeOf(p.route(), response);
              }
              Throwable cause =
                  error instanceof CompletionException && error.getCause() != null
                      ? error.getCause()
                      : error;
              if (cause instanceof IOException io) {
                return outcomeOf(io);
              }
              return Outcome.retry("the request failed in flight: " + cause, Effect.UNKNOWN);
            });
    outcome.whenComplete(
        (o, e) -> {
          if (outcome.isCancelled()) {
            sent.cancel(true); // a dependent's cancel does not reach the exchange by itself
          }
        });
    return outcome;
  }

  /** A request ready to send, or the outcome decided before sending anything. */
  private record Prepared(HttpRoute route, HttpClient client, HttpRequest request, Outcome early) {}

  private static Prepared early(Outcome o) {
    return new Prepared(null, null, null, o);
  }

  private Prepared prepare(Claim claim) throws SQLException {
    HttpRoute route = routes.get(claim.kind());
    if (route == null) {
      return early(Outcome.fail("no HTTP route for kind " + claim.kind(), Effect.NOT_DELIVERED));
    }
    Duration left = claim.runTimeRemaining().minus(RUN_TIME_MARGIN);
    if (left.toMillis() < 1) {
      return early(
          Outcome.retry(
              "run time or deadline nearly over before sending; not sent", Effect.NOT_DELIVERED));
    }
    HttpRequest.Builder request =
        HttpRequest.newBuilder(route.url())
            .timeout(min(route.requestTimeout(), left))
            .header("Content-Type", "application/json")
            .header(RelayHeaders.IDEMPOTENCY_KEY, claim.workId())
            .POST(HttpRequest.BodyPublishers.ofString(claim.payload(), StandardCharsets.UTF_8));
    switch (route.fencing()) {
      case GENERATION:
        request.header(RelayHeaders.FENCING_RESOURCE, claim.workId());
        request.header(RelayHeaders.FENCING_TOKEN, Long.toString(claim.generation()));
        break;
      case RESOURCE:
        String resource = fenceResource.apply(claim);
        request.header(RelayHeaders.FENCING_RESOURCE, resource);
        request.header(RelayHeaders.FENCING_TOKEN, Long.toString(allocateToken(resource)));
        break;
      default:
        break;
    }
    Optional<Ordering> order = ordering.apply(claim);
    if (order.isPresent()) {
      request.header(RelayHeaders.ORDERING_KEY, order.get().key());
      request.header(RelayHeaders.SEQUENCE, Long.toString(order.get().sequence()));
      if (order.get().previousSequence() != null) {
        request.header(
            RelayHeaders.PREVIOUS_SEQUENCE, Long.toString(order.get().previousSequence()));
      }
    }
    if (claim.deadline() != null) {
      request.header(DEADLINE_HEADER, claim.deadline().toString());
    }
    // W3C Trace Context: the attempt span's (or the producer's stored) trace, which an
    // HttpReceiver with a tracing hook continues
    Map<String, String> trace = claim.callTraceContext();
    RelayTracing.headers(trace::get).forEach(request::header);
    return new Prepared(route, clients.get(route.kind()), request.build(), null);
  }

  /** The outcome of a request that failed with {@code e}: what was sent decides the evidence. */
  private static Outcome outcomeOf(IOException e) {
    if (e instanceof HttpConnectTimeoutException) {
      return Outcome.retry(
          "connect timeout, nothing sent: " + e.getMessage(), Effect.NOT_DELIVERED);
    }
    if (e instanceof HttpTimeoutException) {
      return Outcome.retry("request timeout after sending: effect unknown", Effect.UNKNOWN);
    }
    if (refusedBeforeSending(e)) {
      return Outcome.retry("connection refused, nothing sent: " + e, Effect.NOT_DELIVERED);
    }
    return Outcome.retry("connection lost after sending, effect unknown: " + e, Effect.UNKNOWN);
  }

  private long allocateToken(String resource) throws SQLException {
    try (Connection c = fenceDataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        long token = fenceTokens.next(c, resource);
        c.commit();
        return token;
      } catch (RuntimeException | SQLException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    }
  }

  static Outcome outcomeOf(HttpRoute route, HttpResponse<String> response) {
    int status = response.statusCode();
    String body = response.body() == null ? "" : response.body();
    Optional<String> retryAfterHeader = response.headers().firstValue(RelayHeaders.RETRY_AFTER);
    if (status / 100 == 2) {
      return Outcome.done(
          receiverRef(route, response, body),
          body.isBlank() || body.length() > 65_536 ? null : body,
          route.milestone());
    }
    String evidence = "HTTP " + status + ": " + evidence(body);
    if (status == 409) {
      return retryAfter(Outcome.retry(evidence, Effect.UNKNOWN), retryAfterHeader);
    }
    if (status == 429) {
      // Refused before acting, and told when to come back: the attempt is given back (a snooze,
      // capped by the kind's maxSnoozes). Without a readable Retry-After, an ordinary retry.
      Duration after = retryAfterHeader.map(HttpTransport::parseRetryAfter).orElse(null);
      return after != null
          ? Outcome.retryAfter(after, evidence + " (Retry-After " + retryAfterHeader.get() + ")")
          : Outcome.retry(evidence, Effect.NOT_DELIVERED);
    }
    if (status == 503) {
      // Not a snooze, Retry-After or not: Relay's own receiver answers 503 when its commit is in
      // doubt, so the effect may have happened. A snooze would claim "not delivered" and bypass
      // a parking kind's unknown-outcome policy.
      return retryAfter(Outcome.retry(evidence, Effect.UNKNOWN), retryAfterHeader);
    }
    if (status / 100 == 5) {
      return Outcome.retry(evidence, Effect.UNKNOWN);
    }
    if (status / 100 == 4) {
      // 400 and 422 (invalid, or a changed payload under a used key), 412 (stale fencing token)
      // and the rest: the receiver refused the request and did not act on it.
      return Outcome.fail(evidence, Effect.NOT_DELIVERED);
    }
    return Outcome.retry(evidence, Effect.UNKNOWN);
  }

  private static Outcome retryAfter(Outcome.Retry retry, Optional<String> header) {
    Duration d = header.map(HttpTransport::parseRetryAfter).orElse(null);
    return d == null ? retry : retry.after(d);
  }

  /** A Retry-After value: delay-seconds or an HTTP-date; {@code null} when unreadable. */
  static Duration parseRetryAfter(String value) {
    String v = value.strip();
    if (v.matches("\\d{1,9}")) {
      return Duration.ofSeconds(Long.parseLong(v));
    }
    try {
      Duration d = Duration.between(Instant.now(), ZonedDateTime.parse(v, HTTP_DATE).toInstant());
      return d.isNegative() ? Duration.ZERO : d;
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  private static String receiverRef(HttpRoute route, HttpResponse<String> response, String body) {
    if (route.receiverRefHeader() != null) {
      Optional<String> h = response.headers().firstValue(route.receiverRefHeader());
      if (h.isPresent()) {
        return h.get();
      }
    }
    if (route.receiverRefField() != null) {
      return fieldValue(body, route.receiverRefField());
    }
    return null;
  }

  /**
   * The value of the first {@code "field": value} in {@code body} whose value is a string (its text
   * as written, escapes kept) or a number ({@code -12.50}); null when there is none. A scan, not a
   * regular expression: the expression this replaces had an alternation under a star, which Java's
   * engine matches by recursing once per character, so a receiver's long string value threw {@link
   * StackOverflowError} in the worker (found by {@code ResponseFuzzTest}).
   */
  static String fieldValue(String body, String field) {
    String key = "\"" + field + "\"";
    for (int at = body.indexOf(key); at >= 0; at = body.indexOf(key, at + 1)) {
      int i = space(body, at + key.length());
      if (i >= body.length() || body.charAt(i) != ':') {
        continue;
      }
      i = space(body, i + 1);
      if (i < body.length() && body.charAt(i) == '"') {
        for (int j = i + 1; j < body.length(); j++) {
          char c = body.charAt(j);
          if (c == '"') {
            return body.substring(i + 1, j);
          }
          if (c == '\\') {
            if (j + 1 >= body.length() || lineEnd(body.charAt(j + 1))) {
              break;
            }
            j++;
          }
        }
        continue;
      }
      int j = i < body.length() && body.charAt(i) == '-' ? i + 1 : i;
      int digits = digits(body, j);
      if (digits == j) {
        continue;
      }
      int end = digits;
      if (end < body.length() && body.charAt(end) == '.') {
        int fraction = digits(body, end + 1);
        if (fraction > end + 1) {
          end = fraction;
        }
      }
      return body.substring(i, end);
    }
    return null;
  }

  private static int space(String s, int i) {
    while (i < s.length() && " \t\n\u000b\f\r".indexOf(s.charAt(i)) >= 0) {
      i++;
    }
    return i;
  }

  private static int digits(String s, int i) {
    while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
      i++;
    }
    return i;
  }

  private static boolean lineEnd(char c) {
    return c == '\n' || c == '\r' || c == '\u0085' || c == '\u2028' || c == '\u2029';
  }

  private static String evidence(String body) {
    return body.length() <= MAX_EVIDENCE_CHARS
        ? body
        : body.substring(0, MAX_EVIDENCE_CHARS) + "...(" + body.length() + " chars)";
  }

  /** Whether the connection was refused, so the request never left this process. */
  static boolean refusedBeforeSending(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ConnectException) {
        return true;
      }
    }
    return false;
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  /** The claim's own ordering facts, or none for unkeyed work. */
  static Optional<Ordering> orderingOf(Claim claim) {
    return claim.orderingKey() == null
        ? Optional.empty()
        : Optional.of(
            new Ordering(claim.orderingKey(), claim.sequence(), claim.previousDeliveredSequence()));
  }
}
