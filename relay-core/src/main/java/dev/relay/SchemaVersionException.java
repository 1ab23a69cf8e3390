package dev.relay;

/**
 * The database cannot be used by this library as it stands: PostgreSQL older than 15, a Relay
 * schema migrated by a newer library than this one (running older code against it could break rules
 * the newer schema relies on), or a schema whose recorded versions this library cannot trust: one
 * whose applied text differs from the text this library ships ({@link EditedMigrationException}),
 * or one with a version missing below the highest applied ({@link MigrationGapException}). Nothing
 * was changed.
 */
public class SchemaVersionException extends RelayException {
  private static final long serialVersionUID = 1L;

  /**
   * @param problem what was found and what is required
   */
  public SchemaVersionException(String problem) {
    super(problem);
  }
}
