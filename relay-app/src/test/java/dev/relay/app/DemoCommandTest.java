package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;

/** Runs {@code relay demo} as its own process, as a newcomer would, and reads what it printed. */
// The demo owns the fixed schemas relay_demo and shop_demo of its database and recreates them on
// every run: its two tests must not run side by side (this module runs tests concurrently).
@ResourceLock("relay-demo-schemas")
@RelayDatabaseTest
class DemoCommandTest {
  @TempDir Path tmp;

  private record Run(int exit, String out) {}

  private Run demo(TestDatabase db, String stdin, String... options) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("dev.relay.app.RelayCommand");
    cmd.add("demo");
    cmd.add("--jdbc-url");
    cmd.add(db.jdbcUrl());
    cmd.addAll(List.of(options));
    File out = tmp.resolve("demo-" + System.nanoTime() + ".log").toFile();
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out).start();
    try (OutputStream in = p.getOutputStream()) {
      in.write(stdin.getBytes(StandardCharsets.UTF_8));
    } catch (IOException ignored) {
      // The demo may have finished before reading its input.
    }
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("demo did not finish: " + Files.readString(out.toPath()));
    }
    return new Run(p.exitValue(), Files.readString(out.toPath()));
  }

  @Test
  void demoTellsTheWholeStoryAndExitsZero(TestDatabase db) throws Exception {
    Run r = demo(db, "");

    assertThat(r.exit()).as(r.out()).isZero();
    assertThat(r.out())
        .contains("purchase-103")
        .contains("total=29.00  status=pending  payment_ref=null")
        .contains("sku=P3  stock=10", "sku=P7  stock=0", "sku=P9  stock=4")
        .contains("work_id=order-103-ack  kind=order_received  state=ready")
        .contains("replayed=true")
        .contains("p7_requests=0")
        .contains("Worker A claims order-103-ack (generation 7)")
        .contains("Worker B claims the next generation (8)")
        .contains("Generations: A held 7, B now holds 8")
        .contains("Emails sent by the deduplicating mailer: 1 (one email with deduplication)")
        .contains("Emails sent without deduplication: 2 (two without deduplication)")
        .contains("Refused as stale: generation 7 no longer owns the row")
        .contains("ending=stale_write")
        .contains("state=done  claim_generation=8  claimed_by=null  attempts=2  outcome=delivered")
        .contains("stale fencing token 7 for order-103-ack: token 8 was already accepted")
        .contains("ready=0  running=0  done=1  failed=0  cancelled=0  expired_leases=0")
        .doesNotContain("UNEXPECTED");
  }

  @Test
  void stepPausesAfterEachStepAndKeepPrintsHowToConnect(TestDatabase db) throws Exception {
    Run r = demo(db, "\n".repeat(20), "--step", "--keep");

    assertThat(r.exit()).as(r.out()).isZero();
    assertThat(r.out().split("\\(Enter for the next step\\)", -1)).hasSize(12);
    assertThat(r.out()).contains("psql -h " + db.host() + " -p " + db.port());
  }
}
