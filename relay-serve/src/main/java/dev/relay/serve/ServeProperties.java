package dev.relay.serve;

import dev.relay.Milestone;
import dev.relay.transport.http.HttpRoute;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * What {@code relay serve} reads under {@code relay.*} beyond the starter's {@code RelayProperties}
 * (which binds the same prefix: a kind's policy, {@code relay.kinds.<kind>.*}, lives there): which
 * handler runs each kind, the route of an {@code http} kind, and the console's users. An
 * application with the starter and its handlers in code has no use for these.
 *
 * <pre>
 * relay.kinds.mail.handler=http                        # log (the default) or http
 * relay.kinds.mail.url=http://127.0.0.1:8025/mail
 * relay.kinds.mail.receiver-ref-field=email_id
 * relay.console.users[0].name=olga
 * relay.console.users[0].hash=$2a$10$...               # relay passwd prints it
 * relay.console.users[0].role=operator                 # or viewer
 * </pre>
 */
@ConfigurationProperties("relay")
public class ServeProperties {
  /** The handler and route of each kind, by kind name. */
  private Map<String, Kind> kinds = new LinkedHashMap<>();

  /** The console's sign-in. */
  private final Console console = new Console();

  /** The handlers a kind may name. */
  public enum Handler {
    /** Logs the work and completes it. */
    LOG,
    /** POSTs the payload to the kind's url (relay-transport-http). */
    HTTP
  }

  /** One kind's handler and, for {@code http}, its route; its policy is the starter's. */
  public static class Kind {
    /** What runs the work: log (logs and completes it) or http (POSTs it to url). */
    private Handler handler = Handler.LOG;

    /** http only: the endpoint every attempt POSTs the payload to (http or https). */
    private URI url;

    /** http only: how long to wait for the TCP connection (1ms-1h). */
    private Duration connectTimeout = HttpRoute.DEFAULT_CONNECT_TIMEOUT;

    /** http only: how long to wait for the whole response (1ms-1h). */
    private Duration requestTimeout = HttpRoute.DEFAULT_REQUEST_TIMEOUT;

    /** http only: a response header holding the receiver's reference. */
    private String receiverRefHeader;

    /** http only: a field of a JSON response holding the receiver's reference. */
    private String receiverRefField;

    /** http only: what the receiver's 2xx means: accepted, queued or delivered. */
    private Milestone milestone = Milestone.ACCEPTED;

    /** http only: generation (fencing headers from the claim) or none. */
    private HttpRoute.Fencing fencing = HttpRoute.Fencing.GENERATION;

    public Handler getHandler() {
      return handler;
    }

    public void setHandler(Handler handler) {
      this.handler = handler;
    }

    public URI getUrl() {
      return url;
    }

    public void setUrl(URI url) {
      this.url = url;
    }

    public Duration getConnectTimeout() {
      return connectTimeout;
    }

    public void setConnectTimeout(Duration connectTimeout) {
      this.connectTimeout = connectTimeout;
    }

    public Duration getRequestTimeout() {
      return requestTimeout;
    }

    public void setRequestTimeout(Duration requestTimeout) {
      this.requestTimeout = requestTimeout;
    }

    public String getReceiverRefHeader() {
      return receiverRefHeader;
    }

    public void setReceiverRefHeader(String receiverRefHeader) {
      this.receiverRefHeader = receiverRefHeader;
    }

    public String getReceiverRefField() {
      return receiverRefField;
    }

    public void setReceiverRefField(String receiverRefField) {
      this.receiverRefField = receiverRefField;
    }

    public Milestone getMilestone() {
      return milestone;
    }

    public void setMilestone(Milestone milestone) {
      this.milestone = milestone;
    }

    public HttpRoute.Fencing getFencing() {
      return fencing;
    }

    public void setFencing(HttpRoute.Fencing fencing) {
      this.fencing = fencing;
    }
  }

  /** {@code relay.console.users}: who may sign in to the console. */
  public static class Console {
    /** The console's users: name, bcrypt hash (relay passwd prints it) and role. */
    private List<User> users = new ArrayList<>();

    public List<User> getUsers() {
      return users;
    }

    public void setUsers(List<User> users) {
      this.users = users;
    }
  }

  /** The roles a console user may have. */
  public enum Role {
    /** Reads every page. */
    VIEWER,
    /** Also redrives, cancels, supersedes and counts a purge. */
    OPERATOR
  }

  /** One console user; a password is never stored, only its bcrypt hash. */
  public static class User {
    /** The name to sign in with. */
    private String name;

    /** The bcrypt hash of the password, as relay passwd prints it. */
    private String hash;

    /** viewer or operator. */
    private Role role;

    public String getName() {
      return name;
    }

    public void setName(String name) {
      this.name = name;
    }

    public String getHash() {
      return hash;
    }

    public void setHash(String hash) {
      this.hash = hash;
    }

    public Role getRole() {
      return role;
    }

    public void setRole(Role role) {
      this.role = role;
    }
  }

  public Map<String, Kind> getKinds() {
    return kinds;
  }

  public void setKinds(Map<String, Kind> kinds) {
    this.kinds = kinds;
  }

  public Console getConsole() {
    return console;
  }
}
