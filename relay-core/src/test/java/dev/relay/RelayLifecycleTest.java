package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class RelayLifecycleTest {

  @Test
  void handlerOutcomeIsRecordedAsDoneWithReceiverEvidence(TestDatabase db) throws Exception {
    try (RelayFixture f = new RelayFixture(db)) {
      f.start(
          f.builder()
              .handle(
                  "order_received",
                  claim ->
                      Outcome.done(
                          "msg-" + claim.workId(), "{\"accepted\": true}", Milestone.QUEUED)));
      f.enqueue(Work.of("order-103-ack", "order_received", "{\"order_id\":103}"));

      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("order-103-ack")));
      Map<String, String> row = f.row("order-103-ack");
      assertThat(row)
          .containsEntry("receiver_ref", "msg-order-103-ack")
          .containsEntry("milestone", "queued")
          .containsEntry("outcome", "delivered")
          .containsEntry("result", "{\"accepted\": true}")
          .containsEntry("claimed_by", null)
          .containsEntry("attempts", "1");
      assertThat(f.attempts("order-103-ack")).isEmpty();
    }
  }

  @Test
  void startRegistersEachKindsPolicy(TestDatabase db) throws Exception {
    try (RelayFixture f = new RelayFixture(db)) {
      Relay relay =
          f.start(
              f.builder()
                  .workerId("worker-a")
                  .handle(
                      "mail",
                      KindPolicy.DEFAULT
                          .withBackoff(Duration.ofSeconds(2), Duration.ofMinutes(10))
                          .withMaxAttempts(7)
                          .withMaxElapsed(Duration.ofHours(6))
                          .withDedupHorizon(Duration.ofHours(12))
                          .withUnknownOutcome(UnknownOutcomePolicy.park()),
                      RelayFixture::done)
                  .handle("ping", RelayFixture::done));

      assertThat(relay.config().kinds().get("ping").maxRunTime())
          .isEqualTo(KindPolicy.DEFAULT_MAX_RUN_TIME);
      assertThat(
              db.queryString(
                  "SELECT concat_ws(' ', backoff_base, backoff_cap, max_attempts, max_elapsed,"
                      + " handler_timeout, dedup_horizon, unknown_outcome, registered_by)"
                      + " FROM {schema}.kind WHERE kind = 'mail'"))
          .isEqualTo("00:00:02 00:10:00 7 06:00:00 01:00:00 12:00:00 park worker-a");
      assertThat(db.queryLong("SELECT count(*) FROM {schema}.kind")).isEqualTo(2);
    }
  }

  @Test
  void startTwiceAndStartAfterCloseAreRefusedAndCloseIsIdempotent(TestDatabase db) {
    try (RelayFixture f = new RelayFixture(db)) {
      Relay relay = f.start(f.builder().handle("k", RelayFixture::done));
      assertThat(relay.isRunning()).isTrue();
      assertThatThrownBy(relay::start).isInstanceOf(IllegalStateException.class);
      relay.close();
      relay.close();
      assertThat(relay.isRunning()).isFalse();
      assertThatThrownBy(relay::start)
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("closed");
    }
  }

  @Test
  void defaultWorkerIdNamesHostAndProcessAndIsUniquePerRuntime(TestDatabase db) {
    Relay a = Relay.builder(db.dataSource()).handle("k", RelayFixture::done).build();
    Relay b = Relay.builder(db.dataSource()).handle("k", RelayFixture::done).build();
    assertThat(a.workerId()).contains("-" + ProcessHandle.current().pid() + "-");
    assertThat(a.workerId()).isNotEqualTo(b.workerId());
  }
}
