package dev.relay.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Relay;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * The configuration of {@code relay serve}: an {@code application.yml} of {@code relay.*}
 * properties, or the JSON file of earlier releases translated to them; {@code --print-config}; and
 * the refusals of a bad configuration: exit code 2 naming the property (and the JSON key), before
 * anything starts or connects (the database named is unreachable: reaching it would be exit 3). And
 * {@code relay passwd}.
 */
class ServeCommandTest {
  private static final String HASH = BCrypt.hashpw("pw", BCrypt.gensalt(4));
  private static final String UNREACHABLE = "jdbc:postgresql://127.0.0.1:1/none";

  @TempDir Path dir;

  @Nested
  class Yaml {
    private static final String MINIMAL =
        """
        relay:
          kinds:
            tick:
              handler: log
          console:
            enabled: false
        """;

    @Test
    void printConfigShowsEveryEffectiveSettingWithSecretsMasked() throws Exception {
      Run r =
          printConfig(
              yaml(
                  """
                  server:
                    address: 0.0.0.0
                    port: 8081
                  spring:
                    datasource:
                      url: jdbc:postgresql://db:5432/app?user=relay&password=hunter2
                  relay:
                    concurrency: 3
                    queues: [default, mail]
                    maintenance:
                      work-retention: 7d
                    kinds:
                      mail:
                        handler: http
                        url: http://127.0.0.1:8025/mail
                        milestone: queued
                        max-running: 2
                      tick: {handler: log}
                    schedules:
                      pulse: {kind: tick, every: PT30S}
                    console:
                      users:
                        - {name: olga, hash: '%s', role: operator}
                  """
                      .formatted(HASH)));
      assertThat(r.code).as(r.err).isZero();
      assertThat(r.err).isEmpty();
      assertThat(r.out.lines())
          .contains(
              "server.address=0.0.0.0",
              "server.port=8081",
              "relay.concurrency=3",
              "relay.queues=default,mail",
              "relay.lease=1m",
              "relay.maintenance.work-retention=7d",
              "relay.kinds.mail.handler=http",
              "relay.kinds.mail.url=http://127.0.0.1:8025/mail",
              "relay.kinds.mail.milestone=queued",
              "relay.kinds.mail.max-running=2",
              "relay.kinds.mail.max-attempts=25",
              "relay.kinds.tick.handler=log",
              "relay.kinds.tick.dedup-horizon=1d",
              "relay.schedules.pulse.every=30s",
              "relay.console.enabled=true",
              "relay.console.users[0].name=olga",
              "relay.console.users[0].hash=******",
              "relay.console.users[0].role=operator",
              "spring.datasource.url=jdbc:postgresql://db:5432/app?user=relay&password=******");
      assertThat(r.out).doesNotContain(HASH).doesNotContain("hunter2");
      assertThat(r.out.lines()).noneMatch(l -> l.startsWith("relay.kinds.tick.url"));
    }

    @Test
    void aBadValueIsExitTwoNamingThePropertyItsValueAndWhereItWasGiven() throws Exception {
      assertRefused(
          yaml(MINIMAL + "  concurrency: many\n"),
          "relay.concurrency=many (",
          "application.yml",
          "must be an integer");
      assertRefused(
          yaml(MINIMAL.replace("handler: log", "handler: smtp")),
          "relay.kinds.tick.handler=smtp",
          "must be one of log, http");
      assertRefused(
          yaml(MINIMAL.replace("handler: log", "max-attempts: 0")),
          "relay.kinds.tick.max-attempts");
      assertRefused(yaml(MINIMAL + "  lease: 5ms\n"), "relay.lease=5ms");
      assertRefused(
          yaml(MINIMAL.replace("handler: log", "handler: http")),
          "relay.kinds.tick.url",
          "handler http needs url");
      assertRefused(
          yaml(
              MINIMAL
                  .replace(
                      "handler: log", "{handler: http, url: 'http://h/x', connect-timeout: 2h}")
                  .replace("tick:\n      {", "tick: {")),
          "relay.kinds.tick.connect-timeout");
      assertRefused(
          yaml(MINIMAL.replace("handler: log", "rate-limit: 5")), "relay.kinds.tick.rate-interval");
      assertRefused(
          yaml(MINIMAL + "  maintenance:\n    interval: 0s\n"), "relay.maintenance.interval=0s");
      assertRefused(
          yaml(MINIMAL + "  schedules:\n    n: {kind: tick, cron: '61 * * * *', zone: UTC}\n"),
          "relay.schedules.n.cron");
      assertRefused(yaml(MINIMAL + "server:\n  port: 70000\n"), "server.port", "0-65535");
      assertRefused(yaml(MINIMAL + "server:\n  address: ''\n"), "server.address");
    }

    @Test
    void aRelayKeyNothingReadsIsRefusedNotIgnored() throws Exception {
      assertRefused(
          yaml(MINIMAL.replace("handler: log", "max-attemps: 3")),
          "relay.kinds.tick.max-attemps=3",
          "is not a relay serve setting");
      assertRefused(yaml(MINIMAL + "  concurency: 3\n"), "relay.concurency");
    }

