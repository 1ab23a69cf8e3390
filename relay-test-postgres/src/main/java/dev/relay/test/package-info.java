/**
 * Relay's test kit: real PostgreSQL for JUnit 5 tests, one isolated schema per test.
 *
 * <p>Annotate a test class with {@link dev.relay.test.RelayDatabaseTest} and take a {@link
 * dev.relay.test.TestDatabase} parameter in a test or {@code @BeforeEach} method. The kit starts
 * one embedded PostgreSQL 18 per JVM on first use (or uses the server named by the {@code
 * RELAY_TEST_JDBC_URL} environment variable), gives each test its own schema migrated by Relay's
 * migrator when relay-core is on the class path, and resets and reuses schemas between tests.
 * {@link dev.relay.test.DurableDatabase} asks for a server that really flushes commits to disk;
 * {@link dev.relay.test.LoopbackProxy} injects network faults between a client and the server.
 * {@link dev.relay.test.JdbcUrls} holds the rules Relay's commands apply to a JDBC URL a person
 * typed (which are refused, passwords masked, one line for a connection that failed).
 */
package dev.relay.test;
