package dev.relay.console;

import dev.relay.FlowLimits;
import dev.relay.KindPolicy;
import dev.relay.admin.RegisteredKind;
import jakarta.servlet.http.HttpServletRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;

/** Each kind's policy as its workers registered it, and its flow limits. */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class KindsController {
  private final Console console;

  KindsController(Console console) {
    this.console = console;
  }

  /** A registered kind in words. */
  record Row(
      RegisteredKind kind,
      String href,
      String backoff,
      String retryWindow,
      String maxRunTime,
      String horizon,
      String unknownOutcome,
      String limits,
      String registered) {}

  @GetMapping("/kinds")
  ResponseEntity<String> kinds(HttpServletRequest request) {
    console.guard(request, false);
    Format f = Format.INSTANCE;
    List<Row> rows =
        console.admin.kinds().stream()
            .map(
                k ->
                    new Row(
                        k,
                        Format.url(console.mount + "/work", "kind", k.kind()),
                        f.duration(k.backoffBase()) + ", " + f.duration(k.backoffCap()),
                        f.duration(k.maxElapsed()),
                        f.duration(k.maxRunTime()),
                        k.dedupHorizon() != null && k.dedupHorizon().isZero()
                            ? "none (the receiver does not deduplicate)"
                            : f.duration(k.dedupHorizon()),
                        unknownOutcome(k.unknownOutcome()),
                        limits(k.limits()),
                        k.registeredBy() + ", " + k.registeredAt()))
            .toList();
    String defaults =
        "max attempts "
            + KindPolicy.DEFAULT_MAX_ATTEMPTS
            + ", deduplication horizon "
            + Format.age(KindPolicy.DEFAULT_DEDUP_HORIZON)
            + ", retry window "
            + Format.age(KindPolicy.DEFAULT_MAX_ELAPSED);
    return console.page(
        request, "kinds", "Kinds", Map.of("rows", rows, "defaults", defaults), HttpStatus.OK);
  }

  private static String unknownOutcome(String stored) {
    return switch (stored) {
      case "retry" -> "retry (a duplicate is possible)";
      case "park" -> "park as failed, outcome unknown (an omission is possible)";
      case "reconcile" -> "reconcile: ask the receiver first";
      default -> stored;
    };
  }

  static String limits(FlowLimits l) {
    if (l == null || !l.limited()) {
      return "none";
    }
    List<String> parts = new ArrayList<>();
    if (l.maxRunning() != null) {
      parts.add("at most " + l.maxRunning() + " running");
    }
    if (l.maxRunningPerGroup() != null) {
      parts.add("at most " + l.maxRunningPerGroup() + " running per group");
    }
    if (l.rateLimit() != null) {
      parts.add(l.rateLimit() + " claims per " + Format.age(l.rateInterval()));
    }
    return String.join("; ", parts);
  }
}
