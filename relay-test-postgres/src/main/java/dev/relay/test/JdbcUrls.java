package dev.relay.test;

import java.math.BigDecimal;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.sql.SQLException;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Pattern;
import org.postgresql.Driver;
import org.postgresql.PGProperty;
import org.postgresql.util.PSQLState;

/**
 * The rules Relay's commands ({@code relay}, {@code relay serve}, {@code relay bench}) apply to a
 * PostgreSQL JDBC URL a person typed: which URLs are refused before anything connects, how a
 * password is hidden in every line that may quote a URL, the timeouts of a first connection, and
 * the one line that says why a database could not be reached.
 *
 * <pre>{@code
 * String problem = JdbcUrls.problem("--jdbc-url", url); // null when the URL is usable
 * System.err.println(JdbcUrls.maskPasswords("cannot use " + url));
 * }</pre>
 *
 * <p>It lives in the test kit because every command that takes a URL already depends on it for the
 * embedded server; it needs only pgjdbc.
 */
public final class JdbcUrls {
  /** What a password is printed as. */
  public static final String MASK = "******";

  /** The form of a database URL that usage errors show. */
  public static final String EXAMPLE = "jdbc:postgresql://host:5432/db?user=u";

  /**
   * Seconds pgjdbc waits to open a TCP connection ({@code connectTimeout}) and for the server to
   * answer the log-in ({@code loginTimeout}) in {@link #withTimeouts}, unless the URL names its
   * own: without them pgjdbc waits forever for a server that accepts the connection and never
   * answers.
   */
  public static final int TIMEOUT_SECONDS = 10;

  private static final List<String> TIMEOUTS = List.of("connectTimeout", "loginTimeout");

  /** What pgjdbc makes of the URL's host, port and database, checked as the URL is read. */
  private static final Set<PGProperty> DERIVED =
      Set.of(PGProperty.PG_HOST, PGProperty.PG_PORT, PGProperty.PG_DBNAME);

  private static final Pattern INTEGER = Pattern.compile("-?\\d+");
  private static final Pattern WHOLE_SECONDS = Pattern.compile("\\d+");
  private static final Pattern SECONDS = Pattern.compile("\\d+(\\.\\d+)?");

  /** A {@code password=} parameter of a URL (or a properties string), up to its end. */
  private static final Pattern PASSWORD_PARAMETER = Pattern.compile("(?i)(password=)[^&;\\s'\"]*");

  /** The password of a {@code //user:password@host} user-info part. */
  private static final Pattern USER_INFO_PASSWORD =
      Pattern.compile("(//[^/:@\\s'\"]*:)[^/@\\s'\"]*@");

  /**
   * pgjdbc's java.util.logging logger, held so that its level stays set (JUL keeps loggers weakly).
   * Its warnings quote a URL whole, password included ({@code JDBC URL invalid port number:
   * secret@host} for {@code //u:secret@host}).
   */
  private static final Logger DRIVER_LOG = Logger.getLogger("org.postgresql");

  private JdbcUrls() {}

  /**
   * {@code text} with the password of every JDBC URL in it masked: a {@code password=...} parameter
   * and the password of a {@code user:password@host} form; {@code null} stays {@code null}. For
   * every line that may quote a URL a person gave (a bad URL, a driver error, a printed setting).
   */
  public static String maskPasswords(String text) {
    if (text == null) {
      return null;
    }
    String masked = PASSWORD_PARAMETER.matcher(text).replaceAll("$1" + MASK);
    return USER_INFO_PASSWORD.matcher(masked).replaceAll("$1" + MASK + "@");
  }

