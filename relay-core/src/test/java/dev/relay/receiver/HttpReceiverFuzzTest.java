package dev.relay.receiver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.relay.RelayTracing;
import dev.relay.receiver.http.Delivery;
import dev.relay.receiver.http.HttpReceiver;
import dev.relay.receiver.http.HttpReply;
import dev.relay.receiver.http.RelayHeaders;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Fuzzes what the HTTP receiver reads from a request: the headers of {@link RelayHeaders} (work ID,
 * fencing resource and token, ordering key, sequences), the W3C trace headers handed to the tracing
 * hook, and the body. Seeded random header sets, each header absent or one of a palette of valid,
 * borderline and hostile values (signs, spaces, 19- and 20-digit numbers, control characters,
 * non-ASCII, 200 and 201 characters), and bodies mutated from JSON. {@link Delivery#read} must
 * return a delivery or refuse with {@link InvalidReceiverInputException} naming the header; {@link
 * HttpReceiver#handle} on a real database must answer 200 (the effect's reply), 400, 409, 412 or
 * 422, never 500 or 503, never throw, and never take long (a hang fails the run, naming the input).
 * {@code -Drelay.fuzz.seed=N -Drelay.fuzz.inputs=N} runs another stretch.
 */
@RelayDatabaseTest
class HttpReceiverFuzzTest {
  private static final long SEED = Long.getLong("relay.fuzz.seed", 20261204L);
  private static final int READS = Integer.getInteger("relay.fuzz.inputs", 30_000);
  private static final int DELIVERIES = Integer.getInteger("relay.fuzz.inputs", 600);

  /** Generous: a parse takes microseconds; only a hang (or a runaway) comes near it. */
  private static final long BOUND_SECONDS = 30;

  private static final ExecutorService RUNNER = Executors.newSingleThreadExecutor();

  private static final List<String> HEADERS =
      List.of(
          RelayHeaders.IDEMPOTENCY_KEY,
          RelayHeaders.FENCING_RESOURCE,
          RelayHeaders.FENCING_TOKEN,
          RelayHeaders.ORDERING_KEY,
          RelayHeaders.SEQUENCE,
          RelayHeaders.PREVIOUS_SEQUENCE,
          "traceparent",
          "tracestate");

  private static final String[] VALUES = {
    "",
    " ",
    "\t",
    "0",
    "00",
    "7",
    "-1",
    "+1",
    " 42 ",
    "1e3",
    "0x10",
    "9223372036854775807",
    "9223372036854775808",
    "99999999999999999999",
    "１２", // full-width digits: Character.isDigit says yes, a decimal header says no
    "order-103-ack",
    "a:b/c@d+e=f#g.h_i-j",
    "a b",
    "a\u0000b",
    "a\nb",
    "é",
    "\ud83d\ude00",
    "\ud800",
    "'; DROP TABLE x; --",
    "null",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
    "ff-" + "0".repeat(32) + "-" + "0".repeat(16) + "-00",
    "00-",
    "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
  };

  @AfterAll
  static void stop() {
    RUNNER.shutdownNow();
  }

  @Test
  void deliveryReadEitherReadsOrRefusesNamingTheHeader() throws Exception {
    SplittableRandom random = new SplittableRandom(SEED);
    int read = 0;
    for (int i = 0; i < READS; i++) {
      Map<String, String> headers = headers(random);
      String body = body(random);
      Delivery d;
      try {
        d = bounded(headers, () -> Delivery.read(lookup(headers)::get, body));
      } catch (InvalidReceiverInputException e) {
        assertThat(e.field()).as("%s", headers).isIn(HEADERS);
        continue;
      }
      read++;
      assertThat(d.messageId()).as("%s", headers).isNotBlank().hasSizeLessThanOrEqualTo(200);
      assertThat(d.fencingToken() == null).isEqualTo(d.fencingResource() == null);
      for (Long n : new Long[] {d.fencingToken(), d.sequence(), d.previousSequence()}) {
        assertThat(n == null || n >= 0).as("%s", headers).isTrue();
      }
    }
    // Not only refusals: a good share of the header sets are deliveries.
    assertThat(read).as("read among %d (seed %d)", READS, SEED).isGreaterThan(READS / 40);
  }

  @Test
  void theReceiverAnswersEveryRequestWithAStatusNeverAnErrorOrAHang(TestDatabase db)
      throws Exception {
    List<Map<String, String>> carriers = new ArrayList<>();
    RelayTracing tracing =
        new RelayTracing() {
          @Override
          public Scope enterDelivery(Map<String, String> carrier, String workId, String receiver) {
            carriers.add(Map.copyOf(carrier));
            return Scope.NONE;
          }
        };
    HttpReceiver receiver =
        HttpReceiver.builder(db.dataSource())
            .schema(db.schema())
            .consumer("fuzz")
            .tracing(tracing)
            .build();
    SplittableRandom random = new SplittableRandom(SEED + 1);
    Map<Integer, Integer> statuses = new TreeMap<>();
    for (int i = 0; i < DELIVERIES; i++) {
      Map<String, String> headers = headers(random);
      // A small set of keys, so repeats (replays, changed bodies, stale tokens) happen.
      if (random.nextInt(3) > 0) {
        headers.put(RelayHeaders.IDEMPOTENCY_KEY, "key-" + random.nextInt(40));
      }
      String body = body(random);
      HttpReply reply =
          bounded(
              headers,
              () ->
                  receiver.handle(
                      lookup(headers)::get, body, (tx, d) -> HttpReply.json(200, "{\"ok\":1}")));
      assertThat(reply.status())
          .as("headers %s, body %s: %s", headers, body, reply.body())
          .isIn(200, 400, 409, 412, 422);
      statuses.merge(reply.status(), 1, Integer::sum);
    }
    assertThat(statuses).as("seed %d", SEED + 1).containsKeys(200, 400);
    // Only the trace headers reach the tracing hook.
    assertThat(carriers)
        .allSatisfy(c -> assertThat(Set.of("traceparent", "tracestate")).containsAll(c.keySet()));
  }

  /** Runs {@code call} within the bound; a hang fails naming the input. */
  private static <T> T bounded(Map<String, String> input, java.util.concurrent.Callable<T> call)
      throws Exception {
    Future<T> f = RUNNER.submit(call);
    try {
      return f.get(BOUND_SECONDS, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      return fail("no answer within %d s for %s (seed %d)", BOUND_SECONDS, input, SEED);
    } catch (java.util.concurrent.ExecutionException e) {
      if (e.getCause() instanceof Exception x) {
        throw x;
      }
      throw new AssertionError("an Error for " + input, e.getCause());
    }
  }

  private static Map<String, String> lookup(Map<String, String> headers) {
    Map<String, String> m = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    m.putAll(headers);
    return m;
  }

  private static Map<String, String> headers(SplittableRandom r) {
    Map<String, String> h = new TreeMap<>();
    for (String name : HEADERS) {
      int dice = r.nextInt(10);
      boolean usual =
          name.equals(RelayHeaders.IDEMPOTENCY_KEY)
              || (name.equals(RelayHeaders.FENCING_TOKEN)
                      || name.equals(RelayHeaders.FENCING_RESOURCE))
                  && r.nextBoolean();
      if (dice < (usual ? 8 : 4)) {
        h.put(name, value(r, name));
      }
    }
    return h;
  }

  private static String value(SplittableRandom r, String name) {
    switch (r.nextInt(4)) {
      case 0:
        return VALUES[r.nextInt(VALUES.length)];
      case 1:
        // a well-formed value of its kind
        return name.endsWith("Token") || name.endsWith("Sequence")
            ? Long.toString(r.nextLong(0, Long.MAX_VALUE) >>> r.nextInt(63))
            : "w-" + r.nextInt(1000);
      case 2:
        return "x".repeat(195 + r.nextInt(10));
      default:
        StringBuilder s = new StringBuilder();
        int n = 1 + r.nextInt(12);
        for (int i = 0; i < n; i++) {
          String piece = VALUES[r.nextInt(VALUES.length)];
          s.append(piece.isEmpty() ? "" : piece.substring(0, 1 + r.nextInt(piece.length())));
        }
        return s.toString();
    }
  }

  private static String body(SplittableRandom r) {
    String[] bodies = {"{}", "{\"a\":1}", "[1,2]", "\"x\"", "{\"a\":", "", "null", "{\"n\":29.00}"};
    String b = bodies[r.nextInt(bodies.length)];
    if (r.nextInt(4) == 0 && !b.isEmpty()) {
      StringBuilder s = new StringBuilder(b);
      String palette = "{}[]\":,\u0000\ud800 x";
      s.insert(r.nextInt(s.length() + 1), palette.charAt(r.nextInt(palette.length())));
      return s.toString();
    }
    return b;
  }
}
