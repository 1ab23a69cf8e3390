package dev.relay.transport.http;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * A loopback server answering with a scripted status, headers and body; records request headers.
 */
final class ScriptedServer implements AutoCloseable {
  private final HttpServer server;
  private final ExecutorService executor = Executors.newCachedThreadPool();
  final Map<String, String> lastHeaders = new ConcurrentHashMap<>();
  volatile int status = 200;
  volatile String body = "";
  volatile Map<String, String> headers = Map.of();

  /** When set, the handler waits for it before answering (to force a request timeout). */
  final CountDownLatch release = new CountDownLatch(1);

  volatile boolean hold;

  ScriptedServer() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.setExecutor(executor);
    server.createContext(
        "/",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          lastHeaders.clear();
          exchange
              .getRequestHeaders()
              .forEach((k, v) -> lastHeaders.put(k.toLowerCase(), v.get(0)));
          if (hold) {
            try {
              release.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
          byte[] out = body.getBytes(StandardCharsets.UTF_8);
          headers.forEach((k, v) -> exchange.getResponseHeaders().set(k, v));
          exchange.sendResponseHeaders(status, out.length == 0 ? -1 : out.length);
          try (OutputStream os = exchange.getResponseBody()) {
            os.write(out);
          }
        });
    server.start();
  }

  ScriptedServer answer(int status, String body, Map<String, String> headers) {
    this.status = status;
    this.body = body;
    this.headers = headers;
    return this;
  }

  URI uri() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/deliver");
  }

  @Override
  public void close() {
    release.countDown();
    server.stop(0);
    executor.shutdownNow();
  }
}
