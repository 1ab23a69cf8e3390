package dev.relay.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.relay.FlowLimits;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * The new keys of the serve config (bind, port, console users) and the refusals of a bad config:
 * exit code 2 naming the key, before anything connects; and {@code relay passwd}.
 */
class ServeCommandTest {
  private static final String HASH = BCrypt.hashpw("pw", BCrypt.gensalt(4));
  private static final String KINDS = "\"kinds\": {\"k\": {\"handler\": \"log\"}}";

  private static String config(String more) {
    String console = more.contains("\"console\"") ? "" : ", \"console\": {\"enabled\": false}";
    return "{" + KINDS + console + more + "}";
  }

  private static String user(String fields) {
    return ", \"console\": {\"users\": [{" + fields + "}]}";
  }

  @Test
  void readsBindPortAndUsersWithLoopbackByDefault() {
    ServeConfig old = ServeConfig.parse(config(", \"http_port\": 9500"), "relay.json");
    assertThat(old.bind()).isEqualTo("127.0.0.1");
    assertThat(old.port()).isEqualTo(9500);
    assertThat(old.users()).isEmpty();
    ServeConfig c =
        ServeConfig.parse(
            config(
                ", \"bind\": \"0.0.0.0\", \"port\": 8081"
                    + user("\"name\": \"olga\", \"hash\": \"" + HASH + "\", \"role\": \"viewer\"")),
            "relay.json");
    assertThat(c.bind()).isEqualTo("0.0.0.0");
    assertThat(c.port()).isEqualTo(8081);
    assertThat(c.users()).containsExactly(new ServeConfig.User("olga", HASH, "viewer"));
  }

  @Test
  void badConfigsAreRefusedWithExitCodeTwoNamingTheKey(@TempDir Path dir) throws Exception {
    String ok = "\"name\": \"olga\", \"hash\": \"" + HASH + "\"";
    assertRefused(dir, config(", \"prot\": 1"), "unknown field 'prot'");
    assertRefused(
        dir,
        config(user("\"name\": \"olga\", \"role\": \"operator\"")),
        "users[0]: hash is missing");
    assertRefused(
        dir,
        config(user("\"name\": \"olga\", \"hash\": \"hunter2\", \"role\": \"operator\"")),
        "users[0]: hash is not a bcrypt hash");
    assertRefused(
        dir,
        config(user("\"name\": \"olga\", \"password\": \"hunter2\", \"role\": \"operator\"")),
        "users[0]: password is not accepted");
    assertRefused(dir, config(user(ok + ", \"role\": \"admin\"")), "users[0]: role must be one of");
    assertRefused(
        dir, config(user(ok + ", \"role\": \"viewer\", \"mail\": 1")), "unknown field 'mail'");
    assertRefused(dir, config(", \"console\": {\"users\": []}"), "console.users must list");
    assertRefused(dir, config(", \"bind\": \"\""), "bind must be an IP address");
    assertRefused(dir, config(", \"port\": 70000"), "port must be 0-65535");
    assertRefused(
        dir,
        "{\"kinds\": {\"k\": {\"handler\": \"smtp\"}}, \"console\": {\"enabled\": false}}",
        "handler 'smtp'");
    // No console section: refused, saying how to give users or turn the console off.
    assertRefused(dir, "{" + KINDS + "}", "console is missing");
    assertRefused(dir, "{" + KINDS + "}", "\"console\": {\"enabled\": false}");
    assertRefused(dir, config(", \"console\": {\"enabled\": \"no\"}"), "console.enabled must be");
    assertRefused(
        dir,
        config(", \"console\": {\"enabled\": false, \"users\": []}"),
        "console.enabled is false but users are given");
  }

  @Test
  void flowLimitsOfAKindReachItsPolicy() {
    ServeConfig c =
        ServeConfig.parse(
            "{\"kinds\": {\"k\": {\"handler\": \"log\", \"max_running\": 2,"
                + " \"max_running_per_group\": 1, \"rate_limit\": 50,"
                + " \"rate_interval\": \"10s\"}, \"free\": {}},"
                + " \"console\": {\"enabled\": false}}",
            "relay.json");
    assertThat(c.kinds().get("k").policy().limits())
        .isEqualTo(new FlowLimits(2, 1, 50, Duration.ofSeconds(10)));
    assertThat(c.kinds().get("free").policy().limits()).isEqualTo(FlowLimits.NONE);
  }

