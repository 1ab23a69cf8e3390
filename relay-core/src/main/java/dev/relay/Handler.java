package dev.relay;

/**
 * Runs one attempt of one kind of work and decides its {@link Outcome}.
 *
 * <pre>{@code
 * Handler ack = claim -> {
 *   MailReceipt r = mailer.send(claim.workId(), claim.payload());   // work ID as idempotency key
 *   return Outcome.done(r.messageId(), null, Milestone.QUEUED);
 * };
 * }</pre>
 *
 * <p>Contract:
 *
 * <ul>
 *   <li>The same work may run more than once (a retry, or a takeover after a lease expired while a
 *       call was in flight). Pass {@link Claim#workId()} to the receiver as its deduplication key.
 *   <li>Throwing, or running past the kind's {@link KindPolicy#maxRunTime()}, means "effect
 *       unknown": the kind's {@link UnknownOutcomePolicy} decides what happens next. Return {@link
 *       Outcome#retry} or {@link Outcome#fail} when you know better.
 *   <li>Watch {@link Claim#shouldStop()} (or register {@link Claim#onStop}) in long work: it turns
 *       true when an operator asks to cancel, when the lease was lost, at the max run time, or when
 *       the worker shuts down and its grace period ended (at those two the thread is then also
 *       interrupted). Bound calls by {@link Claim#runTimeRemaining()}.
 *   <li>Disable or bound the retries of the client library you call: Relay retries the whole
 *       attempt, and retry layers multiply.
 * </ul>
 *
 * <p>One call runs one claim and takes one of the worker's {@code concurrency} handler slots. A
 * receiver that takes many items at once (a broker publish with confirms, a bulk API) is better
 * served by a {@link BatchHandler}: one call, and one slot, for all the buffered claims of its
 * kind.
 */
@FunctionalInterface
public interface Handler {
  /**
   * Runs one attempt.
   *
   * @param claim this attempt's view of the work and its authority
   * @return the decision; {@code null} is treated like a thrown exception (effect unknown)
   * @throws Exception any failure: treated as "effect unknown"
   */
  Outcome handle(Claim claim) throws Exception;
}
