package dev.relay.console;

import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;

/**
 * Recurring schedules (relay-schedule) as their stored state has them: the latest slot decided and
 * the next one, slots missed (dropped by the missed-slot policy), the policy, and whether the next
 * slot is overdue. Mounted only when the application has relay-schedule; this class names its types
 * only inside method bodies, so it loads without it.
 */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class SchedulesController {
  /** A slot this far past due is shown as overdue (a scheduler's default lateness threshold). */
  static final Duration OVERDUE_AFTER = Duration.ofMinutes(1);

  private static final Pattern ISO_DURATION =
      Pattern.compile("\\bP(?:\\d+D)?(?:T(?:\\d+H)?(?:\\d+M)?(?:\\d+(?:\\.\\d+)?S)?)?\\b");

  private final Console console;
  private final DataSource dataSource;

  SchedulesController(Console console, DataSource dataSource) {
    this.console = console;
    this.dataSource = dataSource;
  }

  /** One schedule in words. */
  record Row(
      String name,
      String kind,
      String kindHref,
      String timing,
      String policy,
      String lastSlot,
      String nextSlot,
      String overdue,
      long enqueued,
      long missed,
      long conflicts,
      String decided) {}

  @GetMapping("/schedules")
  ResponseEntity<String> schedules(HttpServletRequest request) {
    console.guard(request, false);
    Instant now = Instant.now();
    Format f = Format.INSTANCE;
    List<Row> rows =
        dev.relay.schedule.ScheduleStatus.list(dataSource, console.admin.schema()).stream()
            .map(
                s -> {
                  String[] parts = s.definition().split(" missed=", 2);
                  String overdue =
                      s.nextSlot() != null && s.nextSlot().plus(OVERDUE_AFTER).isBefore(now)
                          ? "overdue by " + Format.age(Duration.between(s.nextSlot(), now))
                          : null;
                  return new Row(
                      s.name(),
                      s.kind(),
                      Format.url(console.mount + "/work", "kind", s.kind()),
                      durationsInWords(parts[0]),
                      parts.length > 1 ? policy(parts[1]) : "\u2014",
                      s.lastSlot() == null ? "none yet" : s.lastSlot().toString(),
                      s.nextSlot() == null ? "never again" : s.nextSlot().toString(),
                      overdue,
                      s.enqueued(),
                      s.skipped(),
                      s.conflicts(),
                      s.decidedAt() == null
                          ? "not yet"
                          : s.decidedAt() + " by " + f.text(s.decidedBy()));
                })
            .toList();
    return console.page(request, "schedules", "Schedules", Map.of("rows", rows), HttpStatus.OK);
  }

  /** A missed-slot policy's stored text ({@code skip}, {@code latest}, {@code each(PT1H)}). */
  static String policy(String stored) {
    if (stored.equals("skip")) {
      return "skip: missed slots are dropped";
    }
    if (stored.equals("latest")) {
      return "latest: only the latest missed slot runs";
    }
    if (stored.startsWith("each(") && stored.endsWith(")")) {
      return "each: every missed slot runs, if no older than "
          + durationsInWords(stored.substring(5, stored.length() - 1));
    }
    return durationsInWords(stored);
  }

  /** {@code text} with each ISO-8601 duration in it written in words. */
  static String durationsInWords(String text) {
    Matcher m = ISO_DURATION.matcher(text);
    StringBuilder b = new StringBuilder();
    while (m.find()) {
      String words;
      try {
        words = m.group().length() > 1 ? Format.age(Duration.parse(m.group())) : m.group();
      } catch (RuntimeException e) {
        words = m.group();
      }
      m.appendReplacement(b, Matcher.quoteReplacement(words));
    }
    m.appendTail(b);
    return b.toString();
  }
}
