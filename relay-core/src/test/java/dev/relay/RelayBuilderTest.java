package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.postgresql.ds.PGSimpleDataSource;

/** Validation at build(): no database is touched, so a bare data source is enough. */
class RelayBuilderTest {
  private static Relay.Builder valid() {
    return Relay.builder(new PGSimpleDataSource()).handle("k", c -> null);
  }

  private static Arguments bad(String setting, String allowed, UnaryOperator<Relay.Builder> b) {
    return Arguments.of(setting, allowed, b);
  }

  static Stream<Arguments> invalidSettings() {
    KindPolicy p = KindPolicy.DEFAULT;
    return Stream.of(
        bad("workerId", "1-200 characters", b -> b.workerId(" ")),
        bad("workerId", "1-200 characters", b -> b.workerId("w".repeat(201))),
        bad("schema", "plain identifier", b -> b.schema("Relay; DROP")),
        bad("schema", "at most 57", b -> b.schema("s".repeat(60))),
        bad("queues", "1-100", b -> b.queues()),
        bad("queues", "A-Z a-z", b -> b.queues("mail queue")),
        bad("queues", "'mail' is named twice", b -> b.queues("mail", "sms", "mail")),
        bad("handle(kind)", "1-100 characters", b -> b.handle("no spaces", c -> null)),
        bad("batchSize", "between 1 and 1000", b -> b.batchSize(0)),
        bad("batchSize", "between 1 and 1000", b -> b.batchSize(1001)),
        bad("concurrency", "between 1 and 10000", b -> b.concurrency(0)),
        bad("bufferSize", "between 0 and 10000", b -> b.bufferSize(-1)),
        bad("lease", "between PT0.1S and PT24H", b -> b.lease(Duration.ofMillis(99))),
        bad("lease", "between PT0.1S and PT24H", b -> b.lease(null)),
        bad(
            "renewInterval",
            "shorter than the lease",
            b -> b.renewInterval(Duration.ofSeconds(60))),
        bad("renewInterval", "at least 10 ms", b -> b.renewInterval(Duration.ofMillis(5))),
        bad("startMargin", "shorter than the lease", b -> b.startMargin(Duration.ofMinutes(2))),
        bad("startMargin", "zero or more", b -> b.startMargin(Duration.ofSeconds(-1))),
        bad("pollInterval", "between PT0.01S and PT1H", b -> b.pollInterval(Duration.ZERO)),
        bad("pollJitter", "between 0.0 and 1.0", b -> b.pollJitter(1.5)),
        bad("pollJitter", "between 0.0 and 1.0", b -> b.pollJitter(Double.NaN)),
        bad("shutdownGrace", "between PT0S and PT1H", b -> b.shutdownGrace(Duration.ofHours(2))),
        bad("completionBatchSize", "between 1 and 10000", b -> b.completionBatchSize(0)),
        bad(
            "completionMaxDelay",
            "between PT0S and PT10S",
            b -> b.completionMaxDelay(Duration.ofSeconds(11))),
        bad(
            "kind k: backoffBase",
            "between PT0.001S",
            b -> b.handle("k", p.withBackoff(Duration.ZERO, Duration.ofSeconds(1)), c -> null)),
        bad(
            "kind k: backoffCap",
            "between PT1S",
            b ->
                b.handle(
                    "k", p.withBackoff(Duration.ofSeconds(1), Duration.ofMillis(10)), c -> null)),
        bad(
            "kind k: maxAttempts",
            "between 1 and 10000",
            b -> b.handle("k", p.withMaxAttempts(0), c -> null)),
        bad(
            "kind k: maxRunTime",
            "between PT0.001S and PT720H",
            b -> b.handle("k", p.withMaxRunTime(Duration.ZERO), c -> null)),
        bad(
            "kind k: maxRunTime",
            "between PT0.001S and PT720H",
            b -> b.handle("k", p.withMaxRunTime(Duration.ofDays(31)), c -> null)),
        bad(
            "completionMaxDelay",
            "shorter than the lease minus the renew interval (PT1S - PT0.5S = PT0.5S)",
            b ->
                b.lease(Duration.ofSeconds(1))
                    .renewInterval(Duration.ofMillis(500))
                    .completionMaxDelay(Duration.ofMillis(500))),
        bad(
            "statementTimeout",
            "between PT0.001S and PT24H",
            b -> b.statementTimeout(Duration.ZERO)),
        bad("lockTimeout", "between PT0.001S and PT24H", b -> b.lockTimeout(Duration.ofDays(2))),
        bad(
            "idleInTransactionTimeout",
            "between PT0.001S and PT24H",
            b -> b.idleInTransactionTimeout(null)),
        bad(
            "kind k: maxElapsed",
            "deduplication horizon",
            b ->
                b.handle(
                    "k",
                    p.withMaxElapsed(Duration.ofHours(48)).withDedupHorizon(Duration.ofHours(24)),
                    c -> null)),
        bad(
            "kind k: dedupHorizon",
            "between PT0S",
            b -> b.handle("k", p.withDedupHorizon(Duration.ofSeconds(-1)), c -> null)),
        // issue 23: a takeover after a crash would always come after the horizon
        bad(
            "kind k: dedupHorizon",
            "shorter than the lease (PT5S) plus the pollInterval (PT1S)",
            b ->
                b.lease(Duration.ofSeconds(5))
                    .pollInterval(Duration.ofSeconds(1))
                    .handle(
                        "k",
                        p.withMaxElapsed(Duration.ofSeconds(2))
                            .withDedupHorizon(Duration.ofSeconds(2)),
                        c -> null)),
        bad(
            "kind k: dedupHorizon",
            "shorter than the lease (PT5S) plus the pollInterval (PT1S)",
            b ->
                b.lease(Duration.ofSeconds(5))
                    .pollInterval(Duration.ofSeconds(1))
                    .handle(
                        "k",
                        p.withMaxElapsed(Duration.ofMillis(5999))
                            .withDedupHorizon(Duration.ofMillis(5999)),
                        c -> null)));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource("invalidSettings")
  void invalidSettingIsRefusedNamingTheSettingAndItsRange(
      String setting, String allowed, UnaryOperator<Relay.Builder> change) {
    assertThatThrownBy(() -> change.apply(valid()).build())
        .isInstanceOfSatisfying(
            InvalidConfigurationException.class, e -> assertThat(e.setting()).isEqualTo(setting))
        .hasMessageContaining(allowed);
  }

  @Test
  void aHorizonOfExactlyTheLeasePlusThePollIntervalIsAccepted() {
    Relay relay =
        valid()
            .lease(Duration.ofSeconds(5))
            .pollInterval(Duration.ofSeconds(1))
            .handle(
                "k",
                KindPolicy.DEFAULT
                    .withMaxElapsed(Duration.ofSeconds(6))
                    .withDedupHorizon(Duration.ofSeconds(6)),
                c -> null)
            .build();
    assertThat(relay.config().kinds().get("k").dedupHorizon()).isEqualTo(Duration.ofSeconds(6));
  }

  @Test
  void aRelayWithoutHandlersIsRefused() {
    assertThatThrownBy(() -> Relay.builder(new PGSimpleDataSource()).build())
        .isInstanceOfSatisfying(
            InvalidConfigurationException.class,
            e -> assertThat(e.setting()).isEqualTo("handlers"));
  }

  @Test
  void parkOrReconcileMayKeepRetryingKnownNonDeliveriesPastTheHorizon() {
    Relay relay =
        valid()
            .handle(
                "sms",
                KindPolicy.DEFAULT
                    .withDedupHorizon(Duration.ZERO)
                    .withUnknownOutcome(UnknownOutcomePolicy.park()),
                c -> null)
            .build();
    assertThat(relay.config().kinds().get("sms").dedupHorizon()).isZero();
  }

  @Test
  void aRunTimeFarLongerThanTheLeaseIsAccepted() {
    Relay relay =
        valid()
            .lease(Duration.ofSeconds(6))
            .handle("long", KindPolicy.DEFAULT.withMaxRunTime(Duration.ofHours(2)), c -> null)
            .build();
    assertThat(relay.config().kinds().get("long").maxRunTime()).isEqualTo(Duration.ofHours(2));
  }

  @Test
  void defaultsAreResolvedFromTheLease() {
    RelayConfig config =
        valid()
            .lease(Duration.ofSeconds(8))
            .notifications(false)
            .schema("s".repeat(60))
            .build()
            .config();
    assertThat(config.renewInterval()).isEqualTo(Duration.ofSeconds(8).dividedBy(3));
    assertThat(config.startMargin()).isEqualTo(Duration.ofSeconds(2));
    // The run time is independent of the lease: heartbeats keep the claim while the handler runs.
    assertThat(config.kinds().get("k").maxRunTime()).isEqualTo(KindPolicy.DEFAULT_MAX_RUN_TIME);
    assertThat(config.statementTimeout()).isEqualTo(Relay.DEFAULT_STATEMENT_TIMEOUT);
    assertThat(config.lockTimeout()).isEqualTo(Relay.DEFAULT_LOCK_TIMEOUT);
    assertThat(config.idleInTransactionTimeout())
        .isEqualTo(Relay.DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT);
    assertThat(config.queues()).isEqualTo(List.of("default"));
    assertThat(Relay.builder(new PGSimpleDataSource()).handle("k", c -> null).build().config())
        .satisfies(
            c -> {
              assertThat(c.lease()).isEqualTo(Relay.DEFAULT_LEASE);
              assertThat(c.renewInterval()).isEqualTo(Relay.DEFAULT_RENEW_INTERVAL);
              assertThat(c.startMargin()).isEqualTo(Relay.DEFAULT_START_MARGIN);
              assertThat(c.batchSize()).isEqualTo(Relay.DEFAULT_BATCH_SIZE);
              assertThat(c.notifications()).isTrue();
            });
  }
}
