package dev.relay.faults;

import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Checks Relay's invariants over the final database (Relay's tables and the receiver's) and the
 * producer's history, after recovery. Each invariant gets a verdict with the first few
 * counter-examples; the figures say how much the run exercised.
 */
final class Checker {
  /** The invariants, in report order. */
  enum Invariant {
    COMMITTED_DONE("every committed item is done (or failed with evidence), and stored once"),
    UNCERTAIN_ALL_OR_NOTHING("an uncertain producer transaction is wholly present or absent"),
    ROLLED_BACK_NEVER_DELIVERED("no rolled-back or aborted item was stored or delivered"),
    INBOX_EXACTLY_ONCE("effects behind the inbox: exactly one per committed item"),
    RAW_REPEATS_EXPLAINED("every raw repeat is explained by the attempt history"),
    NO_LOWER_GENERATION_OUTCOME("no outcome recorded by a generation below the last claim's"),
    KEYED_IN_SEQUENCE("keyed items applied in sequence, each once"),
    FENCE_MONOTONIC("the fenced resource never accepted a lower token after a higher one"),
    NO_EXPIRED_RUNNING("nothing remains running with an expired lease after recovery"),
    REDRIVE_PAST_HORIZON_AUDITED(
        "no redrive past the horizon, nor rerun of failed work, without an audit saying so"),
    NO_RUN_PAST_HORIZON("no work ran after its deadline or deduplication horizon passed"),
    CANCELLED_STAYS_CANCELLED("a cancelled row never becomes done nor runs again unredriven"),
    TOMBSTONE_HOLDS("no purged ID reused: not stored again, another payload refused"),
    OPERATOR_AUDITED("every operator action audited once under its tag, refusals not at all"),
    RECOVERY_PROGRESSES("recovery kept finishing work until none was open (not stuck)");

    final String text;

    Invariant(String text) {
      this.text = text;
    }
  }

  /** The figures and verdicts of one run. */
  record Result(
      Map<String, Long> figures,
      Map<Scenario.Fault, Integer> faults,
      Map<Invariant, List<String>> violations,
      Recovery.Report recovery) {
    boolean ok() {
      return violations.values().stream().allMatch(List::isEmpty);
    }

    boolean violated(Invariant i) {
      return !violations.get(i).isEmpty();
    }

    void print(PrintStream out) {
      if (recovery != null) {
        out.println("== " + recovery.summary());
        recovery.holding().forEach(l -> out.println("  " + l));
      }
      out.println("== figures");
      figures.forEach((k, v) -> out.printf("  %-40s %d%n", k, v));
      out.println("== faults injected");
      faults.forEach((k, v) -> out.printf("  %-40s %d%n", k.name().toLowerCase(), v));
      out.println("== invariants");
      violations.forEach(
          (inv, list) -> {
            out.printf(
                "  %-4s %-28s %s%n",
                list.isEmpty() ? "ok" : "FAIL", inv.name().toLowerCase(), inv.text);
            list.stream().limit(5).forEach(v -> out.println("         - " + v));
            if (list.size() > 5) {
              out.println("         ... " + (list.size() - 5) + " more");
            }
          });
      out.println(ok() ? "VERDICT: all invariants hold" : "VERDICT: VIOLATIONS FOUND");
    }
  }

  private record Row(
      String workId,
      String state,
      long generation,
      Long resultGeneration,
      String lastErrorKind,
      String key,
      Long sequence,
      boolean expiredRunning,
      OperatorInvariants.RowTimes times) {}

  /** The item's final state: its row's, else its tombstone's (purged), else null (missing). */
  private static String finalState(Row row, OperatorInvariants.Tombstone tombstone) {
    return row != null ? row.state() : tombstone != null ? tombstone.finalState() : null;
  }

  /**
   * What the harness recorded besides the database.
   *
   * @param txs the producer's transactions
   * @param reuses the producer's enqueues of purged IDs
   * @param actions the operator's actions
   * @param recovery how the recovery wait ended, or {@code null} when there was none
   */
  record History(
      List<Producer.Tx> txs,
      List<Producer.Reuse> reuses,
      List<Operator.Action> actions,
      Recovery.Report recovery) {}

  private final Connection c;
  private final Connection receiver;
  private final List<Producer.Tx> txs;
  private final History history;
  private final Map<Scenario.Fault, Integer> faults;

