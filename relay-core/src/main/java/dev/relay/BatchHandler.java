package dev.relay;

import java.util.List;

/**
 * A {@link Handler} that can run several claims of its kind in one call, so that a transport can
 * put a whole batch in flight and wait once (a broker publish with confirms, a bulk API).
 *
 * <pre>{@code
 * BatchHandler publish = new BatchHandler() {
 *   public List<Outcome> handleAll(List<? extends Claim> claims) {
 *     List<Receipt> receipts = broker.sendAll(claims);          // all in flight, then wait once
 *     return receipts.stream().map(r -> r.ok() ? Outcome.done(r.id()) : Outcome.retry(r.error(),
 *         Outcome.Effect.UNKNOWN)).toList();
 *   }
 * };
 * Relay.builder(dataSource).handle("order_received", publish).build();
 * }</pre>
 *
 * <p>How the runtime uses it:
 *
 * <ul>
 *   <li><b>Batching.</b> When the next buffered claim is of a kind whose handler is a {@code
 *       BatchHandler}, the dispatcher also takes the other claims of that kind that are already in
 *       its buffer, in claim order, up to {@link #maxBatchSize()}, and hands them to one {@link
 *       #handleAll} call on one handler thread. It never waits for more claims to arrive: a lone
 *       claim is a batch of one.
 *   <li><b>Concurrency.</b> A batch takes <em>one</em> handler slot ({@code Relay.Builder
 *       .concurrency}), however many claims it holds: with {@code concurrency} 8 and batches of
 *       100, up to 800 claims can be in flight in one process. That is the point of a batch
 *       handler; size {@code maxBatchSize} for what the receiver takes at once. Flow limits ({@link
 *       FlowLimits}) are unaffected: they are enforced by the claim statement in the database, so a
 *       limited kind never has more live claims than its limit, batched or not. To keep batches
 *       full, the claimer counts {@code concurrency × maxBatchSize} claims (the largest batch size
 *       of the worker's kinds) as able to run at once and buffers for that, still bounded by {@code
 *       bufferSize} and by what can start within the lease: a worker that mixes batch and single
 *       kinds may hold more single claims in its buffer than it would otherwise.
 *   <li><b>Per claim, every guard stays.</b> Each claim is checked against the start margin of its
 *       own lease before the batch starts (one that cannot start is released unrun, the others
 *       still go), keeps its own lease renewal, its own {@link Claim#shouldStop()} (a cancel
 *       request or a lost lease names one claim, and only that claim's {@code onStop} actions run),
 *       its own listener events ({@code started}, {@code finished}, ...; {@code finished} carries
 *       the batch call's duration) and its own generation-fenced outcome write: a stale claim in a
 *       batch has only its own write refused.
 *   <li><b>Run time.</b> All claims of a batch share a kind, so a {@link KindPolicy#maxRunTime()},
 *       and start together: when any of them passes it, the batch's thread is interrupted (as for a
 *       single claim) and those claims are no longer renewed. Bound waits by the smallest {@link
 *       Claim#runTimeRemaining()} of the batch (a deadline can make one claim's shorter).
 *   <li><b>Failures.</b> If {@code handleAll} throws, or returns {@code null} or a list whose size
 *       is not the number of claims, the effect of <em>every</em> claim of the batch is unknown:
 *       each goes to its kind's {@link UnknownOutcomePolicy}, as a thrown single handler would. A
 *       {@code null} element is that one claim's unknown outcome. Prefer returning a precise
 *       outcome per claim ({@link Outcome#fail} for the one bad item) to throwing.
 *   <li><b>Reclaimed claims.</b> A claim taken over after another worker's lease expired is first
 *       put through its kind's unknown-outcome policy ({@code park} or {@code reconcile}) on its
 *       own; only the claims that are to run reach {@code handleAll}.
 *   <li><b>Shutdown.</b> A batch is one running handler: {@code close()} waits for it within the
 *       shutdown grace, then interrupts it and leaves each of its claims to its lease.
 * </ul>
 *
 * <p>{@link #handle(Claim)} (used when something calls the handler with one claim, for example the
 * {@link ManualClaims} test driver) runs a batch of one.
 */
public interface BatchHandler extends Handler {
  /** The default {@link #maxBatchSize()}: 100, the default claim batch size. */
  int DEFAULT_MAX_BATCH_SIZE = 100;

  /** The largest {@link #maxBatchSize()} a {@link Relay} accepts. */
  int MAX_BATCH_SIZE_LIMIT = 1000;

  /**
   * Runs one attempt of each claim.
   *
   * @param claims one or more claims of one kind, in claim order; never empty
   * @return one outcome per claim, in the order of {@code claims}
   * @throws Exception any failure: every claim's effect is then unknown
   */
  List<Outcome> handleAll(List<? extends Claim> claims) throws Exception;

  /**
   * The most claims passed to one {@link #handleAll} call: 1 to {@value #MAX_BATCH_SIZE_LIMIT},
   * checked by {@link Relay.Builder#build()}. Default {@value #DEFAULT_MAX_BATCH_SIZE}.
   */
  default int maxBatchSize() {
    return DEFAULT_MAX_BATCH_SIZE;
  }

  /** Runs a batch of one; a missing or wrong-sized answer is {@code null} (effect unknown). */
  @Override
  default Outcome handle(Claim claim) throws Exception {
    List<Outcome> out = handleAll(List.of(claim));
    return out == null || out.size() != 1 ? null : out.get(0);
  }
}
