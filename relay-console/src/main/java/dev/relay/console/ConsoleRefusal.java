package dev.relay.console;

import org.springframework.http.HttpStatus;

/**
 * A request the console refuses in the words of its own pages, before Relay is asked: a bulk action
 * without a filter, say. {@link ConsoleErrors} shows the message as it is (no field name, no
 * prefix), with the status and, when there is one, a link to go on from. Nothing has changed when
 * it is thrown.
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

  HttpStatus status() {
    return status;
  }

  /** Where to go on from, or null. */
  Link next() {
    return next;
  }
}
