package dev.relay.examples.springshop;

import dev.relay.console.Chromium;
import dev.relay.console.ConsoleFlows;
import dev.relay.console.ConsolePauseFlow;
import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.WebDriver;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The console inside the running shop, behind the shop's own Spring Security, in a real headless
 * Chromium (Debian's {@code chromium} and {@code chromium-driver}), with the console's own browser
 * flows: pause a kind and resume it with the audit ({@code ConsolePauseFlow}, a manual worker
 * running two kinds the shop has no handler for), the overview updating by itself, payload search,
 * the limits page (the shop has no relay-schedule, so its console has no schedules page; relay
 * serve's and the console's own browser tests cover that page), a bulk redrive of 1,000 failed
 * items and a bulk purge, each from a filtered list with its preview ({@code ConsoleFlows}).
 * Without Chromium the test fails, saying how to install it: it is never skipped.
 */
@RelayDatabaseTest
class SpringShopBrowserTest {
  @Test
  void anOperatorRunsTheConsolesFlowsInsideTheShop(TestDatabase db) throws Exception {
    try (ConfigurableApplicationContext app =
            SpringShopConsoleTest.start(db, "relay.console.refresh=1s");
        Chromium chromium = Chromium.start()) {
      int port = Integer.parseInt(app.getEnvironment().getRequiredProperty("local.server.port"));
      String base = "http://127.0.0.1:" + port;
      WebDriver web = chromium.web();
      ConsoleFlows.signIn(web, base, "mina", "mina-pw");
      ConsolePauseFlow.pauseAndResumeWithManualWorker(web, base, db, "mina", name -> {});
      ConsoleFlows.overviewUpdatesItself(web, base, db);
      ConsoleFlows.searchPayload(web, base, db, name -> {});
      ConsoleFlows.limits(web, base, db, name -> {}); // no relay-schedule here: no schedules page
      ConsoleFlows.bulkRedrive(web, base, db, "mina", name -> {});
      ConsoleFlows.bulkPurge(web, base, db, "mina", name -> {});
    }
  }
}
