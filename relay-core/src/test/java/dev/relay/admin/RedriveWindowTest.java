package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Rows;
import dev.relay.Work;
import dev.relay.internal.store.ClaimedWork;
import dev.relay.internal.store.WorkStore;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Bug 3: a redrive gives a fresh retry window. Before, it kept the first attempt's time, so work
 * redriven after its window got one attempt and failed with retry_window_exhausted.
 */
@RelayDatabaseTest
class RedriveWindowTest {
  private AdminFixture f;

  @BeforeEach
  void setUp(TestDatabase db) throws SQLException {
    f = new AdminFixture(db.dataSource(), db.schema());
    try (Connection c = f.ds.getConnection()) {
      f.store.registerKinds(
          c,
          "worker-1",
          List.of(
              new WorkStore.KindRow(
                  "k",
                  Duration.ofSeconds(1),
                  Duration.ofMinutes(1),
                  25,
                  Duration.ofHours(1), // the retry window
                  Duration.ofSeconds(30),
                  Duration.ofDays(7), // the receiver's deduplication horizon
                  "retry")));
    }
  }

  private Instant databaseNow() {
    return ((Timestamp) Rows.query(f.ds, f.schema, "SELECT clock_timestamp() AS t").get(0).get("t"))
        .toInstant();
  }

  @Test
  void workRedrivenAfterItsRetryWindowStartsANewWindowAndKeepsItsFirstAttemptForTheHorizon() {
    f.enqueue(Work.of("late", "k", "{}"));
    f.fail(f.claim("k", 1).get(0), "retry_window_exhausted");
    // The first attempt was two hours ago: past the one-hour window, inside the horizon.
    Rows.update(
        f.ds,
        f.schema,
        "UPDATE {schema}.outbox SET first_attempt_at = clock_timestamp() - interval '2 hours'");
    Instant original =
        ((Timestamp)
                Rows.query(
                        f.ds,
                        f.schema,
                        "SELECT first_attempt_at FROM {schema}.work WHERE work_id = 'late'")
                    .get(0)
                    .get("first_attempt_at"))
            .toInstant();

    assertThat(f.admin.redrive("late", RedriveRequest.of("ops", "fixed")).status())
        .isEqualTo(RedriveResult.Status.REDRIVEN);
    ClaimedWork again = f.claim("k", 1).get(0);

    // The window the runtime measures starts at this claim, not two hours ago.
    assertThat(again.attempt()).isEqualTo(1);
    assertThat(Duration.between(again.firstAttemptAt(), databaseNow()))
        .isLessThan(Duration.ofMinutes(30));
    // The admin view keeps the first attempt ever: the horizon is measured from it.
    assertThat(f.admin.show("late").orElseThrow().item().firstAttemptAt()).isEqualTo(original);
  }
}
