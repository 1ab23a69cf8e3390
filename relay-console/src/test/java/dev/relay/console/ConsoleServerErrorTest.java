package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.Migrator;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * What a signed-in operator sees, over real HTTP, when a console page fails on the server rather
 * than on the request: the console's own page (HTML, its layout and headers, status 500), never
 * Spring's error body, with nothing of the failure on it (no SQL, no database message, no stack)
 * and the details in the server's log, once. The database user without the role the console needs
 * (a real {@code <schema>_worker}-only login, as {@code relay migrate --roles} creates the roles)
 * is told which role to grant and how; any other failure (here a table the console reads gone from
 * the schema) gets a general page with a reference to the log line.
 */
@RelayDatabaseTest
@ExtendWith(OutputCaptureExtension.class)
class ConsoleServerErrorTest {
  /** Words of a failure that must stay in the log, never on the page. */
  private static final List<String> LEAKS =
      List.of(
          "for table",
          "rollup_watermark",
          "SQLState",
          "ERROR:",
          "SELECT",
          "attempt_gone",
          "does not exist",
          "Exception",
          "\tat ",
          "dev.relay."); // any of Relay's class names (an internal one above all)

  private static final Pattern REFERENCE = Pattern.compile("reference ([0-9a-f]{8})");

  /**
   * The console's own page with {@code status} ({@link ConsoleBadRequestTest#consolePage}: HTML,
   * its CSP and layout, its heading and message, no refresh), its signed-in header (so the operator
   * can go on from here), and nothing that leaks.
   */
  private static String consolePage(HttpResponse<String> r, int status, String heading) {
    String body = ConsoleBadRequestTest.consolePage(r, status, "<h1>" + heading + "</h1>");
    assertThat(body).as(r.uri().toString()).contains("href=\"/relay/work\"");
    for (String leak : LEAKS) {
      assertThat(body).as(r.uri() + " leaks " + leak).doesNotContain(leak);
    }
    return body;
  }

  @Test
  void aDatabaseUserWithoutTheOperatorRoleIsToldWhichRoleToGrant(
      TestDatabase db, CapturedOutput log) throws Exception {
    ConsoleTest.failed(db, "order-1-ack", "{}");
    List<String> roles = Migrator.forSchema(db.schema()).grantRoles(db.dataSource());
    String operatorRole = db.schema() + "_operator";
    String user = db.schema() + "_console_w";
    db.execute("CREATE ROLE " + user + " LOGIN PASSWORD 'w' IN ROLE " + db.schema() + "_worker");
    try {
      try (ConsoleApp app =
          ConsoleApp.start(
              db,
              "spring.datasource.url="
                  + db.jdbcUrl().replaceFirst("user=[^&]*", "user=" + user + "&password=w"),
              // the worker may neither migrate nor purge; neither is what this test is about
              "relay.migrate=false",
              "relay.maintenance.enabled=false")) {
        int from = log.getAll().length();
        Browser olga = Browser.operator(app); // lands on the overview, refused already

        // (The work list reads only what a worker may read too, and still shows.)
        for (String page : new String[] {"/relay", "/relay/item?id=order-1-ack"}) {
          String body = consolePage(olga.get(page), 500, "Cannot show this page");
          assertThat(body)
              .as(page)
              .contains("needs the database role " + operatorRole)
              .contains("relay migrate --roles")
              .contains("GRANT " + operatorRole + " TO")
              // the console's own sign-in roles are not what is missing
              .doesNotContain("RELAY_OPERATOR");
        }
        // A page asked for as JSON gets the same HTML page.
        consolePage(olga.get("/relay", "application/json"), 500, "Cannot show this page");

        // An action refused by the database: the same words, and the item as it was.
        olga.get("/relay/item?id=order-1-ack");
        String action =
            consolePage(
                olga.post("/relay/item/cancel", "id", "order-1-ack", "reason", "customer asked"),
                500,
                "Action failed");
        assertThat(action)
            .contains("needs the database role " + operatorRole)
            .contains("GRANT " + operatorRole + " TO");
        assertThat(ConsoleTest.state(db, "order-1-ack")).isEqualTo("failed");

        // The server's log says what the database refused, and which role to grant, once per
        // console (not for every page and every live refresh).
        String added = log.getAll().substring(from);
        assertThat(added).contains("permission denied for table").contains(operatorRole);
        assertThat(count(added, "needs the database role")).isEqualTo(1);
      }
    } finally {
      db.execute("DROP OWNED BY " + user + "; DROP ROLE " + user);
      for (String role : roles) {
        db.execute("DROP OWNED BY " + role + "; DROP ROLE " + role);
      }
    }
  }

  @Test
  void anyOtherFailureGetsTheConsolesPageAndTheDetailsGoToTheLogOnce(
      TestDatabase db, CapturedOutput log) throws Exception {
    ConsoleTest.failed(db, "order-2-ack", "{}");
    try (ConsoleApp app = ConsoleApp.start(db)) {
      Browser olga = Browser.operator(app);
      // A schema the console does not expect: the item page reads attempts from this table.
      db.execute("ALTER TABLE {schema}.attempt RENAME TO attempt_gone");
      try {
        String body =
            consolePage(olga.get("/relay/item?id=order-2-ack"), 500, "Cannot show this page");
        assertThat(body).contains("unexpected error").contains("server log");
        Matcher reference = REFERENCE.matcher(body);
        assertThat(reference.find()).as(body).isTrue();
        String id = reference.group(1);
        // The log has the details, under the page's reference, with the stack, once.
        String all = log.getAll();
        assertThat(count(all, "reference " + id)).isEqualTo(1);
        String logged = all.substring(all.indexOf("reference " + id));
        assertThat(logged).contains("attempt").contains("\tat ");
      } finally {
        db.execute("ALTER TABLE {schema}.attempt_gone RENAME TO attempt");
      }
      // The page is back once the schema is.
      assertThat(olga.get("/relay/item?id=order-2-ack").statusCode()).isEqualTo(200);
    }
  }

  private static int count(String text, String part) {
    int n = 0;
    for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + part.length())) {
      n++;
    }
    return n;
  }
}
