package dev.relay.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.relay.CancelResult;
import dev.relay.EnqueueResult;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.internal.store.ClaimedWork;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

@RelayDatabaseTest
class AdminTest {
  private AdminFixture f;
  private Admin admin;

  @BeforeEach
  void setUp(TestDatabase db) {
    f = new AdminFixture(db.dataSource(), db.schema());
    admin = f.admin;
  }

  @Nested
  class Redrive {
    @Test
    void redriveWritesItsAuditRowAndTheGenerationKeepsRising() {
      f.registerKind("k", Duration.ofHours(24));
      f.failed("w-1", "k");
      assertThat(f.row("w-1")).containsEntry("claim_generation", 1L);

      RedriveResult r = admin.redrive("w-1", RedriveRequest.of("mina", "provider fixed"));

      assertThat(r.redriven()).isTrue();
      assertThat(r.fromState()).isEqualTo("failed");
      assertThat(r.fromGeneration()).isEqualTo(1);
      assertThat(r.forced()).isFalse();
      Map<String, Object> row = f.row("w-1");
      assertThat(row)
          .containsEntry("state", "ready")
          .containsEntry("attempts", 0)
          .containsEntry("claim_generation", 1L)
          .containsEntry("claimed_by", null)
          .containsEntry("lease_until", null)
          .containsEntry("completed_at", null)
          .containsEntry("payload", row.get("payload"));
      List<Map<String, Object>> audit =
          f.query("SELECT * FROM {schema}.redrive_audit WHERE work_id = 'w-1'");
      assertThat(audit).hasSize(1);
      assertThat(audit.get(0))
          .containsEntry("actor", "mina")
          .containsEntry("reason", "provider fixed")
          .containsEntry("from_state", "failed")
          .containsEntry("from_generation", 1L)
          .containsEntry("forced", false);

      // The next claim takes a higher generation, never a reset one.
      ClaimedWork again = f.claimOne("k");
      assertThat(again.generation()).isEqualTo(2);
      assertThat(again.attempt()).isEqualTo(1);
      f.fail(again, "http_500");
      admin.redrive("w-1", RedriveRequest.of("mina", "second try"));
      assertThat(f.claimOne("k").generation()).isEqualTo(3);
      assertThat(admin.show("w-1").orElseThrow().redrives())
          .extracting(WorkDetail.Redrive::fromGeneration)
          .containsExactly(1L, 2L);
    }

    @Test
    void previewShowsTheHorizonAndWhatAPlainRedriveWouldMeetWithoutChangingAnything() {
      f.registerKind("k", Duration.ofHours(1));
      f.failed("w-fresh", "k");
      f.failed("w-old", "k");
      f.update(
          "UPDATE {schema}.outbox SET first_attempt_at = clock_timestamp() - interval '2 hours'"
              + " WHERE work_id = 'w-old'");
      f.enqueue(Work.of("w-new", "unregistered", "{}"));
      Map<String, Object> before = f.row("w-old");

      RedrivePreview fresh = admin.redrivePreview("w-fresh");
      assertThat(fresh.state()).isEqualTo("failed");
      assertThat(fresh.kindRegistered()).isTrue();
      assertThat(Duration.between(fresh.firstAttemptAt(), fresh.horizonEnd()))
          .isEqualTo(Duration.ofHours(1));
      assertThat(fresh.pastHorizon()).isFalse();
      assertThat(fresh.wouldRedrive()).isTrue();

      RedrivePreview old = admin.redrivePreview("w-old");
      assertThat(old.pastHorizon()).isTrue();
      assertThat(old.refusal()).isEqualTo(RedriveRefusedException.Reason.PAST_DEDUP_HORIZON);
      assertThat(old.horizonEnd()).isBefore(old.now());
      // The preview agrees with the redrive itself.
      assertThatThrownBy(() -> admin.redrive("w-old", RedriveRequest.of("mina", "x")))
          .isInstanceOfSatisfying(
              RedriveRefusedException.class,
              e -> assertThat(e.horizonEnd()).isEqualTo(old.horizonEnd()));
      assertThat(f.row("w-old")).isEqualTo(before);

      RedrivePreview never = admin.redrivePreview("w-new");
      assertThat(never.firstAttemptAt()).isNull();
      assertThat(never.horizonEnd()).isNull();
      assertThat(never.kindRegistered()).isFalse();
      assertThat(never.refusal()).isEqualTo(RedriveRefusedException.Reason.NOT_FAILED);

      f.claimOne("unregistered");
      assertThat(admin.redrivePreview("w-new").refusal())
          .isEqualTo(RedriveRefusedException.Reason.RUNNING);
      assertThatThrownBy(() -> admin.redrivePreview("nope"))
          .isInstanceOf(WorkNotFoundException.class);
      assertThatThrownBy(() -> admin.redrivePreview(""))
          .isInstanceOf(InvalidAdminRequestException.class);
    }

    @Test
    void refusesRunningWorkEvenWhenForced() {
      f.enqueue(Work.of("w-run", "k", "{}"));
      f.claimOne("k");
      assertThatThrownBy(
              () ->
                  admin.redrive(
                      "w-run", RedriveRequest.of("mina", "x").forced().overridingHorizon()))
          .isInstanceOfSatisfying(
              RedriveRefusedException.class,
              e -> {
                assertThat(e.reason()).isEqualTo(RedriveRefusedException.Reason.RUNNING);
                assertThat(e.workId()).isEqualTo("w-run");
              });
      assertThat(f.row("w-run")).containsEntry("state", "running");
      assertThat(f.count("SELECT count(*) FROM {schema}.redrive_audit")).isZero();
    }

