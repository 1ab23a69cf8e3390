package dev.relay.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The database clock as a fault: PostgreSQL runs with Debian's libfaketime preloaded, which reads
 * the clock's offset from a file ({@code FAKETIME_TIMESTAMP_FILE}, for example {@code +3.000000} or
 * {@code -3.000000} seconds) and re-reads it on every call ({@code FAKETIME_NO_CACHE}), so writing
 * the file moves {@code clock_timestamp()} and {@code now()} of the running server at once, in
 * every backend, forwards or backwards. Relay decides leases, eligibility and deadlines on that
 * clock and on no other (docs/protocol.md §3.4), so this is the clock worth jumping; skewing a
 * worker's clock would test nothing it uses.
 *
 * <p>Only the wall clock moves: {@code FAKETIME_DONT_FAKE_MONOTONIC} leaves {@code CLOCK_MONOTONIC}
 * alone, which PostgreSQL uses for elapsed times (its latch waits); its timeouts ({@code
 * statement_timeout}, {@code lock_timeout}) are kernel timers checked against the wall clock, so a
 * backward jump can delay one by the jump. {@code FAKETIME_ONLY_CMDS=postgres} keeps {@code pg_ctl}
 * and the shell that starts the server on the real clock. The harness, the producer and the workers
 * run on the real clock throughout. Not thread-safe.
 */
final class FaultClock {
  /** Where Debian's {@code libfaketime} package puts the library, by architecture. */
  private static final List<Path> LIBRARIES =
      List.of(
          Path.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"),
          Path.of("/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1"),
          Path.of("/usr/lib/faketime/libfaketime.so.1"));

  private final Path library;
  private final Path file;
  private long offsetMillis;

  private FaultClock(Path library, Path file) {
    this.library = library;
    this.file = file;
  }

  /** The library's path, or null if Debian's {@code faketime} package is not installed. */
  static Path library() {
    return LIBRARIES.stream().filter(Files::isReadable).findFirst().orElse(null);
  }

  /** Why the clock cannot be faked here, or null if it can. */
  static String unavailable() {
    return library() == null
        ? "libfaketime is not installed (Debian: faketime, which brings libfaketime)"
        : null;
  }

  /** A clock at offset zero whose file lives in {@code dir}. */
  static FaultClock create(Path dir) throws IOException {
    Path library = library();
    if (library == null) {
      throw new IOException("cannot jump the database clock: " + unavailable());
    }
    FaultClock clock = new FaultClock(library, dir.resolve("faketime.rc"));
    clock.offset(0);
    return clock;
  }

  /** The environment that makes the server read its clock from this file. */
  Map<String, String> environment() {
    return Map.of(
        "LD_PRELOAD", library.toString(),
        "FAKETIME_TIMESTAMP_FILE", file.toString(),
        "FAKETIME_NO_CACHE", "1",
        "FAKETIME_DONT_FAKE_MONOTONIC", "1",
        "FAKETIME_ONLY_CMDS", "postgres");
  }

  /**
   * Sets the server clock's offset from the real time; the server sees it on its next clock read.
   * The file is replaced whole (written aside, then renamed), so no read sees half of it.
   */
  void offset(long millis) throws IOException {
    String text =
        String.format(
            Locale.ROOT,
            "%s%d.%03d000%n",
            millis < 0 ? "-" : "+",
            Math.abs(millis) / 1000,
            Math.abs(millis) % 1000);
    Path aside = file.resolveSibling(file.getFileName() + ".new");
    Files.writeString(aside, text, StandardCharsets.US_ASCII);
    Files.move(aside, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    offsetMillis = millis;
  }

  /**
   * Removes the names of the semaphore and shared memory that libfaketime made for a process tree
   * (in {@code /dev/shm}, named for the PID of the first process that loaded it, here the command
   * that started the server). That process {@code exec}s the next command rather than exiting, so
   * libfaketime never removes them itself; the server, which has them open, keeps them until it
   * ends.
   */
  static void releaseShared(long pid) {
    for (String name : List.of("faketime_shm_" + pid, "sem.faketime_sem_" + pid)) {
      try {
        Files.deleteIfExists(Path.of("/dev/shm", name));
      } catch (IOException e) {
        // best effort: a few bytes in /dev/shm
      }
    }
  }

  /** The offset last set. */
  long offsetMillis() {
    return offsetMillis;
  }

  /** The timestamp file. */
  Path file() {
    return file;
  }
}
