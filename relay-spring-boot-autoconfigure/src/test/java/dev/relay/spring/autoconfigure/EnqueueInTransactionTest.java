package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.EnqueueResult;
import dev.relay.TransactionRequiredException;
import dev.relay.WorkConflictException;
import dev.relay.spring.RelayOutbox;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import jakarta.persistence.EntityManager;
import jakarta.persistence.EntityManagerFactory;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.orm.jpa.EntityManagerFactoryUtils;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.orm.jpa.LocalContainerEntityManagerFactoryBean;
import org.springframework.orm.jpa.vendor.HibernateJpaVendorAdapter;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

@RelayDatabaseTest
class EnqueueInTransactionTest {
  record OrderReceived(String orderId, String item) {}

  /** Thrown by the business code after it enqueued. */
  static final class Boom extends RuntimeException {
    private static final long serialVersionUID = 1L;
  }

  @Configuration(proxyBeanMethods = false)
  static class Jpa {
    @Bean
    LocalContainerEntityManagerFactoryBean entityManagerFactory(
        DataSource dataSource, Environment env) {
      LocalContainerEntityManagerFactoryBean f = new LocalContainerEntityManagerFactoryBean();
      f.setDataSource(dataSource);
      f.setPackagesToScan(Purchase.class.getPackageName());
      f.setJpaVendorAdapter(new HibernateJpaVendorAdapter());
      f.setJpaPropertyMap(Map.of("hibernate.default_schema", env.getProperty("relay.schema")));
      return f;
    }

    @Bean
    JpaTransactionManager transactionManager(EntityManagerFactory emf) {
      return new JpaTransactionManager(emf);
    }
  }

  @BeforeEach
  void businessTable(TestDatabase db) throws Exception {
    db.execute("CREATE TABLE {schema}.purchase (id text PRIMARY KEY, item text NOT NULL)");
  }

  private static long count(TestDatabase db, String table) throws Exception {
    return db.queryLong("SELECT count(*) FROM {schema}." + table);
  }

  @Test
  void jdbcTransactionCommitsBothOrRollsBackBoth(TestDatabase db) {
    Contexts.on(db)
        .withUserConfiguration(Contexts.Jdbc.class)
        .run(
            context -> {
              RelayOutbox outbox = context.getBean(RelayOutbox.class);
              JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
              TransactionTemplate tx =
                  new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
              String insert = "INSERT INTO " + db.schema() + ".purchase VALUES (?, ?)";

              assertThatThrownBy(
                      () ->
                          tx.executeWithoutResult(
                              s -> {
                                jdbc.update(insert, "103", "mug");
                                outbox.enqueue(
                                    "order-103-ack",
                                    "order_received",
                                    new OrderReceived("103", "mug"));
                                throw new Boom();
                              }))
                  .isInstanceOf(Boom.class);
              assertThat(count(db, "purchase")).isZero();
              assertThat(count(db, "work")).isZero();

              EnqueueResult result =
                  tx.execute(
                      s -> {
                        jdbc.update(insert, "103", "mug");
                        return outbox.enqueue(
                            "order-103-ack", "order_received", new OrderReceived("103", "mug"));
                      });
              assertThat(result.status()).isEqualTo(EnqueueResult.Status.ENQUEUED);
              assertThat(count(db, "purchase")).isEqualTo(1);
              assertThat(
                      db.queryString(
                          "SELECT payload->>'item' FROM {schema}.work WHERE work_id = 'order-103-ack'"))
                  .isEqualTo("mug");
            });
  }

  @Test
  void aChangedObjectUnderAUsedIdRollsTheBusinessChangeBackEvenWhenCaught(TestDatabase db) {
    Contexts.on(db)
        .withUserConfiguration(Contexts.Jdbc.class)
        .run(
            context -> {
              RelayOutbox outbox = context.getBean(RelayOutbox.class);
              JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
              TransactionTemplate tx =
                  new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
              tx.executeWithoutResult(
                  s ->
                      outbox.enqueue(
                          "order-103-ack", "order_received", new OrderReceived("103", "mug")));

              assertThatThrownBy(
                      () ->
                          tx.executeWithoutResult(
                              s -> {
                                jdbc.update(
                                    "INSERT INTO "
                                        + db.schema()
                                        + ".purchase VALUES ('104', 'cup')");
                                try {
                                  outbox.enqueue(
                                      "order-103-ack",
                                      "order_received",
                                      new OrderReceived("103", "teapot"));
                                } catch (WorkConflictException swallowed) {
                                  // a caller that catches it still cannot commit the purchase
                                }
                              }))
                  .hasMessageContaining("rollback-only");
              assertThat(count(db, "purchase")).isZero();
            });
  }

