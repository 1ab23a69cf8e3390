package dev.relay.app;

import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import dev.relay.admin.Admin;
import dev.relay.admin.SupersedeResult;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;

/** {@code relay supersede}: replaces work with a corrected intention under a new ID. */
@Command(
    name = "supersede",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    header = "Replaces work with a corrected intention under a new ID.",
    description = {
      "Replaces work with a corrected intention, in one transaction: the replacement is enqueued under its NEW work ID, a supersedes link records which work it replaces, and the old work is cancelled (ready: at once; running: by request, an in-flight call is not recalled). The old ID keeps its payload: a work ID always means one payload.",
      "",
      "Refused (exit 1): the old work is done (its effect happened; send a compensation as new work instead), the old work is already superseded (one live replacement per work: supersede that replacement to correct it again), or the new ID is already used. Repeating the same supersede changes nothing.",
      ""
    })
final class SupersedeCommand extends DbCommand {
  /** A supersede enqueues the replacement: the operator's action with the producer's insert. */
  @Override
  List<String> roles() {
    return List.of("operator", "producer");
  }

  @Parameters(index = "0", paramLabel = "OLD_ID", description = "The work to replace.")
  String oldId;

  @Option(
      names = "--new-id",
      paramLabel = "WORK_ID",
      required = true,
      description = "The replacement's work ID.")
  String newId;

  @Option(names = "--kind", paramLabel = "KIND", required = true, description = "Its kind.")
  String kind;

  @Option(names = "--payload", paramLabel = "JSON", description = "Its payload, as JSON text.")
  String payload;

  @Option(
      names = "--payload-file",
      paramLabel = "FILE",
      description = "Reads its payload from FILE (- for stdin).")
  String payloadFile;

  @Option(names = "--queue", paramLabel = "QUEUE", description = "Its queue (default: default).")
  String queue;

  @Mixin AuditOptions audit;

  /** The end of {@link WorkConflictException}'s message: advice to a Java caller. */
  static final String CONFLICT_ADVICE =
      "; roll back, and use a new work ID for a corrected intention";

  private Work replacement;

  @Override
  void prepare() throws IOException {
    if ((payload == null) == (payloadFile == null)) {
      throw new ParameterException(
          spec.commandLine(), "give exactly one of --payload and --payload-file");
    }
    String body = payload;
    if (payloadFile != null) {
      if (payloadFile.equals("-")) {
        body = new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
      } else if (Files.isRegularFile(Path.of(payloadFile))) {
        body = Files.readString(Path.of(payloadFile), StandardCharsets.UTF_8);
      } else {
        throw new ParameterException(
            spec.commandLine(), "cannot read " + payloadFile + ": no such file");
      }
    }
    requireWorkId("OLD_ID", oldId);
    audit.check(this);
    replacement = Work.of(newId, kind, body);
    if (queue != null) {
      replacement = replacement.queue(queue);
    }
    // The checks the enqueue of the replacement makes, before the database: a refusal names the
    // field, which RelayCommand turns into the option (--new-id, --kind, --payload, --queue).
    Outbox.builder().schema(schema).build().validate(replacement);
    if (newId.equals(oldId)) {
      throw usage("--new-id is OLD_ID itself; a corrected intention needs a new work ID");
    }
  }

  @Override
  int run(Database db) throws Exception {
    requireCurrentSchema(db);
    SupersedeResult r;
    try {
      r =
          Admin.create(db.dataSource(), schema)
              .supersede(oldId, replacement, audit.actor, audit.reason);
    } catch (WorkConflictException e) {
      // The admin API's advice is for a Java caller's transaction; this one is already undone.
      throw CommandFailure.refused(
          e.getMessage()
              .replace(
                  CONFLICT_ADVICE,
                  "; nothing changed: give another --new-id, one no work has used"));
    }
    String old =
        switch (r.oldWork()) {
          case CANCELLED -> "cancelled";
          case CANCEL_REQUESTED ->
              "cancel requested (it was running; an in-flight call is not recalled)";
          case ALREADY_FINISHED -> "had already ended (left as it was)";
          case NOT_FOUND -> "not found";
        };
    out()
        .println(
            (r.repeated() ? "already superseded: " : "superseded ")
                + r.oldWorkId()
                + " by "
                + r.newWorkId()
                + "; old work "
                + old);
    return ExitCodes.OK;
  }
}
