package dev.relay.serve;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The repository's {@code ./relay} script on the {@code serve} route: only a start of serve makes
 * the class-data-sharing archive (a training run of some 20 s); help and version, which start
 * nothing, never wait for it. The script runs in a directory with a relay-serve jar (a few bytes)
 * and a {@code java} on the PATH that records each call and makes what the real one would (the
 * extracted jar, the archive).
 */
class LauncherTest {
  private static final String JAR = "relay-serve-0.1.0-SNAPSHOT-all.jar";

  @TempDir Path root;

  @BeforeEach
  void setUp() throws Exception {
    Files.copy(Path.of("..", "relay"), root.resolve("relay"));
    Path target = Files.createDirectories(root.resolve("relay-serve").resolve("target"));
    Files.writeString(target.resolve(JAR), "not really a jar");
    Path java = Files.createDirectories(root.resolve("bin")).resolve("java");
    Files.writeString(
        java,
        """
        #!/bin/sh
        echo "$*" >>"$RELAY_TEST_CALLS"
        prev=
        for a in "$@"; do
          case "$a" in
            -XX:ArchiveClassesAtExit=*) : >"${a#-XX:ArchiveClassesAtExit=}" ;;
          esac
          if [ "$prev" = --destination ]; then
            mkdir -p "$a" && : >"$a/relay-serve-0.1.0-SNAPSHOT-all.jar"
          fi
          prev="$a"
        done
        """,
        StandardCharsets.UTF_8);
    Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  @Test
  void helpAndVersionStartWithoutATrainingRun() throws Exception {
    for (List<String> args :
        List.of(
            List.of("serve", "--help"),
            List.of("serve", "-h"),
            List.of("serve", "--version"),
            List.of("serve", "-V"),
            List.of("serve", "--config", "app.yml", "--help"),
            List.of("help", "serve"),
            List.of("passwd", "--help"))) {
      List<String> calls = relay(args);
      assertThat(calls).as("java calls for relay %s", args).hasSize(1);
      assertThat(calls.get(0))
          .as("relay %s", args)
          .doesNotContain("ArchiveClassesAtExit")
          .doesNotContain("SharedArchiveFile")
          .contains(JAR);
    }
    assertThat(root.resolve("relay-serve/target/cds")).doesNotExist();
  }

  @Test
  void aStartTrainsOnceAndThenHelpUsesTheArchive() throws Exception {
    List<String> start = relay(List.of("serve", "--config", "app.yml"));
    assertThat(start).hasSize(3);
    assertThat(start.get(0)).contains("-Djarmode=tools");
    assertThat(start.get(1)).contains("-XX:ArchiveClassesAtExit=").contains("--training-run");
    assertThat(start.get(2)).contains("-XX:SharedArchiveFile=").endsWith("serve --config app.yml");

    assertThat(relay(List.of("serve", "--config", "app.yml"))).hasSize(1);
    List<String> help = relay(List.of("serve", "--help"));
    assertThat(help).hasSize(1);
    assertThat(help.get(0)).contains("-XX:SharedArchiveFile=").endsWith("serve --help");
  }

  /** Runs {@code ./relay args}; returns the java command lines it ran, one per call. */
  private List<String> relay(List<String> args) throws Exception {
    Path calls = root.resolve("calls.txt");
    Files.deleteIfExists(calls);
    List<String> command = new ArrayList<>(List.of("bash", root.resolve("relay").toString()));
    command.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
    pb.environment().put("PATH", root.resolve("bin") + ":" + System.getenv("PATH"));
    pb.environment().put("RELAY_TEST_CALLS", calls.toString());
    pb.environment().remove("RELAY_JAVA_OPTS");
    Process p = pb.start();
    String printed = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(1, TimeUnit.MINUTES)).as(printed).isTrue();
    assertThat(p.exitValue()).as(printed).isZero();
    return Files.exists(calls) ? Files.readAllLines(calls) : List.of();
  }
}