    @Test
    void refusesWorkThatIsNotFailedUnlessForced() {
      f.done("w-done", "k");
      assertThatThrownBy(() -> admin.redrive("w-done", RedriveRequest.of("mina", "again")))
          .isInstanceOfSatisfying(
              RedriveRefusedException.class,
              e -> assertThat(e.reason()).isEqualTo(RedriveRefusedException.Reason.NOT_FAILED));
      assertThat(f.row("w-done")).containsEntry("state", "done");

      RedriveResult r = admin.redrive("w-done", RedriveRequest.of("mina", "again").forced());
      assertThat(r.forced()).isTrue();
      assertThat(f.row("w-done")).containsEntry("state", "ready");
      assertThat(f.query("SELECT forced, from_state FROM {schema}.redrive_audit").get(0))
          .containsEntry("forced", true)
          .containsEntry("from_state", "done");
    }

    @Test
    void refusesPastTheKindsDedupHorizonAndSaysWhyUnlessOverridden() {
      f.registerKind("k", Duration.ofHours(1));
      f.failed("w-old", "k");
      f.update(
          "UPDATE {schema}.outbox SET first_attempt_at = clock_timestamp() - interval '2 hours'"
              + " WHERE work_id = 'w-old'");

      assertThatThrownBy(() -> admin.redrive("w-old", RedriveRequest.of("mina", "retry")))
          .isInstanceOfSatisfying(
              RedriveRefusedException.class,
              e -> {
                assertThat(e.reason()).isEqualTo(RedriveRefusedException.Reason.PAST_DEDUP_HORIZON);
                assertThat(e.firstAttemptAt()).isNotNull();
                assertThat(Duration.between(e.firstAttemptAt(), e.horizonEnd()))
                    .isEqualTo(Duration.ofHours(1));
                assertThat(e.getMessage())
                    .contains("first attempted at " + e.firstAttemptAt())
                    .contains("ended at " + e.horizonEnd());
              });
      assertThat(f.row("w-old")).containsEntry("state", "failed");
      assertThat(f.count("SELECT count(*) FROM {schema}.redrive_audit")).isZero();

      RedriveResult r =
          admin.redrive(
              "w-old", RedriveRequest.of("mina", "accept duplicates").overridingHorizon());
      assertThat(r.redriven()).isTrue();
      assertThat(r.forced()).isTrue();
      assertThat(f.row("w-old")).containsEntry("state", "ready");
      assertThat(f.query("SELECT forced FROM {schema}.redrive_audit").get(0))
          .containsEntry("forced", true);
    }

    @Test
    void aKindWithoutRegisteredPolicyIsJudgedByTheDefaultHorizon() {
      f.failed("w-u", "unregistered");
      f.update(
          "UPDATE {schema}.outbox SET first_attempt_at = clock_timestamp() - interval '25 hours'");
      assertThatThrownBy(() -> admin.redrive("w-u", RedriveRequest.of("mina", "x")))
          .hasMessageContaining("no registered policy");
    }

    @Test
    void batchRedriveReportsEachItem() {
      f.registerKind("k", Duration.ofHours(1));
      f.failed("a-1", "k");
      f.failed("a-2", "k");
      f.failed("a-3", "k");
      f.update(
          "UPDATE {schema}.outbox SET first_attempt_at = clock_timestamp() - interval '2 hours'"
              + " WHERE work_id = 'a-2'");
      f.done("a-4", "k");

      List<RedriveResult> results =
          admin.redrive(WorkFilter.all().kind("k"), RedriveRequest.of("mina", "bulk"), 100);

      assertThat(results)
          .extracting(RedriveResult::workId, RedriveResult::status)
          .containsExactlyInAnyOrder(
              org.assertj.core.groups.Tuple.tuple("a-1", RedriveResult.Status.REDRIVEN),
              org.assertj.core.groups.Tuple.tuple("a-2", RedriveResult.Status.REFUSED),
              org.assertj.core.groups.Tuple.tuple("a-3", RedriveResult.Status.REDRIVEN));
      assertThat(f.count("SELECT count(*) FROM {schema}.redrive_audit")).isEqualTo(2);
    }

    @Test
    void unknownIdAndBadInputAreTypedErrors() {
      assertThatThrownBy(() -> admin.redrive("nope", RedriveRequest.of("mina", "x")))
          .isInstanceOf(WorkNotFoundException.class);
      assertThatThrownBy(() -> admin.redrive("w", RedriveRequest.of(" ", "x")))
          .isInstanceOfSatisfying(
              InvalidAdminRequestException.class, e -> assertThat(e.field()).isEqualTo("actor"));
      assertThatThrownBy(() -> admin.redrive("w", RedriveRequest.of("mina", "")))
          .isInstanceOf(InvalidAdminRequestException.class);
      assertThatThrownBy(() -> admin.redrive(WorkFilter.all(), RedriveRequest.of("a", "b"), 0))
          .isInstanceOf(InvalidAdminRequestException.class);
      // The states in their life-cycle order, the same in every JVM (not a set's order).
      assertThatThrownBy(() -> admin.list(WorkFilter.all().state("stuck"), null, 10))
          .isInstanceOf(InvalidAdminRequestException.class)
          .hasMessageEndingWith("'stuck' is not one of [ready, running, done, failed, cancelled]");
      assertThatThrownBy(() -> admin.list(WorkFilter.all().outcome("maybe"), null, 10))
          .isInstanceOf(InvalidAdminRequestException.class)
          .hasMessageEndingWith("'maybe' is not one of [delivered, not_delivered, unknown]");
      assertThatThrownBy(() -> admin.list(WorkFilter.all(), "garbage!", 10))
          .isInstanceOf(InvalidAdminRequestException.class);
    }
  }

