package dev.relay.console;

import dev.relay.WorkState;
import dev.relay.admin.Admin;
import dev.relay.admin.InvalidAdminRequestException;
import dev.relay.admin.PayloadSearch;
import dev.relay.admin.WorkFilter;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Search work by payload content: JSON containment, or a path and a value (turned into the same
 * containment), within a window of creation time and optionally a kind, queue and state, through
 * {@link Admin#searchPayload}: bounded, it reads at most {@link Admin#MAX_SEARCH_SCAN} of the
 * newest items of the window and says so when it stopped there.
 */
@Controller
@RequestMapping("${relay.console.path:/relay}")
final class SearchController {
  /** The windows offered: label and length. */
  static final Map<String, Duration> WINDOWS = windows();

  private static final JsonMapper JSON = JsonMapper.builder().build();

  private final Console console;

  SearchController(Console console) {
    this.console = console;
  }

  private static Map<String, Duration> windows() {
    Map<String, Duration> w = new LinkedHashMap<>();
    w.put("1h", Duration.ofHours(1));
    w.put("24h", Duration.ofHours(24));
    w.put("7d", Duration.ofDays(7));
    return w;
  }

  /** One match and its link. */
  record Row(String workId, String href, String kind, String queue, String state, String created) {}

  @GetMapping("/search")
  ResponseEntity<String> search(
      HttpServletRequest request,
      @RequestParam(required = false) String json,
      @RequestParam(required = false) String path,
      @RequestParam(required = false) String value,
      @RequestParam(required = false) String kind,
      @RequestParam(required = false) String queue,
      @RequestParam(required = false) String state,
      @RequestParam(defaultValue = "1h") String window) {
    console.guard(request, false);
    Duration span = WINDOWS.get(window);
    if (span == null) {
      throw new InvalidAdminRequestException("window", "must be 1h, 24h or 7d, was " + window);
    }
    Map<String, Object> model = new LinkedHashMap<>();
    Map<String, String> form = new LinkedHashMap<>();
    form.put("json", WorkListController.blankToNull(json));
    form.put("path", WorkListController.blankToNull(path));
    form.put("value", value);
    form.put("kind", WorkListController.blankToNull(kind));
    form.put("queue", WorkListController.blankToNull(queue));
    form.put("state", WorkListController.blankToNull(state));
    form.put("window", window);
    model.put("form", form);
    model.put("windows", List.copyOf(WINDOWS.keySet()));
    model.put("states", Arrays.stream(WorkState.values()).map(WorkState::sql).toList());
    model.put("cap", String.format("%,d", Admin.MAX_SEARCH_SCAN));
    String contains = containment(form.get("json"), form.get("path"), value);
    model.put("searched", contains != null);
    if (contains != null) {
      WorkFilter f = WorkFilter.all().newerThan(span);
      if (form.get("kind") != null) {
        f = f.kind(form.get("kind"));
      }
      if (form.get("queue") != null) {
        f = f.queue(form.get("queue"));
      }
      if (form.get("state") != null) {
        f = f.state(form.get("state"));
      }
      PayloadSearch found =
          console.admin.searchPayload(f, contains, console.properties.getPageSize());
      model.put("contains", contains);
      model.put("found", found);
      model.put("scanned", String.format("%,d", found.scanned()));
      model.put(
          "rows",
          found.items().stream()
              .map(
                  i ->
                      new Row(
                          i.workId(),
                          Format.url(console.mount + "/item", "id", i.workId()),
                          i.kind(),
                          i.queue(),
                          i.state(),
                          String.valueOf(i.createdAt())))
              .toList());
    }
    return console.page(request, "search", "Search payloads", model, HttpStatus.OK);
  }

  /**
   * The JSON to search for: {@code json} as given, or {@code path} = {@code value} as nested
   * objects ({@code customer.id} = {@code 42} is {@code {"customer":{"id":42}}}; a value that is
   * not JSON is a string); null when neither is given.
   */
  static String containment(String json, String path, String value) {
    if (json != null) {
      if (path != null) {
        throw new InvalidAdminRequestException(
            "json", "give either JSON to contain or a path and a value, not both");
      }
      return json;
    }
    if (path == null) {
      return null;
    }
    String[] names = path.split("\\.", -1);
    if (Arrays.stream(names).anyMatch(String::isBlank)) {
      throw new InvalidAdminRequestException(
          "path", "must be field names separated by dots, such as customer.id, was " + path);
    }
    JsonNode leaf;
    String v = value == null ? "" : value.strip();
    try {
      leaf = JSON.readTree(v);
      if (leaf == null || leaf.isMissingNode() || leaf.isContainer()) {
        leaf = JSON.getNodeFactory().stringNode(v);
      }
    } catch (JacksonException e) {
      leaf = JSON.getNodeFactory().stringNode(v);
    }
    JsonNode node = leaf;
    for (int i = names.length - 1; i >= 0; i--) {
      ObjectNode o = JSON.createObjectNode();
      o.set(names[i], node);
      node = o;
    }
    return JSON.writeValueAsString(node);
  }
}
