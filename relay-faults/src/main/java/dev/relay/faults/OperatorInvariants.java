package dev.relay.faults;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The invariants about what operators do, checked over Relay's audit tables, tombstones and rows,
 * the receiver's raw calls, the operator's history and the producer's reuse of purged IDs. Each
 * method adds counter-examples to its invariant's list; {@link Checker} reports them with the
 * others.
 *
 * <p>Times are the database clock's, in microseconds, compared only with each other. Where Relay
 * decides on one sample of the clock and records another a little later in the same statement (a
 * claim's cap test and its {@code claimed_at}, a redrive's horizon test and its audit row), the
 * checks allow {@link #TOLERANCE_MICROS}: a violation is a claim or redrive more than that past its
 * limit.
 */
final class OperatorInvariants {
  /** Slack between two samples of the database clock in one statement or transaction. */
  static final long TOLERANCE_MICROS = 2_000_000;

  private static final Pattern TAG = Pattern.compile("op#(\\d+)");

  /** What the checker knows of one stored row, in microseconds of the database clock. */
  record RowTimes(
      String state,
      long generation,
      Long firstAttemptAt,
      Long horizonStart,
      Long deadline,
      Long claimedAt) {}

  /** One receiver call: its work, generation and claim time (null when unknown). */
  record RawCall(String workId, long generation, Long claimedAt) {}

  /** One row of {@code redrive_audit}. */
  record Redrive(
      String workId, long at, String fromState, long fromGeneration, boolean forced, String tag) {}

  /** One row of {@code cancel_audit}. */
  record Cancel(String workId, long at, Long fromGeneration, String result, String tag) {}

  /** One tombstone, with whether a stored row under its ID has the same payload digest. */
  record Tombstone(String workId, long lastGeneration, String finalState, long purgedAt) {}

  private final Map<String, RowTimes> rows;
  private final List<RawCall> calls;
  private final Map<String, Map<Long, Set<String>>> attempts;
  private final Map<String, Map<Long, Long>> attemptClaims;
  private final List<Operator.Action> actions;
  private final List<Producer.Reuse> reuses;
  private final Map<Checker.Invariant, List<String>> v;
  private final Map<String, Long> figures;
  private final List<Redrive> redrives = new ArrayList<>();
  private final List<Cancel> cancels = new ArrayList<>();
  private final Map<String, Tombstone> tombstones = new HashMap<>();
  private final Map<String, Boolean> reusedRows = new HashMap<>(); // ID -> same digest
  private final List<String> unheld = new ArrayList<>(); // finished, without a tombstone
  private final Map<String, List<String>> auditsByTag = new HashMap<>(); // tag -> "table work"
  private final List<Long> purgeAudits = new ArrayList<>();
  private final Map<String, List<Long>> horizonResets = new HashMap<>();
  private Long horizon;

  OperatorInvariants(
      Map<String, RowTimes> rows,
      List<RawCall> calls,
      Map<String, Map<Long, Set<String>>> attempts,
      Map<String, Map<Long, Long>> attemptClaims,
      List<Operator.Action> actions,
      List<Producer.Reuse> reuses,
      Map<Checker.Invariant, List<String>> violations,
      Map<String, Long> figures) {
    this.rows = rows;
    this.calls = calls;
    this.attempts = attempts;
    this.attemptClaims = attemptClaims;
    this.actions = actions;
    this.reuses = reuses;
    this.v = violations;
    this.figures = figures;
  }

  static final String REDRIVES =
      """
      SELECT work_id, (extract(epoch FROM redriven_at) * 1000000)::bigint, from_state,
             from_generation, forced, reason
        FROM relay.redrive_audit ORDER BY id
      """;
  static final String CANCELS =
      """
      SELECT work_id, (extract(epoch FROM requested_at) * 1000000)::bigint, from_generation,
             result, reason
        FROM relay.cancel_audit ORDER BY id
      """;
  static final String TOMBSTONES =
      """
      SELECT work_id, last_generation, final_state,
             (extract(epoch FROM purged_at) * 1000000)::bigint
        FROM relay.tombstone
      """;
  // The work view: a purged ID stored again counts wherever its row is, unfinished or finished.
  // A finished row in the history table carries the tombstone its move wrote (same completion
  // time and generation): only another tombstone, older than the row, says it was purged first.
  static final String REUSED_ROWS =
      """
      SELECT o.work_id, relay.payload_digest(o.payload) = t.payload_digest
        FROM relay.outbox o JOIN relay.tombstone t ON t.work_id = o.work_id
      UNION ALL
      SELECT h.work_id, relay.payload_digest(h.payload) = t.payload_digest
        FROM relay.work_history h JOIN relay.tombstone t ON t.work_id = h.work_id
       WHERE t.purged_at <> h.completed_at OR t.last_generation <> h.claim_generation
      """;
  // Finished work whose ID no tombstone holds: enqueue would take the ID again.
  static final String UNHELD_FINISHED =
      """
      SELECT h.work_id FROM relay.work_history h
       WHERE NOT EXISTS (SELECT 1 FROM relay.tombstone t WHERE t.work_id = h.work_id)
      """;
  static final String HORIZON =
      "SELECT (extract(epoch FROM dedup_horizon) * 1000000)::bigint FROM relay.kind WHERE kind = '"
          + WorkerMain.KIND
          + "'";
  static final String OTHER_AUDITS =
      """
      SELECT 'supersedes', work_id, reason FROM relay.supersedes
      UNION ALL SELECT 'pause_audit', coalesce(queue, '*') || '/' || coalesce(kind, '*'), reason
        FROM relay.pause_audit
      UNION ALL SELECT 'purge_audit', CASE WHEN dry_run THEN 'dry run' ELSE 'purge' END, reason
        FROM relay.purge_audit
      """;
  static final String PURGE_AUDITS =
      """
      SELECT (extract(epoch FROM requested_at) * 1000000)::bigint FROM relay.purge_audit
       WHERE NOT dry_run
      """;

  /** Reads the audit tables and tombstones, then checks every operator invariant. */
  void check(Connection c) throws SQLException {
    load(c);
    redrivePastHorizonAudited();
    noRunPastHorizon();
    cancelledStaysCancelled();
    tombstoneHolds();
    operatorAudited();
  }

  private void load(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      try (ResultSet r = s.executeQuery(REDRIVES)) {
        while (r.next()) {
          Redrive d =
              new Redrive(
                  r.getString(1),
                  r.getLong(2),
                  r.getString(3),
                  r.getLong(4),
                  r.getBoolean(5),
                  tag(r.getString(6)));
          redrives.add(d);
          audit(d.tag(), "redrive_audit " + d.workId());
        }
      }
      try (ResultSet r = s.executeQuery(CANCELS)) {
        while (r.next()) {
          Long g = r.getObject(3) == null ? null : r.getLong(3);
          Cancel k =
              new Cancel(r.getString(1), r.getLong(2), g, r.getString(4), tag(r.getString(5)));
          cancels.add(k);
          audit(k.tag(), "cancel_audit " + k.workId());
        }
      }
      try (ResultSet r = s.executeQuery(OTHER_AUDITS)) {
        while (r.next()) {
          audit(tag(r.getString(3)), r.getString(1) + " " + r.getString(2));
        }
      }
      try (ResultSet r = s.executeQuery(PURGE_AUDITS)) {
        while (r.next()) {
          purgeAudits.add(r.getLong(1));
        }
      }
      try (ResultSet r = s.executeQuery(TOMBSTONES)) {
        while (r.next()) {
          tombstones.put(
              r.getString(1),
              new Tombstone(r.getString(1), r.getLong(2), r.getString(3), r.getLong(4)));
        }
      }
      try (ResultSet r = s.executeQuery(REUSED_ROWS)) {
        while (r.next()) {
          reusedRows.put(r.getString(1), r.getBoolean(2));
        }
      }
      try (ResultSet r = s.executeQuery(UNHELD_FINISHED)) {
        while (r.next()) {
          unheld.add(r.getString(1));
        }
      }
      try (ResultSet r = s.executeQuery(HORIZON)) {
        horizon = r.next() ? r.getLong(1) : null;
      }
    }
  }

  private void audit(String tag, String where) {
    if (tag != null) {
      auditsByTag.computeIfAbsent(tag, k -> new ArrayList<>()).add(where);
    }
  }

  private static String tag(String reason) {
    Matcher m = TAG.matcher(reason == null ? "" : reason);
    return m.find() ? "op#" + m.group(1) : null;
  }

  Map<String, Tombstone> tombstones() {
    return tombstones;
  }

  List<Redrive> redrives() {
    return redrives;
  }

  List<Cancel> cancels() {
    return cancels;
  }

  /**
   * No redrive past the deduplication horizon without the audited override, and no rerun of failed
   * work without an audited redrive. Walks each item's redrive audit in order from its first
   * attempt: a redrive later than the horizon in force (by more than the tolerance) must be
   * recorded as forced, and starts a new horizon; a stored {@code horizon_start} must match such a
   * redrive. A generation that ended failed (attempt history) followed by a later claim needs a
   * redrive audited from that generation or later.
   */
  private void redrivePastHorizonAudited() {
    List<String> out = v.get(Checker.Invariant.REDRIVE_PAST_HORIZON_AUDITED);
    Map<String, List<Redrive>> byWork = new HashMap<>();
    for (Redrive d : redrives) {
      byWork.computeIfAbsent(d.workId(), k -> new ArrayList<>()).add(d);
    }
    long past = 0;
    for (Map.Entry<String, List<Redrive>> e : byWork.entrySet()) {
      RowTimes row = rows.get(e.getKey());
      if (row == null || row.firstAttemptAt() == null || horizon == null || horizon == 0) {
        continue;
      }
      long start = row.firstAttemptAt();
      List<Long> resets = new ArrayList<>();
      for (Redrive d : e.getValue()) {
        if (d.at() > start + horizon) {
          if (d.forced()) {
            past++;
            start = d.at();
            resets.add(d.at());
          } else if (d.at() > start + horizon + TOLERANCE_MICROS) {
            out.add(
                d.workId()
                    + ": redriven ("
                    + d.tag()
                    + ") "
                    + seconds(d.at() - start - horizon)
                    + " past its horizon without the override");
          }
        }
      }
      horizonResets.put(e.getKey(), resets);
      if (row.horizonStart() != null
          && resets.stream().noneMatch(r -> Math.abs(r - row.horizonStart()) <= TOLERANCE_MICROS)) {
        out.add(e.getKey() + ": horizon restarted with no audited override redrive at that time");
      }
    }
    for (Map.Entry<String, RowTimes> e : rows.entrySet()) {
      if (e.getValue().horizonStart() != null && !byWork.containsKey(e.getKey())) {
        out.add(e.getKey() + ": horizon restarted, yet no redrive of it is audited");
      }
    }
    figures.put("redrives past the horizon (audited override)", past);
    // A failed generation that was claimed again needs an audited redrive from it.
    Map<String, Long> lastCall = new HashMap<>();
    for (RawCall call : calls) {
      lastCall.merge(call.workId(), call.generation(), Math::max);
    }
    for (Map.Entry<String, Map<Long, Set<String>>> e : attempts.entrySet()) {
      String id = e.getKey();
      RowTimes row = rows.get(id);
      long latest = Math.max(row == null ? 0 : row.generation(), lastCall.getOrDefault(id, 0L));
      for (Map.Entry<Long, Set<String>> g : e.getValue().entrySet()) {
        if (g.getValue().contains("failed")
            && latest > g.getKey()
            && ranAfter(id, g.getKey())
            && byWork.getOrDefault(id, List.of()).stream()
                .noneMatch(d -> d.fromGeneration() >= g.getKey())) {
          out.add(
              id + ": failed at generation " + g.getKey() + ", ran again with no audited redrive");
        }
      }
    }
  }

  /** Whether a receiver call or a claim of a generation above {@code g} exists. */
  private boolean ranAfter(String id, long g) {
    for (RawCall call : calls) {
      if (call.workId().equals(id) && call.generation() > g) {
        return true;
      }
    }
    RowTimes row = rows.get(id);
    return row != null && row.generation() > g && row.claimedAt() != null;
  }

  /**
   * No work runs after its horizon passed: each receiver call's claim was made before the work's
   * business deadline and within the deduplication horizon in force (from the first attempt, or
   * from the last audited override redrive before the claim).
   */
  private void noRunPastHorizon() {
    List<String> out = v.get(Checker.Invariant.NO_RUN_PAST_HORIZON);
    long checked = 0;
    long unknown = 0;
    Set<String> reported = new HashSet<>();
    for (RawCall call : calls) {
      RowTimes row = rows.get(call.workId());
      Long at = call.claimedAt();
      if (at == null) {
        at = attemptClaims.getOrDefault(call.workId(), Map.of()).get(call.generation());
      }
      if (at == null && row != null && row.generation() == call.generation()) {
        at = row.claimedAt();
      }
      if (row == null || at == null) {
        unknown++;
        continue;
      }
      checked++;
      String key = call.workId() + "/" + call.generation();
      if (row.deadline() != null && at > row.deadline() + TOLERANCE_MICROS && reported.add(key)) {
        out.add(
            call.workId()
                + ": generation "
                + call.generation()
                + " claimed "
                + seconds(at - row.deadline())
                + " after its deadline, and it ran");
      }
      if (horizon != null && horizon > 0 && row.firstAttemptAt() != null) {
        long start = row.firstAttemptAt();
        for (long r : horizonResets.getOrDefault(call.workId(), List.of())) {
          if (r <= at) {
            start = Math.max(start, r);
          }
        }
        if (at > start + horizon + TOLERANCE_MICROS && reported.add(key)) {
          out.add(
              call.workId()
                  + ": generation "
                  + call.generation()
                  + " claimed "
                  + seconds(at - start - horizon)
                  + " after its deduplication horizon ended, and it ran");
        }
      }
    }
    figures.put("receiver calls checked against deadline and horizon", checked);
    figures.put("receiver calls whose claim time is unknown (purged or overwritten)", unknown);
  }

  /**
   * A cancelled row never becomes done, nor runs again, unless an audited redrive took it out of
   * {@code cancelled}: for every cancellation (a cancel that found the work ready or failed, or a
   * worker's answer to a cancel request), a done row or a receiver call under a later generation
   * needs a redrive from state {@code cancelled} at that generation or later.
   */
  private void cancelledStaysCancelled() {
    List<String> out = v.get(Checker.Invariant.CANCELLED_STAYS_CANCELLED);
    Map<String, Long> cancelledAt = new HashMap<>(); // lowest generation it was cancelled at
    for (Cancel k : cancels) {
      if (k.result().equals("cancelled") && k.fromGeneration() != null) {
        cancelledAt.merge(k.workId(), k.fromGeneration(), Math::min);
      }
    }
    attempts.forEach(
        (id, gens) ->
            gens.forEach(
                (g, endings) -> {
                  if (endings.contains("cancelled")) {
                    cancelledAt.merge(id, g, Math::min);
                  }
                }));
    long cancelled = 0;
    for (Map.Entry<String, Long> e : cancelledAt.entrySet()) {
      String id = e.getKey();
      long g = e.getValue();
      cancelled++;
      boolean redriven =
          redrives.stream()
              .anyMatch(
                  d ->
                      d.workId().equals(id)
                          && d.fromState().equals("cancelled")
                          && d.fromGeneration() >= g);
      if (redriven) {
        continue;
      }
      RowTimes row = rows.get(id);
      Tombstone t = tombstones.get(id);
      if ((row != null && row.state().equals("done"))
          || (row == null && t != null && t.finalState().equals("done"))) {
        out.add(id + ": cancelled at generation " + g + ", done now, never redriven");
      }
      for (RawCall call : calls) {
        if (call.workId().equals(id) && call.generation() > g) {
          out.add(
              id
                  + ": cancelled at generation "
                  + g
                  + ", the receiver was called under generation "
                  + call.generation());
          break;
        }
      }
    }
    figures.put("items cancelled (audited or answered)", cancelled);
  }

  /**
   * A purged ID stays purged: no stored row has an ID that a tombstone holds (equal payload: the
   * enqueue should have recognised it; another payload: a reuse), except finished work with the
   * tombstone its own move wrote; every finished row has one; and every enqueue of a purged ID with
   * another payload was refused as a conflict, with the same payload recognised.
   */
  private void tombstoneHolds() {
    List<String> out = v.get(Checker.Invariant.TOMBSTONE_HOLDS);
    reusedRows.forEach(
        (id, same) ->
            out.add(
                id
                    + ": stored again after its purge, "
                    + (same ? "same payload" : "with a DIFFERENT payload")));
    for (String id : unheld) {
      out.add(id + ": finished in the history table, but no tombstone holds its ID");
    }
    Map<String, Long> counts = new TreeMap<>();
    for (Producer.Reuse r : reuses) {
      counts.merge(
          "purged IDs enqueued again, "
              + (r.samePayload() ? "same payload: " : "other payload: ")
              + r.result().name().toLowerCase(java.util.Locale.ROOT),
          1L,
          Long::sum);
      boolean bad =
          r.samePayload()
              ? r.result() == Producer.ReuseResult.ENQUEUED
                  || r.result() == Producer.ReuseResult.CONFLICT
              : r.result() == Producer.ReuseResult.ENQUEUED
                  || r.result() == Producer.ReuseResult.ALREADY_ENQUEUED;
      if (bad) {
        out.add(
            r.workId()
                + ": purged, enqueued again with "
                + (r.samePayload() ? "its payload" : "another payload")
                + ": "
                + r.result().name().toLowerCase(java.util.Locale.ROOT));
      }
    }
    figures.put("tombstones", (long) tombstones.size());
    figures.putAll(counts);
  }

  /**
   * Every operator action that took effect is audited under its tag, once; a refused redrive or
   * supersede left no audit row; no audit row carries a tag the operator never used; and every
   * tombstone was written by a purge that has an audit row (unless a purge of the operator's ended
   * uncertain: its batches commit before its audit row, see docs/reliability.md).
   */
  private void operatorAudited() {
    List<String> out = v.get(Checker.Invariant.OPERATOR_AUDITED);
    Set<String> tags = new HashSet<>();
    Map<String, Long> counts = new TreeMap<>();
    boolean uncertainPurge = false;
    for (Operator.Action a : actions) {
      tags.add(a.tag());
      counts.merge(
          "operator "
              + a.op().name().toLowerCase(java.util.Locale.ROOT)
              + " "
              + a.status().name().toLowerCase(java.util.Locale.ROOT),
          1L,
          Long::sum);
      List<String> found = auditsByTag.getOrDefault(a.tag(), List.of());
      String want = expectedAudit(a);
      long matching = found.stream().filter(f -> f.startsWith(want)).count();
      switch (a.status()) {
        case OK -> {
          if (matching != 1) {
            out.add(
                a.tag()
                    + " "
                    + a.op()
                    + " "
                    + nullToEmpty(a.workId())
                    + ": "
                    + matching
                    + " audit rows ("
                    + want
                    + "), expected one; found "
                    + found);
          }
        }
        case REFUSED, NOT_SENT -> {
          if (!found.isEmpty()) {
            out.add(
                a.tag()
                    + " "
                    + a.op()
                    + " "
                    + a.status().name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ')
                    + " ("
                    + a.detail()
                    + ") but audited: "
                    + found);
          }
        }
        case UNCERTAIN -> {
          if (matching > 1) {
            out.add(a.tag() + " " + a.op() + ": " + matching + " audit rows for one call");
          }
          uncertainPurge |= a.op() == Operator.Op.PURGE;
        }
      }
    }
    figures.putAll(counts);
    auditsByTag.forEach(
        (tag, where) -> {
          if (!tags.contains(tag)) {
            out.add(tag + ": audited (" + where + ") but the operator never took that action");
          }
        });
    long unaudited = 0;
    for (Tombstone t : tombstones.values()) {
      if (rows.containsKey(t.workId())) {
        // finished work in the history table: the tombstone is its move's, not a purge's (a
        // purged ID stored again is TOMBSTONE_HOLDS's)
        continue;
      }
      boolean covered = purgeAudits.stream().anyMatch(at -> at + TOLERANCE_MICROS >= t.purgedAt());
      if (!covered) {
        unaudited++;
        if (!uncertainPurge) {
          out.add(t.workId() + ": purged with no purge audit row at or after it");
        }
      }
    }
    figures.put("tombstones not covered by a purge audit (an uncertain purge's)", unaudited);
  }

  private static String expectedAudit(Operator.Action a) {
    return switch (a.op()) {
      case REDRIVE, REDRIVE_OVERRIDE -> "redrive_audit " + a.workId();
      case CANCEL -> "cancel_audit " + a.workId();
      case SUPERSEDE -> "supersedes " + a.newWorkId();
      case PAUSE, RESUME -> "pause_audit ";
      case PURGE -> "purge_audit purge";
      case PURGE_DRY_RUN -> "purge_audit dry run";
    };
  }

  private static String nullToEmpty(String s) {
    return s == null ? "" : s;
  }

  private static String seconds(long micros) {
    return String.format(java.util.Locale.ROOT, "%.1f s", micros / 1_000_000.0);
  }
}
