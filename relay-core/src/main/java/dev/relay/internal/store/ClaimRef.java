package dev.relay.internal.store;

/**
 * One claim's authority: the work and the generation the claim received. Every write after the
 * claim names both, together with the worker ID.
 */
public record ClaimRef(String workId, long generation) {}
