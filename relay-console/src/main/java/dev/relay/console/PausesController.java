package dev.relay.console;

import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.Pause;
import dev.relay.admin.PauseEvent;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;

/**
 * Pauses: what is paused now (a queue, a kind, or a pair), since when, by whom and why, until when;
 * the pause audit; and, for the operator, the forms that pause and resume through {@link
 * dev.relay.admin.Admin#pause} and {@link dev.relay.admin.Admin#resume}, the same calls as {@code
 * relay pause} and {@code relay resume}. Each action records the signed-in user and the reason.
 */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class PausesController {
  /** How many audit rows the page shows. */
  static final int HISTORY_SHOWN = 50;

  private final Console console;

  PausesController(Console console) {
    this.console = console;
  }

  /** One pause in force as shown, with the resume form's target. */
  record Row(Pause pause, String queue, String kind, String since, String until) {}

  /** One audit row as shown. */
  record Event(String at, String action, String target, String actor, String reason) {}

  @GetMapping("/pauses")
  ResponseEntity<String> pauses(
      HttpServletRequest request, @RequestParam(required = false) String done) {
    console.guard(request, false);
    Format f = Format.INSTANCE;
    Map<String, Object> model = new LinkedHashMap<>();
    model.put("doneMessage", done == null ? null : doneMessage(done));
    model.put(
        "rows",
        console.admin.pauses().stream()
            .map(
                p ->
                    new Row(
                        p,
                        p.queue() == null ? "" : p.queue(),
                        p.kind() == null ? "" : p.kind(),
                        f.text(p.pausedAt()),
                        p.resumeAt() == null ? "until resumed" : f.text(p.resumeAt())))
            .toList());
    model.put(
        "history",
        console.admin.pauseHistory(HISTORY_SHOWN).stream().map(PausesController::event).toList());
    model.put("historyShown", HISTORY_SHOWN);
    return console.page(request, "pauses", "Pauses", model, HttpStatus.OK);
  }

  @PostMapping("/pauses/pause")
  ResponseEntity<String> pause(
      HttpServletRequest request,
      Principal user,
      @RequestParam(required = false) String queue,
      @RequestParam(required = false) String kind,
      @RequestParam(required = false) String reason,
      @RequestParam(required = false) String resumeAt) {
    console.guard(request, true);
    console.admin.pause(
        WorkListController.blankToNull(queue),
        WorkListController.blankToNull(kind),
        Console.actor(user),
        reason,
        resumeAt(WorkListController.blankToNull(resumeAt)));
    return Console.seeOther(Format.url(console.mount + "/pauses", "done", "paused"));
  }

  @PostMapping("/pauses/resume")
  ResponseEntity<String> resume(
      HttpServletRequest request,
      Principal user,
      @RequestParam(required = false) String queue,
      @RequestParam(required = false) String kind,
      @RequestParam(required = false) String reason) {
    console.guard(request, true);
    Optional<Pause> lifted =
        console.admin.resume(
            WorkListController.blankToNull(queue),
            WorkListController.blankToNull(kind),
            Console.actor(user),
            reason);
    return Console.seeOther(
        Format.url(
            console.mount + "/pauses", "done", lifted.isPresent() ? "resumed" : "not-paused"));
  }

  /**
   * The automatic resume as the form sends it: a browser's {@code datetime-local} value ({@code
   * 2026-12-04T05:00}), read as UTC like every time the console shows, or an instant with its
   * offset ({@code 2026-12-04T05:00:00Z}).
   */
  static Instant resumeAt(String value) {
    if (value == null) {
      return null;
    }
    try {
      return Instant.parse(value);
    } catch (DateTimeParseException notAnInstant) {
      try {
        return LocalDateTime.parse(value).toInstant(ZoneOffset.UTC);
      } catch (DateTimeParseException e) {
        // Said in the form's words, repeating what was typed, by ConsoleErrors.
        throw new InvalidAdminRequestException(
            "resumeAt", "is not a time (2026-12-04T05:00 in UTC, or an instant with its offset)");
      }
    }
  }

  private static Event event(PauseEvent e) {
    String action =
        switch (e.action()) {
          case "pause" ->
              "paused"
                  + (e.resumeAt() == null ? "" : " (resumes by itself at " + e.resumeAt() + ")");
          case "resume" -> e.pausedAt() == null ? "resumed (nothing was paused)" : "resumed";
          case "auto_resume" -> "resumed by itself";
          default -> e.action();
        };
    return new Event(e.at().toString(), action, e.target(), e.actor(), e.reason());
  }

  private static String doneMessage(String done) {
    return switch (done) {
      case "paused" ->
          "Paused: no worker claims this work until it is resumed; running work finishes.";
      case "resumed" -> "Resumed: the workers were woken and claim the held work now.";
      case "not-paused" -> "Nothing was paused for that target; the resume was recorded.";
      default -> "Done.";
    };
  }
}
