package dev.relay.internal.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** What a worker registers as its host: a machine name an operator can find, and the process. */
class WorkerHeartbeatTest {
  @Test
  void theHostNamesTheMachineAndTheProcessWhetherOrNotHostnameIsExported() {
    // a shell keeps HOSTNAME unexported and systemd sets none: the machine's name is still given
    assertThat(WorkerHeartbeat.host())
        .matches("\\S+ pid \\d+")
        .endsWith(" pid " + ProcessHandle.current().pid());
  }
}
