package dev.relay;

/**
 * The database cannot be used by this library as it stands: PostgreSQL older than 15, or a Relay
 * schema migrated by a newer library than this one (running older code against it could break rules
 * the newer schema relies on). Nothing was changed.
 */
public final class SchemaVersionException extends RelayException {
  private static final long serialVersionUID = 1L;

  /**
   * @param problem what was found and what is required
   */
  public SchemaVersionException(String problem) {
    super(problem);
  }
}
