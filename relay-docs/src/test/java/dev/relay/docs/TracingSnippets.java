package dev.relay.docs;

import dev.relay.Handler;
import dev.relay.Outbox;
import dev.relay.Relay;
import dev.relay.Work;
import dev.relay.opentelemetry.RelayOpenTelemetry;
import dev.relay.receiver.http.HttpReceiver;
import io.opentelemetry.api.OpenTelemetry;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/** The code of docs/guide.md, "Tracing". */
final class TracingSnippets {
  private TracingSnippets() {}

  static Relay wire(OpenTelemetry openTelemetry, DataSource dataSource, Handler mailer) {
    // docs:begin tracing-wire
    RelayOpenTelemetry tracing = RelayOpenTelemetry.create(openTelemetry);
    Outbox outbox = Outbox.builder().tracing(tracing).build();      // stores the current context
    Relay relay = Relay.builder(dataSource)
        .tracing(tracing)                                         // a span per attempt
        .handle("order_received", mailer)
        .build();
    HttpReceiver receiver = HttpReceiver.builder(dataSource)
        .consumer("mailer")
        .tracing(tracing)                                         // continues the sender's trace
        .build();
    // docs:end
    return relay;
  }

  static void perItem(Connection c, Outbox outbox, List<Map<String, String>> requests) {
    // docs:begin tracing-per-item
    outbox.enqueueAll(c, List.of(
        Work.of("ack-101", "order_received", "{\"order\": 101}").traceContext(requests.get(0)),
        Work.of("ack-102", "order_received", "{\"order\": 102}").traceContext(requests.get(1))));
    // docs:end
  }
}