    @Test
    void anHttpSettingOfALogKindIsRefusedNamingItAndTheHandler() throws Exception {
      // It binds, so the check for keys nothing binds let it through; the log handler never
      // reads it, and the work it meant to send would be logged as done.
      String logWithUrl = MINIMAL.replace("handler: log", "{handler: log, url: 'http://x'}");
      logWithUrl = logWithUrl.replace("tick:\n      {", "tick: {");
      assertRefused(
          yaml(logWithUrl),
          "relay.kinds.tick.url=http://x (",
          "application.yml",
          "is read by handler http only, and this kind's handler is log: set"
              + " relay.kinds.tick.handler=http, or remove it");
      Run printed = printConfig(yaml(logWithUrl));
      assertThat(printed.code).as(printed.err).isEqualTo(2);
      assertThat(printed.err).contains("relay.kinds.tick.url=http://x (");
      // A kind without handler is log too; every http setting counts, under any kind name.
      assertRefused(
          yaml(MINIMAL.replace("handler: log", "milestone: queued")),
          "relay.kinds.tick.milestone=queued",
          "this kind's handler is log");
      assertRefused(
          yaml(MINIMAL.replace("handler: log", "connect-timeout: 2s")),
          "relay.kinds.tick.connect-timeout=2s");
      assertRefused(
          yaml(MINIMAL.replace("tick:", "\"[mail:v2]\":").replace("handler: log", "fencing: none")),
          "relay.kinds.[mail:v2].fencing=none",
          "set relay.kinds.[mail:v2].handler=http");
      // The JSON config of earlier releases never read them either; its translation leaves them
      // out (operations.md), so it starts as it did.
      Run json =
          printConfig(
              json(
                  "{\"kinds\": {\"k\": {\"handler\": \"log\", \"url\": \"http://x\"}},"
                      + " \"console\": {\"enabled\": false}}"));
      assertThat(json.code).as(json.err).isZero();
      assertThat(json.out.lines()).contains("relay.kinds.k.handler=log");
      assertThat(json.out).doesNotContain("http://x");
    }

    @Test
    void aScheduleOfAKindServeDoesNotHandleIsAWarningAtStartAndInPrintConfig() throws Exception {
      Path file = yaml(MINIMAL + "  schedules:\n    s: {kind: nokind, every: 5m}\n");
      String warning = "relay serve: warning: " + file + ": relay.schedules.s.kind=nokind (";
      String why =
          ": kind nokind has no handler in this serve (its kinds: tick): its slots wait as ready"
              + " work until another process that handles nokind claims them; to handle them"
              + " here, give relay.kinds.nokind.handler (log or http)";

      // Not refused: another process (an application with the starter) may handle the kind.
      Run printed = printConfig(file);
      assertThat(printed.code).as(printed.err).isZero();
      assertThat(printed.out.lines()).contains("relay.schedules.s.kind=nokind");
      assertThat(printed.err.lines())
          .singleElement(InstanceOfAssertFactories.STRING)
          .startsWith(warning)
          .contains("application.yml")
          .endsWith(why);

      // A start says it before it connects (the database is unreachable: exit 3).
      Run started = run(null, "serve", "--config", file.toString(), "--jdbc-url", UNREACHABLE);
      assertThat(started.code).as(started.err).isEqualTo(3);
      assertThat(started.err.lines().findFirst())
          .hasValueSatisfying(l -> assertThat(l).startsWith(warning).endsWith(why));

      // A schedule of a kind serve handles warns of nothing.
      Run handled = printConfig(yaml(MINIMAL + "  schedules:\n    s: {kind: tick, every: 5m}\n"));
      assertThat(handled.code).as(handled.err).isZero();
      assertThat(handled.err).isEmpty();
    }

    @Test
    void theConsoleNeedsUsersWithHashesOrToBeTurnedOff() throws Exception {
      String users = "relay:\n  kinds: {tick: {handler: log}}\n  console:\n    users:\n";
      assertRefused(
          yaml("relay:\n  kinds: {tick: {handler: log}}\n"),
          "relay.console.users",
          "relay.console.enabled=false");
      assertRefused(
          yaml(users + "      - {name: olga, hash: hunter2, role: operator}\n"),
          "relay.console.users[0].hash=******",
          "not a bcrypt hash");
      assertRefused(
          yaml(users + "      - {name: olga, password: hunter2, role: operator}\n"),
          "relay.console.users[0].password=******",
          "not accepted");
      assertRefused(
          yaml(users + "      - {name: olga, hash: '" + HASH + "', role: admin}\n"),
          "relay.console.users[0].role=admin",
          "must be one of viewer, operator");
      assertRefused(
          yaml(users + "      - {name: olga, hash: '" + HASH + "'}\n"),
          "relay.console.users[0].role",
          "is missing");
      assertRefused(
          yaml(
              users
                  + "      - {name: olga, hash: '"
                  + HASH
                  + "', role: viewer}\n      - {name: olga, hash: '"
                  + HASH
                  + "', role: viewer}\n"),
          "relay.console.users[1].name=olga",
          "given twice");
      assertRefused(
          yaml(
              "relay:\n  kinds: {tick: {handler: log}}\n  console:\n    enabled: false\n"
                  + "    users:\n      - {name: olga, hash: '"
                  + HASH
                  + "', role: viewer}\n"),
          "relay.console.enabled");
    }

    @Test
    void badConsoleSettingsAreExitTwoNamingThePropertyBeforeAnythingStarts() throws Exception {
      String withUsers =
          "relay:\n  kinds: {tick: {handler: log}}\n  console:\n    users:\n"
              + "      - {name: olga, hash: '"
              + HASH
              + "', role: viewer}\n";
      assertRefused(
          yaml(withUsers + "    path: relay\n"), "relay.console.path=relay", "must start with /");
      assertRefused(yaml(withUsers + "    path: /relay/\n"), "relay.console.path=/relay/");
      assertRefused(
          yaml(withUsers + "    page-size: 0\n"), "relay.console.page-size=0", "1 and 1000");
      assertRefused(yaml(withUsers + "    refresh: 10ms\n"), "relay.console.refresh");
    }

