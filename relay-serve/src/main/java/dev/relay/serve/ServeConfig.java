package dev.relay.serve;

import dev.relay.Handler;
import dev.relay.InvalidConfigurationException;
import dev.relay.console.ConsoleProperties;
import dev.relay.spring.autoconfigure.RelayKindNames;
import dev.relay.spring.autoconfigure.RelayProperties;
import dev.relay.spring.autoconfigure.RelayScheduleProperties;
import dev.relay.spring.autoconfigure.RelayStartupCheck;
import dev.relay.test.JdbcUrls;
import dev.relay.transport.http.HttpRoute;
import dev.relay.transport.http.HttpTransport;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.springframework.boot.context.properties.bind.AbstractBindHandler;
import org.springframework.boot.context.properties.bind.BindContext;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.boot.env.OriginTrackedMapPropertySource;
import org.springframework.boot.env.PropertiesPropertySourceLoader;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.boot.origin.Origin;
import org.springframework.boot.origin.OriginLookup;
import org.springframework.core.env.EnumerablePropertySource;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.io.FileSystemResource;
import org.springframework.util.PlaceholderResolutionException;

/**
 * What {@code relay serve} runs, read from the file given with {@code --config} and checked before
 * anything starts: an {@code application.yml} or {@code .properties} with the starter's {@code
 * relay.*} properties (and Boot's {@code server.*}, {@code spring.*}, {@code management.*}), or,
 * for one more release, the JSON file of before ({@link JsonConfig} translates it). The values bind
 * as the context will bind them (the same property sources), the starter's {@link
 * RelayStartupCheck} builds the runtime without connecting, and serve's own rules follow: at least
 * one kind, a handler for each, console users (or the console turned off), a {@code relay.*} key
 * nothing reads is refused (also an {@code http} setting of a {@code log} kind). A refusal is a
 * {@link Refused} naming the property, its value and where it was given. A schedule of a kind this
 * serve has no handler for is legitimate (another process may handle it) and only a {@link
 * #warnings() warning}.
 */
final class ServeConfig {
  /** The address the server binds unless {@code server.address} says otherwise. */
  static final String DEFAULT_BIND = "127.0.0.1";

  /** The port unless {@code server.port} says otherwise. */
  static final int DEFAULT_PORT = 9464;

  private static final Pattern BCRYPT = Pattern.compile("\\$2[aby]?\\$\\d{2}\\$[./A-Za-z0-9]{53}");

  /**
   * The settings of a kind only its {@code http} handler reads ({@link ServeProperties.Kind}'s all
   * but {@code handler}; JsonConfig leaves the same keys of a JSON {@code log} kind out).
   */
  private static final List<String> HTTP_ONLY =
      List.of(
          "url",
          "connect-timeout",
          "request-timeout",
          "receiver-ref-header",
          "receiver-ref-field",
          "milestone",
          "fencing");

  /** The property sources serve adds, by name. */
  static final String COMMAND_LINE = "relay serve command line";

  static final String DEFAULTS = "relay serve defaults";

  private final Path file;
  private final StandardEnvironment env;
  private final JsonConfig.Translation json;
  private final RelayProperties relay;
  private final RelayScheduleProperties schedules;
  private final ServeProperties serve;
  private final ConsoleProperties console;
  private final boolean consoleEnabled;
  private final Set<String> kinds;
  private final Map<String, Handler> handlers;
  private final String bind;
  private final int port;
  private final List<String> warnings = new ArrayList<>();

