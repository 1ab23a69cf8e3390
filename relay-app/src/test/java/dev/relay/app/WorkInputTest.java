package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The work that {@code relay enqueue} and {@code relay supersede} take is checked by core's own
 * rules ({@code Outbox.validate}) before any database is opened: bad input is a usage error (exit
 * 2) naming the option or the file's item and field, the same on a schema that was never migrated,
 * on a migrated one and on a database that cannot be reached, and nothing is written. Each call is
 * a separate process.
 */
@RelayDatabaseTest
class WorkInputTest {
  private static final String UNMIGRATED = "relay_never_made";
  private static final String UNREACHABLE = "jdbc:postgresql://127.0.0.1:1/x?connectTimeout=5";

  /**
   * Runs {@code args} on {@code url} and {@code schema}; asserts a usage error whose line starts
   * with {@code expected}, and returns that line.
   */
  private static String refused(String url, String schema, String expected, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--jdbc-url", url, "--schema", schema));
    Cli.Result r = Cli.run(all.toArray(String[]::new));
    assertThat(r.exitCode()).as(r.toString()).isEqualTo(ExitCodes.USAGE);
    List<String> lines = r.err().lines().toList();
    assertThat(lines).as(r.toString()).hasSize(2);
    assertThat(lines.get(0)).as(r.toString()).startsWith(expected);
    assertThat(lines.get(1)).as(r.toString()).isEqualTo("see relay help " + args[0]);
    assertThat(r.out()).as(r.toString()).isEmpty();
    return lines.get(0);
  }

  private static String[] enqueue(String... options) {
    List<String> all = new ArrayList<>(List.of("enqueue", "--id", "a", "--kind", "k"));
    all.addAll(List.of(options));
    if (!all.contains("--payload") && !all.contains("--payload-file")) {
      all.addAll(List.of("--payload", "{}"));
    }
    return all.toArray(String[]::new);
  }

  private static String[] supersede(String newId, String... options) {
    List<String> all =
        new ArrayList<>(
            List.of(
                "supersede", "old-1", "--new-id", newId, "--actor", "mina", "--reason", "typo"));
    all.addAll(List.of(options));
    if (!all.contains("--kind")) {
      all.addAll(List.of("--kind", "k"));
    }
    if (!all.contains("--payload")) {
      all.addAll(List.of("--payload", "{}"));
    }
    return all.toArray(String[]::new);
  }

  private static void assertNoSchemaWasMade(TestDatabase db) throws Exception {
    assertThat(
            db.queryLong("SELECT count(*) FROM pg_namespace WHERE nspname = '" + UNMIGRATED + "'"))
        .isZero();
  }

  @Test
  void badWorkFromOptionsIsAUsageErrorNamingTheOptionOnAnUnmigratedSchema(
      TestDatabase db, @TempDir Path dir) throws Exception {
    Path notJson = Files.writeString(dir.resolve("payload.json"), "{\"total\": ");
    String url = db.jdbcUrl();
    refused(
        url,
        UNMIGRATED,
        "relay enqueue: invalid work: --id 'order 103' may only contain A-Z a-z 0-9",
        "enqueue",
        "--id",
        "order 103",
        "--kind",
        "k",
        "--payload",
        "{}");
    refused(
        url,
        UNMIGRATED,
        "relay enqueue: invalid work 'a': --kind 'send mail' must be 1-100 characters",
        "enqueue",
        "--id",
        "a",
        "--kind",
        "send mail",
        "--payload",
        "{}");
    refused(
        url,
        UNMIGRATED,
        "relay enqueue: invalid work 'a': --payload is not valid JSON",
        enqueue("--payload", "{not json"));
    refused(
        url,
        UNMIGRATED,
        "relay enqueue: invalid work 'a': --payload-file is not valid JSON",
        enqueue("--payload-file", notJson.toString()));
    refused(
        url,
        UNMIGRATED,
        "relay enqueue: invalid work 'a': --queue is empty",
        enqueue("--queue", ""));
    refused(
        url,
        UNMIGRATED,
        "relay enqueue: invalid work 'a': --max-attempts must be between 1 and 10000, was 0",
        enqueue("--max-attempts", "0"));
    refused(
        url,
        UNMIGRATED,
        "relay enqueue: invalid work 'a': --delay must be between zero and 100 years",
        enqueue("--delay", "36501d"));
    refused(
        url,
        UNMIGRATED,
        "relay enqueue: invalid work 'a': --deadline 2026-01-01T00:00:00Z is not after"
            + " --available-at 2026-01-02T00:00:00Z: it could never run",
        enqueue("--available-at", "2026-01-02T00:00:00Z", "--deadline", "2026-01-01T00:00:00Z"));
    assertNoSchemaWasMade(db);
  }

