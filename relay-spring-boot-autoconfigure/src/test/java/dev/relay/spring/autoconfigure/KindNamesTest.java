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
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.support.GenericApplicationContext;

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

  @Test
  void aKindBootWouldRenameStopsStartUpNamingThePropertyAndTheBrackets(
      TestDatabase db, @TempDir Path dir, CapturedOutput output) throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("application.properties"), "relay.kinds.mail\\:v2.max-attempts=3\n");
    String report = refusal(db, file, output);
    assertThat(report)
        .contains("relay.kinds.mail:v2.max-attempts")
        .contains("would bind it as kind 'mailv2'")
        .contains("write the kind in brackets: relay.kinds.[mail:v2].max-attempts")
        .contains("relay.kinds.[mail\\:v2].max-attempts");
  }

  @Test
  void aKindWithADotOutsideBracketsStopsStartUpNamingTheBrackets(
      TestDatabase db, @TempDir Path dir, CapturedOutput output) throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("application.properties"), "relay.kinds.audit.note.max-attempts=4\n");
    assertThat(refusal(db, file, output))
        .contains("relay.kinds.audit.note.max-attempts")
        .contains("write the kind in brackets: relay.kinds.[audit.note].max-attempts");
  }

  @Test
  void aNameCoreRefusesStopsStartUpEvenInBrackets(
      TestDatabase db, @TempDir Path dir, CapturedOutput output) throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("application.properties"), "relay.kinds.[bad\\ kind!].max-attempts=4\n");
    assertThat(refusal(db, file, output))
        .contains("relay.kinds.[bad kind!].max-attempts")
        .contains("is not a kind relay accepts: kind 'bad kind!' must be 1-100 characters");
  }

  @Test
  void twoKindsBootCannotTellApartStopStartUp(
      TestDatabase db, @TempDir Path dir, CapturedOutput output) throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("application.properties"),
            "relay.kinds.a_b.max-attempts=4\nrelay.kinds.ab.max-attempts=5\n");
    assertThat(refusal(db, file, output))
        .contains("does not tell kind")
        .contains("write the kind in brackets");
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
    DataSource application = db.newDataSource("application", 2);
    SpringApplication app = new SpringApplication(App.class);
    app.setWebApplicationType(WebApplicationType.NONE);
    app.addInitializers(
        c ->
            ((GenericApplicationContext) c)
                .registerBean("dataSource", DataSource.class, () -> application));
    return app.run(args.toArray(String[]::new));
  }

  private static String refusal(TestDatabase db, Path file, CapturedOutput output) {
    assertThatThrownBy(() -> start(db, file).close()).isNotNull();
    String out = output.getAll();
    assertThat(out).contains("APPLICATION FAILED TO START");
    return out.substring(out.lastIndexOf("APPLICATION FAILED TO START"));
  }
}
