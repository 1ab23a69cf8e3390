package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.CancelResult;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** One live replacement: work already superseded is not superseded again. */
@RelayDatabaseTest
class SupersedeOnceTest {

  /** The supersede cancels the old work: a replacement waiting for it would never run. */
  @Test
  void aReplacementThatDependsOnTheWorkItSupersedesIsRefusedAndChangesNothing(TestDatabase db) {
    AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
    f.enqueue(Work.of("order-1", "mail", "{}"));
    assertThatThrownBy(
            () ->
                f.admin.supersede(
                    "order-1",
                    Work.of("order-1b", "mail", "{}").dependsOn("order-1"),
                    "mina",
                    "fix"))
        .isInstanceOfSatisfying(
            InvalidAdminRequestException.class, e -> assertThat(e.field()).isEqualTo("replacement"))
        .hasMessageContaining("depends on the work it supersedes");
    assertThat(f.row("order-1b")).isNull();
    assertThat(f.row("order-1")).containsEntry("state", "ready");
    assertThat(f.count("SELECT count(*) FROM {schema}.supersedes")).isZero();
    assertThat(f.count("SELECT count(*) FROM {schema}.cancel_audit")).isZero();
  }

  @Test
  void aSecondSupersedeOfSupersededWorkIsRefusedNamingTheReplacementAndChangesNothing(
      TestDatabase db) {
    AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
    f.enqueue(Work.of("order-1", "mail", "{\"total\":\"29.00\"}"));
    f.admin.supersede(
        "order-1", Work.of("order-1b", "mail", "{\"total\":\"27.00\"}"), "mina", "wrong total");

    assertThatThrownBy(
            () ->
                f.admin.supersede(
                    "order-1",
                    Work.of("order-1c", "mail", "{\"total\":\"26.00\"}"),
                    "mina",
                    "still wrong"))
        .isInstanceOfSatisfying(
            SupersedeRefusedException.class,
            e -> {
              assertThat(e.oldWorkId()).isEqualTo("order-1");
              assertThat(e.replacementWorkId()).isEqualTo("order-1b");
            })
        .hasMessage(
            "cannot supersede 'order-1': it is already superseded by 'order-1b'; to correct it"
                + " again, supersede 'order-1b'");

    assertThat(f.row("order-1c")).isNull();
    assertThat(f.count("SELECT count(*) FROM {schema}.supersedes")).isEqualTo(1);
    assertThat(f.row("order-1b")).containsEntry("state", "ready");
    assertThat(f.count("SELECT count(*) FROM {schema}.cancel_audit WHERE work_id = 'order-1'"))
        .isEqualTo(1);
  }

  @Test
  void theReplacementCanBeSupersededAndTheSameSupersedeRepeatedIsStillRecognised(TestDatabase db) {
    AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
    f.enqueue(Work.of("order-1", "mail", "{\"total\":\"29.00\"}"));
    Work b = Work.of("order-1b", "mail", "{\"total\":\"27.00\"}");
    f.admin.supersede("order-1", b, "mina", "wrong total");

    assertThat(f.admin.supersede("order-1", b, "mina", "wrong total").repeated()).isTrue();
    SupersedeResult again =
        f.admin.supersede(
            "order-1b", Work.of("order-1c", "mail", "{\"total\":\"26.00\"}"), "mina", "again");

    assertThat(again.repeated()).isFalse();
    assertThat(again.oldWork()).isEqualTo(CancelResult.Status.CANCELLED);
    assertThat(f.row("order-1b")).containsEntry("state", "cancelled");
    assertThat(f.row("order-1c")).containsEntry("state", "ready");
    assertThat(f.admin.show("order-1b").orElseThrow().supersededBy())
        .extracting(WorkDetail.SupersedeLink::workId)
        .containsExactly("order-1c");
  }

  @Test
  void twoConcurrentSupersedesOfReadyWorkLeaveExactlyOneReplacement(TestDatabase db)
      throws Exception {
    AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
    f.enqueue(Work.of("order-1", "mail", "{}"));
    raceTwoSupersedes(db, f, f.admin);
  }

