package dev.relay.transport.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.relay.Outcome;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Fuzzes what the HTTP transport reads from a receiver's response: the status, {@code Retry-After}
 * (delay-seconds, HTTP dates, garbage), the receiver-reference header and the JSON field it is
 * looked up in, in bodies from empty to a megabyte. Every response must become an outcome (never an
 * exception or an {@link Error} in the worker), a delay is never negative, and nothing takes long.
 * The seed is fixed; {@code -Drelay.fuzz.seed=N -Drelay.fuzz.inputs=N} runs another stretch.
 */
class ResponseFuzzTest {
  private static final long SEED = Long.getLong("relay.fuzz.seed", 20261204L);
  private static final int INPUTS = Integer.getInteger("relay.fuzz.inputs", 20_000);
  private static final long BOUND_SECONDS = 30;
  private static final ExecutorService RUNNER = Executors.newSingleThreadExecutor();

  private static final HttpRoute ROUTE =
      HttpRoute.of("mail", URI.create("http://127.0.0.1:1/mail"))
          .withReceiverRefHeader("X-Mail-Id")
          .withReceiverRefField("email_id");

  private static final String[] RETRY_AFTER = {
    "0",
    "1",
    "120",
    "999999999",
    "9999999999",
    "-1",
    "1.5",
    " 7 ",
    "",
    "Wed, 21 Oct 2015 07:28:00 GMT",
    "Fri, 31 Dec 9999 23:59:59 GMT",
    "Mon, 01 Jan 0001 00:00:00 GMT",
    "Thu, 30 Feb 2026 10:00:00 GMT",
    "Sun, 06 Nov 1994 08:49:37 +9999",
    "Sunday, 06-Nov-94 08:49:37 GMT",
    "Sun Nov  6 08:49:37 1994",
    "soon",
    "١٢٣" // Arabic-Indic digits
  };

  private static final String[] BODY_PIECES = {
    "{",
    "}",
    "[",
    "]",
    "\"email_id\"",
    "\"email_id\":",
    ":",
    " ",
    "\"",
    "\\",
    "\\\"",
    "\\\\",
    "\"m-1\"",
    "42",
    "-0.5",
    "null",
    "é",
    "\ud83d\ude00",
    "\u0000",
    ",",
    "\"email_id\": \""
  };

  @AfterAll
  static void stop() {
    RUNNER.shutdownNow();
  }

  @Test
  void everyResponseBecomesAnOutcomeWithoutErrorOrHang() throws Exception {
    SplittableRandom r = new SplittableRandom(SEED);
    for (int i = 0; i < INPUTS; i++) {
      int status = status(r);
      Map<String, List<String>> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
      if (r.nextBoolean()) {
        headers.put("Retry-After", List.of(retryAfter(r)));
      }
      if (r.nextInt(4) == 0) {
        headers.put("X-Mail-Id", List.of(r.nextBoolean() ? "" : "mail-" + r.nextInt(100)));
      }
      String body = body(r);
      Outcome o = bounded(status, headers, body);
      assertThat(o).as("HTTP %d %s", status, headers).isNotNull();
      Duration delay =
          o instanceof Outcome.Retry retry
              ? retry.delay()
              : o instanceof Outcome.Snooze snooze ? snooze.delay() : null;
      assertThat(delay == null || !delay.isNegative()).as("delay %s", delay).isTrue();
    }
  }

  @Test
  void aLongStringFieldInTheBodyIsRead() throws Exception {
    // Found by this fuzz: a regular expression with an alternation under a star recursed once
    // per character of the field's value, and a long value threw StackOverflowError in the worker.
    String value = "x\\\"".repeat(40_000);
    Outcome o =
        bounded(200, Map.of(), "{\"other\": 1, \"email_id\" : \"" + value + "\", \"n\": 2}");
    assertThat(((Outcome.Done) o).receiverRef()).isEqualTo(value);
    Outcome n = bounded(200, Map.of(), "{\"email_id\":-12.50}");
    assertThat(((Outcome.Done) n).receiverRef()).isEqualTo("-12.50");
  }

  private static Outcome bounded(int status, Map<String, List<String>> headers, String body)
      throws Exception {
    Callable<Outcome> call = () -> HttpTransport.outcomeOf(ROUTE, response(status, headers, body));
    Future<Outcome> f = RUNNER.submit(call);
    String input =
        "HTTP "
            + status
            + " "
            + headers
            + " body of "
            + body.length()
            + " chars (seed "
            + SEED
            + ")";
    try {
      return f.get(BOUND_SECONDS, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      return fail("no outcome within %d s for %s", BOUND_SECONDS, input);
    } catch (ExecutionException e) {
      throw new AssertionError("failed on " + input + ": " + e.getCause(), e.getCause());
    }
  }

  private static int status(SplittableRandom r) {
    int[] common = {200, 201, 202, 204, 301, 400, 404, 409, 412, 422, 429, 500, 502, 503, 504};
    return r.nextInt(4) == 0 ? 100 + r.nextInt(500) : common[r.nextInt(common.length)];
  }

  private static String retryAfter(SplittableRandom r) {
    String v = RETRY_AFTER[r.nextInt(RETRY_AFTER.length)];
    if (r.nextInt(5) == 0 && !v.isEmpty()) {
      int cut = r.nextInt(v.length());
      return v.substring(0, cut) + BODY_PIECES[r.nextInt(BODY_PIECES.length)] + v.substring(cut);
    }
    return v;
  }

  private static String body(SplittableRandom r) {
    StringBuilder b = new StringBuilder();
    switch (r.nextInt(40)) {
      case 0, 1, 2, 3 -> {}
      case 4, 5, 6, 7, 8, 9 ->
          b.append("{\"email_id\": \"m-").append(r.nextInt(1000)).append("\"}");
      case 10 -> {
        // a long value, escapes included
        String unit = r.nextBoolean() ? "a" : "\\\"";
        b.append("{\"email_id\": \"").append(unit.repeat(r.nextInt(1, 60_000))).append('"');
        if (r.nextBoolean()) {
          b.append('}');
        }
      }
      case 11 -> b.append("x".repeat(r.nextInt(1, 1 << 20)));
      default -> {
        int n = r.nextInt(1, 30);
        for (int i = 0; i < n; i++) {
          b.append(BODY_PIECES[r.nextInt(BODY_PIECES.length)]);
        }
      }
    }
    return b.toString();
  }

  private static HttpResponse<String> response(
      int status, Map<String, List<String>> headers, String body) {
    HttpHeaders h = HttpHeaders.of(headers, (k, v) -> true);
    return new HttpResponse<>() {
      @Override
      public int statusCode() {
        return status;
      }

      @Override
      public HttpRequest request() {
        return HttpRequest.newBuilder(ROUTE.url()).build();
      }

      @Override
      public Optional<HttpResponse<String>> previousResponse() {
        return Optional.empty();
      }

      @Override
      public HttpHeaders headers() {
        return h;
      }

      @Override
      public String body() {
        return body;
      }

      @Override
      public Optional<SSLSession> sslSession() {
        return Optional.empty();
      }

      @Override
      public URI uri() {
        return ROUTE.url();
      }

      @Override
      public HttpClient.Version version() {
        return HttpClient.Version.HTTP_1_1;
      }
    };
  }
}
