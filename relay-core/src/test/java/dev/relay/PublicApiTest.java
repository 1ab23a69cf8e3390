package dev.relay;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The public API of relay-core, compared with the checked-in dump {@code
 * relay-core/api/relay-core.api}.
 *
 * <p>The dump lists every public or protected type and member of the packages that {@code
 * module-info.java} exports, one per line, sorted: a type line, then its members indented. An
 * accidental public change fails this test, naming what was added and removed; an intended one is
 * made by regenerating the dump and committing it, so the change is a reviewed diff:
 *
 * <pre>{@code
 * ./mvnw -o -q -B -pl relay-core -am test -Dtest=PublicApiTest \
 *     -Dsurefire.failIfNoSpecifiedTests=false -Drelay.api.update=true
 * }</pre>
 */
class PublicApiTest {

  static final String UPDATE_COMMAND =
      "./mvnw -o -q -B -pl relay-core -am test -Dtest=PublicApiTest"
          + " -Dsurefire.failIfNoSpecifiedTests=false -Drelay.api.update=true";

  @Test
  void publicApiMatchesTheCheckedInDump() throws IOException {
    Path file = Path.of(System.getProperty("relay.api.file", "api/relay-core.api"));
    List<String> actual = dump();

    if (Boolean.getBoolean("relay.api.update")) {
      Files.createDirectories(file.toAbsolutePath().getParent());
      Files.write(file, actual, StandardCharsets.UTF_8);
      return;
    }
    List<String> expected =
        Files.exists(file) ? Files.readAllLines(file, StandardCharsets.UTF_8) : List.of();
    if (!expected.equals(actual)) {
      throw new AssertionError(difference(file, expected, actual));
    }
  }

  @Test
  void dumpListsTypesInOrderWithTheirMembers() {
    List<String> dump = dump();
    List<String> types = dump.stream().filter(l -> !l.startsWith(" ")).collect(Collectors.toList());

    assertThat(dump)
        .contains(
            "public final class dev.relay.Relay implements java.lang.AutoCloseable",
            "  public static dev.relay.Relay$Builder builder(javax.sql.DataSource)");
    assertThat(types.stream().map(l -> l.replaceAll("^.*? (dev\\.relay[^ <]*).*$", "$1")))
        .isSorted()
        .doesNotHaveDuplicates();
    assertThat(types).noneMatch(l -> l.contains("dev.relay.internal"));
  }

  @Test
  void differenceNamesWhatWasAddedAndRemovedAndHowToAcceptIt() {
    List<String> before =
        List.of("public class a.A", "  public void kept()", "  public void gone()");
    List<String> after =
        List.of("public class a.A", "  public void kept()", "  public void added()");

    String message = difference(Path.of("x.api"), before, after);

    assertThat(message)
        .contains("removed: public class a.A :: public void gone()")
        .contains("added:   public class a.A :: public void added()")
        .doesNotContain("kept")
        .contains(UPDATE_COMMAND);
  }

  /** What changed, as lines of the dump, with the command that accepts the change. */
  static String difference(Path file, List<String> expected, List<String> actual) {
    List<String> removed = qualified(expected);
    List<String> added = qualified(actual);
    List<String> stillThere = new ArrayList<>(removed);
    removed.removeAll(added);
    added.removeAll(stillThere);
    StringBuilder message =
        new StringBuilder("The public API of relay-core differs from ")
            .append(file)
            .append(" (")
            .append(Files.exists(file) ? "checked in" : "missing")
            .append(").\n");
    removed.forEach(line -> message.append("  removed: ").append(line).append('\n'));
    added.forEach(line -> message.append("  added:   ").append(line).append('\n'));
    if (removed.isEmpty() && added.isEmpty()) {
      message.append("  (same lines, different order: the dump was edited by hand)\n");
    }
    return message
        .append("If the change is intended, regenerate the dump and commit it with the change:\n  ")
        .append(UPDATE_COMMAND)
        .toString();
  }

  /** Each member line prefixed with its type, so a difference names where it is. */
  private static List<String> qualified(List<String> dump) {
    List<String> out = new ArrayList<>();
    String type = "";
    for (String line : dump) {
      if (line.startsWith("  ")) {
        out.add(type + " :: " + line.strip());
      } else {
        type = line;
        out.add(line);
      }
    }
    return out;
  }

  /** The dump: types sorted by name, each followed by its members sorted. */
  static List<String> dump() {
    Path classes = classesDirectory();
    List<String> lines = new ArrayList<>();
    for (Class<?> type : publicTypes(classes)) {
      lines.add(typeLine(type));
      TreeSet<String> members = new TreeSet<>();
      for (Field f : type.getDeclaredFields()) {
        if (visible(f.getModifiers()) && !f.isSynthetic()) {
          members.add(
              modifiers(f.getModifiers()) + f.getGenericType().getTypeName() + " " + f.getName());
        }
      }
      for (Constructor<?> c : type.getDeclaredConstructors()) {
        if (visible(c.getModifiers()) && !c.isSynthetic()) {
          members.add(executable(c, "", type.getName()));
        }
      }
      for (Method m : type.getDeclaredMethods()) {
        if (visible(m.getModifiers()) && !m.isSynthetic() && !m.isBridge()) {
          String modifiers = m.isDefault() ? "default " : "";
          members.add(
              executable(m, modifiers, m.getGenericReturnType().getTypeName() + " " + m.getName()));
        }
      }
      members.forEach(member -> lines.add("  " + member));
    }
    return lines;
  }

