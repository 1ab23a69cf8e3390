package dev.relay.console;

import dev.relay.InvalidWorkException;
import dev.relay.RelayException;
import dev.relay.WorkConflictException;
import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.SupersedeRefusedException;
import dev.relay.admin.WorkNotFoundException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.TypeMismatchException;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.HttpRequestMethodNotSupportedException;
import org.springframework.web.bind.MissingServletRequestParameterException;
import org.springframework.web.bind.ServletRequestBindingException;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.servlet.HandlerExceptionResolver;
import org.springframework.web.servlet.ModelAndView;
import org.springframework.web.servlet.NoHandlerFoundException;
import org.springframework.web.servlet.resource.NoResourceFoundException;

/**
 * Refusals and bad input on the console's pages, shown on the console's own page with the reason:
 * Relay's refusals, and a request parameter that is missing or not of its type on any page (which
 * Spring would otherwise answer with its own error body). A refused action (a POST) is headed
 * "Nothing changed"; a page that could not be shown (a GET) says so instead, since nothing was
 * going to change. Applies to the console's own controllers only, never to the application's; a
 * request under the console that none of them takes is {@link Unmatched}'s, and a failure that
 * nothing here or in Spring answers (the database refusing the console's user, a bug) is {@link
 * Unexpected}'s.
 */
@ControllerAdvice(
    assignableTypes = {
      OverviewController.class,
      WorkListController.class,
      ItemController.class,
      FailuresController.class,
      ChartsController.class,
      KindsController.class,
      PurgeController.class,
      SignInController.class,
      LimitsController.class,
      SearchController.class,
      SchedulesController.class,
      PausesController.class,
      BulkController.class
    })
final class ConsoleErrors {
  private final Console console;

  ConsoleErrors(Console console) {
    this.console = console;
  }

  @ExceptionHandler({InvalidWorkException.class, WorkConflictException.class})
  ResponseEntity<String> badRequest(HttpServletRequest request, RuntimeException e) {
    return problem(request, HttpStatus.BAD_REQUEST, badRequestTitle(request), e.getMessage());
  }

  /**
   * Relay's refusal of an argument: of a form's field in the form's words ({@link
   * ConsoleForms#inFormsWords}), of another argument as Relay words it.
   */
  @ExceptionHandler(InvalidAdminRequestException.class)
  ResponseEntity<String> invalidAdminRequest(
      HttpServletRequest request, InvalidAdminRequestException e) {
    RuntimeException said = ConsoleForms.inFormsWords(e, request);
    if (said instanceof ConsoleRefusal refusal) {
      return consoleRefusal(request, refusal);
    }
    return badRequest(request, e);
  }

  /** The console's own refusal: its message as it is, and where to go on from. */
  @ExceptionHandler(ConsoleRefusal.class)
  ResponseEntity<String> consoleRefusal(HttpServletRequest request, ConsoleRefusal e) {
    String title = e.status() == HttpStatus.NOT_FOUND ? "Not found" : badRequestTitle(request);
    Map<String, Object> model = new HashMap<>();
    model.put("message", e.getMessage());
    if (e.next() != null) {
      model.put("next", e.next());
    }
    return console.page(request, "problem", title, model, e.status());
  }

  @ExceptionHandler(MissingServletRequestParameterException.class)
  ResponseEntity<String> missingParameter(
      HttpServletRequest request, MissingServletRequestParameterException e) {
    return problem(
        request,
        HttpStatus.BAD_REQUEST,
        badRequestTitle(request),
        "parameter "
            + e.getParameterName()
            + (e.isMissingAfterConversion() ? " is empty" : " is missing"));
  }

  /** Any other binding failure (none of the console's pages has one today); Spring's words. */
  @ExceptionHandler(ServletRequestBindingException.class)
  ResponseEntity<String> unboundRequest(
      HttpServletRequest request, ServletRequestBindingException e) {
    return problem(request, HttpStatus.BAD_REQUEST, badRequestTitle(request), e.getMessage());
  }