  @Nested
  class Supersede {
    @Test
    void supersedeLinksBothItemsAndCancelsTheOldOneInOneTransaction() {
      f.enqueue(Work.of("order-103-ack", "mail", "{\"total\":\"29.00\"}"));

      SupersedeResult r =
          admin.supersede(
              "order-103-ack",
              Work.of("order-103-ack-v2", "mail", "{\"total\":\"27.00\"}"),
              "mina",
              "wrong total");

      assertThat(r.oldWork()).isEqualTo(CancelResult.Status.CANCELLED);
      assertThat(r.repeated()).isFalse();
      assertThat(f.row("order-103-ack")).containsEntry("state", "cancelled");
      assertThat(f.row("order-103-ack-v2")).containsEntry("state", "ready");
      WorkDetail oldDetail = admin.show("order-103-ack").orElseThrow();
      WorkDetail newDetail = admin.show("order-103-ack-v2").orElseThrow();
      assertThat(oldDetail.supersededBy())
          .extracting(WorkDetail.SupersedeLink::workId)
          .containsExactly("order-103-ack-v2");
      assertThat(newDetail.supersedes())
          .extracting(WorkDetail.SupersedeLink::supersedesWorkId)
          .containsExactly("order-103-ack");
      assertThat(oldDetail.cancels()).hasSize(1);
      assertThat(oldDetail.cancels().get(0).result()).isEqualTo("cancelled");

      SupersedeResult again =
          admin.supersede(
              "order-103-ack",
              Work.of("order-103-ack-v2", "mail", "{\"total\":\"27.00\"}"),
              "mina",
              "wrong total");
      assertThat(again.repeated()).isTrue();
    }

    @Test
    void runningOldWorkGetsACancelRequest() {
      f.enqueue(Work.of("old", "mail", "{}"));
      f.claimOne("mail");
      SupersedeResult r = admin.supersede("old", Work.of("new", "mail", "{}"), "mina", "fix");
      assertThat(r.oldWork()).isEqualTo(CancelResult.Status.CANCEL_REQUESTED);
      assertThat(f.row("old").get("cancel_requested_at")).isNotNull();
    }

    @Test
    void refusesDoneWorkAndChangesNothing() {
      f.done("old", "mail");
      assertThatThrownBy(() -> admin.supersede("old", Work.of("new", "mail", "{}"), "mina", "fix"))
          .isInstanceOf(SupersedeRefusedException.class)
          .hasMessageContaining("compensation");
      assertThat(f.row("new")).isNull();
      assertThat(f.count("SELECT count(*) FROM {schema}.supersedes")).isZero();
      assertThatThrownBy(
              () -> admin.supersede("missing", Work.of("new", "mail", "{}"), "mina", "fix"))
          .isInstanceOf(WorkNotFoundException.class);
      assertThatThrownBy(() -> admin.supersede("old", null, "mina", "fix"))
          .isInstanceOf(InvalidAdminRequestException.class)
          .hasMessageContaining("replacement is null");
    }
  }

  @Nested
  class Cancel {
    @Test
    void cancelByFilterTouchesOnlyUnfinishedMatchingWorkAndAuditsEach() {
      f.done("a-0", "a");
      f.enqueue(Work.of("a-1", "a", "{}"), Work.of("a-2", "a", "{}"), Work.of("b-1", "b", "{}"));
      List<CancelResult> r = admin.cancel(WorkFilter.all().kind("a"), "mina", "campaign off", 10);
      assertThat(r)
          .extracting(CancelResult::workId, CancelResult::status)
          .containsExactly(
              org.assertj.core.groups.Tuple.tuple("a-1", CancelResult.Status.CANCELLED),
              org.assertj.core.groups.Tuple.tuple("a-2", CancelResult.Status.CANCELLED));
      assertThat(f.row("b-1")).containsEntry("state", "ready");
      assertThat(f.count("SELECT count(*) FROM {schema}.cancel_audit WHERE actor = 'mina'"))
          .isEqualTo(2);
      assertThat(admin.cancel("b-1", "mina", "x").status())
          .isEqualTo(CancelResult.Status.CANCELLED);
      assertThat(admin.cancel("zzz", "mina", "x").status())
          .isEqualTo(CancelResult.Status.NOT_FOUND);
    }
  }

  @Nested
  class ListAndShow {
    @Test
    void keysetPagesHaveNoGapsAndNoDuplicatesEvenWithEqualCreationTimes() {
      List<Work> works = new ArrayList<>();
      for (int i = 0; i < 23; i++) {
        works.add(Work.of(String.format("p-%02d", i), "k", "{}"));
      }
      f.enqueue(works.toArray(new Work[0]));
      // Ties on created_at are broken by work ID.
      f.update(
          "UPDATE {schema}.outbox SET created_at = '2026-01-01T00:00:00.123456Z'"
              + " WHERE work_id < 'p-10'");

      List<String> seen = new ArrayList<>();
      String cursor = null;
      int pages = 0;
      do {
        WorkPage page = admin.list(WorkFilter.all(), cursor, 5);
        page.items().forEach(i -> seen.add(i.workId()));
        cursor = page.nextCursor();
        pages++;
      } while (cursor != null);

      assertThat(pages).isEqualTo(5);
      assertThat(seen).hasSize(23).doesNotHaveDuplicates();
      assertThat(new HashSet<>(seen))
          .isEqualTo(works.stream().map(Work::workId).collect(java.util.stream.Collectors.toSet()));
      assertThat(seen.subList(0, 10)).isSorted();
    }

