package dev.relay.internal.store;

import dev.relay.InvalidConfigurationException;
import dev.relay.internal.jdbc.PerSchema;
import dev.relay.internal.jdbc.SchemaName;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The one catalog of what Relay's four roles may do in a schema: for every table, each of its
 * columns, and every function, which role holds which privilege, and why; composed per schema into
 * the script that {@code relay migrate --roles} runs and {@code --print-sql} prints. A table,
 * column or function of the migrated schema that this catalog does not name fails {@code
 * GrantCatalogCoverageTest}, so a migration that adds one must decide its grants here.
 *
 * <p>The roles, named after the schema ({@code relay_producer} for schema {@code relay}):
 *
 * <ul>
 *   <li><b>producer</b>: enqueues ({@code Outbox.enqueue}, the SQL {@code enqueue} function, {@code
 *       relay enqueue}). It inserts the identity and the scheduling columns only, never a state or
 *       claim column, so it cannot insert a finished or a claimed row.
 *   <li><b>worker</b>: a {@code Relay} runtime. It reads work and updates only the state columns
 *       its claim, renew and settle statements set; a local hand-off inserts the claim columns of a
 *       row whose identity the producer role inserts (a hand-off's user is a member of both).
 *   <li><b>scheduler</b>: relay-schedule. A member of the producer role, plus the schedule state.
 *   <li><b>operator</b>: {@code Admin}, the console and the CLI's operator commands, and the {@code
 *       Maintenance} service (purge, the charts' rollup fold, the summary refresh, expired pauses):
 *       reads everything, redrives, cancels, pauses, runs bulk actions and purges. It cannot
 *       enqueue or claim. A supersede enqueues the replacement, so its user is a producer too.
 * </ul>
 *
 * <p>The receiver tables (inbox, fence, positions) belong to a receiving service, in its own
 * database and under its own role: none of these roles gets them (docs/operations.md).
 */
public final class GrantCatalog {
  private static final PerSchema<GrantCatalog> CATALOG = new PerSchema<>(GrantCatalog::new);

  /** The longest role suffix, {@code _scheduler}: a role name must fit in 63 bytes. */
  private static final int LONGEST_SUFFIX = "_scheduler".length();

  /** The four roles, in the order the script creates them. */
  public enum Role {
    /** Enqueues. */
    PRODUCER,
    /** Runs work (a {@code Relay} runtime). */
    WORKER,
    /** Runs schedules (relay-schedule); a member of the producer role. */
    SCHEDULER,
    /** Admin, the console, the CLI's operator commands and maintenance. */
    OPERATOR;

    /** The role's name for {@code schema}: {@code <schema>_producer} and so on. */
    public String of(SchemaName schema) {
      return schema.sql() + "_" + name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /** One privilege of one role: {@code SELECT}, {@code INSERT (a, b)} and so on. */
  public record Grant(Role role, String privilege, List<String> columns) {
    String clause() {
      return columns.isEmpty() ? privilege : privilege + " (" + String.join(", ", columns) + ")";
    }
  }

  /** A table: every column (so a new one is noticed), what each role may do, and why. */
  public record Table(String name, List<String> columns, String why, List<Grant> grants) {}

  /** A function by its signature, the roles that may execute it, and why. */
  public record Function(String signature, String why, List<Role> execute) {}

  private static final List<Table> TABLES = new ArrayList<>();
  private static final List<Function> FUNCTIONS = new ArrayList<>();

  private static Grant g(Role role, String privilege, String... columns) {
    return new Grant(role, privilege, List.of(columns));
  }

  private static void table(String name, String columns, String why, Grant... grants) {
    TABLES.add(new Table(name, List.of(columns.split(",\\s*")), why, List.of(grants)));
  }

  /**
   * An audit or link table the operator writes and a purge expires by {@code retention}, its time
   * column (see {@link #RETENTION_LOCK}).
   */
  private static void purgedAudit(String name, String columns, String why, String retention) {
    Role o = Role.OPERATOR;
    table(
        name,
        columns,
        why + RETENTION_LOCK,
        g(o, "SELECT"),
        g(o, "INSERT"),
        g(o, "UPDATE", retention),
        g(o, "DELETE"));
  }

  private static void function(String signature, String why, Role... execute) {
    FUNCTIONS.add(new Function(signature, why, List.of(execute)));
  }

  /** The work table's columns, which the history table and the work view repeat in order. */
  private static final String OUTBOX_COLUMNS =
      "work_id, kind, payload, state, available_at, claim_generation, claimed_by, lease_until,"
          + " completed_at, created_at, queue, priority, attempts, max_attempts, deadline,"
          + " ordering_key, sequence, claimed_at, first_attempt_at, last_error, last_error_kind,"
          + " outcome, milestone, receiver_ref, result, cancel_requested_at, retry_window_start,"
          + " group_key, has_dependencies, horizon_start, trace_context, snoozes";

  /** The columns of outbox a claim, a renewal or a settlement sets: the worker's only updates. */
  private static final String[] WORKER_UPDATES = {
    "state", "available_at", "claim_generation", "claimed_by", "lease_until", "completed_at",
    "attempts", "snoozes", "claimed_at", "first_attempt_at", "retry_window_start", "last_error",
    "last_error_kind", "outcome", "milestone", "receiver_ref", "result"
  };

  /** The columns of outbox a redrive or a cancel sets: the operator's only updates. */
  private static final String[] OPERATOR_UPDATES = {
    "state",
    "available_at",
    "claimed_by",
    "lease_until",
    "claimed_at",
    "completed_at",
    "cancel_requested_at",
    "attempts",
    "snoozes",
    "retry_window_start",
    "horizon_start",
    "last_error",
    "last_error_kind",
    "outcome"
  };

  /**
   * Why the operator may update one column of a purged table: a purge locks the rows it deletes
   * (FOR UPDATE SKIP LOCKED), and PostgreSQL allows a row lock only with UPDATE on a column. The
   * column is the retention time, so an update can only move a row's expiry, which its DELETE could
   * do anyway.
   */
  private static final String RETENTION_LOCK =
      " (UPDATE of its retention time only: a purge locks the rows it deletes, which needs UPDATE"
          + " on a column)";

  static {
    Role p = Role.PRODUCER;
    Role w = Role.WORKER;
    Role s = Role.SCHEDULER;
    Role o = Role.OPERATOR;
    table(
        "outbox",
        OUTBOX_COLUMNS,
        "the work. Nobody updates work_id, kind, payload or what enqueue set; the producer inserts"
            + " ready work only (no state or claim column), reads the identity it compares; the"
            + " worker inserts a hand-off's claim columns and updates the columns its claim, renew"
            + " and settle set; the operator updates what a redrive and a cancel set, and purges",
        g(
            p,
            "INSERT",
            "work_id",
            "kind",
            "payload",
            "queue",
            "priority",
            "available_at",
            "max_attempts",
            "deadline",
            "group_key",
            "ordering_key",
            "sequence",
            "has_dependencies",
            "trace_context"),
        g(p, "SELECT", "work_id", "kind", "payload"),
        g(w, "SELECT"),
        g(
            w,
            "INSERT",
            "state",
            "claimed_by",
            "lease_until",
            "claim_generation",
            "attempts",
            "claimed_at",
            "first_attempt_at",
            "retry_window_start"),
        g(w, "UPDATE", WORKER_UPDATES),
        g(w, "DELETE"),
        g(o, "SELECT"),
        g(o, "UPDATE", OPERATOR_UPDATES),
        g(o, "DELETE"));
    table(
        "work_history",
        OUTBOX_COLUMNS,
        "finished work, partitioned by completion day: the worker's settle moves a done or"
            + " cancelled row here (deleting it from outbox, hence the worker's DELETE there);"
            + " enqueue and the purged-ID check compare against it; the operator reads it, moves a"
            + " redriven row back and retires whole days (retire_history_day)",
        g(p, "SELECT", "work_id", "kind", "payload"),
        g(w, "SELECT"),
        g(w, "INSERT"),
        g(o, "SELECT"),
        g(o, "DELETE"));
    table(
        "work",
        OUTBOX_COLUMNS,
        "a view of all work, unfinished (outbox) and finished (work_history): what readers read",
        g(p, "SELECT", "work_id", "kind", "payload"),
        g(w, "SELECT"),
        g(o, "SELECT"));
    table(
        "attempt",
        "id, work_id, generation, worker, claimed_at, ended_at, ending, error_kind, error, outcome,"
            + " action, receiver_ref",
        "attempt history: the worker appends (an abandoned outcome's insert skips a repeat, which"
            + " reads the unique index's columns); the operator reads it and purges it"
            + RETENTION_LOCK,
        g(w, "SELECT", "work_id", "generation", "ending"),
        g(w, "INSERT"),
        g(o, "SELECT"),
        g(o, "UPDATE", "ended_at"),
        g(o, "DELETE"));
    table(
        "dependency",
        "work_id, depends_on",
        "dependencies: the producer inserts them with its work; the worker's claim reads them",
        g(p, "INSERT"),
        g(w, "SELECT"),
        g(o, "SELECT"));
    table(
        "tombstone",
        "work_id, kind, payload_digest, last_generation, final_state, outcome, purged_at",
        "what holds the ID of finished and purged work: enqueue compares against it, the"
            + " claim's dependency test reads it, a worker writes it as it files finished work in"
            + " the history table, a purge writes and expires it"
            + RETENTION_LOCK,
        g(p, "SELECT"),
        g(w, "SELECT"),
        g(w, "INSERT"),
        g(o, "SELECT"),
        g(o, "INSERT"),
        g(o, "UPDATE", "purged_at"),
        g(o, "DELETE"));
    table(
        "key_sequence",
        "ordering_key, last_sequence",
        "ordering keys' counters, locked and advanced by enqueue",
        g(p, "SELECT"),
        g(p, "INSERT"),
        g(p, "UPDATE"),
        g(o, "SELECT"));
    table(
        "kind",
        "kind, backoff_base, backoff_cap, max_attempts, max_elapsed, handler_timeout,"
            + " dedup_horizon, unknown_outcome, registered_by, registered_at, max_snoozes",
        "each kind's policy, registered by the workers at start",
        g(w, "SELECT"),
        g(w, "INSERT"),
        g(w, "UPDATE"),
        g(o, "SELECT"));
    table(
        "limiter",
        "kind, max_running, max_running_per_group, rate_limit, rate_interval, registered_by,"
            + " registered_at",
        "flow limits, registered by the workers at start and locked by each limited claim",
        g(w, "SELECT"),
        g(w, "INSERT"),
        g(w, "UPDATE"),
        g(o, "SELECT"));
    table(
        "claim_log",
        "kind, group_key, work_id, claimed_at",
        "rate limits' window, written and trimmed by the claim",
        g(w, "SELECT"),
        g(w, "INSERT"),
        g(w, "DELETE"),
        g(o, "SELECT"));
    table(
        "pause",
        "queue, kind, actor, reason, paused_at, resume_at",
        "pauses in force: every claim reads them; the operator pauses and resumes (a pause locks"
            + " the table), maintenance removes expired ones",
        g(w, "SELECT"),
        g(o, "SELECT"),
        g(o, "INSERT"),
        g(o, "UPDATE"),
        g(o, "DELETE"));
    table(
        "pause_audit",
        "id, action, queue, kind, actor, reason, at, resume_at, paused_at",
        "every pause and resume",
        g(o, "SELECT"),
        g(o, "INSERT"));
    table(
        "handoff",
        "worker_id, kind, queue, lease, registered_at",
        "which worker may hand off which kind: registered at start, removed at close",
        g(w, "SELECT"),
        g(w, "INSERT"),
        g(w, "UPDATE"),
        g(w, "DELETE"),
        g(o, "SELECT"));
    table(
        "worker",
        "worker_id, relay_version, schema_version, host, started_at, heartbeat_at, stale_after",
        "live runtimes for rolling upgrades: each writes, renews and deletes its own row",
        g(w, "SELECT"),
        g(w, "INSERT"),
        g(w, "UPDATE"),
        g(w, "DELETE"),
        g(o, "SELECT"));
    table(
        "schema_version",
        "version, description, checksum, applied_at, applied_by, contract",
        "applied versions: every role reads them at start (the compatibility check); only the"
            + " migrator, as the schema owner, writes",
        g(p, "SELECT"),
        g(w, "SELECT"),
        g(s, "SELECT"),
        g(o, "SELECT"));
    table(
        "schedule_state",
        "name, kind, definition, last_slot, next_slot, decided_at, decided_by, enqueued, skipped,"
            + " conflicts, created_at",
        "recurring schedules: the scheduler registers each one and records each decision under"
            + " the row's lock; the operator reads them (relay schedules, purge's catch-up)",
        g(s, "SELECT"),
        g(s, "INSERT", "name", "kind", "definition", "next_slot"),
        g(
            s,
            "UPDATE",
            "last_slot",
            "next_slot",
            "decided_at",
            "decided_by",
            "enqueued",
            "skipped",
            "conflicts"),
        g(o, "SELECT"));
    purgedAudit(
        "redrive_audit",
        "id, work_id, actor, reason, redriven_at, from_state, from_generation, forced",
        "every redrive",
        "redriven_at");
    purgedAudit(
        "cancel_audit",
        "id, work_id, actor, reason, requested_at, from_state, from_generation, result",
        "every cancel",
        "requested_at");
    purgedAudit(
        "supersedes",
        "work_id, supersedes_work_id, actor, reason, created_at",
        "links of a supersede",
        "created_at");
    purgedAudit(
        "purge_audit",
        "id, actor, reason, requested_at, dry_run, policy, work, tombstones, attempts, audits,"
            + " complete",
        "every purge",
        "requested_at");
    purgedAudit(
        "purge_item_audit",
        "id, work_id, bulk_id, actor, reason, purged_at, from_state, last_generation, outcome",
        "every item a bulk purge deleted",
        "purged_at");
    table(
        "bulk_operation",
        "id, action, force, f_state, f_kind, f_queue, f_ordering_key, f_older_than, f_newer_than,"
            + " f_error_kind, f_outcome, f_blocked_only, f_blocked_reason, actor, reason, state,"
            + " created_at, updated_at, finished_at, after_created_at, after_work_id, batches,"
            + " handled, changed, requested, refused_running, refused_horizon, refused_state, gone",
        "bulk redrive, cancel and purge by filter, with progress",
        g(o, "SELECT"),
        g(o, "INSERT"),
        g(o, "UPDATE"));
    table(
        "finished_summary",
        "queue, kind, done, cancelled",
        "the overview's finished counts, replaced by the summary refresh (which locks the table)",
        g(o, "SELECT"),
        g(o, "INSERT"),
        g(o, "DELETE"));
    table(
        "finished_summary_refresh",
        "only_row, as_of",
        "when the summary was counted",
        g(o, "SELECT"),
        g(o, "INSERT"),
        g(o, "UPDATE"));
    table(
        "rollup",
        "span_s, bucket_start, queue, kind, done, failed, cancelled, failures, latency",
        "the charts' buckets: maintenance folds finished work in and expires old buckets",
        g(o, "SELECT"),
        g(o, "INSERT"),
        g(o, "UPDATE"),
        g(o, "DELETE"));
    table(
        "rollup_watermark",
        "only_row, last_completed_at, last_work_id, folded_through, folded, folded_at",
        "how far the fold has read, locked and moved by each fold",
        g(o, "SELECT"),
        g(o, "INSERT"),
        g(o, "UPDATE"));
    String receiver =
        "receiver side: written by a receiving service in its own transaction, under its own role;"
            + " not granted to these roles";
    table("inbox", "consumer, message_id, payload, result, received_at, processed_at", receiver);
    table("inbox_consumer", "consumer, horizon, updated_at, updated_by", receiver);
    table("receiver_key_position", "consumer, ordering_key, position, updated_at", receiver);
    table("fence", "resource, highest_token, updated_at", receiver);
    table("fence_counter", "resource, last_token", receiver);

    function(
        "enqueue(text, text, jsonb, text, integer, timestamptz, interval, integer, timestamptz,"
            + " text, text, text[], boolean)",
        "enqueue for producers outside Java; runs with the caller's grants",
        p);
    function(
        "lock_dependencies(text[])",
        "locks named dependencies against a purge (SECURITY DEFINER: no UPDATE for producers)",
        p);
    function(
        "handoff_lease(text, text, text)",
        "whether this worker may hand off a kind now (SECURITY DEFINER)",
        w);
    function(
        "add_history_day(date)",
        "creates a day's history partition ahead (SECURITY DEFINER: the schema owner owns it);"
            + " maintenance",
        o);
    function(
        "reopen_history(text[])",
        "moves finished rows back into outbox, unchanged, before a redrive or a purge of them"
            + " (SECURITY DEFINER: the operator has no INSERT on outbox)",
        o);
    function(
        "retire_history_day(date, timestamptz)",
        "writes a retained-out day's tombstones and drops its history partition (SECURITY"
            + " DEFINER); maintenance",
        o);
    function(
        "payload_digest(jsonb)",
        "a pure function of its argument: PUBLIC, as PostgreSQL creates it");
    function(
        "jsonb_canonical(jsonb)",
        "a pure function of its argument: PUBLIC, as PostgreSQL creates it");
    function("outbox_refuse_identity_change()", "a trigger's: called by no role");
    function("outbox_refuse_purged_id()", "a trigger's: called by no role");
    function("outbox_check_inserted_claim()", "a trigger's: called by no role");
    function(
        "outbox_drop_dependencies()",
        "a trigger's (SECURITY DEFINER, as the foreign key's cascade it replaced): called by no"
            + " role");
    function(
        "outbox_refuse_unfiled_delete()",
        "a trigger's (the caller's rights: it tests whether the caller may delete history):"
            + " called by no role");
  }

  /** Every table the catalog decides, in script order. */
  public static List<Table> tables() {
    return List.copyOf(TABLES);
  }

  /** Every function the catalog decides. */
  public static List<Function> functions() {
    return List.copyOf(FUNCTIONS);
  }

  /** The catalog of {@code schema}. */
  public static GrantCatalog of(SchemaName schema) {
    return CATALOG.of(schema);
  }

  private final SchemaName schema;

  /**
   * The whole script: roles created if missing, everything revoked from them in the schema, then
   * granted as the catalog says. Idempotent; one transaction when run as one.
   */
  public final String script;

  /** The roles' names, in {@link Role} order. */
  public final List<String> roleNames;

  private GrantCatalog(SchemaName schema) {
    this.schema = schema;
    if (schema.sql().length() + LONGEST_SUFFIX > 63) {
      throw new InvalidConfigurationException(
          "schema",
          "'"
              + schema
              + "' is too long to name Relay's roles after it (<schema>_scheduler must fit in 63"
              + " characters): use at most "
              + (63 - LONGEST_SUFFIX)
              + " characters");
    }
    this.roleNames = Stream.of(Role.values()).map(r -> r.of(schema)).toList();
    this.script = compose();
  }

  private String compose() {
    String s = schema.sql();
    String all = String.join(", ", roleNames);
    StringBuilder b = new StringBuilder();
    b.append("-- Relay's roles for schema ")
        .append(s)
        .append(", generated from its grant catalog (dev.relay.internal.store.GrantCatalog):\n")
        .append("-- relay migrate --roles runs exactly this; --print-sql prints it. Run it as the")
        .append(" schema owner,\n-- after migrating; re-running it is safe and leaves exactly")
        .append(" these grants.\n");
    b.append("DO $roles$\nBEGIN\n");
    for (String role : roleNames) {
      b.append("    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '")
          .append(role)
          .append("') THEN\n        CREATE ROLE ")
          .append(role)
          .append(" NOLOGIN;\n    END IF;\n");
    }
    b.append("END\n$roles$;\n");
    b.append(
        "-- Start from nothing in this schema, so a privilege the catalog dropped goes too.\n");
    b.append("REVOKE ALL ON ALL TABLES IN SCHEMA ").append(s).append(" FROM ").append(all);
    b.append(";\n");
    b.append("REVOKE ALL ON ALL FUNCTIONS IN SCHEMA ").append(s).append(" FROM ").append(all);
    b.append(";\n");
    b.append("GRANT USAGE ON SCHEMA ").append(s).append(" TO ").append(all).append(";\n");
    b.append("-- The scheduler enqueues its slots as a producer.\n");
    b.append("GRANT ")
        .append(Role.PRODUCER.of(schema))
        .append(" TO ")
        .append(Role.SCHEDULER.of(schema))
        .append(";\n");
    for (Table t : TABLES) {
      b.append('\n').append(comment(t.name() + ": " + t.why()));
      // one GRANT per role, its privileges in catalog order
      Map<Role, List<Grant>> byRole = new LinkedHashMap<>();
      for (Grant grant : t.grants()) {
        byRole.computeIfAbsent(grant.role(), r -> new ArrayList<>()).add(grant);
      }
      byRole.forEach(
          (role, grants) ->
              b.append(
                  wrapped(
                      "GRANT "
                          + grants.stream().map(Grant::clause).collect(Collectors.joining(", "))
                          + " ON "
                          + s
                          + '.'
                          + t.name()
                          + " TO "
                          + role.of(schema)
                          + ";")));
    }
    b.append('\n');
    for (Function f : FUNCTIONS) {
      b.append(comment(f.signature() + ": " + f.why()));
      for (Role role : f.execute()) {
        b.append(
            wrapped(
                "GRANT EXECUTE ON FUNCTION "
                    + s
                    + '.'
                    + f.signature()
                    + " TO "
                    + role.of(schema)
                    + ";"));
      }
    }
    return b.toString();
  }

  /** {@code text} as SQL comment lines of at most 100 characters. */
  private static String comment(String text) {
    StringBuilder out = new StringBuilder();
    StringBuilder line = new StringBuilder("--");
    for (String word : text.split(" ")) {
      if (line.length() + 1 + word.length() > 100 && line.length() > 2) {
        out.append(line).append('\n');
        line = new StringBuilder("--");
      }
      line.append(' ').append(word);
    }
    return out.append(line).append('\n').toString();
  }

  /** {@code statement} broken after commas into lines of at most 100 characters, and a newline. */
  private static String wrapped(String statement) {
    StringBuilder out = new StringBuilder();
    int lineStart = 0;
    int lastBreak = -1;
    for (int i = 0; i < statement.length(); i++) {
      if (statement.charAt(i) == ',' && i + 1 < statement.length()) {
        lastBreak = i + 1;
      }
      if (i - lineStart >= 100 && lastBreak > lineStart) {
        out.append(statement, lineStart, lastBreak).append("\n    ");
        lineStart = lastBreak + 1; // skip the space after the comma
        lastBreak = -1;
      }
    }
    return out.append(statement, lineStart, statement.length()).append('\n').toString();
  }
}
