package dev.relay.console;

import dev.relay.admin.Admin;
import dev.relay.admin.FailureGroup;
import jakarta.servlet.http.HttpServletRequest;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;

/** Failed work now, counted per queue, kind and recorded error kind, each linking to its list. */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class FailuresController {
  private final Console console;

  FailuresController(Console console) {
    this.console = console;
  }

  /** A group and the list it links to. */
  record Row(FailureGroup group, String href) {}

  @GetMapping("/failures")
  ResponseEntity<String> failures(HttpServletRequest request) {
    console.guard(request, false);
    List<FailureGroup> groups = console.admin.failureGroups();
    List<Row> rows =
        groups.stream()
            .map(
                g ->
                    new Row(
                        g,
                        // Without a recorded error kind the link lists all failed of the kind.
                        Format.url(
                            console.mount + "/work",
                            "state",
                            "failed",
                            "queue",
                            g.queue(),
                            "kind",
                            g.kind(),
                            "errorKind",
                            g.reason())))
            .toList();
    return console.page(
        request,
        "failures",
        "Failures by reason",
        Map.of(
            "rows",
            rows,
            "max",
            Admin.MAX_FAILURE_GROUPS,
            "cut",
            groups.size() >= Admin.MAX_FAILURE_GROUPS),
        HttpStatus.OK);
  }
}
