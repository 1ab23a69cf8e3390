package dev.relay.examples.springshop;

import dev.relay.Claim;
import dev.relay.Handler;
import dev.relay.Outcome;
import dev.relay.transport.http.HttpRoute;
import dev.relay.transport.http.HttpTransport;
import java.net.URI;
import org.springframework.core.env.Environment;

/**
 * POSTs each acknowledgement to the mailer with Relay's HTTP transport. The mailer's address is
 * {@code shop.mailer-url}, by default this application's own {@code /mailer/acks}, read at the
 * first delivery (Relay starts after the web server, so the port is known by then).
 */
final class MailerDelivery implements Handler {
  private final Environment env;
  private volatile HttpTransport transport;

  MailerDelivery(Environment env) {
    this.env = env;
  }

  @Override
  public Outcome handle(Claim claim) throws Exception {
    HttpTransport t = transport;
    if (t == null) {
      String url =
          env.getProperty(
              "shop.mailer-url",
              "http://127.0.0.1:" + env.getRequiredProperty("local.server.port") + "/mailer/acks");
      t = HttpTransport.builder().route(HttpRoute.of("order_received", URI.create(url))).build();
      transport = t;
    }
    return t.handle(claim);
  }
}