    @Test
    void theReadmesServeConfigurationIsAcceptedAsWritten() throws Exception {
      String readme = Files.readString(Path.of("..", "README.md"));
      int section = readme.indexOf("A `serve` configuration is an `application.yml`");
      assertThat(section).as("the README's serve configuration section").isPositive();
      int start = readme.indexOf("```yaml\n", section) + "```yaml\n".length();
      String block = readme.substring(start, readme.indexOf("```", start));
      assertThat(block).contains("<relay passwd prints it>");

      Run r = printConfig(yaml(block.replace("<relay passwd prints it>", HASH)));

      assertThat(r.code).as(r.err).isZero();
      assertThat(r.out.lines())
          .contains(
              "relay.concurrency=8",
              "relay.maintenance.work-retention=7d",
              "relay.kinds.order_received.handler=http",
              "relay.kinds.order_received.url=http://127.0.0.1:8025/mail",
              "relay.kinds.order_received.max-attempts=8",
              "relay.kinds.audit_note.handler=log",
              "relay.console.users[0].name=olga",
              "relay.console.users[0].role=operator");
    }

    @Test
    void everyKindNameEnqueueAcceptsBindsInBracketsAndPrintsAsAValidPropertiesLine()
        throws Exception {
      Run r =
          printConfig(
              yaml(
                  """
                  relay:
                    kinds:
                      "[mail:v2]": {handler: log, max-attempts: 3}
                      "[audit.note]": {handler: log}
                      a_b-c: {handler: log}
                    console:
                      enabled: false
                  """));
      assertThat(r.code).as(r.err).isZero();
      assertThat(r.out.lines())
          .contains(
              "relay.kinds.[mail\\:v2].handler=log",
              "relay.kinds.[mail\\:v2].max-attempts=3",
              "relay.kinds.[audit.note].handler=log",
              "relay.kinds.a_b-c.handler=log");
      // what it prints is an application.properties that configures the same serve
      Properties read = new Properties();
      read.load(new StringReader(r.out));
      assertThat(read)
          .containsEntry("relay.kinds.[mail:v2].handler", "log")
          .containsEntry("relay.kinds.[mail:v2].max-attempts", "3");
      Path again = Files.writeString(dir.resolve("again.properties"), r.out);
      Run reprinted = printConfig(again);
      assertThat(reprinted.code).as(reprinted.err).isZero();
      assertThat(reprinted.out.lines().skip(1)).isEqualTo(r.out.lines().skip(1).toList());
      // the JSON config of earlier releases, which named kinds as they are, binds them too
      Run json =
          printConfig(
              Files.writeString(
                  dir.resolve("relay.json"),
                  "{\"kinds\": {\"mail:v2\": {}}, \"console\": {\"enabled\": false}}"));
      assertThat(json.code).as(json.err).isZero();
      assertThat(json.out.lines()).contains("relay.kinds.[mail\\:v2].handler=log");
    }

    @Test
    void aKindBootWouldBindUnderAnotherNameIsExitTwoNamingTheFix() throws Exception {
      String off = "  console:\n    enabled: false\n";
      assertRefused(
          yaml("relay:\n  kinds:\n    \"mail:v2\": {handler: log}\n" + off),
          "relay.kinds.mail:v2.handler=log (",
          "would bind it as kind 'mailv2'",
          "write the kind in brackets: relay.kinds.[mail:v2].handler",
          "relay.kinds.[mail\\:v2].handler");
      assertRefused(
          yaml("relay:\n  kinds:\n    \"audit.note\": {handler: log}\n" + off),
          "relay.kinds.audit.note.handler=log (",
          "write the kind in brackets: relay.kinds.[audit.note].handler");
      assertRefused(
          yaml("relay:\n  kinds:\n    \"bad kind!\": {handler: log}\n" + off),
          "relay.kinds.bad kind!.handler=log (",
          "is not a kind relay accepts: kind 'bad kind!' must be 1-100 characters");
      assertRefused(
          yaml("relay:\n  kinds:\n    \"[bad kind!]\": {handler: log}\n" + off),
          "is not a kind relay accepts");
      assertRefused(
          yaml("relay:\n  kinds:\n    \"[" + "k".repeat(101) + "]\": {handler: log}\n" + off),
          "is not a kind relay accepts");
      assertRefused(
          yaml("relay:\n  kinds:\n    Mail: {handler: log}\n    mail: {handler: log}\n" + off),
          "does not tell kind");
      Path file =
          Files.writeString(
              dir.resolve("serve.properties"),
              "relay.kinds.mail\\:v2.handler=log\nrelay.console.enabled=false\n");
      assertRefused(file, "relay.kinds.mail:v2.handler=log (", "relay.kinds.[mail\\:v2].handler");
    }

    @Test
    void propertiesFilesAreReadToo() throws Exception {
      Path file =
          Files.writeString(
              dir.resolve("serve.properties"),
              "relay.kinds.tick.handler=log\nrelay.console.enabled=false\nrelay.poll-interval=250ms\n");
      Run r = run(null, "serve", "--config", file.toString(), "--print-config");
      assertThat(r.code).as(r.err).isZero();
      assertThat(r.out.lines())
          .contains("relay.poll-interval=250ms", "relay.console.enabled=false");
    }

    @Test
    void commandLineOptionsOverrideTheFile() throws Exception {
      Run r =
          run(
              null,
              "serve",
              "--config",
              yaml(MINIMAL + "  schema: from_file\nserver:\n  port: 1234\n").toString(),
              "--port",
              "0",
              "--worker-id",
              "w-1",
              "--print-config");
      assertThat(r.code).as(r.err).isZero();
      assertThat(r.out.lines())
          .contains("server.port=0", "relay.worker-id=w-1", "relay.schema=from_file");
      Run bad =
          run(
              null,
              "serve",
              "--config",
              yaml(MINIMAL).toString(),
              "--maintenance-interval",
              "soon",
              "--print-config");
      assertThat(bad.code).isEqualTo(2);
      assertThat(bad.err)
          .contains("relay.maintenance.interval=soon (option --maintenance-interval)");
    }
  }

