package dev.relay.transport.broker;

import dev.relay.Claim;
import dev.relay.RelayTracing;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The message headers every Relay broker transport sends, and their encoding: the contract between
 * a transport (Kafka, RabbitMQ, NATS JetStream) and the consuming side's {@link BrokerInbox}.
 *
 * <pre>{@code
 * Map<String, String> headers = BrokerHeaders.of(claim);        // in a transport's handler
 * headers.forEach((name, value) -> record.headers().add(name, BrokerHeaders.encode(value)));
 * }</pre>
 *
 * <table>
 *   <caption>Headers</caption>
 *   <tr><th>Name</th><th>Value</th><th>When</th></tr>
 *   <tr><td>{@value #WORK_ID}</td><td>the work ID: the same on every attempt and redrive of one
 *       intention; the consumer's deduplication key</td><td>always (required)</td></tr>
 *   <tr><td>{@value #KIND}</td><td>the kind</td><td>always</td></tr>
 *   <tr><td>{@value #GENERATION}</td><td>the claim generation of the attempt that published it</td>
 *       <td>always</td></tr>
 *   <tr><td>{@value #FENCING_RESOURCE}, {@value #FENCING_TOKEN}</td><td>a protected resource and a
 *       token from its own counter ({@code FenceTokens})</td><td>when the transport is given a
 *       {@link Fencing} for the claim; always together</td></tr>
 *   <tr><td>{@value #ORDERING_KEY}, {@value #SEQUENCE}</td><td>the ordering key and the item's
 *       sequence within it</td><td>keyed work</td></tr>
 *   <tr><td>{@value #PREVIOUS_SEQUENCE}</td><td>the key's previous <i>delivered</i> sequence (a
 *       lower gap is a cancelled item, not a lost message)</td><td>keyed work with an earlier
 *       delivered item</td></tr>
 * </table>
 *
 * <p>Encoding: every value is text in UTF-8 ({@link #encode}, {@link #decode}); numbers are
 * decimal, zero or more, without sign or padding. Names are lower case; brokers whose header values
 * are typed (AMQP) carry the values as strings. The payload is the work's JSON text, in UTF-8,
 * unchanged. Any sender may set these headers; only {@value #WORK_ID} is required by the consuming
 * side.
 */
public final class BrokerHeaders {
  private BrokerHeaders() {}

  /** The work ID: the consumer's deduplication key. Required. */
  public static final String WORK_ID = "relay-work-id";

  /** The work's kind. */
  public static final String KIND = "relay-kind";

  /** The claim generation of the publishing attempt (decimal). */
  public static final String GENERATION = "relay-generation";

  /** The protected resource a fencing token belongs to. Sent with {@link #FENCING_TOKEN}. */
  public static final String FENCING_RESOURCE = "relay-fencing-resource";

  /** A fencing token from the resource's own counter (decimal, zero or more). */
  public static final String FENCING_TOKEN = "relay-fencing-token";

  /** The work's ordering key. */
  public static final String ORDERING_KEY = "relay-ordering-key";

  /** The work's sequence within its ordering key (decimal). Sent with {@link #ORDERING_KEY}. */
  public static final String SEQUENCE = "relay-sequence";

  /** The key's previous delivered sequence (decimal); absent for the first delivered item. */
  public static final String PREVIOUS_SEQUENCE = "relay-previous-sequence";

  /**
   * A fencing token to carry with one message: the resource it protects and a token from that
   * resource's own counter (for example {@code dev.relay.receiver.FenceTokens}).
   *
   * @param resource the protected resource
   * @param token the token, zero or more
   */
  public record Fencing(String resource, long token) {
    /** Requires a resource and a token of zero or more. */
    public Fencing {
      Objects.requireNonNull(resource, "resource");
      if (resource.isBlank()) {
        throw new IllegalArgumentException("fencing resource is blank");
      }
      if (token < 0) {
        throw new IllegalArgumentException("fencing token is negative: " + token);
      }
    }
  }

  /**
   * How a consumer reads one header of a received message: its value as text, or {@code null} when
   * the message does not carry it. For byte-valued headers, decode with {@link #decode}.
   */
  @FunctionalInterface
  public interface Lookup {
    /**
     * The value of a header.
     *
     * @param name a header name of this class
     * @return its value, or {@code null} when absent
     */
    String value(String name);
  }

  /**
   * The headers of one claim without a fencing token: work ID, kind, generation and, for keyed
   * work, the ordering headers.
   *
   * @param claim the claim being published
   * @return header name to value, in the order of the table above; unmodifiable
   */
  public static Map<String, String> of(Claim claim) {
    return of(claim, null);
  }

  /**
   * The headers of one claim, with {@code fencing} when it is not {@code null}.
   *
   * @param claim the claim being published
   * @param fencing the fencing token to carry, or {@code null}
   * @return header name to value, in the order of the table above; unmodifiable
   */
  public static Map<String, String> of(Claim claim, Fencing fencing) {
    Objects.requireNonNull(claim, "claim");
    Map<String, String> h = new LinkedHashMap<>();
    h.put(WORK_ID, claim.workId());
    h.put(KIND, claim.kind());
    h.put(GENERATION, Long.toString(claim.generation()));
    if (fencing != null) {
      h.put(FENCING_RESOURCE, fencing.resource());
      h.put(FENCING_TOKEN, Long.toString(fencing.token()));
    }
    if (claim.orderingKey() != null) {
      h.put(ORDERING_KEY, claim.orderingKey());
      if (claim.sequence() != null) {
        h.put(SEQUENCE, Long.toString(claim.sequence()));
      }
      if (claim.previousDeliveredSequence() != null) {
        h.put(PREVIOUS_SEQUENCE, Long.toString(claim.previousDeliveredSequence()));
      }
    }
    // the attempt span's context (or the producer's, stored with the work): the receiver's
    // inbox continues the trace from it
    Map<String, String> trace = claim.callTraceContext();
    RelayTracing.headers(trace::get).forEach(h::put);
    return Collections.unmodifiableMap(h);
  }

  /**
   * The W3C Trace Context headers a message carries when its work has a trace ({@link
   * Claim#callTraceContext()}), and that {@link BrokerInbox} continues.
   */
  public static final List<String> TRACE_HEADERS = RelayTracing.HEADERS;

  /** A header value as bytes on the wire: UTF-8. */
  public static byte[] encode(String value) {
    return value.getBytes(StandardCharsets.UTF_8);
  }

  /** A header value read from the wire (UTF-8), or {@code null} for {@code null}. */
  public static String decode(byte[] value) {
    return value == null ? null : new String(value, StandardCharsets.UTF_8);
  }
}
