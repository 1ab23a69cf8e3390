package dev.relay.console;

import dev.relay.Outbox;
import dev.relay.admin.InvalidAdminRequestException;
import jakarta.servlet.http.HttpServletRequest;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The console's forms, known by the address each posts to: where a form is, in words, for a page
 * that sends someone to use it ({@link ConsoleErrors.Unmatched}'s 405, which links to that page:
 * the item an item's form names, the Pauses page, the bulk action), and a link to the page that
 * shows it, for a refused form whose page should be opened again (a stale form's 403, and the page
 * to return to after signing in).
 *
 * <p>The link is rebuilt from the form's own fields, never taken from the request's {@code
 * Referer}: its address is one of the console's pages, fixed here, and only the fields that open
 * that page on the same item, bulk action or filter are carried over, URL-encoded. Every such page
 * is a read (a GET that changes nothing), so a forged form can at most make a link to a page.
 *
 * <p>Also the forms' fields in their own words: Relay's refusal of a field ({@link
 * InvalidAdminRequestException}, which names the argument, {@code resumeAt}) said with the label
 * the form shows and what was typed ({@link #inFormsWords}).
 */
final class ConsoleForms {
  /** A link longer than this is not offered (only a forged form has filters this long). */
  static final int MAX_LINK = 2048;

  /** The addresses (under the mount) of an item's forms, which name the item in the field id. */
  private static final Set<String> ITEM_FORMS =
      Set.of("/item/redrive", "/item/cancel", "/item/supersede");

  private ConsoleForms() {}

  /** A form's field: the label the form shows, and the request parameter that carries it. */
  private record Field(String label, String parameter) {}

  /**
   * Relay's names of the arguments the console's forms fill in (and the item's and the bulk
   * action's addresses), each with its form's label. The actor is no field: it is the signed-in
   * user's name, which the request carries.
   */
  private static final Map<String, Field> FIELDS =
      Map.of(
          "reason", new Field("Reason", "reason"),
          "workId", new Field("Work ID", "id"),
          "queue", new Field("Queue", "queue"),
          "kind", new Field("Kind", "kind"),
          "resumeAt", new Field("Resume by itself at (UTC, optional)", "resumeAt"),
          "action", new Field("Action", "action"),
          "replacement", new Field("New work ID", "newId"),
          "actor", new Field("Your user name (recorded as the actor)", null));

  /** The prefix of every {@link InvalidAdminRequestException}'s message, before its field. */
  private static final String RELAY_PREFIX = "invalid admin request: ";

  /**
   * A passed automatic resume, as {@code Admin.pause} words it: "is INSTANT, not after the database
   * clock's now (...)"; the form repeats what was typed instead of the instant.
   */
  private static final Pattern RESUME_PASSED = Pattern.compile("is [^,]+, (not after .*)");

  /**
   * Relay's refusal of a field a form filled in, in the form's words: its label, what was typed
   * (repeated as text, cut), and Relay's problem, never Relay's name of the field or its "invalid
   * admin request" prefix: "Reason is empty", "Resume by itself at (UTC, optional)
   * '2020-01-01T00:00' is not after the database clock's now (...)". A field no form fills in is
   * returned as it is.
   */
  static RuntimeException inFormsWords(InvalidAdminRequestException e, HttpServletRequest request) {
    String prefix = RELAY_PREFIX + e.field() + " ";
    String message = e.getMessage();
    if (message == null || !message.startsWith(prefix)) {
      return e;
    }
    String problem = message.substring(prefix.length());
    if (e.field().equals("queue and kind")) {
      // Both left empty: the problem says "null", which is Java's word for what the form leaves
      // empty.
      return ConsoleRefusal.badRequest(
          "Queue and Kind are both empty: name a queue, a kind, or both", null);
    }
    Field field = FIELDS.get(e.field());
    if (field == null) {
      return e;
    }
    String typed =
        field.parameter() == null
            ? request.getRemoteUser()
            : request.getParameter(field.parameter());
    if (e.field().equals("resumeAt")) {
      Matcher passed = RESUME_PASSED.matcher(problem);
      if (passed.matches()) {
        problem = "is " + passed.group(1);
      }
    }
    // Nothing typed, or Relay's problem already repeats it ("'x y' must be 1-200 characters").
    boolean repeat = typed != null && !typed.isBlank() && !problem.startsWith("'");
    return ConsoleRefusal.badRequest(
        field.label() + (repeat ? " '" + ConsoleErrors.shown(typed) + "' " : " ") + problem, null);
  }

  /**
   * Where the form that posts to {@code target} (its path under the mount) is, in words.
   *
   * @param target the path under the mount, such as {@code /item/redrive}
   */
  static String where(String target) {
    if (ITEM_FORMS.contains(target)) {
      return "the item's page (open the item from the work list)";
    }
    return switch (target) {
      case "/bulk/continue" -> "the bulk action's page (under Bulk actions)";
      case "/pauses/pause", "/pauses/resume" -> "the Pauses page";
      default -> "the console page that shows its form";
    };
  }

  /**
   * The page that shows the form {@code request} was sent from, as a link to open it again, or null
   * when the request is not one of the console's forms or its fields do not say which page (an
   * item's form without the item's ID).
   *
   * @param path the request's path within the application
   */
  static Link page(String mount, String path, HttpServletRequest request) {
    return page(mount, path, request, " again");
  }

  /**
   * The page that shows the form whose address was opened as a page ({@code GET
   * /relay/item/cancel?id=order-1}, {@code GET /relay/pauses/pause}), as a link to open it: an
   * item's form links to the item its {@code id} names; null when the fields do not say which page.
   *
   * @param path the request's path within the application
   */
  static Link formPage(String mount, String path, HttpServletRequest request) {
    return page(mount, path, request, "");
  }

  /** As {@link #page(String, String, HttpServletRequest)}, each link's label ending in tail. */
  private static Link page(String mount, String path, HttpServletRequest request, String tail) {
    if (!Console.under(mount, path)) {
      return null;
    }
    String target = path.substring(mount.length());
    Link page =
        ITEM_FORMS.contains(target)
            ? item(mount, request, tail)
            : switch (target) {
              case "/bulk/continue" -> bulk(mount, request, tail);
              case "/bulk" -> preview(mount, request, tail);
              case "/pauses/pause", "/pauses/resume" ->
                  new Link("Open the Pauses page" + tail, mount + "/pauses");
              case "/purge" -> new Link("Open the purge dry run" + tail, mount + "/purge");
              case "/login" -> new Link("Open the sign-in page" + tail, mount + "/login");
              default -> null;
            };
    return offered(page);
  }

  /** {@code link}, or null when there is none or it is too long to offer. */
  private static Link offered(Link link) {
    return link == null || link.href().length() > MAX_LINK ? null : link;
  }

  /** The item page of the request's {@code id}, labelled "Open the item ID" and {@code tail}. */
  private static Link item(String mount, HttpServletRequest request, String tail) {
    String id = request.getParameter("id");
    if (id == null || id.isBlank() || id.length() > Outbox.MAX_WORK_ID_LENGTH) {
      return null;
    }
    return new Link(
        "Open the item " + ConsoleErrors.shown(id) + tail, Format.url(mount + "/item", "id", id));
  }

  private static Link bulk(String mount, HttpServletRequest request, String tail) {
    String id = request.getParameter("id");
    if (id == null || !id.matches("[0-9]{1,18}")) {
      return null;
    }
    return new Link("Open bulk action " + id + tail, Format.url(mount + "/bulk", "id", id));
  }

  /** The confirmation of a bulk action is on its preview: the same action, force and filters. */
  private static Link preview(String mount, HttpServletRequest request, String tail) {
    String action = request.getParameter("action");
    if (action == null || action.isBlank()) {
      return null;
    }
    Map<String, String> params = new LinkedHashMap<>();
    params.put("action", action);
    params.put("force", "true".equals(request.getParameter("force")) ? "true" : null);
    params.putAll(WorkListController.filters(request));
    return new Link("Open the preview" + tail, Format.url(mount + "/bulk/preview", params));
  }
}
