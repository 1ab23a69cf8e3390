package dev.relay.transport.broker;

import dev.relay.BatchHandler;
import dev.relay.Claim;
import dev.relay.InvalidConfigurationException;
import dev.relay.Outcome;
import dev.relay.Outcome.Effect;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;

/**
 * What a broker transport settles about a claim before it sends anything, the same for every
 * broker: the route of the claim's kind, whether enough run time is left, how long to wait for the
 * broker's acknowledgement, and the {@link BrokerHeaders} (with a fencing token when one is
 * configured). A transport's builder delegates its routes, timeout and fencing to a {@link
 * Builder}, so they are validated the same way everywhere.
 *
 * <pre>{@code
 * PublishPrologue<MyRoute> p = PublishPrologue.<MyRoute>builder("MyBroker", "ackTimeout",
 *         Duration.ofSeconds(10))
 *     .route(route.kind(), route)
 *     .build();
 * MyRoute r = p.route(claim.kind());
 * if (r == null) return p.unrouted(claim.kind());
 * Duration wait = p.waitBound(claim);
 * if (wait == null) return PublishPrologue.runTimeOver();
 * }</pre>
 *
 * <p>It does not publish, connect or decide what a broker's answer means; the order of the checks
 * stays with the transport. Immutable and thread-safe.
 *
 * @param <R> the transport's route type
 */
public final class PublishPrologue<R> {
  /** Time kept free before the run time ends: a claim with less left is not sent. */
  public static final Duration RUN_TIME_MARGIN = Duration.ofMillis(100);

  /** The longest acknowledgement timeout a transport accepts: 10 minutes. */
  public static final Duration MAX_TIMEOUT = Duration.ofMinutes(10);

  private final String broker;
  private final Map<String, R> routes;
  private final Duration timeout;
  private final Function<Claim, BrokerHeaders.Fencing> fencing;
  private final int maxBatchSize;

  private PublishPrologue(Builder<R> b) {
    this.broker = b.broker;
    this.routes = Map.copyOf(b.routes);
    this.timeout = b.timeout;
    this.fencing = b.fencing;
    this.maxBatchSize = b.maxBatchSize;
  }

  /**
   * A builder.
   *
   * @param broker the broker's name in messages, for example {@code RabbitMQ}
   * @param timeoutName the transport's name of its timeout setting, for errors
   * @param defaultTimeout the timeout unless one is set
   * @param <R> the transport's route type
   * @return a builder with no routes and no fencing
   */
  public static <R> Builder<R> builder(String broker, String timeoutName, Duration defaultTimeout) {
    return new Builder<>(broker, timeoutName, defaultTimeout);
  }

  /** Collects routes, timeout and fencing; validated at {@link #build()}. */
  public static final class Builder<R> {
    private final String broker;
    private final String timeoutName;
    private final Map<String, R> routes = new LinkedHashMap<>();
    private Duration timeout;
    private Function<Claim, BrokerHeaders.Fencing> fencing;
    private int maxBatchSize = BatchHandler.DEFAULT_MAX_BATCH_SIZE;

    private Builder(String broker, String timeoutName, Duration defaultTimeout) {
      this.broker = Objects.requireNonNull(broker, "broker");
      this.timeoutName = Objects.requireNonNull(timeoutName, "timeoutName");
      this.timeout = defaultTimeout;
    }

    /** Adds (or replaces) the route of {@code kind}. */
    public Builder<R> route(String kind, R route) {
      routes.put(kind, route);
      return this;
    }

    /** The longest wait for the broker's acknowledgement (1 ms to {@link #MAX_TIMEOUT}). */
    public Builder<R> timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /** A fencing token per message; {@code null} (the default) for no fencing headers. */
    public Builder<R> fencing(Function<Claim, BrokerHeaders.Fencing> fencing) {
      this.fencing = fencing;
      return this;
    }

    /**
     * The most claims Relay hands the transport in one call ({@link BatchHandler#maxBatchSize()}):
     * 1 to {@value BatchHandler#MAX_BATCH_SIZE_LIMIT}, default {@value
     * BatchHandler#DEFAULT_MAX_BATCH_SIZE}.
     */
    public Builder<R> maxBatchSize(int maxBatchSize) {
      this.maxBatchSize = maxBatchSize;
      return this;
    }

    /**
     * Validates: at least one route, a timeout between 1 ms and 10 minutes, and a batch size
     * between 1 and {@value BatchHandler#MAX_BATCH_SIZE_LIMIT}.
     *
     * @throws InvalidConfigurationException naming {@code routes}, the timeout setting or {@code
     *     maxBatchSize}
     */
    public PublishPrologue<R> build() {
      if (routes.isEmpty()) {
        throw new InvalidConfigurationException("routes", "is empty: add a route per kind");
      }
      if (timeout == null || timeout.toMillis() < 1 || timeout.compareTo(MAX_TIMEOUT) > 0) {
        throw new InvalidConfigurationException(
            timeoutName, "must be between 1 ms and 10 minutes, was " + timeout);
      }
      checkBatchSize(maxBatchSize);
      return new PublishPrologue<>(this);
    }
  }

  /**
   * Refuses a batch size outside 1 to {@value BatchHandler#MAX_BATCH_SIZE_LIMIT}.
   *
   * @throws InvalidConfigurationException naming {@code maxBatchSize}
   */
  public static void checkBatchSize(int maxBatchSize) {
    if (maxBatchSize < 1 || maxBatchSize > BatchHandler.MAX_BATCH_SIZE_LIMIT) {
      throw new InvalidConfigurationException(
          "maxBatchSize",
          "must be between 1 and " + BatchHandler.MAX_BATCH_SIZE_LIMIT + ", was " + maxBatchSize);
    }
  }

  /** The most claims per call of the transport's batch handler. */
  public int maxBatchSize() {
    return maxBatchSize;
  }

  /** The kinds routed. */
  public Set<String> kinds() {
    return routes.keySet();
  }

  /** The longest wait for the broker's acknowledgement. */
  public Duration timeout() {
    return timeout;
  }

  /** The route of {@code kind}, or {@code null} if it has none. */
  public R route(String kind) {
    return routes.get(kind);
  }

  /** The outcome of a claim whose kind has no route: failed, not delivered. */
  public Outcome unrouted(String kind) {
    return Outcome.fail("no " + broker + " route for kind " + kind, Effect.NOT_DELIVERED);
  }

  /**
   * How long to wait for the broker's acknowledgement of {@code claim}: the timeout, capped by the
   * claim's run time left less {@link #RUN_TIME_MARGIN}; {@code null} when less than 1 ms would be
   * left (then send nothing and answer {@link #runTimeOver()}).
   */
  public Duration waitBound(Claim claim) {
    Duration left = claim.runTimeRemaining().minus(RUN_TIME_MARGIN);
    if (left.toMillis() < 1) {
      return null;
    }
    return left.compareTo(timeout) < 0 ? left : timeout;
  }

  /** The outcome of a claim with too little run time left to send: retry, not delivered. */
  public static Outcome runTimeOver() {
    return Outcome.retry(
        "run time or deadline nearly over before sending; not sent", Effect.NOT_DELIVERED);
  }

  /** The {@link BrokerHeaders} of {@code claim}, with its fencing token when fencing is set. */
  public Map<String, String> headers(Claim claim) {
    return BrokerHeaders.of(claim, fencing == null ? null : fencing.apply(claim));
  }
}
