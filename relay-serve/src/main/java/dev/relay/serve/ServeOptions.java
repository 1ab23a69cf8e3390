package dev.relay.serve;

import java.time.Duration;

/**
 * What the command line adds to the config file: the schema, this worker's ID (null: generated) and
 * the maintenance interval.
 */
record ServeOptions(String schema, String workerId, Duration maintenanceInterval) {}
