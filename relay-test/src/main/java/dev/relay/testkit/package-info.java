/**
 * Relay's test kit for users: drive work by hand and check what a transaction enqueued.
 *
 * <p>{@link dev.relay.testkit.ManualWorker} claims the next item, runs its handler or stalls it,
 * settles it through the runtime's guarded writes, renews it, and ends its lease on the database
 * clock, one step at a time on the test's thread (like db-scheduler's {@code ManualScheduler} or
 * River's {@code rivertest}). {@link dev.relay.testkit.EnqueuedWork} asserts on the work a
 * transaction enqueued, before or after it commits. Both use only relay-core's public API; the
 * database comes from the {@code dev.relay.test} extension (module relay-test-postgres, a
 * dependency of this kit) or any {@link javax.sql.DataSource}.
 */
package dev.relay.testkit;
