package dev.relay.console;

import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.springframework.http.CacheControl;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.server.ResponseStatusException;

/**
 * The sign-in page and the console's public static files: its style sheet, its icon (every page
 * names it, so a browser does not ask the application for {@code /favicon.ico}) and its script.
 */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class SignInController {
  private final Console console;

  SignInController(Console console) {
    this.console = console;
  }

  @GetMapping("/login")
  ResponseEntity<String> login(HttpServletRequest request) {
    if (console.mode != Console.Mode.SECURED) {
      throw new ResponseStatusException(HttpStatus.NOT_FOUND);
    }
    return console.page(
        request,
        "login",
        "Sign in",
        Map.of(
            "error", request.getParameter("error") != null,
            "signedOut", request.getParameter("logout") != null,
            "expired", request.getParameter("expired") != null,
            "locked", ""),
        HttpStatus.OK);
  }

  @GetMapping("/console.css")
  ResponseEntity<String> css() throws IOException {
    return resource("console.css", new MediaType("text", "css", StandardCharsets.UTF_8));
  }

  /** The console's only script: it refreshes the live parts of a page (see console.js). */
  @GetMapping("/console.js")
  ResponseEntity<String> script() throws IOException {
    return resource("console.js", new MediaType("text", "javascript", StandardCharsets.UTF_8));
  }

  @GetMapping("/favicon.svg")
  ResponseEntity<String> favicon() throws IOException {
    return resource("favicon.svg", new MediaType("image", "svg+xml", StandardCharsets.UTF_8));
  }

  private static ResponseEntity<String> resource(String name, MediaType type) throws IOException {
    try (InputStream in = SignInController.class.getResourceAsStream(name)) {
      return ResponseEntity.ok()
          .contentType(type)
          .cacheControl(CacheControl.noCache())
          .header("X-Content-Type-Options", "nosniff")
          .body(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
  }
}
