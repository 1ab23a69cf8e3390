package dev.relay.app;

import dev.relay.Outbox;
import picocli.CommandLine.Option;

/** What {@code relay pause} and {@code relay resume} act on: a queue, a kind, or both. */
final class PauseTarget {
  @Option(
      names = "--queue",
      paramLabel = "Q",
      description = "The queue (without --kind: every kind of it).")
  String queue;

  @Option(
      names = "--kind",
      paramLabel = "K",
      description = "The kind (without --queue: in every queue).")
  String kind;

  /** Whether a queue or a kind was named. */
  boolean any() {
    return queue != null || kind != null;
  }

  /** Checks both names against the admin API's bounds, before the database is opened. */
  void check(DbCommand command) {
    command.requireText("--queue", queue, Outbox.MAX_NAME_LENGTH);
    command.requireText("--kind", kind, Outbox.MAX_NAME_LENGTH);
  }

  /**
   * The target in words, for the output, as {@code relay status} lists the pauses: {@code every
   * queue, kind send_sms}, {@code queue reports, every kind}, {@code queue q, kind k}.
   */
  String describe() {
    return (queue == null ? "every queue" : "queue " + queue)
        + ", "
        + (kind == null ? "every kind" : "kind " + kind);
  }
}