  /**
   * @param c Relay's database (and the producer's business rows)
   * @param receiver the receiver's database ({@code fx} tables but {@code fx.business}); {@code c}
   *     itself unless the receiver runs on a server of its own
   */
  Checker(Connection c, Connection receiver, History history, Map<Scenario.Fault, Integer> faults) {
    this.c = c;
    this.receiver = receiver;
    this.txs = history.txs();
    this.history = history;
    this.faults = faults;
  }

  Result check() throws SQLException {
    Map<Invariant, List<String>> v = new LinkedHashMap<>();
    for (Invariant i : Invariant.values()) {
      v.put(i, new ArrayList<>());
    }
    // The work view: unfinished work and what older writers finished stay in the work table, what
    // a worker completed or cancelled moved to the history table. An ID in both is a broken move.
    Map<String, Row> rows = new HashMap<>();
    query(
        "SELECT work_id, state, claim_generation, (result->>'generation')::bigint, last_error_kind,"
            + " ordering_key, sequence, state = 'running' AND lease_until <= clock_timestamp(),"
            + MICROS.formatted("first_attempt_at")
            + ", "
            + MICROS.formatted("horizon_start")
            + ", "
            + MICROS.formatted("deadline")
            + ", "
            + MICROS.formatted("claimed_at")
            + " FROM relay.work",
        r -> {
          Long rg = r.getObject(4) == null ? null : r.getLong(4);
          Long seq = r.getObject(7) == null ? null : r.getLong(7);
          OperatorInvariants.RowTimes times =
              new OperatorInvariants.RowTimes(
                  r.getString(2),
                  r.getLong(3),
                  micros(r, 9),
                  micros(r, 10),
                  micros(r, 11),
                  micros(r, 12));
          Row previous =
              rows.put(
                  r.getString(1),
                  new Row(
                      r.getString(1),
                      r.getString(2),
                      r.getLong(3),
                      rg,
                      r.getString(5),
                      r.getString(6),
                      seq,
                      r.getBoolean(8),
                      times));
          if (previous != null) {
            v.get(Invariant.COMMITTED_DONE)
                .add(
                    r.getString(1)
                        + ": stored twice (work table and history), "
                        + previous.state()
                        + " and "
                        + r.getString(2));
          }
        });
    Map<String, List<Long>> raw = new HashMap<>();
    List<OperatorInvariants.RawCall> calls = new ArrayList<>();
    queryReceiver(
        "SELECT work_id, generation, "
            + MICROS.formatted("claimed_at")
            + " FROM fx.raw_effect ORDER BY id",
        r -> {
          raw.computeIfAbsent(r.getString(1), k -> new ArrayList<>()).add(r.getLong(2));
          calls.add(new OperatorInvariants.RawCall(r.getString(1), r.getLong(2), micros(r, 3)));
        });
    Map<String, Long> inbox = new HashMap<>();
    queryReceiver(
        "SELECT work_id, count(*) FROM fx.inbox_effect GROUP BY work_id",
        r -> inbox.put(r.getString(1), r.getLong(2)));
    Map<String, Map<Long, Set<String>>> attempts = new HashMap<>();
    Map<String, Map<Long, Long>> attemptClaims = new HashMap<>();
    Map<String, Long> endings = new TreeMap<>();
    query(
        "SELECT work_id, generation, ending, "
            + MICROS.formatted("claimed_at")
            + ", error_kind FROM relay.attempt",
        r -> {
          attempts
              .computeIfAbsent(r.getString(1), k -> new HashMap<>())
              .computeIfAbsent(r.getLong(2), k -> new HashSet<>())
              .add(r.getString(3));
          Long at = micros(r, 4);
          if (at != null) {
            attemptClaims
                .computeIfAbsent(r.getString(1), k -> new HashMap<>())
                .put(r.getLong(2), at);
          }
          String ending = r.getString(3);
          if (r.getString(5) != null && ending.equals("failed")) {
            ending += " (" + r.getString(5) + ")";
          }
          endings.merge(ending, 1L, Long::sum);
        });
    Set<String> business = new HashSet<>();
    query("SELECT tx_id FROM fx.business", r -> business.add(r.getString(1)));

    Map<String, Long> figures = new LinkedHashMap<>();
    Map<String, OperatorInvariants.RowTimes> times = new HashMap<>();
    rows.forEach((id, row) -> times.put(id, row.times()));
    OperatorInvariants ops =
        new OperatorInvariants(
            times, calls, attempts, attemptClaims, history.actions(), history.reuses(), v, figures);
    ops.check(c);
    Map<String, OperatorInvariants.Tombstone> tombstones = ops.tombstones();
    Set<String> cancelAudited = new HashSet<>();
    ops.cancels().forEach(k -> cancelAudited.add(k.workId()));
    Map<String, Set<Long>> redrivenFrom = new HashMap<>();
    ops.redrives()
        .forEach(
            d ->
                redrivenFrom
                    .computeIfAbsent(d.workId(), k -> new HashSet<>())
                    .add(d.fromGeneration()));
    Set<String> expected = new HashSet<>(); // committed, or uncertain and present
    long uncertainPresent = 0;
    long uncertainAbsent = 0;
    for (Producer.Tx tx : txs) {
      long present =
          tx.workIds().stream()
              .filter(id -> rows.containsKey(id) || tombstones.containsKey(id))
              .count();
      figures.merge("transactions " + tx.status().name().toLowerCase(), 1L, Long::sum);
      switch (tx.status()) {
        case COMMITTED -> {
          expected.addAll(tx.workIds());
          if (!business.contains(tx.id())) {
            v.get(Invariant.COMMITTED_DONE).add(tx.id() + ": committed, business row missing");
          }
        }
        case UNCERTAIN -> {
          boolean b = business.contains(tx.id());
          if ((present != 0 && present != tx.workIds().size())
              || (b != (present == tx.workIds().size()))) {
            v.get(Invariant.UNCERTAIN_ALL_OR_NOTHING)
                .add(
                    tx.id() + ": " + present + "/" + tx.workIds().size() + " items, business " + b);
          }
          if (present > 0) {
            uncertainPresent++;
            expected.addAll(tx.workIds());
          } else {
            uncertainAbsent++;
          }
        }
        default -> {
          for (String id : tx.workIds()) {
            if (rows.containsKey(id)
                || tombstones.containsKey(id)
                || raw.containsKey(id)
                || inbox.containsKey(id)) {
              v.get(Invariant.ROLLED_BACK_NEVER_DELIVERED)
                  .add(id + " of " + tx.status().name().toLowerCase() + " " + tx.id());
            }
          }
          if (business.contains(tx.id())) {
            v.get(Invariant.ROLLED_BACK_NEVER_DELIVERED).add(tx.id() + ": business row present");
          }
        }
      }
    }
    figures.put("uncertain transactions found committed", uncertainPresent);
    figures.put("uncertain transactions found absent", uncertainAbsent);
    // The operator's replacements are committed work too (uncertain ones if they were stored).
    for (Operator.Action a : history.actions()) {
      if (a.op() == Operator.Op.SUPERSEDE
          && (a.status() == Operator.Status.OK
              || a.status() == Operator.Status.UNCERTAIN
                  && (rows.containsKey(a.newWorkId()) || tombstones.containsKey(a.newWorkId())))) {
        expected.add(a.newWorkId());
      }
    }
    figures.put("items committed", (long) expected.size());
    if (expected.isEmpty()) {
      v.get(Invariant.COMMITTED_DONE).add("nothing was committed: the run exercised nothing");
    }

    long failedWithEvidence = 0;
    long done = 0;
    long cancelledByOperator = 0;
    long purged = 0;
    for (String id : expected) {
      Row row = rows.get(id);
      String state = finalState(row, tombstones.get(id));
      if (state == null) {
        v.get(Invariant.COMMITTED_DONE).add(id + ": committed but missing");
        continue;
      }
      if (row == null) {
        purged++;
      }
      if (state.equals("done")) {
        done++;
      } else if (row != null
          && state.equals("failed")
          && row.lastErrorKind() != null
          && (attempts.containsKey(id) || row.lastErrorKind().equals("deadline"))) {
        failedWithEvidence++;
      } else if (state.equals("cancelled") && cancelAudited.contains(id)) {
        cancelledByOperator++;
      } else {
        v.get(Invariant.COMMITTED_DONE).add(id + ": " + state + (row == null ? " (purged)" : ""));
      }
      long effects = inbox.getOrDefault(id, 0L);
      if (state.equals("done") ? effects != 1 : effects > 1) {
        v.get(Invariant.INBOX_EXACTLY_ONCE).add(id + ": " + effects + " effects, " + state);
      }
    }
    for (String id : inbox.keySet()) {
      if (!expected.contains(id)) {
        v.get(Invariant.INBOX_EXACTLY_ONCE).add(id + ": effect for an item never committed");
      }
    }
    figures.put("items done", done);
    figures.put("items failed with evidence", failedWithEvidence);
    figures.put("items cancelled by the operator (audited)", cancelledByOperator);
    figures.put("items purged (tombstone)", purged);

    long rawTotal = 0;
    long repeats = 0;
    for (Map.Entry<String, List<Long>> e : raw.entrySet()) {
      String id = e.getKey();
      List<Long> gens = e.getValue();
      rawTotal += gens.size();
      repeats += gens.size() - 1;
      Row row = rows.get(id);
      Long last =
          row != null
              ? Long.valueOf(row.generation())
              : tombstones.containsKey(id) ? tombstones.get(id).lastGeneration() : null;
      Set<Long> seen = new HashSet<>();
      for (long g : gens) {
        String why = null;
        if (!seen.add(g)) {
          why = "two calls under generation " + g;
        } else if (last == null || g > last) {
          why = "call under generation " + g + " beyond the row's";
        } else if (g < last
            && !explained(attempts, id, g)
            && !redrivenFrom.getOrDefault(id, Set.of()).contains(g)) {
          why = "call under generation " + g + " with no attempt record that explains it";
        }
        if (why != null) {
          v.get(Invariant.RAW_REPEATS_EXPLAINED).add(id + ": " + why);
        }
      }
    }
    figures.put("raw receiver calls", rawTotal);
    figures.put("raw repeats", repeats);
    figures.put(
        "effects behind the inbox", inbox.values().stream().mapToLong(Long::longValue).sum());
    figures.put(
        "raw calls without a new effect (inbox repeat or held)",
        rawTotal - inbox.values().stream().mapToLong(Long::longValue).sum());

    for (Row row : rows.values()) {
      if (row.state().equals("done")
          && (row.resultGeneration() == null || row.resultGeneration() != row.generation())) {
        v.get(Invariant.NO_LOWER_GENERATION_OUTCOME)
            .add(
                row.workId()
                    + ": done by generation "
                    + row.resultGeneration()
                    + ", last claim "
                    + row.generation());
      }
      if (row.expiredRunning()) {
        v.get(Invariant.NO_EXPIRED_RUNNING).add(row.workId() + ": running, lease expired");
      }
    }
    endings.forEach((k, n) -> figures.put("attempt history: " + k, n));
    figures.put("stale writes refused", endings.getOrDefault("stale_write", 0L));

    // Keyed order: per key, the receiver applied each committed sequence once, ascending.
    Map<String, List<Long>> applied = new HashMap<>();
    queryReceiver(
        "SELECT ordering_key, sequence FROM fx.applied_order ORDER BY id",
        r -> applied.computeIfAbsent(r.getString(1), k -> new ArrayList<>()).add(r.getLong(2)));
    Set<String> appliedIds = new HashSet<>();
    Map<String, String[]> appliedPurged = new HashMap<>(); // purged work ID -> key, sequence
    queryReceiver(
        "SELECT ordering_key, sequence, work_id FROM fx.applied_order",
        r -> {
          appliedIds.add(r.getString(3));
          if (tombstones.containsKey(r.getString(3))) {
            appliedPurged.put(r.getString(3), new String[] {r.getString(1), r.getString(2)});
          }
        });
    // Per key: the sequences of done items, and of items that ended otherwise (cancelled while
    // running, failed after a lost lease) or were purged but whose effect the receiver applied.
    Map<String, List<Long>> committedKeys = new TreeMap<>();
    for (String id : expected) {
      Row row = rows.get(id);
      if (row != null
          && row.key() != null
          && (row.state().equals("done") || appliedIds.contains(id))) {
        committedKeys.computeIfAbsent(row.key(), k -> new ArrayList<>()).add(row.sequence());
      } else if (row == null && appliedPurged.containsKey(id)) {
        String[] ks = appliedPurged.get(id);
        committedKeys.computeIfAbsent(ks[0], k -> new ArrayList<>()).add(Long.parseLong(ks[1]));
      }
    }
    long keyedApplied = 0;
    for (Map.Entry<String, List<Long>> e : committedKeys.entrySet()) {
      List<Long> want = new ArrayList<>(e.getValue());
      want.sort(null);
      List<Long> got = applied.getOrDefault(e.getKey(), List.of());
      keyedApplied += got.size();
      if (!got.equals(want)) {
        v.get(Invariant.KEYED_IN_SEQUENCE)
            .add(e.getKey() + ": applied " + abbreviate(got) + ", expected " + abbreviate(want));
      }
    }
    // A first delivery behind the key's position is what strict history exists to refuse. It is a
    // violation unless the item ended cancelled: then a stale holder (its lease expired, the item
    // ended cancelled at the takeover, the key moved on) delivered late, and the receiver
    // correctly applied nothing. Any other final state means the sender let the key run ahead.
    long staleCancelledRefused = 0;
    List<String[]> anomalies = new ArrayList<>();
    queryReceiver(
        "SELECT work_id, what FROM fx.anomaly ORDER BY work_id",
        r -> anomalies.add(new String[] {r.getString(1), r.getString(2)}));
    for (String[] a : anomalies) {
      String state = finalState(rows.get(a[0]), tombstones.get(a[0]));
      if ("cancelled".equals(state)) {
        staleCancelledRefused++;
      } else {
        v.get(Invariant.KEYED_IN_SEQUENCE)
            .add(a[0] + ": " + a[1] + ", ended " + (state == null ? "missing" : state));
      }
    }
    figures.put("keyed items applied", keyedApplied);
    figures.put("late deliveries of cancelled keyed items refused", staleCancelledRefused);

    Map<String, Long> highest = new HashMap<>();
    queryReceiver(
        "SELECT resource, token, work_id FROM fx.fenced_write ORDER BY id",
        r -> {
          long before = highest.getOrDefault(r.getString(1), 0L);
          if (r.getLong(2) < before) {
            v.get(Invariant.FENCE_MONOTONIC)
                .add(r.getString(1) + ": token " + r.getLong(2) + " after " + before);
          }
          highest.put(r.getString(1), Math.max(before, r.getLong(2)));
        });
    queryReceiver(
        "SELECT count(*) FROM fx.fence_refused",
        r -> figures.put("fenced writes refused (lower token)", r.getLong(1)));
    Recovery.Report recovery = history.recovery();
    if (recovery != null && recovery.verdict() == Recovery.Verdict.STUCK) {
      v.get(Invariant.RECOVERY_PROGRESSES).add(recovery.summary());
      v.get(Invariant.RECOVERY_PROGRESSES).addAll(recovery.holding());
    }
    return new Result(figures, faults, v, recovery);
  }

