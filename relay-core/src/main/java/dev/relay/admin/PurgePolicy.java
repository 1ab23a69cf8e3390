package dev.relay.admin;

import java.time.Duration;

/**
 * How long finished work and its evidence are kept.
 *
 * <p>{@code done} and {@code cancelled} work is purged once it ended more than {@code
 * workRetention} ago <b>and</b> more than its kind's deduplication horizon ago (from the {@code
 * kind} table; kinds that no worker registered are held for {@link
 * dev.relay.KindPolicy#DEFAULT_DEDUP_HORIZON}, 24 h). {@code failed} work is never purged: it waits
 * for an operator. Each purged item leaves a tombstone, kept for {@code identityHorizon}, so a late
 * producer retry is still recognised. Attempt history, redrive and cancel audit rows and {@code
 * supersedes} links go after {@code historyRetention}, but only once their work is purged or ended
 * {@code done} or {@code cancelled}: the evidence of failed or unfinished work stays. The purge
 * audit and a bulk purge's per-item audit ({@link BulkAction#PURGE}) go after {@code
 * historyRetention} too.
 *
 * <p>Work that finished in the history table (schema version 25 and later: where workers move the
 * work they complete or cancel) goes a whole UTC day at a time: a day is retired once it ended more
 * than the longest of {@code workRetention}, every registered kind's deduplication horizon and the
 * default horizon ago (one day holds work of every kind), leaving a tombstone per item as above.
 * Each day is one short transaction and counts as one batch against {@code maxBatches}.
 *
 * <pre>{@code
 * PurgePolicy p = PurgePolicy.DEFAULT.withWorkRetention(Duration.ofDays(3));
 * }</pre>
 *
 * @param workRetention how long done and cancelled work stays after it ended (at least 1 minute)
 * @param historyRetention how long attempt history and audit rows stay (at least 1 minute)
 * @param identityHorizon how long a tombstone stays after its work was purged (at least 1 minute;
 *     never shorter, in effect, than the longest {@code each} catch-up window of a schedule in the
 *     schema, see docs/scheduling.md)
 * @param batchSize rows per batch, each batch its own short transaction (1-10,000)
 * @param maxBatches batches per table and run (1-100,000), and history days per run; the rest waits
 *     for the next run
 */
public record PurgePolicy(
    Duration workRetention,
    Duration historyRetention,
    Duration identityHorizon,
    int batchSize,
    int maxBatches) {
  /** The shortest retention or horizon a policy takes: 1 minute. */
  public static final Duration MIN_RETENTION = Duration.ofMinutes(1);

  /** The longest retention or horizon a policy takes: 36,500 days. */
  public static final Duration MAX_RETENTION = Duration.ofDays(36_500);

  /** The most rows per batch: 10,000. */
  public static final int MAX_BATCH_SIZE = 10_000;

  /** The most batches per table and run: 100,000. */
  public static final int MAX_BATCHES = 100_000;

  /** Default work retention: 7 days. */
  public static final Duration DEFAULT_WORK_RETENTION = Duration.ofDays(7);

  /** Default history and audit retention: 30 days. */
  public static final Duration DEFAULT_HISTORY_RETENTION = Duration.ofDays(30);

  /** Default identity horizon (tombstone retention): 90 days. */
  public static final Duration DEFAULT_IDENTITY_HORIZON = Duration.ofDays(90);

  /** Default rows per batch: 1,000. */
  public static final int DEFAULT_BATCH_SIZE = 1_000;

  /** Default batches per table and run: 100. */
  public static final int DEFAULT_MAX_BATCHES = 100;

  /** The defaults. */
  public static final PurgePolicy DEFAULT =
      new PurgePolicy(
          DEFAULT_WORK_RETENTION,
          DEFAULT_HISTORY_RETENTION,
          DEFAULT_IDENTITY_HORIZON,
          DEFAULT_BATCH_SIZE,
          DEFAULT_MAX_BATCHES);

  /** A copy with {@code retention} for done and cancelled work. */
  public PurgePolicy withWorkRetention(Duration retention) {
    return new PurgePolicy(retention, historyRetention, identityHorizon, batchSize, maxBatches);
  }

  /** A copy with {@code retention} for attempt history and audit rows. */
  public PurgePolicy withHistoryRetention(Duration retention) {
    return new PurgePolicy(workRetention, retention, identityHorizon, batchSize, maxBatches);
  }

  /** A copy keeping tombstones for {@code horizon}. */
  public PurgePolicy withIdentityHorizon(Duration horizon) {
    return new PurgePolicy(workRetention, historyRetention, horizon, batchSize, maxBatches);
  }

  /** A copy with {@code size} rows per batch and at most {@code max} batches per table and run. */
  public PurgePolicy withBatches(int size, int max) {
    return new PurgePolicy(workRetention, historyRetention, identityHorizon, size, max);
  }
}
