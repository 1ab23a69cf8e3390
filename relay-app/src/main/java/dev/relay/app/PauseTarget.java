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

  /**
   * Checks both names by the rule {@code relay enqueue} applies (core's {@link
   * Outbox#nameProblem}), before the database is opened: a pause of a name no work can have would
   * hold nothing.
   */
  void check(DbCommand command) {
    command.requireName("--queue", queue);
    command.requireName("--kind", kind);
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
