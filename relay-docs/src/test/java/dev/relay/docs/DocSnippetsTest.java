package dev.relay.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every {@code ```java} block of {@code README.md} and {@code docs/*.md} compiles: each must equal
 * a region of a snippet source in this module, and the snippet sources are compiled (with -Werror)
 * against the real modules.
 *
 * <h2>How to add or change a code example in the docs</h2>
 *
 * <ol>
 *   <li>Write the code in a snippet source under {@code relay-docs/src/test/java/dev/relay/docs/}
 *       (one class per doc, e.g. {@code GuideSnippets}), inside a method whose parameters declare
 *       what the example takes as given ({@code DataSource dataSource}, {@code Connection c}, ...).
 *       Helpers the example calls (a mailer, a shop) are small interfaces next to it. An example
 *       that is a whole test class (docs/testing.md's) is a top-level {@code *Test} class of its
 *       own here, so that it also runs against the test kit's PostgreSQL.
 *   <li>Mark the example: a line {@code // docs:begin <name>} before it and {@code // docs:end}
 *       after it. The formatter leaves the region as written, so format it for reading.
 *   <li>Copy the region into the Markdown file as a {@code ```java} block. Indentation common to
 *       all lines and trailing spaces are ignored; everything else must be equal.
 *   <li>Run {@code ./mvnw -o -q -B -pl relay-docs -am test -Dtest=DocSnippetsTest
 *       -Dsurefire.failIfNoSpecifiedTests=false}. A doc block that matches no region fails the test
 *       with its file and line, the closest region and the first line that differs; a region that
 *       no doc uses fails it too.
 * </ol>
 *
 * Other fences ({@code ```sql}, {@code ```sh}, ...) are not checked. Examples use only the public
 * API: a snippet source that names the internal packages fails the test.
 */
class DocSnippetsTest {

  private static final Pattern BEGIN = Pattern.compile("^\\s*// docs:begin (\\S+)\\s*$");
  private static final Pattern END = Pattern.compile("^\\s*// docs:end\\s*$");
  private static final Pattern JAVA_FENCE = Pattern.compile("^\\s*```java\\s*$");
  private static final Pattern ANY_FENCE = Pattern.compile("^\\s*```.*$");

  /**
   * Docs whose blocks another change is fixing, with the reason. The test still reads them; it
   * fails when a pending doc matches in full (remove it from here then), and lists its blocks.
   */
  private static final Map<String, String> PENDING = Map.of();

  private final Path root = Path.of(System.getProperty("relay.docs.root", "..")).normalize();
  private final Path snippets =
      Path.of(System.getProperty("relay.docs.snippets", "src/test/java")).normalize();

  @Test
  void everyJavaBlockInTheDocsIsACompiledSnippetRegion() {
    Map<String, Region> regions = regions();
    List<Block> blocks = blocks();
    assertThat(blocks).as("java blocks found under " + root).hasSizeGreaterThan(5);

    List<String> failures = new ArrayList<>();
    Set<String> used = new TreeSet<>();
    Map<String, List<Block>> pendingUnmatched = new LinkedHashMap<>();
    for (Block block : blocks) {
      Region match =
          regions.values().stream().filter(r -> r.text.equals(block.text)).findFirst().orElse(null);
      if (match != null) {
        used.add(match.name);
      } else if (PENDING.containsKey(block.file)) {
        pendingUnmatched.computeIfAbsent(block.file, f -> new ArrayList<>()).add(block);
      } else {
        failures.add(unmatched(block, regions));
      }
    }
    for (String file : PENDING.keySet()) {
      if (!pendingUnmatched.containsKey(file)) {
        failures.add(
            file + " is listed as pending but every block matches: remove it from PENDING");
      }
    }
    regions.values().stream()
        .filter(r -> !used.contains(r.name))
        .forEach(
            r ->
                failures.add(
                    "region '"
                        + r.name
                        + "' ("
                        + r.where
                        + ") is used by no doc block: put it in a doc or delete it"));

    pendingUnmatched.forEach(
        (file, pending) ->
            System.out.println(
                "pending, not checked: "
                    + pending.size()
                    + " block(s) of "
                    + file
                    + " ("
                    + PENDING.get(file)
                    + ")"));
    if (!failures.isEmpty()) {
      throw new AssertionError(
          failures.size()
              + " problem(s) between the docs and relay-docs' snippet regions"
              + " (how-to: DocSnippetsTest's class comment):\n\n"
              + String.join("\n\n", failures));
    }
  }

  @Test
  void snippetsUseOnlyThePublicApi() {
    String internal = "dev.relay." + "internal";
    List<String> offenders =
        javaSources().stream()
            .filter(p -> read(p).contains(internal))
            .map(p -> snippets.relativize(p).toString())
            .collect(Collectors.toList());

    assertThat(offenders).as("snippet sources naming " + internal).isEmpty();
  }

  @Test
  void regionTextIgnoresCommonIndentationOnly() {
    assertThat(normalize(List.of("", "    a(", "      b);  ", ""))).isEqualTo("a(\n  b);");
    assertThat(normalize(List.of("a", "b"))).isNotEqualTo(normalize(List.of("a", " b")));
  }

