package dev.relay.test;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The embedded PostgreSQL runs where the README says it does: zonky's archive for each covered
 * platform is on the kit's class path, named as zonky's resolver looks it up ({@code
 * postgres-<os>-<arch>.txz}, {@code arm_64} for arm64/aarch64). Only the Linux x86-64 one can be
 * started on CI's machine; this checks the others are shipped.
 */
class PlatformBinariesTest {
  @ParameterizedTest(name = "{0}")
  @ValueSource(
      strings = {
        "postgres-linux-x86_64.txz",
        "postgres-linux-arm_64.txz",
        "postgres-darwin-x86_64.txz",
        "postgres-darwin-arm_64.txz"
      })
  void theArchiveForEachCoveredPlatformIsOnTheClassPath(String archive) {
    assertThat(EmbeddedServer.class.getClassLoader().getResource(archive))
        .as("zonky's %s (see relay-test-postgres/pom.xml)", archive)
        .isNotNull();
  }

  /**
   * zonky's POM brings these two at its own default PostgreSQL, outside the binaries BOM: the kit
   * leaves them out, so no project of a user's runs its tests on a PostgreSQL Relay was not built
   * for.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"postgres-windows-x86_64.txz", "postgres-linux-x86_64-alpine_linux.txz"})
  void theArchivesOfUncoveredPlatformsAreLeftOut(String archive) {
    assertThat(EmbeddedServer.class.getClassLoader().getResource(archive))
        .as("zonky's %s (excluded in relay-test-postgres/pom.xml)", archive)
        .isNull();
  }
}