  @ExceptionHandler(TypeMismatchException.class)
  ResponseEntity<String> typeMismatch(HttpServletRequest request, TypeMismatchException e) {
    return problem(
        request,
        HttpStatus.BAD_REQUEST,
        badRequestTitle(request),
        "parameter "
            + e.getPropertyName()
            + " must be "
            + expected(e.getRequiredType())
            + ", was '"
            + shown(e.getValue())
            + "'");
  }

  @ExceptionHandler(SupersedeRefusedException.class)
  ResponseEntity<String> refused(HttpServletRequest request, SupersedeRefusedException e) {
    return problem(
        request, HttpStatus.CONFLICT, "Supersede refused; nothing changed", e.getMessage());
  }

  @ExceptionHandler(WorkNotFoundException.class)
  ResponseEntity<String> notFound(HttpServletRequest request, WorkNotFoundException e) {
    return problem(request, HttpStatus.NOT_FOUND, "Not found", e.getMessage());
  }

  /** A read that could not run changed nothing by nature: only a refused action says so. */
  static String badRequestTitle(HttpServletRequest request) {
    String method = request.getMethod();
    return "GET".equals(method) || "HEAD".equals(method)
        ? "Cannot show this page"
        : "Nothing changed";
  }

  /** What a parameter of this type takes, in words. */
  private static String expected(Class<?> type) {
    if (type == null) {
      return "of another form";
    }
    if (type == boolean.class || type == Boolean.class) {
      return "true or false";
    }
    if (type == long.class || type == Long.class || type == int.class || type == Integer.class) {
      return "a whole number";
    }
    return "of another form";
  }

  /** A rejected value as the page repeats it: cut, so a long one cannot fill the page. */
  static String shown(Object value) {
    String text =
        value instanceof String[] values ? String.join(",", values) : String.valueOf(value);
    return text.length() > 100 ? text.substring(0, 100) + "\u2026" : text;
  }

  private ResponseEntity<String> problem(
      HttpServletRequest request, HttpStatus status, String title, String message) {
    return console.page(request, "problem", title, Map.of("message", message), status);
  }

  /**
   * A request under the console's mount that none of its pages takes: a method the address does not
   * take (405, with {@code Allow}: a page visited where a form posts, or a form posted to a page),
   * or an address with no page (404). Spring decides both before any controller is chosen, so the
   * advice above never sees them, and would answer with its own error body; this resolver runs
   * ahead of Spring's and answers with the console's page instead, for the console's paths only
   * (every other path stays the application's). The sign-out address asked for as a page is a
   * form's address too (405, {@code Allow: POST}), though no page takes it.
   *
   * <p>It only runs once the console's filter chain has let the request through: a signed-out
   * visitor is sent to sign-in, and a POST without its CSRF token or from a viewer is refused (403,
   * {@link ConsoleAccessDenied}), before the address is looked up, so neither learns which
   * addresses exist or what they take. The read-only console leaves a request from a non-loopback
   * address to Spring.
   */
  static final class Unmatched implements HandlerExceptionResolver, Ordered {
    private final Console console;

    Unmatched(Console console) {
      this.console = console;
    }

    /** Ahead of Spring's resolvers (order 0), after Boot's, which only records the error. */
    @Override
    public int getOrder() {
      return Ordered.HIGHEST_PRECEDENCE + 1;
    }

    @Override
    public ModelAndView resolveException(
        HttpServletRequest request, HttpServletResponse response, Object handler, Exception e) {
      String path = Console.path(request);
      if (!Console.under(console.mount, path) || !console.answers(request)) {
        return null;
      }
      ResponseEntity<String> page;
      if (e instanceof HttpRequestMethodNotSupportedException m) {
        page = methodNotAllowed(request, path, m);
      } else if (e instanceof NoResourceFoundException || e instanceof NoHandlerFoundException) {
        page =
            console.mode == Console.Mode.SECURED && path.equals(console.mount + "/logout")
                ? signOutIsAButton(request, path)
                : notFound(request, path);
      } else {
        return null;
      }
      Console.send(page, response);
      return new ModelAndView();
    }

