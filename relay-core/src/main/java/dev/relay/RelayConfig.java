package dev.relay;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link Relay}'s validated, immutable settings, as built by {@link Relay.Builder#build()}. Every
 * default has been resolved.
 *
 * @param workerId this worker's ID, stored in {@code claimed_by}
 * @param schema the schema holding Relay's tables
 * @param queues the queues this worker claims from
 * @param batchSize the most rows one claim transaction takes
 * @param concurrency the most handlers running at once
 * @param bufferSize the most claimed-but-unstarted items held locally
 * @param lease how long a claim lasts without renewal (database clock)
 * @param renewInterval how often running claims are renewed
 * @param startMargin a buffered claim with less lease left than this is released, not started
 * @param pollInterval the longest wait between claim polls
 * @param pollJitter the fraction (0-1) by which each poll wait is randomly shortened
 * @param notifications whether to wake on {@code LISTEN/NOTIFY}
 * @param shutdownGrace how long {@link Relay#close()} waits for running handlers
 * @param completionBatchSize the most outcomes recorded in one transaction
 * @param completionMaxDelay the longest an outcome waits for its batch to fill
 * @param statementTimeout the {@code statement_timeout} of Relay's own transactions (lease renewals
 *     use at most the renew interval)
 * @param lockTimeout the {@code lock_timeout} of Relay's own transactions (renewals: at most the
 *     renew interval)
 * @param idleInTransactionTimeout the {@code idle_in_transaction_session_timeout} of Relay's own
 *     transactions (renewals: at most the renew interval)
 * @param kinds each kind's resolved policy, in registration order
 */
public record RelayConfig(
    String workerId,
    String schema,
    List<String> queues,
    int batchSize,
    int concurrency,
    int bufferSize,
    Duration lease,
    Duration renewInterval,
    Duration startMargin,
    Duration pollInterval,
    double pollJitter,
    boolean notifications,
    Duration shutdownGrace,
    int completionBatchSize,
    Duration completionMaxDelay,
    Duration statementTimeout,
    Duration lockTimeout,
    Duration idleInTransactionTimeout,
    Map<String, KindPolicy> kinds) {
  /** Copies the collections. */
  public RelayConfig {
    queues = List.copyOf(queues);
    kinds = Collections.unmodifiableMap(new LinkedHashMap<>(kinds));
  }
}
