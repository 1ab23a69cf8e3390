package dev.relay.console;

import dev.relay.InvalidWorkException;
import dev.relay.WorkConflictException;
import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.SupersedeRefusedException;
import dev.relay.admin.WorkNotFoundException;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Map;
import org.springframework.beans.TypeMismatchException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.MissingServletRequestParameterException;
import org.springframework.web.bind.ServletRequestBindingException;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;

/**
 * Refusals and bad input on the console's pages, shown on the console's own page with the reason:
 * Relay's refusals, and a request parameter that is missing or not of its type on any page (which
 * Spring would otherwise answer with its own error body). A refused action (a POST) is headed
 * "Nothing changed"; a page that could not be shown (a GET) says so instead, since nothing was
 * going to change. Applies to the console's own controllers only, never to the application's.
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

  @ExceptionHandler({
    InvalidAdminRequestException.class,
    InvalidWorkException.class,
    WorkConflictException.class
  })
  ResponseEntity<String> badRequest(HttpServletRequest request, RuntimeException e) {
    return problem(request, HttpStatus.BAD_REQUEST, badRequestTitle(request), e.getMessage());
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
  private static String badRequestTitle(HttpServletRequest request) {
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
  private static String shown(Object value) {
    String text =
        value instanceof String[] values ? String.join(",", values) : String.valueOf(value);
    return text.length() > 100 ? text.substring(0, 100) + "\u2026" : text;
  }

  private ResponseEntity<String> problem(
      HttpServletRequest request, HttpStatus status, String title, String message) {
    return console.page(request, "problem", title, Map.of("message", message), status);
  }
}
