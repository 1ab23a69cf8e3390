package dev.relay.spring.autoconfigure;

import dev.relay.admin.Maintenance;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Relay's maintenance loop in every application with the starter, as {@code relay serve} runs it:
 * {@link Maintenance} on the runtime's connections, started with the context and stopped when it
 * closes. Every instance takes part; the schema's advisory lock, held on a dedicated connection,
 * makes one of them the leader that purges done and cancelled work past {@code
 * relay.maintenance.work-retention} (leaving tombstones) and recounts the done and cancelled work
 * shown by health and the {@code relay.work.depth} gauge. Off with {@code
 * relay.maintenance.enabled=false}; backs off when the application defines its own {@link
 * Maintenance}. With a DataSource whose URL Relay cannot read (so no connection of its own for the
 * lock) it runs nothing and says so: a session lock never goes on a pooled connection.
 */
@AutoConfiguration(after = RelayAutoConfiguration.class)
@ConditionalOnBean(RelayConnections.class)
@ConditionalOnSwitch("relay.maintenance.enabled")
public class RelayMaintenanceAutoConfiguration {
  private static final Logger log =
      LoggerFactory.getLogger(RelayMaintenanceAutoConfiguration.class);

  /** The maintenance loop, started here and closed with the context. */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  Maintenance relayMaintenance(RelayProperties properties, RelayConnections c, Environment env) {
    Maintenance maintenance =
        RelaySettings.named(
            "relay.maintenance.",
            env,
            () ->
                Maintenance.create(
                    c.dataSource(), c.listenConnections(), RelaySettings.maintenance(properties)));
    if (c.shared()) {
      log.warn(
          "Relay maintenance does not run: the application's DataSource gives no URL for a"
              + " dedicated connection, and its advisory lock must not live on a pooled one."
              + " Run dev.relay.admin.Maintenance yourself, or relay serve, against this schema");
      return maintenance;
    }
    maintenance.start();
    return maintenance;
  }
}
