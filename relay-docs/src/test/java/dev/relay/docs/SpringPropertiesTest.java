package dev.relay.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.spring.autoconfigure.RelayProperties;
import dev.relay.spring.autoconfigure.RelayScheduleProperties;
import dev.relay.spring.autoconfigure.RelayStartupCheck;
import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.BindHandler;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.bind.handler.NoUnboundElementsBindHandler;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.core.env.AbstractEnvironment;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.PropertiesPropertySource;

/**
 * Every {@code ```properties} block of {@code docs/spring.md} works when copied into an
 * application's {@code application.properties}: no value carries a comment ({@code .properties}
 * treats {@code #} as a comment only at the start of a line, so {@code relay.migrate=true # ...} is
 * the value {@code "true # ..."}), every {@code relay.*} key is one the starter reads, and the
 * starter's start-up check ({@link RelayStartupCheck}, as the context runs it) accepts the values.
 */
class SpringPropertiesTest {
  private static final String DOC = "docs/spring.md";
  private static final Pattern FENCE = Pattern.compile("^\\s*```properties\\s*$");
  private static final Pattern ANY_FENCE = Pattern.compile("^\\s*```.*$");

  /** A value with a comment after it: whitespace, then {@code #}. */
  private static final Pattern TRAILING_COMMENT = Pattern.compile("\\s#");

  private final Path root = Path.of(System.getProperty("relay.docs.root", "..")).normalize();

  @Test
  void noValueOfAPropertiesBlockCarriesAComment() {
    List<String> failures = new ArrayList<>();
    for (Block block : blocks()) {
      block
          .properties()
          .forEach(
              (key, value) -> {
                if (TRAILING_COMMENT.matcher((String) value).find()) {
                  failures.add(
                      block.where()
                          + ": "
                          + key
                          + " would be '"
                          + value
                          + "': a .properties file reads # as a comment only at the start of a"
                          + " line; put the comment on a line of its own");
                }
              });
    }
    assertThat(failures).as("values with a comment in " + DOC).isEmpty();
  }

  @Test
  void everyRelayKeyOfAPropertiesBlockIsOneTheStarterBinds() {
    List<String> failures = new ArrayList<>();
    for (Block block : blocks()) {
      Predicate<String> schedule =
          k -> k.startsWith("relay.schedules.") || k.startsWith("relay.scheduler-");
      try {
        strictly(block, k -> k.startsWith("relay.") && !schedule.test(k), RelayProperties.class);
        strictly(block, schedule, RelayScheduleProperties.class);
      } catch (RuntimeException e) {
        failures.add(block.where() + ": " + describe(e));
      }
    }
    assertThat(failures).as("relay.* keys of " + DOC + " that do not bind").isEmpty();
  }

  @Test
  void theStartersCheckAcceptsEveryPropertiesBlock() {
    List<String> failures = new ArrayList<>();
    for (Block block : blocks()) {
      ConfigurableEnvironment env = environment(block, k -> true);
      try {
        RelayProperties bound = Binder.get(env).bindOrCreate("relay", RelayProperties.class);
        RelayStartupCheck.check(env, bound.getKinds().keySet());
      } catch (RuntimeException e) {
        failures.add(block.where() + ": " + describe(e));
      }
    }
    assertThat(failures).as("properties blocks of " + DOC + " the starter refuses").isEmpty();
  }

  @Test
  void aTrailingCommentIsCaughtAsPartOfTheValue() {
    Block copied = block("relay.migrate=true   # false: Flyway runs the scripts\n");
    String value = copied.properties().getProperty("relay.migrate");

    assertThat(TRAILING_COMMENT.matcher(value).find()).isTrue();
    assertThat(TRAILING_COMMENT.matcher("each 1h").find()).isFalse();
  }

  /** Binds the block's keys that {@code keys} selects to {@code type}, refusing any it leaves. */
  private static void strictly(Block block, Predicate<String> keys, Class<?> type) {
    Binder.get(environment(block, keys))
        .bind("relay", Bindable.of(type), new NoUnboundElementsBindHandler(BindHandler.DEFAULT));
  }

  /** An environment of the block's properties that {@code keys} selects, and nothing else. */
  private static ConfigurableEnvironment environment(Block block, Predicate<String> keys) {
    Properties selected = new Properties();
    block.properties().stringPropertyNames().stream()
        .filter(keys)
        .forEach(k -> selected.setProperty(k, block.properties().getProperty(k)));
    ConfigurableEnvironment env = new AbstractEnvironment() {};
    env.getPropertySources().addFirst(new PropertiesPropertySource(block.where(), selected));
    ConfigurationPropertySources.attach(env);
    return env;
  }

  private static String describe(Throwable e) {
    StringBuilder s = new StringBuilder(e.toString());
    for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
      s.append("\n  caused by ").append(c);
    }
    return s.toString();
  }

  private List<Block> blocks() {
    List<String> lines = read(root.resolve(DOC)).lines().toList();
    List<Block> blocks = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      if (FENCE.matcher(lines.get(i)).matches()) {
        int start = i + 1;
        StringBuilder body = new StringBuilder();
        for (i++; i < lines.size() && !ANY_FENCE.matcher(lines.get(i)).matches(); i++) {
          body.append(lines.get(i)).append('\n');
        }
        blocks.add(new Block(DOC + ":" + start, load(body.toString())));
      }
    }
    assertThat(blocks).as("properties blocks of " + DOC).hasSizeGreaterThanOrEqualTo(5);
    return blocks;
  }

  private static Block block(String text) {
    return new Block("(test)", load(text));
  }

  private static Properties load(String text) {
    Properties p = new Properties();
    try {
      p.load(new StringReader(text));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return p;
  }

  private static String read(Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** One {@code ```properties} block, loaded as {@code application.properties} would be. */
  private record Block(String where, Properties properties) {}
}
