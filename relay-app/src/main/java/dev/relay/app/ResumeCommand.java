package dev.relay.app;

import dev.relay.admin.Admin;
import dev.relay.admin.Pause;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code relay resume}: lifts a pause and wakes the workers, audited. */
@Command(
    name = "resume",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    header = "Lifts the pause of a queue, a kind, or a (queue, kind) pair, audited.",
    description = {
      "Lifts the pause of exactly the target given (the same --queue and --kind as paused: resuming one kind does not lift a pause of its whole queue) and wakes the workers, which claim the held work at once.",
      "",
      "Exit 1 when no pause of that target was in force (the call is still audited).",
      ""
    })
final class ResumeCommand extends DbCommand {
  @Mixin PauseTarget target;

  @Mixin AuditOptions audit;

  @Override
  void prepare() {
    if (!target.any()) {
      throw usage("give --queue Q, --kind K, or both");
    }
    target.check(this);
    audit.check(this);
  }

  @Override
  int run(Database db) throws Exception {
    requireCurrentSchema(db);
    Admin admin = Admin.create(db.dataSource(), schema);
    Optional<Pause> lifted = admin.resume(target.queue, target.kind, audit.actor, audit.reason);
    if (lifted.isEmpty()) {
      throw CommandFailure.refused(
          target.describe() + " is not paused (relay status lists the pauses in force)");
    }
    Pause p = lifted.get();
    out()
        .println(
            "resumed "
                + target.describe()
                + " (paused since "
                + p.pausedAt()
                + " by "
                + p.actor()
                + ": "
                + p.reason()
                + ")");
    return ExitCodes.OK;
  }
}