  @Test
  void badFileItemsNameTheItemAndTheFieldAsTheFileDoesOnAnUnmigratedSchema(
      TestDatabase db, @TempDir Path dir) throws Exception {
    Path capped =
        Files.writeString(
            dir.resolve("capped.json"),
            "[{\"work_id\": \"f-1\", \"kind\": \"k\", \"payload\": {}},"
                + " {\"work_id\": \"f-2\", \"kind\": \"k\", \"payload\": {}, \"max_attempts\": 0}]");
    refused(
        db.jdbcUrl(),
        UNMIGRATED,
        "relay enqueue: item 2 of "
            + capped
            + ": invalid work 'f-2': max_attempts must be between 1 and 10000, was 0",
        "enqueue",
        "--file",
        capped.toString());
    Path cycle =
        Files.writeString(
            dir.resolve("cycle.json"),
            "[{\"work_id\": \"c-1\", \"kind\": \"k\", \"payload\": {}, \"depends_on\": [\"c-2\"]},"
                + " {\"work_id\": \"c-2\", \"kind\": \"k\", \"payload\": {},"
                + " \"depends_on\": [\"c-1\"]}]");
    refused(
        db.jdbcUrl(),
        UNMIGRATED,
        "relay enqueue: "
            + cycle
            + ": invalid work 'c-1': depends_on is part of a dependency cycle within one bulk"
            + " call",
        "enqueue",
        "--file",
        cycle.toString());
    assertNoSchemaWasMade(db);
  }

  @Test
  void aBadReplacementIsAUsageErrorNamingTheOptionOnAnUnmigratedSchema(TestDatabase db)
      throws Exception {
    String url = db.jdbcUrl();
    refused(
        url,
        UNMIGRATED,
        "relay supersede: invalid work: --new-id 'old-1 v2' may only contain A-Z a-z 0-9",
        supersede("old-1 v2"));
    refused(
        url,
        UNMIGRATED,
        "relay supersede: --new-id is OLD_ID itself; a corrected intention needs a new work ID",
        supersede("old-1"));
    refused(
        url,
        UNMIGRATED,
        "relay supersede: invalid work 'old-2': --kind 'send mail' must be 1-100 characters",
        supersede("old-2", "--kind", "send mail"));
    refused(
        url,
        UNMIGRATED,
        "relay supersede: invalid work 'old-2': --payload is not valid JSON",
        supersede("old-2", "--payload", "[1,"));
    refused(
        url,
        UNMIGRATED,
        "relay supersede: invalid work 'old-2': --queue 'mail queue' must be 1-100 characters",
        supersede("old-2", "--queue", "mail queue"));
    assertNoSchemaWasMade(db);
  }

