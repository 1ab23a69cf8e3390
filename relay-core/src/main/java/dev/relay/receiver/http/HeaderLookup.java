package dev.relay.receiver.http;

/**
 * How the helpers read a request header in any HTTP server: the first value of a header, or {@code
 * null} when absent. Header names are case-insensitive in HTTP; the lookup must honour that (the
 * JDK server's {@code exchange.getRequestHeaders()::getFirst} and a servlet's {@code
 * request::getHeader} both do).
 */
@FunctionalInterface
public interface HeaderLookup {
  /**
   * The first value of a request header.
   *
   * @param name the header name, for example {@link RelayHeaders#IDEMPOTENCY_KEY}
   * @return its first value, or {@code null} when the request does not carry it
   */
  String first(String name);
}
