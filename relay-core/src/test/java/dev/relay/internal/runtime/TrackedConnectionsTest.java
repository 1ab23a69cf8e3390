package dev.relay.internal.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.RelayException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The close bound's tool: at {@code closeAll()} every connection still in use is aborted, closed
 * ones are not touched, and no connection is handed out afterwards.
 */
class TrackedConnectionsTest {
  /** What the data source's connections were asked to do, in order, by connection number. */
  private final List<String> calls = new CopyOnWriteArrayList<>();

  private final TrackedConnections connections = new TrackedConnections(dataSource());

  @Test
  void closeAllAbortsTheConnectionsStillInUseOnly() throws Exception {
    Connection busy = connections.open("record outcomes");
    Connection done = connections.open("claim");
    done.close();
    assertThat(connections.inUse()).isEqualTo(1);

    connections.closeAll();

    assertThat(calls).containsExactly("2 close", "1 abort");
  }

  @Test
  void noConnectionIsHandedOutAfterCloseAll() {
    connections.closeAll();

    assertThatThrownBy(() -> connections.open("renew leases"))
        .isInstanceOf(RelayException.class)
        .hasMessageContaining("relay is closed")
        .hasMessageContaining("renew leases");
    assertThat(calls).isEmpty(); // the data source was not even asked
  }

  @Test
  void closingAConnectionAfterCloseAllIsHarmless() throws Exception {
    Connection busy = connections.open("claim");
    connections.closeAll();
    busy.close();

    assertThat(calls).containsExactly("1 abort", "1 close");
    assertThat(connections.inUse()).isZero();
  }

  private DataSource dataSource() {
    int[] opened = {0};
    return (DataSource)
        Proxy.newProxyInstance(
            DataSource.class.getClassLoader(),
            new Class<?>[] {DataSource.class},
            (proxy, method, args) -> {
              if (!method.getName().equals("getConnection")) {
                throw new UnsupportedOperationException(method.getName());
              }
              int n = ++opened[0];
              return Proxy.newProxyInstance(
                  Connection.class.getClassLoader(),
                  new Class<?>[] {Connection.class},
                  (c, m, a) -> {
                    switch (m.getName()) {
                      case "abort", "close" -> {
                        calls.add(n + " " + m.getName());
                        return null;
                      }
                      default -> throw new UnsupportedOperationException(m.getName());
                    }
                  });
            });
  }
}
