package dev.relay.serve;

import dev.relay.test.EmbeddedServer;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A running {@code relay serve}: the application context and, without a database URL, the embedded
 * PostgreSQL it runs on. Closing stops the context first (workers finish within the grace), then
 * the database.
 */
final class Serving implements AutoCloseable {
  private final ConfigurableApplicationContext context;
  private final EmbeddedServer embedded;
  private boolean closed;

  Serving(ConfigurableApplicationContext context, EmbeddedServer embedded) {
    this.context = context;
    this.embedded = embedded;
  }

  ConfigurableApplicationContext context() {
    return context;
  }

  /** The port the server listens on. */
  int port() {
    return Integer.parseInt(context.getEnvironment().getProperty("local.server.port"));
  }

  /** Closes once: a signal handler and the shutdown hook may both ask. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    context.close();
    if (embedded != null) {
      try {
        embedded.close();
      } catch (Exception e) {
        throw new IllegalStateException("cannot stop the embedded PostgreSQL", e);
      }
    }
  }
}
