package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.spring.RelayOutbox;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * jOOQ on the application's DataSource, the way Boot's jOOQ support wires it (through a
 * transaction-aware proxy), writes in the same Spring transaction as {@link RelayOutbox}.
 */
@RelayDatabaseTest
class JooqInTransactionTest {
  record OrderReceived(String orderId) {}

  static {
    System.setProperty("org.jooq.no-logo", "true");
    System.setProperty("org.jooq.no-tips", "true");
  }

  @Test
  void jooqRowAndWorkCommitTogetherOrRollBackTogether(TestDatabase db) throws Exception {
    db.execute("CREATE TABLE {schema}.purchase (id text PRIMARY KEY, item text NOT NULL)");
    Contexts.on(db)
        .withUserConfiguration(Contexts.Jdbc.class)
        .run(
            context -> {
              RelayOutbox outbox = context.getBean(RelayOutbox.class);
              DSLContext jooq =
                  DSL.using(
                      new TransactionAwareDataSourceProxy(context.getBean(DataSource.class)),
                      SQLDialect.POSTGRES);
              TransactionTemplate tx =
                  new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
              var purchase = DSL.table(DSL.name(db.schema(), "purchase"));
              var id = DSL.field(DSL.name("id"), String.class);
              var item = DSL.field(DSL.name("item"), String.class);

              assertThatThrownBy(
                      () ->
                          tx.executeWithoutResult(
                              s -> {
                                jooq.insertInto(purchase, id, item).values("103", "mug").execute();
                                outbox.enqueue(
                                    "order-103-ack", "order_received", new OrderReceived("103"));
                                throw new IllegalStateException("payment declined");
                              }))
                  .hasMessageContaining("payment declined");
              assertThat(db.queryLong("SELECT count(*) FROM {schema}.purchase")).isZero();
              assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();

              tx.executeWithoutResult(
                  s -> {
                    jooq.insertInto(purchase, id, item).values("103", "mug").execute();
                    outbox.enqueue("order-103-ack", "order_received", new OrderReceived("103"));
                  });
              assertThat(db.queryLong("SELECT count(*) FROM {schema}.purchase")).isEqualTo(1);
              assertThat(
                      db.queryLong(
                          "SELECT count(*) FROM {schema}.work WHERE work_id = 'order-103-ack'"))
                  .isEqualTo(1);
            });
  }
}
