/**
 * The benchmark behind {@code relay bench}: {@link dev.relay.bench.BenchCommand} is the entry
 * point.
 */
package dev.relay.bench;
