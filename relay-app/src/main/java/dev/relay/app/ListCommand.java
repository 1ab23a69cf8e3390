package dev.relay.app;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.relay.admin.Admin;
import dev.relay.admin.WorkItem;
import dev.relay.admin.WorkPage;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code relay list}: one page of work, oldest first, with filters and a cursor. */
@Command(
    name = "list",
    mixinStandardHelpOptions = true,
    header = "Lists work, with filters and a cursor.",
    description = {
      "Lists work matching the filters (which combine with AND), oldest first, one page at a time. When more follows, the last line gives the --after cursor of the next page (keyset pagination: pages neither skip nor repeat items while work changes). --json prints {\"items\": [...], \"next_cursor\": \"...\" or null}.",
      ""
    })
final class ListCommand extends DbCommand {
  @Mixin FilterOptions filters;

  @Option(
      names = "--after",
      paramLabel = "CURSOR",
      description = "Continues after the page that printed this cursor.")
  String after;

  @Option(
      names = "--limit",
      paramLabel = "N",
      defaultValue = "50",
      description = "Items per page, 1-" + Admin.MAX_PAGE_SIZE + " (default: ${DEFAULT-VALUE}).")
  int limit;

  @Option(names = "--json", description = "Prints JSON instead of a table.")
  boolean json;

  @Override
  Map<String, Range> ranges() {
    return Map.of("--limit", new Range(1, Admin.MAX_PAGE_SIZE));
  }

  @Override
  void prepare() {
    filters.check(this);
    requireRange("--limit", limit);
    Admin.validateCursor(after); // RelayCommand names --after in the refusal
  }

  @Override
  int run(Database db) throws Exception {
    requireCurrentSchema(db);
    WorkPage page = Admin.create(db.dataSource(), schema).list(filters.filter(), after, limit);
    if (json) {
      ObjectNode root = Json.object();
      ArrayNode items = root.putArray("items");
      page.items().forEach(w -> items.add(Views.item(w)));
      Json.put(root, "next_cursor", page.nextCursor());
      out().println(Json.pretty(root));
      return ExitCodes.OK;
    }
    if (page.items().isEmpty()) {
      out().println("no work matches");
      return ExitCodes.OK;
    }
    TextTable t =
        new TextTable(
            "WORK_ID", "KIND", "QUEUE", "STATE", "ATTEMPTS", "GEN", "CREATED_AT", "LAST_ERROR");
    for (WorkItem w : page.items()) {
      t.row(
          w.workId(),
          w.kind(),
          w.queue(),
          w.state(),
          w.attempts() + "/" + w.maxAttempts(),
          w.generation(),
          w.createdAt(),
          brief(w));
    }
    t.print(out());
    if (page.nextCursor() != null) {
      out().println("more: --after " + page.nextCursor());
    }
    return ExitCodes.OK;
  }

  private static String brief(WorkItem w) {
    if (w.lastError() == null && w.lastErrorKind() == null) {
      return null;
    }
    String text =
        w.lastErrorKind() == null ? w.lastError() : w.lastErrorKind() + ": " + w.lastError();
    text = text.replace('\n', ' ');
    return text.length() > 60 ? text.substring(0, 57) + "..." : text;
  }
}
