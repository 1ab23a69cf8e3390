package dev.relay.app;

import static dev.relay.app.CommandLineTest.on;
import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import org.junit.jupiter.api.Test;

/** {@code relay supersede} of work that already has a replacement, run as a process. */
@RelayDatabaseTest
class SupersedeCommandTest {
  private static Cli.Result supersede(TestDatabase db, String oldId, String newId) {
    return Cli.run(
        on(
            db,
            "supersede",
            oldId,
            "--new-id",
            newId,
            "--kind",
            "mail",
            "--payload",
            "{\"total\": 27}",
            "--actor",
            "mina",
            "--reason",
            "wrong total"));
  }

  @Test
  void aSecondSupersedeExitsOneNamingTheReplacementInOneLineAndChangesNothing(TestDatabase db)
      throws Exception {
    OperatorCommandsTest.insert(db, "order-1", "mail", "default");
    Cli.Result first = supersede(db, "order-1", "order-1b");
    assertThat(first.exitCode()).as(first.toString()).isZero();

    Cli.Result second = supersede(db, "order-1", "order-1c");

    assertThat(second.exitCode()).as(second.toString()).isEqualTo(1);
    // One line: the command's name, then the refusal.
    assertThat(second.err().lines().toList())
        .as(second.toString())
        .singleElement()
        .asString()
        .endsWith(
            "supersede: cannot supersede 'order-1': it is already superseded by 'order-1b'; to"
                + " correct it again, supersede 'order-1b'");
    assertThat(second.out()).isEmpty();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.work WHERE work_id = 'order-1c'"))
        .isZero();
    assertThat(db.queryLong("SELECT count(*) FROM {schema}.supersedes")).isEqualTo(1);

    // The way to correct it again.
    Cli.Result chained = supersede(db, "order-1b", "order-1c");
    assertThat(chained.exitCode()).as(chained.toString()).isZero();
    assertThat(chained.out()).contains("superseded order-1b by order-1c; old work cancelled");
  }
}
