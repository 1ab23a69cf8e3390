package dev.relay.receiver.http;

import java.util.Map;
import java.util.TreeMap;

/**
 * A response for the HTTP server to send: status, content type, body and extra headers. The helpers
 * store a handler's reply (status, content type and body; not the extra headers) and send the same
 * one for every repeat of the delivery.
 *
 * @param status the HTTP status code, 100 to 599
 * @param contentType the {@code Content-Type}, for example {@code application/json}
 * @param body the body text (UTF-8); empty for none
 * @param headers extra response headers, such as {@code Retry-After}
 */
public record HttpReply(int status, String contentType, String body, Map<String, String> headers) {
  /** Validates the status and copies the headers. */
  public HttpReply {
    if (status < 100 || status > 599) {
      throw new IllegalArgumentException("HTTP status must be 100-599, was " + status);
    }
    contentType = contentType == null ? "text/plain; charset=utf-8" : contentType;
    body = body == null ? "" : body;
    headers = headers == null ? Map.of() : Map.copyOf(new TreeMap<>(headers));
  }

  /**
   * A JSON reply.
   *
   * @param status the status code
   * @param json the body, JSON text
   * @return the reply
   */
  public static HttpReply json(int status, String json) {
    return new HttpReply(status, "application/json", json, Map.of());
  }

  /**
   * A plain-text reply.
   *
   * @param status the status code
   * @param text the body
   * @return the reply
   */
  public static HttpReply text(int status, String text) {
    return new HttpReply(status, "text/plain; charset=utf-8", text, Map.of());
  }

  /**
   * This reply with one more header.
   *
   * @param name the header name
   * @param value its value
   * @return a new reply
   */
  public HttpReply withHeader(String name, String value) {
    Map<String, String> more = new TreeMap<>(headers);
    more.put(name, value);
    return new HttpReply(status, contentType, body, more);
  }
}
