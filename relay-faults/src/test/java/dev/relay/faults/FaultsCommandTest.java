package dev.relay.faults;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Relay;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

/** The command line of {@code relay faults} as the launcher runs it, without running the suite. */
class FaultsCommandTest {
  @Test
  void versionIsRelaysAsEveryOtherCommandPrintsIt() {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = FaultsCommand.execute(new PrintWriter(out, true), new PrintWriter(err, true), "-V");
    assertThat(code).as(err.toString()).isZero();
    assertThat(out.toString()).isEqualTo("relay " + Relay.version() + "\n");
  }
}
