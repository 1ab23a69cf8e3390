package dev.relay;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;

/**
 * A {@link Handler} that starts an attempt and returns at once, with a stage that completes with
 * its {@link Outcome} later: a call to a slow receiver waits on the network, not on one of the
 * worker's threads.
 *
 * <pre>{@code
 * AsyncHandler post = claim -> http.sendAsync(request(claim), BodyHandlers.discarding())
 *     .thenApply(r -> r.statusCode() < 300 ? Outcome.done()
 *         : Outcome.retry("status " + r.statusCode(), Outcome.Effect.UNKNOWN));
 * Relay.builder(dataSource).concurrency(1000).handle("webhook", post).build();
 * }</pre>
 *
 * <p>How the runtime uses it:
 *
 * <ul>
 *   <li><b>Concurrency.</b> {@code Relay.Builder.concurrency} counts attempts in flight: a slot is
 *       taken before {@link #handleAsync} is called and given back when its stage has completed and
 *       its outcome was handed to be recorded. No thread is held meanwhile, so {@code
 *       concurrency(1000)} with a 200 ms receiver keeps 1,000 calls in flight on a few threads, on
 *       Java 17. When every handler of a worker is asynchronous, the worker's own handler pool has
 *       at most twice as many threads as the machine has processors (never more than {@code
 *       concurrency}); they call {@code handleAsync} and take the outcomes.
 *   <li><b>{@code handleAsync} must return quickly.</b> It runs on a handler thread; block there
 *       and the other attempts wait. Start the call and return its stage.
 *   <li><b>Leases and stops.</b> A claim in flight is renewed as long as its stage has not
 *       completed, exactly like a running handler. The stage is cancelled ({@link
 *       java.util.concurrent.CompletableFuture#cancel}) when the claim's lease is lost, when it
 *       passes its kind's {@link KindPolicy#maxRunTime()}, and when {@code close()} ends the
 *       shutdown grace, where a synchronous handler's thread would be interrupted (and for a lost
 *       lease, where it would only be told). A cancel request from an operator is passed on as for
 *       any handler ({@link Claim#shouldStop()}, {@link Claim#onStop}); the handler decides.
 *   <li><b>Outcomes.</b> A stage that completes with an outcome is recorded as that outcome; one
 *       that completes exceptionally (also when cancelled), completes with {@code null}, or a
 *       {@code handleAsync} that throws or returns {@code null}, means "effect unknown", as a
 *       thrown synchronous handler: the kind's {@link UnknownOutcomePolicy} decides, and a stage
 *       cancelled at the max run time counts as a timeout.
 *   <li><b>Everything else</b> is as for any handler: flow limits are decided in the claim, each
 *       outcome's write is fenced by the claim's generation, the listener hears {@code started}
 *       when {@code handleAsync} is called and {@code finished} when its stage completes.
 * </ul>
 *
 * <p>{@link #handle(Claim)} (used when something calls the handler directly, for example the {@link
 * ManualClaims} test driver) waits for the stage.
 */
@FunctionalInterface
public interface AsyncHandler extends Handler {
  /**
   * Starts one attempt.
   *
   * @param claim this attempt's view of the work and its authority
   * @return the attempt's outcome, when it is known; {@code null} is treated like a thrown
   *     exception (effect unknown)
   * @throws Exception any failure to start: treated as "effect unknown"
   */
  CompletionStage<Outcome> handleAsync(Claim claim) throws Exception;

  /**
   * Runs {@link #handleAsync} and waits for its stage. Interrupting the waiting thread cancels the
   * stage.
   */
  @Override
  default Outcome handle(Claim claim) throws Exception {
    CompletionStage<Outcome> stage = handleAsync(claim);
    if (stage == null) {
      return null;
    }
    CompletableFuture<Outcome> future = stage.toCompletableFuture();
    try {
      return future.get();
    } catch (InterruptedException e) {
      future.cancel(true);
      throw e;
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof Exception ex) {
        throw ex;
      }
      throw e;
    }
  }
}
