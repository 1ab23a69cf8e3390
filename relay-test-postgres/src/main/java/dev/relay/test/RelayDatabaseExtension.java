package dev.relay.test;

import java.lang.reflect.AnnotatedElement;
import java.sql.SQLException;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ExtensionContext.Namespace;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * The JUnit 5 extension behind {@link RelayDatabaseTest}: before each test it takes a clean schema
 * from the pool (starting the server on first use), resolves {@link TestDatabase} parameters of
 * test methods and {@code @BeforeEach}/{@code @AfterEach} methods (also in {@code @Nested}
 * classes), and after the test closes the extra pools the test opened and resets the schema for the
 * next test.
 *
 * <p>Normally registered through {@link RelayDatabaseTest}; {@code @ExtendWith} works as well. It
 * does not resolve {@link TestDatabase} for constructors or {@code @BeforeAll} methods: a schema
 * belongs to one test. Tests may run in parallel; each running test has its own schema.
 */
public final class RelayDatabaseExtension
    implements BeforeEachCallback, AfterEachCallback, ParameterResolver {
  private static final Namespace NAMESPACE = Namespace.create(RelayDatabaseExtension.class);
  private static final String KEY = "testDatabase";

  /** Creates the extension; JUnit does this when it meets {@link RelayDatabaseTest}. */
  public RelayDatabaseExtension() {}

  /**
   * Takes a schema for the test, starting the server if this is the first test to need it.
   *
   * @param context the test's context
   */
  @Override
  public void beforeEach(ExtensionContext context) {
    testDatabase(context);
  }

  /**
   * Closes the pools the test opened with {@link TestDatabase#newDataSource} and returns the
   * schema, reset, to the pool. A schema that cannot be reset is dropped, not reused.
   *
   * @param context the test's context
   */
  @Override
  public void afterEach(ExtensionContext context) {
    TestDatabase database = context.getStore(NAMESPACE).remove(KEY, TestDatabase.class);
    if (database != null) {
      database.release();
    }
  }

  /**
   * Supports parameters of type {@link TestDatabase}.
   *
   * @param parameterContext the parameter
   * @param extensionContext the context
   * @return whether the parameter is a {@link TestDatabase}
   */
  @Override
  public boolean supportsParameter(
      ParameterContext parameterContext, ExtensionContext extensionContext) {
    return parameterContext.getParameter().getType() == TestDatabase.class;
  }

  /**
   * Returns the current test's {@link TestDatabase}.
   *
   * @param parameterContext the parameter
   * @param extensionContext the context; must belong to a test method
   * @return the test's database
   * @throws ParameterResolutionException outside a test (constructor, {@code @BeforeAll})
   */
  @Override
  public TestDatabase resolveParameter(
      ParameterContext parameterContext, ExtensionContext extensionContext) {
    if (extensionContext.getTestMethod().isEmpty()) {
      throw new ParameterResolutionException(
          "A TestDatabase belongs to one test: take it in a test, @BeforeEach or @AfterEach"
              + " method, not in a constructor or @BeforeAll method");
    }
    return testDatabase(extensionContext);
  }

  private static TestDatabase testDatabase(ExtensionContext context) {
    return context
        .getStore(NAMESPACE)
        .getOrComputeIfAbsent(KEY, key -> open(context), TestDatabase.class);
  }

  private static TestDatabase open(ExtensionContext context) {
    boolean durable = isDurable(context);
    Server server = Server.get(durable);
    try {
      return new TestDatabase(server, server.schemas().acquire(), durable);
    } catch (SQLException e) {
      throw new IllegalStateException("Cannot prepare a schema on " + server.jdbcUrl(), e);
    }
  }

  private static boolean isDurable(ExtensionContext context) {
    if (context.getTestMethod().map(RelayDatabaseExtension::durableAnnotated).orElse(false)) {
      return true;
    }
    for (Class<?> type = context.getRequiredTestClass();
        type != null;
        type = type.getEnclosingClass()) {
      if (durableAnnotated(type)) {
        return true;
      }
    }
    return false;
  }

  private static boolean durableAnnotated(AnnotatedElement element) {
    return AnnotationSupport.isAnnotated(element, DurableDatabase.class);
  }
}
