package dev.relay.bench;

import java.sql.SQLException;

/**
 * Relay's enqueue against the insert limit, one item per transaction and in bulk transactions of
 * 100 and 1,000: for each size a discarded warm-up round of both, then {@code sizes.runs()} rounds
 * alternating which system goes first, so that a JVM still compiling Relay's enqueue, or a machine
 * whose commits slow down during the part, weighs on both systems alike.
 */
final class EnqueueComparison {
  /** Items per transaction of the three shapes compared. */
  static final int[] PER_TX = {1, 100, 1_000};

  private final RelayBench relay;
  private final LimitBench limit;
  private final Sizes sizes;
  private final Report report;
  private int round;

  EnqueueComparison(RelayBench relay, LimitBench limit, Sizes sizes, Report report) {
    this.relay = relay;
    this.limit = limit;
    this.sizes = sizes;
    this.report = report;
  }

  /** Runs every shape with {@code historyDays} of history kept (see {@link RelayBench}). */
  void run(int historyDays) throws SQLException {
    relay.enqueueSetUp(historyDays);
    for (int perTx : PER_TX) {
      int items = perTx == 1 ? sizes.enqueueSingle() : sizes.enqueueBulk();
      Scenario ours =
          report.add(
              new Scenario(
                  "enqueue",
                  "relay",
                  RelayBench.params("per_tx", perTx, "items", items, "history_days", historyDays),
                  "items/s"));
      Scenario theirs =
          report.add(
              new Scenario(
                  "enqueue",
                  "postgres-limit",
                  RelayBench.params("per_tx", perTx, "items", items),
                  "items/s"));
      relay.enqueueRound(items, perTx, round++); // warm-up, discarded
      limit.insertRound(items, perTx);
      for (int run = 0; run < sizes.runs(); run++) {
        if (run % 2 == 0) {
          ours.add(relay.enqueueRound(items, perTx, round++));
          theirs.add(limit.insertRound(items, perTx));
        } else {
          theirs.add(limit.insertRound(items, perTx));
          ours.add(relay.enqueueRound(items, perTx, round++));
        }
      }
    }
    relay.truncate();
  }
}
