package dev.relay.test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The schemas of one server: prepared (created and migrated) on demand, reset after each test and
 * reused. A schema whose prepared objects a test changed (a column added to a Relay table, a
 * trigger, a {@code schema_version} row) is dropped instead of reused.
 */
final class SchemaPool {
  private static final Logger LOG = LoggerFactory.getLogger(SchemaPool.class);
  private static final String PREFIX = "relay_t" + randomAlphanumeric(6) + "_";
  private static final AtomicInteger COUNTER = new AtomicInteger();
  private static final String MIGRATOR_CLASS = "dev.relay.Migrator";
  private static final String VERSION_TABLE = "schema_version";
  // A reset that waits this long for a lock (a test left a transaction open) discards the schema.
  private static final String LOCK_TIMEOUT = "SET LOCAL lock_timeout = '20s'";

  /** Droppable objects of a schema, as "KIND\tqualified name", in a safe drop order. */
  private static final String OBJECTS =
      """
      WITH n AS (SELECT oid FROM pg_namespace WHERE nspname = ?)
      SELECT kind, name FROM (
        SELECT CASE c.relkind WHEN 'v' THEN 1 WHEN 'm' THEN 1 WHEN 'S' THEN 3 ELSE 2 END AS rank,
               CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                              WHEN 'S' THEN 'SEQUENCE' WHEN 'f' THEN 'FOREIGN TABLE'
                              ELSE 'TABLE' END AS kind,
               c.oid::regclass::text AS name
          FROM pg_class c, n
         WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
        UNION ALL
        SELECT 4, CASE p.prokind WHEN 'p' THEN 'PROCEDURE' WHEN 'a' THEN 'AGGREGATE'
                                 ELSE 'FUNCTION' END,
               p.oid::regprocedure::text
          FROM pg_proc p, n
         WHERE p.pronamespace = n.oid
        UNION ALL
        SELECT 5, CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, t.oid::regtype::text
          FROM pg_type t, n
         WHERE t.typnamespace = n.oid
           AND (t.typtype IN ('e', 'd', 'r')
                OR (t.typtype = 'c'
                    AND (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c'))
      ) o
      ORDER BY rank, name
      """;

  /** Tables to empty and sequences that no column owns (TRUNCATE restarts the owned ones). */
  private static final String RESETTABLE =
      """
      SELECT c.relkind = 'S', c.relname, c.oid::regclass::text
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = ?
         AND (c.relkind IN ('r', 'p')
              OR (c.relkind = 'S'
                  AND NOT EXISTS (SELECT 1 FROM pg_depend d
                                   WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                                     AND d.deptype IN ('a', 'i'))))
       ORDER BY 3
      """;

  /**
   * A digest of the schema's definitions: relations, columns, constraints, indexes, triggers,
   * routines and types. Equal digests before and after a test mean the test left the prepared
   * objects as they were.
   */
  private static final String FINGERPRINT =
      """
      WITH n AS (SELECT oid FROM pg_namespace WHERE nspname = ?)
      SELECT md5(coalesce(string_agg(x, E'\\n' ORDER BY x), '')) FROM (
        SELECT 'rel ' || c.relname || ' ' || c.relkind::text FROM pg_class c, n
         WHERE c.relnamespace = n.oid
        UNION ALL
        SELECT 'col ' || c.relname || '.' || a.attname || ' '
               || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' '
               || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
          FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
          LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum, n
         WHERE c.relnamespace = n.oid AND a.attnum > 0 AND NOT a.attisdropped
        UNION ALL
        SELECT 'con ' || k.conrelid::regclass || ' ' || k.conname || ' '
               || pg_get_constraintdef(k.oid)
          FROM pg_constraint k, n WHERE k.connamespace = n.oid
        UNION ALL
        SELECT 'idx ' || pg_get_indexdef(i.indexrelid)
          FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid, n
         WHERE c.relnamespace = n.oid
        UNION ALL
        SELECT 'trg ' || pg_get_triggerdef(t.oid)
          FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid, n
         WHERE c.relnamespace = n.oid AND NOT t.tgisinternal
        UNION ALL
        SELECT 'fn ' || p.oid::regprocedure || ' ' || md5(p.prosrc) FROM pg_proc p, n
         WHERE p.pronamespace = n.oid
        UNION ALL
        SELECT 'typ ' || t.oid::regtype FROM pg_type t, n WHERE t.typnamespace = n.oid
        %s
      ) f(x)
      """;

