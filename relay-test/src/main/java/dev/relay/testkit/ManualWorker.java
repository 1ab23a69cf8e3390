package dev.relay.testkit;

import dev.relay.Handler;
import dev.relay.HeldClaim;
import dev.relay.ManualClaims;
import dev.relay.Outcome;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * A worker driven by hand, one step at a time on the caller's thread: claim the next item, run its
 * handler (recording the outcome, or not), stall it, settle, renew or release it, end its lease on
 * the database clock. For tests of handlers and of what happens around a claim (a takeover after a
 * stalled worker, a stale completion refused), without threads, polling or timing.
 *
 * <pre>{@code
 * ManualWorker worker =
 *     ManualWorker.builder(dataSource)
 *         .schema("relay")
 *         .handle("order_received", claim -> Outcome.done("email-1"))
 *         .build();
 * Optional<ManualWorker.Attempt> ran = worker.runNext("order_received");
 * // ran.get().outcome() is what the handler returned; ran.get().write().applied() that it was
 * // recorded as the runtime records it
 * }</pre>
 *
 * <p>Every step is one short transaction on its own connection from the data source (which must
 * hand out connections in auto-commit mode, the JDBC default), through {@link ManualClaims}: the
 * runtime's claim statement and its guarded writes, so a stale claim's write is refused exactly as
 * a worker's would be. Unlike {@code Relay}, it renews nothing in the background, emits no events,
 * and applies no kind policy: an outcome is written as the handler returned it (a retry without a
 * delay is available again at once), and a handler that throws or returns {@code null} gets a retry
 * with its effect unknown. Attempt caps, deadlines and cancel requests still retire work at claim
 * time.
 *
 * <p>Several manual workers (with different worker IDs) may share a schema, and may run beside real
 * workers. Thread-safe, though meant for one test thread.
 */
public final class ManualWorker {
  /** Default worker ID: {@value}. */
  public static final String DEFAULT_WORKER_ID = "manual-worker";

  /** Default queue: {@value}. */
  public static final String DEFAULT_QUEUE = "default";

