package dev.relay.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Small file helpers. */
final class Files2 {
  private Files2() {}

  /** Deletes a directory tree, best effort. */
  static void deleteTree(Path dir) {
    if (dir == null || !Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      paths
          .sorted(Comparator.reverseOrder())
          .forEach(
              p -> {
                try {
                  Files.deleteIfExists(p);
                } catch (IOException e) {
                  // best effort: a file the server is still writing
                }
              });
    } catch (IOException e) {
      // best effort
    }
  }
}
