package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.lang.module.Configuration;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Set;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The module descriptor of relay-core, checked on the module path. The other tests run on the class
 * path (see relay-core's pom), so this one resolves {@code dev.relay} in a module layer of its own,
 * from the compiled classes and the real pgjdbc and slf4j jars.
 */
@RelayDatabaseTest
class ModuleDescriptorTest {

  /** The public packages. A new public package is exported on purpose, here and in module-info. */
  static final Set<String> PUBLIC_PACKAGES =
      Set.of("dev.relay", "dev.relay.admin", "dev.relay.receiver", "dev.relay.receiver.http");

  @Test
  void exportsExactlyThePublicPackagesToEveryone() {
    ModuleDescriptor descriptor = descriptor();

    assertThat(descriptor.name()).isEqualTo("dev.relay");
    assertThat(descriptor.exports()).allSatisfy(e -> assertThat(e.isQualified()).isFalse());
    assertThat(descriptor.exports().stream().map(ModuleDescriptor.Exports::source))
        .containsExactlyInAnyOrderElementsOf(PUBLIC_PACKAGES);
    assertThat(descriptor.opens()).isEmpty();
  }

  @Test
  void everyPackageOutsideInternalIsExported() {
    Set<String> notExported =
        descriptor().packages().stream()
            .filter(p -> !p.startsWith("dev.relay.internal") && !p.equals("dev.relay.migrations"))
            .filter(p -> !PUBLIC_PACKAGES.contains(p))
            .collect(Collectors.toSet());

    assertThat(notExported)
        .as("packages that are neither internal nor exported (export them or move them)")
        .isEmpty();
  }

  @Test
  void resolvesOnTheModulePathAndMigratesThroughIt(TestDatabase db) throws Exception {
    ModuleFinder finder =
        ModuleFinder.of(
            location(Relay.class),
            location(org.postgresql.Driver.class),
            location(org.slf4j.Logger.class));
    Configuration configuration =
        ModuleLayer.boot().configuration().resolve(finder, ModuleFinder.of(), Set.of("dev.relay"));
    ModuleLayer layer =
        ModuleLayer.boot()
            .defineModulesWithOneLoader(configuration, ClassLoader.getPlatformClassLoader());
    Module module = layer.findModule("dev.relay").orElseThrow();

    assertThat(module.isExported("dev.relay")).isTrue();
    assertThat(module.isExported("dev.relay.internal.store")).isFalse();
    assertThat(module.getPackages()).contains("dev.relay.internal.store");

    // The migrations are resources of an encapsulated package; the Migrator must still read them.
    Class<?> migrator = layer.findLoader("dev.relay").loadClass("dev.relay.Migrator");
    assertThat(migrator.getModule()).isSameAs(module);
    Method migrate = migrator.getMethod("migrate", DataSource.class, String.class);
    String schema = db.schema() + "_mod";
    try {
      migrate.invoke(null, db.dataSource(), schema);
      assertThat(db.queryLong("SELECT max(version) FROM " + schema + ".schema_version"))
          .isEqualTo(Migrator.LATEST_VERSION);
    } finally {
      db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
  }

  private static ModuleDescriptor descriptor() {
    return ModuleFinder.of(location(Relay.class))
        .find("dev.relay")
        .orElseThrow(() -> new AssertionError("no module dev.relay in " + location(Relay.class)))
        .descriptor();
  }

  private static Path location(Class<?> type) {
    try {
      return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }
}
