package dev.relay.app;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.relay.admin.Admin;
import dev.relay.admin.Dependency;
import dev.relay.admin.WorkDetail;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code relay show ID}: one item with its history, audits and supersede links. */
@Command(
    name = "show",
    mixinStandardHelpOptions = true,
    header = "Shows one item with its history, audits and links.",
    description = {
      "Shows one work item: the row, its payload and result, the attempt history (each claim generation that did not end in plain success), the redrive and cancel audits, the supersedes links in both directions, and the work it depends on with the reason it is blocked, if any. Exit 1 when no work has the ID (never enqueued, or purged).",
      ""
    })
final class ShowCommand extends DbCommand {
  @Parameters(index = "0", paramLabel = "ID", description = "The work ID.")
  String workId;

  @Option(names = "--json", description = "Prints one JSON object.")
  boolean json;

  @Override
  void prepare() {
    requireWorkId("ID", workId);
  }

  @Override
  int run(Database db) throws Exception {
    requireCurrentSchema(db);
    Admin admin = Admin.create(db.dataSource(), schema);
    Optional<WorkDetail> detail = admin.show(workId);
    if (detail.isEmpty()) {
      throw CommandFailure.refused(
          "no work has ID '" + workId + "' in schema " + schema + " (never enqueued, or purged)");
    }
    List<Dependency> dependencies = admin.dependencies(workId);
    Optional<Dependency> blockedBy =
        dependencies.isEmpty() ? Optional.empty() : admin.blockedBy(workId);
    if (json) {
      ObjectNode o = Views.detail(detail.get());
      ArrayNode list = o.putArray("depends_on");
      for (Dependency d : dependencies) {
        ObjectNode n = list.addObject();
        n.put("work_id", d.workId());
        Json.put(n, "state", d.state());
      }
      Json.put(o, "blocked_reason", blockedBy.map(Dependency::blockedReason).orElse(null));
      Json.put(o, "blocked_by", blockedBy.map(Dependency::workId).orElse(null));
      out().println(Json.pretty(o));
    } else {
      Views.printDetail(out(), detail.get());
      if (!dependencies.isEmpty()) {
        out()
            .printf(
                "%-20s %s%n",
                "depends_on",
                dependencies.stream()
                    .map(d -> d.workId() + " (" + (d.state() == null ? "gone" : d.state()) + ")")
                    .collect(Collectors.joining(", ")));
        out()
            .printf(
                "%-20s %s%n",
                "blocked",
                blockedBy.map(d -> d.blockedReason() + " (" + d.workId() + ")").orElse("-"));
      }
    }
    return ExitCodes.OK;
  }
}
