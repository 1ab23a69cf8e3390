package dev.relay.transport.http;

import dev.relay.InvalidConfigurationException;
import dev.relay.Milestone;
import java.net.URI;
import java.time.Duration;
import java.util.Objects;

/**
 * Where and how one kind of work is delivered over HTTP: immutable, validated at construction, each
 * {@code with} method returns a copy. Also the record the {@code serve} command reads from its
 * configuration file ({@link HttpRoutes#fromProperties}).
 *
 * <pre>{@code
 * HttpRoute ack = HttpRoute.of("order_received", URI.create("http://127.0.0.1:8081/mail"))
 *     .withReceiverRefField("email_id")            // the receiver's reference in the JSON reply
 *     .withMilestone(Milestone.QUEUED)              // what its 2xx means
 *     .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(10));
 * }</pre>
 *
 * @param kind the kind of work this route delivers
 * @param url the endpoint; every attempt POSTs the payload to it
 * @param connectTimeout how long to wait for a TCP connection (the whole request is also capped by
 *     the run time left, {@link dev.relay.Claim#runTimeRemaining()})
 * @param requestTimeout how long to wait for the whole response (also capped by the run time left:
 *     the kind's max run time and the business deadline, never the lease)
 * @param receiverRefHeader a response header holding the receiver's reference, or {@code null}
 * @param receiverRefField a top-level field of a JSON response holding it, or {@code null}
 * @param milestone what a 2xx reply means (recorded with the outcome)
 * @param fencing which fencing token the request carries
 */
public record HttpRoute(
    String kind,
    URI url,
    Duration connectTimeout,
    Duration requestTimeout,
    String receiverRefHeader,
    String receiverRefField,
    Milestone milestone,
    Fencing fencing) {

  /** Default connect timeout: 2 s. */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);

  /** Default request timeout: 10 s. */
  public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(10);

  /** Which fencing token a delivery carries. */
  public enum Fencing {
    /**
     * The claim generation, with the work ID as the resource: orders this job's own attempts only
     * (the default).
     */
    GENERATION,
    /**
     * A token from the per-resource counter ({@code FenceTokens}), allocated for each attempt;
     * needs {@link HttpTransport.Builder#fenceTokens}. Orders attempts of every job touching the
     * resource.
     */
    RESOURCE,
    /** No fencing headers. */
    NONE
  }

  /** Validates every setting; the messages name the setting. */
  public HttpRoute {
    if (kind == null || kind.isBlank()) {
      throw new InvalidConfigurationException("kind", "is empty");
    }
    if (url == null
        || url.getHost() == null
        || !("http".equals(url.getScheme()) || "https".equals(url.getScheme()))) {
      throw new InvalidConfigurationException(
          "url", "of kind " + kind + " must be an absolute http(s) URL, was " + url);
    }
    positive("connectTimeout", connectTimeout);
    positive("requestTimeout", requestTimeout);
    Objects.requireNonNull(milestone, "milestone");
    Objects.requireNonNull(fencing, "fencing");
  }

  private static void positive(String name, Duration d) {
    if (d == null || d.toMillis() < 1 || d.toMinutes() > 60) {
      throw new InvalidConfigurationException(name, "must be between 1 ms and 1 hour, was " + d);
    }
  }

  /**
   * A route with the defaults: 2 s to connect, 10 s per request, no receiver reference, milestone
   * accepted, fenced by the claim generation.
   *
   * @param kind the kind
   * @param url the endpoint
   * @return the route
   */
  public static HttpRoute of(String kind, URI url) {
    return new HttpRoute(
        kind,
        url,
        DEFAULT_CONNECT_TIMEOUT,
        DEFAULT_REQUEST_TIMEOUT,
        null,
        null,
        Milestone.ACCEPTED,
        Fencing.GENERATION);
  }

  /**
   * A copy with these timeouts (the request is further capped by the run time left at send time).
   */
  public HttpRoute withTimeouts(Duration connect, Duration request) {
    return new HttpRoute(
        kind, url, connect, request, receiverRefHeader, receiverRefField, milestone, fencing);
  }

  /** A copy that reads the receiver's reference from this response header. */
  public HttpRoute withReceiverRefHeader(String header) {
    return new HttpRoute(
        kind, url, connectTimeout, requestTimeout, header, receiverRefField, milestone, fencing);
  }

  /** A copy that reads the receiver's reference from this top-level JSON field of the reply. */
  public HttpRoute withReceiverRefField(String field) {
    return new HttpRoute(
        kind, url, connectTimeout, requestTimeout, receiverRefHeader, field, milestone, fencing);
  }

  /** A copy whose 2xx means {@code m}. */
  public HttpRoute withMilestone(Milestone m) {
    return new HttpRoute(
        kind, url, connectTimeout, requestTimeout, receiverRefHeader, receiverRefField, m, fencing);
  }

  /** A copy with this fencing. */
  public HttpRoute withFencing(Fencing f) {
    return new HttpRoute(
        kind,
        url,
        connectTimeout,
        requestTimeout,
        receiverRefHeader,
        receiverRefField,
        milestone,
        f);
  }
}
