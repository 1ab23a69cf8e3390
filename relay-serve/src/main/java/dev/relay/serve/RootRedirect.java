package dev.relay.serve;

import java.time.Duration;
import org.springframework.http.CacheControl;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.view.RedirectView;

/**
 * {@code GET /}: a redirect to the console, so the bare address leads somewhere; and {@code GET
 * /favicon.ico}, which a browser asks for on its own: no content (the console's pages name an icon
 * of their own), cached for a day.
 */
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

  @GetMapping("/favicon.ico")
  ResponseEntity<Void> favicon() {
    return ResponseEntity.noContent().cacheControl(CacheControl.maxAge(Duration.ofDays(1))).build();
  }
}
