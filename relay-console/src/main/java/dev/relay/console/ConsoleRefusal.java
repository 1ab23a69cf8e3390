package dev.relay.console;

import org.springframework.http.HttpStatus;

/**
 * A request the console refuses in the words of its own pages: a bulk action without a filter, a
 * filter value the list's form does not take, a bulk action that does not exist, a supersede form's
 * field that Relay refused (named as the form names it). {@link ConsoleErrors} shows the message as
 * it is (no field name, no prefix), with the status and, when there is one, a link to go on from.
 * Nothing has changed when it is thrown.
 */
final class ConsoleRefusal extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final HttpStatus status;

  /** Where to go on from, or null; a page's link, not state worth serialising. */
  private final transient Link next;

  private ConsoleRefusal(HttpStatus status, String message, Link next) {
    super(message);
    this.status = status;
    this.next = next;
  }

  /** A request that cannot be answered as asked (400), with a link to go on from or null. */
  static ConsoleRefusal badRequest(String message, Link next) {
    return new ConsoleRefusal(HttpStatus.BAD_REQUEST, message, next);
  }

  /** Nothing at the address asked for (404, headed "Not found"), with a link or null. */
  static ConsoleRefusal notFound(String message, Link next) {
    return new ConsoleRefusal(HttpStatus.NOT_FOUND, message, next);
  }

  HttpStatus status() {
    return status;
  }

  /** Where to go on from, or null. */
  Link next() {
    return next;
  }
}
