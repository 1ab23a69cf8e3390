package dev.relay.internal.runtime;

import dev.relay.AsyncHandler;
import dev.relay.BatchHandler;
import dev.relay.Handler;
import dev.relay.Outcome;
import dev.relay.Reconciliation;
import dev.relay.RelayTracing;
import dev.relay.UnknownOutcomePolicy;
import dev.relay.internal.store.Settlement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one attempt of a claim on the calling (handler) thread and hands its outcome to the
 * completions: the kind's unknown-outcome policy for a reclaimed claim, the handler (bound to the
 * thread so that a timeout or {@code close()} can interrupt it), the {@link Decider}'s write for
 * what it did, and the run time for claim sizing. The lease keeper enforces {@code maxRunTime} and
 * tells the handler of a lost lease ({@code onStop}); this class reads the result ({@link
 * LiveClaim#timedOut}) and never waits.
 */
final class AttemptRunner {
  private static final Logger log = LoggerFactory.getLogger(AttemptRunner.class);

  private final Map<String, Handler> handlers;
  private final Events events;
  private final Completions completions;
  private final Consumer<LiveClaim> ended;
  private final RunTimeAverage runTime;
  private final TimeSource time;
  private final RelayTracing tracing;

  /**
   * @param ended called when the claim needs nothing more (no outcome to record, or the completer
   *     refused it because relay closed)
   */
  AttemptRunner(
      Map<String, Handler> handlers,
      Events events,
      Completions completions,
      Consumer<LiveClaim> ended,
      RunTimeAverage runTime,
      TimeSource time,
      RelayTracing tracing) {
    this.tracing = tracing;
    this.handlers = Map.copyOf(handlers);
    this.events = events;
    this.completions = completions;
    this.ended = ended;
    this.runTime = runTime;
    this.time = time;
  }

  /** Runs one attempt (the claim is RUNNING) and hands its outcome to the completions. */
  void run(LiveClaim c) {
    Settlement settlement = null;
    try {
      c.bindThread(Thread.currentThread());
      AttemptMdc.put(c);
      try {
        settlement = attempt(c);
      } finally {
        AttemptMdc.clear();
      }
    } catch (RuntimeException | Error e) {
      log.error("relay failed while running {}; the claim is left to its lease", c, e);
      if (e instanceof VirtualMachineError) {
        throw e;
      }
    } finally {
      c.unbindThread();
      Thread.interrupted(); // a timeout's interrupt must not leak into the thread's next task
      runTime.record(time.nanoTime() - c.startedNanos);
      settle(c, settlement);
    }
  }

  /**
   * Runs one batch of claims of one kind (each RUNNING) through its {@link BatchHandler} on the
   * calling thread, and hands each claim's outcome to the completions, one by one, as {@link #run}
   * does for a single claim. Every claim is bound to this thread, so a timeout or {@code close()}
   * of any of them interrupts the batch. The run time is recorded per claim as the batch's time
   * divided by its size (what the claimer's sizing needs: how fast a slot gets through claims).
   */
  void runAll(List<LiveClaim> claims) {
    if (claims.size() == 1) {
      run(claims.get(0));
      return;
    }
    Settlement[] settlements = new Settlement[claims.size()];
    Thread self = Thread.currentThread();
    try {
      claims.forEach(c -> c.bindThread(self));
      attemptAll(claims, settlements);
    } catch (RuntimeException | Error e) {
      log.error(
          "relay failed while running a batch of {} claims from {}; they are left to their leases",
          claims.size(),
          claims.get(0),
          e);
      if (e instanceof VirtualMachineError) {
        throw e;
      }
    } finally {
      claims.forEach(LiveClaim::unbindThread);
      Thread.interrupted(); // a timeout's interrupt must not leak into the thread's next task
      long each = (time.nanoTime() - claims.get(0).startedNanos) / claims.size();
      for (int i = 0; i < claims.size(); i++) {
        LiveClaim c = claims.get(i);
        runTime.record(each);
        settle(c, settlements[i]);
      }
    }
  }

  /**
   * Starts one attempt of an {@link AsyncHandler} (the claim is RUNNING) on the calling thread and
   * returns without waiting for it. The stage is bound to the claim, so a timeout, a lost lease or
   * {@code close()} cancels it. When it completes, its outcome is decided and handed to the
   * completions on {@code executor} (on the completing thread if the executor refuses), and then
   * {@code finished} runs: exactly once, whatever happens.
   */
  void start(LiveClaim c, Executor executor, Runnable finished) {
    CompletableFuture<Outcome> future;
    long t0;
    try {
      AttemptMdc.put(c);
      try {
        Settlement before = beforeHandler(c);
        if (before != null) {
          runTime.record(time.nanoTime() - c.startedNanos);
          settle(c, before);
          finished.run();
          return;
        }
        AsyncHandler handler = (AsyncHandler) handlers.get(c.kind());
        events.started(c);
        t0 = time.nanoTime();
        future = call(handler, c);
      } finally {
        AttemptMdc.clear();
      }
    } catch (RuntimeException | Error e) {
      log.error("relay failed while starting {}; the claim is left to its lease", c, e);
      c.unbindThread();
      ended.accept(c);
      finished.run();
      if (e instanceof VirtualMachineError) {
        throw e;
      }
      return;
    }
    c.bindStage(future);
    long began = t0;
    future.whenComplete(
        (outcome, error) -> {
          Runnable complete = () -> complete(c, outcome, error, began, finished);
          try {
            executor.execute(complete);
          } catch (RejectedExecutionException e) {
            complete.run();
          }
        });
  }

  /**
   * Calls {@code handleAsync} with the claim's tracing scope; a throw or a null is a failed stage.
   */
  private CompletableFuture<Outcome> call(AsyncHandler handler, LiveClaim c) {
    RelayTracing.Scope scope = enter(c);
    c.bindThread(Thread.currentThread()); // a timeout while handleAsync blocks interrupts it
    try {
      CompletionStage<Outcome> stage = handler.handleAsync(c);
      if (stage == null) {
        return CompletableFuture.failedFuture(
            new IllegalStateException(
                "the asynchronous handler returned null instead of a CompletionStage"));
      }
      return stage.toCompletableFuture();
    } catch (Exception | LinkageError | AssertionError | StackOverflowError e) {
      return CompletableFuture.failedFuture(e);
    } finally {
      leave(scope);
      c.unbindThread();
      Thread.interrupted();
    }
  }

  /** An asynchronous attempt's stage completed: decide, hand over the outcome, free the slot. */
  private void complete(
      LiveClaim c, Outcome outcome, Throwable failure, long began, Runnable finished) {
    Settlement settlement = null;
    try {
      c.unbindStage();
      AttemptMdc.put(c);
      try {
        Throwable error =
            failure instanceof CompletionException ce && ce.getCause() != null
                ? ce.getCause()
                : failure;
        if (error == null && outcome == null) {
          error = new IllegalStateException("the handler's stage completed with null");
        }
        Outcome o = error == null ? outcome : null;
        events.finished(c, o, error, Duration.ofNanos(time.nanoTime() - began));
        settlement = afterHandler(c, o, error);
      } finally {
        AttemptMdc.clear();
      }
    } catch (RuntimeException | Error e) {
      log.error("relay failed while finishing {}; the claim is left to its lease", c, e);
      if (e instanceof VirtualMachineError) {
        throw e;
      }
    } finally {
      runTime.record(time.nanoTime() - c.startedNanos);
      settle(c, settlement);
      finished.run();
    }
  }

  private void settle(LiveClaim c, Settlement settlement) {
    if (settlement != null
        && c.phase.compareAndSet(LiveClaim.Phase.RUNNING, LiveClaim.Phase.FINISHING)) {
      if (!completions.submit(c, settlement)) {
        log.info(
            "{} finished after relay closed; its outcome is dropped and its lease left to expire",
            c);
        ended.accept(c);
      }
    } else {
      ended.accept(c);
    }
  }

  private void attemptAll(List<LiveClaim> claims, Settlement[] settlements) {
    List<LiveClaim> toRun = new ArrayList<>(claims.size());
    List<Integer> at = new ArrayList<>(claims.size());
    for (int i = 0; i < claims.size(); i++) {
      Settlement s = beforeHandler(claims.get(i));
      if (s != null) {
        settlements[i] = s;
      } else {
        toRun.add(claims.get(i));
        at.add(i);
      }
    }
    if (toRun.isEmpty()) {
      return;
    }
    BatchHandler handler = (BatchHandler) handlers.get(toRun.get(0).kind());
    List<Outcome> outcomes = null;
    Throwable error = null;
    toRun.forEach(events::started);
    long t0 = time.nanoTime();
    List<RelayTracing.Scope> scopes = new ArrayList<>(toRun.size());
    try {
      toRun.forEach(c -> scopes.add(enter(c)));
      outcomes = handler.handleAll(Collections.unmodifiableList(toRun));
      if (outcomes == null) {
        error = new IllegalStateException("the batch handler returned null instead of outcomes");
      } else if (outcomes.size() != toRun.size()) {
        error =
            new IllegalStateException(
                "the batch handler returned "
                    + outcomes.size()
                    + " outcomes for "
                    + toRun.size()
                    + " claims");
      }
    } catch (Exception | LinkageError | AssertionError | StackOverflowError e) {
      error = e;
    } finally {
      for (int i = scopes.size() - 1; i >= 0; i--) {
        leave(scopes.get(i));
      }
      toRun.forEach(LiveClaim::unbindThread);
      Thread.interrupted();
    }
    Duration took = Duration.ofNanos(time.nanoTime() - t0);
    for (int j = 0; j < toRun.size(); j++) {
      LiveClaim c = toRun.get(j);
      Outcome outcome = error == null ? outcomes.get(j) : null;
      Throwable e = error;
      if (e == null && outcome == null) {
        e = new IllegalStateException("the batch handler returned null for this claim");
      }
      events.finished(c, outcome, e, took);
      settlements[at.get(j)] = afterHandler(c, outcome, e);
    }
  }

  private Settlement attempt(LiveClaim c) {
    Settlement before = beforeHandler(c);
    if (before != null) {
      return before;
    }
    Handler handler = handlers.get(c.kind());
    Outcome outcome = null;
    Throwable error = null;
    events.started(c);
    long t0 = time.nanoTime();
    RelayTracing.Scope scope = enter(c);
    try {
      outcome = handler.handle(c);
      if (outcome == null) {
        error = new IllegalStateException("the handler returned null instead of an Outcome");
      }
    } catch (Exception | LinkageError | AssertionError | StackOverflowError e) {
      error = e;
    } finally {
      leave(scope);
      c.unbindThread();
      Thread.interrupted();
    }
    events.finished(c, outcome, error, Duration.ofNanos(time.nanoTime() - t0));
    return afterHandler(c, outcome, error);
  }

  /** The tracing hook's scope for {@code c}; {@link RelayTracing.Scope#NONE} if the hook threw. */
  private RelayTracing.Scope enter(LiveClaim c) {
    if (tracing == RelayTracing.NONE) {
      return RelayTracing.Scope.NONE;
    }
    try {
      RelayTracing.Scope scope = tracing.enterAttempt(c);
      // what the attempt's own calls carry (Claim.callTraceContext): the span just made current
      c.callTrace = tracing.currentContext();
      return scope == null ? RelayTracing.Scope.NONE : scope;
    } catch (RuntimeException e) {
      log.warn("RelayTracing.enterAttempt threw for {}; the handler runs without a scope", c, e);
      return RelayTracing.Scope.NONE;
    }
  }

  private static void leave(RelayTracing.Scope scope) {
    try {
      scope.close();
    } catch (RuntimeException e) {
      log.warn("a RelayTracing scope threw on close; ignored", e);
    }
  }

  /**
   * What a reclaimed claim gets from its kind's unknown-outcome policy before any handler runs, or
   * {@code null} when the handler is to run.
   */
  private Settlement beforeHandler(LiveClaim c) {
    UnknownOutcomePolicy policy = c.policy.unknownOutcome();
    if (c.reclaimed() && policy instanceof UnknownOutcomePolicy.Park) {
      return Decider.park(
          c, "lease_expired", "the previous claim's lease expired while its attempt may have run");
    }
    if (c.reclaimed() && policy instanceof UnknownOutcomePolicy.Reconcile r) {
      Reconciliation answer = reconcile(r, c);
      if (answer.verdict() == Reconciliation.Verdict.ACCEPTED) {
        return Decider.accepted(c, answer.receiverRef());
      }
      if (answer.verdict() == Reconciliation.Verdict.UNKNOWN) {
        return Decider.park(
            c,
            "lease_expired",
            "the previous claim's lease expired while its attempt may have run, and the receiver"
                + " could not tell whether it accepted the work");
      }
    }
    return null;
  }

  /** The settlement of what the handler did: an outcome, or an error (effect unknown). */
  private Settlement afterHandler(LiveClaim c, Outcome outcome, Throwable error) {
    UnknownOutcomePolicy policy = c.policy.unknownOutcome();
    if (error == null) {
      if (Decider.isUnknownEffectRetry(c, outcome)) {
        Reconciliation answer = null;
        if (policy instanceof UnknownOutcomePolicy.Reconcile r && !c.isCancelRequested()) {
          answer = reconcile(r, c);
        }
        return Decider.forUnknownEffectRetry(c, (Outcome.Retry) outcome, answer);
      }
      return Decider.forOutcome(c, outcome);
    }
    if (c.timedOut) {
      log.info("{} timed out: {}", c, Decider.describe(error));
    } else if (c.stoppedForShutdown) {
      log.info("{} was interrupted by the shutdown: {}", c, Decider.describe(error));
    } else {
      log.info("{} threw (effect unknown): {}", c, Decider.describe(error));
      log.debug("{} handler error", c, error);
    }
    Reconciliation answer = null;
    if (policy instanceof UnknownOutcomePolicy.Reconcile r && !c.isCancelRequested()) {
      answer = reconcile(r, c);
    }
    return Decider.forUnknown(c, error, c.timedOut, answer);
  }

  private static Reconciliation reconcile(UnknownOutcomePolicy.Reconcile policy, LiveClaim c) {
    try {
      Reconciliation r = policy.reconciler().check(c);
      return r == null ? Reconciliation.unknown() : r;
    } catch (Exception e) {
      log.warn("the reconciler for {} failed; treating the answer as unknown: {}", c, e.toString());
      return Reconciliation.unknown();
    }
  }
}
