package dev.relay.bench;

import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.sql.SQLException;
import java.util.Properties;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Pattern;
import org.postgresql.Driver;
import org.postgresql.PGProperty;
import picocli.CommandLine;

/**
 * The {@code --jdbc-url} rule every {@code relay} command follows, for the bench: a URL that is not
 * PostgreSQL's, that the driver cannot read, or that is empty is a usage error (exit 2); a database
 * that cannot be reached is one line (exit 3); no line shows a URL's password. The relay command's
 * own copy lives in relay-app, which the bench does not depend on: these few lines are repeated
 * rather than make the bench's jar carry the command's.
 */
final class BenchUrls {
  /** What a password is printed as, as the other commands print it. */
  static final String MASK = "******";

  /** The form of a database URL that usage errors show. */
  static final String URL_EXAMPLE = "jdbc:postgresql://host:5432/db?user=u";

  /** Seconds the probe waits to connect and for the log-in, unless the URL names its own. */
  static final int TIMEOUT_SECONDS = 10;

  private static final Pattern PASSWORD_PARAMETER = Pattern.compile("(?i)(password=)[^&;\\s'\"]*");
  private static final Pattern USER_INFO_PASSWORD =
      Pattern.compile("(//[^/:@\\s'\"]*:)[^/@\\s'\"]*@");

  /**
   * pgjdbc's java.util.logging logger, held so that its level stays set (JUL keeps loggers weakly):
   * its warning on a URL it cannot read quotes the URL whole, password included.
   */
  private static final Logger DRIVER_LOG = Logger.getLogger("org.postgresql");

  private BenchUrls() {}

  /** Silences pgjdbc's own log in this process ({@link #DRIVER_LOG}): no line of it is relay's. */
  static void silenceDriverLog() {
    DRIVER_LOG.setLevel(Level.OFF);
  }

  /** {@code text} with every JDBC URL's password masked ({@code password=}, {@code user:pw@}). */
  static String maskPasswords(String text) {
    String masked = PASSWORD_PARAMETER.matcher(text).replaceAll("$1" + MASK);
    return USER_INFO_PASSWORD.matcher(masked).replaceAll("$1" + MASK + "@");
  }

  /**
   * {@code url} ({@code --jdbc-url}), or null when not given (the embedded server); a usage error
   * when it is empty, not a PostgreSQL JDBC URL, or one the driver cannot read.
   */
  static String checked(CommandLine cl, String url) {
    if (url == null) {
      return null;
    }
    if (url.isBlank()) {
      throw new CommandLine.ParameterException(
          cl,
          "--jdbc-url is empty: give a PostgreSQL JDBC URL like "
              + URL_EXAMPLE
              + ", or leave --jdbc-url out to use an embedded PostgreSQL");
    }
    if (!url.startsWith("jdbc:postgresql:")) {
      throw new CommandLine.ParameterException(
          cl,
          "--jdbc-url must be a PostgreSQL JDBC URL like "
              + URL_EXAMPLE
              + ", was '"
              + maskPasswords(url)
              + "'");
    }
    if (Driver.parseURL(url, null) == null) {
      throw new CommandLine.ParameterException(
          cl,
          "--jdbc-url '"
              + maskPasswords(url)
              + "' is not a URL the PostgreSQL driver can read (a host, an optional port number,"
              + " then /database), like "
              + URL_EXAMPLE
              + (url.indexOf('@') >= 0
                  ? ": give the user and the password as its parameters user and password, not"
                      + " before an @"
                  : ""));
    }
    return url;
  }

  /**
   * The properties of a first connection to {@code url}: pgjdbc's {@code connectTimeout} and {@code
   * loginTimeout} at {@link #TIMEOUT_SECONDS} (the URL's own values, when it names them, win), so
   * that a server that never answers is an unavailable database, not a hung bench.
   */
  static Properties probeProperties() {
    Properties p = new Properties();
    p.setProperty("connectTimeout", String.valueOf(TIMEOUT_SECONDS));
    p.setProperty("loginTimeout", String.valueOf(TIMEOUT_SECONDS));
    return p;
  }

  /**
   * One line for a driver error on connecting to {@code url}: the cause that pgjdbc's "The
   * connection attempt failed." hides (a host that does not resolve, a refused or timed out
   * connection), else the driver's first line; the password masked.
   */
  static String describe(SQLException e, String url) {
    for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
      if (t instanceof UnknownHostException) {
        return "unknown host " + (t.getMessage() == null ? hosts(url) : t.getMessage());
      }
      if (t instanceof ConnectException) {
        return (String.valueOf(t.getMessage())
                    .toLowerCase(java.util.Locale.ROOT)
                    .contains("refused")
                ? "connection refused"
                : "cannot connect (" + t.getMessage() + ")")
            + " at "
            + hosts(url);
      }
      if (t instanceof SocketTimeoutException) {
        return "no answer from " + hosts(url) + " within " + TIMEOUT_SECONDS + " s";
      }
    }
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    int newline = message.indexOf('\n');
    return maskPasswords(newline < 0 ? message : message.substring(0, newline));
  }

  /** The {@code host:port} pairs {@code url} names, as pgjdbc reads them. */
  private static String hosts(String url) {
    Properties p = Driver.parseURL(url, null);
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