  /**
   * Under REPEATABLE READ a transaction reads one snapshot taken before it waited for the row lock,
   * and superseding cancelled work leaves its row unchanged (no serialization failure): the check
   * must still see the other supersede's link.
   */
  @Test
  void twoConcurrentSupersedesOfCancelledWorkLeaveExactlyOneReplacementUnderRepeatableRead(
      TestDatabase db) throws Exception {
    AdminFixture f = new AdminFixture(db.dataSource(), db.schema());
    f.enqueue(Work.of("order-1", "mail", "{}"));
    f.admin.cancel("order-1", "mina", "paused");
    PGSimpleDataSource repeatableRead = new PGSimpleDataSource();
    repeatableRead.setUrl(db.jdbcUrl());
    repeatableRead.setOptions("-c default_transaction_isolation=repeatable\\ read");
    // Otherwise this case proves nothing.
    assertThat(isolationOf(repeatableRead)).isEqualTo("repeatable read");
    raceTwoSupersedes(db, f, Admin.create(repeatableRead, db.schema()));
  }

  /**
   * Holds the old row locked, lets two supersedes of it (to different replacements) start and wait
   * on that lock, then lets them go: exactly one wins, the other is refused naming the winner.
   */
  private static void raceTwoSupersedes(TestDatabase db, AdminFixture f, Admin admin)
      throws Exception {
    List<CompletableFuture<Object>> racers = new ArrayList<>();
    CountDownLatch go = new CountDownLatch(1);
    try (Connection holder = db.dataSource().getConnection()) {
      holder.setAutoCommit(false);
      try (PreparedStatement ps =
          holder.prepareStatement(
              "SELECT 1 FROM " + db.schema() + ".outbox WHERE work_id = 'order-1' FOR UPDATE")) {
        ps.executeQuery().close();
      }
      for (String id : List.of("order-1b", "order-1c")) {
        racers.add(
            CompletableFuture.supplyAsync(
                () -> {
                  try {
                    go.await(60, TimeUnit.SECONDS);
                    return admin.supersede("order-1", Work.of(id, "mail", "{}"), "mina", "fix");
                  } catch (RuntimeException e) {
                    return e;
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return e;
                  }
                }));
      }
      go.countDown();
      // Both wait on the old row's lock (one behind the holder, one behind it or the other).
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () ->
                  f.count(
                          "SELECT count(*) FROM pg_stat_activity"
                              + " WHERE cardinality(pg_blocking_pids(pid)) > 0"
                              + " AND query LIKE ?",
                          "%" + db.schema() + ".outbox%FOR UPDATE%")
                      == 2);
      holder.commit();
    }
    List<Object> results = new ArrayList<>();
    for (CompletableFuture<Object> r : racers) {
      results.add(r.get(60, TimeUnit.SECONDS));
    }
    List<SupersedeResult> won =
        results.stream()
            .filter(SupersedeResult.class::isInstance)
            .map(SupersedeResult.class::cast)
            .toList();
    List<SupersedeRefusedException> refused =
        results.stream()
            .filter(SupersedeRefusedException.class::isInstance)
            .map(SupersedeRefusedException.class::cast)
            .toList();
    assertThat(won).as("results %s", results).hasSize(1);
    assertThat(refused).as("results %s", results).hasSize(1);
    String winner = won.get(0).newWorkId();
    String loser = winner.equals("order-1b") ? "order-1c" : "order-1b";
    assertThat(refused.get(0).replacementWorkId()).isEqualTo(winner);
    assertThat(refused.get(0)).hasMessageContaining("supersede '" + winner + "'");
    assertThat(f.row(winner)).isNotNull();
    assertThat(f.row(loser)).isNull();
    assertThat(
            f.count(
                "SELECT count(*) FROM {schema}.supersedes WHERE supersedes_work_id = ?", "order-1"))
        .isEqualTo(1);
  }

  private static String isolationOf(DataSource ds) throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement("SHOW transaction_isolation");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getString(1);
    }
  }
}
