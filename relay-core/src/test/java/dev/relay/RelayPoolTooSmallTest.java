package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A pool of one connection, which the runtime's LISTEN connection keeps: whichever part of the
 * runtime asks next (a claim, the outcomes, ...) gets none. The errors then say so, and what to do,
 * instead of only the pool's "not available".
 */
@RelayDatabaseTest
class RelayPoolTooSmallTest {
  @Test
  void aPoolTheListenConnectionExhaustsIsNamedInTheErrors(TestDatabase db) {
    HikariConfig config = new HikariConfig();
    config.setPoolName("relay-one");
    config.setJdbcUrl(db.jdbcUrl());
    config.setMaximumPoolSize(1);
    config.setConnectionTimeout(250); // the pool's wait for a free connection, not synchronisation
    List<String> errors = new CopyOnWriteArrayList<>();
    try (HikariDataSource pool = new HikariDataSource(config);
        RelayFixture f = new RelayFixture(db)) {
      f.start(
          f.builder(pool)
              .workerId("tiny")
              .listener(
                  new RelayEventListener() {
                    @Override
                    public void error(String what, Throwable error) {
                      errors.add(what + ": " + error.getMessage());
                    }
                  })
              .handle("k", claim -> Outcome.done("ok")));
      f.enqueue(Work.of("w-1", "k", "{}"));

      await()
          .atMost(RelayFixture.PATIENCE)
          .until(() -> errors.stream().anyMatch(e -> e.contains("lent none in time")));
      assertThat(errors.stream().filter(e -> e.contains("lent none in time")).findFirst())
          .get()
          .asString()
          .contains("while this Relay had 1 open")
          .contains("LISTEN connection")
          .contains("size the pool");
    }
  }
}