  private static List<Class<?>> publicTypes(Path classes) {
    Set<String> exported = exportedPackages(classes);
    try (Stream<Path> files = Files.walk(classes)) {
      return files
          .map(classes::relativize)
          .map(Path::toString)
          .filter(name -> name.endsWith(".class") && !name.equals("module-info.class"))
          .map(name -> name.substring(0, name.length() - ".class".length()).replace('/', '.'))
          .filter(name -> exported.contains(name.substring(0, name.lastIndexOf('.'))))
          .filter(name -> !name.endsWith("package-info"))
          .sorted()
          .map(PublicApiTest::load)
          .filter(PublicApiTest::isApi)
          .collect(Collectors.toList());
    } catch (IOException e) {
      throw new IllegalStateException("cannot list " + classes, e);
    }
  }

  /** Public, and reachable: every enclosing type public (or protected in a public type). */
  private static boolean isApi(Class<?> type) {
    if (type.isAnonymousClass() || type.isLocalClass() || type.isSynthetic()) {
      return false;
    }
    for (Class<?> t = type; t != null; t = t.getDeclaringClass()) {
      int m = t.getModifiers();
      boolean nestedProtected = t.getDeclaringClass() != null && Modifier.isProtected(m);
      if (!Modifier.isPublic(m) && !nestedProtected) {
        return false;
      }
    }
    return true;
  }

  private static String typeLine(Class<?> type) {
    StringBuilder line = new StringBuilder();
    int mods = type.getModifiers() & ~Modifier.INTERFACE;
    if (type.isInterface()) {
      mods &= ~Modifier.ABSTRACT;
    }
    if (type.isEnum() || type.isRecord()) {
      mods &= ~(Modifier.FINAL | Modifier.STATIC);
    }
    line.append(modifiers(mods));
    if (type.isAnnotation()) {
      line.append("@interface ");
    } else if (type.isInterface()) {
      line.append("interface ");
    } else if (type.isEnum()) {
      line.append("enum ");
    } else if (type.isRecord()) {
      line.append("record ");
    } else {
      line.append("class ");
    }
    line.append(type.getName()).append(typeParameters(type.getTypeParameters()));
    Type superclass = type.getGenericSuperclass();
    if (superclass != null && superclass != Object.class && !type.isEnum() && !type.isRecord()) {
      line.append(" extends ").append(superclass.getTypeName());
    }
    Type[] interfaces = type.getGenericInterfaces();
    if (interfaces.length > 0 && !type.isAnnotation()) {
      line.append(type.isInterface() ? " extends " : " implements ")
          .append(
              Arrays.stream(interfaces).map(Type::getTypeName).collect(Collectors.joining(", ")));
    }
    if (type.isSealed()) {
      line.append(" permits ")
          .append(
              Arrays.stream(type.getPermittedSubclasses())
                  .map(Class::getName)
                  .sorted()
                  .collect(Collectors.joining(", ")));
    }
    return line.toString();
  }

  private static String executable(Executable e, String extra, String returnAndName) {
    String parameters =
        Arrays.stream(e.getGenericParameterTypes())
            .map(Type::getTypeName)
            .collect(Collectors.joining(", "));
    if (e.isVarArgs()) {
      parameters = parameters.substring(0, parameters.length() - 2) + "...";
    }
    String throwsClause =
        e.getGenericExceptionTypes().length == 0
            ? ""
            : " throws "
                + Arrays.stream(e.getGenericExceptionTypes())
                    .map(Type::getTypeName)
                    .sorted()
                    .collect(Collectors.joining(", "));
    String typeParameters = typeParameters(e.getTypeParameters());
    return modifiers(e.getModifiers())
        + extra
        + (typeParameters.isEmpty() ? "" : typeParameters + " ")
        + returnAndName
        + "("
        + parameters
        + ")"
        + throwsClause;
  }

  private static String typeParameters(TypeVariable<?>[] variables) {
    if (variables.length == 0) {
      return "";
    }
    return Arrays.stream(variables)
        .map(
            v -> {
              List<String> bounds =
                  Arrays.stream(v.getBounds())
                      .filter(b -> b != Object.class)
                      .map(Type::getTypeName)
                      .collect(Collectors.toList());
              return bounds.isEmpty()
                  ? v.getName()
                  : v.getName() + " extends " + String.join(" & ", bounds);
            })
        .collect(Collectors.joining(", ", "<", ">"));
  }

  private static boolean visible(int modifiers) {
    return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
  }

  /** The modifiers that matter to a caller, in the canonical order, followed by a space. */
  private static String modifiers(int modifiers) {
    int kept =
        modifiers
            & (Modifier.PUBLIC
                | Modifier.PROTECTED
                | Modifier.STATIC
                | Modifier.FINAL
                | Modifier.ABSTRACT);
    String text = Modifier.toString(kept);
    return text.isEmpty() ? "" : text + " ";
  }

  private static Class<?> load(String name) {
    try {
      return Class.forName(name, false, PublicApiTest.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("listed but not loadable: " + name, e);
    }
  }

  private static Set<String> exportedPackages(Path classes) {
    try (InputStream in = Files.newInputStream(classes.resolve("module-info.class"))) {
      Set<String> exported = new LinkedHashSet<>();
      for (ModuleDescriptor.Exports e : ModuleDescriptor.read(in).exports()) {
        exported.add(e.source());
      }
      return exported;
    } catch (IOException e) {
      throw new IllegalStateException("cannot read module-info.class in " + classes, e);
    }
  }

  private static Path classesDirectory() {
    try {
      Path classes =
          Path.of(Relay.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (!Files.isDirectory(classes)) {
        throw new IllegalStateException("relay-core's classes are not a directory: " + classes);
      }
      return classes;
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }
}