    private ResponseEntity<String> methodNotAllowed(
        HttpServletRequest request, String path, HttpRequestMethodNotSupportedException e) {
      Set<HttpMethod> supported = e.getSupportedHttpMethods();
      List<String> allowed =
          supported == null ? List.of() : supported.stream().map(HttpMethod::name).toList();
      String asked = e.getMethod() + " " + shown(path);
      String message;
      Link next;
      if (allowed.contains("GET")) {
        message =
            asked
                + ": this address is a page and takes "
                + String.join(" and ", allowed)
                + " only. Nothing changed; open the page instead.";
        next = new Link("Open " + path, path);
      } else {
        message =
            asked
                + " is not a page: this address takes a form submission (POST) from "
                + ConsoleForms.where(path.substring(console.mount.length()))
                + (console.canAct(request)
                    ? ". Open that page and use its button."
                    : ", which only an operator can send.");
        Link form = ConsoleForms.formPage(console.mount, path, request);
        next = form != null ? form : new Link("Go to the overview", console.mount);
      }
      // With the Allow header that Spring sends with its own 405.
      return methodNotAllowed(request, Map.of("message", message, "next", next), e.getHeaders());
    }

    /**
     * The sign-out address visited as a page. Spring Security's logout filter answers its POST
     * before any page is looked up, so no page takes the address and Spring would call it missing;
     * it is a form's address like the others, answered as such.
     */
    private ResponseEntity<String> signOutIsAButton(HttpServletRequest request, String path) {
      String message =
          request.getMethod()
              + " "
              + shown(path)
              + " is not a page: signing out is a button, Sign out at the top of every console"
              + " page (this one too). It sends a form (POST) with your session's security token,"
              + " so that no link and no other site can sign you out. You are still signed in.";
      HttpHeaders allow = new HttpHeaders();
      allow.setAllow(Set.of(HttpMethod.POST));
      return methodNotAllowed(request, Map.of("message", message), allow);
    }

    private ResponseEntity<String> methodNotAllowed(
        HttpServletRequest request, Map<String, ?> model, HttpHeaders allow) {
      ResponseEntity<String> page =
          console.page(
              request, "problem", badRequestTitle(request), model, HttpStatus.METHOD_NOT_ALLOWED);
      return ResponseEntity.status(page.getStatusCode())
          .headers(page.getHeaders())
          .headers(allow)
          .body(page.getBody());
    }

    private ResponseEntity<String> notFound(HttpServletRequest request, String path) {
      return console.page(
          request,
          "problem",
          "Not found",
          Map.of(
              "message",
              "There is no page at " + shown(path) + ". Check the address, or start again here.",
              "next",
              new Link("Go to the overview", console.mount)),
          HttpStatus.NOT_FOUND);
    }
  }

  /**
   * A console page that failed on the server: an exception that neither the advice above nor
   * Spring's own resolvers answer. Spring would send it to the servlet container's error page
   * (Boot's JSON body or its whitelabel page, the exception logged by the container); this resolver
   * runs after Spring's, for the console's paths only, and answers with the console's own page
   * instead, status 500, with nothing of the failure on it (no SQL, no database message, no stack):
   *
   * <ul>
   *   <li>The database refusing the console's user (SQLState 42501, insufficient privilege, as for
   *       a user with only the worker role): the page names the database role the console needs,
   *       {@code <schema>_operator}, and how to grant it. Logged at WARN once per console, at DEBUG
   *       after that, so a console left open (its live refresh) does not fill the log.
   *   <li>Anything else: a general page with a reference, logged at ERROR with its stack under the
   *       same reference, once (the container no longer logs it).
   * </ul>
   *
   * <p>A page is a GET and was going to change nothing, so it says it could not be shown; an action
   * (a POST) that failed this way may or may not have taken effect, and the page says to look. A
   * response already started, an address outside the console, or a client the read-only console
   * does not answer is left to Spring, as is a failure to render this page itself.
   */
  static final class Unexpected implements HandlerExceptionResolver, Ordered {
    private static final Logger log = LoggerFactory.getLogger(ConsoleErrors.class);