    @Test
    void filtersCombine() {
      f.failed("f-1", "k");
      f.done("d-1", "k");
      f.enqueue(Work.of("r-1", "k", "{}").queue("other"), Work.of("r-2", "j", "{}"));
      assertThat(ids(WorkFilter.all().state("failed"))).containsExactly("f-1");
      assertThat(ids(WorkFilter.all().errorKind("http_500"))).containsExactly("f-1");
      assertThat(ids(WorkFilter.all().queue("other"))).containsExactly("r-1");
      assertThat(ids(WorkFilter.all().kind("k").state("ready"))).containsExactly("r-1");
      assertThat(ids(WorkFilter.all().outcome("delivered"))).containsExactly("d-1");
      assertThat(ids(WorkFilter.all().olderThan(Duration.ofHours(1)))).isEmpty();
      assertThat(ids(WorkFilter.all().newerThan(Duration.ofHours(1)))).hasSize(4);
    }

    @Test
    void aCursorIsCheckedWithNoConnectionAsListChecksIt() {
      f.enqueue(Work.of("c-1", "k", "{}"), Work.of("c-2", "k", "{}"));
      WorkPage first = admin.list(WorkFilter.all(), null, 1);
      String next = first.nextCursor();
      Admin.validateCursor(null);
      Admin.validateCursor(next);
      // the page after the cursor holds the other item, whichever the list's order put first
      String other = first.items().get(0).workId().equals("c-1") ? "c-2" : "c-1";
      assertThat(admin.list(WorkFilter.all(), next, 1).items())
          .extracting(WorkItem::workId)
          .containsExactly(other);
      for (String bad : List.of("garbage!", "", next.substring(1))) {
        assertThatThrownBy(() -> Admin.validateCursor(bad))
            .as(bad)
            .isInstanceOfSatisfying(
                InvalidAdminRequestException.class, e -> assertThat(e.field()).isEqualTo("cursor"));
        assertThatThrownBy(() -> admin.list(WorkFilter.all(), bad, 1))
            .as(bad)
            .isInstanceOfSatisfying(
                InvalidAdminRequestException.class, e -> assertThat(e.field()).isEqualTo("cursor"));
      }
    }

    @Test
    void filterAgesRunFromZeroToMaxAgeIncluded() {
      f.enqueue(Work.of("a-1", "k", "{}"));
      assertThat(ids(WorkFilter.all().newerThan(WorkFilter.MAX_AGE))).containsExactly("a-1");
      assertThat(ids(WorkFilter.all().olderThan(Duration.ZERO))).containsExactly("a-1");
      Duration over = WorkFilter.MAX_AGE.plusSeconds(1);
      for (WorkFilter bad :
          List.of(WorkFilter.all().olderThan(over), WorkFilter.all().newerThan(over))) {
        assertThatThrownBy(() -> admin.list(bad, null, 10))
            .isInstanceOf(InvalidAdminRequestException.class)
            .hasMessageContaining("100 years");
      }
    }

    private List<String> ids(WorkFilter filter) {
      return admin.list(filter, null, 100).items().stream().map(WorkItem::workId).toList();
    }

    @Test
    void showReturnsTheRowWithItsAttemptHistory() {
      f.enqueue(Work.of("s-1", "k", "{\"a\":1}"));
      f.retry(f.claimOne("k"), "timeout");
      f.fail(f.claimOne("k"), "http_400");
      WorkDetail d = admin.show("s-1").orElseThrow();
      assertThat(d.payload()).isEqualTo("{\"a\": 1}");
      assertThat(d.item().state()).isEqualTo("failed");
      assertThat(d.item().generation()).isEqualTo(2);
      assertThat(d.attempts())
          .extracting(WorkDetail.Attempt::generation, WorkDetail.Attempt::ending)
          .containsExactly(
              org.assertj.core.groups.Tuple.tuple(1L, "retry"),
              org.assertj.core.groups.Tuple.tuple(2L, "failed"));
      assertThat(admin.show("nope")).isEmpty();
    }
  }

  @Nested
  class Health {
    /**
     * A dependent waits, not claimable, until its dependency is done: it is not eligible work. Its
     * age counted from its own available_at, so a dependency delayed an hour, or held for good
     * (cancelled or superseded), paged on-call through the oldest-eligible-age alert.
     */
    @Test
    void aDependentIsEligibleOnlyOnceItsDependencyIsDone() {
      f.enqueue(Work.of("parent", "k", "{}").delay(Duration.ofHours(1)));
      f.enqueue(Work.of("child", "k", "{}").dependsOn("parent"));
      f.enqueue(Work.of("dropped", "held", "{}"));
      f.enqueue(Work.of("orphan", "held", "{}").dependsOn("dropped"));
      admin.cancel("dropped", "mina", "not needed"); // holds the orphan for good
      f.update(
          "UPDATE {schema}.outbox SET available_at = clock_timestamp() - interval '10 minutes'"
              + " WHERE work_id IN ('child', 'orphan')");

      assertThat(admin.health(Duration.ofHours(1)))
          .extracting(QueueHealth::kind, QueueHealth::oldestEligibleAge)
          .containsExactly(
              org.assertj.core.groups.Tuple.tuple("held", Duration.ZERO),
              org.assertj.core.groups.Tuple.tuple("k", Duration.ZERO));

      // the dependency done: the child is claimable, and has been available for 10 minutes
      f.update(
          "UPDATE {schema}.outbox SET available_at = clock_timestamp() WHERE work_id = ?",
          "parent");
      f.complete(f.claimOne("k"));
      QueueHealth k = admin.health(Duration.ofHours(1)).get(1);
      assertThat(k.kind()).isEqualTo("k");
      assertThat(k.oldestEligibleAge()).isGreaterThanOrEqualTo(Duration.ofMinutes(9));
      assertThat(f.claimOne("k").workId()).isEqualTo("child");
    }

