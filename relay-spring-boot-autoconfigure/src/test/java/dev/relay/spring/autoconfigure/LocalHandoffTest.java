package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.Handler;
import dev.relay.Outcome;
import dev.relay.spring.RelayHandler;
import dev.relay.spring.RelayOutbox;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@code relay.local-handoff}: work the application's own worker takes is inserted claimed by it
 * and started from an after-commit synchronization, never after a rollback. The worker polls once
 * an hour and listens to nothing, so work that runs soon after a commit was handed off.
 */
@RelayDatabaseTest
class LocalHandoffTest {
  static final List<Long> generations = new CopyOnWriteArrayList<>();

  @Configuration(proxyBeanMethods = false)
  static class Mail {
    @Bean
    @RelayHandler(kind = "mail")
    Handler mail() {
      return claim -> {
        generations.add(claim.generation());
        return Outcome.done();
      };
    }
  }

  @Test
  void workStartsAfterTheCommitAndNeverAfterARollback(TestDatabase db) {
    generations.clear();
    Contexts.on(db)
        .withUserConfiguration(Contexts.Jdbc.class, Mail.class)
        .withPropertyValues(
            "relay.local-handoff=true", "relay.notifications=false", "relay.poll-interval=1h")
        .run(
            context -> {
              RelayOutbox outbox = context.getBean(RelayOutbox.class);
              TransactionTemplate tx =
                  new TransactionTemplate(context.getBean(PlatformTransactionManager.class));

              assertThatThrownBy(
                      () ->
                          tx.executeWithoutResult(
                              s -> {
                                outbox.enqueue("rolled-back", "mail", "hello");
                                throw new IllegalStateException("business failure");
                              }))
                  .isInstanceOf(IllegalStateException.class);
              tx.executeWithoutResult(s -> outbox.enqueue("committed", "mail", "hello"));

              await()
                  .atMost(Duration.ofSeconds(60))
                  .until(
                      () ->
                          "done"
                              .equals(
                                  db.queryString(
                                      "SELECT state FROM {schema}.work"
                                          + " WHERE work_id = 'committed'")));
              assertThat(generations).containsExactly(1L);
              assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isEqualTo(1);
            });
  }
}
