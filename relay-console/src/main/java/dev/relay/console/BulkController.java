package dev.relay.console;

import dev.relay.admin.BulkAction;
import dev.relay.admin.BulkCounts;
import dev.relay.admin.BulkPreview;
import dev.relay.admin.BulkProgress;
import dev.relay.admin.WorkFilter;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;

/**
 * Bulk redrive, cancel and purge of every item a work list's filter matches: a preview that counts
 * what would change and what would be refused (nothing written), then, for the operator, a
 * confirmation with a reason that stores the bulk action ({@link dev.relay.admin.Admin#startBulk})
 * and runs it on a thread of the console ({@link dev.relay.admin.Admin#runBulk}), and a progress
 * page read from the stored action, so it survives a reload. The same admin calls as {@code relay
 * redrive}, {@code relay cancel} and {@code relay purge} with filters, batch for batch.
 */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class BulkController implements DisposableBean {
  private static final Logger log = LoggerFactory.getLogger(BulkController.class);

  /** How many bulk actions the list shows. */
  static final int LISTED = 20;

  private final Console console;
  private final ExecutorService runner =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "relay-console-bulk");
            t.setDaemon(true);
            return t;
          });

  /** The bulk actions this console process is running now. */
  private final Set<Long> running = ConcurrentHashMap.newKeySet();

  BulkController(Console console) {
    this.console = console;
  }

  /** One line of counts: what it means and how many. */
  record Count(String label, long value, String css) {}

  @GetMapping("/bulk/preview")
  ResponseEntity<String> preview(
      HttpServletRequest request,
      @RequestParam String action,
      @RequestParam(defaultValue = "false") boolean force) {
    console.guard(request, false);
    BulkAction a = BulkAction.of(action);
    Map<String, String> filters = WorkListController.filters(request);
    WorkFilter filter = filtered(filters);
    BulkPreview p = console.admin.bulkPreview(filter, a, force);
    Map<String, Object> model = new LinkedHashMap<>();
    model.put("action", a.sql());
    model.put("verb", verb(a));
    model.put("force", p.force());
    model.put("filters", filters);
    model.put("filterText", describe(filters));
    model.put("listHref", Format.url(console.mount + "/work", filters));
    model.put("counts", counts(a, p.counts(), true));
    model.put("changing", p.counts().changed() + p.counts().requested());
    model.put("matching", p.counts().matching());
    model.put("capped", p.capped());
    return console.page(
        request, "bulk-preview", verb(a) + " every matching item", model, HttpStatus.OK);
  }

  @PostMapping("/bulk")
  ResponseEntity<String> start(
      HttpServletRequest request,
      Principal user,
      @RequestParam String action,
      @RequestParam(defaultValue = "false") boolean force,
      @RequestParam(required = false) String reason) {
    console.guard(request, true);
    BulkAction a = BulkAction.of(action);
    WorkFilter filter = filtered(WorkListController.filters(request));
    BulkProgress p = console.admin.startBulk(filter, a, force, Console.actor(user), reason);
    run(p.id());
    return Console.seeOther(Format.url(console.mount + "/bulk", "id", String.valueOf(p.id())));
  }

  @PostMapping("/bulk/continue")
  ResponseEntity<String> resume(HttpServletRequest request, @RequestParam long id) {
    console.guard(request, true);
    BulkProgress p = bulk(id);
    if (p.running()) {
      run(id);
    }
    return Console.seeOther(Format.url(console.mount + "/bulk", "id", String.valueOf(id)));
  }

  @GetMapping("/bulk")
  ResponseEntity<String> progress(
      HttpServletRequest request, @RequestParam(required = false) Long id) {
    console.guard(request, false);
    if (id == null) {
      List<Map<String, Object>> rows = new ArrayList<>();
      for (BulkProgress p : console.admin.bulks(LISTED)) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("p", p);
        row.put("href", Format.url(console.mount + "/bulk", "id", String.valueOf(p.id())));
        row.put("filter", describe(p.filter()));
        rows.add(row);
      }
      return console.page(
          request, "bulks", "Bulk actions", Map.of("rows", rows, "listed", LISTED), HttpStatus.OK);
    }
    BulkProgress p = bulk(id);
    Map<String, Object> model = new LinkedHashMap<>();
    model.put("p", p);
    model.put("verb", verb(p.action()));
    model.put("filterText", describe(p.filter()));
    model.put("counts", counts(p.action(), p.counts(), false));
    model.put("here", running.contains(id));
    return console.page(request, "bulk", "Bulk action " + id, model, HttpStatus.OK);
  }

  /**
   * The admin filter of a bulk action's filters, refused when there is none: without one the action
   * would match every item in the schema. {@code relay redrive}, {@code cancel} and {@code purge}
   * refuse the same (a work ID or filters); the work list offers no bulk action until filtered.
   */
  private WorkFilter filtered(Map<String, String> filters) {
    if (!WorkListController.filtered(filters)) {
      throw ConsoleRefusal.badRequest(
          "A bulk action needs at least one filter (state, kind, queue, ordering key, error kind,"
              + " outcome, held by a dependency, or age): without one it would act on every item"
              + " in the schema. Nothing changed; filter the work list to act on what it shows.",
          new Link("Open the work list", console.mount + "/work"));
    }
    return WorkListController.filter(filters);
  }

  private BulkProgress bulk(long id) {
    return console
        .admin
        .bulk(id)
        .orElseThrow(
            () ->
                ConsoleRefusal.notFound(
                    "no bulk action has ID " + id,
                    new Link("Open the bulk actions", console.mount + "/bulk")));
  }

  /** Runs bulk action {@code id} on the console's thread, unless this process already runs it. */
  private void run(long id) {
    if (!running.add(id)) {
      return;
    }
    runner.execute(
        () -> {
          try {
            console.admin.runBulk(id);
          } catch (RuntimeException e) {
            // The action stays running with what its committed batches did; Continue resumes it.
            log.warn("bulk action {} stopped: {}", id, e.toString());
          } finally {
            running.remove(id);
          }
        });
  }

  @Override
  public void destroy() {
    // A batch in flight commits or rolls back with its progress; the rest waits for Continue.
    runner.shutdownNow();
  }

  private static String verb(BulkAction a) {
    return switch (a) {
      case REDRIVE -> "Redrive";
      case CANCEL -> "Cancel";
      case PURGE -> "Purge";
    };
  }

  private static String done(BulkAction a) {
    return switch (a) {
      case REDRIVE -> "redriven";
      case CANCEL -> "cancelled";
      case PURGE -> "purged (each leaves a tombstone)";
    };
  }

  private static List<Count> counts(BulkAction a, BulkCounts c, boolean preview) {
    String would = preview ? "would be " : "";
    List<Count> counts = new ArrayList<>();
    counts.add(new Count(preview ? "Matching now" : "Handled so far", c.matching(), "matching"));
    counts.add(new Count(would + done(a), c.changed(), "changed"));
    if (a == BulkAction.CANCEL) {
      counts.add(
          new Count(
              would + "asked to stop (running; an in-flight call is not recalled)",
              c.requested(),
              "requested"));
    }
    if (a == BulkAction.PURGE) {
      counts.add(
          new Count(
              "refused: running (a purge never touches running work)",
              c.refusedRunning(),
              "refused"));
      counts.add(
          new Count(
              "refused: ended within the kind's deduplication horizon (kept as retention keeps it)",
              c.refusedHorizon(),
              "refused"));
    }
    if (a == BulkAction.REDRIVE) {
      counts.add(
          new Count(
              "refused: running (a redrive never touches running work)",
              c.refusedRunning(),
              "refused"));
      counts.add(
          new Count(
              "refused: past the kind's deduplication horizon (redrive one by one to override)",
              c.refusedHorizon(),
              "refused"));
    }
    counts.add(
        new Count(
            switch (a) {
              case REDRIVE -> "refused: not failed (ready, done or cancelled)";
              case CANCEL -> "refused: already ended (done or cancelled)";
              case PURGE ->
                  "refused: not done or cancelled (ready, or failed: redrive or cancel it first)";
            },
            c.refusedState(),
            "refused"));
    if (!preview) {
      counts.add(new Count("gone (purged meanwhile)", c.gone(), "gone"));
    }
    return counts;
  }

  /** A filter in words, from the list's parameters. */
  static String describe(Map<String, String> filters) {
    List<String> parts = new ArrayList<>();
    filters.forEach(
        (name, value) -> {
          if (value != null) {
            parts.add(name + " = " + value);
          }
        });
    return parts.isEmpty() ? "all work" : String.join(", ", parts);
  }

  /** A stored filter in words. */
  static String describe(WorkFilter f) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("state", f.state());
    m.put("kind", f.kind());
    m.put("queue", f.queue());
    m.put("key", f.orderingKey());
    m.put("errorKind", f.errorKind());
    m.put("outcome", f.outcome());
    m.put(
        "blocked", f.blockedReason() != null ? f.blockedReason() : f.blockedOnly() ? "any" : null);
    m.put("olderThan", f.olderThan() == null ? null : Format.age(f.olderThan()));
    m.put("newerThan", f.newerThan() == null ? null : Format.age(f.newerThan()));
    return describe(m);
  }
}