    @Test
    void healthNumbersEqualWhatTheTablesHoldAfterAScriptedRun() {
      for (int i = 0; i < 8; i++) {
        f.enqueue(Work.of("h-" + i, "k", "{}"));
      }
      f.enqueue(Work.of("m-1", "mail", "{}").queue("default"));
      List<ClaimedWork> claimed = f.claim("k", 6);
      f.complete(claimed.get(0));
      f.complete(claimed.get(1));
      f.fail(claimed.get(2), "http_500");
      f.fail(claimed.get(3), "deadline");
      f.retry(claimed.get(4), "timeout"); // ready again
      // claimed.get(5) stays running; make its lease expire on the database clock
      f.update(
          "UPDATE {schema}.outbox SET lease_until = clock_timestamp() - interval '90 seconds'"
              + " WHERE work_id = ?",
          claimed.get(5).workId());
      admin.cancel("h-7", "mina", "no longer needed");

      // Done and cancelled come from the summary: nothing before its first refresh.
      QueueHealth before = admin.health(Duration.ofHours(1)).get(0);
      assertThat(before.finishedCountsAsOf()).isNull();
      assertThat(before.done()).isZero();
      assertThat(before.cancelled()).isZero();
      assertThat(before.ready()).isEqualTo(2);
      java.time.Instant asOf = admin.refreshSummary();

      List<QueueHealth> health = admin.health(Duration.ofHours(1));

      assertThat(health).extracting(QueueHealth::kind).containsExactly("k", "mail");
      QueueHealth k = health.get(0);
      assertThat(k.queue()).isEqualTo("default");
      assertThat(k.ready()).isEqualTo(stateCount("ready")).isEqualTo(2); // h-6 and the retry
      assertThat(k.running()).isEqualTo(stateCount("running")).isEqualTo(1);
      assertThat(k.done()).isEqualTo(stateCount("done")).isEqualTo(2);
      assertThat(k.failed()).isEqualTo(stateCount("failed")).isEqualTo(2);
      assertThat(k.cancelled()).isEqualTo(stateCount("cancelled")).isEqualTo(1);
      assertThat(k.expiredLeases()).isEqualTo(1);
      assertThat(k.blockedKeys()).isZero();
      assertThat(k.failuresByReason()).isEqualTo(Map.of("http_500", 1L, "deadline", 1L));
      assertThat(k.completedInWindow()).isEqualTo(2);
      double oldest =
          f
              .query(
                  "SELECT extract(epoch FROM clock_timestamp() - min(CASE WHEN state = 'ready'"
                      + " THEN available_at ELSE lease_until END))::float8 AS s"
                      + " FROM {schema}.work WHERE kind = 'k' AND (state = 'ready'"
                      + " OR (state = 'running' AND lease_until <= clock_timestamp()))")
              .stream()
              .mapToDouble(r -> (Double) r.get("s"))
              .findFirst()
              .orElseThrow();
      // The expired lease (90 s ago) is the oldest eligible item.
      assertThat(k.oldestEligibleAge().toMillis() / 1000.0).isCloseTo(oldest, within(5.0));
      assertThat(k.oldestEligibleAge()).isGreaterThanOrEqualTo(Duration.ofSeconds(90));
      // Percentiles are the rollup's histogram's (nearest rank, reported as the bin's middle),
      // whether the window was folded or, as here, read from the table.
      List<Double> times =
          f
              .query(
                  "SELECT extract(epoch FROM completed_at - created_at)::float8 AS s"
                      + " FROM {schema}.work WHERE kind = 'k' AND state = 'done' ORDER BY 1")
              .stream()
              .map(r -> (Double) r.get("s"))
              .toList();
      assertWithinTheHistogramsError(k.completionP50(), times.get(nearestRank(0.5, times) - 1));
      assertWithinTheHistogramsError(k.completionP95(), times.get(nearestRank(0.95, times) - 1));

      assertThat(k.finishedCountsAsOf()).isEqualTo(asOf);

      QueueHealth mail = health.get(1);
      assertThat(mail.ready()).isEqualTo(1);
      assertThat(mail.completionP50()).isNull();
      assertThat(mail.failuresByReason()).isEmpty();
    }

    @Test
    void theWindowRunsFromItsShortestToItsLongestBothIncluded() {
      f.enqueue(Work.of("h-1", "k", "{}"));
      assertThat(admin.health(Admin.MIN_HEALTH_WINDOW)).hasSize(1);
      assertThat(admin.health(Admin.MAX_HEALTH_WINDOW)).hasSize(1);
      for (Duration bad :
          List.of(Admin.MIN_HEALTH_WINDOW.minusMillis(1), Admin.MAX_HEALTH_WINDOW.plusSeconds(1))) {
        assertThatThrownBy(() -> admin.health(bad))
            .as(bad.toString())
            .isInstanceOfSatisfying(
                InvalidAdminRequestException.class, e -> assertThat(e.field()).isEqualTo("window"));
      }
    }

