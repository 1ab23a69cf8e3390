package dev.relay.admin;

/**
 * A (queue, kind) pair that finished work within a chart's window, with its totals: the console
 * lists them so each pair's charts are one click away.
 *
 * @param queue the queue
 * @param kind the kind
 * @param done work that became {@code done} within the window
 * @param failed work that became {@code failed} within the window
 * @param cancelled work that became {@code cancelled} within the window
 */
public record ChartPair(String queue, String kind, long done, long failed, long cancelled) {}