  // null until looked up; empty when relay-core is not on the class path.
  private static volatile Optional<Method> migrator;

  private final DataSource dataSource;
  private final Deque<Prepared> idle = new ArrayDeque<>(); // guarded by this
  private final Set<String> created = ConcurrentHashMap.newKeySet();

  /** A schema as it was right after preparation. */
  record Prepared(
      String name,
      Set<String> objects,
      List<String> truncate,
      List<String> restartSequences,
      String fingerprintSql,
      String fingerprint) {}

  SchemaPool(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /** A clean prepared schema: a reused one if any is idle, else a new one. */
  Prepared acquire() throws SQLException {
    synchronized (this) {
      Prepared reused = idle.pollFirst();
      if (reused != null) {
        return reused;
      }
    }
    return prepare(PREFIX + COUNTER.incrementAndGet());
  }

  /** Resets the schema and keeps it for the next test, or drops it if it cannot be reused. */
  void release(Prepared schema) {
    try {
      reset(schema);
      String fingerprint = fingerprint(schema.fingerprintSql(), schema.name());
      if (fingerprint.equals(schema.fingerprint())) {
        synchronized (this) {
          idle.addFirst(schema);
        }
        return;
      }
      LOG.info("Test changed the prepared objects of schema {}; dropping it", schema.name());
    } catch (SQLException | RuntimeException e) {
      LOG.warn("Could not reset schema {}; dropping it", schema.name(), e);
    }
    drop(schema.name());
  }

  /** Drops every schema this pool created (used for external servers at JVM exit). */
  void dropCreatedSchemas() {
    for (String name : created) {
      drop(name);
    }
  }

  private Prepared prepare(String name) throws SQLException {
    created.add(name);
    execute("CREATE SCHEMA " + quote(name));
    try {
      migrate(name);
    } catch (SQLException | RuntimeException | Error e) {
      drop(name);
      throw e;
    }
    Set<String> objects = new LinkedHashSet<>(objects(name));
    List<String> truncate = new ArrayList<>();
    List<String> restart = new ArrayList<>();
    boolean versioned = false;
    try (Connection connection = dataSource.getConnection();
        PreparedStatement statement = connection.prepareStatement(RESETTABLE)) {
      statement.setString(1, name);
      try (ResultSet rows = statement.executeQuery()) {
        while (rows.next()) {
          if (rows.getBoolean(1)) {
            restart.add(rows.getString(3));
          } else if (rows.getString(2).equals(VERSION_TABLE)) {
            versioned = true;
          } else {
            truncate.add(rows.getString(3));
          }
        }
      }
    }
    // The version table is kept, so its rows are part of what must not change.
    String versionRows =
        versioned
            ? "UNION ALL SELECT 'ver ' || v::text FROM "
                + quote(name)
                + "."
                + quote(VERSION_TABLE)
                + " v"
            : "";
    String fingerprintSql = String.format(FINGERPRINT, versionRows);
    return new Prepared(
        name,
        objects,
        List.copyOf(truncate),
        List.copyOf(restart),
        fingerprintSql,
        fingerprint(fingerprintSql, name));
  }

  private void reset(Prepared schema) throws SQLException {
    try (Connection connection = dataSource.getConnection()) {
      connection.setAutoCommit(false);
      try (Statement statement = connection.createStatement()) {
        statement.execute(LOCK_TIMEOUT);
        for (String object : objects(connection, schema.name())) {
          if (!schema.objects().contains(object)) {
            String[] kindAndName = object.split("\t", 2);
            statement.execute(
                "DROP " + kindAndName[0] + " IF EXISTS " + kindAndName[1] + " CASCADE");
          }
        }
        if (!schema.truncate().isEmpty()) {
          statement.execute(
              "TRUNCATE " + String.join(", ", schema.truncate()) + " RESTART IDENTITY CASCADE");
        }
        for (String sequence : schema.restartSequences()) {
          statement.execute("ALTER SEQUENCE " + sequence + " RESTART");
        }
        connection.commit();
      } catch (SQLException | RuntimeException e) {
        connection.rollback();
        throw e;
      }
    }
  }

  private List<String> objects(String schema) throws SQLException {
    try (Connection connection = dataSource.getConnection()) {
      return objects(connection, schema);
    }
  }

  private static List<String> objects(Connection connection, String schema) throws SQLException {
    List<String> objects = new ArrayList<>();
    try (PreparedStatement statement = connection.prepareStatement(OBJECTS)) {
      statement.setString(1, schema);
      try (ResultSet rows = statement.executeQuery()) {
        while (rows.next()) {
          objects.add(rows.getString(1) + "\t" + rows.getString(2));
        }
      }
    }
    return objects;
  }

  private String fingerprint(String sql, String schema) throws SQLException {
    try (Connection connection = dataSource.getConnection();
        PreparedStatement statement = connection.prepareStatement(sql)) {
      statement.setString(1, schema);
      try (ResultSet rows = statement.executeQuery()) {
        rows.next();
        return rows.getString(1);
      }
    }
  }

  private void drop(String name) {
    try (Connection connection = dataSource.getConnection()) {
      connection.setAutoCommit(false);
      try (Statement statement = connection.createStatement()) {
        statement.execute(LOCK_TIMEOUT);
        statement.execute("DROP SCHEMA IF EXISTS " + quote(name) + " CASCADE");
      }
      connection.commit();
      created.remove(name);
    } catch (SQLException | RuntimeException e) {
      LOG.warn("Could not drop schema {}", name, e);
    }
  }

  private void execute(String sql) throws SQLException {
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement()) {
      statement.execute(sql);
    }
  }