  @Nested
  class Json {
    private static final String KINDS = "\"kinds\": {\"k\": {\"handler\": \"log\"}}";

    private static String config(String more) {
      String console = more.contains("\"console\"") ? "" : ", \"console\": {\"enabled\": false}";
      return "{" + KINDS + console + more + "}";
    }

    private static String user(String fields) {
      return ", \"console\": {\"users\": [{" + fields + "}]}";
    }

    @Test
    void isTranslatedToTheSamePropertiesAndWarnsNamingThemForEachKey() throws Exception {
      String json =
          "{\"queues\": [\"default\", \"mail\"], \"concurrency\": 3, \"poll_interval\": \"2s\","
              + " \"http_port\": 9500, \"retention\": {\"work\": \"7d\"},"
              + " \"kinds\": {\"k\": {\"handler\": \"log\", \"max_running\": 2,"
              + " \"max_running_per_group\": 1, \"rate_limit\": 50, \"rate_interval\": \"10s\"},"
              + " \"mail\": {\"handler\": \"http\", \"url\": \"http://127.0.0.1:8025/mail\","
              + " \"receiver_ref_field\": \"email_id\", \"milestone\": \"queued\"}},"
              + " \"schedules\": {\"pulse\": {\"kind\": \"k\", \"every\": \"5m\","
              + " \"missed\": \"each 1h\"}},"
              + " \"console\": {\"users\": [{\"name\": \"olga\", \"hash\": \""
              + HASH
              + "\", \"role\": \"viewer\"}]}}";
      Run r = printConfig(Files.writeString(dir.resolve("relay.json"), json));
      assertThat(r.code).as(r.err).isZero();
      assertThat(r.err)
          .contains("relay.json is a JSON config, read for one more release")
          .contains("poll_interval is now relay.poll-interval")
          .contains("http_port is now server.port")
          .contains("retention.work is now relay.maintenance.work-retention")
          .contains("kinds.k.max_running_per_group is now relay.kinds.k.max-running-per-group")
          .contains("kinds.mail.receiver_ref_field is now relay.kinds.mail.receiver-ref-field")
          .contains("schedules.pulse.missed is now relay.schedules.pulse.missed")
          .contains("console.users[0].hash is now relay.console.users[0].hash");
      assertThat(r.out.lines())
          .contains(
              "server.address=127.0.0.1",
              "server.port=9500",
              "relay.queues=default,mail",
              "relay.kinds.k.max-running=2",
              "relay.kinds.k.rate-interval=10s",
              "relay.kinds.mail.milestone=queued",
              "relay.schedules.pulse.missed=each 1h",
              "relay.console.users[0].role=viewer");

      // The printed properties, as a file, are the same settings: nothing was lost on the way.
      List<String> printed = r.out.lines().filter(l -> !l.startsWith("#")).toList();
      Path properties =
          Files.writeString(
              dir.resolve("application.properties"),
              String.join("\n", printed).replace("******", HASH) + "\n");
      Run again = printConfig(properties);
      assertThat(again.code).as(again.err).isZero();
      assertThat(again.err).isEmpty();
      assertThat(again.out.lines().filter(l -> !l.startsWith("#")))
          .containsExactlyElementsOf(printed);
    }

    @Test
    void aConfigWithoutTheJsonExtensionIsRecognisedByItsContent() throws Exception {
      Run r = printConfig(Files.writeString(dir.resolve("relay.conf"), config("")));
      assertThat(r.code).as(r.err).isZero();
      assertThat(r.err).contains("is a JSON config");
      assertThat(r.out.lines()).contains("relay.kinds.k.handler=log");
    }

    @Test
    void badConfigsAreRefusedWithExitCodeTwoNamingTheKeyAndItsProperty() throws Exception {
      String ok = "\"name\": \"olga\", \"hash\": \"" + HASH + "\"";
      assertRefused(json(config(", \"prot\": 1")), "unknown field 'prot'");
      assertRefused(
          json(config(user("\"name\": \"olga\", \"role\": \"operator\""))),
          "relay.console.users[0].hash",
          "is missing");
      assertRefused(
          json(config(user("\"name\": \"olga\", \"hash\": \"hunter2\", \"role\": \"operator\""))),
          "relay.console.users[0].hash=****** (console.users[0].hash in",
          "not a bcrypt hash");
      assertRefused(
          json(
              config(
                  user("\"name\": \"olga\", \"password\": \"hunter2\", \"role\": \"operator\""))),
          "users[0]: password is not accepted");
      assertRefused(
          json(config(user(ok + ", \"role\": \"admin\""))),
          "relay.console.users[0].role=admin (console.users[0].role in");
      assertRefused(
          json(config(user(ok + ", \"role\": \"viewer\", \"mail\": 1"))), "unknown field 'mail'");
      assertRefused(json(config(", \"console\": {\"users\": []}")), "relay.console.users");
      assertRefused(json(config(", \"bind\": \"\"")), "server.address", "(bind in");
      assertRefused(json(config(", \"port\": 70000")), "server.port=70000 (port in", "0-65535");
      assertRefused(
          json("{\"kinds\": {\"k\": {\"handler\": \"smtp\"}}, \"console\": {\"enabled\": false}}"),
          "relay.kinds.k.handler=smtp (kinds.k.handler in",
          "must be one of log, http");
      assertRefused(json("{" + KINDS + "}"), "relay.console.users", "relay.console.enabled=false");
      assertRefused(
          json(config(", \"console\": {\"enabled\": \"maybe\"}")), "relay.console.enabled=maybe");
      assertRefused(
          json("{\"console\": {\"enabled\": false}}"), "kinds must name at least one kind");
      assertRefused(json(config(", \"queues\": []")), "queues must be a non-empty array");
    }

