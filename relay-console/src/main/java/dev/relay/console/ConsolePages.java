package dev.relay.console;

import dev.relay.admin.Maintenance;
import dev.relay.spring.autoconfigure.RelayConnections;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;

/**
 * The console's pages, one controller each, on the {@link Console} that the mounting chose.
 * Imported by {@link ConsoleAutoConfiguration} only where it mounts the console; deliberately not a
 * {@code @Configuration} nested in it, which Spring would register whatever the conditions.
 */
final class ConsolePages {
  @Bean
  OverviewController relayConsoleOverview(Console c) {
    return new OverviewController(c);
  }

  @Bean
  WorkListController relayConsoleWorkList(Console c) {
    return new WorkListController(c);
  }

  @Bean
  ItemController relayConsoleItem(Console c) {
    return new ItemController(c);
  }

  @Bean
  FailuresController relayConsoleFailures(Console c) {
    return new FailuresController(c);
  }

  @Bean
  ChartsController relayConsoleCharts(Console c) {
    return new ChartsController(c);
  }

  @Bean
  KindsController relayConsoleKinds(Console c) {
    return new KindsController(c);
  }

  @Bean
  PurgeController relayConsolePurge(Console c, ObjectProvider<Maintenance> maintenance) {
    return new PurgeController(c, maintenance);
  }

  @Bean
  SignInController relayConsoleSignIn(Console c) {
    return new SignInController(c);
  }

  @Bean
  SearchController relayConsoleSearch(Console c) {
    return new SearchController(c);
  }

  @Bean
  PausesController relayConsolePauses(Console c) {
    return new PausesController(c);
  }

  @Bean
  BulkController relayConsoleBulk(Console c) {
    return new BulkController(c);
  }

  @Bean
  LimitsController relayConsoleLimits(Console c) {
    return new LimitsController(c);
  }

  /** Only with relay-schedule on the class path (an optional dependency of the console). */
  @Bean
  @ConditionalOnClass(name = "dev.relay.schedule.ScheduleStatus")
  SchedulesController relayConsoleSchedules(Console c, RelayConnections connections) {
    return new SchedulesController(c, connections.dataSource());
  }

  @Bean
  ConsoleErrors relayConsoleErrors(Console c) {
    return new ConsoleErrors(c);
  }

  @Bean
  ConsoleErrors.Unmatched relayConsoleUnmatched(Console c) {
    return new ConsoleErrors.Unmatched(c);
  }

  @Bean
  ConsoleErrors.Unexpected relayConsoleUnexpected(Console c) {
    return new ConsoleErrors.Unexpected(c);
  }
}
