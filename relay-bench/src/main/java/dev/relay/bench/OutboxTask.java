package dev.relay.bench;

/**
 * The no-op call that transaction-outbox records and replays. Public because the library proxies it
 * and looks it up by class name.
 */
public interface OutboxTask {
  /** Runs item {@code n}. */
  void run(int n);
}
