package dev.relay.app;

import java.util.ArrayDeque;
import java.util.Deque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Closes what was added, last first; a failure is logged and the rest still closed. */
final class Closer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Closer.class);

  private final Deque<Runnable> actions = new ArrayDeque<>();

  void add(Runnable action) {
    actions.push(action);
  }

  @Override
  public void close() {
    while (!actions.isEmpty()) {
      try {
        actions.pop().run();
      } catch (RuntimeException e) {
        log.warn("while stopping: {}", e.toString());
      }
    }
  }
}
