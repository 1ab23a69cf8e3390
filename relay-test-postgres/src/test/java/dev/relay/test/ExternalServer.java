package dev.relay.test;

/** Whether the tests run against a server named by RELAY_TEST_JDBC_URL. */
final class ExternalServer {
  private ExternalServer() {}

  static boolean configured() {
    String url = System.getenv(Server.URL_VARIABLE);
    return url != null && !url.isBlank();
  }
}
