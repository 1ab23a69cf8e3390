package dev.relay.serve;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * Reads an {@code application.yml} as YAML nodes before Spring Boot's loader turns it into
 * properties, and refuses what that loader would crash or hang on: text that is not YAML (its
 * parser's exceptions are not {@link IllegalArgumentException}s), a value that contains itself
 * through an alias ({@code a: &a [*a]}, which Boot's loader flattens until the stack overflows),
 * and aliases that expand to more than {@value #MAX_VALUES} values (a "billion laughs" file of a
 * few hundred bytes; Boot's loader allows any number of aliases). Deeper than 50 levels is refused
 * too (SnakeYAML's own default). Found by {@code ServeFuzzTest}.
 */
final class YamlCheck {
  /** The most values a config may hold once its aliases are expanded. */
  static final int MAX_VALUES = 100_000;

  private YamlCheck() {}

  /**
   * Checks {@code text}.
   *
   * @throws IllegalArgumentException naming {@code source} and the problem
   */
  static void check(String text, String source) {
    LoaderOptions options = new LoaderOptions();
    options.setAllowDuplicateKeys(false);
    options.setMaxAliasesForCollections(MAX_VALUES);
    try {
      for (Node document : new Yaml(options).composeAll(new java.io.StringReader(text))) {
        int[] values = {0};
        walk(document, Collections.newSetFromMap(new IdentityHashMap<>()), values, source);
      }
    } catch (YAMLException e) {
      throw new IllegalArgumentException(source + " is not valid YAML: " + e.getMessage(), e);
    }
  }

  private static void walk(Node node, Set<Node> open, int[] values, String source) {
    if (node == null) {
      return;
    }
    if (++values[0] > MAX_VALUES) {
      throw new IllegalArgumentException(
          source
              + " holds more than "
              + MAX_VALUES
              + " values once its YAML aliases (*name) are expanded");
    }
    if (!open.add(node)) {
      throw new IllegalArgumentException(
          source
              + ": line "
              + (node.getStartMark().getLine() + 1)
              + ": a YAML alias refers to a value that contains it");
    }
    if (node instanceof MappingNode m) {
      for (NodeTuple t : m.getValue()) {
        walk(t.getKeyNode(), open, values, source);
        walk(t.getValueNode(), open, values, source);
      }
    } else if (node instanceof SequenceNode s) {
      for (Node child : s.getValue()) {
        walk(child, open, values, source);
      }
    }
    open.remove(node);
  }
}