    @Test
    void badLimitsAndTimeoutsAreRefusedNamingTheKey() throws Exception {
      assertRefused(
          json(limits("\"max_running\": 0")),
          "relay.kinds.k.max-running=0 (kinds.k.max_running in");
      assertRefused(
          json(limits("\"max_running_per_group\": 1000001")),
          "relay.kinds.k.max-running-per-group=1000001");
      assertRefused(
          json(limits("\"rate_limit\": \"many\"")),
          "relay.kinds.k.rate-limit=many",
          "must be an integer");
      assertRefused(json(limits("\"rate_limit\": 5")), "relay.kinds.k.rate-interval");
      assertRefused(
          json(limits("\"rate_limit\": 5, \"rate_interval\": \"500ms\"")),
          "relay.kinds.k.rate-interval");
      String http = "\"handler\": \"http\", \"url\": \"http://127.0.0.1:8025/mail\", ";
      assertRefused(
          json(limits(http + "\"connect_timeout\": \"2h\"")), "relay.kinds.k.connect-timeout");
      assertRefused(
          json(limits(http + "\"request_timeout\": \"30d\"")), "relay.kinds.k.request-timeout");
      assertRefused(json(limits(http + "\"fencing\": \"maybe\"")), "relay.kinds.k.fencing=maybe");
    }

    @Test
    void settingsTheRuntimeRefusesAreUsageErrorsNamingTheProperty() throws Exception {
      // Checked by Relay's builder, not by the config reader: still refused before any connection.
      assertRefused(
          json(
              "{\"lease\": \"5s\", \"kinds\": {\"k\": {\"handler\": \"log\","
                  + " \"dedup_horizon\": \"2s\", \"max_elapsed\": \"1s\"}},"
                  + " \"console\": {\"enabled\": false}}"),
          "relay.kinds.k.dedup-horizon=2s (kinds.k.dedup_horizon in");
      assertRefused(json(limits("\"max_attempts\": 0")), "relay.kinds.k.max-attempts=0");
    }

    @Test
    void schedulesAreTranslatedAndCheckedAsTheStartersAre() throws Exception {
      String kinds = "\"kinds\": {\"tick\": {}}, \"console\": {\"enabled\": false}";
      Run r =
          printConfig(
              json(
                  "{"
                      + kinds
                      + ", \"schedules\": {\"nightly\": {\"kind\": \"report\", \"cron\":"
                      + " \"30 2 * * *\", \"zone\": \"Europe/Berlin\"},"
                      + " \"quiet\": {\"kind\": \"tick\", \"every\": \"1h\", \"missed\": \"skip\"}}}"));
      assertThat(r.code).as(r.err).isZero();
      // nightly's kind report is not under kinds: a warning, as for an application.yml
      assertThat(r.err).contains("relay.schedules.nightly.kind=report (", "has no handler");
      assertThat(r.out.lines())
          .contains(
              "relay.schedules.nightly.cron=30 2 * * *",
              "relay.schedules.nightly.zone=Europe/Berlin",
              "relay.schedules.quiet.missed=skip");
      String s = "{" + kinds + ", \"schedules\": ";
      assertRefused(
          json(s + "{\"n\": {\"kind\": \"k\", \"cron\": \"61 * * * *\", \"zone\": \"UTC\"}}}"),
          "relay.schedules.n.cron");
      assertRefused(
          json(s + "{\"n\": {\"kind\": \"k\", \"cron\": \"0 * * * *\", \"zone\": \"Mars/Base\"}}}"),
          "relay.schedules.n.zone");
      assertRefused(
          json(s + "{\"n\": {\"kind\": \"k\", \"cron\": \"0 * * * *\"}}}"),
          "relay.schedules.n.zone");
      assertRefused(
          json(s + "{\"n\": {\"kind\": \"k\", \"every\": \"0s\"}}}"), "relay.schedules.n.every");
      assertRefused(
          json(s + "{\"n\": {\"kind\": \"k\", \"every\": \"1m\", \"missed\": \"all\"}}}"),
          "relay.schedules.n.missed=all");
      assertRefused(
          json(s + "{\"n\": {\"kind\": \"k\", \"every\": \"1m\", \"when\": 1}}}"),
          "unknown field 'when'");
    }

    private String limits(String fields) {
      return "{\"kinds\": {\"k\": {\"handler\": \"log\", "
          + fields
          + "}}, \"console\": {\"enabled\": false}}";
    }
  }

  /**
   * A database URL that is not PostgreSQL's is a usage error naming where it was given, as for the
   * other relay commands, never "database unavailable"; no message shows its password.
   */
  @Nested
  class DatabaseUrl {
    private static final String CONFIG =
        "relay:\n  kinds: {tick: {handler: log}}\n  console: {enabled: false}\n";

    @Test
    void aNonPostgresqlJdbcUrlOptionIsExitTwoNamingTheOptionWithThePasswordMasked()
        throws Exception {
      Path file = yaml(CONFIG);
      for (String url :
          List.of(
              "mysql://olga:SECRETPW@db/shop",
              "jdbc:postgres://db:5432/shop?user=olga&password=SECRETPW",
              "jdbc:mysql://db/shop?password=SECRETPW&ssl=true")) {
        Run r = run(null, "serve", "--config", file.toString(), "--jdbc-url", url);
        assertThat(r.code).as(r.toString()).isEqualTo(2);
        assertThat(r.err.lines().findFirst())
            .as(r.toString())
            .hasValueSatisfying(
                line ->
                    assertThat(line)
                        .startsWith(
                            "relay serve: --jdbc-url must be a PostgreSQL JDBC URL like"
                                + " jdbc:postgresql://host:5432/db?user=u, was '")
                        .contains("******"));
        assertThat(r.err).as(r.toString()).contains("see relay help serve");
        assertThat(r.out + r.err)
            .as(r.toString())
            .doesNotContain("SECRETPW")
            .doesNotContain("database unavailable")
            .doesNotContain("No suitable driver");
      }
    }

