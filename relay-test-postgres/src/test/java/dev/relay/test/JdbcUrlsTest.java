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
}
