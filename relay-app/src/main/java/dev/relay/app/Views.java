package dev.relay.app;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.relay.admin.WorkDetail;
import dev.relay.admin.WorkItem;
import java.io.PrintWriter;
import java.time.Instant;

/** How work items and their details print, as JSON and as text. */
final class Views {
  private Views() {}

  static ObjectNode item(WorkItem w) {
    ObjectNode o = Json.object();
    o.put("work_id", w.workId());
    o.put("kind", w.kind());
    o.put("queue", w.queue());
    o.put("state", w.state());
    o.put("priority", w.priority());
    o.put("generation", w.generation());
    o.put("attempts", w.attempts());
    o.put("max_attempts", w.maxAttempts());
    Json.put(o, "created_at", w.createdAt());
    Json.put(o, "available_at", w.availableAt());
    Json.put(o, "first_attempt_at", w.firstAttemptAt());
    Json.put(o, "claimed_by", w.claimedBy());
    Json.put(o, "lease_until", w.leaseUntil());
    Json.put(o, "completed_at", w.completedAt());
    Json.put(o, "deadline", w.deadline());
    Json.put(o, "ordering_key", w.orderingKey());
    Json.put(o, "sequence", w.sequence());
    Json.put(o, "last_error_kind", w.lastErrorKind());
    Json.put(o, "last_error", w.lastError());
    Json.put(o, "outcome", w.outcome());
    Json.put(o, "receiver_ref", w.receiverRef());
    Json.put(o, "cancel_requested_at", w.cancelRequestedAt());
    return o;
  }

  static ObjectNode detail(WorkDetail d) {
    ObjectNode o = item(d.item());
    o.set("payload", Json.parseOrText(d.payload()));
    o.set("result", Json.parseOrText(d.result()));
    Json.put(o, "milestone", d.milestone());
    // "attempts" stays the count, as in list --json; the history has a name of its own.
    ArrayNode attempts = o.putArray("attempt_history");
    for (WorkDetail.Attempt a : d.attempts()) {
      ObjectNode n = attempts.addObject();
      n.put("generation", a.generation());
      Json.put(n, "worker", a.worker());
      Json.put(n, "claimed_at", a.claimedAt());
      Json.put(n, "ended_at", a.endedAt());
      n.put("ending", a.ending());
      Json.put(n, "error_kind", a.errorKind());
      Json.put(n, "error", a.error());
      Json.put(n, "outcome", a.outcome());
      Json.put(n, "action", a.action());
      Json.put(n, "receiver_ref", a.receiverRef());
    }
    ArrayNode redrives = o.putArray("redrives");
    for (WorkDetail.Redrive r : d.redrives()) {
      ObjectNode n = redrives.addObject();
      n.put("actor", r.actor());
      n.put("reason", r.reason());
      Json.put(n, "at", r.at());
      n.put("from_state", r.fromState());
      n.put("from_generation", r.fromGeneration());
      n.put("forced", r.forced());
    }
    ArrayNode cancels = o.putArray("cancels");
    for (WorkDetail.Cancel c : d.cancels()) {
      ObjectNode n = cancels.addObject();
      n.put("actor", c.actor());
      n.put("reason", c.reason());
      Json.put(n, "at", c.at());
      Json.put(n, "from_state", c.fromState());
      n.put("result", c.result());
    }
    link(o.putArray("supersedes"), d.supersedes());
    link(o.putArray("superseded_by"), d.supersededBy());
    return o;
  }

  private static void link(ArrayNode array, java.util.List<WorkDetail.SupersedeLink> links) {
    for (WorkDetail.SupersedeLink l : links) {
      ObjectNode n = array.addObject();
      n.put("work_id", l.workId());
      n.put("supersedes_work_id", l.supersedesWorkId());
      n.put("actor", l.actor());
      n.put("reason", l.reason());
      Json.put(n, "at", l.at());
    }
  }

  static void printDetail(PrintWriter out, WorkDetail d) {
    WorkItem w = d.item();
    field(out, "work_id", w.workId());
    field(out, "kind", w.kind());
    field(out, "queue", w.queue());
    field(out, "state", w.state());
    field(out, "priority", w.priority());
    field(out, "generation", w.generation());
    field(out, "attempts", w.attempts() + " of " + w.maxAttempts());
    field(out, "created_at", w.createdAt());
    field(out, "available_at", w.availableAt());
    field(out, "first_attempt_at", w.firstAttemptAt());
    field(out, "claimed_by", w.claimedBy());
    field(out, "lease_until", w.leaseUntil());
    field(out, "completed_at", w.completedAt());
    field(out, "deadline", w.deadline());
    if (w.orderingKey() != null) {
      field(out, "ordering_key", w.orderingKey() + " #" + w.sequence());
    }
    // Two fields, as the two columns: "kind: text" under last_error read as the stored text.
    field(out, "last_error_kind", w.lastErrorKind());
    field(out, "last_error", w.lastError());
    field(out, "outcome", w.outcome());
    field(out, "milestone", d.milestone());
    field(out, "receiver_ref", w.receiverRef());
    field(out, "cancel_requested_at", w.cancelRequestedAt());
    field(out, "payload", d.payload());
    field(out, "result", d.result());

    out.println();
    out.println("attempts (generations that did not end in plain success):");
    if (d.attempts().isEmpty()) {
      out.println("  none");
    } else {
      TextTable t =
          new TextTable(
              "  GEN",
              "ENDING",
              "ACTION",
              "WORKER",
              "CLAIMED_AT",
              "ENDED_AT",
              "OUTCOME",
              "RECEIVER_REF",
              "ERROR");
      for (WorkDetail.Attempt a : d.attempts()) {
        t.row(
            "  " + a.generation(),
            a.ending(),
            a.action(),
            a.worker(),
            a.claimedAt(),
            a.endedAt(),
            a.outcome(),
            a.receiverRef(),
            a.errorKind() == null ? a.error() : a.errorKind() + ": " + a.error());
      }
      t.print(out);
    }
    out.println();
    out.println("redrives:");
    if (d.redrives().isEmpty()) {
      out.println("  none");
    }
    for (WorkDetail.Redrive r : d.redrives()) {
      out.printf(
          "  %s by %s from %s (generation %d)%s: %s%n",
          r.at(),
          r.actor(),
          r.fromState(),
          r.fromGeneration(),
          r.forced() ? ", overridden" : "",
          r.reason());
    }
    out.println();
    out.println("cancels:");
    if (d.cancels().isEmpty()) {
      out.println("  none");
    }
    for (WorkDetail.Cancel c : d.cancels()) {
      out.printf(
          "  %s by %s, %s (was %s): %s%n",
          c.at(), c.actor(), c.result(), c.fromState(), c.reason());
    }
    out.println();
    out.println("supersedes:");
    if (d.supersedes().isEmpty() && d.supersededBy().isEmpty()) {
      out.println("  none");
    }
    for (WorkDetail.SupersedeLink l : d.supersedes()) {
      out.printf(
          "  replaces %s (%s by %s: %s)%n", l.supersedesWorkId(), l.at(), l.actor(), l.reason());
    }
    for (WorkDetail.SupersedeLink l : d.supersededBy()) {
      out.printf("  replaced by %s (%s by %s: %s)%n", l.workId(), l.at(), l.actor(), l.reason());
    }
  }

  private static void field(PrintWriter out, String name, Object value) {
    String text =
        value == null ? "-" : value instanceof Instant i ? i.toString() : value.toString();
    out.printf("%-20s %s%n", name, text);
  }
}
