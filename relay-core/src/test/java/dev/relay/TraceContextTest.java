package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The producer's trace context stored with the work by the enqueue statement, read back by the
 * claim, and handed to the tracing hook around each attempt (the MDC keys are asserted in
 * relay-opentelemetry's tests, which log through an SLF4J binding that keeps an MDC).
 */
@RelayDatabaseTest
class TraceContextTest {
  static final String PARENT_A = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  static final String PARENT_B = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  private RelayFixture f;

  /** A hook whose "current" context the test sets, like a tracer's current span. */
  private final AtomicReference<Map<String, String>> current = new AtomicReference<>(Map.of());

  private final RelayTracing hook =
      new RelayTracing() {
        @Override
        public Map<String, String> currentContext() {
          return current.get();
        }
      };

  private Outbox traced;

  @BeforeEach
  void setUp(TestDatabase db) {
    f = new RelayFixture(db);
    traced = Outbox.builder().schema(db.schema()).tracing(hook).build();
  }

  @AfterEach
  void tearDown() {
    f.close();
  }

  private List<EnqueueResult> enqueue(Outbox outbox, Work... works) throws SQLException {
    try (Connection c = f.db.connection()) {
      c.setAutoCommit(false);
      List<EnqueueResult> r = outbox.enqueueAll(c, List.of(works));
      c.commit();
      return r;
    }
  }

  private String stored(String workId) {
    return f.column(workId, "trace_context");
  }

  @Nested
  class Enqueue {
    @Test
    void theCurrentContextIsStoredWithTheWork() throws SQLException {
      current.set(Map.of("traceparent", PARENT_A, "tracestate", "vendor=a\"b\\c"));

      enqueue(traced, Work.of("w", "k", "{}"));

      assertThat(stored("w"))
          .contains("\"traceparent\": \"" + PARENT_A + "\"")
          .contains("\"tracestate\": \"vendor=a\\\"b\\\\c\"");
      assertThat(f.column("w", "payload")).isEqualTo("{}");
    }

    @Test
    void withoutAHookOrACurrentTraceNothingIsStored() throws SQLException {
      enqueue(f.outbox, Work.of("untraced", "k", "{}"));
      enqueue(traced, Work.of("no-span", "k", "{}"));

      assertThat(stored("untraced")).isNull();
      assertThat(stored("no-span")).isNull();
    }

    @Test
    void anEqualRepeatUnderAnotherTraceKeepsTheFirst() throws SQLException {
      current.set(Map.of("traceparent", PARENT_A));
      enqueue(traced, Work.of("w", "k", "{\"a\": 1}"));
      current.set(Map.of("traceparent", PARENT_B));

      List<EnqueueResult> repeat = enqueue(traced, Work.of("w", "k", "{\"a\":1}"));

      assertThat(repeat.get(0).status()).isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
      assertThat(stored("w")).contains(PARENT_A).doesNotContain(PARENT_B);
    }

    @Test
    void bulkEnqueueStoresOneContextPerItem() throws SQLException {
      current.set(Map.of("traceparent", PARENT_A));

      enqueue(
          traced,
          Work.of("b-own", "k", "{}").traceContext(Map.of("traceparent", PARENT_B)),
          Work.of("a-current", "k", "{}"),
          Work.of("c-none", "k", "{}").traceContext(Map.of()),
          Work.of("d-keyed", "k", "{}").orderingKey("key"));

      assertThat(stored("b-own")).contains(PARENT_B);
      assertThat(stored("a-current")).contains(PARENT_A);
      assertThat(stored("c-none")).isNull();
      assertThat(stored("d-keyed")).contains(PARENT_A);
      assertThat(f.column("d-keyed", "sequence")).isEqualTo("1");
    }

    @Test
    void aMalformedContextIsRefusedNamingTheFieldAndNothingIsWritten() {
      Work bad = Work.of("w", "k", "{}").traceContext(Map.of("Trace Parent", PARENT_A));

      assertThatThrownBy(() -> enqueue(traced, bad))
          .isInstanceOfSatisfying(
              InvalidWorkException.class, e -> assertThat(e.field()).isEqualTo("traceContext"))
          .hasMessageContaining("Trace Parent");
      current.set(Map.of("traceparent", "x".repeat(5000)));
      assertThatThrownBy(() -> enqueue(traced, Work.of("w", "k", "{}")))
          .isInstanceOf(InvalidWorkException.class)
          .hasMessageContaining("traceparent");
      // PostgreSQL cannot store a NUL: refused here, not by the insert that aborts the caller's
      // transaction
      assertThatThrownBy(
              () ->
                  enqueue(
                      traced,
                      Work.of("w", "k", "{}").traceContext(Map.of("traceparent", "00-\u0000"))))
          .isInstanceOf(InvalidWorkException.class)
          .hasMessageContaining("has a NUL character");
      assertThat(f.row("w")).isEmpty();
    }
  }

  @Nested
  class Attempts {
    @Test
    void theHandlerRunsInTheHooksScopeWithTheStoredContext() throws SQLException {
      current.set(Map.of("traceparent", PARENT_A));
      enqueue(traced, Work.of("w", "k", "{}"));
      List<String> seen = new CopyOnWriteArrayList<>();
      RelayTracing consumer =
          new RelayTracing() {
            @Override
            public Scope enterAttempt(Claim claim) {
              seen.add("enter " + claim.traceContext().get("traceparent"));
              return () -> seen.add("leave");
            }

            @Override
            public void completed(Claim claim) {
              seen.add("completed");
            }
          };

      f.start(
          f.builder()
              .tracing(consumer)
              .handle(
                  "k",
                  claim -> {
                    seen.add("handler");
                    return Outcome.done();
                  }));

      await().atMost(RelayFixture.PATIENCE).until(() -> seen.contains("completed"));
      assertThat(seen).containsExactly("enter " + PARENT_A, "handler", "leave", "completed");
    }

    @Test
    void workWithoutAContextHasAnEmptyOne() throws SQLException {
      enqueue(f.outbox, Work.of("w", "k", "{}"));
      AtomicReference<Map<String, String>> seen = new AtomicReference<>();

      f.start(
          f.builder()
              .handle(
                  "k",
                  claim -> {
                    seen.set(claim.traceContext());
                    return Outcome.done();
                  }));

      await().atMost(RelayFixture.PATIENCE).until(() -> "done".equals(f.state("w")));
      assertThat(seen.get()).isEmpty();
    }

    @Test
    void aManualClaimCarriesTheStoredContext() throws SQLException {
      current.set(Map.of("traceparent", PARENT_B, "baggage", "user=7"));
      enqueue(traced, Work.of("w", "k", "{}"));

      try (Connection c = f.db.connection()) {
        HeldClaim claim =
            ManualClaims.forSchema(f.db.schema())
                .claimNext(c, "manual", Work.DEFAULT_QUEUE, "k", Duration.ofMinutes(1))
                .orElseThrow();
        assertThat(claim.traceContext())
            .containsExactlyInAnyOrderEntriesOf(
                Map.of("traceparent", PARENT_B, "baggage", "user=7"));
      }
    }
  }
}
