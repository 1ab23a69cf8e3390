package dev.relay.serve;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.view.RedirectView;

/** {@code GET /}: a redirect to the console, so the bare address leads somewhere. */
@RestController
final class RootRedirect {
  private final String console;

  RootRedirect(String console) {
    this.console = console;
  }

  @GetMapping("/")
  RedirectView root() {
    return new RedirectView(console, true);
  }
}
