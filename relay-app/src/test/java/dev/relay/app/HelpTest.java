package dev.relay.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;

/** Every command's help is complete: a summary, a description, described options, exit codes. */
class HelpTest {
  @Test
  void everyCommandDescribesItselfItsArgumentsAndItsExitCodes() {
    CommandLine root = RelayCommand.newCommandLine();
    for (Map.Entry<String, CommandLine> e : root.getSubcommands().entrySet()) {
      if (e.getKey().equals("help") || e.getKey().equals("demo")) {
        continue; // picocli's own, and the demo's (documented by its owner)
      }
      CommandSpec spec = e.getValue().getCommandSpec();
      assertThat(spec.usageMessage().header()).as(e.getKey() + " header").isNotEmpty();
      assertThat(spec.usageMessage().description()).as(e.getKey() + " description").isNotEmpty();
      for (ArgSpec arg : spec.args()) {
        assertThat(arg.description()).as(e.getKey() + " " + arg.paramLabel()).isNotEmpty();
      }
      String usage = e.getValue().getUsageMessage();
      assertThat(usage).as(e.getKey()).contains("Exit codes:", "database unavailable");
    }
  }
}