    @Test
    void doneAndCancelledCountsStayAsOfTheLastRefreshWhileLiveCountsMove() {
      for (int i = 0; i < 3; i++) {
        f.enqueue(Work.of("r-" + i, "k", "{}"));
      }
      f.complete(f.claimOne("k"));
      java.time.Instant first = admin.refreshSummary();
      f.complete(f.claimOne("k"));

      QueueHealth k = admin.health(Duration.ofHours(1)).get(0);
      assertThat(k.done()).isEqualTo(1); // as of the refresh, not the second completion
      assertThat(k.ready()).isEqualTo(1); // live
      assertThat(k.completedInWindow()).isEqualTo(2); // live, from the window's index range
      assertThat(k.finishedCountsAsOf()).isEqualTo(first);

      java.time.Instant second = admin.refreshSummary();
      assertThat(second).isAfterOrEqualTo(first);
      k = admin.health(Duration.ofHours(1)).get(0);
      assertThat(k.done()).isEqualTo(2);
      assertThat(k.finishedCountsAsOf()).isEqualTo(second);

      // Purged work leaves the summary at the next refresh; a pair with only finished work stays
      // listed while the summary counts it.
      f.update("DELETE FROM {schema}.outbox WHERE state = 'ready'");
      admin.refreshSummary();
      assertThat(admin.health(Duration.ofHours(1)))
          .singleElement()
          .satisfies(
              h -> {
                assertThat(h.done()).isEqualTo(2);
                assertThat(h.ready()).isZero();
              });
    }

    private static int nearestRank(double q, List<Double> values) {
      return (int) Math.max(1, Math.ceil(q * values.size()));
    }

    /** Within the bin's relative error, or under a millisecond for the first bin (0.5 ms). */
    private static void assertWithinTheHistogramsError(Duration reported, double exactSeconds) {
      double r = reported.toNanos() / 1e9;
      assertThat(r)
          .as("reported %s s for %s s", r, exactSeconds)
          .isCloseTo(
              exactSeconds,
              within(
                  Math.max(
                      0.001,
                      exactSeconds
                          * (dev.relay.internal.admin.LatencyHistogram.RELATIVE_ERROR + 1e-6))));
    }

    private long stateCount(String state) {
      return f.count("SELECT count(*) FROM {schema}.work WHERE kind = 'k' AND state = ?", state);
    }
  }

  @Nested
  class Overview {
    @Test
    void completionsPerMinuteCountWhatEndedInEachMinuteOfTheWindowWithZerosBetween() {
      f.done("d-1", "k");
      f.done("d-2", "k");
      f.failed("x-1", "k");
      // Ended two hours ago: outside an hour's window.
      f.done("old", "k");
      dev.relay.Rows.update(
          f.ds,
          f.schema,
          "UPDATE {schema}.work_history SET completed_at = clock_timestamp() - interval '2 hours',"
              + " created_at = clock_timestamp() - interval '3 hours' WHERE work_id = 'old'");
      f.enqueue(Work.of("r-1", "k", "{}"));

      List<CompletionMinute> minutes = admin.completionsPerMinute(Duration.ofHours(1));

      assertThat(minutes).hasSizeBetween(60, 62);
      for (int i = 1; i < minutes.size(); i++) {
        assertThat(Duration.between(minutes.get(i - 1).minute(), minutes.get(i).minute()))
            .isEqualTo(Duration.ofMinutes(1));
      }
      assertThat(minutes.stream().mapToLong(CompletionMinute::done).sum()).isEqualTo(2);
      assertThat(minutes.stream().mapToLong(CompletionMinute::failed).sum()).isEqualTo(1);
      // all of it ended just now: in the last (current) minute or, across a minute's turn, the one
      // before
      CompletionMinute last = minutes.get(minutes.size() - 1);
      CompletionMinute before = minutes.get(minutes.size() - 2);
      assertThat(last.done() + before.done()).isEqualTo(2);
      assertThatThrownBy(() -> admin.completionsPerMinute(Duration.ofDays(2)))
          .isInstanceOf(InvalidAdminRequestException.class)
          .hasMessageContaining("window");
    }

    @Test
    void failureGroupsCountFailedWorkPerQueueKindAndReasonLargestFirst() {
      f.failed("a-1", "k");
      f.failed("a-2", "k");
      f.failed("b-1", "other");
      f.enqueue(Work.of("c-1", "k", "{}"));
      f.fail(f.claimOne("k"), "deadline");
      f.done("d-1", "k");

      List<FailureGroup> groups = admin.failureGroups();

      assertThat(groups)
          .extracting(FailureGroup::kind, FailureGroup::reason, FailureGroup::count)
          .containsExactly(
              org.assertj.core.groups.Tuple.tuple("k", "http_500", 2L),
              org.assertj.core.groups.Tuple.tuple("k", "deadline", 1L),
              org.assertj.core.groups.Tuple.tuple("other", "http_500", 1L));
      assertThat(groups.get(0).queue()).isEqualTo("default");
      assertThat(groups.get(0).latestFailedAt()).isNotNull();
      // each group is what the list's filter returns
      assertThat(
              admin
                  .list(WorkFilter.all().state("failed").kind("k").errorKind("http_500"), null, 10)
                  .items())
          .hasSize(2);
    }

