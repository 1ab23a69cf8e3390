package dev.relay.app;

import dev.relay.InvalidWorkException;
import dev.relay.Outbox;
import dev.relay.Work;
import picocli.CommandLine.Option;

/** What {@code relay pause} and {@code relay resume} act on: a queue, a kind, or both. */
final class PauseTarget {
  /** Checks names only: its schema and payload limit play no part. */
  private static final Outbox NAMES = Outbox.builder().build();

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
   * Checks both names by the rule {@code relay enqueue} applies (core's {@link Outbox#validate}),
   * before the database is opened: a pause of a name no work can have would hold nothing.
   */
  void check(DbCommand command) {
    if (queue != null) {
      name(command, "--queue", Work.of("w", "k", "{}").queue(queue));
    }
    if (kind != null) {
      name(command, "--kind", Work.of("w", kind, "{}"));
    }
  }

  /** Refuses, as a usage error naming {@code option}, the one name that {@code probe} varies. */
  private static void name(DbCommand command, String option, Work probe) {
    try {
      NAMES.validate(probe);
    } catch (InvalidWorkException e) {
      String m = e.getMessage();
      throw command.usage(
          option + m.substring(m.indexOf(": " + e.field() + " ") + 2 + e.field().length()));
    }
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
