package dev.relay.console;

import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.PurgePolicy;
import dev.relay.admin.PurgeResult;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;

/** The purge dry run: counts what the default policy would delete; the console never purges. */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class PurgeController {
  private final Console console;

  PurgeController(Console console) {
    this.console = console;
  }

  @GetMapping("/purge")
  ResponseEntity<String> purgeForm(HttpServletRequest request) {
    console.guard(request, false);
    return console.page(
        request,
        "purge",
        "Purge dry run",
        Map.of("policy", purgePolicy(PurgePolicy.DEFAULT)),
        HttpStatus.OK);
  }

  @PostMapping("/purge")
  ResponseEntity<String> purgeDryRun(
      HttpServletRequest request, Principal user, @RequestParam(required = false) String reason) {
    console.guard(request, true);
    if (reason == null || reason.isBlank()) {
      throw new InvalidAdminRequestException("reason", "is empty");
    }
    PurgeResult r = console.admin.purge(PurgePolicy.DEFAULT, true, Console.actor(user), reason);
    return console.page(
        request, "purge-counted", "Purge dry run", Map.of("result", r), HttpStatus.OK);
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
