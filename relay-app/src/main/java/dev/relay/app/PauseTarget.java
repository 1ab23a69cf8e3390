package dev.relay.app;

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

  /** The target in words, for the output. */
  String describe() {
    if (queue == null) {
      return "kind " + kind + " (every queue)";
    }
    return kind == null ? "queue " + queue + " (every kind)" : "queue " + queue + ", kind " + kind;
  }
}
