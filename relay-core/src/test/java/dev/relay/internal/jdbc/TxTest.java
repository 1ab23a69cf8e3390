package dev.relay.internal.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.TransactionRequiredException;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** Relay's own short transactions: refusing a caller's open transaction changes nothing. */
@RelayDatabaseTest
class TxTest {

  @Test
  void aConnectionInsideTheCallersTransactionIsRefusedAndItsTransactionLeftAsItWas(TestDatabase db)
      throws SQLException {
    db.execute("CREATE TABLE {schema}.business (id int PRIMARY KEY)");
    AtomicBoolean ran = new AtomicBoolean();
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.executeUpdate("INSERT INTO " + db.schema() + ".business VALUES (103)");
      }

      assertThatThrownBy(
              () ->
                  Tx.run(
                      c,
                      Timeouts.DEFAULT,
                      "claim",
                      conn -> {
                        ran.set(true);
                        return null;
                      }))
          .isInstanceOf(TransactionRequiredException.class)
          .hasMessageContaining("auto-commit");

      assertThat(ran).isFalse();
      assertThat(c.getAutoCommit()).as("the caller's transaction mode").isFalse();
      c.commit(); // the caller's own insert is still there to commit
    }
    try (Connection c = db.dataSource().getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + db.schema() + ".business")) {
      rs.next();
      assertThat(rs.getInt(1)).as("the caller's row, committed by the caller").isEqualTo(1);
    }
  }
}
