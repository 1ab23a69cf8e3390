package dev.relay.console;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.WebDriver;

/**
 * Bulk actions from a filtered work list in a real headless Chromium, in one application and one
 * browser: a redrive of 1,000 failed items and then a purge of 300 finished ones, each with its
 * preview (what would change, what would be refused, nothing written), the operator's confirmation
 * with a reason, and the progress page, reloaded, following the stored action to done; the database
 * checked after each ({@link ConsoleFlows#bulkRedrive}, {@link ConsoleFlows#bulkPurge}).
 */
@RelayDatabaseTest
class BulkBrowserTest {
  @Test
  void operatorRedrivesAThousandFailedItemsThenPurgesFinishedWorkFromFilteredLists(TestDatabase db)
      throws Exception {
    try (ConsoleApp app = ConsoleApp.start(db, "relay.console.refresh=1s");
        Chromium chromium = Chromium.start()) {
      WebDriver web = chromium.web();
      String base = "http://127.0.0.1:" + app.port();
      ConsoleBrowserTest.signIn(web, base);
      ConsoleFlows.bulkRedrive(
          web, base, db, ConsoleApp.OPERATOR, name -> ConsoleBrowserTest.screenshot(web, name));
      ConsoleFlows.bulkPurge(
          web, base, db, ConsoleApp.OPERATOR, name -> ConsoleBrowserTest.screenshot(web, name));
    }
  }
}
