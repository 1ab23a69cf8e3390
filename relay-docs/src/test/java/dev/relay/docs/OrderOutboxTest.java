package dev.relay.docs;

// docs:begin testing-first-test-imports
import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import org.junit.jupiter.api.Test;
// docs:end

/** The first test of docs/testing.md, run as written. */
// docs:begin testing-first-test
@RelayDatabaseTest
class OrderOutboxTest {

  @Test
  void orderAndItsMessageCommitTogether(TestDatabase db) throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      // ... the business rows of the code under test, on the same connection ...
      outbox.enqueue(c, Work.of("order-103-ack", "order_received", "{\"order\": 103}"));
      c.commit();
    }
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.outbox")).isEqualTo(1);
  }
}
// docs:end
