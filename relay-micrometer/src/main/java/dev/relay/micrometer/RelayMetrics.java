package dev.relay.micrometer;

import dev.relay.Claim;
import dev.relay.Outcome;
import dev.relay.RelayConfig;
import dev.relay.RelayEventListener;
import dev.relay.RelayException;
import dev.relay.admin.Admin;
import dev.relay.admin.QueueHealth;
import dev.relay.admin.WorkFilter;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Relay's meters for Micrometer, from two sources:
 *
 * <ul>
 *   <li><b>Gauges</b> read the tables through {@link Admin#health}, refreshed on an interval by
 *       {@link #start()} (or by {@link #refresh()}), never per scrape: a scrape reads the last
 *       values, so many scrapers cost the database nothing more.
 *   <li><b>Counters and timers</b> come from the runtime's events, through {@link #listener()},
 *       which you pass to {@code Relay.builder(...).listener(metrics.listener())}. They count what
 *       this process saw; sum them over processes.
 * </ul>
 *
 * <pre>{@code
 * RelayMetrics metrics = RelayMetrics.builder(Admin.create(dataSource)).build();
 * metrics.bindTo(registry);
 * metrics.start();                                       // gauge refresh every 15 s
 * Relay relay = Relay.builder(dataSource).listener(metrics.listener())...build();
 * }</pre>
 *
 * <table>
 *   <caption>Meters (tags are low-cardinality: queue, kind, and where named, reason, state,
 *   operation, result)</caption>
 *   <tr><th>Name</th><th>Type</th><th>Tags</th><th>Meaning</th></tr>
 *   <tr><td>relay.work.depth</td><td>gauge</td><td>queue, kind, state</td><td>rows per state</td></tr>
 *   <tr><td>relay.work.oldest.eligible.age</td><td>gauge, seconds</td><td>queue, kind</td>
 *       <td>how long the longest-waiting claimable item has waited (alert on this)</td></tr>
 *   <tr><td>relay.work.expired.leases</td><td>gauge</td><td>queue, kind</td>
 *       <td>running work whose lease has expired</td></tr>
 *   <tr><td>relay.work.blocked</td><td>gauge</td><td>queue, kind, reason</td>
 *       <td>ready work held by a dependency: {@code dependency_failed}, {@code
 *       dependency_cancelled}, {@code dependency_superseded}, {@code dependency_missing}</td></tr>
 *   <tr><td>relay.work.blocked.keys</td><td>gauge</td><td>queue, kind</td>
 *       <td>ordering keys held by a failed item: nothing behind it runs</td></tr>
 *   <tr><td>relay.work.paused.age</td><td>gauge, seconds</td><td>queue, kind</td>
 *       <td>how long a pause has held the pair's work ({@link Admin#pause}); 0 when not paused</td></tr>
 *   <tr><td>relay.claims</td><td>counter</td><td>queue, kind</td><td>claims committed</td></tr>
 *   <tr><td>relay.claims.repeated</td><td>counter</td><td>queue, kind</td>
 *       <td>claims with a generation above 1: the work had been claimed before</td></tr>
 *   <tr><td>relay.claims.expired</td><td>counter</td><td>queue, kind</td>
 *       <td>claims that took over an expired lease</td></tr>
 *   <tr><td>relay.writes.stale</td><td>counter</td><td>queue, kind, operation</td>
 *       <td>guarded writes refused because the claim was stale</td></tr>
 *   <tr><td>relay.completions</td><td>counter</td><td>queue, kind</td><td>done recorded</td></tr>
 *   <tr><td>relay.retries</td><td>counter</td><td>queue, kind, reason</td><td>retries
 *       scheduled (a snooze past its kind's cap counts here, reason {@code snooze_limit})</td></tr>
 *   <tr><td>relay.snoozes</td><td>counter</td><td>queue, kind</td><td>snoozes recorded: tried
 *       again later without spending an attempt, the effect known not to have happened</td></tr>
 *   <tr><td>relay.failures</td><td>counter</td><td>queue, kind, reason</td><td>work that
 *       ended failed (by a handler, or at claim time by a cap: deadline, attempts_exhausted)</td></tr>
 *   <tr><td>relay.outcomes.uncertain</td><td>counter</td><td>queue, kind, reason</td>
 *       <td>attempts whose effect is unknown: the handler threw or timed out ({@code
 *       handler_error}), reported an unknown effect ({@code reported_unknown}), or its lease
 *       expired ({@code lease_expired})</td></tr>
 *   <tr><td>relay.work.completion</td><td>timer</td><td>queue, kind</td><td>creation to
 *       completion, measured when done is recorded (the worker's clock against the stored
 *       creation time, so clock skew between hosts shows up here)</td></tr>
 *   <tr><td>relay.handler.duration</td><td>timer</td><td>queue, kind, result</td><td>handler
 *       run time; result is done, retry, fail, cancel or error</td></tr>
 * </table>
 *
 * <p>Every meter has a description (Prometheus's {@code # HELP} line). A (queue, kind) pair's
 * meters appear once it has rows (the gauges, at the next refresh) or events (the counters and
 * timers); {@link #registerAtZero} registers a runtime's pairs at zero from the start.
 *
 * <p>Bind the registry before the runtime starts: events that arrive before any registry is bound
 * are not kept. Reasons are the error kinds Relay and handlers record; keep them a small fixed set
 * (never an error message or an ID), or the tag set grows without bound. Thread-safe; the listener
 * is fast and never blocks.
 */
public final class RelayMetrics implements MeterBinder, AutoCloseable {
  /** Default gauge refresh interval: 15 s. */
  public static final Duration DEFAULT_REFRESH_INTERVAL = Duration.ofSeconds(15);

  /** Default window for {@link Admin#health}: 15 min. */
  public static final Duration DEFAULT_HEALTH_WINDOW = Duration.ofMinutes(15);

  private static final Logger log = LoggerFactory.getLogger(RelayMetrics.class);
  private static final List<String> STATES = WorkFilter.STATES;

  /** The reasons {@link QueueHealth#blockedByReason} counts (docs/dependencies.md). */
  private static final List<String> BLOCKED_REASONS = WorkFilter.BLOCKED_REASONS;

  /**
   * What each meter measures: its Micrometer description, which Prometheus prints as the family's
   * {@code # HELP} line. Every meter registered here has one.
   */
  static final Map<String, String> DESCRIPTIONS =
      Map.ofEntries(
          Map.entry(
              "relay.work.depth",
              "Work rows in each state (ready, running, done, failed, cancelled), from the database"),
          Map.entry(
              "relay.work.oldest.eligible.age",
              "Seconds the longest-waiting claimable work has waited (alert on this)"),
          Map.entry("relay.work.expired.leases", "Running work whose lease has expired"),
          Map.entry(
              "relay.work.blocked",
              "Ready work held by a dependency that failed, was cancelled or superseded, or is"
                  + " missing"),
          Map.entry(
              "relay.work.blocked.keys",
              "Ordering keys held by a failed item: nothing behind it runs"),
          Map.entry(
              "relay.work.paused.age",
              "Seconds a pause has held this queue and kind's work (0: not paused)"),
          Map.entry("relay.claims", "Claims committed by this process"),
          Map.entry(
              "relay.claims.repeated",
              "Claims of work that had been claimed before (generation above 1)"),
          Map.entry("relay.claims.expired", "Claims that took over an expired lease"),
          Map.entry(
              "relay.writes.stale",
              "Guarded writes (outcome or renewal) refused because the claim was stale"),
          Map.entry("relay.completions", "Work this process recorded done"),
          Map.entry("relay.retries", "Retries this process scheduled, by reason"),
          Map.entry(
              "relay.snoozes",
              "Snoozes this process recorded: tried again later without spending an attempt"),
          Map.entry(
              "relay.failures",
              "Work that ended failed, by a handler or by a cap at claim time, by reason"),
          Map.entry(
              "relay.outcomes.uncertain",
              "Attempts whose effect is unknown: the handler threw or timed out, reported an"
                  + " unknown effect, or its lease expired"),
          Map.entry(
              "relay.work.completion",
              "Creation to completion of work recorded done (this worker's clock against the"
                  + " stored creation time)"),
          Map.entry(
              "relay.handler.duration",
              "Handler run time, by result (done, retry, snooze, fail, cancel, error)"));

  /**
   * The counters tagged with queue and kind only: registered at zero by {@link #registerAtZero}.
   */
  private static final List<String> PAIR_COUNTERS =
      List.of(
          "relay.claims",
          "relay.claims.repeated",
          "relay.claims.expired",
          "relay.completions",
          "relay.snoozes");

  /** How long {@link #close()} waits for a refresh under way. */
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(10);

  private final Admin admin;
  private final Duration refreshInterval;
  private final Duration healthWindow;
  private final Clock clock;
  private final CompositeMeterRegistry meters = new CompositeMeterRegistry();
  private final Map<String, AtomicReference<Double>> gaugeValues = new ConcurrentHashMap<>();
  private final Listener listener = new Listener();
  private final Object lifecycle = new Object();
  private ScheduledExecutorService scheduler; // guarded by lifecycle
  private volatile boolean closing;

  private RelayMetrics(Builder b) {
    this.admin = b.admin;
    this.refreshInterval = b.refreshInterval;
    this.healthWindow = b.healthWindow;
    this.clock = b.clock;
  }

  /** A builder for metrics that read gauges through {@code admin}. */
  public static Builder builder(Admin admin) {
    return new Builder(Objects.requireNonNull(admin, "admin"));
  }

  /** Configures {@link RelayMetrics}; settings are validated at {@link #build()}. */
  public static final class Builder {
    private final Admin admin;
    private Duration refreshInterval = DEFAULT_REFRESH_INTERVAL;
    private Duration healthWindow = DEFAULT_HEALTH_WINDOW;
    private Clock clock = Clock.systemUTC();

    private Builder(Admin admin) {
      this.admin = admin;
    }

    /** How often {@link #start()} refreshes the gauges (1 s to 1 h; default 15 s). */
    public Builder refreshInterval(Duration interval) {
      this.refreshInterval = interval;
      return this;
    }

    /** The window passed to {@link Admin#health} (1 s to 1 day; default 15 min). */
    public Builder healthWindow(Duration window) {
      this.healthWindow = window;
      return this;
    }

    /**
     * The clock for creation-to-completion timing and the age of a pause (default the system clock,
     * UTC).
     */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** Validates the settings and builds the binder. */
    public RelayMetrics build() {
      check("refreshInterval", refreshInterval, Duration.ofSeconds(1), Duration.ofHours(1));
      check("healthWindow", healthWindow, Duration.ofSeconds(1), Duration.ofDays(1));
      return new RelayMetrics(this);
    }

    private static void check(String name, Duration d, Duration min, Duration max) {
      if (d == null || d.compareTo(min) < 0 || d.compareTo(max) > 0) {
        throw new IllegalArgumentException(
            name + " must be between " + min + " and " + max + ", was " + d);
      }
    }
  }

  /**
   * Registers every meter, present and future, with {@code registry}. May be called for several
   * registries.
   */
  @Override
  public void bindTo(MeterRegistry registry) {
    meters.add(registry);
  }

  /** The listener to pass to {@code Relay.Builder#listener}; it feeds the counters and timers. */
  public RelayEventListener listener() {
    return listener;
  }

  /**
   * Starts refreshing the gauges every interval (the first refresh at once). Idempotent; after
   * {@link #close()}, starts again.
   */
  public void start() {
    synchronized (lifecycle) {
      if (scheduler != null) {
        return;
      }
      closing = false;
      scheduler =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "relay-metrics-" + admin.schema());
                t.setDaemon(true);
                return t;
              });
      scheduler.scheduleWithFixedDelay(
          this::refreshQuietly, 0, refreshInterval.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Stops the refresh and waits (up to 10 s) for one under way to end, so that the DataSource can
   * be closed right after: a refresh cut off by its closing pool is not a failure worth a warning.
   * The meters stay registered with their last values. Idempotent.
   */
  @Override
  public void close() {
    ScheduledExecutorService s;
    synchronized (lifecycle) {
      s = scheduler;
      scheduler = null;
      closing = true;
    }
    if (s == null) {
      return;
    }
    s.shutdownNow(); // interrupts a refresh waiting for a connection
    try {
      if (!s.awaitTermination(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
        log.debug("relay metrics: a gauge refresh is still running after {}", CLOSE_WAIT);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Registers, at zero, the meters of every (queue, kind) pair {@code runtime} claims: its gauges
   * (a refresh sets them from the tables) and the counters tagged with queue and kind alone ({@code
   * relay.claims}, {@code relay.claims.repeated}, {@code relay.claims.expired}, {@code
   * relay.completions}, {@code relay.snoozes}), so that a scrape right after start shows them and
   * {@code rate()} sees their first increase. Without it a pair's meters appear with its first rows
   * or events. Meters tagged with a reason, an operation or a result always appear with their first
   * event. The Spring Boot starter (and so {@code relay serve}) calls it for its runtime.
   */
  public void registerAtZero(RelayConfig runtime) {
    for (String queue : runtime.queues()) {
      for (String kind : runtime.kinds().keySet()) {
        Tags base = Tags.of("queue", queue, "kind", kind);
        STATES.forEach(state -> gauge("relay.work.depth", base.and("state", state)));
        gauge("relay.work.oldest.eligible.age", base);
        gauge("relay.work.expired.leases", base);
        gauge("relay.work.blocked.keys", base);
        gauge("relay.work.paused.age", base);
        BLOCKED_REASONS.forEach(reason -> gauge("relay.work.blocked", base.and("reason", reason)));
        PAIR_COUNTERS.forEach(name -> counter(name, base));
      }
    }
  }

  /**
   * Reads {@link Admin#health} once and updates the gauges. A (queue, kind) that no longer has rows
   * drops to zero.
   *
   * @return the health read
   */
  public List<QueueHealth> refresh() {
    List<QueueHealth> health = admin.health(healthWindow);
    Map<String, Double> fresh = new ConcurrentHashMap<>();
    for (QueueHealth h : health) {
      Tags base = Tags.of("queue", h.queue(), "kind", h.kind());
      long[] counts = {h.ready(), h.running(), h.done(), h.failed(), h.cancelled()};
      for (int i = 0; i < STATES.size(); i++) {
        fresh.put(gauge("relay.work.depth", base.and("state", STATES.get(i))), (double) counts[i]);
      }
      fresh.put(
          gauge("relay.work.oldest.eligible.age", base), h.oldestEligibleAge().toNanos() / 1e9);
      fresh.put(gauge("relay.work.expired.leases", base), (double) h.expiredLeases());
      fresh.put(gauge("relay.work.blocked.keys", base), (double) h.blockedKeys());
      fresh.put(
          gauge("relay.work.paused.age", base),
          h.pausedSince() == null
              ? 0.0
              : Math.max(0, Duration.between(h.pausedSince(), clock.instant()).toNanos() / 1e9));
      // every known reason has a series (zero when none), so an alert sees it rise from zero
      Map<String, Long> held = new TreeMap<>();
      BLOCKED_REASONS.forEach(r -> held.put(r, 0L));
      held.putAll(h.blockedByReason());
      held.forEach(
          (reason, n) ->
              fresh.put(gauge("relay.work.blocked", base.and("reason", reason)), (double) n));
    }
    for (Map.Entry<String, AtomicReference<Double>> e : gaugeValues.entrySet()) {
      e.getValue().set(fresh.getOrDefault(e.getKey(), 0.0));
    }
    return health;
  }

  private void refreshQuietly() {
    try {
      refresh();
    } catch (RuntimeException e) {
      if (closing || Thread.currentThread().isInterrupted()) {
        // close() stopped it, and the DataSource may be closing too: expected, not a warning
        log.debug("relay metrics refresh stopped by close(): {}", e.toString());
        return;
      }
      if (e instanceof RelayException r && "42501".equals(r.sqlState())) {
        // a worker-only user: one line saying what to do, not a stack trace every refresh
        if (!permissionWarned) {
          permissionWarned = true;
          log.warn(
              "relay metrics: this database user may not read queue health ({}): the relay.work.*"
                  + " gauges need the operator role (relay migrate --roles: <schema>_operator);"
                  + " give it to the user, or do not bind RelayMetrics (Spring Boot:"
                  + " relay.metrics-enabled=false). The gauges keep their last values.",
              e.getMessage());
        } else {
          log.debug("relay metrics refresh refused again: {}", e.toString());
        }
        return;
      }
      log.warn("relay metrics refresh failed; keeping the last values", e);
    }
  }

  private volatile boolean permissionWarned;

  /** Registers the gauge once; returns its key in {@link #gaugeValues}. */
  private String gauge(String name, Tags tags) {
    String key = name + tags;
    gaugeValues.computeIfAbsent(
        key,
        k -> {
          AtomicReference<Double> value = new AtomicReference<>(0.0);
          Gauge.builder(name, value, AtomicReference::get)
              .tags(tags)
              .description(DESCRIPTIONS.get(name))
              .register(meters);
          return value;
        });
    return key;
  }

  private static Tags tags(Claim c) {
    return Tags.of("queue", c.queue(), "kind", c.kind());
  }

  private Counter counter(String name, Tags tags) {
    return Counter.builder(name).tags(tags).description(DESCRIPTIONS.get(name)).register(meters);
  }

  private Timer timer(String name, Tags tags) {
    return Timer.builder(name).tags(tags).description(DESCRIPTIONS.get(name)).register(meters);
  }

  /** Feeds counters and timers; each call is a map lookup and an add. */
  private final class Listener implements RelayEventListener {
    @Override
    public void claimed(Claim claim) {
      Tags t = tags(claim);
      counter("relay.claims", t).increment();
      if (claim.generation() > 1) {
        counter("relay.claims.repeated", t).increment();
      }
    }

    @Override
    public void reclaimedAfterLeaseExpiry(Claim claim, String previousOwner) {
      Tags t = tags(claim);
      counter("relay.claims.expired", t).increment();
      counter("relay.outcomes.uncertain", t.and("reason", "lease_expired")).increment();
    }

    @Override
    public void finished(Claim claim, Outcome outcome, Throwable error, Duration duration) {
      String result;
      boolean unknown = false;
      if (error != null || outcome == null) {
        result = "error";
        unknown = true;
      } else if (outcome instanceof Outcome.Done) {
        result = "done";
      } else if (outcome instanceof Outcome.Retry r) {
        result = "retry";
        unknown = r.effect() == Outcome.Effect.UNKNOWN;
      } else if (outcome instanceof Outcome.Snooze) {
        result = "snooze";
      } else if (outcome instanceof Outcome.Fail f) {
        result = "fail";
        unknown = f.effect() == Outcome.Effect.UNKNOWN;
      } else {
        Outcome.Cancel x = (Outcome.Cancel) outcome;
        result = "cancel";
        unknown = x.effect() == Outcome.Effect.UNKNOWN;
      }
      Tags t = tags(claim);
      timer("relay.handler.duration", t.and("result", result)).record(duration);
      if (unknown) {
        counter(
                "relay.outcomes.uncertain",
                t.and(
                    "reason",
                    error != null || outcome == null ? "handler_error" : "reported_unknown"))
            .increment();
      }
    }

    @Override
    public void completed(Claim claim) {
      Tags t = tags(claim);
      counter("relay.completions", t).increment();
      if (claim.createdAt() != null) {
        Duration d = Duration.between(claim.createdAt(), clock.instant());
        if (!d.isNegative()) {
          timer("relay.work.completion", t).record(d);
        }
      }
    }

    @Override
    public void retried(Claim claim, Duration delay, String errorKind, String error) {
      counter("relay.retries", tags(claim).and("reason", reason(errorKind))).increment();
    }

    @Override
    public void snoozed(Claim claim, Duration delay, String reason) {
      counter("relay.snoozes", tags(claim)).increment();
    }

    @Override
    public void failed(Claim claim, String errorKind, String error) {
      counter("relay.failures", tags(claim).and("reason", reason(errorKind))).increment();
    }

    @Override
    public void stale(Claim claim, String operation) {
      counter("relay.writes.stale", tags(claim).and("operation", reason(operation))).increment();
    }

    @Override
    public void retired(String workId, String kind, String queue, String state, String reason) {
      if (state.equals("failed")) {
        counter("relay.failures", Tags.of("queue", queue, "kind", kind, "reason", reason(reason)))
            .increment();
      }
    }
  }

  private static String reason(String s) {
    return s == null || s.isEmpty() ? "unknown" : s;
  }
}
