package dev.relay;

import dev.relay.internal.jdbc.Coordination;
import dev.relay.internal.jdbc.SchemaName;
import dev.relay.internal.jdbc.SqlErrors;
import dev.relay.internal.store.GrantCatalog;
import dev.relay.internal.store.MigratorSql;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates and upgrades Relay's schema. One call applies every pending version in one transaction (a
 * version that builds an index concurrently, {@value #CONCURRENT_MARKER}, runs outside it):
 *
 * <pre>{@code
 * Migrator.migrate(dataSource, "relay");
 * }</pre>
 *
 * <p>Safe to run from several processes at once: the transaction first takes a transaction-level
 * advisory lock keyed by the schema name, so concurrent callers apply each version once, in turn,
 * and the lock is released by COMMIT (a pooled connection never keeps it). A caller that finds the
 * lock taken waits between attempts with no transaction open, for at most two minutes. Idempotent:
 * a current schema is left alone.
 *
 * <p>The versions are plain SQL resources under {@code dev/relay/migrations/} in this jar, with the
 * placeholder {@code ${relay_schema}}; Flyway or Liquibase users may run them instead, with that
 * placeholder defined. Requires PostgreSQL 15 or newer; refuses a schema that a newer library has
 * migrated ({@link SchemaVersionException}).
 *
 * <p>Each applied version is recorded in the schema's {@code schema_version} table with the SHA-256
 * of its text (line endings normalised to LF). Every migration and every {@link
 * #currentVersion(Connection)} checks the recorded versions against the text this library ships and
 * refuses, changing nothing, an edited migration ({@link EditedMigrationException}: a recorded
 * checksum differs from the shipped text's) or a gap ({@link MigrationGapException}: a version
 * missing below the highest applied). Versions newer than this library are not checked: it does not
 * know their text. A row recorded without a checksum is skipped by the check, and a migration fills
 * it in from the shipped text, trusting that text.
 *
 * <p><b>Expand then contract.</b> Every version from 15 on only adds (new nullable columns or
 * columns with a constant default, new tables, functions, indexes; a check only widened), so the
 * previous release's workers keep running while the new release's version is applied. What a
 * release stops using is removed one release later by a <em>contract step</em>, a file whose name
 * holds {@value #CONTRACT_MARKER}; {@link #migrate} refuses it ({@link
 * OlderWorkersRegisteredException}) while a worker whose library knows only older versions is
 * registered and heartbeating in the {@code worker} table (version 17). A runtime checks the schema
 * at start with {@link #requireCompatible}: this library's version, or newer by expand-only
 * versions, is accepted; older, or newer with a contract step, is refused.
 */
public final class Migrator {
  private static final Logger log = LoggerFactory.getLogger(Migrator.class);

  /** The oldest PostgreSQL Relay supports, as {@code server_version_num}. */
  public static final int MINIMUM_SERVER_VERSION_NUM = 150000;

  static final List<Version> VERSIONS =
      List.of(
          new Version(1, "core", "migrations/V1__core.sql"),
          new Version(2, "runtime", "migrations/V2__runtime.sql"),
          new Version(3, "receivers", "migrations/V3__receivers.sql"),
          new Version(4, "ordering", "migrations/V4__ordering.sql"),
          new Version(5, "admin", "migrations/V5__admin.sql"),
          new Version(6, "abandoned and caps", "migrations/V6__abandoned_and_caps.sql"),
          new Version(7, "schedules", "migrations/V7__schedules.sql"),
          new Version(8, "limits", "migrations/V8__limits.sql"),
          new Version(9, "overview summary", "migrations/V9__overview_summary.sql"),
          new Version(10, "dependencies", "migrations/V10__dependencies.sql"),
          new Version(
              11,
              "dependency roles and blocked",
              "migrations/V11__dependency_roles_and_blocked.sql"),
          new Version(12, "horizon start", "migrations/V12__horizon_start.sql"),
          new Version(13, "pause", "migrations/V13__pause.sql"),
          new Version(14, "trace context", "migrations/V14__trace_context.sql"),
          new Version(15, "snooze", "migrations/V15__snooze.sql"),
          new Version(16, "sql enqueue", "migrations/V16__sql_enqueue.sql"),
          new Version(17, "worker registration", "migrations/V17__worker_registration.sql"),
          new Version(18, "handoff", "migrations/V18__handoff.sql"),
          new Version(19, "trace context grants", "migrations/V19__trace_context_grants.sql"),
          new Version(20, "rollup", "migrations/V20__rollup.sql"),
          new Version(21, "bulk operation", "migrations/V21__bulk_operation.sql"),
          new Version(22, "bulk purge", "migrations/V22__bulk_purge.sql"),
          new Version(
              23,
              "failed counts index",
              "migrations/V23__concurrently_outbox_failed_counts_index.sql"),
          new Version(
              24,
              "payload digest without plpgsql",
              "migrations/V24__payload_digest_without_plpgsql.sql"),
          new Version(25, "work history", "migrations/V25__work_history.sql"),
          new Version(
              26,
              "dependency rows leave per statement",
              "migrations/V26__dependency_rows_leave_per_statement.sql"),
          new Version(
              27, "worker deletes only moves", "migrations/V27__worker_deletes_only_moves.sql"),
          new Version(
              28,
              "dependency locks spare live work",
              "migrations/V28__dependency_locks_spare_live_work.sql"));

  /**
   * The file-name marker of a contract step: {@code V20__contract_drop_old_column.sql}. Every
   * migration is expand-then-contract: a release only adds, and what it makes unused is removed by
   * a contract step one release later, which {@link #migrate} refuses ({@link
   * OlderWorkersRegisteredException}) while a worker of an older release is registered.
   */
  public static final String CONTRACT_MARKER = "__contract_";

  /**
   * The file-name marker of a version built outside the migration's transaction: {@code
   * V23__concurrently_outbox_failed_counts_index.sql}. Its text is exactly one {@code CREATE
   * [UNIQUE] INDEX CONCURRENTLY IF NOT EXISTS name ON ...} statement (comments aside), so that a
   * long index build on a large table never blocks the writes of running workers. {@link #migrate}
   * commits the versions before it, builds the index in auto-commit mode with no lock held (a
   * second migrator finding the build in progress waits for it), then takes the migration lock
   * again, records the version unless another migrator did meanwhile, and goes on. Nothing of the
   * session is used, so this works through a transaction pooler. A build that failed or was
   * cancelled leaves an invalid index and no recorded version; the next migration drops that index
   * (concurrently) and builds it again.
   */
  public static final String CONCURRENT_MARKER = "__concurrently_";

  /** The schema version this library writes and understands. */
  public static final int LATEST_VERSION = VERSIONS.get(VERSIONS.size() - 1).number();

  private final SchemaName schema;
  private final MigratorSql sql;
  private final List<Version> versions;
  private final int latest;
  private final Map<Integer, String> checksums;

  /**
   * A migrator over {@code versions} instead of the shipped ones: tests use it to play an older
   * release (fewer versions) or a later one (a contract step).
   */
  Migrator(SchemaName schema, List<Version> versions) {
    this.schema = schema;
    this.sql = MigratorSql.of(schema);
    this.versions = List.copyOf(versions);
    this.latest = versions.get(versions.size() - 1).number();
    this.checksums = versions == VERSIONS ? Shipped.CHECKSUMS : checksumsOf(versions);
  }

  /** A migrator for {@code schemaName} (validated: a plain lower-case identifier). */
  public static Migrator forSchema(String schemaName) {
    return new Migrator(SchemaName.of(schemaName), VERSIONS);
  }

  /** Migrates {@code schemaName} on {@code dataSource}; see the class comment. */
  public static Report migrate(DataSource dataSource, String schemaName) {
    return forSchema(schemaName).migrate(dataSource);
  }

  /** What a migration run found and did. */
  public record Report(
      String schema, int previousVersion, int currentVersion, List<Integer> applied) {
    /** Copies the list. */
    public Report {
      applied = List.copyOf(applied);
    }
  }

  /** Applies every pending version on a connection from {@code dataSource}. */
  public Report migrate(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      return migrate(c);
    } catch (SQLException e) {
      throw SqlErrors.translate("migrating schema " + schema, e);
    }
  }

  /**
   * Applies every pending version on {@code c}, which must be in auto-commit mode (the migration is
   * its own transaction).
   */
  public Report migrate(Connection c) {
    try {
      if (!c.getAutoCommit()) {
        throw new TransactionRequiredException(
            "the migrator runs its own transaction: pass a connection in auto-commit mode");
      }
      requireSupportedServer(c);
      requireWellFormed();
      Run run = new Run();
      for (int attempt = 1; ; attempt++) {
        c.setAutoCommit(false);
        try {
          Report report = migrateLocked(c, run);
          c.commit();
          if (!report.applied().isEmpty()) {
            log.info(
                "relay schema {} migrated from version {} to {}",
                schema,
                report.previousVersion(),
                report.currentVersion());
          }
          return report;
        } catch (SQLException e) {
          if (!c.getAutoCommit()) {
            c.rollback();
          }
          run.rolledBack();
          if (attempt >= CATALOG_RACE_ATTEMPTS || !isCatalogRace(e)) {
            throw e;
          }
          log.info(
              "relay schema {}: a statement met another session's change of the same catalog row"
                  + " ({}); migrating again (attempt {} of {})",
              schema,
              e.getMessage(),
              attempt + 1,
              CATALOG_RACE_ATTEMPTS);
          pause(100L * attempt);
        } catch (RuntimeException e) {
          if (!c.getAutoCommit()) {
            c.rollback();
          }
          throw e;
        } finally {
          c.setAutoCommit(true);
        }
      }
    } catch (SQLException e) {
      throw SqlErrors.translate("migrating schema " + schema, e);
    }
  }

  /**
   * The SQL that creates and grants Relay's four roles for this schema, {@code <schema>_producer},
   * {@code <schema>_worker}, {@code <schema>_scheduler} and {@code <schema>_operator}: what {@link
   * #grantRoles(DataSource)} runs, for a DBA to read or run by hand ({@code relay migrate --roles
   * --print-sql}). It is composed from one grant catalog that names every table, column and
   * function of the schema; docs/protocol.md shows it for schema {@code relay}.
   *
   * @throws InvalidConfigurationException if the schema name is too long to name roles after it
   */
  public String rolesSql() {
    return GrantCatalog.of(schema).script;
  }

  /**
   * Creates Relay's four roles for this schema (NOLOGIN, when missing) and gives them exactly the
   * grants of {@link #rolesSql()}, in one transaction under the migration lock. Run it after {@link
   * #migrate(DataSource)}, as the schema owner (creating a role also needs {@code CREATEROLE};
   * roles a DBA created beforehand are kept). Idempotent: a re-run revokes what the roles hold in
   * the schema and grants the catalog again. Log in as a user that is a member of the roles a
   * process needs ({@code GRANT relay_worker TO app_user}).
   *
   * @return the roles' names
   * @throws SchemaVersionException unless the schema is at exactly this library's version: the
   *     catalog covers this version's tables, and an older library must not take away what a newer
   *     one granted
   * @throws RelayException with SQLState 42501 if the connected user may not create a role or grant
   *     on the schema's tables
   */
  public List<String> grantRoles(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      return grantRoles(c);
    } catch (SQLException e) {
      throw SqlErrors.translate("granting the roles of schema " + schema, e);
    }
  }

  /**
   * {@link #grantRoles(DataSource)} on {@code c}, which must be in auto-commit mode (this runs its
   * own transaction).
   */
  public List<String> grantRoles(Connection c) {
    GrantCatalog catalog = GrantCatalog.of(schema);
    try {
      if (!c.getAutoCommit()) {
        throw new TransactionRequiredException(
            "granting roles runs its own transaction: pass a connection in auto-commit mode");
      }
      c.setAutoCommit(false);
      try {
        lockTransaction(c);
        int version;
        try (Statement s = c.createStatement();
            ResultSet rs = s.executeQuery(sql.versionTableExists)) {
          rs.next();
          version = rs.getBoolean(1) ? checked(applied(c)) : 0;
        }
        if (version != latest) {
          throw new SchemaVersionException(
              "schema "
                  + schema
                  + " is at version "
                  + version
                  + ", and this library's roles cover version "
                  + latest
                  + (version < latest
                      ? ": migrate first (relay migrate --roles does both)"
                      : ": grant the roles with the Relay that migrated it"));
        }
        try (Statement s = c.createStatement()) {
          s.execute(catalog.script);
        } catch (SQLException e) {
          if ("42501".equals(e.getSQLState())) {
            throw new RelayException(
                "granting the roles of schema "
                    + schema
                    + " was refused ("
                    + e.getMessage()
                    + "): run it as the schema's owner, with CREATEROLE to create missing roles,"
                    + " or have a DBA run the SQL of `relay migrate --roles --print-sql`;"
                    + " nothing was changed",
                e.getSQLState(),
                e);
          }
          throw e;
        }
        c.commit();
        log.info("relay schema {}: roles {} granted", schema, catalog.roleNames);
        return catalog.roleNames;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      throw SqlErrors.translate("granting the roles of schema " + schema, e);
    }
  }

  /**
   * The version recorded in the schema, or 0 when the schema has not been migrated. Does not change
   * anything. Checks the recorded versions as a migration does (see the class comment), so a schema
   * newer than this library is returned as it is, but one with an edited migration or a gap is
   * refused.
   *
   * @throws EditedMigrationException if a version this library ships was applied from other text
   * @throws MigrationGapException if a version is missing below the highest recorded
   */
  public int currentVersion(Connection c) {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql.versionTableExists)) {
      rs.next();
      return rs.getBoolean(1) ? checked(applied(c)) : 0;
    } catch (SQLException e) {
      throw SqlErrors.translate("reading the version of schema " + schema, e);
    }
  }

  /**
   * How often a migration is run again after a catalog race ({@link #isCatalogRace}): the
   * transaction rolled back whole, and migrating is idempotent, so a new run re-reads where the
   * schema stands.
   */
  private static final int CATALOG_RACE_ATTEMPTS = 3;

  /**
   * PostgreSQL's "tuple concurrently updated" (internal error XX000): a DDL or GRANT of this
   * migration updated a catalog row (a function, a table's privileges) that another session changed
   * and committed meanwhile, outside the migration lock (an administrator's GRANT, or on older
   * servers autovacuum's statistics of the same table). The statement's transaction is rolled back
   * and nothing else is wrong; repeating it succeeds.
   */
  private static boolean isCatalogRace(SQLException e) {
    return "XX000".equals(e.getSQLState())
        && e.getMessage() != null
        && e.getMessage().contains("tuple concurrently updated");
  }

  /**
   * What one {@link #migrate(Connection)} call applied across its runs: the versions a run
   * committed before an index build stay applied when a later part of it rolls back.
   */
  private static final class Run {
    Integer previous;
    final List<Integer> applied = new ArrayList<>();
    int committed;

    void committedSoFar() {
      committed = applied.size();
    }

    void rolledBack() {
      applied.subList(committed, applied.size()).clear();
    }
  }

  private Report migrateLocked(Connection c, Run run) throws SQLException {
    lockTransaction(c);
    try (Statement s = c.createStatement()) {
      s.execute(sql.createVersionTable);
    }
    List<Applied> recorded = applied(c);
    int previous = highest(recorded);
    if (run.previous == null) {
      run.previous = previous;
    }
    if (previous > latest) {
      throw new SchemaVersionException(
          "schema "
              + schema
              + " is at version "
              + previous
              + ", newer than this library's "
              + latest
              + ": upgrade Relay before running it against this database");
    }
    checked(recorded);
    fillMissingChecksums(c, recorded);
    List<Integer> applied = run.applied;
    int done = previous;
    for (Version v : versions) {
      if (v.number() <= done) {
        continue;
      }
      if (v.contract()) {
        refuseWhileOlderWorkersLive(c, v);
      }
      if (v.concurrent()) {
        run.committedSoFar(); // the build commits what was applied before it
        buildConcurrently(c, v);
        // the lock was let go during the build: another migrator may have recorded this version
        // and later ones meanwhile
        done = checked(applied(c));
        if (v.number() <= done) {
          continue;
        }
      } else {
        try (Statement s = c.createStatement()) {
          s.execute(sql.migration(v.text()));
        }
      }
      try (PreparedStatement ps = c.prepareStatement(sql.recordVersion)) {
        ps.setInt(1, v.number());
        ps.setString(2, v.description());
        ps.setString(3, checksums.get(v.number()));
        ps.setBoolean(4, v.contract());
        ps.executeUpdate();
      }
      applied.add(v.number());
    }
    return new Report(schema.sql(), run.previous, Math.max(previous, latest), applied);
  }

  /**
   * Bounds the transaction and takes the migration lock (transaction level). While another migrator
   * holds it, waits between attempts with no transaction open (see {@link
   * Coordination#TRY_LOCK_MIGRATION}), backing off from 20 ms to 1 s, for at most the migration's
   * lock timeout.
   */
  private void lockTransaction(Connection c) throws SQLException {
    long deadline = System.nanoTime() + MigratorSql.TIMEOUTS.lock().toNanos();
    long backoffMillis = 20;
    while (true) {
      try (Statement s = c.createStatement()) {
        s.execute(MigratorSql.TIMEOUTS.setLocalSql());
      }
      try (PreparedStatement lock = c.prepareStatement(Coordination.TRY_LOCK_MIGRATION)) {
        lock.setString(1, Coordination.migrationKey(schema));
        try (ResultSet rs = lock.executeQuery()) {
          rs.next();
          if (rs.getBoolean(1)) {
            return;
          }
        }
      }
      c.rollback();
      if (System.nanoTime() > deadline) {
        throw new RetryableException(
            "another migration of schema "
                + schema
                + " has held the migration lock for longer than "
                + MigratorSql.TIMEOUTS.lock()
                + "; nothing was applied: run it again when that one has finished",
            "55P03",
            null);
      }
      try {
        Thread.sleep(backoffMillis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new RelayException("interrupted while waiting for the migration lock of " + schema);
      }
      backoffMillis = Math.min(1000, backoffMillis * 2);
    }
  }

  /**
   * Builds a {@value #CONCURRENT_MARKER} version's index outside any transaction: commits what was
   * applied so far (releasing the migration lock), then, in auto-commit mode, builds the index
   * unless it is valid already, waits while another migrator's build of it is in progress, and
   * drops (concurrently) an invalid one that no build is working on, which a failed or cancelled
   * build left. Then it takes the migration lock again in a new transaction. No session state is
   * used, so this works through a transaction pooler, and a crash leaves nothing held: at worst an
   * invalid index the next run drops. The build waits for transactions that started before it and
   * does not block writes; it has no statement timeout.
   */
  private void buildConcurrently(Connection c, Version v) throws SQLException {
    c.commit();
    c.setAutoCommit(true);
    String index = v.concurrentIndexName();
    long waitingSince = 0;
    long backoffMillis = 20;
    while (true) {
      Boolean valid = null;
      boolean building = false;
      try (PreparedStatement ps = c.prepareStatement(sql.indexState)) {
        ps.setString(1, index);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            valid = rs.getBoolean(1);
            building = rs.getBoolean(2);
          }
        }
      }
      if (Boolean.TRUE.equals(valid)) {
        break;
      }
      if (valid != null && building) {
        long now = System.nanoTime();
        if (waitingSince == 0 || now - waitingSince > WAIT_LOG_INTERVAL.toNanos()) {
          log.info(
              "relay schema {}: index {} (version {}) is being built by another migration;"
                  + " waiting for it",
              schema,
              index,
              v.number());
          waitingSince = now;
        }
        backoffMillis = backOff(backoffMillis);
        continue;
      }
      try (Statement s = c.createStatement()) {
        if (valid != null) {
          log.info(
              "relay schema {}: index {} was left invalid by an earlier build of version {};"
                  + " dropping it to build it again",
              schema,
              index,
              v.number());
          s.execute(sql.dropIndexConcurrently(index));
        } else {
          log.info(
              "relay schema {}: building index {} concurrently (version {})",
              schema,
              index,
              v.number());
          s.execute(sql.migration(v.text()));
        }
      } catch (SQLException e) {
        if (!DEADLOCK_DETECTED.equals(e.getSQLState())) {
          throw e;
        }
        // Two migrators that both found no index start a build at once; a partial index's build
        // waits for the other build's transaction while that one waits for the table's lock, and
        // the server cancels one of them. The statement ran alone in auto-commit mode, so nothing
        // is held: look at the index again (being built, valid, or left invalid to drop).
        log.info(
            "relay schema {}: the build of index {} (version {}) met another migrator's build of"
                + " it; looking at the index again",
            schema,
            index,
            v.number());
        backoffMillis = backOff(backoffMillis);
      }
    }
    c.setAutoCommit(false);
    lockTransaction(c);
  }

  private static final Duration WAIT_LOG_INTERVAL = Duration.ofSeconds(30);

  private static final String DEADLOCK_DETECTED = "40P01";

  /** Pauses {@code millis}, then returns the next pause: twice as long, at most a second. */
  private long backOff(long millis) {
    pause(millis);
    return Math.min(1000, millis * 2);
  }

  private void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RelayException("interrupted while migrating schema " + schema);
    }
  }

  /**
   * A contract step removes or tightens what an older release's workers use: refused while one of
   * them is registered and not stale (see the {@code worker} table, version 17).
   */
  private void refuseWhileOlderWorkersLive(Connection c, Version v) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql.workerTableExists)) {
      rs.next();
      if (!rs.getBoolean(1)) {
        return; // created by a version applied in this same run: nobody registered yet
      }
    }
    List<String> older = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(sql.liveOlderWorkers)) {
      ps.setInt(1, v.number());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          older.add(
              rs.getString(1)
                  + " (relay "
                  + rs.getString(2)
                  + ", knows schema version "
                  + rs.getInt(3)
                  + (rs.getString(4) == null ? "" : ", on " + rs.getString(4))
                  + ", last heartbeat "
                  + rs.getObject(5, java.time.OffsetDateTime.class)
                  + ")");
        }
      }
    }
    if (!older.isEmpty()) {
      throw new OlderWorkersRegisteredException(schema.sql(), v.number(), older);
    }
  }

  /**
   * Checks that a runtime of this library may run against the schema, and returns its version. A
   * schema at this library's version, or newer by expand-only versions, is accepted: during a
   * rolling upgrade the previous release's workers keep running while the new release migrates.
   * Refused: an older schema (migrate first), and a newer one that holds a contract step this
   * library predates (it removed or tightened what this library uses). A schema without {@code
   * schema_version} (built by Flyway or Liquibase from the plain files) reads 0 and is not checked.
   *
   * @throws SchemaVersionException naming the versions and the way out
   */
  public int requireCompatible(Connection c) {
    int version = currentVersion(c);
    if (version == 0) {
      return 0;
    }
    if (version < latest) {
      throw new SchemaVersionException(
          "schema "
              + schema
              + " is at version "
              + version
              + ", older than this library's "
              + latest
              + ": migrate it first (relay migrate --schema "
              + schema
              + ", or Migrator.migrate)");
    }
    if (version > latest) {
      try {
        for (Applied row : applied(c)) {
          if (row.version() > latest && row.contract()) {
            throw new SchemaVersionException(
                "schema "
                    + schema
                    + " is at version "
                    + version
                    + " and holds contract step "
                    + row.version()
                    + ", which removed or changed what this library (schema version "
                    + latest
                    + ") uses: upgrade Relay");
          }
        }
      } catch (SQLException e) {
        throw SqlErrors.translate("reading the versions of schema " + schema, e);
      }
      log.info(
          "relay schema {} is at version {}, newer than this library's {}, by expand-only"
              + " versions: running against it (a rolling upgrade)",
          schema,
          version,
          latest);
    }
    return version;
  }

  /** The newest schema version this migrator knows. */
  int latestVersion() {
    return latest;
  }

  /**
   * One row of {@code schema_version}; {@code checksum} is null when recorded without one, {@code
   * contract} whether it is a contract step.
   */
  private record Applied(int version, String checksum, boolean contract) {}

  private List<Applied> applied(Connection c) throws SQLException {
    List<Applied> rows = new ArrayList<>();
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql.appliedVersions)) {
      while (rs.next()) {
        rows.add(new Applied(rs.getInt(1), rs.getString(2), rs.getBoolean(3)));
      }
    }
    return rows;
  }

  private static int highest(List<Applied> rows) {
    return rows.isEmpty() ? 0 : rows.get(rows.size() - 1).version();
  }

  /**
   * Refuses a gap among the versions this library knows, then an applied version whose checksum is
   * not the shipped text's; returns the highest version recorded. Rows come in version order.
   */
  private int checked(List<Applied> rows) {
    int highest = highest(rows);
    // Version numbers this library does not ship (taken by a branch never released) are no gap.
    Set<Integer> recorded = rows.stream().map(Applied::version).collect(Collectors.toSet());
    List<Integer> missing =
        versions.stream()
            .map(Version::number)
            .filter(n -> n < highest && !recorded.contains(n))
            .toList();
    if (!missing.isEmpty()) {
      throw new MigrationGapException(schema.sql(), missing, highest);
    }
    for (Applied row : rows) {
      String shipped = checksums.get(row.version());
      if (shipped != null && row.checksum() != null && !row.checksum().equals(shipped)) {
        throw new EditedMigrationException(schema.sql(), row.version(), row.checksum(), shipped);
      }
    }
    return highest;
  }

  /** Records the shipped text's checksum for every known version recorded without one. */
  private void fillMissingChecksums(Connection c, List<Applied> rows) throws SQLException {
    List<Integer> filled = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(sql.fillChecksum)) {
      for (Applied row : rows) {
        if (row.checksum() == null && checksums.get(row.version()) != null) {
          ps.setString(1, checksums.get(row.version()));
          ps.setInt(2, row.version());
          ps.executeUpdate();
          filled.add(row.version());
        }
      }
    }
    if (!filled.isEmpty()) {
      log.info(
          "relay schema {}: versions {} had no checksum; recorded the checksums of the text this"
              + " library ships, trusting that it is what was applied",
          schema,
          filled);
    }
  }

  private static void requireSupportedServer(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(MigratorSql.SERVER_VERSION)) {
      rs.next();
      int version = Integer.parseInt(rs.getString(1));
      if (version < MINIMUM_SERVER_VERSION_NUM) {
        throw new SchemaVersionException(
            "PostgreSQL server_version_num "
                + version
                + " is older than the minimum "
                + MINIMUM_SERVER_VERSION_NUM
                + " (PostgreSQL 15)");
      }
    }
  }

  /**
   * Checks every version's text before anything runs: the shipped texts once per JVM (they cannot
   * change while it runs), a test's versions on every call.
   */
  private void requireWellFormed() {
    if (checksums == Shipped.CHECKSUMS) {
      if (!Shipped.wellFormed) {
        VERSIONS.forEach(Version::requireWellFormed);
        Shipped.wellFormed = true;
      }
    } else {
      versions.forEach(Version::requireWellFormed);
    }
  }

  /** The checksums of the shipped texts, computed once, on first use. */
  private static final class Shipped {
    private static final Map<Integer, String> CHECKSUMS = checksumsOf(VERSIONS);

    /** Whether the shipped texts were checked; racing first checks only repeat the work. */
    private static volatile boolean wellFormed;
  }

  private static Map<Integer, String> checksumsOf(List<Version> versions) {
    return versions.stream()
        .collect(Collectors.toUnmodifiableMap(Version::number, v -> sha256(v.text())));
  }

  private static String sha256(String text) {
    try {
      return HexFormat.of()
          .formatHex(
              MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
  }

  /**
   * One schema version: its number, description and resource (relative to this class's package). A
   * resource whose file name holds {@value #CONTRACT_MARKER} is a contract step.
   */
  record Version(int number, String description, String resource) {
    private static final Pattern ONE_CONCURRENT_INDEX =
        Pattern.compile(
            "(?is)CREATE\\s+(?:UNIQUE\\s+)?INDEX\\s+CONCURRENTLY\\s+IF\\s+NOT\\s+EXISTS\\s+"
                + "((?-i:[a-z_][a-z0-9_]*))\\s+ON\\s+[^;]+;?");

    /**
     * Whether this version is a contract step: it removes or tightens what the previous release's
     * workers use, so it is refused while one of them is registered.
     */
    boolean contract() {
      return fileName().contains(CONTRACT_MARKER);
    }

    /**
     * Whether this version is one index built outside the transaction ({@value
     * #CONCURRENT_MARKER}).
     */
    boolean concurrent() {
      return fileName().contains(CONCURRENT_MARKER);
    }

    private String fileName() {
      return resource.substring(resource.lastIndexOf('/') + 1);
    }

    /**
     * The index a {@value #CONCURRENT_MARKER} version builds.
     *
     * @throws IllegalStateException if its text is not exactly one {@code CREATE [UNIQUE] INDEX
     *     CONCURRENTLY IF NOT EXISTS} statement with a plain lower-case name
     */
    String concurrentIndexName() {
      Matcher m = ONE_CONCURRENT_INDEX.matcher(withoutComments(text()));
      if (!m.matches()) {
        throw new IllegalStateException(
            "migration "
                + resource
                + " is marked "
                + CONCURRENT_MARKER
                + " but is not exactly one CREATE [UNIQUE] INDEX CONCURRENTLY IF NOT EXISTS"
                + " statement with a plain lower-case index name (nothing else may run outside"
                + " the migration's transaction)");
      }
      return m.group(1);
    }

    /** Checks a concurrent version's text before anything runs; other versions pass. */
    void requireWellFormed() {
      if (concurrent()) {
        concurrentIndexName();
      }
    }

    private static String withoutComments(String text) {
      return text.lines()
          .map(line -> line.startsWith("--") ? "" : line)
          .collect(Collectors.joining("\n"))
          .trim();
    }

    /** The resource's text, line endings normalised to LF (so a CRLF checkout hashes the same). */
    String text() {
      String path = resource;
      try (InputStream in = Migrator.class.getResourceAsStream(path)) {
        if (in == null) {
          throw new IllegalStateException("missing migration resource dev/relay/" + path);
        }
        return new String(in.readAllBytes(), StandardCharsets.UTF_8)
            .replace("\r\n", "\n")
            .replace('\r', '\n');
      } catch (IOException e) {
        throw new IllegalStateException("cannot read migration resource dev/relay/" + path, e);
      }
    }
  }
}
