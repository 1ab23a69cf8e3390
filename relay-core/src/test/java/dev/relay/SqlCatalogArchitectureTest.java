package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every SQL statement of relay-core has a name in a catalog class (one per table family, composed
 * once per schema), so a reader finds each statement whole in one place. This test reads
 * relay-core's main sources as text and fails on a SQL statement in a Java string literal or text
 * block outside those classes, and on schema injection ({@code ${relay_schema}}, {@code
 * SchemaName.inject}) or placeholder composition ({@code .replace("{cap}", ...)}) outside them.
 */
class SqlCatalogArchitectureTest {
  private static final Path MAIN = Path.of("src/main/java");

  /** The catalog classes, by path below {@link #MAIN}. */
  private static final Set<String> CATALOGS =
      Set.of(
          "dev/relay/internal/store/WorkSql.java",
          "dev/relay/internal/store/AttemptCap.java",
          "dev/relay/internal/store/BlockedReason.java",
          "dev/relay/internal/store/DependencySql.java",
          "dev/relay/internal/store/MigratorSql.java",
          "dev/relay/internal/store/GrantCatalog.java",
          "dev/relay/internal/store/WorkerSql.java",
          "dev/relay/internal/admin/AdminSql.java",
          "dev/relay/internal/admin/PauseSql.java",
          "dev/relay/internal/admin/HistorySql.java",
          "dev/relay/internal/admin/RollupSql.java",
          "dev/relay/internal/receiver/InboxSql.java",
          "dev/relay/internal/receiver/FenceSql.java",
          "dev/relay/internal/receiver/KeyPositionSql.java",
          "dev/relay/internal/jdbc/Coordination.java",
          "dev/relay/internal/jdbc/DeploymentSql.java");

  /** The one place that validates a schema name and injects it. */
  private static final String INJECTOR = "dev/relay/internal/jdbc/SchemaName.java";

  private static final Pattern STATEMENT =
      Pattern.compile("\\b(SELECT|UPDATE|INSERT INTO|DELETE FROM)\\s");

  /** Schema injection, or placeholder composition such as {@code .replace("{cap}", ...)}. */
  private static final Pattern INJECTION =
      Pattern.compile("\\.inject\\(|\\$\\{relay_schema\\}|\\.replace\\(\\s*\"[{$]");

  @Test
  void sqlStatementsLiveOnlyInCatalogClasses() {
    List<String> violations = new ArrayList<>();
    for (Path file : sources()) {
      String name = MAIN.relativize(file).toString().replace('\\', '/');
      if (CATALOGS.contains(name)) {
        continue;
      }
      for (Literal l : literals(read(file))) {
        if (STATEMENT.matcher(l.text()).find()) {
          violations.add(name + ":" + l.line() + " " + abbreviate(l.text()));
        }
      }
    }
    assertThat(violations)
        .as("SQL in Java strings outside the catalog classes %s", CATALOGS)
        .isEmpty();
  }

  @Test
  void theSchemaIsInjectedOnlyByTheCatalogClasses() {
    List<String> violations = new ArrayList<>();
    for (Path file : sources()) {
      String name = MAIN.relativize(file).toString().replace('\\', '/');
      if (CATALOGS.contains(name) || name.equals(INJECTOR)) {
        continue;
      }
      String code = read(file);
      String[] lines = withoutComments(code).split("\n", -1);
      for (int i = 0; i < lines.length; i++) {
        if (INJECTION.matcher(lines[i]).find()) {
          violations.add(name + ":" + (i + 1) + " " + lines[i].strip());
        }
      }
    }
    assertThat(violations)
        .as("schema injection or placeholder composition outside the catalog classes")
        .isEmpty();
  }

  @Test
  void theScannerSeesLiteralsAndTextBlocksButNotComments() {
    String source =
        "class X {\n"
            + "  // SELECT 1 in a comment\n"
            + "  /* UPDATE t in a block comment */\n"
            + "  String a = \"SELECT 1\";\n"
            + "  String b = \"\"\"\n      DELETE FROM t\n      \"\"\";\n"
            + "  char q = '\"'; String c = \"a \\\" INSERT INTO t\";\n"
            + "}\n";
    assertThat(literals(source))
        .filteredOn(l -> STATEMENT.matcher(l.text()).find())
        .extracting(Literal::line)
        .containsExactly(4, 5, 8);
    assertThat(withoutComments(source)).doesNotContain("in a comment", "in a block comment");
    assertThat(INJECTION.matcher("sql.replace(\"{cap}\", cap)").find()).isTrue();
    assertThat(INJECTION.matcher("name.replace('\\\\', '/')").find()).isFalse();
  }

  private static List<Path> sources() {
    try (Stream<Path> files = Files.walk(MAIN)) {
      List<Path> all = files.filter(p -> p.toString().endsWith(".java")).sorted().toList();
      assertThat(all).as("relay-core's main sources under %s", MAIN.toAbsolutePath()).isNotEmpty();
      return all;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String read(Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String abbreviate(String s) {
    String flat = s.strip().replaceAll("\\s+", " ");
    return flat.length() > 80 ? flat.substring(0, 77) + "..." : flat;
  }

  /** A string literal or text block, its content (escapes left as written) and first line. */
  record Literal(String text, int line) {}

  /** The string literals and text blocks of Java source {@code s}, outside comments. */
  static List<Literal> literals(String s) {
    List<Literal> out = new ArrayList<>();
    scan(s, out, null);
    return out;
  }

  /** {@code s} with comments blanked out (line breaks kept, so line numbers stay). */
  static String withoutComments(String s) {
    StringBuilder code = new StringBuilder(s.length());
    scan(s, new ArrayList<>(), code);
    return code.toString();
  }

  private static void scan(String s, List<Literal> literals, StringBuilder code) {
    int line = 1;
    int i = 0;
    int n = s.length();
    while (i < n) {
      char ch = s.charAt(i);
      if (ch == '/' && i + 1 < n && s.charAt(i + 1) == '/') {
        while (i < n && s.charAt(i) != '\n') {
          i++;
        }
        continue;
      }
      if (ch == '/' && i + 1 < n && s.charAt(i + 1) == '*') {
        int end = s.indexOf("*/", i + 2);
        end = end < 0 ? n : end + 2;
        for (int k = i; k < end; k++) {
          if (s.charAt(k) == '\n') {
            line++;
            append(code, '\n');
          }
        }
        i = end;
        continue;
      }
      if (ch == '"' || ch == '\'') {
        boolean block = ch == '"' && s.startsWith("\"\"\"", i);
        String close = block ? "\"\"\"" : String.valueOf(ch);
        int start = line;
        int j = i + close.length();
        StringBuilder text = new StringBuilder();
        while (j < n && !s.startsWith(close, j)) {
          char c = s.charAt(j);
          if (c == '\\' && j + 1 < n) {
            text.append(c).append(s.charAt(j + 1));
            j += 2;
            continue;
          }
          if (c == '\n') {
            line++;
          }
          text.append(c);
          j++;
        }
        if (ch == '"') {
          literals.add(new Literal(text.toString(), start));
        }
        if (code != null) {
          code.append(s, i, Math.min(n, j + close.length()));
        }
        i = j + close.length();
        continue;
      }
      if (ch == '\n') {
        line++;
      }
      append(code, ch);
      i++;
    }
  }

  private static void append(StringBuilder code, char ch) {
    if (code != null) {
      code.append(ch);
    }
  }
}