    @Test
    void theConfigFilesUrlIsCheckedToo() throws Exception {
      Path file =
          yaml(
              CONFIG
                  + "spring:\n  datasource:\n"
                  + "    url: jdbc:postgres://db/shop?user=olga&password=SECRETPW\n");
      Run r = run(null, "serve", "--config", file.toString());
      assertThat(r.code).as(r.toString()).isEqualTo(2);
      assertThat(r.err)
          .as(r.toString())
          .contains("application.yml: spring.datasource.url=jdbc:postgres://db/shop?user=olga")
          .contains("must be a PostgreSQL JDBC URL like jdbc:postgresql://host:5432/db?user=u")
          .doesNotContain("SECRETPW");
      Run printed = printConfig(file);
      assertThat(printed.code).as(printed.toString()).isEqualTo(2);
      assertThat(printed.out + printed.err).doesNotContain("SECRETPW");
    }

    @Test
    void aPostgresqlUrlOptionOverridesABadOneInTheFile() throws Exception {
      Path file = yaml(CONFIG + "spring:\n  datasource:\n    url: mysql://db/shop\n");
      Run r =
          run(
              null,
              "serve",
              "--config",
              file.toString(),
              "--jdbc-url",
              "jdbc:postgresql://db/shop?password=SECRETPW",
              "--print-config");
      assertThat(r.code).as(r.toString()).isZero();
      assertThat(r.out.lines())
          .contains("spring.datasource.url=jdbc:postgresql://db/shop?password=******");
    }

    @Test
    void aNonPostgresqlDirectJdbcUrlIsExitTwoNamingThatOption() throws Exception {
      Run r =
          run(
              null,
              "serve",
              "--config",
              yaml(CONFIG).toString(),
              "--jdbc-url",
              UNREACHABLE,
              "--direct-jdbc-url",
              "postgres://olga:SECRETPW@db:5432/shop");
      assertThat(r.code).as(r.toString()).isEqualTo(2);
      assertThat(r.err)
          .as(r.toString())
          .startsWith("relay serve: --direct-jdbc-url must be a PostgreSQL JDBC URL")
          .contains("postgres://olga:******@db:5432/shop")
          .doesNotContain("SECRETPW");
    }

    /**
     * pgjdbc cannot read {@code //user:password@host}: it logged the URL, password and all, on
     * stderr (java.util.logging), and serve called the database unavailable (exit 3). In a process
     * of its own, as an operator sees it: exit 2 naming the option, masked, no driver line.
     */
    @Test
    void aPostgresqlUrlTheDriverCannotReadIsExitTwoWithNoLineShowingThePassword() throws Exception {
      ServeProcess.Result r =
          ServeProcess.run(
              Map.of(),
              "serve",
              "--config",
              yaml(CONFIG).toString(),
              "--jdbc-url",
              "jdbc:postgresql://olga:SECRETPW@127.0.0.1/shop");
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
      assertThat(r.err())
          .as(r.toString())
          .startsWith(
              "relay serve: --jdbc-url 'jdbc:postgresql://olga:******@127.0.0.1/shop' is not a"
                  + " URL the PostgreSQL driver can read")
          .contains("not before an @")
          .doesNotContain("SECRETPW")
          .doesNotContain("WARNING");
      Run inFile =
          run(
              null,
              "serve",
              "--config",
              yaml(CONFIG + "spring:\n  datasource:\n    url: jdbc:postgresql://db:x/shop\n")
                  .toString());
      assertThat(inFile.code).as(inFile.toString()).isEqualTo(2);
      assertThat(inFile.err)
          .as(inFile.toString())
          .contains("application.yml: spring.datasource.url=jdbc:postgresql://db:x/shop")
          .contains("is not a URL the PostgreSQL driver can read");
    }

    /**
     * A parameter value pgjdbc does not take: {@code sslmode=bogus} was "database unavailable",
     * exit 3. Exit 2 naming the parameter, from the option and the file alike; and a value pgjdbc
     * refuses only as it connects ({@code defaultRowFetchSize=-3}, SQLState 22023) too.
     */
    @Test
    void aUrlParameterTheDriverDoesNotTakeIsExitTwoNamingIt() throws Exception {
      String bad = "jdbc:postgresql://127.0.0.1:1/x?user=u&password=SECRETPW&sslmode=bogus";
      Run option = serveWithUrl(bad);
      assertThat(option.code).as(option.toString()).isEqualTo(2);
      assertThat(option.err)
          .as(option.toString())
          .startsWith(
              "relay serve: --jdbc-url 'jdbc:postgresql://127.0.0.1:1/x?user=u&password=******"
                  + "&sslmode=bogus' has parameter sslmode=bogus, which the PostgreSQL driver does"
                  + " not take: it takes one of disable, allow,")
          .doesNotContain("SECRETPW");
      Path file = yaml(CONFIG + "spring:\n  datasource:\n    url: '" + bad + "'\n");
      for (Run inFile :
          List.of(run(null, "serve", "--config", file.toString()), printConfig(file))) {
        assertThat(inFile.code).as(inFile.toString()).isEqualTo(2);
        assertThat(inFile.err)
            .as(inFile.toString())
            .contains("application.yml: spring.datasource.url=jdbc:postgresql://127.0.0.1:1/x")
            .contains("has parameter sslmode=bogus, which the PostgreSQL driver does not take")
            .doesNotContain("SECRETPW");
      }
      Run connecting =
          serveWithUrl("jdbc:postgresql://127.0.0.1:1/x?password=SECRETPW&defaultRowFetchSize=-3");
      assertThat(connecting.code).as(connecting.toString()).isEqualTo(2);
      assertThat(connecting.err)
          .as(connecting.toString())
          .startsWith(
              "relay serve: --jdbc-url 'jdbc:postgresql://127.0.0.1:1/x?password=******"
                  + "&defaultRowFetchSize=-3' has a value the PostgreSQL driver or server refuses:"
                  + " Fetch size must be a value greater than or equal to 0.")
          .doesNotContain("database unavailable");
    }

