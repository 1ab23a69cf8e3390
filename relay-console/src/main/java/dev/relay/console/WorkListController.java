package dev.relay.console;

import dev.relay.WorkState;
import dev.relay.admin.WorkFilter;
import dev.relay.admin.WorkItem;
import dev.relay.admin.WorkPage;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;

/**
 * The work list: the filters of {@code relay list}, oldest first, in keyset pages ("Next page"
 * carries an opaque cursor, never an offset).
 */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class WorkListController {
  /** A text filter of the list: its request parameter and its label. */
  record TextFilter(String name, String label) {}

  static final List<TextFilter> TEXT_FILTERS =
      List.of(
          new TextFilter("kind", "Kind"),
          new TextFilter("queue", "Queue"),
          new TextFilter("key", "Ordering key"),
          new TextFilter("errorKind", "Error kind"),
          new TextFilter("outcome", "Outcome (delivered, not_delivered or unknown)"),
          new TextFilter("blocked", "Held by a dependency (any or a reason)"),
          new TextFilter("olderThan", "Created at least (30s, 5m, 2h, 7d) ago"),
          new TextFilter("newerThan", "Created less than (age) ago"));

  private final Console console;

  WorkListController(Console console) {
    this.console = console;
  }

  /** One listed item and its link. */
  record Row(WorkItem item, String href, String lastError) {}

  @GetMapping("/work")
  ResponseEntity<String> list(
      HttpServletRequest request, @RequestParam(required = false) String after) {
    console.guard(request, false);
    Map<String, String> filters = filters(request);
    WorkPage page =
        console.admin.list(filter(filters), blankToNull(after), console.properties.getPageSize());
    String base = console.mount + "/work";
    Map<String, String> next = new LinkedHashMap<>(filters);
    next.put("after", page.nextCursor());
    Map<String, Object> model = new LinkedHashMap<>();
    model.put("filters", filters);
    model.put("filtered", filtered(filters));
    model.put("textFilters", TEXT_FILTERS);
    model.put("states", Arrays.stream(WorkState.values()).map(WorkState::sql).toList());
    model.put("pageSize", console.properties.getPageSize());
    model.put(
        "rows",
        page.items().stream()
            .map(
                i ->
                    new Row(
                        i,
                        Format.url(console.mount + "/item", "id", i.workId()),
                        i.lastErrorKind() == null
                            ? "\u2014"
                            : i.lastErrorKind() + ": " + i.lastError()))
            .toList());
    model.put("first", after != null && !after.isBlank() ? Format.url(base, filters) : null);
    model.put("next", page.hasMore() ? Format.url(base, next) : null);
    return console.page(request, "work", "Work", model, HttpStatus.OK);
  }

  /** The list's filter parameters of a request, in order, blank ones as null. */
  static Map<String, String> filters(HttpServletRequest request) {
    Map<String, String> filters = new LinkedHashMap<>();
    filters.put("state", blankToNull(request.getParameter("state")));
    for (TextFilter t : TEXT_FILTERS) {
      filters.put(t.name(), blankToNull(request.getParameter(t.name())));
    }
    return filters;
  }

  /** Whether any of the list's filters is set: a bulk action acts only on a filtered list. */
  static boolean filtered(Map<String, String> filters) {
    return filters.values().stream().anyMatch(v -> v != null);
  }

  /** The admin filter of the list's parameters (blank ones already null). */
  static WorkFilter filter(Map<String, String> filters) {
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
    if (filters.get("olderThan") != null) {
      f = f.olderThan(age("olderThan", filters.get("olderThan")));
    }
    if (filters.get("newerThan") != null) {
      f = f.newerThan(age("newerThan", filters.get("newerThan")));
    }
    if ("any".equals(filters.get("blocked"))) {
      f = f.blocked();
    } else if (filters.get("blocked") != null) {
      f = f.blockedReason(filters.get("blocked")); // an unknown reason is refused by name
    }
    return f;
  }

  private static final java.util.regex.Pattern AGE =
      java.util.regex.Pattern.compile("(\\d{1,9})\\s*(s|m|min|h|d)");

  /** An age as the list's filter takes it: a number and a unit, s, m (or min), h or d. */
  static java.time.Duration age(String field, String text) {
    java.util.regex.Matcher m = AGE.matcher(text);
    if (!m.matches()) {
      throw new dev.relay.admin.InvalidAdminRequestException(
          field, "'" + text + "' is not an age: a number and s, m, h or d (30s, 5m, 2h, 7d)");
    }
    long n = Long.parseLong(m.group(1));
    return switch (m.group(2)) {
      case "s" -> java.time.Duration.ofSeconds(n);
      case "m", "min" -> java.time.Duration.ofMinutes(n);
      case "h" -> java.time.Duration.ofHours(n);
      default -> java.time.Duration.ofDays(n);
    };
  }

  static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.strip();
  }
}
