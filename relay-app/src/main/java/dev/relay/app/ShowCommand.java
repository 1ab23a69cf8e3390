package dev.relay.app;

import dev.relay.admin.Admin;
import dev.relay.admin.WorkDetail;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code relay show ID}: one item with its history, audits and supersede links. */
@Command(
    name = "show",
    mixinStandardHelpOptions = true,
    header = "Shows one item with its history, audits and links.",
    description = {
      "Shows one work item: the row, its payload and result, the attempt history (each claim generation that did not end in plain success), the redrive and cancel audits, and the supersedes links in both directions. Exit 1 when no work has the ID (never enqueued, or purged).",
      ""
    })
final class ShowCommand extends DbCommand {
  @Parameters(index = "0", paramLabel = "ID", description = "The work ID.")
  String workId;

  @Option(names = "--json", description = "Prints one JSON object.")
  boolean json;

  @Override
  int run(Database db) throws Exception {
    requireCurrentSchema(db);
    Optional<WorkDetail> detail = Admin.create(db.dataSource(), schema).show(workId);
    if (detail.isEmpty()) {
      throw CommandFailure.refused(
          "no work has ID '" + workId + "' in schema " + schema + " (never enqueued, or purged)");
    }
    if (json) {
      out().println(Json.pretty(Views.detail(detail.get())));
    } else {
      Views.printDetail(out(), detail.get());
    }
    return ExitCodes.OK;
  }
}
