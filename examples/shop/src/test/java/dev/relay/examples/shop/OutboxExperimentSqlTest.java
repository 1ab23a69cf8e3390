package dev.relay.examples.shop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs {@code sql/outbox-experiment.sql} with the machine's {@code psql} against the test database,
 * exactly as the script's header says, and proves that it can fail: a copy with the generation
 * guard removed must make psql exit non-zero.
 */
@RelayDatabaseTest
class OutboxExperimentSqlTest {
  private static final Path SCRIPT = Path.of("../../sql/outbox-experiment.sql");
  private static final String GUARD = "-- guard: generation";

  @TempDir Path tmp;

  private record Result(int exit, String output) {}

  private static Result psql(TestDatabase db, Path script) throws Exception {
    Path log = Files.createTempFile("psql-", ".log");
    Process p =
        new ProcessBuilder(
                List.of(
                    "psql",
                    "-X",
                    "-h",
                    db.host(),
                    "-p",
                    Integer.toString(db.port()),
                    "-U",
                    db.user(),
                    "-d",
                    db.database(),
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-f",
                    script.toString()))
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    p.getOutputStream().close();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("psql did not finish: " + Files.readString(log));
    }
    String out = Files.readString(log, StandardCharsets.UTF_8);
    Files.delete(log);
    return new Result(p.exitValue(), out);
  }

  @Test
  void experimentPassesUnderPsql(TestDatabase db) throws Exception {
    Result r = psql(db, SCRIPT.toAbsolutePath().normalize());

    assertThat(r.exit()).as(r.output()).isZero();
    assertThat(r.output())
        .contains("ok: COMMIT kept both the order and its outbox row")
        .contains("ok: ROLLBACK kept neither the order nor its outbox row")
        .contains("ok: a claim raises the generation (0 -> 1) and returns it")
        .contains("ok: a row under an unexpired lease is not claimed again")
        .contains("ok: a completion by the older generation (worker-a, 1) changes zero rows")
        .contains("ok: completing again changes zero rows: the current generation completes once")
        .contains("== all checks passed")
        .doesNotContain("CHECK FAILED");
  }

  @Test
  void copyWithTheGenerationGuardRemovedMakesPsqlFail(TestDatabase db) throws Exception {
    List<String> lines = Files.readAllLines(SCRIPT, StandardCharsets.UTF_8);
    assertThat(lines).filteredOn(l -> l.contains(GUARD)).hasSize(1);
    Path broken = tmp.resolve("outbox-experiment-broken.sql");
    Files.write(broken, lines.stream().filter(l -> !l.contains(GUARD)).toList());

    Result r = psql(db, broken);

    assertThat(r.exit()).as(r.output()).isNotZero();
    assertThat(r.output())
        .contains("CHECK FAILED")
        .contains("changes zero rows")
        .doesNotContain("== all checks passed");
  }
}
