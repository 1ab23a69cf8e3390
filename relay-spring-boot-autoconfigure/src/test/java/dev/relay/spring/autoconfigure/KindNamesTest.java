package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.relay.Handler;
import dev.relay.Outbox;
import dev.relay.Outcome;
import dev.relay.Work;
import dev.relay.spring.RelayHandler;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Kind names under {@code relay.kinds} in a real {@link SpringApplication} reading an {@code
 * application.properties} (YAML goes through the same check: relay-serve's tests): every name
 * {@code relay enqueue} accepts binds to exactly that kind when written as Spring Boot binds it (in
 * brackets where Boot would read another name), and a key Boot would bind under another name, or a
 * name core refuses, stops start-up naming the property and the fix instead of renaming the kind.
 */
@RelayDatabaseTest
@ExtendWith(OutputCaptureExtension.class)
class KindNamesTest {
  /** Handlers for the three kinds, each completing its work. */
  @Configuration(proxyBeanMethods = false)
  @ImportAutoConfiguration(RelayAutoConfiguration.class)
  static class App {
    @Bean
    @RelayHandler(kind = "mail:v2")
    Handler mailV2() {
      return claim -> Outcome.done();
    }

    @Bean
    @RelayHandler(kind = "audit.note")
    Handler auditNote() {
      return claim -> Outcome.done();
    }

    @Bean
    @RelayHandler(kind = "a_b-c")
    Handler abc() {
      return claim -> Outcome.done();
    }
  }

  @Test
  void kindsWithColonDotUnderscoreAndDashBindFromAPropertiesFileToExactlyThoseNames(
      TestDatabase db, @TempDir Path dir) throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("application.properties"),
            """
            relay.kinds.[mail\\:v2].max-attempts=3
            relay.kinds.[audit.note].max-attempts=4
            relay.kinds.a_b-c.max-attempts=5
            """);
    try (ConfigurableApplicationContext context = start(db, file)) {
      RelayProperties p = context.getBean(RelayProperties.class);
      assertThat(p.getKinds()).containsOnlyKeys("mail:v2", "audit.note", "a_b-c");
      assertThat(p.getKinds().get("mail:v2").getMaxAttempts()).isEqualTo(3);
      assertThat(p.getKinds().get("audit.note").getMaxAttempts()).isEqualTo(4);
      assertThat(p.getKinds().get("a_b-c").getMaxAttempts()).isEqualTo(5);
      runsEachKind(db);
    }
  }

  /** An application.properties that must stop start-up, and what the report must say. */
  record Refused(String what, String properties, String... report) {
    @Override
    public String toString() {
      return what;
    }
  }

  static Stream<Refused> refused() {
    return Stream.of(
        new Refused(
            "a kind Boot would bind without its ':'",
            "relay.kinds.mail\\:v2.max-attempts=3",
            "relay.kinds.mail:v2.max-attempts",
            "would bind it as kind 'mailv2'",
            "write the kind in brackets: relay.kinds.[mail:v2].max-attempts",
            "relay.kinds.[mail\\:v2].max-attempts"),
        new Refused(
            "a kind Boot would split at its '.'",
            "relay.kinds.audit.note.max-attempts=4",
            "relay.kinds.audit.note.max-attempts",
            "would bind it as kind 'audit', not 'audit.note'",
            "write the kind in brackets: relay.kinds.[audit.note].max-attempts"),
        new Refused(
            "a name core refuses, even in brackets",
            "relay.kinds.[bad\\ kind!].max-attempts=4",
            "relay.kinds.[bad kind!].max-attempts",
            "is not a kind relay accepts: kind 'bad kind!' must be 1-100 characters"),
        new Refused(
            "two kinds Boot cannot tell apart",
            "relay.kinds.a_b.max-attempts=4\nrelay.kinds.ab.max-attempts=5",
            "does not tell kind",
            "write the kind in brackets"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("refused")
  void aKindBootWouldBindUnderAnotherNameStopsStartUpNamingThePropertyAndTheFix(
      Refused bad, TestDatabase db, @TempDir Path dir, CapturedOutput output) throws Exception {
    Path file = Files.writeString(dir.resolve("application.properties"), bad.properties() + "\n");
    assertThatThrownBy(() -> start(db, file).close()).isNotNull();
    String out = output.getAll();
    assertThat(out).contains("APPLICATION FAILED TO START");
    assertThat(out.substring(out.lastIndexOf("APPLICATION FAILED TO START")))
        .contains(bad.report());
  }

  private static void runsEachKind(TestDatabase db) throws Exception {
    try (Connection c = db.connection()) {
      c.setAutoCommit(false);
      Outbox.builder()
          .schema(db.schema())
          .build()
          .enqueueAll(
              c,
              List.of(
                  Work.of("w-mail", "mail:v2", "{}"),
                  Work.of("w-audit", "audit.note", "{}"),
                  Work.of("w-abc", "a_b-c", "{}")));
      c.commit();
    }
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> db.queryLong("SELECT count(*) FROM {schema}.work WHERE state = 'done'") == 3);
  }

  private static ConfigurableApplicationContext start(TestDatabase db, Path file, String... more) {
    List<String> args = new ArrayList<>();
    args.add("--spring.config.location=file:" + file);
    args.add("--relay.schema=" + db.schema());
    args.add("--relay.poll-interval=200ms");
    args.add("--relay.shutdown-grace=2s");
    args.add("--spring.lifecycle.timeout-per-shutdown-phase=10s");
    args.addAll(List.of(more));
    return Contexts.application(db, App.class).run(args.toArray(String[]::new));
  }
}
