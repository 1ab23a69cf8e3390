package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class EnqueueTest {
  private DataSource ds;
  private String schema;
  private Outbox outbox;

  @BeforeEach
  void setUp(TestDatabase db) {
    ds = db.dataSource();
    schema = db.schema();
    outbox = Outbox.builder().schema(schema).build();
  }

  private long outboxRows() {
    return Rows.count(ds, schema, "SELECT count(*) FROM {schema}.work");
  }

  /** Runs {@code body} in a transaction and commits it. */
  private void inTransaction(Consumer<Connection> body) throws SQLException {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      try {
        body.accept(c);
        c.commit();
      } catch (RuntimeException e) {
        c.rollback();
        throw e;
      }
    }
  }

  @Nested
  class PurchaseBoundary {
    private Shop shop;

    @BeforeEach
    void createShop() throws SQLException {
      shop = new Shop(schema);
      shop.create(ds);
    }

    @Test
    void purchaseAndItsWorkCommitTogether() throws SQLException {
      inTransaction(
          c -> {
            shop.storeOrder103(c);
            outbox.enqueue(c, Work.of("order-103-ack", "order_received", Shop.ACK_PAYLOAD));
          });

      assertThat(shop.orders(ds)).isEqualTo(1);
      assertThat(shop.stock(ds, "P3")).isEqualTo(10);
      assertThat(shop.stock(ds, "P7")).isEqualTo(0);
      assertThat(shop.stock(ds, "P9")).isEqualTo(4);
      Map<String, Object> row = Rows.work(ds, schema, "order-103-ack");
      assertThat(row).containsEntry("state", "ready").containsEntry("claim_generation", 0L);
    }

    @Test
    void rolledBackPurchaseLeavesNoWork() throws SQLException {
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        shop.storeOrder103(c);
        outbox.enqueue(c, Work.of("order-103-ack", "order_received", Shop.ACK_PAYLOAD));
        c.rollback();
      }

      assertThat(shop.orders(ds)).isZero();
      assertThat(shop.stock(ds, "P3")).isEqualTo(11);
      assertThat(shop.stock(ds, "P9")).isEqualTo(6);
      assertThat(outboxRows()).isZero();
    }

    @Test
    void outboxInsertFailureAbortsThePurchase() throws SQLException {
      // The ID is already used by another intention: the enqueue must fail the purchase.
      inTransaction(c -> outbox.enqueue(c, Work.of("order-103-ack", "order_received", "{}")));

      assertThatThrownBy(
              () ->
                  inTransaction(
                      c -> {
                        shop.storeOrder103(c);
                        outbox.enqueue(
                            c, Work.of("order-103-ack", "order_received", Shop.ACK_PAYLOAD));
                      }))
          .isInstanceOf(WorkConflictException.class);

      assertThat(shop.orders(ds)).isZero();
      assertThat(shop.stock(ds, "P3")).isEqualTo(11);
      assertThat(String.valueOf(Rows.work(ds, schema, "order-103-ack").get("payload")))
          .isEqualTo("{}");
      assertThat(outboxRows()).isEqualTo(1);
    }
  }

  @Nested
  class Identity {
    private EnqueueResult enqueue(Work w) throws SQLException {
      AtomicReference<EnqueueResult> result = new AtomicReference<>();
      inTransaction(c -> result.set(outbox.enqueue(c, w)));
      return result.get();
    }

    @Test
    void repeatWithReorderedKeysWhitespaceAndEqualNumbersIsAlreadyEnqueued() throws SQLException {
      assertThat(enqueue(Work.of("w1", "k", "{\"total\":29.00,\"id\":103}")).status())
          .isEqualTo(EnqueueResult.Status.ENQUEUED);

      EnqueueResult repeat = enqueue(Work.of("w1", "k", " { \"id\" : 103 ,\n \"total\" : 29.0 } "));

      assertThat(repeat.status()).isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
      assertThat(outboxRows()).isEqualTo(1);
    }

    @Test
    void differentStringValueUnderTheSameIdIsAConflictNamingTheId() throws SQLException {
      enqueue(Work.of("w1", "k", "{\"total\":\"29.00\"}"));

      assertThatThrownBy(() -> enqueue(Work.of("w1", "k", "{\"total\":\"29.0\"}")))
          .isInstanceOfSatisfying(
              WorkConflictException.class,
              e -> {
                assertThat(e.workId()).isEqualTo("w1");
                assertThat(e.purged()).as("the stored work is live").isFalse();
                assertThat(e.getMessage()).contains("'w1'").doesNotContain("tombstone");
                assertThat(e.storedPayloadDigest()).isNotEqualTo(e.requestedPayloadDigest());
              });
    }

    @Test
    void changedTotalIsAConflict() throws SQLException {
      enqueue(Work.of("order-103-ack", "order_received", "{\"total\":29.00}"));

      assertThatThrownBy(
              () -> enqueue(Work.of("order-103-ack", "order_received", "{\"total\":31.00}")))
          .isInstanceOf(WorkConflictException.class);
    }

    @Test
    void sameIdWithAnotherKindIsAConflict() throws SQLException {
      enqueue(Work.of("w1", "k", "{}"));

      assertThatThrownBy(() -> enqueue(Work.of("w1", "other", "{}")))
          .isInstanceOfSatisfying(
              WorkConflictException.class,
              e -> {
                assertThat(e.storedKind()).isEqualTo("k");
                assertThat(e.requestedKind()).isEqualTo("other");
                // The payloads are equal; the digests say so, so the kind is the difference.
                assertThat(e.storedPayloadDigest())
                    .isNotNull()
                    .isEqualTo(e.requestedPayloadDigest());
              });
    }

    @Test
    void bulkCallNamingOneIdTwiceIsRefusedBeforeAnythingIsSent() throws SQLException {
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        assertThatThrownBy(
                () ->
                    outbox.enqueueAll(
                        c,
                        List.of(
                            Work.of("a", "k", "{}"),
                            Work.of("b", "k", "{}"),
                            Work.of("a", "k", "{}"))))
            .isInstanceOfSatisfying(
                InvalidWorkException.class, e -> assertThat(e.workId()).isEqualTo("a"));
        // Nothing was sent, so the transaction is still usable.
        outbox.enqueue(c, Work.of("c", "k", "{}"));
        c.commit();
      }
      assertThat(outboxRows()).isEqualTo(1);
    }

    @Test
    void bulkEnqueueReportsEachItemInTheCallersOrder() throws SQLException {
      enqueue(Work.of("m", "k", "{\"v\":1}"));
      AtomicReference<List<EnqueueResult>> results = new AtomicReference<>();

      inTransaction(
          c ->
              results.set(
                  outbox.enqueueAll(
                      c,
                      List.of(
                          Work.of("z", "k", "{}"),
                          Work.of("m", "k", "{\"v\":1.0}"),
                          Work.of("a", "k", "{}")))));

      assertThat(results.get())
          .extracting(EnqueueResult::workId, EnqueueResult::status)
          .containsExactly(
              org.assertj.core.groups.Tuple.tuple("z", EnqueueResult.Status.ENQUEUED),
              org.assertj.core.groups.Tuple.tuple("m", EnqueueResult.Status.ALREADY_ENQUEUED),
              org.assertj.core.groups.Tuple.tuple("a", EnqueueResult.Status.ENQUEUED));
    }

    @Test
    void concurrentDuplicateUnderRepeatableReadIsARetryableSerializationFailure()
        throws SQLException {
      try (Connection rr = ds.getConnection()) {
        rr.setAutoCommit(false);
        rr.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        Rows.query(rr, schema, "SELECT count(*) FROM {schema}.work"); // takes the snapshot

        enqueue(Work.of("dup", "k", "{}")); // committed by another transaction

        assertThatThrownBy(() -> outbox.enqueue(rr, Work.of("dup", "k", "{}")))
            .isInstanceOfSatisfying(
                RetryableException.class,
                e -> {
                  assertThat(e.sqlState()).isEqualTo("40001");
                  assertThat(e.isRetryable()).isTrue();
                });
        rr.rollback();
        rr.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
      }
    }

    @Test
    void workIdKindAndPayloadCannotBeChangedAfterInsert() throws SQLException {
      enqueue(Work.of("w1", "k", "{\"total\":29.00}"));

      assertThatThrownBy(
              () ->
                  Rows.update(ds, schema, "UPDATE {schema}.outbox SET payload = '{\"total\":31}'"))
          .hasMessageContaining("immutable");
      assertThatThrownBy(() -> Rows.update(ds, schema, "UPDATE {schema}.outbox SET kind = 'x'"))
          .hasMessageContaining("immutable");
      // State columns stay writable, and naming an identity column without changing it is fine.
      assertThat(Rows.update(ds, schema, "UPDATE {schema}.outbox SET priority = 5, kind = kind"))
          .isEqualTo(1);
    }
  }

  @Nested
  class BadInput {
    private void assertRefused(Work w, String field) throws SQLException {
      // validate, with no connection, refuses what enqueue refuses, naming the same field.
      assertThatThrownBy(() -> outbox.validate(w))
          .isInstanceOfSatisfying(
              InvalidWorkException.class, e -> assertThat(e.field()).isEqualTo(field));
      assertThatThrownBy(() -> outbox.validateAll(List.of(w)))
          .isInstanceOfSatisfying(
              InvalidWorkException.class, e -> assertThat(e.field()).isEqualTo(field));
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        assertThatThrownBy(() -> outbox.enqueue(c, w))
            .isInstanceOfSatisfying(
                InvalidWorkException.class, e -> assertThat(e.field()).isEqualTo(field))
            .hasMessageContaining(field);
        // Refused before anything was sent: the transaction is still healthy.
        outbox.enqueue(c, Work.of("healthy", "k", "{}"));
        c.rollback();
      }
      assertThat(outboxRows()).isZero();
    }

    @Test
    void emptyId() throws SQLException {
      assertRefused(Work.of("", "k", "{}"), "workId");
      assertRefused(Work.of(null, "k", "{}"), "workId");
    }

    @Test
    void oversizedId() throws SQLException {
      assertRefused(Work.of("x".repeat(201), "k", "{}"), "workId");
    }

    @Test
    void idWithCharactersOutsideTheDocumentedSet() throws SQLException {
      assertRefused(Work.of("order 103", "k", "{}"), "workId");
      assertRefused(Work.of("order-103-ack\n", "k", "{}"), "workId");
      // the message shows control characters and a lone surrogate escaped: one log line, no NUL
      assertThatThrownBy(() -> outbox.validate(Work.of("a\u0000b\nc\ud800", "k", "{}")))
          .hasMessage(
              "invalid work: workId 'a\\u0000b\\u000ac\\ud800' may only contain"
                  + " A-Z a-z 0-9 . _ - : / @ + = #");
      // a pair is one character, kept as it is
      assertThatThrownBy(() -> outbox.validate(Work.of("w", "k\ud83d\ude00", "{}")))
          .hasMessageContaining("'k\ud83d\ude00' must be 1-100 characters");
    }

    @Test
    void emptyKindOrQueue() throws SQLException {
      assertRefused(Work.of("w", "", "{}"), "kind");
      assertRefused(Work.of("w", "k", "{}").queue(""), "queue");
    }

    @Test
    void invalidJson() throws SQLException {
      assertRefused(Work.of("w", "k", "{\"total\": 29.00"), "payload");
      assertRefused(Work.of("w", "k", "{'single': 1}"), "payload");
      assertRefused(Work.of("w", "k", "{\"a\":1} trailing"), "payload");
      assertRefused(Work.of("w", "k", "{\"nul\":\"\\u0000\"}"), "payload");
      assertRefused(Work.of("w", "k", null), "payload");
    }

    @Test
    void payloadOverTheConfiguredLimit() throws SQLException {
      outbox = Outbox.builder().schema(schema).maxPayloadBytes(64).build();
      assertRefused(Work.of("w", "k", "{\"text\":\"" + "é".repeat(40) + "\"}"), "payload");
    }

    @Test
    void deadlineBeforeAvailability() throws SQLException {
      Instant t = Instant.parse("2026-10-20T10:16:00Z");
      assertRefused(Work.of("w", "k", "{}").availableAt(t).deadline(t.minusSeconds(1)), "deadline");
      assertRefused(Work.of("w", "k", "{}").delay(Duration.ofSeconds(-1)), "delay");
    }

    @Test
    void delayPastTheBound() throws SQLException {
      assertRefused(Work.of("w", "k", "{}").delay(Outbox.MAX_DELAY.plusSeconds(1)), "delay");
      outbox.validate(Work.of("w", "k", "{}").delay(Outbox.MAX_DELAY));
    }

    @Test
    void attemptCapOutOfRange() throws SQLException {
      assertRefused(Work.of("w", "k", "{}").maxAttempts(0), "maxAttempts");
    }

    @Test
    void validateNeedsNoConnectionAndPassesWhatEnqueueTakes() throws SQLException {
      Work w =
          Work.of("v-1", "k", "{\"total\": 29.00}")
              .queue("mail")
              .maxAttempts(3)
              .orderingKey("order-103")
              .group("customer-7")
              .dependsOn("v-0")
              .deadline(Instant.parse("2026-10-20T10:16:00Z"));
      outbox.validate(w);
      outbox.validateAll(List.of(Work.of("v-0", "k", "{}"), w));
      outbox.validateAll(List.of());
      assertThat(outboxRows()).isZero();
      inTransaction(c -> outbox.enqueueAll(c, List.of(Work.of("v-0", "k", "{}"), w)));
      assertThat(outboxRows()).isEqualTo(2);
    }

    @Test
    void validateAllRefusesWhatOnlyABulkCallCanGetWrong() {
      Work a = Work.of("a", "k", "{}");
      assertThatThrownBy(() -> outbox.validateAll(List.of(a, Work.of("b", "k", "{}"), a)))
          .isInstanceOfSatisfying(
              InvalidWorkException.class,
              e -> {
                assertThat(e.field()).isEqualTo("workId");
                assertThat(e.workId()).isEqualTo("a");
              })
          .hasMessageContaining("appears more than once in one bulk call");
      assertThatThrownBy(
              () ->
                  outbox.validateAll(
                      List.of(a.dependsOn("b"), Work.of("b", "k", "{}").dependsOn("a"))))
          .isInstanceOfSatisfying(
              InvalidWorkException.class, e -> assertThat(e.field()).isEqualTo("dependsOn"))
          .hasMessageContaining("dependency cycle");
      List<Work> tooMany = new ArrayList<>();
      for (int i = 0; i <= Outbox.MAX_BATCH_SIZE; i++) {
        tooMany.add(Work.of("w-" + i, "k", "{}"));
      }
      assertThatThrownBy(() -> outbox.validateAll(tooMany))
          .isInstanceOfSatisfying(
              InvalidWorkException.class, e -> assertThat(e.field()).isEqualTo("works"))
          .hasMessageContaining("the limit is " + Outbox.MAX_BATCH_SIZE);
      assertThatThrownBy(() -> outbox.validate(null))
          .isInstanceOf(InvalidWorkException.class)
          .hasMessageContaining("is null");
      assertThatThrownBy(() -> outbox.validateAll(null))
          .isInstanceOfSatisfying(
              InvalidWorkException.class, e -> assertThat(e.field()).isEqualTo("works"));
    }

    @Test
    void autoCommitConnectionIsRefused() throws SQLException {
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(true);
        assertThatThrownBy(() -> outbox.enqueue(c, Work.of("w", "k", "{}")))
            .isInstanceOf(TransactionRequiredException.class)
            .hasMessageContaining("auto-commit");
      }
      assertThat(outboxRows()).isZero();
    }

    @Test
    void closedConnectionIsRefused() throws SQLException {
      Connection c = ds.getConnection();
      c.close();
      assertThatThrownBy(() -> outbox.enqueue(c, Work.of("w", "k", "{}")))
          .isInstanceOf(TransactionRequiredException.class)
          .hasMessageContaining("closed");
    }

    @Test
    void invalidSchemaName() {
      assertThatThrownBy(() -> Outbox.builder().schema("Relay; DROP TABLE x").build())
          .isInstanceOfSatisfying(
              InvalidConfigurationException.class,
              e -> assertThat(e.setting()).isEqualTo("schema"));
      assertThatThrownBy(() -> Outbox.builder().schema("pg_relay").build())
          .isInstanceOf(InvalidConfigurationException.class);
    }
  }
}
