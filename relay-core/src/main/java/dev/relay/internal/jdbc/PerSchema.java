package dev.relay.internal.jdbc;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.Function;

/**
 * A statement catalog composed once per schema and shared: every {@code …Sql} class keeps one of
 * these, so the text of each statement is built the first time a schema is used and never again.
 *
 * @param <T> the catalog
 */
public final class PerSchema<T> {
  private final ConcurrentMap<String, T> bySchema = new ConcurrentHashMap<>();
  private final Function<SchemaName, T> compose;

  /** A cache that composes a catalog with {@code compose} the first time a schema asks. */
  public PerSchema(Function<SchemaName, T> compose) {
    this.compose = compose;
  }

  /** The catalog of {@code schema}. */
  public T of(SchemaName schema) {
    return bySchema.computeIfAbsent(schema.sql(), name -> compose.apply(schema));
  }
}
