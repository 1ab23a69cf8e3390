package dev.relay;

import java.util.List;

/**
 * The schema's version table lacks a version below the highest one applied (for example 1 to 5 and
 * 7, without 6): a migration was skipped, or its row was deleted. Applying the missing version now
 * would run it after later ones, so the migrator and the version checks refuse the schema instead.
 * Nothing was changed; see the operations guide for what to do.
 */
public final class MigrationGapException extends SchemaVersionException {
  private static final long serialVersionUID = 1L;

  private final String schema;
  private final List<Integer> missingVersions;

  /**
   * @param schema the schema whose version table has the gap
   * @param missingVersions the versions missing, in ascending order
   * @param highestVersion the highest version recorded
   */
  public MigrationGapException(String schema, List<Integer> missingVersions, int highestVersion) {
    super(
        "schema "
            + schema
            + " is missing version"
            + (missingVersions.size() == 1 ? " " : "s ")
            + join(missingVersions)
            + " below the applied version "
            + highestVersion
            + ": a migration was skipped or its row deleted, and applying it now would run it after"
            + " later ones");
    this.schema = schema;
    this.missingVersions = List.copyOf(missingVersions);
  }

  private static String join(List<Integer> versions) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < versions.size(); i++) {
      b.append(i == 0 ? "" : i == versions.size() - 1 ? " and " : ", ").append(versions.get(i));
    }
    return b.toString();
  }

  /** The schema whose version table has the gap. */
  public String schema() {
    return schema;
  }

  /** The versions missing, in ascending order. */
  public List<Integer> missingVersions() {
    return missingVersions;
  }
}