    /** {@code relay serve} of the minimal config with {@code --jdbc-url url}. */
    private Run serveWithUrl(String url) throws Exception {
      return run(null, "serve", "--config", yaml(CONFIG).toString(), "--jdbc-url", url);
    }

    /**
     * An empty URL names a database the shell failed to name ({@code --jdbc-url "$UNSET"}): serve
     * refuses it as the relay commands do, instead of serving an embedded database.
     */
    @Test
    void anEmptyUrlIsAUsageErrorNotTheEmbeddedDatabase() throws Exception {
      Run given = run(null, "serve", "--config", yaml(CONFIG).toString(), "--jdbc-url", " ");
      assertThat(given.code).as(given.toString()).isEqualTo(2);
      assertThat(given.err)
          .as(given.toString())
          .startsWith("relay serve: --jdbc-url is empty: give a PostgreSQL JDBC URL")
          .doesNotContain("embedded PostgreSQL 18 on");
      ServeProcess.Result env =
          ServeProcess.run(
              Map.of("RELAY_JDBC_URL", ""), "serve", "--config", yaml(CONFIG).toString());
      assertThat(env.exitCode()).as(env.toString()).isEqualTo(2);
      assertThat(env.err())
          .as(env.toString())
          .startsWith("relay serve: env RELAY_JDBC_URL is empty")
          .doesNotContain("embedded PostgreSQL 18 on");
    }

    @Test
    void theEnvironmentVariableIsNamedWhenItIsTheBadOne() throws Exception {
      ServeProcess.Result r =
          ServeProcess.run(
              Map.of("RELAY_JDBC_URL", "jdbc:postgres://db/shop?user=olga&password=SECRETPW"),
              "serve",
              "--config",
              yaml(CONFIG).toString());
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
      assertThat(r.err())
          .as(r.toString())
          .startsWith("relay serve: env RELAY_JDBC_URL must be a PostgreSQL JDBC URL")
          .contains("password=******")
          .doesNotContain("SECRETPW");
    }
  }

  /**
   * Spring's placeholders ({@code ${RELAY_DB_PASSWORD}}, operations.md's own example) in any
   * property, {@code spring.*} as well as {@code relay.*}: one that cannot be resolved is exit 2
   * naming the file, the property and the placeholder, at start and with {@code --print-config}
   * alike; one that resolves is checked as its value.
   */
  @Nested
  class Placeholders {
    private static final String CONFIG =
        "relay:\n  kinds: {tick: {handler: log}}\n  console: {enabled: false}\n";

    @Test
    void anUnresolvablePlaceholderInASpringPropertyIsExitTwoNamingItAtStartAndInPrintConfig()
        throws Exception {
      Path file =
          yaml(
              CONFIG
                  + "spring:\n  datasource:\n"
                  + "    url: "
                  + UNREACHABLE
                  + "\n    username: relay\n"
                  + "    password: \"${RELAY_TEST_UNSET_DB_PW}\"\n");
      for (Run r : List.of(run(null, "serve", "--config", file.toString()), printConfig(file))) {
        assertThat(r.code).as(r.toString()).isEqualTo(2);
        assertThat(r.out).as(r.toString()).isEmpty();
        assertThat(r.err.lines().toList())
            .as(r.toString())
            .containsExactly(
                "relay serve: "
                    + file
                    + ": spring.datasource.password=****** (file ["
                    + file
                    + "] - 8:15): placeholder ${RELAY_TEST_UNSET_DB_PW} cannot be resolved: no"
                    + " environment variable, system property or property RELAY_TEST_UNSET_DB_PW"
                    + " is set (give a default after a colon, like"
                    + " ${RELAY_TEST_UNSET_DB_PW:value}, where one fits)",
                "see relay help serve");
      }
    }

    @Test
    void anUnresolvablePlaceholderOfAnyPropertyIsNamedAsSuch() throws Exception {
      assertRefused(
          yaml(CONFIG + "server:\n  port: ${RELAY_TEST_UNSET_PORT}\n"),
          "server.port=${RELAY_TEST_UNSET_PORT} (",
          "placeholder ${RELAY_TEST_UNSET_PORT} cannot be resolved");
      assertRefused(
          yaml(CONFIG + "  concurrency: ${RELAY_TEST_UNSET_CONC}\n"),
          "relay.concurrency=${RELAY_TEST_UNSET_CONC} (",
          "placeholder ${RELAY_TEST_UNSET_CONC} cannot be resolved");
      assertRefused(
          yaml(CONFIG + "management:\n  server:\n    port: ${a:${b:${RELAY_TEST_UNSET_C}}}\n"),
          "management.server.port=${a:${b:${RELAY_TEST_UNSET_C}}} (",
          "placeholder ${RELAY_TEST_UNSET_C} cannot be resolved");
    }

    /** A placeholder with a default, or one naming another property, resolves: no refusal. */
    @Test
    void aPlaceholderThatResolvesIsAccepted() throws Exception {
      Run r =
          printConfig(
              yaml(
                  CONFIG
                      + "  worker-id: ${RELAY_TEST_UNSET_ID:w1}\n"
                      + "spring:\n  datasource:\n"
                      + "    url: "
                      + UNREACHABLE
                      + "\n    username: ${RELAY_TEST_UNSET_USER:relay}\n"
                      + "    password: ${spring.datasource.username}\n"));
      assertThat(r.code).as(r.toString()).isZero();
      assertThat(r.out.lines()).contains("relay.worker-id=w1", "spring.datasource.password=******");
    }

