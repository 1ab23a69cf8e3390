package dev.relay.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.ServerSocket;
import java.sql.DriverManager;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;

class JdbcUrlsTest {
  @Test
  void passwordsAreMaskedInBothForms() {
    String text =
        "cannot use jdbc:postgresql://mina:s3cret@db:5432/shop and"
            + " jdbc:postgresql://db/shop?user=mina&Password=s3cret&ssl=true";

    String masked = JdbcUrls.maskPasswords(text);

    assertThat(masked)
        .doesNotContain("s3cret")
        .contains("//mina:******@db:5432/shop")
        .contains("Password=******&ssl=true");
    assertThat(JdbcUrls.maskPasswords(null)).isNull();
  }

  @Test
  void aUsableUrlHasNoProblem() {
    assertThat(JdbcUrls.problem("--jdbc-url", "jdbc:postgresql://127.0.0.1:5432/test?user=u"))
        .isNull();
  }

  @Test
  void aUrlOfAnotherDatabaseIsNamedWithItsSourceAndWithoutItsPassword() {
    String problem = JdbcUrls.problem("--jdbc-url", "jdbc:mysql://db/shop?password=s3cret");

    assertThat(problem)
        .isEqualTo(
            "--jdbc-url must be a PostgreSQL JDBC URL like "
                + JdbcUrls.EXAMPLE
                + ", was 'jdbc:mysql://db/shop?password=******'");
  }

  @Test
  void aUrlTheDriverCannotReadSaysHowToGiveThePassword() {
    String problem =
        JdbcUrls.problem("env RELAY_JDBC_URL", "jdbc:postgresql://mina:s3cret@db:5432/shop");

    assertThat(problem)
        .startsWith("env RELAY_JDBC_URL 'jdbc:postgresql://mina:******@db:5432/shop' is not a URL")
        .endsWith(
            "give the user and the password as its parameters user and password, not before"
                + " an @")
        .doesNotContain("s3cret");
    assertThat(JdbcUrls.reason("jdbc:postgresql://db:port/shop"))
        .startsWith("is not a URL the PostgreSQL driver can read")
        .doesNotContain("@");
  }

  @Test
  void timeoutsAreAddedUnlessTheUrlNamesThem() {
    assertThat(JdbcUrls.withTimeouts("jdbc:postgresql://db/shop"))
        .isEqualTo("jdbc:postgresql://db/shop?connectTimeout=10&loginTimeout=10");
    assertThat(JdbcUrls.withTimeouts("jdbc:postgresql://db/shop?user=u&loginTimeout=3"))
        .isEqualTo("jdbc:postgresql://db/shop?user=u&loginTimeout=3&connectTimeout=10");
  }

  @Test
  void aRefusedConnectionIsOneLineNamingTheAddress() throws Exception {
    int port;
    try (ServerSocket free = new ServerSocket(0)) {
      port = free.getLocalPort();
    } // closed: nothing listens on the port now
    String url = "jdbc:postgresql://127.0.0.1:" + port + "/shop?user=u&password=s3cret";

    assertThatThrownBy(() -> DriverManager.getConnection(JdbcUrls.withTimeouts(url)).close())
        .isInstanceOfSatisfying(
            SQLException.class,
            refused ->
                assertThat(JdbcUrls.describe(refused, url))
                    .isEqualTo("connection refused at 127.0.0.1:" + port));
  }

  /**
   * pgjdbc reads a URL with {@code sslmode=bogus} and refuses it only on connecting, as "Invalid
   * sslmode value" with the SQLState of an unreachable server; other values it ignores without a
   * word ({@code tcpKeepAlive=yes} is false). Refused before anything connects, by pgjdbc's own
   * definitions of its parameters (choices, and the type of the default), naming the parameter.
   */
  @Test
  void aParameterValueTheDriverDoesNotTakeIsNamedWithWhatItTakes() {
    String url = "jdbc:postgresql://127.0.0.1:5432/DB?user=postgres&password=s3cret&sslmode=bogus";

    assertThat(JdbcUrls.problem("--jdbc-url", url))
        .isEqualTo(
            "--jdbc-url 'jdbc:postgresql://127.0.0.1:5432/DB?user=postgres&password=******"
                + "&sslmode=bogus' has parameter sslmode=bogus, which the PostgreSQL driver does"
                + " not take: it takes one of disable, allow, prefer, require, verify-ca,"
                + " verify-full");
    assertThat(JdbcUrls.reason("jdbc:postgresql://db/x?prepareThreshold=x"))
        .isEqualTo(
            "has parameter prepareThreshold=x, which the PostgreSQL driver does not take: it"
                + " takes an integer");
    assertThat(JdbcUrls.reason("jdbc:postgresql://db/x?tcpKeepAlive=yes"))
        .endsWith("it takes true or false");
    assertThat(JdbcUrls.reason("jdbc:postgresql://db/x?targetServerType=bogus"))
        .startsWith("has parameter targetServerType=bogus,")
        .contains("any, primary");
    assertThat(JdbcUrls.reason("jdbc:postgresql://db/x?requireAuth=password,bogus"))
        .startsWith("has parameter requireAuth=password,bogus,");
  }

