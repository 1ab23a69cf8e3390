package dev.relay.spring.autoconfigure;

import dev.relay.Handler;
import dev.relay.InvalidConfigurationException;
import dev.relay.Relay;
import dev.relay.RelayEventListener;
import dev.relay.jackson.JsonCodec;
import dev.relay.spring.RelayHandler;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.env.Environment;

/**
 * The one {@link Relay} of an application context. It is built once every singleton exists (so
 * every {@link RelayHandler} is known), started as the last {@link SmartLifecycle} (after the web
 * server), and stopped first in a graceful shutdown, within {@code
 * spring.lifecycle.timeout-per-shutdown-phase}: running handlers get the shutdown grace, unstarted
 * claims are handed back. A context without any handler builds no runtime (a producer-only
 * application); {@link #relay()} is then empty.
 */
public final class RelayRuntime
    implements SmartInitializingSingleton, SmartLifecycle, DisposableBean {
  private static final Logger log = LoggerFactory.getLogger(RelayRuntime.class);

  private final RelayProperties properties;
  private final RelayConnections connections;
  private final RelayHandlerMethods methods;
  private final ConfigurableListableBeanFactory beans;
  private final JsonCodec codec;
  private final RelayEventListener listener;
  private final List<RelayCustomizer> customizers;
  private final Environment env;
  private final Object lock = new Object();
  private Relay relay; // guarded by lock
  private boolean running; // guarded by lock

  RelayRuntime(
      RelayProperties properties,
      RelayConnections connections,
      RelayHandlerMethods methods,
      ConfigurableListableBeanFactory beans,
      JsonCodec codec,
      RelayEventListener listener,
      List<RelayCustomizer> customizers,
      Environment env) {
    this.properties = properties;
    this.connections = connections;
    this.methods = methods;
    this.beans = beans;
    this.codec = codec;
    this.listener = listener;
    this.customizers = customizers;
    this.env = env;
  }

  /** The runtime, once built; empty when the context has no handler. */
  public Optional<Relay> relay() {
    synchronized (lock) {
      return Optional.ofNullable(relay);
    }
  }

  @Override
  public void afterSingletonsInstantiated() {
    Duration grace = RelaySettings.grace(properties, env);
    Map<String, Handler> handlers = new LinkedHashMap<>();
    Map<String, String> where = new LinkedHashMap<>();
    for (RelayHandlerMethods.Found f : methods.found()) {
      register(handlers, where, f.kind(), f.handler(codec), f.where());
    }
    for (String name : beans.getBeanNamesForType(Handler.class)) {
      RelayHandler named = beans.findAnnotationOnBean(name, RelayHandler.class);
      if (named == null) {
        throw new IllegalStateException(
            "Handler bean '"
                + name
                + "' names no kind: annotate its class or its @Bean method with"
                + " @RelayHandler(kind = \"...\")");
      }
      register(
          handlers, where, named.kind(), beans.getBean(name, Handler.class), "bean '" + name + "'");
    }
    for (String name : beans.getBeanNamesForType(RelayKindHandlers.class)) {
      beans
          .getBean(name, RelayKindHandlers.class)
          .handlers()
          .forEach(
              (kind, h) -> register(handlers, where, kind, h, "RelayKindHandlers '" + name + "'"));
    }
    for (String kind : properties.getKinds().keySet()) {
      if (!handlers.containsKey(kind)) {
        throw new InvalidConfigurationPropertyValueException(
            RelayKindNames.property(kind, null),
            kind,
            "no handler for this kind in the application context; handlers: " + handlers.keySet());
      }
    }
    if (handlers.isEmpty()) {
      // No worker runs; the relay.* values were checked when they were bound
      // (RelayStartupCheck.OnBind), so a bad one fails now, not when a handler is added.
      log.info("Relay: no @RelayHandler in the context; enqueue only, no worker runtime");
      return;
    }
    Relay.Builder b =
        RelaySettings.apply(Relay.builder(connections.dataSource()), properties, grace);
    b.listenConnections(connections.listenConnections()).listener(listener);
    handlers.forEach(
        (kind, h) -> b.handle(kind, RelaySettings.policy(properties.getKinds().get(kind)), h));
    customizers.forEach(c -> c.customize(b));
    Relay built = build(b);
    synchronized (lock) {
      relay = built;
    }
  }

  /** Builds (never starts) the runtime, naming a refused setting by its property. */
  private Relay build(Relay.Builder b) {
    try {
      return b.build();
    } catch (InvalidConfigurationException e) {
      throw RelaySettings.translate(e, env);
    }
  }

  private static void register(
      Map<String, Handler> handlers,
      Map<String, String> where,
      String kind,
      Handler handler,
      String from) {
    String before = where.putIfAbsent(kind, from);
    if (before != null) {
      throw new IllegalStateException(
          "two handlers for kind '" + kind + "': " + before + " and " + from);
    }
    handlers.put(kind, handler);
  }

  @Override
  public void start() {
    synchronized (lock) {
      if (relay != null && !running) {
        relay.start();
        running = true;
      }
    }
  }

  @Override
  public void stop() {
    Relay stopping;
    synchronized (lock) {
      stopping = running ? relay : null;
      running = false;
    }
    if (stopping != null) {
      stopping.close();
    }
  }

  @Override
  public void stop(Runnable callback) {
    Thread t =
        new Thread(
            () -> {
              try {
                stop();
              } finally {
                callback.run();
              }
            },
            "relay-shutdown");
    t.start();
  }

  @Override
  public boolean isRunning() {
    synchronized (lock) {
      return running;
    }
  }

  /** Last to start, first to stop. */
  @Override
  public int getPhase() {
    return SmartLifecycle.DEFAULT_PHASE;
  }

  @Override
  public void destroy() {
    Relay built;
    synchronized (lock) {
      built = relay;
      running = false;
    }
    if (built != null) {
      built.close();
    }
  }
}