  /** Default lease: 30 s. */
  public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);

  private final DataSource dataSource;
  private final ManualClaims claims;
  private final String workerId;
  private final String queue;
  private final Duration lease;
  private final Map<String, Handler> handlers;

  private ManualWorker(Builder b) {
    this.dataSource = b.dataSource;
    this.claims = ManualClaims.forSchema(b.schema);
    this.workerId = b.workerId;
    this.queue = b.queue;
    this.lease = b.lease;
    this.handlers = Map.copyOf(b.handlers);
  }

  /** A builder for a manual worker on {@code dataSource}. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(Objects.requireNonNull(dataSource, "dataSource"));
  }

  /** Configures a {@link ManualWorker}; settings are checked at {@link #build()}. */
  public static final class Builder {
    private final DataSource dataSource;
    private String schema = "relay";
    private String workerId = DEFAULT_WORKER_ID;
    private String queue = DEFAULT_QUEUE;
    private Duration lease = DEFAULT_LEASE;
    private final Map<String, Handler> handlers = new LinkedHashMap<>();

    private Builder(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    /** The schema holding Relay's tables (default {@code relay}). */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** The worker ID stored in {@code claimed_by} (default {@value #DEFAULT_WORKER_ID}). */
    public Builder workerId(String workerId) {
      this.workerId = workerId;
      return this;
    }

    /** The queue claimed from (default {@value #DEFAULT_QUEUE}). */
    public Builder queue(String queue) {
      this.queue = queue;
      return this;
    }

    /** The lease of each claim and renewal, on the database clock (default 30 s). */
    public Builder lease(Duration lease) {
      this.lease = lease;
      return this;
    }

    /** Runs {@code handler} for work of {@code kind} in {@link #run} and {@link #runNext}. */
    public Builder handle(String kind, Handler handler) {
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(handler, "handler");
      if (handlers.putIfAbsent(kind, handler) != null) {
        throw new IllegalArgumentException("kind " + kind + " already has a handler");
      }
      return this;
    }

    /**
     * Builds the worker.
     *
     * @throws dev.relay.InvalidConfigurationException if the schema is not a plain identifier
     * @throws IllegalArgumentException if the worker ID or queue is empty or the lease under 1 ms
     *     or over {@link ManualClaims#MAX_LEASE}
     */
    public ManualWorker build() {
      if (workerId == null || workerId.isEmpty()) {
        throw new IllegalArgumentException("workerId is empty");
      }
      if (queue == null || queue.isEmpty()) {
        throw new IllegalArgumentException("queue is empty");
      }
      if (lease == null || lease.toMillis() < 1 || lease.compareTo(ManualClaims.MAX_LEASE) > 0) {
        throw new IllegalArgumentException(
            "lease must be at least 1 ms and at most " + ManualClaims.MAX_LEASE + ", was " + lease);
      }
      return new ManualWorker(this);
    }
  }

  /**
   * One attempt this worker ran.
   *
   * @param claim the claim it ran under
   * @param outcome what the handler returned, or {@code null} if it threw or returned nothing
   * @param error what the handler threw, or {@code null}
   * @param write whether the outcome was recorded, or {@code null} when it was not written ({@link
   *     #call})
   */
  public record Attempt(
      HeldClaim claim, Outcome outcome, Throwable error, ManualClaims.Write write) {}

  /** The worker ID. */
  public String workerId() {
    return workerId;
  }

  /** The low-level claims API this worker uses, for steps it does not wrap. */
  public ManualClaims claims() {
    return claims;
  }

  /**
   * Claims the next eligible item of {@code kind} and holds it: nothing runs and nothing is
   * recorded until the caller says so. Not claiming the work again, renewing or settling it is how
   * a test stalls a worker.
   */
  public Optional<HeldClaim> claimNext(String kind) {
    return withConnection(c -> claims.claimNext(c, workerId, queue, kind, lease));
  }

  /** Claims up to {@code limit} eligible items of {@code kinds}; see {@link ManualClaims#claim}. */
  public ManualClaims.Batch claim(List<String> kinds, int limit) {
    return withConnection(c -> claims.claim(c, workerId, List.of(queue), kinds, limit, lease));
  }

  /** Claims the next item of {@code kind} and {@linkplain #run runs} it, or returns nothing. */
  public Optional<Attempt> runNext(String kind) {
    return claimNext(kind).map(this::run);
  }

  /**
   * Runs the handler registered for the claim's kind and records its outcome with the runtime's
   * guarded write (a handler that throws, or returns {@code null}, gets a retry with its effect
   * unknown).
   *
   * @throws IllegalStateException if no handler is registered for the kind
   */
  public Attempt run(HeldClaim claim) {
    Attempt called = call(claim);
    Outcome toRecord =
        called.outcome() != null
            ? called.outcome()
            : Outcome.retry(
                called.error() == null
                    ? "the handler returned no outcome"
                    : called.error().getClass().getName() + ": " + called.error().getMessage(),
                Outcome.Effect.UNKNOWN);
    return new Attempt(claim, called.outcome(), called.error(), settle(claim, toRecord));
  }

  /**
   * Runs the handler registered for the claim's kind and records nothing: a worker that made its
   * call and then stopped (a pause, a crash) before recording the outcome. Settle it later with
   * {@link #settle}, or let its lease end ({@link #expireLease}).
   *
   * @throws IllegalStateException if no handler is registered for the kind
   */
  public Attempt call(HeldClaim claim) {
    Handler handler = handlers.get(claim.kind());
    if (handler == null) {
      throw new IllegalStateException(
          "no handler for kind " + claim.kind() + "; registered: " + handlers.keySet());
    }
    try {
      return new Attempt(claim, handler.handle(claim), null, null);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Attempt(claim, null, e, null);
    } catch (Exception e) {
      return new Attempt(claim, null, e, null);
    }
  }

  /** Records {@code outcome}; see {@link ManualClaims#settle}. */
  public ManualClaims.Write settle(HeldClaim claim, Outcome outcome) {
    return withConnection(c -> claims.settle(c, claim, outcome));
  }

  /** Records the claim as done without a receiver reference. */
  public ManualClaims.Write complete(HeldClaim claim) {
    return settle(claim, Outcome.done());
  }

  /** Extends the claim's lease by this worker's lease; see {@link ManualClaims#renew}. */
  public ManualClaims.Write renew(HeldClaim claim) {
    return withConnection(c -> claims.renew(c, claim, lease));
  }

  /** Gives the claim back uncounted; see {@link ManualClaims#release}. */
  public ManualClaims.Write release(HeldClaim claim) {
    return withConnection(c -> claims.release(c, claim));
  }

  /**
   * Ends the claim's lease now on the database clock, so the next claim takes the work over; see
   * {@link ManualClaims#expireLease}.
   */
  public ManualClaims.Write expireLease(HeldClaim claim) {
    return withConnection(c -> claims.expireLease(c, claim));
  }

  private interface Step<T> {
    T run(Connection c);
  }

  private <T> T withConnection(Step<T> step) {
    try (Connection c = dataSource.getConnection()) {
      return step.run(c);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot get or close a connection: " + e.getMessage(), e);
    }
  }
}
