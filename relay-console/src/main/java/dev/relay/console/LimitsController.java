package dev.relay.console;

import dev.relay.FlowLimits;
import dev.relay.admin.LimitUse;
import jakarta.servlet.http.HttpServletRequest;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;

/**
 * Flow limits in use: per limited kind, live claims against the global limit, the busiest groups
 * against the per-group limit, and claims in the rate window against the rate limit ({@link
 * dev.relay.admin.Admin#limitUse()}).
 */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class LimitsController {
  private final Console console;

  LimitsController(Console console) {
    this.console = console;
  }

  /** One limited kind's use, in words; {@code full} marks a limit reached. */
  record Row(
      String kind,
      String href,
      String running,
      boolean runningFull,
      String groups,
      boolean groupFull,
      String rate,
      boolean rateFull,
      String at) {}

  @GetMapping("/limits")
  ResponseEntity<String> limits(HttpServletRequest request) {
    console.guard(request, false);
    List<Row> rows = console.admin.limitUse().stream().map(this::row).toList();
    return console.page(request, "limits", "Limits", Map.of("rows", rows), HttpStatus.OK);
  }

  private Row row(LimitUse u) {
    FlowLimits l = u.limits();
    String running =
        l.maxRunning() == null
            ? u.running() + " running (no global limit)"
            : u.running() + " of " + l.maxRunning() + " running";
    boolean runningFull = l.maxRunning() != null && u.running() >= l.maxRunning();
    String groups;
    boolean groupFull = false;
    if (l.maxRunningPerGroup() == null) {
      groups = "no per-group limit";
    } else if (u.busiestGroups().isEmpty()) {
      groups = "at most " + l.maxRunningPerGroup() + " per group; none running";
    } else {
      groupFull = u.busiestGroups().get(0).running() >= l.maxRunningPerGroup();
      groups =
          "at most "
              + l.maxRunningPerGroup()
              + " per group; busiest: "
              + u.busiestGroups().stream()
                  .map(
                      g ->
                          (g.group().isEmpty() ? "(no group)" : g.group())
                              + " "
                              + g.running()
                              + (g.running() >= l.maxRunningPerGroup() ? " (at the limit)" : ""))
                  .collect(Collectors.joining(", "));
    }
    String rate =
        l.rateLimit() == null
            ? "no rate limit"
            : u.windowClaims()
                + " of "
                + l.rateLimit()
                + " claims in the last "
                + Format.age(l.rateInterval());
    boolean rateFull =
        l.rateLimit() != null && u.windowClaims() != null && u.windowClaims() >= l.rateLimit();
    return new Row(
        u.kind(),
        Format.url(console.mount + "/work", "kind", u.kind(), "state", "running"),
        running,
        runningFull,
        groups,
        groupFull,
        rate,
        rateFull,
        String.valueOf(u.at()));
  }
}