  /** Calls {@code dev.relay.Migrator.migrate(DataSource, String)} if relay-core is present. */
  private void migrate(String schema) throws SQLException {
    Optional<Method> method = migrator();
    if (method.isEmpty()) {
      return;
    }
    try {
      method.get().invoke(null, dataSource, schema);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      if (cause instanceof Error) {
        throw (Error) cause;
      }
      if (cause instanceof SQLException) {
        throw (SQLException) cause;
      }
      throw new IllegalStateException(
          MIGRATOR_CLASS + ".migrate failed for schema " + schema, cause);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("Cannot call " + MIGRATOR_CLASS + ".migrate", e);
    }
  }

  private static Optional<Method> migrator() {
    Optional<Method> found = migrator;
    if (found != null) {
      return found;
    }
    ClassLoader loader = Thread.currentThread().getContextClassLoader();
    Class<?> type;
    try {
      type =
          Class.forName(
              MIGRATOR_CLASS, true, loader != null ? loader : SchemaPool.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      migrator = Optional.empty(); // relay-core is not on the class path: schemas stay empty
      return migrator;
    }
    Method method;
    try {
      method = type.getMethod("migrate", DataSource.class, String.class);
    } catch (NoSuchMethodException e) {
      method = null;
    }
    if (method == null || !Modifier.isStatic(method.getModifiers())) {
      throw new IllegalStateException(
          MIGRATOR_CLASS + " has no public static migrate(javax.sql.DataSource, String)");
    }
    migrator = Optional.of(method);
    return migrator;
  }

  static String quote(String identifier) {
    return '"' + identifier.replace("\"", "\"\"") + '"';
  }

  private static String randomAlphanumeric(int length) {
    String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    SecureRandom random = new SecureRandom();
    StringBuilder text = new StringBuilder(length);
    for (int i = 0; i < length; i++) {
      text.append(alphabet.charAt(random.nextInt(alphabet.length())));
    }
    return text.toString();
  }
}
