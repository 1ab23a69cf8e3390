package dev.relay.transport.nats;

import dev.relay.Outbox;
import dev.relay.Work;
import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The machine's NATS JetStream (127.0.0.1:4222) for one test: uniquely named streams that {@link
 * #close()} deletes.
 */
final class Streams implements AutoCloseable {
  /** One stream made for a test: its name and the one subject it captures. */
  record Stream(String name, String subject) {}

  private final Connection connection;
  private final JetStreamManagement jsm;
  private final List<String> created = new ArrayList<>();

  Streams() throws IOException, InterruptedException {
    this.connection = Nats.connect(options());
    this.jsm = connection.jetStreamManagement();
  }

  static Options options() {
    return new Options.Builder()
        .server("nats://127.0.0.1:4222")
        .connectionTimeout(Duration.ofSeconds(5))
        .build();
  }

  /** A file-backed stream with this duplicate window, capturing one unique subject. */
  Stream create(Duration duplicateWindow) throws IOException, JetStreamApiException {
    String id = UUID.randomUUID().toString().replace("-", "");
    Stream s = new Stream("relay-test-" + id, "relay-test." + id);
    jsm.addStream(
        StreamConfiguration.builder()
            .name(s.name())
            .subjects(s.subject())
            .storageType(StorageType.File)
            .duplicateWindow(duplicateWindow)
            .build());
    created.add(s.name());
    return s;
  }

  long messages(Stream s) throws IOException, JetStreamApiException {
    return jsm.getStreamInfo(s.name()).getStreamState().getMsgCount();
  }

  Connection connection() {
    return connection;
  }

  static void enqueue(DataSource ds, String schema, List<Work> work) throws SQLException {
    Outbox outbox = Outbox.builder().schema(schema).maxPayloadBytes(4 << 20).build();
    try (java.sql.Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      outbox.enqueueAll(c, work);
      c.commit();
      c.setAutoCommit(true);
    }
  }

  @Override
  public void close() throws IOException, JetStreamApiException {
    try {
      for (String name : created) {
        jsm.deleteStream(name);
      }
    } finally {
      try {
        connection.close();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
