/**
 * Operating Relay: see and steer the queue without writing SQL. {@link dev.relay.admin.Admin} reads
 * queue health, lists and shows work, and performs the audited operator actions (redrive,
 * supersede, cancel, purge); {@link dev.relay.admin.Maintenance} runs retention on an interval in
 * one process at a time.
 *
 * <p>None of these actions can reach a receiver: a redrive may deliver the same work ID again, a
 * cancel does not recall a call in flight, and a purge does not make a receiver forget anything.
 */
package dev.relay.admin;
