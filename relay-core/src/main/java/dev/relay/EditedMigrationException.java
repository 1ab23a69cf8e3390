package dev.relay;

/**
 * An applied schema version's recorded checksum differs from the checksum of the text this library
 * ships for that version: the migration was edited after it was applied (or the schema was migrated
 * by a different build of Relay). The schema no longer matches what this library expects, so the
 * migrator and the version checks refuse it rather than guess. Nothing was changed; see the
 * operations guide for what to do.
 */
public final class EditedMigrationException extends SchemaVersionException {
  private static final long serialVersionUID = 1L;

  private final String schema;
  private final int version;
  private final String recordedChecksum;
  private final String shippedChecksum;

  /**
   * @param schema the schema whose version table holds the row
   * @param version the edited version
   * @param recordedChecksum the checksum recorded when the version was applied
   * @param shippedChecksum the checksum of the text this library ships for the version
   */
  public EditedMigrationException(
      String schema, int version, String recordedChecksum, String shippedChecksum) {
    super(
        "schema "
            + schema
            + " recorded version "
            + version
            + " with checksum "
            + recordedChecksum
            + ", but this library ships that version with checksum "
            + shippedChecksum
            + ": the migration was edited after it was applied, or another build of Relay applied it");
    this.schema = schema;
    this.version = version;
    this.recordedChecksum = recordedChecksum;
    this.shippedChecksum = shippedChecksum;
  }

  /** The schema whose version table holds the row. */
  public String schema() {
    return schema;
  }

  /** The edited version. */
  public int version() {
    return version;
  }

  /** The checksum recorded when the version was applied. */
  public String recordedChecksum() {
    return recordedChecksum;
  }

  /** The checksum of the text this library ships for the version. */
  public String shippedChecksum() {
    return shippedChecksum;
  }
}
