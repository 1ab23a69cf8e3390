package dev.relay.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.relay.serve.ServeCommandTest.Run;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * Fuzzes {@code relay serve}'s configuration loader and its command line, in this JVM through
 * {@link ServeMain#run} as the {@code relay} script calls it. Config files: seeded mutations of
 * valid {@code application.yml}, {@code .properties} and JSON configs (lines deleted, repeated and
 * re-indented, characters inserted, values replaced by hostile ones: placeholders, YAML anchors,
 * aliases and tags, deep nesting, huge numbers), each run with {@code --print-config} so that a
 * valid one prints and exits. Every file must give exit 0, or exit 2 with one line naming the file
 * and one pointing at the help: never a stack trace, an uncaught exception or a hang. Command
 * lines: random vectors of {@code serve} and {@code passwd} options and values, and random stdin
 * for {@code passwd}; each must run or be a usage error. {@code -Drelay.fuzz.seed=N
 * -Drelay.fuzz.inputs=N} runs another stretch.
 */
class ServeFuzzTest {
  private static final long SEED = Long.getLong("relay.fuzz.seed", 20261204L);
  private static final int FILES = Integer.getInteger("relay.fuzz.inputs", 500);
  private static final int VECTORS = Integer.getInteger("relay.fuzz.inputs", 300);
  private static final long BOUND_SECONDS = 60;
  private static final ExecutorService RUNNER = Executors.newSingleThreadExecutor();

  private static final String HASH = BCrypt.hashpw("s3cret", BCrypt.gensalt(4));

  private static final String YAML =
      """
      server:
        port: 0
        address: 127.0.0.1
      spring:
        datasource:
          url: jdbc:postgresql://127.0.0.1:1/x
      relay:
        queues: [default, mail]
        concurrency: 4
        lease: 60s
        poll-interval: 2s
        maintenance:
          interval: 1m
          work-retention: 7d
        kinds:
          mail:
            handler: http
            url: http://127.0.0.1:8025/mail
            receiver-ref-field: email_id
            max-attempts: 8
            dedup-horizon: 24h
          audit_note:
            handler: log
        schedules:
          nightly: {kind: audit_note, cron: "30 2 * * *", zone: UTC}
        console:
          sign-in: {max-failures-per-user: 5, window: 15m}
          session: {idle-timeout: 30m}
          users:
            - {name: olga, hash: '%s', role: operator}
            - name: sam
              hash: '%s'
              role: viewer
      """
          .formatted(HASH, HASH);

  private static final String PROPERTIES =
      """
      server.port=0
      relay.queues=default,mail
      relay.concurrency=4
      relay.kinds.mail.handler=http
      relay.kinds.mail.url=http://127.0.0.1:8025/mail
      relay.kinds.mail.max-attempts=8
      relay.kinds.tick.handler=log
      relay.schedules.pulse.kind=tick
      relay.schedules.pulse.every=1m
      relay.console.users[0].name=olga
      relay.console.users[0].hash=%s
      relay.console.users[0].role=operator
      """
          .formatted(HASH);

  private static final String JSON =
      """
      {"queues": ["default"], "concurrency": 2, "lease": "30s", "port": 0,
       "retention": {"work": "7d"},
       "kinds": {"mail": {"handler": "http", "url": "http://127.0.0.1:8025/m",
                          "max_attempts": 3}, "tick": {}},
       "schedules": {"p": {"kind": "tick", "every": "1m"}},
       "console": {"users": [{"name": "olga", "hash": "%s", "role": "operator"}]}}
      """
          .formatted(HASH);

  /** Values a mutation puts where a value was. */
  private static final String[] VALUES = {
    "",
    "-1",
    "0",
    "many",
    "1h",
    "PT-1S",
    "99999999999999999999",
    "1e400",
    "null",
    "~",
    "yes",
    "[1, 2]",
    "{a: 1}",
    "${RELAY_FUZZ_UNSET}",
    "${RELAY_FUZZ_UNSET:}",
    "${relay.lease}",
    "${a:${b:${c}}}",
    "*alias",
    "&anchor x",
    "!!binary AAAA",
    "!!java.lang.Runtime {}",
    "!!set {a, b}",
    "<<: *x",
    "'unterminated",
    "\"\\uZZZZ\"",
    "\\uZZZZ",
    "|\n  block",
    "x".repeat(300),
    "[".repeat(200),
    "http://[::1",
    "jdbc:postgresql://127.0.0.1:1/x",
    "ftp://x",
    "\u0000",
    "é😀",
    "%",
    "@",
    "`",
    "30 2 * * * * *",
    "Mars/Olympus"
  };

  private static final String PALETTE =
      ":{}[]-#&*!|>'\"%@`,=\\\t\n $.?\u00e9\ud83d\ude00\u0000\ufeff";

  @TempDir static Path dir;

  @AfterAll
  static void stop() {
    RUNNER.shutdownNow();
  }

  @Test
  void everyConfigFileGivesExitZeroOrTwoWithOneLineNamingIt() throws Exception {
    SplittableRandom r = new SplittableRandom(SEED);
    int refused = 0;
    for (int i = 0; i < FILES; i++) {
      int which = r.nextInt(4);
      String ext = which == 0 ? ".properties" : which == 1 ? ".json" : ".yml";
      String base = which == 0 ? PROPERTIES : which == 1 ? JSON : YAML;
      String text = r.nextInt(20) == 0 ? special(r) : mutate(r, base);
      Path file = dir.resolve("fuzz-" + i + ext);
      byte[] bytes = text.getBytes(StandardCharsets.UTF_8); // a lone surrogate becomes '?'
      if (r.nextInt(40) == 0) {
        // bytes that are not UTF-8 at all
        bytes = new byte[r.nextInt(1, 2_000)];
        r.nextBytes(bytes);
        text = "(" + bytes.length + " random bytes)";
      }
      Files.write(file, bytes);
      Run run = bounded(text, null, "serve", "--config", file.toString(), "--print-config");
      String shown = "file " + file.getFileName() + " (seed " + SEED + "):\n" + text + "\n" + run;
      assertThat(run.code()).as(shown).isIn(0, 2);
      assertThat(run.err()).as(shown).doesNotContain("\tat ").doesNotContain("Exception");
      if (run.code() == 2) {
        refused++;
        List<String> lines = run.err().lines().toList();
        assertThat(lines).as(shown).hasSize(2);
        assertThat(lines.get(0)).as(shown).startsWith("relay serve: ").contains(file.toString());
        assertThat(lines.get(1)).as(shown).isEqualTo("see relay help serve");
      } else {
        assertThat(run.out()).as(shown).startsWith("# relay serve --print-config");
      }
      Files.delete(file);
    }
    // Not refusals only, not passes only.
    assertThat(refused).as("refused among %d", FILES).isBetween(FILES / 10, FILES - FILES / 20);
  }

  @Test
  void everyCommandLineRunsOrIsAUsageError() throws Exception {
    Path good = Files.writeString(dir.resolve("good.yml"), YAML);
    Path bad = Files.writeString(dir.resolve("bad.yml"), "relay: {concurrency: many}\n");
    String[] tokens = {
      "serve",
      "passwd",
      "help",
      "--config",
      "-c",
      "--print-config",
      "--jdbc-url",
      "--direct-jdbc-url",
      "--schema",
      "--port",
      "--http-port",
      "--maintenance-interval",
      "--worker-id",
      "--migrate",
      "--help",
      "-h",
      "--version",
      "-V",
      "--",
      "-",
      "--port=",
      "--config=",
      "-cx",
      "--no-such",
      "@" + dir.resolve("missing-args"),
      good.toString(),
      bad.toString(),
      dir.resolve("missing.yml").toString(),
      dir.toString(),
      "0",
      "-1",
      "65536",
      "99999999999",
      "relay",
      "Bad-Name",
      "1m",
      "-5s",
      "x".repeat(500),
      "",
      "jdbc:postgresql://127.0.0.1:1/x",
      "é",
      "\u0000"
    };
    SplittableRandom r = new SplittableRandom(SEED + 2);
    for (int i = 0; i < VECTORS; i++) {
      List<String> args = new ArrayList<>();
      int n = r.nextInt(7);
      if (r.nextInt(5) > 0) {
        args.add(r.nextBoolean() ? "serve" : "passwd");
      }
      for (int k = 0; k < n; k++) {
        args.add(tokens[r.nextInt(tokens.length)]);
      }
      if (args.contains("serve") && !args.contains("--print-config")) {
        // A vector that would start serve for real prints its config instead.
        args.add("--print-config");
      }
      String stdin = passwordLine(r);
      String[] argv = args.toArray(String[]::new);
      Run run = bounded(stdin, stdin, argv);
      String shown = Arrays.toString(argv) + " stdin of " + stdin.length() + " chars: " + run;
      assertThat(run.code()).as(shown).isIn(0, 2);
      assertThat(run.err()).as(shown).doesNotContain("\tat ");
    }
  }

  /** What this fuzz found, each once a stack trace (or a stack overflow, or a long hang). */
  @Test
  void theFilesThatCrashedAreRefusedInOneLine() throws Exception {
    String laughs =
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            + "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
            + "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            + "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
            + "relay: {queues: *e}\n";
    String[][] cases = {
      // SnakeYAML's exception for a duplicate key is no IllegalArgumentException
      {"dup.yml", "server:\nserver:\n  port: 0\n", "duplicate key server"},
      // a key that is no property name broke the message that names it
      {"dot.properties", "relay.=x\nrelay.kinds.k.handler=log\n", "relay."},
      // Boot's loader flattens a value that contains itself until the stack overflows ...
      {"self.yml", "relay:\n  queues: &q [a, *q]\n", "refers to a value that contains it"},
      // ... and expands any number of aliases: 100,000 values from 200 bytes
      {"laughs.yml", laughs, "more than 100000 values"},
      {"tab.yml", "relay:\n\tkinds: {}\n", "cannot start any token"}
    };
    for (String[] c : cases) {
      Path file = Files.writeString(dir.resolve(c[0]), c[1]);
      Run run = bounded(c[1], null, "serve", "--config", file.toString(), "--print-config");
      assertThat(run.code()).as("%s: %s", c[0], run).isEqualTo(2);
      assertThat(run.err().lines().toList())
          .as("%s: %s", c[0], run)
          .hasSize(2)
          .first()
          .asString()
          .startsWith("relay serve: ")
          .contains(file.toString())
          .contains(c[2]);
    }
  }

  @Test
  void aPasswordLongerThanBcryptTakesIsAUsageErrorNotAStackTrace() throws Exception {
    // Found by this fuzz: bcrypt reads at most 72 bytes, and Spring Security's encoder throws
    // IllegalArgumentException past that, which reached the user as a stack trace.
    String password = "é".repeat(37); // 74 bytes in UTF-8, 37 characters
    Run run = bounded(password, password + "\n", "passwd");
    assertThat(run.code()).as(run.toString()).isEqualTo(2);
    assertThat(run.err()).startsWith("relay passwd: ").contains("72 bytes");
    assertThat(run.err()).doesNotContain("\tat ");
  }

  private static String passwordLine(SplittableRandom r) {
    return switch (r.nextInt(5)) {
      case 0 -> "";
      case 1 -> "\n";
      case 2 -> "s3cret\n";
      case 3 -> "é".repeat(r.nextInt(30, 45)) + "\n";
      default -> "x".repeat(r.nextInt(60, 200));
    };
  }

  /** A file of its own shape: deep nesting, alias bombs, binary noise, nothing. */
  private static String special(SplittableRandom r) {
    return switch (r.nextInt(7)) {
      case 0 -> "relay:\n  queues: " + "[".repeat(5_000) + "]".repeat(5_000) + "\n";
      case 6 -> "relay:\n  queues: &q [a, *q]\n  kinds: {k: {handler: log}}\n";
      case 1 -> {
        StringBuilder b = new StringBuilder("a: &a [x, x, x, x, x, x, x, x, x]\n");
        for (char c = 'b'; c <= 'k'; c++) {
          char p = (char) (c - 1);
          b.append(c).append(": &").append(c).append(" [*").append(p).append(", *").append(p);
          b.append(", *").append(p).append(", *").append(p).append("]\n");
        }
        yield b.append("relay:\n  queues: *k\n").toString();
      }
      case 2 -> "{\"kinds\": " + "{\"a\": ".repeat(3_000) + "1" + "}".repeat(3_001);
      case 3 -> {
        byte[] noise = new byte[r.nextInt(1, 2_000)];
        r.nextBytes(noise);
        yield new String(noise, StandardCharsets.ISO_8859_1);
      }
      case 4 -> "";
      default -> "relay.kinds." + "a.".repeat(2_000) + "handler=log\n";
    };
  }

  private static String mutate(SplittableRandom r, String base) {
    List<String> lines = new ArrayList<>(base.lines().toList());
    int mutations = 1 + r.nextInt(4);
    for (int m = 0; m < mutations && !lines.isEmpty(); m++) {
      int at = r.nextInt(lines.size());
      String line = lines.get(at);
      switch (r.nextInt(7)) {
        case 0 -> lines.remove(at);
        case 1 -> lines.add(at, line);
        case 2 -> lines.set(at, (r.nextBoolean() ? "  " : "") + line.stripLeading());
        case 3 -> {
          int cut = line.isEmpty() ? 0 : r.nextInt(line.length() + 1);
          char c = PALETTE.charAt(r.nextInt(PALETTE.length()));
          lines.set(at, line.substring(0, cut) + c + line.substring(cut));
        }
        case 4 -> {
          // replace the value after the first ':', '=' or '": '
          int sep = Math.max(line.indexOf(": "), line.indexOf('='));
          if (sep > 0) {
            String v = VALUES[r.nextInt(VALUES.length)];
            if (base == JSON) {
              v = r.nextBoolean() ? "\"" + v.replace("\"", "\\\"") + "\"" : v;
            }
            lines.set(at, line.substring(0, sep + (line.charAt(sep) == '=' ? 1 : 2)) + v);
          }
        }
        case 5 -> {
          int cut = line.isEmpty() ? 0 : r.nextInt(line.length());
          lines.set(at, line.substring(0, cut));
        }
        default -> {
          int other = r.nextInt(lines.size());
          lines.set(at, lines.get(other));
          lines.set(other, line);
        }
      }
    }
    return String.join("\n", lines) + (r.nextBoolean() ? "\n" : "");
  }

  /** {@code relay args} with {@code stdin}, within the bound; a hang fails naming the input. */
  private static Run bounded(String input, String stdin, String... args) throws Exception {
    Future<Run> f = RUNNER.submit(() -> ServeCommandTest.run(stdin, args));
    try {
      return f.get(BOUND_SECONDS, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      return fail(
          "no answer within %d s for %s (seed %d):%n%s",
          BOUND_SECONDS, Arrays.toString(args), SEED, input);
    } catch (ExecutionException e) {
      throw new AssertionError(
          "relay "
              + String.join(" ", args)
              + " threw "
              + e.getCause()
              + " (seed "
              + SEED
              + ") on:\n"
              + input,
          e.getCause());
    }
  }
}
