package dev.relay.receiver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.TransactionRequiredException;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class FenceTest {
  private TestDatabase db;
  private Fence fence;

  @BeforeEach
  void setUp(TestDatabase db) throws SQLException {
    this.db = db;
    this.fence = Fence.forSchema(db.schema());
    db.execute(
        "CREATE TABLE {schema}.mailbox (name text PRIMARY KEY, applied_token bigint NOT NULL,"
            + " writes integer NOT NULL DEFAULT 1)");
  }

  /**
   * The protected write: applies a token's settings if the fence accepts it, in one transaction.
   */
  private FenceResult write(String resource, long token) throws SQLException {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      FenceResult f = fence.advance(c, resource, token);
      if (f.accepted()) {
        try (PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO "
                    + db.schema()
                    + ".mailbox AS m VALUES (?, ?) ON CONFLICT (name) DO UPDATE"
                    + " SET applied_token = EXCLUDED.applied_token, writes = m.writes + 1")) {
          ps.setString(1, resource);
          ps.setLong(2, token);
          ps.executeUpdate();
        }
        c.commit();
      } else {
        c.rollback();
      }
      c.setAutoCommit(true);
      return f;
    }
  }

  @Test
  void aLowerTokenIsRefusedAndAnEqualOneAccepted() throws SQLException {
    assertThat(write("mailbox-1", 8).accepted()).isTrue();

    FenceResult stale = write("mailbox-1", 7);
    assertThat(stale.refused()).isTrue();
    assertThat(stale.highestToken()).isEqualTo(8);

    FenceResult again = write("mailbox-1", 8);
    assertThat(again.accepted()).isTrue();
    assertThat(db.queryLong("SELECT applied_token FROM {schema}.mailbox")).isEqualTo(8);
  }

  @Test
  void aFenceDoesNotDeduplicateTheInboxDoes() throws SQLException {
    write("mailbox-1", 8);
    write("mailbox-1", 8);
    assertThat(db.queryLong("SELECT writes FROM {schema}.mailbox"))
        .as("the fence let the repeat of token 8 write twice")
        .isEqualTo(2);

    Inbox inbox = Inbox.builder().schema(db.schema()).build();
    for (int i = 0; i < 2; i++) {
      try (Connection c = db.connection()) {
        c.setAutoCommit(false);
        inbox.process(
            c,
            "mailbox-writer",
            "settings-42",
            "{\"token\":8}",
            tx -> {
              assertThat(fence.advance(tx, "mailbox-2", 8).accepted()).isTrue();
              try (PreparedStatement ps =
                  tx.prepareStatement(
                      "INSERT INTO "
                          + db.schema()
                          + ".mailbox AS m VALUES ('mailbox-2', 8) ON CONFLICT (name)"
                          + " DO UPDATE SET writes = m.writes + 1")) {
                ps.executeUpdate();
              }
              return "{}";
            });
        c.commit();
        c.setAutoCommit(true);
      }
    }
    assertThat(db.queryLong("SELECT writes FROM {schema}.mailbox WHERE name = 'mailbox-2'"))
        .as("with the inbox keyed by the message ID, the repeat did not write")
        .isEqualTo(1);
  }

  @Test
  void racingTokensNeverLeaveTheLowerAppliedAfterTheHigher() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      for (int round = 0; round < 20; round++) {
        String resource = "mailbox-race-" + round;
        CountDownLatch start = new CountDownLatch(1);
        Future<FenceResult> seven =
            pool.submit(
                () -> {
                  start.await();
                  return write(resource, 7);
                });
        Future<FenceResult> eight =
            pool.submit(
                () -> {
                  start.await();
                  return write(resource, 8);
                });
        start.countDown();
        assertThat(eight.get(1, TimeUnit.MINUTES).accepted()).isTrue();
        seven.get(1, TimeUnit.MINUTES);
        assertThat(
                db.queryLong(
                    "SELECT applied_token FROM {schema}.mailbox WHERE name = '" + resource + "'"))
            .isEqualTo(8);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void tokensComeFromTheResourcesOwnCounter() throws SQLException {
    FenceTokens tokens = FenceTokens.forSchema(db.schema());
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      assertThat(tokens.next(c, "mailbox-1")).isEqualTo(1);
      assertThat(tokens.next(c, "mailbox-1")).isEqualTo(2);
      assertThat(tokens.next(c, "mailbox-2")).isEqualTo(1);
      c.commit();
      c.rollback();
      assertThat(tokens.next(c, "mailbox-1")).isEqualTo(3);
      c.rollback();
      assertThat(tokens.next(c, "mailbox-1")).as("a rolled-back allocation is undone").isEqualTo(3);
      c.rollback();
      c.setAutoCommit(true);
      assertThatThrownBy(() -> tokens.next(c, "mailbox-1"))
          .isInstanceOf(TransactionRequiredException.class);
      assertThatThrownBy(() -> fence.advance(c, "mailbox-1", 1))
          .isInstanceOf(TransactionRequiredException.class);
      c.setAutoCommit(false);
      assertThatThrownBy(() -> fence.advance(c, "mailbox-1", -1))
          .isInstanceOf(InvalidReceiverInputException.class)
          .hasMessageContaining("token");
      assertThatThrownBy(() -> fence.advance(c, "", 1))
          .isInstanceOf(InvalidReceiverInputException.class)
          .hasMessageContaining("resource");
      c.rollback();
      c.setAutoCommit(true);
    }
  }
}
