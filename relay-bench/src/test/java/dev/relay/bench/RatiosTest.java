package dev.relay.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The table of ratios a run prints: each row tells what it measured, and nothing unmeasured passes.
 */
class RatiosTest {
  private static String table(Report report) {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    Ratios.print(report, new PrintStream(buffer, true, StandardCharsets.UTF_8));
    return buffer.toString(StandardCharsets.UTF_8);
  }

  private static Report report() {
    return new Report(new PrintStream(OutputStream.nullOutputStream()));
  }

  @Test
  void aPeakHeapOfZeroIsNotMeasuredAndDoesNotPass() {
    Report report = report();
    report
        .add(
            new Scenario(
                "memory-heap-peak-live", "relay", RelayBench.params("backlog", 1_000), "MiB"))
        .add(0);

    assertThat(table(report))
        .contains("| memory-heap-peak-live (MiB, backlog=1000) | - |")
        .contains("not measured: no collection ran")
        .doesNotContain("| yes |");
  }

  @Test
  void aMeasuredPeakHeapIsHeldAgainstItsCeiling() {
    Report report = report();
    report
        .add(
            new Scenario(
                "memory-heap-peak-live", "relay", RelayBench.params("backlog", 1_000_000), "MiB"))
        .add(19.4);

    assertThat(table(report)).contains("| memory-heap-peak-live (MiB, backlog=1000000) | 19.4");
  }

  @Test
  void rowsOfTheSameNameAreToldApartByTheirParameters() {
    Report report = report();
    for (int handlerMillis : new int[] {0, 10}) {
      report
          .add(
              new Scenario(
                  "stranded-vs-bound",
                  "relay",
                  RelayBench.params("handler_ms", handlerMillis),
                  "ratio"))
          .add(0.05);
    }

    assertThat(table(report))
        .contains("| stranded-vs-bound (handler_ms=0) |")
        .contains("| stranded-vs-bound (handler_ms=10) |");
  }
}