  /**
   * pgjdbc ignores {@code sslMode=require} (names are case-sensitive): it would connect in clear.
   */
  @Test
  void aParameterNameInTheWrongCaseIsRefusedNamingTheRightOne() {
    assertThat(JdbcUrls.reason("jdbc:postgresql://db/x?user=u&sslMode=require"))
        .isEqualTo(
            "has parameter sslMode, which the PostgreSQL driver does not know and ignores: its"
                + " name is sslmode (names are case-sensitive)");
    assertThat(JdbcUrls.reason("jdbc:postgresql://db/x?User=u")).contains("its name is user");
  }

  /**
   * The two timeouts Relay sets itself unless the URL names them: pgjdbc ignores a loginTimeout it
   * cannot read and a negative timeout (the connection may then wait forever).
   */
  @Test
  void theTimeoutsOfAFirstConnectionMustBeSecondsZeroOrMore() {
    for (String bad :
        new String[] {
          "loginTimeout=abc", "loginTimeout=-1", "connectTimeout=-5", "connectTimeout=2.5"
        }) {
      assertThat(JdbcUrls.reason("jdbc:postgresql://db/x?" + bad))
          .as(bad)
          .startsWith("has parameter " + bad + ", which the PostgreSQL driver does not take")
          .contains("seconds, 0 or more (0: no limit)");
    }
  }

  @Test
  void valuesTheDriverTakesAreAccepted() {
    for (String good :
        new String[] {
          "sslmode=REQUIRE",
          "sslmode=verify-full&sslrootcert=/etc/ca.pem",
          "protocolVersion=3.2",
          "requireAuth=password,scram-sha-256",
          "prepareThreshold=-1",
          "loginTimeout=2.5&connectTimeout=0",
          "ApplicationName=my%20app",
          "tcpKeepAlive=TRUE",
          "options=-c%20statement_timeout=5s",
          "noSuchParameter=whatever"
        }) {
      assertThat(JdbcUrls.reason("jdbc:postgresql://db/x?user=u&" + good)).as(good).isNull();
    }
  }

  /**
   * A value pgjdbc refuses only as it connects ({@code defaultRowFetchSize=-3}), or that the server
   * refuses ({@code options=-c statement_timeout=abc}), has SQLState 22023: a usage error naming
   * the URL, masked; any other failure is not one.
   */
  @Test
  void aValueRefusedOnConnectingIsNamedAsTheUrlsProblem() throws Exception {
    int port;
    try (ServerSocket free = new ServerSocket(0)) {
      port = free.getLocalPort();
    }
    String base = "jdbc:postgresql://127.0.0.1:" + port + "/shop?user=u&password=s3cret";
    String bad = base + "&defaultRowFetchSize=-3";

    assertThatThrownBy(() -> DriverManager.getConnection(JdbcUrls.withTimeouts(bad)).close())
        .isInstanceOfSatisfying(
            SQLException.class,
            refused ->
                assertThat(JdbcUrls.refusedParameter("--jdbc-url", bad, refused))
                    .isEqualTo(
                        "--jdbc-url 'jdbc:postgresql://127.0.0.1:"
                            + port
                            + "/shop?user=u&password=******&defaultRowFetchSize=-3' has a value"
                            + " the PostgreSQL driver or server refuses: Fetch size must be a value"
                            + " greater than or equal to 0."));
    assertThatThrownBy(() -> DriverManager.getConnection(JdbcUrls.withTimeouts(base)).close())
        .isInstanceOfSatisfying(
            SQLException.class,
            unreachable ->
                assertThat(JdbcUrls.refusedParameter("--jdbc-url", base, unreachable)).isNull());
  }
}