  /**
   * Why {@code url} cannot be used, or {@code null} when it can: it must start with {@code
   * jdbc:postgresql:} (DriverManager's "No suitable driver" for {@code mysql://} or the typo {@code
   * jdbc:postgres://} reads as an unreachable database), and pgjdbc must read it (a port that is
   * not a number is not) without a {@code user:password@} before the host, which pgjdbc has no form
   * for, and with parameter values it takes ({@link #parameterProblem}). The reason names neither
   * the URL nor where it came from: "must be a PostgreSQL JDBC URL like ...". A blank URL is left
   * to the caller, whose fallback differs (the embedded server, an unset variable).
   *
   * @param url a URL that is not blank
   */
  public static String reason(String url) {
    if (!url.startsWith("jdbc:postgresql:")) {
      return "must be a PostgreSQL JDBC URL like " + EXAMPLE;
    }
    Properties parsed = hasUserInfo(url) ? null : parse(url);
    if (parsed != null) {
      return parameterProblem(parsed);
    }
    return "is not a URL the PostgreSQL driver can read (a host, an optional port number, then"
        + " /database), like "
        + EXAMPLE
        + (url.indexOf('@') >= 0
            ? ": give the user and the password as its parameters user and password, not"
                + " before an @"
            : "");
  }

  /**
   * Why a parameter of a URL pgjdbc read is not one it takes, naming it; {@code null} when each is.
   * pgjdbc reads {@code sslmode=bogus} and refuses it only on connecting, with the SQLState of an
   * unreachable server, and ignores other values without a word ({@code tcpKeepAlive=yes} is false,
   * {@code loginTimeout=abc} no limit). The rules are pgjdbc's own definitions of its parameters
   * ({@link PGProperty}), not a list of ours: a parameter with choices takes one of them (any case,
   * as sslmode; a comma-separated list, as requireAuth); one whose default is {@code true} or
   * {@code false} takes true or false; one whose default is an integer takes an integer. Relay adds
   * the range of the two timeouts it sets itself ({@link #withTimeouts}). A parameter pgjdbc does
   * not define is left alone (pgjdbc ignores it) unless it is one that pgjdbc defines written in
   * another case ({@code sslMode}), and so is the case of a choice: pgjdbc matches sslmode in any
   * case, preferQueryMode in its own.
   */
  private static String parameterProblem(Properties parsed) {
    for (String name : new TreeSet<>(parsed.stringPropertyNames())) {
      PGProperty p = PGProperty.forName(name);
      if (p == null) {
        String meant = knownIgnoringCase(name);
        if (meant != null) {
          return "has parameter "
              + name
              + ", which the PostgreSQL driver does not know and ignores: its name is "
              + meant
              + " (names are case-sensitive)";
        }
        continue;
      }
      if (DERIVED.contains(p)) {
        continue;
      }
      String value = parsed.getProperty(name);
      String takes = takes(p, value);
      if (takes != null) {
        return "has parameter "
            + name
            + "="
            + value
            + ", which the PostgreSQL driver does not take: it takes "
            + takes;
      }
    }
    return null;
  }

  /**
   * The name of a parameter pgjdbc defines that {@code name} spells in another case ({@code
   * sslMode} for {@code sslmode}), or {@code null}. pgjdbc ignores such a parameter without a word,
   * so {@code sslMode=require} would connect without the TLS it asks for.
   */
  private static String knownIgnoringCase(String name) {
    for (PGProperty known : PGProperty.values()) {
      if (known.getName().equalsIgnoreCase(name)) {
        return known.getName();
      }
    }
    return null;
  }

