package dev.relay.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * relay-bom, which the README tells users to import, manages exactly the artifacts the build
 * publishes: every reactor module that does not skip deploy ({@code maven.deploy.skip}), except the
 * parent and the BOM itself. A new library module missing from the BOM fails here.
 */
class BomTest {
  private final Path root = Path.of(System.getProperty("relay.docs.root", "..")).normalize();

  @Test
  void theBomManagesEveryPublishedModuleAndNothingElse() throws Exception {
    TreeSet<String> published = new TreeSet<>();
    for (String module : children(read(root.resolve("pom.xml")), "modules", "module")) {
      Document pom = read(root.resolve(module).resolve("pom.xml"));
      String artifactId = text(pom.getDocumentElement(), "artifactId");
      boolean skipsDeploy =
          children(pom, "properties", "maven.deploy.skip").stream().anyMatch("true"::equals);
      if (!skipsDeploy && !artifactId.equals("relay-bom")) {
        published.add(artifactId);
      }
    }
    Document bom = read(root.resolve("relay-bom/pom.xml"));
    TreeSet<String> managed = new TreeSet<>();
    NodeList dependencies = bom.getElementsByTagName("dependency");
    for (int i = 0; i < dependencies.getLength(); i++) {
      Element dependency = (Element) dependencies.item(i);
      assertThat(text(dependency, "groupId")).isEqualTo("dev.relay");
      assertThat(text(dependency, "version")).isEqualTo("${project.version}");
      managed.add(text(dependency, "artifactId"));
    }
    assertThat(published).as("published modules").contains("relay-core", "relay-test");
    assertThat(managed).as("relay-bom's dependencyManagement").isEqualTo(published);
  }

  private static Document read(Path pom) throws Exception {
    assertThat(pom).exists();
    try (var in = Files.newInputStream(pom)) {
      return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(in);
    }
  }

  /** The texts of {@code <child>} elements under the top-level {@code <parent>} element. */
  private static List<String> children(Document pom, String parent, String child) {
    List<String> texts = new ArrayList<>();
    for (Node n = pom.getDocumentElement().getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element e && e.getTagName().equals(parent)) {
        NodeList items = e.getElementsByTagName(child);
        for (int i = 0; i < items.getLength(); i++) {
          texts.add(items.item(i).getTextContent().trim());
        }
      }
    }
    return texts;
  }

  /** The text of the first direct {@code <name>} child of {@code element}. */
  private static String text(Element element, String name) {
    for (Node n = element.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element e && e.getTagName().equals(name)) {
        return e.getTextContent().trim();
      }
    }
    throw new AssertionError("no <" + name + "> in <" + element.getTagName() + ">");
  }
}
