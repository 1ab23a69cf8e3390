package dev.relay.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.relay.spring.autoconfigure.RelayBootVersionCheck.UnsupportedBootException;
import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.bootstrap.DefaultBootstrapContext;
import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.context.ApplicationListener;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.io.support.SpringFactoriesLoader;

/**
 * The starter refuses Spring Boot older than 4.0 as soon as the environment is prepared, before any
 * bean definition, with one message naming the cause and the fix: by the version check itself, by
 * the listener given a fake version, and by a real Boot 3.5.7 {@code SpringApplication} in an
 * isolated class loader (when Boot 3.5.7's jars are in the local Maven repository).
 */
class BootVersionCheckTest {
  private static final String REFUSAL =
      "Relay's starter needs Spring Boot 4.0 or later; this application runs Spring Boot 3.5.7."
          + " Upgrade the application to Spring Boot 4";

  @Test
  void bootBelowFourIsRefusedNamingTheVersionAndWhatToDo() {
    assertThat(RelayBootVersionCheck.problem("3.5.7")).startsWith(REFUSAL);
    assertThat(RelayBootVersionCheck.problem("2.7.18")).contains("runs Spring Boot 2.7.18");
  }

  @Test
  void bootFourAndLaterAndAnUnknownVersionPass() {
    assertThat(RelayBootVersionCheck.problem("4.0.7")).isNull();
    assertThat(RelayBootVersionCheck.problem("4.1.0-M1")).isNull();
    assertThat(RelayBootVersionCheck.problem("10.0.0")).isNull();
    assertThat(RelayBootVersionCheck.problem(null)).isNull();
    assertThat(RelayBootVersionCheck.problem("")).isNull();
    assertThat(RelayBootVersionCheck.problem("unknown")).isNull();
    assertThat(RelayBootVersionCheck.problem(SpringBootVersion.getVersion())).isNull();
  }

  @Test
  void theListenerRefusesAFakeOldBootWhenTheEnvironmentIsPrepared() {
    ApplicationEnvironmentPreparedEvent event =
        new ApplicationEnvironmentPreparedEvent(
            new DefaultBootstrapContext(),
            new SpringApplication(),
            new String[0],
            new StandardEnvironment());
    assertThatThrownBy(() -> new RelayBootVersionCheck(() -> "3.5.7").onApplicationEvent(event))
        .isInstanceOf(UnsupportedBootException.class)
        .hasMessageStartingWith(REFUSAL);
    new RelayBootVersionCheck(() -> "4.0.7").onApplicationEvent(event); // passes
  }

  @Test
  void theListenerAndItsReportAreRegisteredInSpringFactoriesAndRunFirst() {
    assertThat(SpringFactoriesLoader.forDefaultResourceLocation().load(ApplicationListener.class))
        .anyMatch(RelayBootVersionCheck.class::isInstance);
    assertThat(new RelayBootVersionCheck().getOrder()).isEqualTo(Integer.MIN_VALUE);
    FailureAnalysis a =
        new RelayBootVersionCheck.Analyzer()
            .analyze(new UnsupportedBootException(RelayBootVersionCheck.problem("3.5.7")));
    assertThat(a.getDescription()).startsWith(REFUSAL);
    assertThat(a.getAction()).contains("Spring Boot 4.0 or later");
  }

  @Test
  void aRealBoot357ApplicationStopsWithTheRefusalBeforeAnyBeanDefinition() throws Exception {
    Path repo = Path.of(System.getProperty("user.home"), ".m2", "repository");
    List<Path> jars =
        List.of(
            repo.resolve("org/springframework/boot/spring-boot/3.5.7/spring-boot-3.5.7.jar"),
            spring(repo, "spring-core"),
            spring(repo, "spring-jcl"),
            spring(repo, "spring-beans"),
            spring(repo, "spring-context"),
            spring(repo, "spring-aop"),
            spring(repo, "spring-expression"),
            micrometer(repo, "micrometer-observation"),
            micrometer(repo, "micrometer-commons"));
    assumeTrue(jars.stream().allMatch(Files::isRegularFile), "Boot 3.5.7's jars in ~/.m2: " + jars);
    List<URL> urls = new ArrayList<>();
    // this module's classes and its META-INF/spring.factories, as an application would have them
    urls.add(RelayBootVersionCheck.class.getProtectionDomain().getCodeSource().getLocation());
    for (Path jar : jars) {
      urls.add(jar.toUri().toURL());
    }
    Thread thread = Thread.currentThread();
    ClassLoader before = thread.getContextClassLoader();
    String logging = System.getProperty("org.springframework.boot.logging.LoggingSystem");
    try (URLClassLoader boot3 =
        new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
      thread.setContextClassLoader(boot3);
      // Boot 3.5.7's logging system would reconfigure this JVM's java.util.logging
      System.setProperty("org.springframework.boot.logging.LoggingSystem", "none");
      Class<?> app = boot3.loadClass(SpringApplication.class.getName());
      assertThat(app.getClassLoader()).isSameAs(boot3);
      assertThat(
              boot3
                  .loadClass(SpringBootVersion.class.getName())
                  .getMethod("getVersion")
                  .invoke(null))
          .isEqualTo("3.5.7");
      Object application = app.getConstructor(Class[].class).newInstance((Object) new Class<?>[0]);
      Class<?> type = boot3.loadClass(WebApplicationType.class.getName());
      app.getMethod("setWebApplicationType", type)
          .invoke(application, type.getField("NONE").get(null));
      assertThatThrownBy(
              () ->
                  app.getMethod("run", String[].class).invoke(application, (Object) new String[0]))
          .isInstanceOf(InvocationTargetException.class)
          .cause()
          .satisfies(
              e -> {
                assertThat(e.getClass().getName())
                    .isEqualTo(UnsupportedBootException.class.getName());
                assertThat(e.getClass().getClassLoader()).isSameAs(boot3);
                assertThat(e).hasMessageStartingWith(REFUSAL);
              });
    } finally {
      thread.setContextClassLoader(before);
      if (logging == null) {
        System.clearProperty("org.springframework.boot.logging.LoggingSystem");
      } else {
        System.setProperty("org.springframework.boot.logging.LoggingSystem", logging);
      }
    }
  }

  private static Path spring(Path repo, String artifact) {
    return repo.resolve("org/springframework/" + artifact + "/6.2.12/" + artifact + "-6.2.12.jar");
  }

  private static Path micrometer(Path repo, String artifact) {
    return repo.resolve("io/micrometer/" + artifact + "/1.15.5/" + artifact + "-1.15.5.jar");
  }
}