  /** What {@code p} takes, when {@code value} is not among it; else {@code null}. */
  private static String takes(PGProperty p, String value) {
    String def = p.getDefaultValue();
    // The timeouts Relay sets itself; pgjdbc reads loginTimeout as a float (Driver.timeout)
    if (p == PGProperty.CONNECT_TIMEOUT) {
      return WHOLE_SECONDS.matcher(value).matches() && fitsAnInt(value)
          ? null
          : "a whole number of seconds, 0 or more (0: no limit)";
    }
    if (p == PGProperty.LOGIN_TIMEOUT) {
      return SECONDS.matcher(value).matches() && fitsAnInt(value)
          ? null
          : "a number of seconds, 0 or more (0: no limit)";
    }
    String[] choices = p.getChoices();
    if (choices != null) {
      for (String element : value.split(",", -1)) {
        if (!isChoice(element.strip(), choices)) {
          return "one of " + String.join(", ", choices);
        }
      }
      return null;
    }
    if ("true".equals(def) || "false".equals(def)) {
      return value.equalsIgnoreCase("true") || value.equalsIgnoreCase("false")
          ? null
          : "true or false";
    }
    if (def != null && INTEGER.matcher(def).matches()) {
      return INTEGER.matcher(value).matches() && fitsAnInt(value) ? null : "an integer";
    }
    return null;
  }

  /**
   * Whether {@code value} is one of {@code choices}, in any case; a version ({@code 3.2}) is its
   * major number's: pgjdbc lists protocolVersion's choices as {@code 3} alone and takes 3.0 and
   * 3.2.
   */
  private static boolean isChoice(String value, String[] choices) {
    for (String choice : choices) {
      if (choice.equalsIgnoreCase(value)
          || (INTEGER.matcher(choice).matches()
              && value.matches(Pattern.quote(choice) + "\\.\\d+"))) {
        return true;
      }
    }
    return false;
  }

