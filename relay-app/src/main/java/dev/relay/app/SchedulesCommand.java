package dev.relay.app;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.relay.schedule.ScheduleStatus;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code relay schedules}: recurring schedules with their last and next slots. */
@Command(
    name = "schedules",
    mixinStandardHelpOptions = true,
    header = "Lists recurring schedules with their last and next slots.",
    description = {
      "Lists the schedules that schedulers (module relay-schedule) registered in the schema: the kind of the work each slot becomes, the definition (cron expression and zone, or interval; missed-slot policy), the last slot decided (enqueued, or dropped by the policy), the next slot, when and by which scheduler the last decision was made, and the counts of slots enqueued, dropped, and found already taken.",
      "A slot becomes one work item with the ID <name>@<slot>; that is one item per slot, not one execution: its delivery can repeat like any work's.",
      "",
      "--json prints one object: {\"schema\", \"schedules\": [{\"name\", \"kind\", \"definition\", \"last_slot\", \"next_slot\", \"decided_at\", \"decided_by\", \"enqueued\", \"skipped\", \"conflicts\", \"created_at\"}]}.",
      ""
    })
final class SchedulesCommand extends DbCommand {
  @Option(names = "--json", description = "Prints one JSON object instead of a table.")
  boolean json;

  @Override
  int run(Database db) throws Exception {
    requireCurrentSchema(db);
    List<ScheduleStatus> schedules = ScheduleStatus.list(db.dataSource(), schema);
    if (json) {
      ObjectNode root = Json.object();
      root.put("schema", schema);
      ArrayNode list = root.putArray("schedules");
      for (ScheduleStatus s : schedules) {
        ObjectNode o = list.addObject();
        o.put("name", s.name());
        o.put("kind", s.kind());
        o.put("definition", s.definition());
        Json.put(o, "last_slot", s.lastSlot());
        Json.put(o, "next_slot", s.nextSlot());
        Json.put(o, "decided_at", s.decidedAt());
        Json.put(o, "decided_by", s.decidedBy());
        o.put("enqueued", s.enqueued());
        o.put("skipped", s.skipped());
        o.put("conflicts", s.conflicts());
        Json.put(o, "created_at", s.createdAt());
      }
      out().println(Json.pretty(root));
      return ExitCodes.OK;
    }
    if (schedules.isEmpty()) {
      out().println("schema " + schema + ": no schedules");
      return ExitCodes.OK;
    }
    TextTable t =
        new TextTable(
            "NAME",
            "KIND",
            "LAST_SLOT",
            "NEXT_SLOT",
            "ENQUEUED",
            "SKIPPED",
            "CONFLICTS",
            "DEFINITION");
    for (ScheduleStatus s : schedules) {
      t.row(
          s.name(),
          s.kind(),
          s.lastSlot(),
          s.nextSlot(),
          s.enqueued(),
          s.skipped(),
          s.conflicts(),
          s.definition());
    }
    t.print(out());
    return ExitCodes.OK;
  }
}
