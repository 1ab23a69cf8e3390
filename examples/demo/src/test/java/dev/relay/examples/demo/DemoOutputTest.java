package dev.relay.examples.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.EmbeddedServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The guide's "demo output" block (docs/guide.md, between {@link #BEGIN} and {@link #END}) is what
 * the demo prints: the story runs here on an embedded PostgreSQL, as {@code relay demo} runs it,
 * and its output, with the parts that vary between runs {@linkplain #normalise normalised}, must
 * equal the block. A change to the story's text fails this test until the block is regenerated:
 *
 * <pre>{@code
 * ./mvnw -B -ntp -pl examples/demo -am test -Dtest=DemoOutputTest \
 *     -Dsurefire.failIfNoSpecifiedTests=false -Drelay.docs.update=true
 * }</pre>
 */
class DemoOutputTest {
  static final String UPDATE_COMMAND =
      "./mvnw -B -ntp -pl examples/demo -am test -Dtest=DemoOutputTest"
          + " -Dsurefire.failIfNoSpecifiedTests=false -Drelay.docs.update=true";

  /** The line before the generated block in the guide. */
  static final String BEGIN = "<!-- demo-output:begin (DemoOutputTest writes this block) -->";

  /** The line after it. */
  static final String END = "<!-- demo-output:end -->";

  private static String output;

  @BeforeAll
  static void tellTheStory() throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (EmbeddedServer pg = EmbeddedServer.builder().durable(false).start();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
      OrderStory.tell(pg.dataSource(), out, () -> {});
    }
    output = normalise(bytes.toString(StandardCharsets.UTF_8));
  }

  @Test
  void theGuideShowsWhatTheDemoPrints() throws IOException {
    Path guide = Path.of(System.getProperty("relay.docs.guide", "../../docs/guide.md"));
    String text = Files.readString(guide, StandardCharsets.UTF_8);
    int begin = text.indexOf(BEGIN);
    int end = text.indexOf(END);
    assertThat(begin).as("%s holds the line %s", guide, BEGIN).isNotNegative();
    assertThat(end)
        .as("%s holds the line %s after the begin line", guide, END)
        .isGreaterThan(begin);
    String shown = text.substring(begin + BEGIN.length() + 1, end);
    String generated = "```text\n" + output + "```\n";

    if (Boolean.getBoolean("relay.docs.update")) {
      Files.writeString(
          guide,
          text.substring(0, begin + BEGIN.length() + 1) + generated + text.substring(end),
          StandardCharsets.UTF_8);
      return;
    }
    if (!shown.equals(generated)) {
      throw new AssertionError(difference(guide, shown, generated));
    }
  }

  /** Step 7 lists the emails of the mailer without deduplication: as many rows as it counts. */
  @Test
  void stepSevenListsAsManyEmailsAsItSays() {
    String step = section(output, "== 7. ");
    Matcher counted = Pattern.compile("Emails sent without deduplication: (\\d+)").matcher(step);
    assertThat(counted.find()).as("step 7 counts the emails:\n%s", step).isTrue();
    long rows = step.lines().filter(l -> l.startsWith("    email_id=")).count();

    assertThat(rows).as("email rows listed in step 7:\n%s", step).isEqualTo(2);
    assertThat(Long.parseLong(counted.group(1))).isEqualTo(rows);
    assertThat(step.lines().filter(l -> l.startsWith("    email_id=")))
        .allMatch(l -> l.contains("mailer=plain-mailer"));
  }

  @Test
  void normalisingHidesTimesDurationsAndPorts() {
    assertThat(
            normalise(
                "at 2026-12-03T17:11:56.123456Z age=PT0.004312S url http://127.0.0.1:41234/mail"
                    + " took 12 ms; kept PT0S and 29.00, 2 s\n"))
        .isEqualTo(
            "at <time> age=<duration> url http://127.0.0.1:<port>/mail took <n> ms;"
                + " kept PT0S and 29.00, 2 s\n");
  }

  @Test
  void theDifferenceNamesTheFirstChangedLineAndTheCommand() {
    String message = difference(Path.of("guide.md"), "a\nb\nc\n", "a\nB\nc\n");

    assertThat(message)
        .contains("line 2")
        .contains("guide:  b")
        .contains("demo:   B")
        .contains(UPDATE_COMMAND);
  }

  /**
   * The output with what varies between runs replaced: timestamps, non-zero ISO durations, local
   * ports and times measured in milliseconds. The story prints none of them today; this keeps the
   * block stable if a step starts to.
   */
  static String normalise(String text) {
    return text.replace("\r\n", "\n")
        .replaceAll(
            "\\d{4}-\\d\\d-\\d\\d[T ]\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?(Z|[+-]\\d\\d(:\\d\\d)?)?",
            "<time>")
        .replaceAll("PT(?!0S\\b)[0-9.HMS]+", "<duration>")
        .replaceAll("(127\\.0\\.0\\.1|localhost):\\d+", "$1:<port>")
        .replaceAll("\\b\\d+(\\.\\d+)? ms\\b", "<n> ms");
  }

  /** The text of one step, from its heading to the next blank line. */
  private static String section(String text, String heading) {
    int from = text.indexOf(heading);
    assertThat(from).as("the output has a step starting %s", heading).isNotNegative();
    int to = text.indexOf("\n\n", from);
    return text.substring(from, to < 0 ? text.length() : to);
  }

  static String difference(Path guide, String shown, String generated) {
    List<String> a = shown.lines().toList();
    List<String> b = generated.lines().toList();
    int i = 0;
    while (i < a.size() && i < b.size() && a.get(i).equals(b.get(i))) {
      i++;
    }
    return "The demo output in "
        + guide
        + " differs from what the demo prints, first at line "
        + (i + 1)
        + " of the block:\n  guide:  "
        + (i < a.size() ? a.get(i) : "(end of block)")
        + "\n  demo:   "
        + (i < b.size() ? b.get(i) : "(end of output)")
        + "\nThe demo prints:\n"
        + generated
        + "Rewrite the block from the demo with:\n  "
        + UPDATE_COMMAND
        + "\n";
  }
}