  private static boolean fitsAnInt(String number) {
    try {
      BigDecimal n = new BigDecimal(number);
      return n.compareTo(BigDecimal.valueOf(Integer.MIN_VALUE)) >= 0
          && n.compareTo(BigDecimal.valueOf(Integer.MAX_VALUE)) <= 0;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  /**
   * The usage error for a connection that pgjdbc or the server refused for a value the URL gives
   * (SQLState 22023, invalid parameter value: {@code defaultRowFetchSize=-3}, which pgjdbc checks
   * only as it connects, or an {@code options=-c name=value} the server does not take), headed by
   * {@code source} and quoting the URL, password masked; {@code null} for any other failure, such
   * as an unreachable database.
   *
   * @param source what gave the URL, like {@code --jdbc-url} or {@code env RELAY_JDBC_URL}
   * @param url the URL of the connection
   * @param e what the connection attempt threw
   */
  public static String refusedParameter(String source, String url, SQLException e) {
    if (!PSQLState.INVALID_PARAMETER_VALUE.getState().equals(e.getSQLState())) {
      return null;
    }
    return source
        + " '"
        + maskPasswords(url)
        + "' has a value the PostgreSQL driver or server refuses: "
        + describe(e, url);
  }

  /**
   * Whether the host part of {@code url} has a {@code user@} or {@code user:password@} before the
   * host. pgjdbc has no such form, yet reads {@code //mina:s3cret@db:5432/shop} as the host {@code
   * mina:s3cret@db}, and the connection's "unknown host" error would then print the password.
   */
  private static boolean hasUserInfo(String url) {
    int start = url.indexOf("//");
    if (start < 0) {
      return false;
    }
    int end = url.length();
    for (char c : new char[] {'/', '?'}) {
      int at = url.indexOf(c, start + 2);
      if (at >= 0 && at < end) {
        end = at;
      }
    }
    return url.substring(start + 2, end).indexOf('@') >= 0;
  }

  /**
   * {@link #reason}, headed by {@code source} (the option or variable that gave the URL) and
   * quoting the URL with its password masked; {@code null} when the URL can be used.
   *
   * @param source what gave the URL, like {@code --jdbc-url} or {@code env RELAY_JDBC_URL}
   * @param url a URL that is not blank
   */
  public static String problem(String source, String url) {
    String reason = reason(url);
    if (reason == null) {
      return null;
    }
    String quoted = "'" + maskPasswords(url) + "'";
    return url.startsWith("jdbc:postgresql:")
        ? source + " " + quoted + " " + reason
        : source + " " + reason + ", was " + quoted;
  }

  /**
   * Whether pgjdbc reads {@code url} (a host, a port number, a database). pgjdbc's log is off while
   * it reads: its warning on a URL it cannot read quotes the URL whole.
   */
  public static boolean driverReads(String url) {
    return parse(url) != null;
  }

  /** pgjdbc's reading of {@code url}, its parameters decoded; {@code null} when it cannot. */
  private static Properties parse(String url) {
    synchronized (DRIVER_LOG) {
      Level before = DRIVER_LOG.getLevel();
      DRIVER_LOG.setLevel(Level.OFF);
      try {
        return Driver.parseURL(url, null);
      } finally {
        DRIVER_LOG.setLevel(before);
      }
    }
  }

  /**
   * Silences pgjdbc's own log in this process for good: a command whose every line is its own, each
   * URL masked, calls it before it connects.
   */
  public static void silenceDriverLog() {
    DRIVER_LOG.setLevel(Level.OFF);
  }

  /**
   * {@code url} with pgjdbc's {@code connectTimeout} and {@code loginTimeout} set to {@link
   * #TIMEOUT_SECONDS} where it does not name them (pgjdbc ignores {@code
   * DriverManager.setLoginTimeout}).
   */
  public static String withTimeouts(String url) {
    StringBuilder sb = new StringBuilder(url);
    for (String timeout : TIMEOUTS) {
      if (!Pattern.compile("[?&]" + timeout + "=").matcher(url).find()) {
        sb.append(sb.indexOf("?") < 0 ? '?' : '&').append(timeout).append('=');
        sb.append(TIMEOUT_SECONDS);
      }
    }
    return sb.toString();
  }

  /**
   * One line for a driver error on connecting to {@code url}: the cause that pgjdbc's "The
   * connection attempt failed." hides when it is a name that does not resolve, a refused or timed
   * out connection, or a log-in that was never answered; else the driver's first line. Passwords
   * masked.
   */
  public static String describe(SQLException e, String url) {
    for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
      if (t instanceof UnknownHostException) {
        String host = t.getMessage() == null ? hosts(url) : t.getMessage();
        return "unknown host " + host.replaceFirst(": .*", "");
      }
      if (t instanceof ConnectException) {
        String why = t.getMessage() == null ? "" : t.getMessage().toLowerCase(Locale.ROOT);
        return (why.contains("refused") ? "connection refused" : "cannot connect (" + why + ")")
            + " at "
            + hosts(url);
      }
      if (t instanceof SocketTimeoutException) {
        return "no TCP connection to "
            + hosts(url)
            + " within the connect timeout (connectTimeout, "
            + TIMEOUT_SECONDS
            + " s unless the URL names it)";
      }
    }
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    if (PSQLState.CONNECTION_UNABLE_TO_CONNECT.getState().equals(e.getSQLState())
        && e.getCause() == null
        && message.toLowerCase(Locale.ROOT).contains("timed out")) {
      // pgjdbc's loginTimeout: the server took the connection and did not answer the log-in.
      return hosts(url)
          + " accepted the connection but did not answer within the login timeout (loginTimeout, "
          + TIMEOUT_SECONDS
          + " s unless the URL names it)";
    }
    int newline = message.indexOf('\n');
    return maskPasswords(newline < 0 ? message : message.substring(0, newline));
  }

  /** The {@code host:port} pairs {@code url} names, as pgjdbc reads them. */
  private static String hosts(String url) {
    Properties p = url == null || !driverReads(url) ? null : Driver.parseURL(url, null);
    if (p == null) {
      return "the database";
    }
    String[] hosts = PGProperty.PG_HOST.getOrDefault(p).split(",");
    String[] ports = PGProperty.PG_PORT.getOrDefault(p).split(",");
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < hosts.length; i++) {
      sb.append(i == 0 ? "" : ", ").append(hosts[i]).append(':');
      sb.append(i < ports.length ? ports[i] : ports[ports.length - 1]);
    }
    return sb.toString();
  }
}
