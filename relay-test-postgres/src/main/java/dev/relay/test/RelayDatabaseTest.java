package dev.relay.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Marks a test class whose tests each get real PostgreSQL and a schema of their own.
 *
 * <p>Use it on the class and declare a {@link TestDatabase} parameter wherever a test needs the
 * database:
 *
 * <pre>{@code
 * @RelayDatabaseTest
 * class OutboxTest {
 *   @Test
 *   void insertsWork(TestDatabase db) throws Exception {
 *     db.execute("INSERT INTO {schema}.outbox (work_id, kind, payload) VALUES ('a', 'k', '{}')");
 *     assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(1);
 *   }
 * }
 * }</pre>
 *
 * <p>Count and read work through Relay's {@code work} view, as above: work a worker completed or
 * cancelled leaves the {@code outbox} table for {@code work_history}, and the view shows both.
 * Write to {@code outbox}; the view is not updatable.
 *
 * <p>It is inherited by subclasses and applies to {@code @Nested} classes. It registers {@link
 * RelayDatabaseExtension}; see there for the life cycle. It does not make tests run in a
 * transaction or roll anything back: each test's schema is reset after the test instead.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(RelayDatabaseExtension.class)
public @interface RelayDatabaseTest {}
