package dev.relay.internal.jdbc;

import dev.relay.InvalidConfigurationException;
import java.util.regex.Pattern;

/**
 * A validated schema name, the one place where it is checked before being spliced into SQL. Only
 * plain lower-case identifiers are accepted, so the name never needs quoting and reads the same in
 * SQL, channel names and lock keys.
 */
public final class SchemaName {
  private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

  private final String name;

  private SchemaName(String name) {
    this.name = name;
  }

  /** Validates {@code name}; throws {@link InvalidConfigurationException} naming the rule. */
  public static SchemaName of(String name) {
    if (name == null || !IDENTIFIER.matcher(name).matches()) {
      throw new InvalidConfigurationException(
          "schema",
          "'"
              + name
              + "' is not a plain identifier: use 1-63 characters from a-z, 0-9 and _,"
              + " not starting with a digit");
    }
    if (name.startsWith("pg_")) {
      throw new InvalidConfigurationException(
          "schema", "'" + name + "' starts with pg_, which PostgreSQL reserves");
    }
    return new SchemaName(name);
  }

  /** The schema name as written in SQL. */
  public String sql() {
    return name;
  }

  /** Replaces every {@code ${relay_schema}} placeholder in {@code sqlText}. */
  public String inject(String sqlText) {
    return sqlText.replace("${relay_schema}", name);
  }

  @Override
  public String toString() {
    return name;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SchemaName other && other.name.equals(name);
  }

  @Override
  public int hashCode() {
    return name.hashCode();
  }
}
