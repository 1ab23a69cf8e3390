package dev.relay.spring.autoconfigure;

import dev.relay.RelayTracing;
import dev.relay.spring.RelayHttpReceivers;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.http.ResponseEntity;

/** {@link RelayHttpReceivers} for Spring MVC controllers, when Spring's web classes are present. */
@AutoConfiguration(after = RelayAutoConfiguration.class)
@ConditionalOnClass(ResponseEntity.class)
@ConditionalOnBean(RelayConnections.class)
public class RelayWebAutoConfiguration {
  /** Inbox and fence for HTTP deliveries, on the application's DataSource. */
  @Bean
  @ConditionalOnMissingBean
  RelayHttpReceivers relayHttpReceivers(
      RelayProperties properties,
      ConfigurableListableBeanFactory beans,
      ObjectProvider<DataSource> dataSources,
      RelayConnections migratedFirst,
      ObjectProvider<RelayTracing> tracing) {
    return new RelayHttpReceivers(
        RelayAutoConfiguration.applicationDataSource(properties, beans, dataSources),
        properties.getSchema(),
        tracing.getIfUnique(() -> RelayTracing.NONE));
  }
}
