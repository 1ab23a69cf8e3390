package dev.relay.console;

import dev.relay.InvalidWorkException;
import dev.relay.WorkConflictException;
import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.SupersedeRefusedException;
import dev.relay.admin.WorkNotFoundException;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;

/**
 * Refusals and bad input on the console's pages, shown with the reason (nothing changed). Applies
 * to the console's own controllers only, never to the application's.
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
    return problem(request, HttpStatus.BAD_REQUEST, "Nothing changed", e.getMessage());
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

  private ResponseEntity<String> problem(
      HttpServletRequest request, HttpStatus status, String title, String message) {
    return console.page(request, "problem", title, Map.of("message", message), status);
  }
}