    @Test
    void kindsShowTheRegisteredPolicyWithItsLimits() {
      f.registerKind("mail", Duration.ofHours(48));
      dev.relay.Rows.update(
          f.ds,
          f.schema,
          "INSERT INTO {schema}.limiter (kind, max_running, rate_limit, rate_interval)"
              + " VALUES ('mail', 4, 10, interval '1 minute')");
      f.registerKind("sms", Duration.ofHours(1));

      List<RegisteredKind> kinds = admin.kinds();

      assertThat(kinds).extracting(RegisteredKind::kind).containsExactly("mail", "sms");
      RegisteredKind mail = kinds.get(0);
      assertThat(mail.dedupHorizon()).isEqualTo(Duration.ofHours(48));
      assertThat(mail.maxRunTime()).isEqualTo(Duration.ofSeconds(30));
      assertThat(mail.maxAttempts()).isEqualTo(dev.relay.KindPolicy.DEFAULT_MAX_ATTEMPTS);
      assertThat(mail.backoffBase()).isEqualTo(dev.relay.KindPolicy.DEFAULT_BACKOFF_BASE);
      assertThat(mail.unknownOutcome()).isEqualTo("retry");
      assertThat(mail.registeredBy()).isEqualTo("test");
      assertThat(mail.limits())
          .isEqualTo(new dev.relay.FlowLimits(4, null, 10, Duration.ofMinutes(1)));
      assertThat(kinds.get(1).limits()).isEqualTo(dev.relay.FlowLimits.NONE);
    }
  }

  @Nested
  class Purge {
    // Finished work in the work table, where a worker of an earlier release leaves it and where
    // this purge deletes it row by row (the history table loses whole days, tested on its own).
    private final PurgePolicy policy =
        PurgePolicy.DEFAULT
            .withWorkRetention(Duration.ofDays(7))
            .withHistoryRetention(Duration.ofDays(7))
            .withIdentityHorizon(Duration.ofDays(90));

    private void endedDaysAgo(String workId, int days) {
      f.update(
          "UPDATE {schema}.outbox SET completed_at = clock_timestamp() - ? * interval '1 day'"
              + " WHERE work_id = ?",
          days,
          workId);
    }

    private void scenario() {
      f.registerKind("k", Duration.ofHours(1));
      f.registerKind("slow", Duration.ofDays(30));
      f.doneInWorkTable("done-old", "k");
      endedDaysAgo("done-old", 10);
      f.doneInWorkTable("done-recent", "k");
      endedDaysAgo("done-recent", 1);
      f.failed("failed-old", "k");
      endedDaysAgo("failed-old", 100);
      f.enqueue(Work.of("cancelled-old", "k", "{\"id\":\"cancelled-old\"}"));
      admin.cancel("cancelled-old", "mina", "x");
      endedDaysAgo("cancelled-old", 10);
      f.doneInWorkTable("in-horizon", "slow");
      endedDaysAgo("in-horizon", 10);
      f.doneInWorkTable("unregistered-old", "nobody");
      endedDaysAgo("unregistered-old", 10);
      f.enqueue(Work.of("ready-1", "k", "{}"));
    }

    @Test
    void dryRunCountsAndChangesNothing() {
      scenario();
      long rows = f.count("SELECT count(*) FROM {schema}.work");
      PurgeResult r = admin.purge(policy, true);
      assertThat(r.dryRun()).isTrue();
      assertThat(r.work()).isEqualTo(3);
      assertThat(f.count("SELECT count(*) FROM {schema}.work")).isEqualTo(rows);
      assertThat(f.count("SELECT count(*) FROM {schema}.tombstone")).isZero();
    }

    @Test
    void purgeNeverDeletesFailedOrInHorizonWorkAndTombstonesWhatItDeletes() {
      scenario();
      PurgeResult r = admin.purge(policy, false);
      assertThat(r.work()).isEqualTo(3);
      assertThat(r.complete()).isTrue();
      assertThat(f.query("SELECT work_id FROM {schema}.work ORDER BY work_id"))
          .extracting(m -> m.get("work_id"))
          .containsExactly("done-recent", "failed-old", "in-horizon", "ready-1");
      List<Map<String, Object>> tombs =
          f.query(
              "SELECT t.*, t.payload_digest = {schema}.payload_digest(('{\"id\":\"' || t.work_id"
                  + " || '\"}')::jsonb) AS digest_ok FROM {schema}.tombstone t ORDER BY work_id");
      assertThat(tombs)
          .extracting(
              m -> m.get("work_id"),
              m -> m.get("final_state"),
              m -> m.get("last_generation"),
              m -> m.get("digest_ok"))
          .containsExactly(
              org.assertj.core.groups.Tuple.tuple("cancelled-old", "cancelled", 0L, true),
              org.assertj.core.groups.Tuple.tuple("done-old", "done", 1L, true),
              org.assertj.core.groups.Tuple.tuple("unregistered-old", "done", 1L, true));
      assertThat(tombs.get(1)).containsEntry("outcome", "delivered");
      // Nothing more is eligible.
      assertThat(admin.purge(policy, true).work()).isZero();
    }

    @Test
    void aPurgedIdReenqueuedWithAnotherPayloadIsStillRefused() {
      scenario();
      admin.purge(policy, false);
      assertThatThrownBy(() -> f.enqueue(Work.of("done-old", "k", "{\"id\":\"other\"}")))
          .isInstanceOfSatisfying(
              WorkConflictException.class,
              e -> {
                assertThat(e.workId()).isEqualTo("done-old");
                assertThat(e.getMessage()).contains("tombstone");
              });
      List<EnqueueResult> same = f.enqueue(Work.of("done-old", "k", "{ \"id\" : \"done-old\" }"));
      assertThat(same.get(0).status()).isEqualTo(EnqueueResult.Status.ALREADY_ENQUEUED);
      assertThat(f.row("done-old")).isNull();
    }

