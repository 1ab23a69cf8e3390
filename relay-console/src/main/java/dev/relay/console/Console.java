package dev.relay.console;

import dev.relay.admin.Admin;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.CacheControl;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.http.server.ServletServerHttpResponse;
import org.springframework.util.ClassUtils;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.util.UrlPathHelper;
import org.thymeleaf.TemplateEngine;
import org.thymeleaf.context.Context;
import org.thymeleaf.spring6.SpringTemplateEngine;
import org.thymeleaf.templatemode.TemplateMode;
import org.thymeleaf.templateresolver.ClassLoaderTemplateResolver;

/**
 * What every page of the console shares: the admin API it reads and acts through, how it is
 * mounted, who may act, and the template engine that writes the pages. Each page's controller
 * gathers a model and names its template; {@link #page} adds the header's model (mount, user, role,
 * CSRF field) and renders it.
 *
 * <p>The console runs its own Thymeleaf engine on its own templates (under {@code
 * dev/relay/console/templates/}), so it neither needs nor changes the application's view
 * resolution. Thymeleaf escapes every {@code th:text} and attribute value; the templates use no
 * unescaped output.
 */
final class Console {
  /** How the console is mounted. */
  enum Mode {
    /** Behind Spring Security: sign-in, viewer and operator roles, CSRF. */
    SECURED,
    /** Without Spring Security: read-only, loopback clients only. */
    LOOPBACK_READ_ONLY
  }

  /** A CSRF form field: its name and the request's token. */
  record CsrfField(String name, String token) {}

  /** Whether relay-schedule is on the class path, so the schedules page is mounted. */
  static final boolean SCHEDULES =
      ClassUtils.isPresent("dev.relay.schedule.ScheduleStatus", Console.class.getClassLoader());

  /**
   * The templates with live parts (elements marked {@code data-live}), which {@code console.js}
   * refreshes: only these pages carry {@code data-refresh} and the line saying they update
   * themselves. Every other page (a form, a refusal, an error) neither refreshes nor says it does.
   */
  static final Set<String> LIVE_VIEWS =
      Set.of("overview", "work", "item", "charts", "limits", "schedules", "bulk", "bulks");

  private static final Logger log = LoggerFactory.getLogger(Console.class);
  private static final MediaType HTML = new MediaType("text", "html", StandardCharsets.UTF_8);

  final Admin admin;
  final ConsoleProperties properties;
  final String mount;
  final Mode mode;
  private final Function<HttpServletRequest, String[]> csrf;
  private final TemplateEngine engine;

  /**
   * @param csrf the CSRF field (name, token) of a request, or null when there is none
   */
  Console(
      Admin admin,
      ConsoleProperties properties,
      Mode mode,
      Function<HttpServletRequest, String[]> csrf) {
    this.admin = admin;
    this.properties = properties;
    this.mount = properties.mount();
    this.mode = mode;
    this.csrf = csrf;
    this.engine = engine();
  }

  private static TemplateEngine engine() {
    ClassLoaderTemplateResolver templates =
        new ClassLoaderTemplateResolver(Console.class.getClassLoader());
    templates.setPrefix("dev/relay/console/templates/");
    templates.setSuffix(".html");
    templates.setTemplateMode(TemplateMode.HTML);
    templates.setCharacterEncoding("UTF-8");
    templates.setCacheable(true);
    SpringTemplateEngine engine = new SpringTemplateEngine();
    engine.setTemplateResolver(templates);
    engine.setEnableSpringELCompiler(true);
    return engine;
  }

  /**
   * Refuses what the mode does not allow: in the loopback read-only console, every write and every
   * request from a non-loopback address.
   */
  void guard(HttpServletRequest request, boolean write) {
    if (mode == Mode.LOOPBACK_READ_ONLY) {
      if (write || !loopback(request.getRemoteAddr())) {
        throw new ResponseStatusException(
            HttpStatus.FORBIDDEN,
            "the console is read-only and answers loopback clients only (no Spring Security)");
      }
    }
  }

