package dev.relay.console;

import dev.relay.CancelResult;
import dev.relay.InvalidWorkException;
import dev.relay.KindPolicy;
import dev.relay.Work;
import dev.relay.WorkState;
import dev.relay.admin.Dependency;
import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.RedrivePreview;
import dev.relay.admin.RedriveRefusedException;
import dev.relay.admin.RedriveRequest;
import dev.relay.admin.SupersedeResult;
import dev.relay.admin.WorkDetail;
import dev.relay.admin.WorkItem;
import dev.relay.admin.WorkNotFoundException;
import jakarta.servlet.http.HttpServletRequest;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.springframework.http.CacheControl;
import org.springframework.http.ContentDisposition;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.server.ResponseStatusException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * One item: everything Relay recorded about it, the deduplication horizon a redrive would meet, the
 * download of its payload and result, and the actions (redrive, cancel, supersede) that apply to it
 * in its state. Every action takes a reason and records the signed-in user as the actor.
 */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class ItemController {
  /** Payloads longer than this are shown cut, with their length. */
  static final int MAX_SHOWN_PAYLOAD = 64 * 1024;

  private static final JsonMapper PRETTY =
      JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

  private final Console console;

  ItemController(Console console) {
    this.console = console;
  }

  /** What waits for an item is listed up to this many. */
  static final int MAX_DEPENDENTS_SHOWN = 100;

  /**
   * A name and its value in words, and the stored value behind the words (or null) as its title.
   */
  record Fact(String name, String value, String stored) {
    Fact(String name, String value) {
      this(name, value, null);
    }
  }

  /** A payload or result as shown: pretty-printed, maybe cut, with its download link. */
  record Json(String title, String part, String shown, String cutNote, String download) {}

  /** One line of the audit: redrive, cancel, or a supersede link in either direction. */
  record AuditLine(
      String at, String action, String actor, String reason, String details, Link link) {}

  /** A redrive refusal shown above the page, and the override form it offers. */
  record Refusal(
      String summary,
      String firstAttemptAt,
      String horizonEnd,
      boolean pastHorizon,
      boolean running,
      String overrideField,
      List<String> keptOverrides) {}

  /** The actions that apply to the item in its state, and a line for each that does not. */
  record Actions(
      boolean redrive,
      String redriveNote,
      boolean cancel,
      boolean supersede,
      List<String> notApplying) {}

  @GetMapping("/item")
  ResponseEntity<String> item(
      HttpServletRequest request,
      @RequestParam String id,
      @RequestParam(required = false) String done) {
    console.guard(request, false);
    return itemPage(request, id, done, null, HttpStatus.OK);
  }

  private ResponseEntity<String> itemPage(
      HttpServletRequest request,
      String id,
      String done,
      RedriveRefusedException refusal,
      HttpStatus status) {
    WorkDetail d = console.admin.show(id).orElseThrow(() -> new WorkNotFoundException(id));
    WorkItem i = d.item();
    Format f = Format.INSTANCE;
    Map<String, Object> model = new LinkedHashMap<>();
    model.put("item", i);
    model.put("doneMessage", done == null ? null : doneMessage(done));
    model.put("facts", facts(d));
    RedrivePreview preview = console.admin.redrivePreview(id);
    model.put("horizon", horizon(preview));
    model.put(
        "horizonCheck",
        "A redrive now (checked at "
            + preview.now()
            + "): "
            + (preview.wouldRedrive()
                ? "would go through."
                : "would be refused: " + why(preview.refusal()) + "."));
    model.put("refusal", refusal == null ? null : refusal(request, i, refusal));
    List<Json> json = new ArrayList<>();
    json.add(json(i.workId(), "payload", "Payload", d.payload()));
    if (d.result() != null) {
      json.add(json(i.workId(), "result", "Result", d.result()));
    }
    model.put("json", json);
    model.put(
        "attempts",
        d.attempts().stream()
            .map(
                a ->
                    List.of(
                        f.text(a.generation()),
                        f.text(a.worker()),
                        f.text(a.claimedAt()),
                        f.text(a.endedAt()),
                        f.text(a.ending()),
                        a.errorKind() == null ? "\u2014" : a.errorKind() + ": " + a.error(),
                        f.outcome(a.outcome())))
            .toList());
    model.put("audit", audit(d));
    model.put("waitsFor", dependencyLinks(console.admin.dependencies(id)));
    List<Dependency> dependents = console.admin.dependents(id, MAX_DEPENDENTS_SHOWN + 1);
    model.put(
        "waitedForBy",
        dependencyLinks(dependents.subList(0, Math.min(dependents.size(), MAX_DEPENDENTS_SHOWN))));
    model.put("moreDependents", dependents.size() > MAX_DEPENDENTS_SHOWN);
    model.put("maxDependents", MAX_DEPENDENTS_SHOWN);
    model.put("actions", actions(d));
    return console.page(request, "item", "Work " + id, model, status);
  }

  private static List<Fact> facts(WorkDetail d) {
    WorkItem i = d.item();
    Format f = Format.INSTANCE;
    List<Fact> facts = new ArrayList<>();
    facts.add(new Fact("State", i.state()));
    facts.add(new Fact("Kind", i.kind()));
    facts.add(new Fact("Queue", i.queue()));
    facts.add(new Fact("Priority", f.text(i.priority())));
    facts.add(new Fact("Claim generation", f.text(i.generation())));
    facts.add(new Fact("Attempts", i.attempts() + " / " + i.maxAttempts()));
    facts.add(new Fact("Created", f.text(i.createdAt())));
    facts.add(new Fact("Available at", f.text(i.availableAt())));
    facts.add(new Fact("First attempt", f.text(i.firstAttemptAt())));
    facts.add(new Fact("Claimed by", f.text(i.claimedBy())));
    facts.add(new Fact("Lease until", f.text(i.leaseUntil())));
    facts.add(new Fact("Completed", f.text(i.completedAt())));
    facts.add(new Fact("Deadline", f.text(i.deadline())));
    facts.add(
        new Fact(
            "Ordering key",
            i.orderingKey() == null ? "\u2014" : i.orderingKey() + " #" + i.sequence()));
    facts.add(
        new Fact(
            "Last error",
            i.lastErrorKind() == null ? "\u2014" : i.lastErrorKind() + ": " + i.lastError()));
    facts.add(
        new Fact(
            "Outcome evidence",
            i.outcome() == null ? "nothing known yet" : f.outcome(i.outcome()),
            i.outcome()));
    facts.add(new Fact("Milestone", f.text(d.milestone())));
    facts.add(new Fact("Receiver reference", f.text(i.receiverRef())));
    facts.add(new Fact("Cancel requested", f.text(i.cancelRequestedAt())));
    return facts;
  }

  private static String horizon(RedrivePreview preview) {
    if (preview.firstAttemptAt() == null) {
      return "Never attempted: no horizon applies yet.";
    }
    return "First attempt at "
        + preview.firstAttemptAt()
        + "; the receiver's deduplication horizon for this kind"
        + (preview.kindRegistered()
            ? ""
            : " (no registered policy: the default "
                + Format.age(KindPolicy.DEFAULT_DEDUP_HORIZON)
                + ")")
        + " ends at "
        + preview.horizonEnd()
        + (preview.pastHorizon()
            ? ". It has passed: the receiver may no longer recognise the ID and apply"
                + " it twice, so a redrive is refused unless you override the horizon."
            : ". A redrive now is within it.");
  }

  /** The redrive and cancel audits and the supersede links in both directions. */
  private List<AuditLine> audit(WorkDetail d) {
    Format f = Format.INSTANCE;
    List<AuditLine> lines = new ArrayList<>();
    for (WorkDetail.Redrive r : d.redrives()) {
      lines.add(
          new AuditLine(
              f.text(r.at()),
              "redrive",
              r.actor(),
              r.reason(),
              "from "
                  + r.fromState()
                  + ", generation "
                  + r.fromGeneration()
                  + (r.forced() ? ", override" : ""),
              null));
    }
    for (WorkDetail.Cancel c : d.cancels()) {
      lines.add(
          new AuditLine(
              f.text(c.at()),
              "cancel",
              c.actor(),
              c.reason(),
              "from " + c.fromState() + ": " + cancelResult(c.result()),
              null));
    }
    for (WorkDetail.SupersedeLink s : d.supersedes()) {
      lines.add(
          new AuditLine(
              f.text(s.at()),
              "supersedes",
              s.actor(),
              s.reason(),
              "replaces ",
              new Link(s.supersedesWorkId(), itemUrl(s.supersedesWorkId()))));
    }
    for (WorkDetail.SupersedeLink s : d.supersededBy()) {
      lines.add(
          new AuditLine(
              f.text(s.at()),
              "superseded",
              s.actor(),
              s.reason(),
              "replaced by ",
              new Link(s.workId(), itemUrl(s.workId()))));
    }
    return lines;
  }

  /** Each dependency (or dependent) as a link to its item, with its state and what it holds. */
  private List<Link> dependencyLinks(List<Dependency> deps) {
    return deps.stream()
        .map(
            dep ->
                new Link(
                    dep.workId()
                        + ": "
                        + (dep.state() == null ? "gone (purged)" : dep.state())
                        + (dep.superseded() ? ", superseded" : "")
                        + (dep.blockedReason() == null
                            ? ""
                            : " \u2014 holds its dependents (" + dep.blockedReason() + ")"),
                    itemUrl(dep.workId())))
        .toList();
  }

  private String itemUrl(String workId) {
    return Format.url(console.mount + "/item", "id", workId);
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

  private Refusal refusal(HttpServletRequest request, WorkItem i, RedriveRefusedException refusal) {
    boolean past = refusal.reason() == RedriveRefusedException.Reason.PAST_DEDUP_HORIZON;
    boolean running = refusal.reason() == RedriveRefusedException.Reason.RUNNING;
    String field = past ? "overrideHorizon" : "force";
    List<String> kept = new ArrayList<>();
    // An override already confirmed in this request is carried into the next form.
    for (String other : List.of("overrideHorizon", "force")) {
      if (request.getParameter(other) != null && !other.equals(field)) {
        kept.add(other);
      }
    }
    return new Refusal(
        "Nothing changed: " + why(refusal.reason()) + ". It is " + i.state() + " now.",
        Format.INSTANCE.text(refusal.firstAttemptAt()),
        Format.INSTANCE.text(refusal.horizonEnd()),
        past,
        running,
        running || !console.canAct(request) ? null : field,
        kept);
  }

  /**
   * Redrive for ended work (failed; done or cancelled only with the override, which the refusal
   * asks for), cancel for unfinished or failed work, supersede for work whose effect has not
   * happened and that no replacement supersedes yet.
   */
  private static Actions actions(WorkDetail d) {
    String state = d.item().state();
    boolean failed = state.equals(WorkState.FAILED.sql());
    boolean done = state.equals(WorkState.DONE.sql());
    boolean cancelled = state.equals(WorkState.CANCELLED.sql());
    List<String> notApplying = new ArrayList<>();
    boolean redrive = failed || done || cancelled;
    if (!redrive) {
      notApplying.add("Redrive: the work has not ended (it is " + state + ").");
    }
    boolean cancel = !done && !cancelled;
    if (!cancel) {
      notApplying.add("Cancel: the work has already ended (" + state + ").");
    }
    boolean supersede = false;
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
      supersede = true;
    }
    return new Actions(
        redrive,
        failed ? "" : " The work is " + state + ", not failed: you will be asked to confirm it.",
        cancel,
        supersede,
        notApplying);
  }

  /**
   * A payload or result, pretty-printed; over {@link #MAX_SHOWN_PAYLOAD} characters cut, with its
   * length. The download link is always there: the stored JSON as a file.
   */
  private Json json(String workId, String part, String title, String json) {
    String shown = pretty(json);
    String download = Format.url(console.mount + "/item/download", "id", workId, "part", part);
    String cutNote = null;
    if (shown != null && shown.length() > MAX_SHOWN_PAYLOAD) {
      cutNote =
          "Shown cut to the first "
              + MAX_SHOWN_PAYLOAD
              + " of "
              + shown.length()
              + " characters; download it whole: ";
      shown = shown.substring(0, MAX_SHOWN_PAYLOAD) + "\n\u2026 cut";
    }
    return new Json(title, part, shown == null ? "\u2014" : shown, cutNote, download);
  }

  static String pretty(String json) {
    if (json == null) {
      return null;
    }
    try {
      JsonNode node = PRETTY.readTree(json);
      return PRETTY.writeValueAsString(node);
    } catch (RuntimeException e) {
      return json;
    }
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
    console.guard(request, false);
    if (!part.equals("payload") && !part.equals("result")) {
      throw new InvalidAdminRequestException("part", "must be payload or result, was " + part);
    }
    WorkDetail d = console.admin.show(id).orElseThrow(() -> new WorkNotFoundException(id));
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
    console.guard(request, true);
    if ((force || overrideHorizon) && !id.equals(confirm)) {
      throw ConsoleRefusal.badRequest(confirmRefused(id, confirm), null);
    }
    RedriveRequest r = RedriveRequest.of(Console.actor(user), reason);
    if (force) {
      r = r.forced();
    }
    if (overrideHorizon) {
      r = r.overridingHorizon();
    }
    try {
      console.admin.redrive(id, r);
    } catch (RedriveRefusedException e) {
      return itemPage(request, id, null, e, HttpStatus.CONFLICT);
    }
    return done(id, "redriven");
  }

  /**
   * The override form's confirmation refused, in its words: its label, what was typed, and the work
   * ID it must repeat.
   */
  static String confirmRefused(String id, String confirm) {
    String label = "Type the work ID to confirm the override";
    return confirm == null || confirm.isBlank()
        ? label + " is empty; type " + ConsoleErrors.shown(id) + " exactly to redrive anyway"
        : label
            + " '"
            + ConsoleErrors.shown(confirm)
            + "' is not the work ID; type "
            + ConsoleErrors.shown(id)
            + " exactly to redrive anyway";
  }

  @PostMapping("/item/cancel")
  ResponseEntity<String> cancel(
      HttpServletRequest request,
      Principal user,
      @RequestParam String id,
      @RequestParam(required = false) String reason) {
    console.guard(request, true);
    CancelResult r = console.admin.cancel(id, Console.actor(user), reason);
    if (r.status() == CancelResult.Status.NOT_FOUND) {
      throw new WorkNotFoundException(id);
    }
    return done(id, "cancel-" + r.status().name().toLowerCase(Locale.ROOT));
  }

  @PostMapping("/item/supersede")
  ResponseEntity<String> supersede(
      HttpServletRequest request,
      Principal user,
      @RequestParam String id,
      @RequestParam String newId,
      @RequestParam String payload,
      @RequestParam(required = false) String reason) {
    console.guard(request, true);
    WorkItem old = console.admin.show(id).orElseThrow(() -> new WorkNotFoundException(id)).item();
    SupersedeResult r;
    try {
      Work replacement = Work.of(newId, old.kind(), payload).queue(old.queue());
      r = console.admin.supersede(id, replacement, Console.actor(user), reason);
    } catch (InvalidWorkException e) {
      throw asSupersedeForm(e);
    }
    return done(r.newWorkId(), "superseded");
  }

  /** The supersede form's fields, by the names Relay's refusal of the replacement gives them. */
  private static final Map<String, String> SUPERSEDE_FIELDS =
      Map.of("workId", "New work ID", "payload", "Payload (JSON)");

  /**
   * Relay's refusal of the replacement, naming the form's field ("New work ID 'has space' may only
   * contain ...") instead of Relay's ({@code workId}); a refusal of another field as it is.
   */
  static RuntimeException asSupersedeForm(InvalidWorkException e) {
    String label = SUPERSEDE_FIELDS.get(e.field());
    String message = e.getMessage();
    // "invalid work[ 'ID']: FIELD PROBLEM": a work ID holds no space, so the first ": FIELD " ends
    // the prefix.
    String marker = ": " + e.field() + " ";
    int at = message.indexOf(marker);
    if (label == null || at < 0) {
      return e;
    }
    return ConsoleRefusal.badRequest(label + " " + message.substring(at + marker.length()), null);
  }

  private ResponseEntity<String> done(String id, String what) {
    return Console.seeOther(Format.url(console.mount + "/item", "id", id, "done", what));
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
}