  /** A refused configuration; the message names the property and the file. */
  static final class Refused extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    Refused(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private ServeConfig(Path file, StandardEnvironment env, JsonConfig.Translation json) {
    this.file = file;
    this.env = env;
    this.json = json;
    unresolvable();
    // Before anything binds: a kind Boot would bind under another name is refused, not renamed.
    RelayKindNames.check(env);
    Set<ConfigurationPropertyName> bound = new HashSet<>();
    Binder binder = Binder.get(env, new Recording(bound));
    this.serve = binder.bindOrCreate("relay", ServeProperties.class);
    this.console = binder.bindOrCreate("relay.console", ConsoleProperties.class);
    this.schedules = binder.bindOrCreate("relay", RelayScheduleProperties.class);
    this.consoleEnabled = console.isEnabled();
    this.relay = binder.bindOrCreate("relay", RelayProperties.class);
    this.bind = binder.bind("server.address", String.class).orElse(DEFAULT_BIND);
    this.port = binder.bind("server.port", Integer.class).orElse(DEFAULT_PORT);
    unread(bound);
    requirePostgresUrl("spring.datasource.url");
    requirePostgresUrl("relay.direct-connection.url");
    this.kinds = new LinkedHashSet<>(serve.getKinds().keySet());
    kinds.addAll(relay.getKinds().keySet());
    if (kinds.isEmpty()) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.kinds",
          null,
          "name at least one kind, like relay.kinds.tick.handler=log (handler log or http)");
    }
    address();
    if (port < 0 || port > 65535) {
      throw new InvalidConfigurationPropertyValueException("server.port", port, "must be 0-65535");
    }
    checkUsers();
    if (consoleEnabled) {
      console.check();
    }
    this.handlers = buildHandlers();
    RelayStartupCheck.check(env, kinds);
    unhandledSchedules();
  }

  /**
   * Reads {@code file} under the command line's values, and checks it.
   *
   * @param commandLine properties the options set, each with the option as its origin
   * @throws Refused naming the problem, the property and the file
   */
  static ServeConfig load(Path file, Map<String, Object> commandLine) {
    if (!Files.isRegularFile(file)) {
      throw new Refused("cannot read " + file + ": no such file", null);
    }
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new Refused("cannot read " + file + ": " + e.getMessage(), e);
    }
    StandardEnvironment env = new StandardEnvironment();
    env.getPropertySources()
        .addFirst(new OriginTrackedMapPropertySource(COMMAND_LINE, commandLine, true));
    JsonConfig.Translation json = null;
    try {
      if (isJson(file, text)) {
        json = JsonConfig.translate(text, file.toString());
        env.getPropertySources()
            .addLast(
                new OriginTrackedMapPropertySource(
                    "relay serve config " + file, json.properties()));
      } else {
        if (!isProperties(file)) {
          YamlCheck.check(text, file.toString());
        }
        for (PropertySource<?> s : read(file)) {
          env.getPropertySources().addLast(s);
        }
      }
    } catch (IllegalArgumentException e) {
      throw new Refused(e.getMessage(), e);
    } catch (IOException | RuntimeException e) {
      // The loaders' own refusals (SnakeYAML's YAMLException, a broken unicode escape) are no
      // IllegalArgumentException: still a file that cannot be read, never a stack trace.
      throw new Refused(
          file
              + " cannot be read as "
              + (isProperties(file) ? "properties" : "YAML")
              + ": "
              + e.getMessage(),
          e);
    }
    env.getPropertySources().addLast(new MapPropertySource(DEFAULTS, defaults(env)));
    try {
      return new ServeConfig(file, env, json);
    } catch (BindException e) {
      throw new Refused(file + ": " + describe(env, e), e);
    } catch (InvalidConfigurationPropertyValueException e) {
      throw new Refused(file + ": " + describe(env, e), e);
    }
  }

  private static boolean isJson(Path file, String text) {
    String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
    return name.endsWith(".json")
        || (!name.endsWith(".yml")
            && !name.endsWith(".yaml")
            && !name.endsWith(".properties")
            && JsonConfig.looksLikeJson(text));
  }

  private static boolean isProperties(Path file) {
    return file.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".properties");
  }

  private static List<PropertySource<?>> read(Path file) throws IOException {
    FileSystemResource resource = new FileSystemResource(file);
    List<PropertySource<?>> sources =
        isProperties(file)
            ? new PropertiesPropertySourceLoader().load("relay serve config " + file, resource)
            : new YamlPropertySourceLoader().load("relay serve config " + file, resource);
    for (PropertySource<?> s : sources) {
      for (String key : ((EnumerablePropertySource<?>) s).getPropertyNames()) {
        if (key.startsWith("spring.config.") || key.startsWith("spring.profiles.")) {
          throw new IllegalArgumentException(
              file
                  + ": "
                  + key
                  + " is not read by relay serve: give every setting in this one file (profiles"
                  + " and imports are not applied)");
        }
      }
    }
    return sources;
  }

  /**
   * Serve's defaults, under everything the file and the command line say: loopback, port 9464, the
   * console's session cookie, Actuator's two endpoints, a pool sized for the workers, and a
   * shutdown phase long enough for the grace.
   */
  private static Map<String, Object> defaults(StandardEnvironment env) {
    Binder binder = Binder.get(env);
    int concurrency;
    Duration grace;
    Duration idle;
    try {
      concurrency = binder.bind("relay.concurrency", Integer.class).orElse(8);
      grace = binder.bind("relay.shutdown-grace", Duration.class).orElse(Duration.ofSeconds(30));
      idle =
          binder
              .bind("relay.console.session.idle-timeout", Duration.class)
              .orElse(Duration.ofMinutes(30));
    } catch (BindException e) {
      // reported with every other binding failure, when the properties are bound
      concurrency = 8;
      grace = Duration.ofSeconds(30);
      idle = Duration.ofMinutes(30);
    }
    Map<String, Object> p = new LinkedHashMap<>();
    p.put("server.address", DEFAULT_BIND);
    p.put("server.port", String.valueOf(DEFAULT_PORT));
    p.put("server.shutdown", "graceful");
    // The console's session cookie: SameSite=Lax (a cross-site POST never carries it; a link from
    // an alert still opens the page signed in). Tomcat marks it Secure on a request that came over
    // TLS, also through a TLS-terminating proxy, but only one named in
    // server.tomcat.remoteip.internal-proxies: by default no proxy is trusted, so a client cannot
    // forge X-Forwarded-For (to dodge the sign-in limits per address) or X-Forwarded-Proto.
    p.put("server.servlet.session.cookie.same-site", "lax");
    p.put("server.forward-headers-strategy", "native");
    p.put("server.tomcat.remoteip.internal-proxies", "");
    // The console ends an idle session itself (relay.console.session.idle-timeout); the container
    // keeps it a minute longer (its timeout counts whole minutes), never less.
    if (!idle.isNegative()) {
      p.put("server.servlet.session.timeout", idle.plusMinutes(1).toString());
    }
    p.put("spring.main.banner-mode", "off");
    // What the first request needs (the console, Actuator's endpoints, security) is made on it;
    // ServeApplication names what must start at once.
    p.put("spring.main.lazy-initialization", "true");
    p.put("spring.datasource.hikari.pool-name", "relay-serve-app");
    p.put("spring.datasource.hikari.maximum-pool-size", "2");
    // serve refuses an old schema unless told (--migrate or relay.migrate=true), unlike the starter
    p.put("relay.migrate", "false");
    // The claimer, lease keeper, completer, maintenance, schedules, health and console each take
    // one briefly; handlers hold none.
    p.put("relay.pool-size", String.valueOf(Math.min(Math.max(concurrency, 1), 8) + 6));
    // Relay stops within the shutdown phase (the starter refuses a grace that does not fit).
    if (!grace.isNegative()) {
      p.put("spring.lifecycle.timeout-per-shutdown-phase", grace.plusSeconds(5).toString());
    }
    p.put("management.endpoints.web.exposure.include", "health,prometheus");
    p.put("management.endpoint.health.show-components", "always");
    return p;
  }

  private void address() {
    try {
      if (bind.isBlank()) {
        throw new UnknownHostException("empty");
      }
      InetAddress.getByName(bind.strip());
    } catch (UnknownHostException e) {
      throw new InvalidConfigurationPropertyValueException(
          "server.address", bind, "must be an IP address or host name like 127.0.0.1");
    }
  }

  /**
   * Refuses a value of the file or the command line with a placeholder that cannot be resolved
   * ({@code password: ${DB_PW}} with DB_PW unset), naming the property, where it was given and the
   * placeholder. The binder reports one in a {@code relay.*} property it binds, but the {@code
   * spring.*}, {@code server.*} and {@code management.*} properties that serve itself reads or that
   * the context binds later would fail later: with a stack trace as serve connects, and printed by
   * {@code --print-config} as if set. Each is resolved as the context resolves it ({@link
   * StandardEnvironment#getProperty}: a variable of the process environment may override the file).
   * {@code logging.*} is left out: Boot resolves it leniently ({@code ${PID}} in a log pattern).
   */
  private void unresolvable() {
    for (PropertySource<?> s : env.getPropertySources()) {
      boolean given =
          s.getName().equals(COMMAND_LINE) || s.getName().startsWith("relay serve config");
      if (!given || !(s instanceof EnumerablePropertySource<?> source)) {
        continue;
      }
      for (String key : source.getPropertyNames()) {
        if (key.startsWith("logging.")) {
          continue;
        }
        try {
          env.getProperty(key);
        } catch (IllegalArgumentException e) {
          String reason = unresolvable(e);
          throw new InvalidConfigurationPropertyValueException(
              key,
              source.getProperty(key),
              reason != null ? reason : "cannot be resolved: " + e.getMessage());
        }
      }
    }
  }

  /**
   * {@code placeholder ${X} cannot be resolved: ...} when {@code e} or a cause is Spring's {@link
   * PlaceholderResolutionException}, else {@code null}.
   */
  static String unresolvable(Throwable e) {
    for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
      if (t instanceof PlaceholderResolutionException p) {
        String name = p.getPlaceholder();
        return "placeholder ${"
            + name
            + "} cannot be resolved: no environment variable, system property or property "
            + name
            + " is set (give a default after a colon, like ${"
            + name
            + ":value}, where one fits)";
      }
    }
    return null;
  }

  /**
   * Refuses a database URL that is not PostgreSQL's ({@code jdbc:postgresql:}) as a usage error
   * naming where it was given, before anything connects: DriverManager's "No suitable driver" for
   * {@code mysql://} or the typo {@code jdbc:postgres://} read as an unreachable database (exit 3),
   * and echoed the URL with its password. So is a {@code jdbc:postgresql:} URL the driver cannot
   * read, which it otherwise logged whole, password included. The URL in the message is masked.
   */
  private void requirePostgresUrl(String property) {
    // As it resolves (url: ${DB_URL}); every placeholder resolves, as unresolvable() checked.
    String url = env.getProperty(property, "");
    if (url.isBlank()) {
      return;
    }
    String reason = JdbcUrls.reason(url);
    if (reason == null) {
      return;
    }
    Given option = givenOnCommandLine(property);
    if (option != null) {
      throw new Refused(JdbcUrls.problem(option.name(), url), null);
    }
    throw new InvalidConfigurationPropertyValueException(property, url, reason);
  }

  /**
   * Where {@code property} was given on the command line (an option or a variable), or {@code null}
   * when not there. The command line is the first of the sources, so its value is the one in
   * effect.
   */
  private Given givenOnCommandLine(String property) {
    return env.getPropertySources().get(COMMAND_LINE)
                instanceof OriginTrackedMapPropertySource commandLine
            && commandLine.getOrigin(property) instanceof Given option
        ? option
        : null;
  }

  /**
   * How a message names where the database URL came from: the option or variable as a usage error
   * names it ({@code --jdbc-url}, {@code env RELAY_JDBC_URL}), else the file's property.
   */
  String urlSource() {
    Given option = givenOnCommandLine("spring.datasource.url");
    return option != null ? option.name() : file + ": spring.datasource.url";
  }

  /**
   * A value given on the command line ({@code what} is the option) or in the process environment
   * (the variable).
   */
  record Given(String what) implements Origin {
    /** How a usage error names it first, as the other relay commands do: the option, or env VAR. */
    String name() {
      return what.startsWith("-") ? what : "env " + what;
    }

    @Override
    public String toString() {
      return what.startsWith("-") ? "option " + what : "environment variable " + what;
    }
  }

  /**
   * The console's users: at least one unless {@code relay.console.enabled=false}, none then; each
   * with a name given once, a bcrypt hash and a role. The console never runs without sign-in.
   */
  private void checkUsers() {
    List<ServeProperties.User> users = serve.getConsole().getUsers();
    if (!consoleEnabled) {
      if (!users.isEmpty()) {
        throw new InvalidConfigurationPropertyValueException(
            "relay.console.enabled",
            false,
            "is false but relay.console.users are given: remove one");
      }
      return;
    }
    if (users.isEmpty()) {
      throw new InvalidConfigurationPropertyValueException(
          "relay.console.users",
          null,
          "the console's users are missing: give relay.console.users[0].name, .hash (relay passwd"
              + " prints it) and .role (viewer or operator), as the console never runs without"
              + " sign-in; or run without the console with relay.console.enabled=false");
    }
    Set<String> names = new HashSet<>();
    for (int i = 0; i < users.size(); i++) {
      ServeProperties.User u = users.get(i);
      String at = "relay.console.users[" + i + "].";
      if (u.getName() == null || u.getName().isBlank()) {
        throw new InvalidConfigurationPropertyValueException(at + "name", null, "is missing");
      }
      if (!names.add(u.getName().strip())) {
        throw new InvalidConfigurationPropertyValueException(
            at + "name", u.getName(), "is given twice");
      }
      if (u.getHash() == null || u.getHash().isEmpty()) {
        throw new InvalidConfigurationPropertyValueException(
            at + "hash", null, "is missing (`relay passwd` prints the bcrypt hash of a password)");
      }
      if (!BCRYPT.matcher(u.getHash()).matches()) {
        throw new InvalidConfigurationPropertyValueException(
            at + "hash",
            "******",
            "is not a bcrypt hash (like $2a$10$ and 53 more characters); a plain-text password is"
                + " not accepted: `relay passwd` prints the hash");
      }
      if (u.getRole() == null) {
        throw new InvalidConfigurationPropertyValueException(
            at + "role", null, "is missing: viewer or operator");
      }
    }
  }

  /** The handler of each kind: {@code log}, or the HTTP transport's for its route. */
  private Map<String, Handler> buildHandlers() {
    Map<String, HttpRoute> routes = new LinkedHashMap<>();
    for (String kind : kinds) {
      ServeProperties.Kind k = serve.getKinds().getOrDefault(kind, new ServeProperties.Kind());
      if (k.getHandler() == ServeProperties.Handler.HTTP) {
        routes.put(kind, route(kind, k));
      }
    }
    HttpTransport transport =
        routes.isEmpty()
            ? null
            : HttpTransport.builder().routes(List.copyOf(routes.values())).build();
    Map<String, Handler> all = new LinkedHashMap<>();
    for (String kind : kinds) {
      if (!routes.containsKey(kind)) {
        noHttpSettings(kind);
      }
      all.put(kind, routes.containsKey(kind) ? transport : ServeApplication.LogHandler.INSTANCE);
    }
    return all;
  }

  /**
   * Refuses an {@code http} setting given to a kind whose handler is {@code log}: it binds, but
   * nothing reads it, and a forgotten {@code handler: http} would otherwise log the work as done
   * instead of sending it.
   */
  private void noHttpSettings(String kind) {
    for (String setting : HTTP_ONLY) {
      String name = RelayKindNames.property(kind, setting);
      if (property(env, name) != null) {
        throw new InvalidConfigurationPropertyValueException(
            name,
            null,
            "is read by handler http only, and this kind's handler is log: set "
                + RelayKindNames.property(kind, "handler")
                + "=http, or remove it");
      }
    }
  }

  /**
   * Warns of each schedule whose kind this serve has no handler for: its slots become ready work
   * that no worker here claims. Not refused, as another process (an application with the starter,
   * another serve) may handle the kind: scheduling.md runs schedulers anywhere that reaches the
   * database.
   */
  private void unhandledSchedules() {
    schedules
        .getSchedules()
        .forEach(
            (name, d) -> {
              if (d.getKind() != null && !kinds.contains(d.getKind())) {
                String at = "relay.schedules." + RelayKindNames.key(name) + ".kind";
                warnings.add(
                    given(env, at)
                        + ": kind "
                        + d.getKind()
                        + " has no handler in this serve (its kinds: "
                        + String.join(", ", kinds)
                        + "): its slots wait as ready work until another process that handles "
                        + d.getKind()
                        + " claims them; to handle them here, give "
                        + RelayKindNames.property(d.getKind(), "handler")
                        + " (log or http)");
              }
            });
  }

  private static HttpRoute route(String kind, ServeProperties.Kind k) {
    String at = RelayKindNames.property(kind, "");
    if (k.getUrl() == null) {
      throw new InvalidConfigurationPropertyValueException(
          at + "url", null, "handler http needs url, an http or https URL");
    }
    if (k.getFencing() == HttpRoute.Fencing.RESOURCE) {
      throw new InvalidConfigurationPropertyValueException(
          at + "fencing",
          "resource",
          "must be generation or none (a per-resource token needs code, see receivers.md)");
    }
    try {
      HttpRoute r =
          HttpRoute.of(kind, k.getUrl())
              .withTimeouts(k.getConnectTimeout(), k.getRequestTimeout())
              .withMilestone(k.getMilestone())
              .withFencing(k.getFencing());
      if (k.getReceiverRefHeader() != null) {
        r = r.withReceiverRefHeader(k.getReceiverRefHeader());
      }
      if (k.getReceiverRefField() != null) {
        r = r.withReceiverRefField(k.getReceiverRefField());
      }
      return r;
    } catch (InvalidConfigurationException e) {
      // The route names its settings as the Java API does; say the property.
      String leaf = e.setting().replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
      throw new InvalidConfigurationPropertyValueException(at + leaf, null, e.problem());
    }
  }

  /**
   * Refuses a {@code relay.*} key of the file that nothing binds (a typo is an error, not a silent
   * default); a password among the console's users is refused as such.
   */
  private void unread(Set<ConfigurationPropertyName> bound) {
    for (PropertySource<?> s : env.getPropertySources()) {
      if (!s.getName().startsWith("relay serve config")
          || !(s instanceof EnumerablePropertySource<?>)) {
        continue;
      }
      IterableConfigurationPropertySource source =
          (IterableConfigurationPropertySource) ConfigurationPropertySource.from(s);
      for (ConfigurationPropertyName name : source) {
        String key = name.toString();
        if (!key.startsWith("relay.") || bound.contains(name)) {
          continue;
        }
        if (name.getLastElement(ConfigurationPropertyName.Form.UNIFORM).equals("password")
            && key.startsWith("relay.console.users")) {
          throw new InvalidConfigurationPropertyValueException(
              key,
              "******",
              "is not accepted (no plain-text passwords in the config); give hash, the bcrypt hash"
                  + " `relay passwd` prints");
        }
        throw new InvalidConfigurationPropertyValueException(
            key,
            source.getConfigurationProperty(name).getValue(),
            "is not a relay serve setting (see docs/operations.md)");
      }
    }
  }

  /** Records every name a value was bound to. */
  private static final class Recording extends AbstractBindHandler {
    private final Set<ConfigurationPropertyName> bound;

    Recording(Set<ConfigurationPropertyName> bound) {
      this.bound = bound;
    }

    @Override
    public Object onSuccess(
        ConfigurationPropertyName name, Bindable<?> target, BindContext context, Object result) {
      bound.add(name);
      return super.onSuccess(name, target, context, result);
    }
  }

  // --- messages

  /** {@code property=value (from origin): reason}. */
  static String describe(StandardEnvironment env, InvalidConfigurationPropertyValueException e) {
    Object value = e.getValue();
    ConfigurationProperty p = property(env, e.getName());
    if (p != null && value == null) {
      value = p.getValue();
    }
    String origin = origin(p);
    if (p == null) {
      // a key Boot reads under another name (relay.kinds.mail:v2.handler) is named as written
      for (PropertySource<?> s : env.getPropertySources()) {
        if (s.containsProperty(e.getName())) {
          Origin o = OriginLookup.getOrigin(s, e.getName());
          origin = o == null ? "" : " (" + o + ")";
          break;
        }
      }
    }
    return e.getName()
        + (value == null ? "" : "=" + masked(e.getName(), value))
        + origin
        + ": "
        + e.getReason();
  }

  static String describe(StandardEnvironment env, BindException e) {
    ConfigurationProperty p = e.getProperty();
    String name = p != null ? p.getName().toString() : e.getName().toString();
    Class<?> type = e.getTarget().getType().resolve(Object.class);
    // relay.concurrency: ${UNSET} is no integer because its placeholder is not set: say that
    String reason = unresolvable(e);
    return name
        + (p == null ? "" : "=" + masked(name, p.getValue()))
        + origin(p)
        + ": "
        + (reason != null ? reason : expected(e, type));
  }

  /** Why a value of {@code type} did not bind: the form the type takes. */
  private static String expected(BindException e, Class<?> type) {
    if (type.isEnum()) {
      return "must be one of "
          + Arrays.stream(type.getEnumConstants())
              .map(c -> ((Enum<?>) c).name().toLowerCase(Locale.ROOT))
              .collect(Collectors.joining(", "));
    }
    if (type == Duration.class) {
      return "is not a duration: use 500ms, 30s, 5m, 2h, 7d or ISO-8601 like PT30S";
    }
    if (type == int.class || type == Integer.class || type == long.class) {
      return "must be an integer";
    }
    if (type == boolean.class || type == Boolean.class) {
      return "must be true or false";
    }
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return "cannot be read as " + type.getSimpleName() + ": " + root.getMessage();
  }

  /** {@code property=value (from origin)}, as a message names what was given. */
  private static String given(StandardEnvironment env, String name) {
    ConfigurationProperty p = property(env, name);
    return name + (p == null ? "" : "=" + masked(name, p.getValue())) + origin(p);
  }

  private static ConfigurationProperty property(StandardEnvironment env, String name) {
    // A key of the file may not be a valid property name ("relay." alone): then it has no value
    // to show, and the message still names it (found by ServeFuzzTest).
    ConfigurationPropertyName n = ConfigurationPropertyName.ofIfValid(name);
    if (n == null) {
      return null;
    }
    for (ConfigurationPropertySource s : ConfigurationPropertySources.get(env)) {
      ConfigurationProperty p = s.getConfigurationProperty(n);
      if (p != null) {
        return p;
      }
    }
    return null;
  }

  private static String origin(ConfigurationProperty p) {
    Origin o = p == null ? null : p.getOrigin();
    return o == null ? "" : " (" + o + ")";
  }

  private static String masked(String name, Object value) {
    return PrintConfig.value(name, String.valueOf(value));
  }

  // --- what the rest of serve reads

  Path file() {
    return file;
  }

  StandardEnvironment environment() {
    return env;
  }

  /** The JSON keys used and the property each became; empty for YAML and properties. */
  List<String> jsonEquivalents() {
    return json == null ? List.of() : JsonConfig.equivalents(json);
  }

  RelayProperties relay() {
    return relay;
  }

  RelayScheduleProperties schedules() {
    return schedules;
  }

  ServeProperties serve() {
    return serve;
  }

  ConsoleProperties console() {
    return console;
  }

  boolean consoleEnabled() {
    return consoleEnabled;
  }

  Set<String> kinds() {
    return kinds;
  }

  Map<String, Handler> handlers() {
    return handlers;
  }

  String bind() {
    return bind;
  }

  int port() {
    return port;
  }

  /**
   * What is accepted but likely wrong, one line each ({@code property=value (origin): why}), for
   * serve to print at start and with {@code --print-config}.
   */
  List<String> warnings() {
    return List.copyOf(warnings);
  }

  List<ServeProperties.User> users() {
    return consoleEnabled ? serve.getConsole().getUsers() : List.of();
  }
}
