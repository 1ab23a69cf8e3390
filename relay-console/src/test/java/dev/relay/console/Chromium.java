package dev.relay.console;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * A real headless Chromium (Debian's {@code chromium} and {@code chromium-driver}) with a profile
 * of its own, 1280 by 1000 pixels, for the browser tests of the console (here and in {@code
 * relay-serve}, through this module's test jar). Without Chromium it fails the test, saying how to
 * install it: a browser test is never skipped. Closing quits it and deletes the profile.
 */
public final class Chromium implements AutoCloseable {
  static final Path BINARY = Path.of("/usr/bin/chromium");
  static final Path DRIVER = Path.of("/usr/bin/chromedriver");

  private final Path profile;
  private final WebDriver web;

  private Chromium(Path profile, WebDriver web) {
    this.profile = profile;
    this.web = web;
  }

  /** Starts it, or fails the test when Chromium or its driver is not installed. */
  public static Chromium start() throws IOException {
    return start(new String[0]);
  }

  /**
   * Starts it with {@code arguments} added to the usual ones (such as {@code
   * --ignore-certificate-errors} for a test's self-signed certificate).
   */
  public static Chromium start(String... arguments) throws IOException {
    if (!Files.isExecutable(BINARY) || !Files.isExecutable(DRIVER)) {
      fail(
          "This browser test needs Chromium at "
              + BINARY
              + " and its driver at "
              + DRIVER
              + ": install them with `apt-get install -y chromium chromium-driver` (as .ci/run"
              + " does); the test is not skipped without them");
    }
    Path profile = Files.createTempDirectory("relay-console-chromium-");
    ChromeDriverService service =
        new ChromeDriverService.Builder()
            .usingDriverExecutable(DRIVER.toFile())
            .usingAnyFreePort()
            .build();
    ChromeOptions options = new ChromeOptions();
    options.setBinary(BINARY.toFile());
    options.addArguments(
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1000",
        "--user-data-dir=" + profile);
    options.addArguments(arguments);
    try {
      return new Chromium(profile, new ChromeDriver(service, options));
    } catch (RuntimeException e) {
      delete(profile);
      throw e;
    }
  }

  /** The browser. */
  public WebDriver web() {
    return web;
  }

  @Override
  public void close() throws IOException {
    try {
      web.quit();
    } finally {
      delete(profile);
    }
  }

  private static void delete(Path dir) throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