  /**
   * Whether the mode lets this request be answered at all: always behind Spring Security (whose
   * chain has already run), only from a loopback address in the read-only console.
   */
  boolean answers(HttpServletRequest request) {
    return mode != Mode.LOOPBACK_READ_ONLY || loopback(request.getRemoteAddr());
  }

  static boolean loopback(String address) {
    try {
      return address != null && InetAddress.getByName(address).isLoopbackAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }

  /** Whether {@code path} (within the application) is the mount or under it. */
  static boolean under(String mount, String path) {
    return path.equals(mount) || path.startsWith(mount + "/");
  }

  /** The request's path within the application, decoded: what the browser's address bar shows. */
  static String path(HttpServletRequest request) {
    return UrlPathHelper.defaultInstance.getPathWithinApplication(request);
  }

  /** Whether the request's user may act (operator role, behind Spring Security). */
  boolean canAct(HttpServletRequest request) {
    return mode == Mode.SECURED && request.isUserInRole(properties.getOperatorRole());
  }

  /** The signed-in user's name, recorded as the actor of an action. */
  static String actor(Principal user) {
    if (user == null || user.getName() == null || user.getName().isBlank()) {
      throw new ResponseStatusException(
          HttpStatus.FORBIDDEN, "no signed-in user to record as the actor");
    }
    return user.getName();
  }

  /** The request's CSRF form field, or null. */
  CsrfField csrfField(HttpServletRequest request) {
    String[] field = csrf == null ? null : csrf.apply(request);
    return field == null ? null : new CsrfField(field[0], field[1]);
  }

  /** A 303 to {@code location} (after an action: the page that shows its result). */
  static ResponseEntity<String> seeOther(String location) {
    return ResponseEntity.status(HttpStatus.SEE_OTHER).header("Location", location).build();
  }

  /**
   * Writes {@code page} to a response outside a controller (a resolver's or a security filter's
   * answer): its status, headers and body. A client already gone is logged at debug only.
   */
  static void send(ResponseEntity<String> page, HttpServletResponse response) {
    try (ServletServerHttpResponse out = new ServletServerHttpResponse(response)) {
      out.setStatusCode(page.getStatusCode());
      out.getHeaders().putAll(page.getHeaders());
      out.getBody().write(page.getBody().getBytes(StandardCharsets.UTF_8));
    } catch (IOException gone) {
      log.debug("Could not send the console's {} page", page.getStatusCode(), gone);
    }
  }

  /** The template {@code view} rendered with {@code model} and the header's model. */
  ResponseEntity<String> page(
      HttpServletRequest request,
      String view,
      String title,
      Map<String, ?> model,
      HttpStatus status) {
    Context context = new Context();
    model.forEach(context::setVariable);
    context.setVariable("title", title);
    context.setVariable("mount", mount);
    context.setVariable("fmt", Format.INSTANCE);
    context.setVariable("canAct", canAct(request));
    context.setVariable("csrf", csrfField(request));
    Principal user = request.getUserPrincipal();
    boolean signedIn = mode == Mode.SECURED && user != null;
    context.setVariable("user", signedIn ? user.getName() : (Object) null);
    context.setVariable("readOnly", mode == Mode.LOOPBACK_READ_ONLY);
    // The pages' links only for someone who may open them: not on the sign-in page.
    context.setVariable("nav", signedIn || mode == Mode.LOOPBACK_READ_ONLY);
    context.setVariable("schedules", SCHEDULES);
    // Only a page with live parts, fetched with GET, is fetched again to refresh it (not an
    // action's answer, not a refusal or a form): only that page says it updates itself.
    context.setVariable(
        "refresh",
        LIVE_VIEWS.contains(view)
                && "GET".equals(request.getMethod())
                && !properties.getRefresh().isZero()
            ? properties.getRefresh().toMillis()
            : null);
    return ResponseEntity.status(status)
        .contentType(HTML)
        .cacheControl(CacheControl.noStore())
        .body(engine.process(view, context));
  }
}
