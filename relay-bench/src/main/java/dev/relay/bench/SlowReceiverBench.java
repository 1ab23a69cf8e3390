package dev.relay.bench;

import com.sun.net.httpserver.HttpServer;
import dev.relay.transport.http.HttpRoute;
import dev.relay.transport.http.HttpTransport;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A slow receiver: an HTTP endpoint on 127.0.0.1 that answers every delivery 200 ms after it
 * arrived (without holding a thread meanwhile), so an outbox mostly waits on the network. Relay
 * delivers a backlog to it through {@link HttpTransport} with {@link #CONCURRENCY} handler slots,
 * against the same receiver called directly with the same HTTP client settings and as many calls in
 * flight. On Java 21 or later both sides use virtual threads (Relay's handlers, and one caller per
 * slot); on Java 17 the transport runs as an {@link dev.relay.AsyncHandler} ({@code sendAsync}, no
 * thread per call), and the direct calls are {@code sendAsync} too, at most {@link #CONCURRENCY} in
 * flight. Target: at least 4,000 deliveries a second from one process.
 */
final class SlowReceiverBench {
  static final long ANSWER_MILLIS = 200;
  static final int CONCURRENCY = 1000;
  static final int MAX_DELIVERIES = 20_000;

  private final RelayBench relay;
  private final Sizes sizes;
  private final Report report;

  SlowReceiverBench(RelayBench relay, Sizes sizes, Report report) {
    this.relay = relay;
    this.sizes = sizes;
    this.report = report;
  }

  static boolean virtualThreads() {
    return Runtime.version().feature() >= 21;
  }

  void run() throws Exception {
    boolean virtual = virtualThreads();
    int n = Math.min(sizes.jobs(), MAX_DELIVERIES);
    Map<String, Object> p =
        RelayBench.params(
            "deliveries",
            n,
            "answer_ms",
            ANSWER_MILLIS,
            "concurrency",
            CONCURRENCY,
            "threads",
            virtual ? "virtual" : "async",
            "java",
            Runtime.version().feature());
    Scenario viaRelay = report.add(new Scenario("slow-receiver", "relay", p, "deliveries/s"));
    Scenario direct = report.add(new Scenario("slow-receiver", "direct-http", p, "deliveries/s"));
    Scenario ratio = report.add(new Scenario("slow-receiver-vs-direct", "relay", p, "ratio"));
    // The JDK server keeps 200 idle keep-alive connections by default and closes the rest, which a
    // client holding 1,000 sees as an answer-less EOF on its next request (read at class loading).
    System.setProperty("sun.net.httpserver.maxIdleConnections", Integer.toString(4 * CONCURRENCY));
    System.setProperty("sun.net.httpserver.idleInterval", "120");
    ScheduledExecutorService timer = Executors.newScheduledThreadPool(2);
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 4096);
    server.setExecutor(Executors.newFixedThreadPool(4));
    server.createContext(
        "/deliver",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          timer.schedule(
              () -> {
                try {
                  exchange.sendResponseHeaders(204, -1);
                } catch (IOException e) {
                  // the caller went away; nothing to answer
                } finally {
                  exchange.close();
                }
              },
              ANSWER_MILLIS,
              TimeUnit.MILLISECONDS);
        });
    server.start();
    URI uri = URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/deliver");
    try {
      for (int run = 0; run < sizes.runs(); run++) {
        double d = virtual ? directRun(uri, n) : directRunAsync(uri, n);
        direct.add(d);
        relay.truncate();
        relay.vacuum();
        double r =
            relay
                .burnDownRun(
                    1,
                    n,
                    false,
                    HttpTransport.builder().route(HttpRoute.of(RelayBench.KIND, uri)).build(),
                    b -> b.concurrency(CONCURRENCY).virtualThreads(virtual),
                    () -> {})
                .jobsPerSecond();
        viaRelay.add(r);
        ratio.add(r / d);
      }
    } finally {
      server.stop(0);
      ((ExecutorService) server.getExecutor()).shutdownNow();
      timer.shutdownNow();
      relay.truncate();
    }
  }

  private static HttpClient client() {
    return HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .followRedirects(HttpClient.Redirect.NEVER)
        .build();
  }

  private static HttpRequest request(URI uri, int i) {
    return HttpRequest.newBuilder(uri)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"n\":" + i + "}"))
        .build();
  }

  /** {@code n} deliveries with {@code sendAsync}, at most {@link #CONCURRENCY} in flight. */
  private static double directRunAsync(URI uri, int n) throws Exception {
    HttpClient client = client();
    Semaphore inFlight = new Semaphore(CONCURRENCY);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    long t0 = System.nanoTime();
    for (int i = 0; i < n && failure.get() == null; i++) {
      inFlight.acquire();
      client
          .sendAsync(request(uri, i), HttpResponse.BodyHandlers.ofString())
          .whenComplete(
              (r, e) -> {
                if (e != null) {
                  failure.compareAndSet(null, e);
                } else if (r.statusCode() / 100 != 2) {
                  failure.compareAndSet(null, new IOException("status " + r.statusCode()));
                }
                inFlight.release();
              });
    }
    if (!inFlight.tryAcquire(CONCURRENCY, 10, TimeUnit.MINUTES)) {
      throw new IllegalStateException("direct deliveries did not finish");
    }
    if (failure.get() != null) {
      throw new IOException("a direct delivery failed", failure.get());
    }
    return n / RelayBench.seconds(t0);
  }

  /**
   * {@code n} deliveries by {@link #CONCURRENCY} virtual-thread callers, each awaiting its answer.
   */
  private static double directRun(URI uri, int n) throws Exception {
    HttpClient client = client();
    AtomicInteger next = new AtomicInteger();
    AtomicReference<Exception> failure = new AtomicReference<>();
    ExecutorService callers =
        (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
    long t0 = System.nanoTime();
    for (int c = 0; c < CONCURRENCY; c++) {
      callers.execute(
          () -> {
            int i;
            while ((i = next.getAndIncrement()) < n && failure.get() == null) {
              try {
                HttpResponse<String> r =
                    client.send(request(uri, i), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() / 100 != 2) {
                  throw new IOException("status " + r.statusCode());
                }
              } catch (Exception e) {
                failure.compareAndSet(null, e);
              }
            }
          });
    }
    callers.shutdown();
    if (!callers.awaitTermination(10, TimeUnit.MINUTES)) {
      throw new IllegalStateException("direct deliveries did not finish");
    }
    if (failure.get() != null) {
      throw failure.get();
    }
    return n / RelayBench.seconds(t0);
  }
}
