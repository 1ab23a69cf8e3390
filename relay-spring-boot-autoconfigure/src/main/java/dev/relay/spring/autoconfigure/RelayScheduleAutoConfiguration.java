package dev.relay.spring.autoconfigure;

import dev.relay.schedule.Scheduler;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Schedules from {@code relay.schedules.<name>.{kind,cron,zone,every,missed}}: a {@link Scheduler}
 * on Relay's own connections, when {@code relay-schedule} is on the classpath and at least one
 * schedule is configured (with none, the bean starts nothing).
 */
@AutoConfiguration(after = RelayAutoConfiguration.class)
@ConditionalOnClass(Scheduler.class)
@ConditionalOnBean(RelayConnections.class)
@EnableConfigurationProperties(RelayScheduleProperties.class)
public class RelayScheduleAutoConfiguration {
  /** The scheduler of the configured schedules; idle when {@code relay.schedules} is empty. */
  @Bean
  @ConditionalOnMissingBean
  RelaySchedules relaySchedules(
      RelayProperties properties, RelayScheduleProperties schedules, RelayConnections connections) {
    return RelaySchedules.build(
        connections.dataSource(), properties.getSchema(), properties.isNotifications(), schedules);
  }
}