  @Test
  void badLimitsAreRefusedNamingTheKey(@TempDir Path dir) throws Exception {
    assertRefused(dir, limits("\"max_running\": 0"), "kind k: max_running must be between 1 and");
    assertRefused(
        dir,
        limits("\"max_running_per_group\": 1000001"),
        "kind k: max_running_per_group must be between 1 and 1000000");
    assertRefused(dir, limits("\"rate_limit\": \"many\""), "kind k: rate_limit must be an integer");
    assertRefused(dir, limits("\"rate_limit\": 5"), "kind k: rate_limit needs rate_interval");
    assertRefused(
        dir, limits("\"rate_interval\": \"1m\""), "kind k: rate_interval needs rate_limit");
    assertRefused(
        dir,
        limits("\"rate_limit\": 5, \"rate_interval\": \"500ms\""),
        "kind k: rate_interval must be between 1s and 24h");
  }

  @Test
  void badHttpTimeoutsAreRefusedNamingTheKey(@TempDir Path dir) throws Exception {
    // HttpRoute checks its timeouts itself; its refusal must reach the user as a usage error
    // naming the kind and key, not as a stack trace with exit 1.
    String http = "\"handler\": \"http\", \"url\": \"http://127.0.0.1:8025/mail\", ";
    assertRefused(
        dir,
        "{\"kinds\": {\"k\": {"
            + http
            + "\"connect_timeout\": \"2h\"}},"
            + " \"console\": {\"enabled\": false}}",
        "kind k: connect_timeout");
    assertRefused(
        dir,
        "{\"kinds\": {\"k\": {"
            + http
            + "\"request_timeout\": \"30d\"}},"
            + " \"console\": {\"enabled\": false}}",
        "kind k: request_timeout");
  }

  @Test
  void settingsTheRuntimeRefusesAreUsageErrorsInTheConfigsOwnTerms(@TempDir Path dir)
      throws Exception {
    // Checked by Relay's builder, not by the config reader: still refused before any connection
    // (the database named here is unreachable), with exit 2 and the config's key names.
    assertRefused(
        dir,
        "{\"lease\": \"5s\", \"kinds\": {\"k\": {\"handler\": \"log\","
            + " \"dedup_horizon\": \"2s\", \"max_elapsed\": \"1s\"}},"
            + " \"console\": {\"enabled\": false}}",
        "kind k: dedup_horizon");
    assertRefused(
        dir,
        "{\"kinds\": {\"k\": {\"handler\": \"log\", \"max_attempts\": 0}},"
            + " \"console\": {\"enabled\": false}}",
        "max_attempts");
  }

  private static String limits(String fields) {
    return "{\"kinds\": {\"k\": {\"handler\": \"log\", " + fields + "}}}";
  }

  @Test
  void aMissingConfigFileIsAUsageError(@TempDir Path dir) {
    Run r = run(null, "serve", "--config", dir.resolve("nope.json").toString());
    assertThat(r.code).isEqualTo(2);
    assertThat(r.err).contains("no such file");
  }

  @Test
  void passwdPrintsABcryptHashThatVerifies() {
    Run r = run("correct horse\n", "passwd");
    assertThat(r.code).as(r.err).isZero();
    String hash = r.out.strip();
    assertThat(BCrypt.checkpw("correct horse", hash)).isTrue();
    assertThat(BCrypt.checkpw("wrong horse", hash)).isFalse();
    // The printed hash is one the serve config accepts.
    assertThat(
            ServeConfig.parse(
                    config(
                        user(
                            "\"name\": \"o\", \"hash\": \"" + hash + "\", \"role\": \"operator\"")),
                    "relay.json")
                .users())
        .hasSize(1);
    assertThat(run("", "passwd").code).isEqualTo(2);
  }

  @Test
  void durationsAreThoseTheOtherCommandsTake() {
    assertThat(ServeConfig.parseDuration("7d")).hasDays(7);
    assertThat(ServeConfig.parseDuration("PT30S")).hasSeconds(30);
    assertThatThrownBy(() -> ServeConfig.parseDuration("-5s"))
        .hasMessageContaining("is not a duration");
  }

  private static void assertRefused(Path dir, String json, String message) throws Exception {
    Path file = Files.writeString(dir.resolve("relay.json"), json);
    // No database is named and none is reachable: a config error comes before any connection.
    Run r =
        run(
            null,
            "serve",
            "--config",
            file.toString(),
            "--jdbc-url",
            "jdbc:postgresql://127.0.0.1:1/none");
    assertThat(r.code).as(r.err).isEqualTo(2);
    assertThat(r.err).contains(message).contains("relay.json");
  }

  private record Run(int code, String out, String err) {}

  private static Run run(String stdin, String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    ServeMain main =
        new ServeMain(
            new ByteArrayInputStream((stdin == null ? "" : stdin).getBytes(StandardCharsets.UTF_8)),
            new PrintStream(out, true, StandardCharsets.UTF_8));
    int code = main.run(new PrintStream(err, true, StandardCharsets.UTF_8), args);
    return new Run(
        code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }
}
