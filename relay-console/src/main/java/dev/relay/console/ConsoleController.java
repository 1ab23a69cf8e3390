package dev.relay.console;

import dev.relay.CancelResult;
import dev.relay.FlowLimits;
import dev.relay.InvalidWorkException;
import dev.relay.KindPolicy;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.WorkState;
import dev.relay.admin.Admin;
import dev.relay.admin.CompletionMinute;
import dev.relay.admin.FailureGroup;
import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.PurgeResult;
import dev.relay.admin.QueueHealth;
import dev.relay.admin.RedrivePreview;
import dev.relay.admin.RedriveRefusedException;
import dev.relay.admin.RedriveRequest;
import dev.relay.admin.RegisteredKind;
import dev.relay.admin.SupersedeRefusedException;
import dev.relay.admin.SupersedeResult;
import dev.relay.admin.WorkDetail;
import dev.relay.admin.WorkFilter;
import dev.relay.admin.WorkItem;
import dev.relay.admin.WorkNotFoundException;
import dev.relay.admin.WorkPage;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.springframework.http.CacheControl;
import org.springframework.http.ContentDisposition;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.server.ResponseStatusException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The console's pages and actions. Reads and acts only through {@link Admin}; every action takes a
 * reason and records the signed-in user's name as the actor. Pages are written by {@link Html},
 * which escapes every stored string.
 */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class ConsoleController {
  /** Payloads longer than this are shown cut, with their length. */
  static final int MAX_SHOWN_PAYLOAD = 64 * 1024;

  /** The overview chart's span: completions and failures per minute over the last hour. */
  static final Duration CHART_WINDOW = Duration.ofHours(1);

  private static final JsonMapper PRETTY =
      JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();
  private static final MediaType HTML = new MediaType("text", "html", StandardCharsets.UTF_8);

  /** How the console is mounted. */
  enum Mode {
    /** Behind Spring Security: sign-in, viewer and operator roles, CSRF. */
    SECURED,
    /** Without Spring Security: read-only, loopback clients only. */
    LOOPBACK_READ_ONLY
  }

  private final Admin admin;
  private final ConsoleProperties properties;
  private final String mount;
  private final Mode mode;
  private final Function<HttpServletRequest, String[]> csrf;

  /**
   * @param csrf the CSRF field (name, token) of a request, or null when there is none
   */
  ConsoleController(
      Admin admin,
      ConsoleProperties properties,
      Mode mode,
      Function<HttpServletRequest, String[]> csrf) {
    this.admin = admin;
    this.properties = properties;
    this.mount = properties.mount();
    this.mode = mode;
    this.csrf = csrf;
  }

  // ---------------------------------------------------------------- pages

  @GetMapping({"", "/"})
  ResponseEntity<String> overview(HttpServletRequest request) {
    guard(request, false);
    List<QueueHealth> health = admin.health(properties.getHealthWindow());
    Html h = start(request, "Overview");
    h.tag(
            "<h1>Overview</h1><p class=\"note\">Per queue and kind, on the database clock. Failures"
                + " and completions over the last ")
        .text(properties.getHealthWindow())
        .tag(
            ". Ready, running and failed counts are exact now; done and cancelled are counted by"
                + " the maintenance leader on each run, ");
    java.time.Instant asOf = health.isEmpty() ? null : health.get(0).finishedCountsAsOf();
    if (asOf == null) {
      h.tag("<strong class=\"as-of\">").text("not counted yet").tag("</strong>");
    } else {
      h.tag("<strong class=\"as-of\">").text("as of " + asOf).tag("</strong>");
    }
    h.tag(".</p>");
    chart(h, admin.completionsPerMinute(CHART_WINDOW));
    if (health.isEmpty()) {
      h.tag("<p>No work yet.</p>");
    } else {
      h.tag(
          "<table><thead><tr><th>Queue</th><th>Kind</th><th>Ready</th><th>Running</th><th>Done</th><th>Failed</th><th>Cancelled</th><th>Oldest"
              + " eligible</th><th>Expired leases</th><th>Blocked keys</th><th>Held by a dependency"
              + " (by reason)</th><th>Failures in window"
              + " (by reason)</th><th>Done in window</th><th>p50 / p95</th></tr></thead><tbody>");
      for (QueueHealth q : health) {
        h.tag("<tr>").cell(q.queue()).cell(q.kind());
        countCell(h, q, "ready", q.ready());
        countCell(h, q, "running", q.running());
        countCell(h, q, "done", q.done());
        countCell(h, q, "failed", q.failed());
        countCell(h, q, "cancelled", q.cancelled());
        h.cell(q.oldestEligibleAge()).cell(q.expiredLeases()).cell(q.blockedKeys());
        blockedCell(h, q);
        h.tag("<td>");
        if (q.failuresByReason().isEmpty()) {
          h.text("none");
        }
        q.failuresByReason().entrySet().stream()
            .sorted(Map.Entry.comparingByKey())
            .forEach(
                e -> {
                  if (e.getKey().equals("unknown")) {
                    // No error kind was recorded: the list cannot filter on its absence.
                    h.text(e.getKey() + ": " + e.getValue()).tag("<br>");
                    return;
                  }
                  Map<String, String> p = new LinkedHashMap<>();
                  p.put("state", "failed");
                  p.put("queue", q.queue());
                  p.put("kind", q.kind());
                  p.put("errorKind", e.getKey());
                  h.link(Html.url(mount + "/work", p), e.getKey() + ": " + e.getValue())
                      .tag("<br>");
                });
        h.tag("</td>").cell(q.completedInWindow());
        h.tag("<td>").text(q.completionP50()).tag(" / ").text(q.completionP95()).tag("</td></tr>");
      }
      h.tag("</tbody></table>");
    }
    return page(h, HttpStatus.OK);
  }

  /**
   * Completions and failures per minute as an inline SVG of stacked bars (done below, failed on
   * top), drawn here on the server: no script, no style attribute, so the page keeps its CSP. Each
   * bar carries its numbers as a title (escaped like every other text).
   */
  private static void chart(Html h, List<CompletionMinute> minutes) {
    long done = minutes.stream().mapToLong(CompletionMinute::done).sum();
    long failed = minutes.stream().mapToLong(CompletionMinute::failed).sum();
    long max = minutes.stream().mapToLong(m -> m.done() + m.failed()).max().orElse(0);
    int bar = 10;
    int height = 120;
    int width = Math.max(1, minutes.size()) * bar;
    h.tag("<h2>Last hour</h2><figure class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\"")
        .tag(" role=\"img\" class=\"chart\" width=\"")
        .attr(width + 40)
        .tag("\" height=\"")
        .attr(height + 20)
        .tag("\" viewBox=\"0 0 ")
        .attr(width + 40)
        .tag(" ")
        .attr(height + 20)
        .tag("\" aria-label=\"")
        .attr(
            "Completions and failures per minute over the last hour: "
                + done
                + " done, "
                + failed
                + " failed")
        .tag("\"><line class=\"axis\" x1=\"0\" y1=\"")
        .attr(height)
        .tag("\" x2=\"")
        .attr(width)
        .tag("\" y2=\"")
        .attr(height)
        .tag("\"/>");
    for (int i = 0; i < minutes.size(); i++) {
      CompletionMinute m = minutes.get(i);
      int doneHeight = scaled(m.done(), max, height);
      int failedHeight = scaled(m.done() + m.failed(), max, height) - doneHeight;
      h.tag("<g><title>")
          .text(m.minute() + ": " + m.done() + " done, " + m.failed() + " failed")
          .tag("</title>");
      rect(h, "done", i * bar + 1, height - doneHeight, bar - 2, doneHeight);
      rect(h, "failed", i * bar + 1, height - doneHeight - failedHeight, bar - 2, failedHeight);
      h.tag("</g>");
    }
    h.tag("<text class=\"label\" x=\"")
        .attr(width + 4)
        .tag("\" y=\"12\">")
        .text(max)
        .tag("</text><text class=\"label\" x=\"")
        .attr(width + 4)
        .tag("\" y=\"")
        .attr(height)
        .tag("\">0</text><text class=\"label\" x=\"0\" y=\"")
        .attr(height + 16)
        .tag("\">")
        .text(minutes.isEmpty() ? null : minutes.get(0).minute())
        .tag("</text></svg><figcaption>Per minute on the database clock: ")
        .tag("<span class=\"key-done\">done</span> ")
        .text(done)
        .tag(", <span class=\"key-failed\">failed</span> ")
        .text(failed)
        .tag(" (work still in the table; the last minute is the current one).</figcaption>")
        .tag("</figure>");
  }

  private static int scaled(long value, long max, int height) {
    return max == 0 ? 0 : (int) Math.round((double) value * height / max);
  }

  private static void rect(Html h, String cls, int x, int y, int w, int height) {
    if (height <= 0) {
      return;
    }
    h.tag("<rect class=\"")
        .attr(cls)
        .tag("\" x=\"")
        .attr(x)
        .tag("\" y=\"")
        .attr(y)
        .tag("\" width=\"")
        .attr(w)
        .tag("\" height=\"")
        .attr(height)
        .tag("\"/>");
  }

  @GetMapping("/failures")
  ResponseEntity<String> failures(HttpServletRequest request) {
    guard(request, false);
    List<FailureGroup> groups = admin.failureGroups();
    Html h = start(request, "Failures by reason");
    h.tag("<h1>Failed work by reason</h1><p class=\"note\">Work failed now, per queue, kind and")
        .tag(" recorded error kind, largest first. Each count opens the matching list.</p>");
    if (groups.isEmpty()) {
      h.tag("<p>No failed work.</p>");
      return page(h, HttpStatus.OK);
    }
    h.tag(
        "<table class=\"failures\"><thead><tr><th>Queue</th><th>Kind</th><th>Reason</th>"
            + "<th>Failed</th><th>Latest failure</th></tr></thead><tbody>");
    for (FailureGroup g : groups) {
      Map<String, String> p = new LinkedHashMap<>();
      p.put("state", "failed");
      p.put("queue", g.queue());
      p.put("kind", g.kind());
      p.put("errorKind", g.reason());
      h.tag("<tr>").cell(g.queue()).cell(g.kind());
      h.cell(g.reason() == null ? "none recorded" : g.reason());
      h.tag("<td>").link(Html.url(mount + "/work", p), g.count());
      if (g.reason() == null) {
        // The list cannot filter on a missing error kind: the link lists all failed of the kind.
        h.tag(" <span class=\"note\">(all failed of the kind)</span>");
      }
      h.tag("</td>").cell(g.latestFailedAt()).tag("</tr>");
    }
    h.tag("</tbody></table>");
    if (groups.size() >= Admin.MAX_FAILURE_GROUPS) {
      h.tag("<p class=\"note\">Only the largest ")
          .text(Admin.MAX_FAILURE_GROUPS)
          .tag(" groups are shown.</p>");
    }
    return page(h, HttpStatus.OK);
  }

  @GetMapping("/kinds")
  ResponseEntity<String> kinds(HttpServletRequest request) {
    guard(request, false);
    List<RegisteredKind> kinds = admin.kinds();
    Html h = start(request, "Kinds");
    h.tag("<h1>Kinds</h1><p class=\"note\">Each kind's policy as its workers registered it (the")
        .tag(" last registration wins); the console and the CLI apply the same. A kind no worker")
        .tag(" registered is judged by the defaults: ")
        .text(
            "max attempts "
                + dev.relay.KindPolicy.DEFAULT_MAX_ATTEMPTS
                + ", deduplication horizon "
                + Html.age(dev.relay.KindPolicy.DEFAULT_DEDUP_HORIZON)
                + ", retry window "
                + Html.age(dev.relay.KindPolicy.DEFAULT_MAX_ELAPSED))
        .tag(".</p>");
    if (kinds.isEmpty()) {
      h.tag("<p>No kind is registered yet (workers register theirs when they start).</p>");
      return page(h, HttpStatus.OK);
    }
    h.tag(
        "<table class=\"kinds\"><thead><tr><th>Kind</th><th>Max attempts</th>"
            + "<th>Backoff (first, largest)</th><th>Retry window</th><th>Max run time</th>"
            + "<th>Deduplication horizon</th><th>Unknown outcome</th><th>Limits</th>"
            + "<th>Registered</th></tr></thead><tbody>");
    for (RegisteredKind k : kinds) {
      h.tag("<tr><td>").link(Html.url(mount + "/work", "kind", k.kind()), k.kind()).tag("</td>");
      h.cell(k.maxAttempts());
      h.cell(age(k.backoffBase()) + ", " + age(k.backoffCap()));
      h.cell(age(k.maxElapsed())).cell(age(k.maxRunTime()));
      h.cell(
          k.dedupHorizon() != null && k.dedupHorizon().isZero()
              ? "none (the receiver does not deduplicate)"
              : age(k.dedupHorizon()));
      h.cell(unknownOutcome(k.unknownOutcome())).cell(limits(k.limits()));
      h.cell(k.registeredBy() + ", " + k.registeredAt()).tag("</tr>");
    }
    h.tag("</tbody></table>");
    return page(h, HttpStatus.OK);
  }

  private static String age(Duration d) {
    return d == null ? "\u2014" : Html.age(d);
  }

  private static String unknownOutcome(String stored) {
    return switch (stored) {
      case "retry" -> "retry (a duplicate is possible)";
      case "park" -> "park as failed, outcome unknown (an omission is possible)";
      case "reconcile" -> "reconcile: ask the receiver first";
      default -> stored;
    };
  }

  private static String limits(FlowLimits l) {
    if (l == null || !l.limited()) {
      return "none";
    }
    List<String> parts = new java.util.ArrayList<>();
    if (l.maxRunning() != null) {
      parts.add("at most " + l.maxRunning() + " running");
    }
    if (l.maxRunningPerGroup() != null) {
      parts.add("at most " + l.maxRunningPerGroup() + " running per group");
    }
    if (l.rateLimit() != null) {
      parts.add(l.rateLimit() + " claims per " + Html.age(l.rateInterval()));
    }
    return String.join("; ", parts);
  }

  private void countCell(Html h, QueueHealth q, String state, long count) {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("state", state);
    p.put("queue", q.queue());
    p.put("kind", q.kind());
    h.tag("<td>").link(Html.url(mount + "/work", p), count).tag("</td>");
  }

  /**
   * Ready work held by a failed, cancelled, superseded or missing dependency, per reason, each
   * linking to the list of those dependents.
   */
  private void blockedCell(Html h, QueueHealth q) {
    h.tag("<td>");
    if (q.blockedByReason().isEmpty()) {
      h.text("none");
    }
    q.blockedByReason().entrySet().stream()
        .sorted(Map.Entry.comparingByKey())
        .forEach(
            e -> {
              Map<String, String> p = new LinkedHashMap<>();
              p.put("queue", q.queue());
              p.put("kind", q.kind());
              p.put("blocked", e.getKey());
              h.link(Html.url(mount + "/work", p), e.getKey() + ": " + e.getValue()).tag("<br>");
            });
    h.tag("</td>");
  }

  @GetMapping("/work")
  ResponseEntity<String> list(
      HttpServletRequest request,
      @RequestParam(required = false) String state,
      @RequestParam(required = false) String kind,
      @RequestParam(required = false) String queue,
      @RequestParam(required = false) String key,
      @RequestParam(required = false) String errorKind,
      @RequestParam(required = false) String outcome,
      @RequestParam(required = false) String blocked,
      @RequestParam(required = false) String after) {
    guard(request, false);
    Map<String, String> filters = new LinkedHashMap<>();
    filters.put("state", blankToNull(state));
    filters.put("kind", blankToNull(kind));
    filters.put("queue", blankToNull(queue));
    filters.put("key", blankToNull(key));
    filters.put("errorKind", blankToNull(errorKind));
    filters.put("outcome", blankToNull(outcome));
    filters.put("blocked", blankToNull(blocked));
    WorkFilter f = WorkFilter.all();
    if (filters.get("state") != null) {
      f = f.state(filters.get("state"));
    }
    if (filters.get("kind") != null) {
      f = f.kind(filters.get("kind"));
    }
    if (filters.get("queue") != null) {
      f = f.queue(filters.get("queue"));
    }
    if (filters.get("key") != null) {
      f = f.orderingKey(filters.get("key"));
    }
    if (filters.get("errorKind") != null) {
      f = f.errorKind(filters.get("errorKind"));
    }
    if (filters.get("outcome") != null) {
      f = f.outcome(filters.get("outcome"));
    }
    if ("any".equals(filters.get("blocked"))) {
      f = f.blocked();
    } else if (filters.get("blocked") != null) {
      f = f.blockedReason(filters.get("blocked")); // an unknown reason is refused by name
    }
    WorkPage page = admin.list(f, blankToNull(after), properties.getPageSize());

    Html h = start(request, "Work");
    h.tag("<h1>Work</h1><form method=\"get\" class=\"filters\" action=\"")
        .attr(mount + "/work")
        .tag("\">");
    h.tag("<label>State <select name=\"state\"><option value=\"\">any</option>");
    for (WorkState s : WorkState.values()) {
      h.tag("<option value=\"").attr(s.sql()).tag("\"");
      if (s.sql().equals(filters.get("state"))) {
        h.tag(" selected");
      }
      h.tag(">").text(s.sql()).tag("</option>");
    }
    h.tag("</select></label>");
    for (String[] field :
        new String[][] {
          {"kind", "Kind"},
          {"queue", "Queue"},
          {"key", "Ordering key"},
          {"errorKind", "Error kind"},
          {"outcome", "Outcome"},
          {"blocked", "Held by a dependency (any or a reason)"}
        }) {
      h.tag("<label>").text(field[1]).tag(" <input name=\"").attr(field[0]).tag("\" value=\"");
      h.attr(filters.get(field[0])).tag("\"></label>");
    }
    h.tag("<button type=\"submit\">Filter</button></form>");
    h.tag("<p class=\"note\">Oldest first (creation time, then work ID), in keyset pages of ")
        .text(properties.getPageSize())
        .tag(".</p>");
    h.tag(
        "<table><thead><tr><th>Work ID</th><th>Kind</th><th>Queue</th><th>State</th>"
            + "<th>Attempts</th><th>Generation</th><th>Created</th><th>Last error</th>"
            + "<th>Outcome</th></tr></thead><tbody>");
    for (WorkItem i : page.items()) {
      h.tag("<tr><td class=\"wrap\">")
          .link(Html.url(mount + "/item", "id", i.workId()), i.workId())
          .tag("</td>");
      h.cell(i.kind()).cell(i.queue()).cell(i.state());
      h.cell(i.attempts() + " / " + i.maxAttempts()).cell(i.generation()).cell(i.createdAt());
      h.tag("<td class=\"wrap\">")
          .text(i.lastErrorKind() == null ? null : i.lastErrorKind() + ": " + i.lastError())
          .tag("</td>");
      h.cell(i.outcome()).tag("</tr>");
    }
    h.tag("</tbody></table>");
    if (page.items().isEmpty()) {
      h.tag("<p>No work matches.</p>");
    }
    h.tag("<p class=\"pages\">");
    if (after != null && !after.isBlank()) {
      h.link(Html.url(mount + "/work", filters), "First page").tag(" ");
    }
    if (page.hasMore()) {
      Map<String, String> next = new LinkedHashMap<>(filters);
      next.put("after", page.nextCursor());
      h.tag("<a rel=\"next\" href=\"")
          .attr(Html.url(mount + "/work", next))
          .tag("\">Next page</a>");
    }
    h.tag("</p>");
    return page(h, HttpStatus.OK);
  }

  @GetMapping("/item")
  ResponseEntity<String> item(
      HttpServletRequest request,
      @RequestParam String id,
      @RequestParam(required = false) String done) {
    guard(request, false);
    return itemPage(request, id, done, null, HttpStatus.OK);
  }

  private ResponseEntity<String> itemPage(
      HttpServletRequest request,
      String id,
      String done,
      RedriveRefusedException refusal,
      HttpStatus status) {
    WorkDetail d = admin.show(id).orElseThrow(() -> new WorkNotFoundException(id));
    WorkItem i = d.item();
    Html h = start(request, "Work " + id);
    h.tag("<h1>Work <code>").text(i.workId()).tag("</code></h1>");
    if (done != null) {
      h.tag("<p class=\"done\" role=\"status\">").text(doneMessage(done)).tag("</p>");
    }
    h.tag("<dl class=\"facts\">");
    fact(h, "State", i.state());
    fact(h, "Kind", i.kind());
    fact(h, "Queue", i.queue());
    fact(h, "Priority", i.priority());
    fact(h, "Claim generation", i.generation());
    fact(h, "Attempts", i.attempts() + " / " + i.maxAttempts());
    fact(h, "Created", i.createdAt());
    fact(h, "Available at", i.availableAt());
    fact(h, "First attempt", i.firstAttemptAt());
    fact(h, "Claimed by", i.claimedBy());
    fact(h, "Lease until", i.leaseUntil());
    fact(h, "Completed", i.completedAt());
    fact(h, "Deadline", i.deadline());
    fact(h, "Ordering key", i.orderingKey() == null ? null : i.orderingKey() + " #" + i.sequence());
    fact(
        h,
        "Last error",
        i.lastErrorKind() == null ? null : i.lastErrorKind() + ": " + i.lastError());
    fact(h, "Outcome evidence", i.outcome() == null ? "nothing known yet" : i.outcome());
    fact(h, "Milestone", d.milestone());
    fact(h, "Receiver reference", i.receiverRef());
    fact(h, "Cancel requested", i.cancelRequestedAt());
    h.tag("</dl>");

    RedrivePreview preview = admin.redrivePreview(id);
    h.tag("<h2>Deduplication horizon</h2><p class=\"horizon\">")
        .text(
            preview.firstAttemptAt() == null
                ? "Never attempted: no horizon applies yet."
                : "First attempt at "
                    + preview.firstAttemptAt()
                    + "; the receiver's deduplication horizon for this kind"
                    + (preview.kindRegistered()
                        ? ""
                        : " (no registered policy: the default "
                            + Html.age(KindPolicy.DEFAULT_DEDUP_HORIZON)
                            + ")")
                    + " ends at "
                    + preview.horizonEnd()
                    + (preview.pastHorizon()
                        ? ". It has passed: the receiver may no longer recognise the ID and apply"
                            + " it twice, so a redrive is refused unless you override the horizon."
                        : ". A redrive now is within it."))
        .tag("</p><p class=\"horizon-check\">")
        .text(
            "A redrive now (checked at "
                + preview.now()
                + "): "
                + (preview.wouldRedrive()
                    ? "would go through."
                    : "would be refused: " + why(preview.refusal()) + "."))
        .tag("</p>");
    if (refusal != null) {
      refusalPanel(request, h, i, refusal);
    }

    shownJson(h, i.workId(), "payload", "Payload", d.payload());
    if (d.result() != null) {
      shownJson(h, i.workId(), "result", "Result", d.result());
    }

    h.tag("<h2>Attempt timeline</h2>");
    if (d.attempts().isEmpty()) {
      h.tag("<p>No claim ended other than in plain success.</p>");
    } else {
      h.tag(
          "<table><thead><tr><th>Generation</th><th>Worker</th><th>Claimed</th><th>Ended</th>"
              + "<th>Ending</th><th>Error</th><th>Outcome evidence</th></tr></thead><tbody>");
      for (WorkDetail.Attempt a : d.attempts()) {
        h.tag("<tr>").cell(a.generation()).cell(a.worker()).cell(a.claimedAt()).cell(a.endedAt());
        h.cell(a.ending()).cell(a.errorKind() == null ? null : a.errorKind() + ": " + a.error());
        h.cell(a.outcome()).tag("</tr>");
      }
      h.tag("</tbody></table>");
    }

    h.tag("<h2>Audit</h2>");
    if (d.redrives().isEmpty()
        && d.cancels().isEmpty()
        && d.supersedes().isEmpty()
        && d.supersededBy().isEmpty()) {
      h.tag("<p class=\"audit-empty\">No redrives, cancellations or supersedes recorded.</p>");
    } else {
      audit(h, d);
    }

    if (canAct(request)) {
      actionForms(request, h, d);
    }
    return page(h, status);
  }

  /** The redrive and cancel audits and the supersede links in both directions, as one table. */
  private void audit(Html h, WorkDetail d) {
    h.tag(
        "<table class=\"audit\"><thead><tr><th>When</th><th>Action</th><th>Actor</th>"
            + "<th>Reason</th><th>Details</th></tr></thead><tbody>");
    for (WorkDetail.Redrive r : d.redrives()) {
      h.tag("<tr>").cell(r.at()).cell("redrive").cell(r.actor()).cell(r.reason());
      h.cell(
              "from "
                  + r.fromState()
                  + ", generation "
                  + r.fromGeneration()
                  + (r.forced() ? ", override" : ""))
          .tag("</tr>");
    }
    for (WorkDetail.Cancel c : d.cancels()) {
      h.tag("<tr>").cell(c.at()).cell("cancel").cell(c.actor()).cell(c.reason());
      h.cell("from " + c.fromState() + ": " + cancelResult(c.result())).tag("</tr>");
    }
    for (WorkDetail.SupersedeLink s : d.supersedes()) {
      h.tag("<tr>").cell(s.at()).cell("supersedes").cell(s.actor()).cell(s.reason());
      h.tag("<td class=\"wrap\">replaces ")
          .link(Html.url(mount + "/item", "id", s.supersedesWorkId()), s.supersedesWorkId())
          .tag("</td></tr>");
    }
    for (WorkDetail.SupersedeLink s : d.supersededBy()) {
      h.tag("<tr>").cell(s.at()).cell("superseded").cell(s.actor()).cell(s.reason());
      h.tag("<td class=\"wrap\">replaced by ")
          .link(Html.url(mount + "/item", "id", s.workId()), s.workId())
          .tag("</td></tr>");
    }
    h.tag("</tbody></table>");
  }

  /** A cancel call's recorded result in words. */
  private static String cancelResult(String stored) {
    return switch (stored == null ? "" : stored) {
      case "cancelled" -> "cancelled";
      case "cancel_requested" -> "cancel requested of its worker";
      case "already_finished" -> "already finished, unchanged";
      case "not_found" -> "no such work";
      default -> stored;
    };
  }

  /** Why a plain redrive is refused, in words (the preview's and the refusal's reason). */
  static String why(RedriveRefusedException.Reason reason) {
    return switch (reason) {
      case RUNNING -> "the work is running, and its worker may have a call in flight";
      case NOT_FAILED -> "the work is not failed, so redriving it needs an override";
      case PAST_DEDUP_HORIZON ->
          "the receiver's deduplication horizon has passed, so redriving it needs an override";
    };
  }

  private void refusalPanel(
      HttpServletRequest request, Html h, WorkItem i, RedriveRefusedException refusal) {
    h.tag("<div class=\"refused\" role=\"alert\"><h3>Redrive refused</h3><p>")
        .text("Nothing changed: " + why(refusal.reason()) + ". It is " + i.state() + " now.")
        .tag("</p>");
    if (refusal.reason() == RedriveRefusedException.Reason.PAST_DEDUP_HORIZON) {
      h.tag("<p>First attempt ")
          .text(refusal.firstAttemptAt())
          .tag("; the deduplication horizon ended ")
          .text(refusal.horizonEnd())
          .tag(
              ". The receiver may no longer recognise this work ID and may apply it twice:"
                  + " override only if that is acceptable, or supersede it with new work.</p>");
    }
    if (refusal.reason() == RedriveRefusedException.Reason.RUNNING) {
      h.tag("<p>Cancel it, or wait for it to end.</p>");
    } else if (canAct(request)) {
      String field =
          refusal.reason() == RedriveRefusedException.Reason.PAST_DEDUP_HORIZON
              ? "overrideHorizon"
              : "force";
      h.tag("<form method=\"post\" class=\"override\" action=\"")
          .attr(mount + "/item/redrive")
          .tag("\">");
      csrfField(request, h);
      h.hidden("id", i.workId()).hidden(field, "true");
      if (request.getParameter("overrideHorizon") != null && !"overrideHorizon".equals(field)) {
        h.hidden("overrideHorizon", "true");
      }
      if (request.getParameter("force") != null && !"force".equals(field)) {
        h.hidden("force", "true");
      }
      h.tag(
          "<label>Type the work ID to confirm the override <input name=\"confirm\""
              + " required></label>");
      h.tag(
          "<label>Reason <textarea name=\"reason\" required"
              + " maxlength=\"2000\"></textarea></label>");
      h.tag(
          "<button type=\"submit\" name=\"action\" value=\"override\">Redrive"
              + " anyway</button></form>");
    }
    h.tag("</div>");
  }

  /**
   * The actions that can apply to the item in its state, and a line for each that cannot: redrive
   * for ended work (failed; done or cancelled only with the override, which the refusal asks for),
   * cancel for unfinished or failed work, supersede for work whose effect has not happened and that
   * no replacement supersedes yet.
   */
  private void actionForms(HttpServletRequest request, Html h, WorkDetail d) {
    WorkItem i = d.item();
    String state = i.state();
    boolean failed = state.equals(WorkState.FAILED.sql());
    boolean done = state.equals(WorkState.DONE.sql());
    boolean cancelled = state.equals(WorkState.CANCELLED.sql());
    List<String> notApplying = new java.util.ArrayList<>();
    h.tag("<h2>Actions</h2><div class=\"actions\">");
    if (failed || done || cancelled) {
      actionForm(request, h, i, "redrive");
      h.tag("<h3>Redrive</h3><p class=\"note\">Same work ID and payload, a new attempt budget.")
          .text(
              failed
                  ? ""
                  : " The work is " + state + ", not failed: you will be asked to confirm it.")
          .tag("</p>");
      reasonAndSubmit(h, "Redrive");
    } else {
      notApplying.add("Redrive: the work has not ended (it is " + state + ").");
    }
    if (!done && !cancelled) {
      actionForm(request, h, i, "cancel");
      h.tag(
          "<h3>Cancel</h3><p class=\"note\">Running work is asked to stop at its next renewal; an"
              + " in-flight call is not recalled.</p>");
      reasonAndSubmit(h, "Cancel");
    } else {
      notApplying.add("Cancel: the work has already ended (" + state + ").");
    }
    if (done) {
      notApplying.add(
          "Supersede: the work is done, so its effect happened; a correction now is a"
              + " compensation, new work with its own identity.");
    } else if (!d.supersededBy().isEmpty()) {
      notApplying.add(
          "Supersede: already superseded by "
              + d.supersededBy().get(d.supersededBy().size() - 1).workId()
              + "; to correct it again, supersede that work.");
    } else {
      actionForm(request, h, i, "supersede");
      h.tag(
          "<h3>Supersede</h3><p class=\"note\">Enqueue a corrected intention of the same kind and"
              + " queue under a new ID, and cancel this work.</p>");
      h.tag("<label>New work ID <input name=\"newId\" required></label>");
      h.tag("<label>Payload (JSON) <textarea name=\"payload\" required></textarea></label>");
      reasonAndSubmit(h, "Supersede");
    }
    h.tag("</div>");
    if (!notApplying.isEmpty()) {
      h.tag("<ul class=\"not-applying note\">");
      notApplying.forEach(line -> h.tag("<li>").text(line).tag("</li>"));
      h.tag("</ul>");
    }
  }

  /** Opens the form of one action on the item: {@code id}, action path and CSRF field. */
  private void actionForm(HttpServletRequest request, Html h, WorkItem i, String action) {
    h.tag("<form method=\"post\" id=\"")
        .attr(action)
        .tag("\" action=\"")
        .attr(mount + "/item/" + action)
        .tag("\">");
    csrfField(request, h);
    h.hidden("id", i.workId());
  }

  /** The reason field every action needs, the submit button, and the end of the form. */
  private static void reasonAndSubmit(Html h, String button) {
    h.tag(
        "<label>Reason <textarea name=\"reason\" required maxlength=\"2000\"></textarea></label>");
    h.tag("<button type=\"submit\">").text(button).tag("</button></form>");
  }

  /**
   * A payload or result, pretty-printed and escaped; over {@link #MAX_SHOWN_PAYLOAD} characters
   * cut, with its length. The download link is always there: the stored JSON as a file.
   */
  private void shownJson(Html h, String workId, String part, String title, String json) {
    String shown = pretty(json);
    Map<String, String> p = new LinkedHashMap<>();
    p.put("id", workId);
    p.put("part", part);
    h.tag("<h2>").text(title).tag("</h2>");
    if (shown != null && shown.length() > MAX_SHOWN_PAYLOAD) {
      h.tag("<p class=\"cut\" role=\"note\">")
          .text(
              "Shown cut to the first "
                  + MAX_SHOWN_PAYLOAD
                  + " of "
                  + shown.length()
                  + " characters; download it whole: ")
          .link(Html.url(mount + "/item/download", p), "download " + part)
          .tag("</p>");
      shown = shown.substring(0, MAX_SHOWN_PAYLOAD) + "\n\u2026 cut";
    }
    h.tag("<pre class=\"payload\">").text(shown).tag("</pre><p class=\"download\">");
    h.tag("<a download href=\"")
        .attr(Html.url(mount + "/item/download", p))
        .tag("\">")
        .text("Download the " + part + " (JSON)")
        .tag("</a></p>");
  }

  /**
   * The stored payload or result of one item as a file: always an attachment, {@code
   * application/json} and {@code nosniff}, so a browser saves it and never renders or runs it. For
   * viewers too (reading is all it does).
   */
  @GetMapping("/item/download")
  ResponseEntity<byte[]> download(
      HttpServletRequest request,
      @RequestParam String id,
      @RequestParam(defaultValue = "payload") String part) {
    guard(request, false);
    if (!part.equals("payload") && !part.equals("result")) {
      throw new InvalidAdminRequestException("part", "must be payload or result, was " + part);
    }
    WorkDetail d = admin.show(id).orElseThrow(() -> new WorkNotFoundException(id));
    String json = part.equals("payload") ? d.payload() : d.result();
    if (json == null) {
      throw new ResponseStatusException(HttpStatus.NOT_FOUND, "the work has no " + part);
    }
    HttpHeaders headers = new HttpHeaders();
    headers.setContentType(MediaType.APPLICATION_JSON);
    headers.setContentDisposition(
        ContentDisposition.attachment()
            .filename(fileName(id) + "." + part + ".json", StandardCharsets.UTF_8)
            .build());
    headers.set("X-Content-Type-Options", "nosniff");
    headers.setCacheControl(CacheControl.noStore());
    return new ResponseEntity<>(json.getBytes(StandardCharsets.UTF_8), headers, HttpStatus.OK);
  }

  /** A work ID as a file name: letters, digits, dot, dash and underscore; anything else is _. */
  static String fileName(String workId) {
    String name = workId.replaceAll("[^A-Za-z0-9._-]", "_");
    if (name.startsWith(".")) {
      name = "_" + name.substring(1);
    }
    return name.length() > 100 ? name.substring(0, 100) : name;
  }

  @GetMapping("/purge")
  ResponseEntity<String> purgeForm(HttpServletRequest request) {
    guard(request, false);
    Html h = start(request, "Purge dry run");
    h.tag("<h1>Purge dry run</h1><p>Counts what the default purge policy (")
        .text(purgePolicy(PurgePolicy.DEFAULT))
        .tag(") would delete now. It changes nothing; the console never purges.</p>");
    if (canAct(request)) {
      h.tag("<form method=\"post\" action=\"").attr(mount + "/purge").tag("\">");
      csrfField(request, h);
      h.tag(
          "<label>Reason <textarea name=\"reason\" required"
              + " maxlength=\"2000\"></textarea></label>");
      h.tag("<button type=\"submit\">Count</button></form>");
    }
    return page(h, HttpStatus.OK);
  }

  /** A purge policy as an operator reads it. */
  static String purgePolicy(PurgePolicy p) {
    return "done and cancelled work kept "
        + Html.age(p.workRetention())
        + " after it ended (and at least its kind's deduplication horizon), attempt history and"
        + " audits "
        + Html.age(p.historyRetention())
        + ", tombstones of purged work "
        + Html.age(p.identityHorizon())
        + "; failed work is never purged";
  }

  @GetMapping("/login")
  ResponseEntity<String> login(HttpServletRequest request) {
    if (mode != Mode.SECURED) {
      throw new ResponseStatusException(HttpStatus.NOT_FOUND);
    }
    Html h = start(request, "Sign in");
    h.tag("<h1>Sign in</h1>");
    if (request.getParameter("error") != null) {
      h.tag("<p class=\"refused\" role=\"alert\">Wrong user name or password.</p>");
    }
    if (request.getParameter("logout") != null) {
      h.tag("<p class=\"done\" role=\"status\">Signed out.</p>");
    }
    h.tag("<form method=\"post\" id=\"login\" action=\"").attr(mount + "/login").tag("\">");
    csrfField(request, h);
    h.tag("<label>User <input name=\"username\" autocomplete=\"username\" required></label>");
    h.tag(
        "<label>Password <input type=\"password\" name=\"password\""
            + " autocomplete=\"current-password\" required></label>");
    h.tag("<button type=\"submit\">Sign in</button></form>");
    return page(h, HttpStatus.OK);
  }

  @GetMapping("/console.css")
  ResponseEntity<String> css() throws IOException {
    return resource("console.css", new MediaType("text", "css", StandardCharsets.UTF_8));
  }

  /**
   * The icon every page names, so a browser does not ask the application for {@code /favicon.ico}
   * (which the application may refuse). Public, like the style sheet.
   */
  @GetMapping("/favicon.svg")
  ResponseEntity<String> favicon() throws IOException {
    return resource("favicon.svg", new MediaType("image", "svg+xml", StandardCharsets.UTF_8));
  }

  private static ResponseEntity<String> resource(String name, MediaType type) throws IOException {
    try (InputStream in = ConsoleController.class.getResourceAsStream(name)) {
      return ResponseEntity.ok()
          .contentType(type)
          .cacheControl(CacheControl.noCache())
          .header("X-Content-Type-Options", "nosniff")
          .body(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
  }

  // ---------------------------------------------------------------- actions

  @PostMapping("/item/redrive")
  ResponseEntity<String> redrive(
      HttpServletRequest request,
      Principal user,
      @RequestParam String id,
      @RequestParam(required = false) String reason,
      @RequestParam(defaultValue = "false") boolean force,
      @RequestParam(defaultValue = "false") boolean overrideHorizon,
      @RequestParam(required = false) String confirm) {
    guard(request, true);
    if ((force || overrideHorizon) && !id.equals(confirm)) {
      throw new InvalidAdminRequestException(
          "confirm", "must repeat the work ID to confirm an override; nothing was redriven");
    }
    RedriveRequest r = RedriveRequest.of(actor(user), reason);
    if (force) {
      r = r.forced();
    }
    if (overrideHorizon) {
      r = r.overridingHorizon();
    }
    try {
      admin.redrive(id, r);
    } catch (RedriveRefusedException e) {
      return itemPage(request, id, null, e, HttpStatus.CONFLICT);
    }
    return done(id, "redriven");
  }

  @PostMapping("/item/cancel")
  ResponseEntity<String> cancel(
      HttpServletRequest request,
      Principal user,
      @RequestParam String id,
      @RequestParam(required = false) String reason) {
    guard(request, true);
    CancelResult r = admin.cancel(id, actor(user), reason);
    if (r.status() == CancelResult.Status.NOT_FOUND) {
      throw new WorkNotFoundException(id);
    }
    return done(id, "cancel-" + r.status().name().toLowerCase(java.util.Locale.ROOT));
  }

  @PostMapping("/item/supersede")
  ResponseEntity<String> supersede(
      HttpServletRequest request,
      Principal user,
      @RequestParam String id,
      @RequestParam String newId,
      @RequestParam String payload,
      @RequestParam(required = false) String reason) {
    guard(request, true);
    WorkItem old = admin.show(id).orElseThrow(() -> new WorkNotFoundException(id)).item();
    Work replacement = Work.of(newId, old.kind(), payload).queue(old.queue());
    SupersedeResult r = admin.supersede(id, replacement, actor(user), reason);
    return done(r.newWorkId(), "superseded");
  }

  @PostMapping("/purge")
  ResponseEntity<String> purgeDryRun(
      HttpServletRequest request, Principal user, @RequestParam(required = false) String reason) {
    guard(request, true);
    if (reason == null || reason.isBlank()) {
      throw new InvalidAdminRequestException("reason", "is empty");
    }
    PurgeResult r = admin.purge(PurgePolicy.DEFAULT, true, actor(user), reason);
    Html h = start(request, "Purge dry run");
    h.tag(
        "<h1>Purge dry run</h1><p role=\"status\">Nothing was deleted. Eligible now:</p><dl"
            + " class=\"facts\">");
    fact(h, "Done and cancelled work", r.work());
    fact(h, "Tombstones", r.tombstones());
    fact(h, "Attempt history rows", r.attempts());
    fact(h, "Audit rows", r.audits());
    h.tag("</dl>");
    return page(h, HttpStatus.OK);
  }

  // ---------------------------------------------------------------- errors

  @ExceptionHandler({
    InvalidAdminRequestException.class,
    InvalidWorkException.class,
    WorkConflictException.class
  })
  ResponseEntity<String> badRequest(HttpServletRequest request, RuntimeException e) {
    return problem(request, HttpStatus.BAD_REQUEST, "Nothing changed", e.getMessage());
  }

  @ExceptionHandler(SupersedeRefusedException.class)
  ResponseEntity<String> refused(HttpServletRequest request, SupersedeRefusedException e) {
    return problem(
        request, HttpStatus.CONFLICT, "Supersede refused; nothing changed", e.getMessage());
  }

  @ExceptionHandler(WorkNotFoundException.class)
  ResponseEntity<String> notFound(HttpServletRequest request, WorkNotFoundException e) {
    return problem(request, HttpStatus.NOT_FOUND, "Not found", e.getMessage());
  }

  private ResponseEntity<String> problem(
      HttpServletRequest request, HttpStatus status, String title, String message) {
    Html h = start(request, title);
    h.tag("<h1>")
        .text(title)
        .tag("</h1><p class=\"refused\" role=\"alert\">")
        .text(message)
        .tag("</p>");
    return page(h, status);
  }

  // ---------------------------------------------------------------- helpers

  private void guard(HttpServletRequest request, boolean write) {
    if (mode == Mode.LOOPBACK_READ_ONLY) {
      if (write || !loopback(request.getRemoteAddr())) {
        throw new ResponseStatusException(
            HttpStatus.FORBIDDEN,
            "the console is read-only and answers loopback clients only (no Spring Security)");
      }
    }
  }

  static boolean loopback(String address) {
    try {
      return address != null && InetAddress.getByName(address).isLoopbackAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }

  private boolean canAct(HttpServletRequest request) {
    return mode == Mode.SECURED && request.isUserInRole(properties.getOperatorRole());
  }

  private static String actor(Principal user) {
    if (user == null || user.getName() == null || user.getName().isBlank()) {
      throw new ResponseStatusException(
          HttpStatus.FORBIDDEN, "no signed-in user to record as the actor");
    }
    return user.getName();
  }

  private ResponseEntity<String> done(String id, String what) {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("id", id);
    p.put("done", what);
    return ResponseEntity.status(HttpStatus.SEE_OTHER)
        .header("Location", Html.url(mount + "/item", p))
        .build();
  }

  private static String doneMessage(String done) {
    return switch (done) {
      case "redriven" -> "Redriven: the work is ready again with a new attempt budget.";
      case "cancel-cancelled" -> "Cancelled.";
      case "cancel-cancel_requested" ->
          "Cancel requested: the worker stops at its next renewal; an in-flight call is not"
              + " recalled.";
      case "cancel-already_finished" -> "Already finished: nothing to cancel.";
      case "superseded" -> "This work supersedes the old one, which was cancelled.";
      default -> "Done.";
    };
  }

  private void csrfField(HttpServletRequest request, Html h) {
    String[] field = csrf == null ? null : csrf.apply(request);
    if (field != null) {
      h.hidden(field[0], field[1]);
    }
  }

  private static void fact(Html h, String name, Object value) {
    h.tag("<dt>").text(name).tag("</dt><dd>").text(value).tag("</dd>");
  }

  static String pretty(String json) {
    if (json == null) {
      return null;
    }
    String shown;
    try {
      JsonNode node = PRETTY.readTree(json);
      shown = PRETTY.writeValueAsString(node);
    } catch (RuntimeException e) {
      shown = json;
    }
    return shown;
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.strip();
  }

  private Html start(HttpServletRequest request, String title) {
    Html h = new Html();
    h.tag("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
        .text(title)
        .tag(" \u2014 Relay</title><link rel=\"stylesheet\" href=\"")
        .attr(mount + "/console.css")
        .tag("\"><link rel=\"icon\" type=\"image/svg+xml\" href=\"")
        .attr(mount + "/favicon.svg")
        .tag("\"></head><body><header><nav><strong>Relay</strong> ");
    h.link(mount, "Overview").tag(" ");
    h.link(mount + "/work", "Work").tag(" ");
    h.link(Html.url(mount + "/work", "state", "failed"), "Failed").tag(" ");
    h.link(mount + "/failures", "Failures by reason").tag(" ");
    h.link(mount + "/kinds", "Kinds").tag(" ");
    h.link(mount + "/purge", "Purge dry run");
    h.tag("</nav>");
    Principal user = request.getUserPrincipal();
    if (mode == Mode.SECURED && user != null) {
      h.tag("<form method=\"post\" class=\"logout\" action=\"").attr(mount + "/logout").tag("\">");
      csrfField(request, h);
      h.tag("<span class=\"user\">")
          .text(user.getName())
          .tag(canAct(request) ? " (operator)" : " (viewer)");
      h.tag("</span> <button type=\"submit\">Sign out</button></form>");
    } else if (mode == Mode.LOOPBACK_READ_ONLY) {
      h.tag("<span class=\"user\">read-only (loopback)</span>");
    }
    h.tag("</header><main>");
    return h;
  }

  private static ResponseEntity<String> page(Html h, HttpStatus status) {
    h.tag("</main></body></html>");
    return ResponseEntity.status(status)
        .contentType(HTML)
        .cacheControl(CacheControl.noStore())
        .body(h.toString());
  }
}
