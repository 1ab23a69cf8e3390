package dev.relay.console;

import dev.relay.Outbox;
import dev.relay.WorkState;
import dev.relay.admin.WorkFilter;
import dev.relay.admin.WorkItem;
import dev.relay.admin.WorkPage;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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

  /**
   * The admin filter of the list's parameters (blank ones already null), each value checked first
   * and refused in the form's words, repeating what was typed ({@link ConsoleRefusal}): Relay's own
   * refusal would name its internal fields and show an age as an ISO-8601 duration.
   */
  static WorkFilter filter(Map<String, String> filters) {
    WorkFilter f = WorkFilter.all();
    String state = filters.get("state");
    if (state != null) {
      f = f.state(oneOf("State", state, WorkFilter.STATES));
    }
    if (filters.get("kind") != null) {
      f = f.kind(name("Kind", filters.get("kind")));
    }
    if (filters.get("queue") != null) {
      f = f.queue(name("Queue", filters.get("queue")));
    }
    if (filters.get("key") != null) {
      f = f.orderingKey(filters.get("key"));
    }
    if (filters.get("errorKind") != null) {
      f = f.errorKind(filters.get("errorKind"));
    }
    String outcome = filters.get("outcome");
    if (outcome != null) {
      f = f.outcome(oneOf("Outcome", outcome, WorkFilter.OUTCOMES));
    }
    if (filters.get("olderThan") != null) {
      f = f.olderThan(age("Created at least", filters.get("olderThan")));
    }
    if (filters.get("newerThan") != null) {
      f = f.newerThan(age("Created less than", filters.get("newerThan")));
    }
    String blocked = filters.get("blocked");
    if ("any".equals(blocked)) {
      f = f.blocked();
    } else if (blocked != null) {
      if (!WorkFilter.BLOCKED_REASONS.contains(blocked)) {
        throw refused(
            "Held by a dependency '"
                + ConsoleErrors.shown(blocked)
                + "' is neither any nor one of "
                + String.join(", ", WorkFilter.BLOCKED_REASONS));
      }
      f = f.blockedReason(blocked);
    }
    return f;
  }

  /** {@code value}, unless it is not one of {@code allowed}: refused, naming the filter. */
  private static String oneOf(String named, String value, List<String> allowed) {
    if (!allowed.contains(value)) {
      throw refused(
          named
              + " '"
              + ConsoleErrors.shown(value)
              + "' is not one of "
              + String.join(", ", allowed));
    }
    return value;
  }

  /**
   * A kind or queue name, unless no work can have it ({@link Outbox#nameProblem}): such a filter
   * matches nothing, and a bulk action would be stored with it all the same.
   */
  private static String name(String named, String value) {
    if (Outbox.nameProblem(value) != null) {
      throw refused(
          named
              + " '"
              + ConsoleErrors.shown(value)
              + "' is a name no work can have: a kind or queue name is 1-"
              + Outbox.MAX_NAME_LENGTH
              + " characters from A-Z a-z 0-9 . _ - :");
    }
    return value;
  }

  private static final Pattern AGE = Pattern.compile("(\\d{1,9})\\s*(s|m|min|h|d)");

  /**
   * An age as the list's filter takes it: a number and a unit, s, m (or min), h or d, at most
   * {@link WorkFilter#MAX_AGE}; refused naming the filter ({@code named}) and repeating the text.
   */
  static Duration age(String named, String text) {
    Matcher m = AGE.matcher(text);
    if (!m.matches()) {
      throw refused(
          named
              + " '"
              + ConsoleErrors.shown(text)
              + "' ago: not an age; give a number and s, m, h or d (30s, 5m, 2h, 7d)");
    }
    long n = Long.parseLong(m.group(1));
    Duration age =
        switch (m.group(2)) {
          case "s" -> Duration.ofSeconds(n);
          case "m", "min" -> Duration.ofMinutes(n);
          case "h" -> Duration.ofHours(n);
          default -> Duration.ofDays(n);
        };
    if (age.compareTo(WorkFilter.MAX_AGE) > 0) {
      throw refused(
          named
              + " '"
              + text
              + "' ago: an age is at most 100 years ("
              + WorkFilter.MAX_AGE.toDays()
              + "d)");
    }
    return age;
  }

  private static ConsoleRefusal refused(String message) {
    return ConsoleRefusal.badRequest(message, null);
  }

  static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.strip();
  }
}
