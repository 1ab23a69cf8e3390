/**
 * Relay in Spring applications: {@link dev.relay.spring.RelayOutbox} enqueues in the current Spring
 * transaction, {@link dev.relay.spring.RelayHandler} marks handler methods and {@code Handler}
 * beans. The auto-configuration lives in {@code dev.relay.spring.autoconfigure}; see {@code
 * docs/spring.md}.
 */
package dev.relay.spring;
