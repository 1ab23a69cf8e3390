package dev.relay.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs a test (or every test of a class and its {@code @Nested} classes) on an embedded server that
 * flushes commits to disk: {@code fsync}, {@code synchronous_commit} and {@code full_page_writes}
 * are {@code on}.
 *
 * <p>The ordinary embedded server turns {@code fsync} and {@code synchronous_commit} off, which
 * makes tests fast and is fine for logic, but a commit acknowledged by such a server may be lost if
 * the server or machine crashes. Use this annotation for durability and crash tests. The durable
 * server is a second embedded PostgreSQL, started on first use; tests on it are slower.
 *
 * <p>With {@code RELAY_TEST_JDBC_URL} set, the named server is used as it is configured: this
 * annotation changes no setting there, and {@link TestDatabase#durable()} still reports that the
 * test asked for durability. It has an effect only together with {@link RelayDatabaseTest} (or
 * {@link RelayDatabaseExtension} registered otherwise).
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
public @interface DurableDatabase {}
