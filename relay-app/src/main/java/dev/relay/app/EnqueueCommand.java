package dev.relay.app;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.relay.EnqueueResult;
import dev.relay.InvalidWorkException;
import dev.relay.KindPolicy;
import dev.relay.Outbox;
import dev.relay.Work;
import dev.relay.WorkConflictException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code relay enqueue}: adds work from options or a JSON file, all in one transaction. */
@Command(
    name = "enqueue",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    header = "Adds work from options or a JSON file, in one transaction.",
    description = {
      "Adds work, from options (one item) or from a JSON file (one object or an array), in ONE transaction: every item is enqueued, or none.",
      "",
      "An ID already stored with the same kind and a jsonb-equal payload is reported as 'already enqueued' (an idempotent retry); a different kind or payload under a used ID is refused (exit 1), also after the old work was purged (its tombstone remains).",
      "",
      "File items take the fields work_id, kind, payload (any JSON value) and optionally queue, priority, delay (30s, 5m, PT1H) or available_at (an ISO-8601 instant; not both), deadline (ISO-8601), max_attempts, group (for per-group limits) and depends_on (an array of work IDs that must be done first: stored work, or items of the same file). Items are numbered from 1 in errors (a file of one object holds item 1); --file - reads standard input. Two items with the same work_id are a usage error. Example:",
      "  [{\"work_id\": \"order-103-charge\", \"kind\": \"charge\",",
      "    \"payload\": {\"order_id\": 103}, \"group\": \"customer-7\"},",
      "   {\"work_id\": \"order-103-ship\", \"kind\": \"ship\",",
      "    \"payload\": {\"order_id\": 103}, \"depends_on\": [\"order-103-charge\"]}]",
      ""
    })
final class EnqueueCommand extends DbCommand {
  /** Enqueueing is the producer's: the operator role may not insert work. */
  @Override
  List<String> roles() {
    return List.of("producer");
  }

  /** The fields a file item takes, in the order the help names them (and errors list them). */
  private static final List<String> FIELDS =
      List.of(
          "work_id",
          "kind",
          "payload",
          "queue",
          "priority",
          "delay",
          "available_at",
          "deadline",
          "max_attempts",
          "group",
          "depends_on");

  @Option(names = "--id", paramLabel = "WORK_ID", description = "The work ID (one item).")
  String id;

  @Option(names = "--kind", paramLabel = "KIND", description = "The kind (selects the handler).")
  String kind;

  @Option(names = "--payload", paramLabel = "JSON", description = "The payload, as JSON text.")
  String payload;

  @Option(
      names = "--payload-file",
      paramLabel = "FILE",
      description = "Reads the payload from FILE (- for stdin).")
  String payloadFile;

  @Option(names = "--queue", paramLabel = "QUEUE", description = "The queue (default: default).")
  String queue;

  @Option(names = "--priority", paramLabel = "N", description = "Claim priority; higher first.")
  Integer priority;

  @Option(
      names = "--delay",
      paramLabel = "DURATION",
      converter = Durations.class,
      description =
          "Not claimed before this delay from now (30s, 5m, PT1H); not with --available-at.")
  Duration delay;

  @Option(
      names = "--available-at",
      paramLabel = "INSTANT",
      description = "Not claimed before this instant (ISO-8601, like 2026-01-31T12:00:00Z).")
  Instant availableAt;

  @Option(
      names = "--deadline",
      paramLabel = "INSTANT",
      description =
          "Business deadline (ISO-8601); failed with reason deadline after it. Must be after"
              + " --available-at, or after this machine's clock plus --delay.")
  Instant deadline;

  @Option(names = "--max-attempts", paramLabel = "N", description = "Attempt cap (1-10000).")
  Integer maxAttempts;

  @Option(
      names = {"-f", "--file"},
      paramLabel = "FILE",
      description = "Reads items from a JSON file (- for stdin) instead of the options above.")
  String file;

  @Option(names = "--json", description = "Prints the results as JSON.")
  boolean json;

  private Outbox outbox;
  private List<Work> works;

  /**
   * Reads the work and checks it as the enqueue will (core's {@link Outbox#validate} rules), so
   * that bad input is a usage error naming the option, or the file's item, before any database is
   * opened: also when the schema is missing or not migrated.
   */
  /** Core's range of an attempt cap, which its validation checks; named here for a huge value. */
  @Override
  Map<String, Range> ranges() {
    return Map.of("--max-attempts", new Range(1, KindPolicy.MAX_ATTEMPTS_LIMIT));
  }