    /** PostgreSQL's insufficient_privilege. */
    private static final String PERMISSION_DENIED = "42501";

    private final Console console;
    private final AtomicBoolean permissionWarned = new AtomicBoolean();

    Unexpected(Console console) {
      this.console = console;
    }

    /** After Spring's resolvers: only what none of them answers. */
    @Override
    public int getOrder() {
      return Ordered.LOWEST_PRECEDENCE;
    }

    @Override
    public ModelAndView resolveException(
        HttpServletRequest request, HttpServletResponse response, Object handler, Exception e) {
      String path = Console.path(request);
      if (response.isCommitted()
          || !Console.under(console.mount, path)
          || !console.answers(request)) {
        return null;
      }
      boolean page = "GET".equals(request.getMethod()) || "HEAD".equals(request.getMethod());
      String where = request.getMethod() + " " + shown(path);
      String message;
      if (permissionDenied(e)) {
        String operator = console.admin.schema() + "_operator";
        logPermissionDenied(where, operator, e);
        message = roleNeeded(page, operator, console.admin.schema() + "_producer");
      } else {
        String reference = String.format("%08x", ThreadLocalRandom.current().nextInt());
        log.error("Relay console: {} failed, reference {}", where, reference, e);
        message =
            (page
                    ? "The console hit an unexpected error and could not show this page."
                    : "The console hit an unexpected error during this action, which may or may"
                        + " not have taken effect: open its page again to see where things"
                        + " stand.")
                + " The details are in the server log, under reference "
                + reference
                + ".";
      }
      try {
        Console.send(
            console.page(
                request,
                "problem",
                page ? "Cannot show this page" : "Action failed",
                Map.of("message", message),
                HttpStatus.INTERNAL_SERVER_ERROR),
            response);
      } catch (RuntimeException failed) {
        log.error("Relay console: could not show the error page for {}", where, failed);
        return null;
      }
      return new ModelAndView();
    }

    /** What the database user lacks, and how to grant it, in words; no database message. */
    private static String roleNeeded(boolean page, String operator, String producer) {
      return (page
              ? "The database refused the console's read (permission denied)"
              : "The database refused this action (permission denied)")
          + ": the database user this application connects as needs the database role "
          + operator
          + " to read Relay's tables and act on them (a supersede also needs "
          + producer
          + ")."
          + " Relay's roles are created by relay migrate --roles, run as the schema's owner;"
          + " then grant the role: GRANT "
          + operator
          + " TO <the application's database user>. If the user has it already, run relay"
          + " migrate --roles again: the role's grants may be older than the schema."
          + (page ? "" : " Open the page again to see where things stand.");
    }

    private void logPermissionDenied(String where, String operator, Exception e) {
      if (permissionWarned.compareAndSet(false, true)) {
        log.warn(
            "Relay console: {} refused by the database ({}): the database user this application"
                + " connects as needs the database role {}; create Relay's roles with relay"
                + " migrate --roles and GRANT {} TO that user. The console's pages say so; later"
                + " refusals are logged at DEBUG",
            where,
            e.getMessage(),
            operator,
            operator);
      } else {
        log.debug("Relay console: {} refused by the database again: {}", where, e.toString());
      }
    }

    /** Whether the database refused for lack of privilege, anywhere in the cause chain. */
    private static boolean permissionDenied(Throwable e) {
      for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
        if (t instanceof RelayException r && PERMISSION_DENIED.equals(r.sqlState())
            || t instanceof SQLException q && PERMISSION_DENIED.equals(q.getSQLState())) {
          return true;
        }
      }
      return false;
    }
  }
}
