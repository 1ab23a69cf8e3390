package dev.relay;

import java.util.List;

/**
 * A contract step (a migration whose file name holds {@link Migrator#CONTRACT_MARKER}) was refused
 * because workers of an older release are still registered and heartbeating: the step removes or
 * tightens what they use. Finish the rolling upgrade (stop or upgrade those workers; a worker that
 * died counts as gone once its heartbeat is older than its {@code stale_after}) and migrate again.
 * Nothing was changed: the whole migration rolled back.
 */
public final class OlderWorkersRegisteredException extends SchemaVersionException {
  private static final long serialVersionUID = 1L;

  private final String schema;
  private final int contractVersion;
  private final List<String> workers;

  /**
   * @param schema the schema being migrated
   * @param contractVersion the contract step refused
   * @param workers each older worker: its ID, Relay version, the schema version it knows, host and
   *     last heartbeat
   */
  public OlderWorkersRegisteredException(String schema, int contractVersion, List<String> workers) {
    super(
        "schema "
            + schema
            + ": contract step "
            + contractVersion
            + " refused while "
            + workers.size()
            + " worker"
            + (workers.size() == 1 ? " of an older release is" : "s of older releases are")
            + " registered: "
            + String.join("; ", workers)
            + ". Upgrade or stop them first (a dead worker counts as gone after its stale_after)");
    this.schema = schema;
    this.contractVersion = contractVersion;
    this.workers = List.copyOf(workers);
  }

  /** The schema being migrated. */
  public String schema() {
    return schema;
  }

  /** The contract step refused. */
  public int contractVersion() {
    return contractVersion;
  }

  /** The older workers, each described by ID, Relay version, known schema version and heartbeat. */
  public List<String> workers() {
    return workers;
  }
}
