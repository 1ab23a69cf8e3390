package dev.relay.internal.runtime;

import dev.relay.RelayConfig;

/**
 * How much the claimer takes, from the settings and what it measured (handler run time and claim
 * round trip), with no state of its own: so every rule is testable without a database.
 *
 * <p>With batch handlers ({@link dev.relay.BatchHandler}) one slot runs up to a whole batch, so the
 * claims that can run at once are {@code slots × perSlot} (the largest batch size of the worker's
 * kinds), and the run time measured is per claim (a batch's time divided by its size).
 */
final class ClaimSizing {
  /**
   * What the buffer may hold beyond the running claims: about what the slots start in this time. A
   * worker killed ({@code kill -9}) strands its buffer until the leases end; bounded so, it strands
   * at most about a second's work however long its claims take to come back.
   */
  static final long STRAND_WINDOW_NANOS = 1_000_000_000L;

  private final int slots;
  private final int running;
  private final int bufferSize;
  private final int batchSize;
  private final int maxRecording;
  private final long startWindowNanos;

  ClaimSizing(RelayConfig config) {
    this(config, 1);
  }

  /**
   * @param perSlot the most claims one handler slot runs at once: 1, or the largest batch size of
   *     the worker's batch handlers
   */
  ClaimSizing(RelayConfig config, int perSlot) {
    this.slots = config.concurrency();
    this.running = (int) Math.min(Integer.MAX_VALUE / 4, (long) slots * perSlot);
    this.bufferSize = config.bufferSize();
    this.batchSize = config.batchSize();
    this.maxRecording = (Completer.WRITERS + 1) * config.completionBatchSize();
    this.startWindowNanos = config.lease().minus(config.startMargin()).toNanos();
  }

  /**
   * How many claimed, unstarted items are worth holding now: enough to keep the handler slots busy
   * while the next claim is on its way (twice the claims' round trip, at the rate the slots start
   * work), at least as many as can run at once, at most {@code bufferSize} and what the slots start
   * in about a second ({@link #STRAND_WINDOW_NANOS}: what a killed worker strands), and never more
   * than can start within the lease ({@link #startable}). Fast handlers in a backlog get a deep
   * buffer and large claims; slow handlers hold little that other workers could run.
   *
   * @param runNanos the handlers' average run time (0: nothing measured yet)
   * @param claimNanos the claims' average round trip (0: nothing measured yet)
   */
  int wantedBuffer(long runNanos, long claimNanos) {
    int floor = Math.min(running, bufferSize);
    int wanted;
    if (runNanos <= 0 || claimNanos <= 0) {
      wanted = floor; // nothing measured yet
    } else {
      double perRoundTrip = (double) slots * 2 * claimNanos / runNanos;
      double perWindow = (double) slots * STRAND_WINDOW_NANOS / runNanos;
      wanted = (int) Math.max(floor, Math.min(bufferSize, Math.min(perRoundTrip, perWindow)));
    }
    return Math.max(0, Math.min(wanted, startable(runNanos) - running));
  }

  /**
   * Room for new claims. Only claims waiting to start or running hold capacity (handler slots plus
   * the {@linkplain #wantedBuffer wanted buffer}): an outcome handed to the completer frees its
   * place at once, so claiming overlaps the recording of outcomes. Outcomes waiting to be recorded
   * are bounded separately, by one completion batch more than the completer writes at once (one per
   * writer being written, the next accumulating): past that, claiming waits for the completer, so
   * memory stays bounded however slow the database is to record.
   *
   * @param live the live claims (buffered, running, finishing, releasing)
   * @param recording the outcomes handed to the completer and not yet recorded
   */
  int free(int live, int recording, long runNanos, long claimNanos) {
    int held = live - recording; // buffered or running
    return Math.min(
        running + wantedBuffer(runNanos, claimNanos) - held,
        running + bufferSize + maxRecording - live);
  }

  /**
   * How many claims can be held (running or waiting) and still start within their lease: a claim
   * that cannot start before its lease's start margin is released unrun, so claiming it only keeps
   * it from other workers. With {@code c} handler slots and handlers taking {@code d} on average,
   * about {@code c × (lease − start margin) / d} claims start in that time. Unbounded until a
   * handler has returned.
   */
  int startable(long runNanos) {
    if (runNanos <= 0) {
      return Integer.MAX_VALUE;
    }
    long n = slots * (startWindowNanos / runNanos);
    return (int) Math.max(running, Math.min(Integer.MAX_VALUE, n));
  }

  /**
   * How many rows to claim now that a claim is wanted, or 0 to wait for more room. In a backlog
   * with nothing asking for a claim now, it waits until a useful batch fits (half a batch, or half
   * the capacity if smaller) rather than claim one row per freed slot.
   *
   * @param free the room from {@link #free}
   * @param wantedBuffer the buffer from {@link #wantedBuffer}
   * @param backlog whether the last claim came back full
   * @param now whether a poll is due or a notification asked for a claim
   */
  int claimSize(int free, int wantedBuffer, boolean backlog, boolean now) {
    int capacity = running + wantedBuffer;
    int minFree = backlog && !now ? Math.max(1, Math.min(batchSize, capacity) / 2) : 1;
    return free >= minFree ? Math.min(batchSize, free) : 0;
  }
}