  /** A timestamp column in microseconds since the epoch (null stays null). */
  private static final String MICROS = "(extract(epoch FROM %1$s) * 1000000)::bigint";

  private static Long micros(ResultSet r, int column) throws SQLException {
    return r.getObject(column) == null ? null : r.getLong(column);
  }

  /**
   * An earlier generation's call is explained by an attempt record of that generation that says the
   * attempt ran and ended other than in plain success: a lease expiry (crash or pause), a retry
   * (unknown outcome, or a held keyed item), a refused stale write, a failure or a cancellation. A
   * release is not: a released claim never started its handler.
   */
  private static boolean explained(
      Map<String, Map<Long, Set<String>>> attempts, String id, long g) {
    Set<String> endings = attempts.getOrDefault(id, Map.of()).getOrDefault(g, Set.of());
    return endings.stream().anyMatch(e -> !e.equals("released"));
  }

  private static String abbreviate(List<Long> l) {
    return l.size() <= 12 ? l.toString() : l.subList(0, 12) + "...(" + l.size() + ")";
  }

  private interface RowHandler {
    void row(ResultSet r) throws SQLException;
  }

  private void query(String sql, RowHandler h) throws SQLException {
    query(c, sql, h);
  }

  /** A query on the receiver's tables. */
  private void queryReceiver(String sql, RowHandler h) throws SQLException {
    query(receiver, sql, h);
  }

  private static void query(Connection on, String sql, RowHandler h) throws SQLException {
    try (Statement s = on.createStatement();
        ResultSet r = s.executeQuery(sql)) {
      while (r.next()) {
        h.row(r);
      }
    }
  }
}
