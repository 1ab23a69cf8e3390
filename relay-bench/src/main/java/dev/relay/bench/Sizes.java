package dev.relay.bench;

import java.util.List;

/**
 * The sizes of one run.
 *
 * @param runs runs per scenario (the median is reported)
 * @param jobs burn-down backlog
 * @param workers handler threads per Relay instance (and per peer scheduler)
 * @param batch rows per claim (Relay) and per transaction (the limit)
 * @param enqueueSingle items enqueued one per transaction
 * @param enqueueBulk items enqueued in bulk transactions
 * @param rates steady-load producer rates, jobs/s
 * @param steadySeconds duration of each steady-load run
 * @param retained done rows kept in the table for the growth scenario
 * @param memoryBacklog backlog drained by the memory scenario
 * @param memoryRuns runs of the memory scenario
 */
record Sizes(
    int runs,
    int jobs,
    int workers,
    int batch,
    int enqueueSingle,
    int enqueueBulk,
    List<Integer> rates,
    int steadySeconds,
    int retained,
    int memoryBacklog,
    int memoryRuns) {}