  @Test
  void outsideATransactionAndInAReadOnlyOneEnqueueIsRefused(TestDatabase db) {
    Contexts.on(db)
        .withUserConfiguration(Contexts.Jdbc.class)
        .run(
            context -> {
              RelayOutbox outbox = context.getBean(RelayOutbox.class);
              assertThatThrownBy(
                      () -> outbox.enqueue("a", "order_received", new OrderReceived("1", "mug")))
                  .isInstanceOf(TransactionRequiredException.class)
                  .hasMessageContaining("no Spring transaction is active");

              TransactionTemplate readOnly =
                  new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
              readOnly.setReadOnly(true);
              assertThatThrownBy(
                      () ->
                          readOnly.executeWithoutResult(
                              s ->
                                  outbox.enqueue(
                                      "a", "order_received", new OrderReceived("1", "mug"))))
                  .isInstanceOf(TransactionRequiredException.class)
                  .hasMessageContaining("read-only");
              assertThat(count(db, "work")).isZero();
            });
  }

  @Test
  void requiresNewSurvivesTheOuterRollback(TestDatabase db) {
    assertThat(outerAndInner(db, TransactionDefinition.PROPAGATION_REQUIRES_NEW, true, false))
        .isEqualTo("inner");
  }

  @Test
  void nestedRollbackToTheSavepointRemovesOnlyTheInnerWork(TestDatabase db) {
    assertThat(outerAndInner(db, TransactionDefinition.PROPAGATION_NESTED, false, true))
        .isEqualTo("outer");
  }

  /**
   * Enqueues "outer", then "inner" in a transaction with {@code propagation}, rolls either back as
   * asked, and returns the IDs of the work that committed.
   */
  private static String outerAndInner(
      TestDatabase db, int propagation, boolean rollBackOuter, boolean rollBackInner) {
    String[] committed = new String[1];
    Contexts.on(db)
        .withUserConfiguration(Contexts.Jdbc.class)
        .run(
            context -> {
              RelayOutbox outbox = context.getBean(RelayOutbox.class);
              PlatformTransactionManager tm = context.getBean(PlatformTransactionManager.class);
              TransactionTemplate inner = new TransactionTemplate(tm);
              inner.setPropagationBehavior(propagation);
              new TransactionTemplate(tm)
                  .executeWithoutResult(
                      s -> {
                        outbox.enqueue("outer", "order_received", new OrderReceived("1", "mug"));
                        inner.executeWithoutResult(
                            t -> {
                              outbox.enqueue(
                                  "inner", "order_received", new OrderReceived("2", "cup"));
                              if (rollBackInner) {
                                t.setRollbackOnly();
                              }
                            });
                        if (rollBackOuter) {
                          s.setRollbackOnly();
                        }
                      });
              committed[0] =
                  db.queryString(
                      "SELECT string_agg(work_id, ',' ORDER BY work_id) FROM {schema}.work");
            });
    return committed[0];
  }

  @Test
  void jpaEntityAndWorkCommitTogetherAndAFlushFailureRollsBothBack(TestDatabase db) {
    Contexts.on(db)
        .withUserConfiguration(Jpa.class)
        .run(
            context -> {
              RelayOutbox outbox = context.getBean(RelayOutbox.class);
              EntityManagerFactory emf = context.getBean(EntityManagerFactory.class);
              TransactionTemplate tx =
                  new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
              tx.executeWithoutResult(
                  s -> {
                    EntityManager em = EntityManagerFactoryUtils.getTransactionalEntityManager(emf);
                    em.persist(new Purchase("103", "mug"));
                    outbox.enqueue(
                        "order-103-ack", "order_received", new OrderReceived("103", "mug"));
                  });
              assertThat(count(db, "purchase")).isEqualTo(1);
              assertThat(count(db, "work")).isEqualTo(1);

              assertThatThrownBy(
                      () ->
                          tx.executeWithoutResult(
                              s -> {
                                EntityManager em =
                                    EntityManagerFactoryUtils.getTransactionalEntityManager(emf);
                                outbox.enqueue(
                                    "order-104-ack",
                                    "order_received",
                                    new OrderReceived("104", "cup"));
                                em.persist(new Purchase("103", "duplicate id"));
                              }))
                  .isNotNull();
              assertThat(count(db, "purchase")).isEqualTo(1);
              assertThat(count(db, "work")).isEqualTo(1);
            });
  }
}