    /**
     * The URL is checked as it resolves: {@code url: ${DB_URL}} with DB_URL set was refused as
     * "must be a PostgreSQL JDBC URL" for its text {@code ${DB_URL}}.
     */
    @Test
    void aUrlFromAnEnvironmentVariableIsCheckedAsItResolves() throws Exception {
      Path file = yaml(CONFIG + "spring:\n  datasource:\n    url: ${RELAY_TEST_DB_URL}\n");
      ServeProcess.Result good =
          printConfigWithUrl(file, "jdbc:postgresql://db/shop?password=SECRETPW");
      assertThat(good.exitCode()).as(good.toString()).isZero();
      assertThat(good.out().lines()).contains("spring.datasource.url=${RELAY_TEST_DB_URL}");
      ServeProcess.Result bad = printConfigWithUrl(file, "jdbc:mysql://db/shop?password=SECRETPW");
      assertThat(bad.exitCode()).as(bad.toString()).isEqualTo(2);
      assertThat(bad.err())
          .as(bad.toString())
          .contains(
              "application.yml: spring.datasource.url=jdbc:mysql://db/shop?password=******"
                  + " (file [")
          .contains("must be a PostgreSQL JDBC URL")
          .doesNotContain("SECRETPW");
    }

    /**
     * {@code --print-config} of {@code file} in a process whose RELAY_TEST_DB_URL is {@code url}.
     */
    private ServeProcess.Result printConfigWithUrl(Path file, String url) throws Exception {
      return ServeProcess.run(
          Map.of("RELAY_TEST_DB_URL", url), "serve", "--config", file.toString(), "--print-config");
    }
  }

  @Test
  void serveHelpListsItsExitCodes() {
    Run r = run(null, "serve", "--help");
    assertThat(r.code).as(r.toString()).isZero();
    String codes = r.out.substring(r.out.indexOf("Exit codes:"));
    assertThat(codes.lines().map(String::strip))
        .as(r.out)
        .anyMatch(l -> l.startsWith(ServeMain.OK + " ") && l.contains("--print-config"))
        .anyMatch(l -> l.startsWith(ServeMain.REFUSED + " ") && l.contains("not migrated"))
        .anyMatch(l -> l.startsWith(ServeMain.USAGE + " ") && l.contains("usage or config error"))
        .anyMatch(
            l ->
                l.startsWith(ServeMain.DATABASE_UNAVAILABLE + " ")
                    && l.contains("database unavailable"));
  }

  @Test
  void everyCommandPrintsRelaysVersion() {
    for (String[] args :
        new String[][] {{"-V"}, {"serve", "-V"}, {"serve", "--version"}, {"passwd", "-V"}}) {
      Run r = run(null, args);
      assertThat(r.code()).as(r.toString()).isZero();
      assertThat(r.out()).as(String.join(" ", args)).isEqualTo("relay " + Relay.version() + "\n");
    }
  }

  @Test
  void aMissingConfigFileIsAUsageError() {
    Run r = run(null, "serve", "--config", dir.resolve("nope.yml").toString());
    assertThat(r.code).isEqualTo(2);
    assertThat(r.err).contains("no such file");
  }

  @Test
  void passwdPrintsABcryptHashThatVerifiesAndTheConfigAccepts() throws Exception {
    Run r = run("correct horse\n", "passwd");
    assertThat(r.code).as(r.err).isZero();
    String hash = r.out.strip();
    assertThat(BCrypt.checkpw("correct horse", hash)).isTrue();
    assertThat(BCrypt.checkpw("wrong horse", hash)).isFalse();
    Run accepted =
        printConfig(
            yaml(
                "relay:\n  kinds: {k: {handler: log}}\n  console:\n    users:\n      - name: o\n        hash: '"
                    + hash
                    + "'\n        role: operator\n"));
    assertThat(accepted.code).as(accepted.err).isZero();
    assertThat(run("", "passwd").code).isEqualTo(2);
  }

  private Path yaml(String text) throws Exception {
    return Files.writeString(dir.resolve("application.yml"), text);
  }

  private Path json(String text) throws Exception {
    return Files.writeString(dir.resolve("relay.json"), text);
  }

  private static Run printConfig(Path file) {
    return run(null, "serve", "--config", file.toString(), "--print-config");
  }

  private static void assertRefused(Path file, String... messages) {
    Run r = run(null, "serve", "--config", file.toString(), "--jdbc-url", UNREACHABLE);
    assertThat(r.code).as(r.err).isEqualTo(2);
    assertThat(r.err).as(r.err).contains(messages).contains(file.getFileName().toString());
    assertThat(r.err.lines()).as(r.err).hasSizeLessThanOrEqualTo(2);
  }

  /** What one {@code relay serve} (or {@code passwd}) run in this JVM printed and returned. */
  record Run(int code, String out, String err) {
    @Override
    public String toString() {
      return "exit " + code + "\n--- stdout\n" + out + "--- stderr\n" + err;
    }
  }

  /** Runs {@code ServeMain} with {@code stdin} and {@code args}; serve itself must not start. */
  static Run run(String stdin, String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    ServeMain main =
        new ServeMain(
            new ByteArrayInputStream((stdin == null ? "" : stdin).getBytes(StandardCharsets.UTF_8)),
            new PrintStream(out, true, StandardCharsets.UTF_8));
    int code = main.run(new PrintStream(err, true, StandardCharsets.UTF_8), args);
    assertThat(main.serving).as("serve must not have started").isNull();
    return new Run(
        code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }
}