    @Test
    void anOperatorsPurgeIsAuditedWithActorReasonAndCountsAndBadInputChangesNothing() {
      f.doneInWorkTable("done-old", "k");
      endedDaysAgo("done-old", 30);

      PurgeResult dry = admin.purge(policy, true, "mina", "how much would go");
      PurgeResult real = admin.purge(policy, false, "mina", "disk at 80%, INC-7");

      assertThat(dry.work()).isEqualTo(1);
      assertThat(real.work()).isEqualTo(1);
      List<Map<String, Object>> audit = f.query("SELECT * FROM {schema}.purge_audit ORDER BY id");
      assertThat(audit).hasSize(2);
      assertThat(audit.get(0))
          .containsEntry("actor", "mina")
          .containsEntry("reason", "how much would go")
          .containsEntry("dry_run", true)
          .containsEntry("work", 1L);
      assertThat(audit.get(1))
          .containsEntry("reason", "disk at 80%, INC-7")
          .containsEntry("dry_run", false)
          .containsEntry("work", 1L)
          .containsEntry("complete", true);
      assertThat((String) audit.get(1).get("policy")).contains("workRetention=PT168H");

      f.doneInWorkTable("done-old-2", "k");
      endedDaysAgo("done-old-2", 30);
      assertThatThrownBy(() -> admin.purge(policy, false, " ", "why"))
          .isInstanceOfSatisfying(
              InvalidAdminRequestException.class, e -> assertThat(e.field()).isEqualTo("actor"));
      assertThatThrownBy(() -> admin.purge(policy, false, "mina", null))
          .isInstanceOfSatisfying(
              InvalidAdminRequestException.class, e -> assertThat(e.field()).isEqualTo("reason"));
      assertThat(f.row("done-old-2")).isNotNull();
      assertThat(f.count("SELECT count(*) FROM {schema}.purge_audit")).isEqualTo(2);

      // Audit rows of purges go after the history retention, like the other audits.
      f.update(
          "UPDATE {schema}.purge_audit SET requested_at = clock_timestamp() - interval '30 days'");
      assertThat(admin.purge(policy, false).audits()).isEqualTo(2);
      assertThat(f.count("SELECT count(*) FROM {schema}.purge_audit")).isZero();
    }

    @Test
    void worksInBoundedBatches() {
      for (int i = 0; i < 25; i++) {
        f.enqueue(Work.of("b-" + i, "k", "{}"));
      }
      f.claim("k", 25).forEach(f::complete);
      f.toWorkTable(
          f.query("SELECT work_id FROM {schema}.work_history").stream()
              .map(m -> (String) m.get("work_id"))
              .toArray(String[]::new));
      f.update("UPDATE {schema}.outbox SET completed_at = clock_timestamp() - interval '30 days'");
      PurgeResult partial = admin.purge(policy.withBatches(4, 3), false);
      assertThat(partial.work()).isEqualTo(12);
      assertThat(partial.complete()).isFalse();
      PurgeResult rest = admin.purge(policy.withBatches(4, 100), false);
      assertThat(rest.work()).isEqualTo(13);
      assertThat(rest.complete()).isTrue();
      assertThat(f.count("SELECT count(*) FROM {schema}.tombstone")).isEqualTo(25);
    }

    @Test
    void tombstonesHistoryAndAuditGoAfterTheirRetentionButFailedEvidenceStays() {
      scenario();
      f.enqueue(Work.of("retried-done", "r", "{}"));
      f.retry(f.claimOne("r"), "timeout");
      f.complete(f.claimOne("r"));
      f.toWorkTable("retried-done");
      endedDaysAgo("retried-done", 10);
      admin.purge(policy, false);
      f.update("UPDATE {schema}.attempt SET ended_at = clock_timestamp() - interval '8 days'");
      f.update(
          "UPDATE {schema}.cancel_audit SET requested_at = clock_timestamp() - interval '8 days'");
      f.update(
          "UPDATE {schema}.tombstone SET purged_at = clock_timestamp() - interval '91 days'"
              + " WHERE work_id = 'done-old'");

      PurgeResult r = admin.purge(policy, false);

      assertThat(r.tombstones()).isEqualTo(1);
      assertThat(f.count("SELECT count(*) FROM {schema}.tombstone WHERE work_id = 'done-old'"))
          .isZero();
      // The retried-then-purged item's attempt row went; the failed item's evidence stays.
      assertThat(r.attempts()).isEqualTo(1);
      assertThat(f.count("SELECT count(*) FROM {schema}.attempt WHERE work_id = 'failed-old'"))
          .isEqualTo(1);
      assertThat(r.audits()).isEqualTo(1); // the cancel audit of cancelled-old
      // After the identity horizon the ID may be used again.
      assertThat(f.enqueue(Work.of("done-old", "k", "{\"v\":2}")).get(0).inserted()).isTrue();
    }

    @Test
    void badPoliciesAreRefusedBeforeAnythingIsSent() {
      assertThatThrownBy(() -> admin.purge(policy.withBatches(0, 1), false))
          .isInstanceOf(InvalidAdminRequestException.class);
      assertThatThrownBy(() -> admin.purge(policy.withWorkRetention(Duration.ZERO), true))
          .isInstanceOf(InvalidAdminRequestException.class);
    }
  }
}
