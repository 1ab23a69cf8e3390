package dev.relay.admin;

import dev.relay.Relay;
import java.time.Duration;

/**
 * How {@link Maintenance} runs.
 *
 * @param schema the schema holding Relay's tables (default {@code relay})
 * @param interval the pause between two runs (1 s to 24 h; default 1 min)
 * @param policy the retention it applies (default {@link PurgePolicy#DEFAULT})
 */
public record MaintenanceConfig(String schema, Duration interval, PurgePolicy policy) {
  /** Default pause between runs: 1 minute. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofMinutes(1);

  /** The defaults. */
  public static final MaintenanceConfig DEFAULT =
      new MaintenanceConfig(Relay.DEFAULT_SCHEMA, DEFAULT_INTERVAL, PurgePolicy.DEFAULT);

  /** A copy on {@code schema}. */
  public MaintenanceConfig withSchema(String schema) {
    return new MaintenanceConfig(schema, interval, policy);
  }

  /** A copy pausing {@code interval} between runs. */
  public MaintenanceConfig withInterval(Duration interval) {
    return new MaintenanceConfig(schema, interval, policy);
  }

  /** A copy applying {@code policy}. */
  public MaintenanceConfig withPolicy(PurgePolicy policy) {
    return new MaintenanceConfig(schema, interval, policy);
  }
}