  @Override
  void prepare() throws IOException {
    outbox = Outbox.builder().schema(schema).build();
    works = file != null ? fromFile() : List.of(fromOptions());
    if (works.isEmpty()) {
      throw usage((file.equals("-") ? "standard input" : "the file " + file) + " holds no items");
    }
  }

  @Override
  int run(Database db) throws Exception {
    requireCurrentSchema(db);
    List<EnqueueResult> results;
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try {
        results = outbox.enqueueAll(c, works);
        c.commit();
      } catch (WorkConflictException e) {
        c.rollback();
        // The library's advice ("roll back") is for a Java caller; this transaction is undone.
        throw CommandFailure.refused(
            e.getMessage()
                .replace(
                    SupersedeCommand.CONFLICT_ADVICE,
                    "; nothing was enqueued: a corrected intention needs a new work ID (relay"
                        + " supersede replaces the stored work with it)"));
      } catch (Exception e) {
        c.rollback();
        throw e;
      }
    }
    int inserted = 0;
    ArrayNode items = Json.MAPPER.createArrayNode();
    for (EnqueueResult r : results) {
      String status = r.inserted() ? "enqueued" : "already_enqueued";
      inserted += r.inserted() ? 1 : 0;
      if (json) {
        ObjectNode o = items.addObject();
        o.put("work_id", r.workId());
        o.put("status", status);
      } else {
        out()
            .println(
                (r.inserted() ? "enqueued " : "already enqueued (same kind and payload) ")
                    + r.workId());
      }
    }
    if (json) {
      ObjectNode o = Json.object();
      o.put("enqueued", inserted);
      o.put("already_enqueued", results.size() - inserted);
      o.set("items", items);
      out().println(Json.write(o));
    } else if (results.size() > 1) {
      out()
          .println(
              inserted
                  + " enqueued, "
                  + (results.size() - inserted)
                  + " already enqueued, in one transaction");
    }
    return ExitCodes.OK;
  }

  private Work fromOptions() throws IOException {
    if (id == null || kind == null) {
      throw usage("give --id and --kind with --payload or --payload-file, or give --file");
    }
    if ((payload == null) == (payloadFile == null)) {
      throw usage("give exactly one of --payload and --payload-file");
    }
    if (delay != null && availableAt != null) {
      throw usage("give --delay or --available-at, not both: each sets when the work is ready");
    }
    String body = payload != null ? payload : read(payloadFile);
    Work w = Work.of(id, kind, body);
    if (queue != null) {
      w = w.queue(queue);
    }
    if (priority != null) {
      w = w.priority(priority);
    }
    if (delay != null) {
      w = w.delay(delay);
    }
    if (availableAt != null) {
      w = w.availableAt(availableAt);
    }
    if (deadline != null) {
      w = w.deadline(deadline);
    }
    if (maxAttempts != null) {
      w = w.maxAttempts(maxAttempts);
    }
    String late = lateDeadline(w, "--deadline", "--delay");
    if (late != null) {
      throw usage(late);
    }
    try {
      outbox.validate(w); // its refusal names the field, which RelayCommand turns into the option
    } catch (InvalidWorkException e) {
      List<String> typed = spec.findOption("--delay").originalStringValues();
      throw asTyped(e, w, typed.isEmpty() ? null : typed.get(typed.size() - 1));
    }
    return w;
  }

  private List<Work> fromFile() throws IOException {
    if (id != null
        || kind != null
        || payload != null
        || payloadFile != null
        || queue != null
        || priority != null
        || delay != null
        || availableAt != null
        || deadline != null
        || maxAttempts != null) {
      throw usage("--file takes every field from the file: leave out --id, --kind, --payload...");
    }
    JsonNode root;
    try {
      root = Json.MAPPER.readTree(read(file));
    } catch (JsonProcessingException e) {
      throw usage(source() + " is not JSON" + plain(e));
    }
    List<Work> works = new ArrayList<>();
    if (root != null && root.isArray()) {
      for (int i = 0; i < root.size(); i++) {
        works.add(item(root.get(i), "item " + (i + 1)));
      }
    } else {
      works.add(item(root, "item 1"));
    }
    requireDistinctIds(works);
    try {
      outbox.validateAll(works); // what no single item shows: a dependency cycle, too many items
    } catch (InvalidWorkException e) {
      throw usage(source() + ": " + inFileTerms(e));
    }
    return works;
  }

  /**
   * Why {@code w}'s deadline can never be met when it is not after the time the work becomes ready
   * on this machine's clock (now, plus its delay), or null. An operator typing a deadline means it
   * to be met; a producer's enqueue takes such work and the first claim fails it ({@code deadline})
   * without running it, which is not what this command is for. A deadline with an explicit
   * available time is core's to judge, and one just after this machine's clock is left to the
   * database's, which decides.
   */
  private static String lateDeadline(Work w, String deadlineName, String delayName) {
    if (w.deadline() == null
        || w.availableAt() != null
        || (w.delay() != null && w.delay().isNegative())) {
      return null; // a negative delay is core's to refuse, naming it
    }
    Instant now = Instant.now().truncatedTo(ChronoUnit.MILLIS);
    Instant ready;
    try {
      ready = w.delay() == null ? now : now.plus(w.delay());
    } catch (DateTimeException | ArithmeticException e) {
      return null; // a delay past any Instant: core refuses it, naming its range
    }
    if (w.deadline().isAfter(ready)) {
      return null;
    }
    return deadlineName
        + " "
        + w.deadline()
        + " is not after "
        + (w.delay() == null
            ? "this machine's clock (" + now + ")"
            : "the end of " + delayName + " on this machine's clock (" + ready + ")")
        + ": the work could never run; the first claim would fail it (deadline)";
  }

  /**
   * Core's refusal of {@code w}'s delay with the delay as the user typed it ({@code 36501d}), not
   * as core repeats the {@link Duration} ({@code PT876024H}); any other refusal as it is.
   *
   * @param typed the delay's text in the option or the file, or null
   */
  private static InvalidWorkException asTyped(InvalidWorkException e, Work w, String typed) {
    String core = ": delay ";
    int problem = e.getMessage().indexOf(core);
    if (!e.field().equals("delay") || typed == null || problem < 0) {
      return e;
    }
    return new InvalidWorkException(
        e.workId(),
        "delay",
        e.getMessage()
            .substring(problem + core.length())
            .replace(", was " + w.delay(), ", was " + typed));
  }

  /**
   * Core's refusal of a file item in the file's terms: the field as the item names it ({@code
   * max_attempts}, not core's {@code maxAttempts}).
   */
  private static String inFileTerms(InvalidWorkException e) {
    String field = e.field();
    String inFile = field.replaceAll("([a-z])([A-Z])", "$1_$2").toLowerCase(Locale.ROOT);
    return e.getMessage()
        .replaceFirst(
            ": " + Pattern.quote(field) + " ", Matcher.quoteReplacement(": " + inFile + " "))
        .replace(" after availableAt ", " after available_at "); // the deadline's refusal
  }

  /**
   * Refuses a work ID that two items of the file use (the admin API refuses it too, naming neither
   * item, and only once the database is open): one transaction takes each ID once.
   */
  private void requireDistinctIds(List<Work> works) {
    Map<String, Integer> first = new HashMap<>();
    for (int i = 0; i < works.size(); i++) {
      Integer before = first.putIfAbsent(works.get(i).workId(), i + 1);
      if (before != null) {
        throw usage(
            "items "
                + before
                + " and "
                + (i + 1)
                + " of "
                + source()
                + " both have work_id '"
                + works.get(i).workId()
                + "'; one enqueue takes each work ID once");
      }
    }
  }

  /** Where Jackson quotes a location inside its message: {@code [Source: ...; line: 1, ...]}. */
  private static final Pattern QUOTED_LOCATION =
      Pattern.compile("\\[Source: [^\\]]*?line: (\\d+), column: (\\d+)\\]");

  /**
   * Jackson's refusal of a file in plain words: where ({@code at line 2, column 1}), then what,
   * with a location quoted inside the message (an unclosed object's start) as {@code line 1, column
   * 1}, not Jackson's {@code [Source: REDACTED (`StreamReadFeature...` disabled); ...]}.
   */
  static String plain(JsonProcessingException e) {
    String what = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
    what = QUOTED_LOCATION.matcher(what).replaceAll("line $1, column $2");
    what = what.replace("(start marker at line", "(opened at line");
    JsonLocation at = e.getLocation();
    return (at == null || at.getLineNr() < 1
            ? ""
            : " at line " + at.getLineNr() + ", column " + at.getColumnNr())
        + ": "
        + what;
  }

  /** The file as errors name it: its path, or standard input for {@code -}. */
  private String source() {
    return file.equals("-") ? "standard input" : file;
  }

  private Work item(JsonNode node, String where) {
    if (node == null || !node.isObject()) {
      throw usage(where + " of " + source() + " is not a JSON object");
    }
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!FIELDS.contains(f)) {
        throw usage(
            where
                + " of "
                + source()
                + " has the unknown field "
                + f
                + "; known: "
                + String.join(", ", FIELDS));
      }
    }
    String workId = text(node, "work_id", where);
    String workKind = text(node, "kind", where);
    JsonNode body = node.get("payload");
    if (body == null) {
      throw usage(where + " of " + source() + " has no payload");
    }
    if (node.hasNonNull("delay") && node.hasNonNull("available_at")) {
      throw usage(
          where
              + " of "
              + source()
              + ": give delay or available_at, not both: each sets when the work is ready");
    }
    Work w = Work.of(workId, workKind, Json.write(body));
    if (node.hasNonNull("queue")) {
      w = w.queue(node.get("queue").asText());
    }
    if (node.hasNonNull("priority")) {
      w =
          w.priority(
              integer(node, "priority", where, workId, Integer.MIN_VALUE, Integer.MAX_VALUE));
    }
    if (node.hasNonNull("delay")) {
      w = w.delay(parsed(node, "delay", where, Durations::parse));
    }
    if (node.hasNonNull("available_at")) {
      w = w.availableAt(parsed(node, "available_at", where, Instants::parse));
    }
    if (node.hasNonNull("deadline")) {
      w = w.deadline(parsed(node, "deadline", where, Instants::parse));
    }
    String late = lateDeadline(w, "deadline", "delay");
    if (late != null) {
      throw usage(where + " of " + source() + ": " + late);
    }
    if (node.hasNonNull("max_attempts")) {
      w =
          w.maxAttempts(
              integer(node, "max_attempts", where, workId, 1, KindPolicy.MAX_ATTEMPTS_LIMIT));
    }
    if (node.hasNonNull("group")) {
      w = w.group(text(node, "group", where));
    }
    if (node.hasNonNull("depends_on")) {
      w = w.dependsOn(ids(node.get("depends_on"), where));
    }
    try {
      outbox.validate(w);
    } catch (InvalidWorkException e) {
      JsonNode typed = node.get("delay");
      throw usage(
          where
              + " of "
              + source()
              + ": "
              + inFileTerms(asTyped(e, w, typed == null ? null : typed.asText())));
    }
    return w;
  }

  private String text(JsonNode node, String field, String where) {
    JsonNode v = node.get(field);
    if (v == null || !v.isTextual()) {
      throw usage(where + " of " + source() + " needs " + field + " as a string");
    }
    return v.asText();
  }

  private String[] ids(JsonNode v, String where) {
    if (!v.isArray()) {
      throw usage(where + " of " + source() + " needs depends_on as an array of work IDs");
    }
    String[] ids = new String[v.size()];
    for (int i = 0; i < ids.length; i++) {
      if (!v.get(i).isTextual()) {
        throw usage(where + " of " + source() + " needs depends_on as an array of work IDs");
      }
      ids[i] = v.get(i).asText();
    }
    return ids;
  }

  /**
   * The text of {@code field} read by {@code parser}; its refusal (which repeats the value and
   * names the form to use) is a usage error naming the item and the field.
   */
  private <T> T parsed(JsonNode node, String field, String where, Function<String, T> parser) {
    try {
      return parser.apply(node.get(field).asText());
    } catch (IllegalArgumentException e) {
      throw usage(where + " of " + source() + ": " + field + " " + e.getMessage());
    }
  }

  /**
   * The integer {@code field}; one beyond Java's {@code int} is refused as core refuses one within
   * it that is out of range, naming the range ({@code min} to {@code max}: core's limits).
   */
  private int integer(JsonNode node, String field, String where, String workId, int min, int max) {
    JsonNode v = node.get(field);
    if (!v.isIntegralNumber()) {
      throw usage(where + " of " + source() + ": " + field + " must be an integer, was " + v);
    }
    if (!v.canConvertToInt()) {
      throw usage(
          where
              + " of "
              + source()
              + ": "
              + new InvalidWorkException(
                      workId, field, "must be between " + min + " and " + max + ", was " + v)
                  .getMessage());
    }
    return v.intValue();
  }

  private String read(String path) throws IOException {
    if (path.equals("-")) {
      InputStream in = System.in;
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    Path p = Path.of(path);
    if (!Files.isRegularFile(p)) {
      throw usage("cannot read " + path + ": no such file");
    }
    return Files.readString(p, StandardCharsets.UTF_8);
  }
}
