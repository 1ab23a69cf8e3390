package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.TransactionRequiredException;
import dev.relay.receiver.InboxResult;
import dev.relay.spring.InboxTemplate;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

@RelayDatabaseTest
class InboxTemplateTest {
  @Test
  void aMessageIsAppliedOnceWithTheReceiversWritesAndARollbackForgetsIt(TestDatabase db)
      throws Exception {
    db.execute("CREATE TABLE {schema}.mail (message_id text PRIMARY KEY)");
    Contexts.on(db)
        .withUserConfiguration(Contexts.Jdbc.class)
        .run(
            context -> {
              InboxTemplate inbox = context.getBean(InboxTemplate.class);
              JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
              TransactionTemplate tx =
                  new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
              AtomicInteger effects = new AtomicInteger();
              String insert = "INSERT INTO " + db.schema() + ".mail VALUES (?)";

              assertThatThrownBy(
                      () ->
                          tx.executeWithoutResult(
                              s -> {
                                inbox.process(
                                    "mailer",
                                    "order-103-ack",
                                    "{\"order\":103}",
                                    c -> {
                                      jdbc.update(insert, "order-103-ack");
                                      return "{\"queued\":1}";
                                    });
                                throw new IllegalStateException("mail server down");
                              }))
                  .hasMessageContaining("mail server down");
              assertThat(db.queryLong("SELECT count(*) FROM {schema}.mail")).isZero();

              for (int delivery = 0; delivery < 2; delivery++) {
                InboxResult r =
                    tx.execute(
                        s ->
                            inbox.process(
                                "mailer",
                                "order-103-ack",
                                "{\"order\":103}",
                                c -> {
                                  effects.incrementAndGet();
                                  jdbc.update(insert, "order-103-ack");
                                  return "{\"queued\":" + effects.get() + "}";
                                }));
                assertThat(r.result().replace(" ", "")).isEqualTo("{\"queued\":1}");
                assertThat(r.status())
                    .isEqualTo(
                        delivery == 0 ? InboxResult.Status.APPLIED : InboxResult.Status.DUPLICATE);
              }
              assertThat(effects).hasValue(1);
              assertThat(db.queryLong("SELECT count(*) FROM {schema}.mail")).isEqualTo(1);

              assertThatThrownBy(() -> inbox.process("mailer", "order-104-ack", "{}", c -> "{}"))
                  .isInstanceOf(TransactionRequiredException.class);
              assertThat(tx.execute(s -> inbox.advanceFence("mailbox-7", 8)).accepted()).isTrue();
              assertThat(tx.execute(s -> inbox.advanceFence("mailbox-7", 7)).refused()).isTrue();
            });
  }
}
