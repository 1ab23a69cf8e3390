package dev.relay.internal.store;

import dev.relay.internal.jdbc.PerSchema;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.Timeouts;
import java.time.Duration;

/**
 * Every statement of the migrator on {@code schema_version}, schema injected, composed once per
 * schema. The migration lock is {@link dev.relay.internal.jdbc.Coordination#LOCK_MIGRATION}.
 */
public final class MigratorSql {
  private static final PerSchema<MigratorSql> CATALOG = new PerSchema<>(MigratorSql::new);

  /**
   * The migration's limits: bounded like every Relay transaction, but generous, since DDL may wait
   * for other sessions.
   */
  public static final Timeouts TIMEOUTS =
      new Timeouts(Duration.ofMinutes(5), Duration.ofMinutes(2), Duration.ofMinutes(5));

  /** The server's version as {@code server_version_num}. */
  public static final String SERVER_VERSION = "SHOW server_version_num";

  private final SchemaName schema;

  /** Whether the version table exists, without creating anything. */
  public final String versionTableExists;

  /**
   * Creates the schema and its version table if missing (the first thing a migration does). The
   * checksum is nullable: a row recorded without one (by hand, or by a tool other than Relay's
   * migrator) gets the shipped text's checksum at the next migration. Releases before the check of
   * applied versions created the column NOT NULL; that constraint is dropped here, once (only when
   * it is still set, so a current schema takes no table lock).
   */
  public final String createVersionTable;

  /** Every applied version with its checksum (null when recorded without one), in order. */
  public final String appliedVersions;

  /** Records one applied version with the checksum of its text. */
  public final String recordVersion;

  /** Fills the checksum of one version recorded without one (version, checksum). */
  public final String fillChecksum;

  /**
   * The state of the schema's index by the bound name: no row when it does not exist, else whether
   * it is valid and whether a {@code CREATE INDEX} is in progress on its table (or on a table this
   * role cannot see, which counts as in progress). An invalid index with no build in progress is
   * what a {@code CREATE INDEX CONCURRENTLY} leaves behind when it fails or is cancelled; an
   * invalid one with a build in progress is another migrator's build.
   */
  public final String indexState;

  /** The statements for {@code schema}. */
  public static MigratorSql of(SchemaName schema) {
    return CATALOG.of(schema);
  }

  /**
   * The registered workers, not stale, whose library knows only versions below the one bound: the
   * workers a contract step of that version would break.
   */
  public final String liveOlderWorkers;

  /** Whether the worker registration table (version 17) exists. */
  public final String workerTableExists;

  private MigratorSql(SchemaName schema) {
    this.schema = schema;
    versionTableExists =
        schema.inject("SELECT to_regclass('${relay_schema}.schema_version') IS NOT NULL");
    createVersionTable =
        schema.inject(
            """
            CREATE SCHEMA IF NOT EXISTS ${relay_schema};
            CREATE TABLE IF NOT EXISTS ${relay_schema}.schema_version (
                version     integer     PRIMARY KEY,
                description text        NOT NULL,
                checksum    text,
                applied_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
                applied_by  text        NOT NULL DEFAULT current_user
            );
            DO $relay$
            BEGIN
                IF (SELECT attnotnull FROM pg_attribute
                    WHERE attrelid = '${relay_schema}.schema_version'::regclass
                      AND attname = 'checksum') THEN
                    ALTER TABLE ${relay_schema}.schema_version
                        ALTER COLUMN checksum DROP NOT NULL;
                END IF;
            END
            $relay$;
            -- whether a version is a contract step (removes or tightens what an older release
            -- uses), so that an older library can tell a newer schema it cannot run against
            ALTER TABLE ${relay_schema}.schema_version
                ADD COLUMN IF NOT EXISTS contract boolean NOT NULL DEFAULT false""");
    // Through to_jsonb, so the column reads false on a table an older library created without it.
    appliedVersions =
        schema.inject(
            """
            SELECT v.version, v.checksum, coalesce((to_jsonb(v) ->> 'contract')::boolean, false)
              FROM ${relay_schema}.schema_version v
             ORDER BY v.version""");
    recordVersion =
        schema.inject(
            """
            INSERT INTO ${relay_schema}.schema_version (version, description, checksum, contract)
            VALUES (?, ?, ?, ?)""");
    liveOlderWorkers =
        schema.inject(
            """
            SELECT worker_id, relay_version, schema_version, host, heartbeat_at
              FROM ${relay_schema}.worker
             WHERE schema_version < ?
               AND heartbeat_at + stale_after > clock_timestamp()
             ORDER BY worker_id""");
    workerTableExists = schema.inject("SELECT to_regclass('${relay_schema}.worker') IS NOT NULL");
    indexState =
        schema.inject(
            """
            SELECT i.indisvalid,
                   EXISTS (SELECT 1 FROM pg_stat_progress_create_index p
                            WHERE p.datid = (SELECT oid FROM pg_database
                                              WHERE datname = current_database())
                              AND (p.relid = i.indrelid OR p.relid IS NULL))
              FROM pg_index i
             WHERE i.indexrelid = to_regclass('${relay_schema}.' || quote_ident(?))""");
    fillChecksum =
        schema.inject(
            """
            UPDATE ${relay_schema}.schema_version SET checksum = ?
            WHERE version = ? AND checksum IS NULL""");
  }

  /**
   * Drops the invalid index {@code name} left by a failed concurrent build, without blocking
   * writes. {@code name} is a plain lower-case identifier (checked).
   */
  public String dropIndexConcurrently(String name) {
    if (!name.matches("[a-z_][a-z0-9_]*")) {
      throw new IllegalArgumentException("not a plain index name: " + name);
    }
    return schema.inject("DROP INDEX CONCURRENTLY IF EXISTS ${relay_schema}." + name);
  }

  /**
   * A migration resource's text with the schema injected. The resources keep the placeholder {@code
   * ${relay_schema}}, so Flyway or Liquibase users can run them with it defined.
   */
  public String migration(String text) {
    return schema.inject(text);
  }
}
