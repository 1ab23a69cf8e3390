package dev.relay.admin;

import dev.relay.FlowLimits;
import java.time.Duration;
import java.time.Instant;

/**
 * One kind's policy as the workers registered it in the {@code kind} table (the last registration
 * wins), with its flow limits from the {@code limiter} table. This is the policy the CLI and the
 * console apply (a redrive's horizon check, for instance); a kind no worker registered is judged by
 * {@link dev.relay.KindPolicy#DEFAULT}. Read by {@link Admin#kinds()}.
 *
 * @param kind the kind
 * @param backoffBase the first retry's backoff ceiling (it doubles per attempt, full jitter)
 * @param backoffCap the largest backoff ceiling
 * @param maxAttempts attempts allowed (also capped by a work item's own {@code maxAttempts})
 * @param maxElapsed the retry window from the first attempt
 * @param maxRunTime how long one attempt may run (the {@code handler_timeout} column)
 * @param dedupHorizon how long the receiver remembers a work ID ({@link Duration#ZERO}: it does not
 *     deduplicate); a redrive past it needs an override
 * @param unknownOutcome what an attempt whose effect is unknown gets: {@code retry}, {@code park}
 *     or {@code reconcile}
 * @param limits global concurrency and rate limits ({@link FlowLimits#NONE}: none registered)
 * @param registeredBy the worker that registered it last
 * @param registeredAt when (the database clock)
 */
public record RegisteredKind(
    String kind,
    Duration backoffBase,
    Duration backoffCap,
    int maxAttempts,
    Duration maxElapsed,
    Duration maxRunTime,
    Duration dedupHorizon,
    String unknownOutcome,
    FlowLimits limits,
    String registeredBy,
    Instant registeredAt) {}