  private String unmatched(Block block, Map<String, Region> regions) {
    List<String> lines = block.text.lines().collect(Collectors.toList());
    Region closest =
        regions.values().stream()
            .max(Comparator.comparingInt(r -> common(lines, r.text.lines().toList())))
            .orElse(null);
    StringBuilder message =
        new StringBuilder(block.file)
            .append(':')
            .append(block.line)
            .append(": this ```java block matches no snippet region:\n    ")
            .append(lines.isEmpty() ? "(empty)" : lines.get(0));
    if (closest != null && common(lines, closest.text.lines().toList()) > 0) {
      List<String> theirs = closest.text.lines().collect(Collectors.toList());
      int at = prefix(lines, theirs);
      message
          .append("\n  closest region '")
          .append(closest.name)
          .append("' (")
          .append(closest.where)
          .append("), first difference at block line ")
          .append(at + 1)
          .append(":\n    doc:     ")
          .append(at < lines.size() ? lines.get(at) : "(end of block)")
          .append("\n    snippet: ")
          .append(at < theirs.size() ? theirs.get(at) : "(end of region)");
    } else {
      message.append("\n  no region is close: add one (see DocSnippetsTest's class comment)");
    }
    return message.toString();
  }

  /** Lines the two have in common, in any order: how close a region is to a block. */
  private static int common(List<String> a, List<String> b) {
    List<String> rest = new ArrayList<>(b);
    int n = 0;
    for (String line : a) {
      if (rest.remove(line)) {
        n++;
      }
    }
    return n;
  }

  private static int prefix(List<String> a, List<String> b) {
    int i = 0;
    while (i < a.size() && i < b.size() && a.get(i).equals(b.get(i))) {
      i++;
    }
    return i;
  }

  private List<Block> blocks() {
    List<Path> docs = new ArrayList<>();
    docs.add(root.resolve("README.md"));
    try (Stream<Path> files = Files.list(root.resolve("docs"))) {
      files.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<Block> blocks = new ArrayList<>();
    for (Path doc : docs) {
      String file = root.relativize(doc).toString().replace('\\', '/');
      List<String> lines = read(doc).lines().collect(Collectors.toList());
      for (int i = 0; i < lines.size(); i++) {
        if (JAVA_FENCE.matcher(lines.get(i)).matches()) {
          int start = i;
          List<String> body = new ArrayList<>();
          for (i++; i < lines.size() && !ANY_FENCE.matcher(lines.get(i)).matches(); i++) {
            body.add(lines.get(i));
          }
          blocks.add(new Block(file, start + 1, normalize(body)));
        } else if (ANY_FENCE.matcher(lines.get(i)).matches()) {
          // another language: skip to its closing fence
          for (i++; i < lines.size() && !ANY_FENCE.matcher(lines.get(i)).matches(); i++) {
            // skip
          }
        }
      }
    }
    return blocks;
  }

  private Map<String, Region> regions() {
    Map<String, Region> regions = new LinkedHashMap<>();
    for (Path source : javaSources()) {
      List<String> lines = read(source).lines().collect(Collectors.toList());
      for (int i = 0; i < lines.size(); i++) {
        Matcher begin = BEGIN.matcher(lines.get(i));
        if (!begin.matches()) {
          continue;
        }
        String where = snippets.relativize(source) + ":" + (i + 1);
        List<String> body = new ArrayList<>();
        int j = i + 1;
        for (; j < lines.size() && !END.matcher(lines.get(j)).matches(); j++) {
          if (BEGIN.matcher(lines.get(j)).matches()) {
            throw new AssertionError(where + ": region '" + begin.group(1) + "' is not ended");
          }
          body.add(lines.get(j));
        }
        if (j == lines.size()) {
          throw new AssertionError(where + ": region '" + begin.group(1) + "' has no docs:end");
        }
        Region region = new Region(begin.group(1), where, normalize(body));
        Region previous = regions.put(region.name, region);
        if (previous != null) {
          throw new AssertionError(
              "region name '" + region.name + "' is used twice: " + previous.where + ", " + where);
        }
        i = j;
      }
    }
    return regions;
  }

  private List<Path> javaSources() {
    try (Stream<Path> files = Files.walk(snippets)) {
      return files
          .filter(p -> p.toString().endsWith(".java"))
          .sorted()
          .collect(Collectors.toList());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Trailing spaces, leading and trailing blank lines and indentation common to all lines go. */
  static String normalize(List<String> lines) {
    List<String> body = lines.stream().map(String::stripTrailing).collect(Collectors.toList());
    while (!body.isEmpty() && body.get(0).isEmpty()) {
      body.remove(0);
    }
    while (!body.isEmpty() && body.get(body.size() - 1).isEmpty()) {
      body.remove(body.size() - 1);
    }
    int indent =
        body.stream()
            .filter(l -> !l.isEmpty())
            .mapToInt(l -> l.length() - l.stripLeading().length())
            .min()
            .orElse(0);
    return body.stream()
        .map(l -> l.isEmpty() ? l : l.substring(indent))
        .collect(Collectors.joining("\n"));
  }

  private static String read(Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private record Block(String file, int line, String text) {}

  private record Region(String name, String where, String text) {}
}