  @Test
  void onAMigratedSchemaTheSameInputGetsTheSameAnswerAndChangesNothing(TestDatabase db)
      throws Exception {
    OperatorCommandsTest.insert(db, "old-1", "k", "default");
    refused(
        db.jdbcUrl(),
        db.schema(),
        "relay enqueue: invalid work 'a': --max-attempts must be between 1 and 10000, was 0",
        enqueue("--max-attempts", "0"));
    refused(
        db.jdbcUrl(),
        db.schema(),
        "relay supersede: invalid work 'old-2': --payload is not valid JSON",
        supersede("old-2", "--payload", "[1,"));
    assertThat(
            db.queryString("SELECT string_agg(work_id || ' ' || state, ', ') FROM {schema}.work"))
        .isEqualTo("old-1 ready");
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.supersedes")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.cancel_audit")).isZero();
  }

  /**
   * Core refuses a delay past 100 years repeating the {@code Duration} ({@code PT876024H}); the
   * refusal names the option, or the file's field, and the value as the user typed it.
   */
  @Test
  void aTooLongDelayIsRefusedAsTypedAndNothingIsEnqueued(TestDatabase db, @TempDir Path dir)
      throws Exception {
    String bound = "must be between zero and 100 years, was ";
    // Too long for a Duration, or for a long: the option's range too, not "For input string" or
    // "cannot convert ... (java.lang.ArithmeticException: long overflow)"
    for (String typed :
        new String[] {
          "36501d",
          "876024h",
          "PT876024H",
          "pt876024h",
          "99999999999999999999d",
          "9223372036854775807d",
          "PT9223372036854775807H"
        }) {
      assertThat(
              refused(
                  db.jdbcUrl(),
                  db.schema(),
                  "relay enqueue: invalid work 'a': --delay ",
                  enqueue("--delay", typed)))
          .isEqualTo("relay enqueue: invalid work 'a': --delay " + bound + typed);
    }
    // In a file; the second with a deadline, whose check adds the delay to this machine's clock
    for (String delay : new String[] {"36501d", "99999999999999999999d"}) {
      Path late =
          Files.writeString(
              dir.resolve("late.json"),
              "{\"work_id\": \"f-1\", \"kind\": \"k\", \"payload\": {}, \"delay\": \""
                  + delay
                  + "\", \"deadline\": \"2999-01-01T00:00:00Z\"}");
      assertThat(
              refused(
                  db.jdbcUrl(),
                  db.schema(),
                  "relay enqueue: item 1 of ",
                  "enqueue",
                  "--file",
                  "" + late))
          .isEqualTo(
              "relay enqueue: item 1 of " + late + ": invalid work 'f-1': delay " + bound + delay);
    }
    assertThat(
            refused(
                db.jdbcUrl(),
                db.schema(),
                "relay enqueue: invalid work 'a': --delay ",
                enqueue("--delay", "9223372036854775807s", "--deadline", "2030-01-01T00:00:00Z")))
        .isEqualTo("relay enqueue: invalid work 'a': --delay " + bound + "9223372036854775807s");
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();
  }

  @Test
  void aDelayWithAnAvailableAtIsRefusedNamingBothInOptionsAndInAFileItem(
      TestDatabase db, @TempDir Path dir) throws Exception {
    refused(
        db.jdbcUrl(),
        db.schema(),
        "relay enqueue: give --delay or --available-at, not both",
        enqueue("--delay", "2h", "--available-at", "2026-12-10T00:00:00Z"));
    Path both =
        Files.writeString(
            dir.resolve("both.json"),
            "[{\"work_id\": \"f-1\", \"kind\": \"k\", \"payload\": {}},"
                + " {\"work_id\": \"f-2\", \"kind\": \"k\", \"payload\": {}, \"delay\": \"2h\","
                + " \"available_at\": \"2026-12-10T00:00:00Z\"}]");
    refused(
        db.jdbcUrl(),
        db.schema(),
        "relay enqueue: item 2 of " + both + ": give delay or available_at, not both",
        "enqueue",
        "--file",
        both.toString());
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();
  }

  @Test
  void aDeadlineThatPassesBeforeTheWorkIsReadyIsRefusedAndALaterOneTaken(
      TestDatabase db, @TempDir Path dir) throws Exception {
    refused(
        db.jdbcUrl(),
        db.schema(),
        "relay enqueue: --deadline 2020-01-01T00:00:00Z is not after this machine's clock (",
        enqueue("--deadline", "2020-01-01T00:00:00Z"));
    String inAnHour = Instant.now().plus(Duration.ofHours(1)).toString();
    String line =
        refused(
            db.jdbcUrl(),
            db.schema(),
            "relay enqueue: --deadline " + inAnHour + " is not after the end of --delay",
            enqueue("--delay", "2h", "--deadline", inAnHour));
    assertThat(line).endsWith("the work could never run; the first claim would fail it (deadline)");
    Path late =
        Files.writeString(
            dir.resolve("late.json"),
            "[{\"work_id\": \"f-1\", \"kind\": \"k\", \"payload\": {},"
                + " \"deadline\": \"2020-01-01T00:00:00Z\"}]");
    refused(
        db.jdbcUrl(),
        db.schema(),
        "relay enqueue: item 1 of "
            + late
            + ": deadline 2020-01-01T00:00:00Z is not after this machine's clock (",
        "enqueue",
        "--file",
        late.toString());
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isZero();

    Cli.Result r =
        Cli.run(
            "enqueue",
            "--id",
            "in-time",
            "--kind",
            "k",
            "--payload",
            "{}",
            "--delay",
            "1h",
            "--deadline",
            Instant.now().plus(Duration.ofDays(1)).toString(),
            "--jdbc-url",
            db.jdbcUrl(),
            "--schema",
            db.schema());
    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work")).isOne();
  }

  @Test
  void everyUnreadableFileFieldIsNamedAndAnOutOfRangeIntegerGetsItsRange(
      TestDatabase db, @TempDir Path dir) throws Exception {
    String[][] cases = {
      {"\"delay\": \"-5m\"", "delay '-5m' is not a duration: use 500ms"},
      {"\"available_at\": \"tomorrow\"", "available_at 'tomorrow' is not an ISO-8601 instant"},
      {"\"deadline\": 7", "deadline '7' is not an ISO-8601 instant"},
      {
        "\"max_attempts\": 99999999999",
        "invalid work 'f-2': max_attempts must be between 1 and 10000, was 99999999999"
      },
      {
        "\"priority\": -99999999999",
        "invalid work 'f-2': priority must be between -2147483648 and 2147483647, was"
            + " -99999999999"
      },
      {"\"max_attempts\": 2.5", "max_attempts must be an integer, was 2.5"},
    };
    for (String[] c : cases) {
      Path file =
          Files.writeString(
              dir.resolve("items.json"),
              "[{\"work_id\": \"f-1\", \"kind\": \"k\", \"payload\": {}},"
                  + " {\"work_id\": \"f-2\", \"kind\": \"k\", \"payload\": {}, "
                  + c[0]
                  + "}]");
      refused(
          UNREACHABLE,
          "relay",
          "relay enqueue: item 2 of " + file + ": " + c[1],
          "enqueue",
          "--file",
          file.toString());
    }
  }

  @Test
  void nothingConnectsBeforeTheInputIsChecked() {
    // An unreachable database would be exit 3: the input is refused first.
    refused(
        UNREACHABLE,
        "relay",
        "relay enqueue: invalid work 'a': --max-attempts must be between 1 and 10000, was 0",
        enqueue("--max-attempts", "0"));
    refused(UNREACHABLE, "relay", "relay supersede: --new-id is OLD_ID itself", supersede("old-1"));
  }
}
