package dev.relay.console;

import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.Maintenance;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.PurgeResult;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import java.util.HashMap;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;

/**
 * The purge dry run: counts what the application's maintenance loop would delete, with the purge
 * policy it was configured with (under the starter and {@code relay serve}, {@code
 * relay.maintenance.*}), or with {@link PurgePolicy#DEFAULT} when the application runs none; the
 * page says which. The console never purges.
 */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class PurgeController {
  private final Console console;
  private final ObjectProvider<Maintenance> maintenance;

  /**
   * @param maintenance the application's maintenance loop, if it has one (looked up per request, so
   *     the console needs no ordering against the auto-configuration that makes it)
   */
  PurgeController(Console console, ObjectProvider<Maintenance> maintenance) {
    this.console = console;
    this.maintenance = maintenance;
  }

  /** The policy a dry run counts with, and the page's words for it. */
  record Policy(PurgePolicy policy, String source, String note) {}

  /** The maintenance loop's policy, or the default when the application runs no loop. */
  Policy policy() {
    Maintenance m = maintenance.getIfUnique();
    if (m == null) {
      return new Policy(
          PurgePolicy.DEFAULT,
          "the default purge policy",
          "This application runs no maintenance loop (relay.maintenance.enabled=false), so the"
              + " retention of the process that runs one may differ.");
    }
    return new Policy(
        m.config().policy(),
        "the purge policy of this application's maintenance loop (relay.maintenance.*)",
        null);
  }

  @GetMapping("/purge")
  ResponseEntity<String> purgeForm(HttpServletRequest request) {
    console.guard(request, false);
    return console.page(request, "purge", "Purge dry run", model(policy()), HttpStatus.OK);
  }

  @PostMapping("/purge")
  ResponseEntity<String> purgeDryRun(
      HttpServletRequest request, Principal user, @RequestParam(required = false) String reason) {
    console.guard(request, true);
    if (reason == null || reason.isBlank()) {
      throw new InvalidAdminRequestException("reason", "is empty");
    }
    Policy p = policy();
    PurgeResult r = console.admin.purge(p.policy(), true, Console.actor(user), reason);
    Map<String, Object> model = model(p);
    model.put("result", r);
    return console.page(request, "purge-counted", "Purge dry run", model, HttpStatus.OK);
  }

  private static Map<String, Object> model(Policy p) {
    Map<String, Object> model = new HashMap<>();
    model.put("source", p.source());
    model.put("policy", purgePolicy(p.policy()));
    model.put("note", p.note());
    return model;
  }

  /** A purge policy as an operator reads it. */
  static String purgePolicy(PurgePolicy p) {
    return "done and cancelled work kept "
        + Format.age(p.workRetention())
        + " after it ended (and at least its kind's deduplication horizon), attempt history and"
        + " audits "
        + Format.age(p.historyRetention())
        + ", tombstones of purged work "
        + Format.age(p.identityHorizon())
        + "; failed work is never purged";
  }
}
