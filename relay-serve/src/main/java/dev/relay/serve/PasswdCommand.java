package dev.relay.serve;

import java.io.BufferedReader;
import java.io.Console;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.Callable;
import org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder;
import picocli.CommandLine.Command;
import picocli.CommandLine.ParentCommand;

/**
 * {@code relay passwd}: reads a password (from the console without echo, else one line of stdin)
 * and prints its bcrypt hash for {@code relay.console.users[N].hash} of the serve config.
 */
@Command(
    name = "passwd",
    mixinStandardHelpOptions = true,
    header = "Prints the bcrypt hash of a password for the serve config's console users.",
    description = {
      "Reads a password (typed without echo on a terminal, else the first line of stdin) and"
          + " prints its bcrypt hash, for relay.console.users[N].hash of the `relay serve`"
          + " configuration. The password itself is never stored.",
      ""
    })
final class PasswdCommand implements Callable<Integer> {
  /** The longest password bcrypt reads, in UTF-8 bytes. */
  static final int MAX_BYTES = 72;

  @ParentCommand ServeMain main;

  @Override
  public Integer call() throws IOException {
    char[] password = read();
    try {
      if (password == null || password.length == 0) {
        throw new ServeMain.ServeFailure(ServeMain.USAGE, "no password given", null);
      }
      int bytes = new String(password).getBytes(StandardCharsets.UTF_8).length;
      if (bytes > MAX_BYTES) {
        // Found by ServeFuzzTest: Spring Security's encoder throws IllegalArgumentException here.
        throw new ServeMain.ServeFailure(
            ServeMain.USAGE,
            "the password is "
                + bytes
                + " bytes in UTF-8; bcrypt reads at most "
                + MAX_BYTES
                + " bytes: choose a shorter one",
            null);
      }
      main.out().println(new BCryptPasswordEncoder().encode(new String(password)));
      main.out().flush();
      return ServeMain.OK;
    } finally {
      if (password != null) {
        Arrays.fill(password, '\0');
      }
    }
  }

  private char[] read() throws IOException {
    Console console = System.console();
    if (console != null && main.in() == System.in && isTerminal(console)) {
      char[] first = console.readPassword("Password: ");
      char[] again = console.readPassword("Again: ");
      if (first != null && !Arrays.equals(first, again)) {
        throw new ServeMain.ServeFailure(ServeMain.USAGE, "the two passwords differ", null);
      }
      return first;
    }
    String line =
        new BufferedReader(new InputStreamReader(main.in(), StandardCharsets.UTF_8)).readLine();
    return line == null ? null : line.toCharArray();
  }

  /**
   * Whether the console is a terminal. From Java 22 on {@link System#console()} is not null when
   * stdin is redirected, and {@code Console.isTerminal()} (22+) tells; before 22 a non-null console
   * is a terminal.
   */
  private static boolean isTerminal(Console console) {
    try {
      return (Boolean) Console.class.getMethod("isTerminal").invoke(console);
    } catch (NoSuchMethodException e) {
      return true;
    } catch (ReflectiveOperationException e) {
      return false;
    }
  }
}
