package dev.relay.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;

/**
 * Which console paths answer a signed-out visitor, over real HTTP: every GET the console maps is
 * requested without a session, and exactly the paths docs/console.md lists as public answer 200;
 * every other one sends the visitor to the sign-in page. The list is read from the docs, so the
 * docs and the code cannot drift apart.
 */
@RelayDatabaseTest
class ConsolePublicPathsTest {
  private static final Pattern DOCUMENTED = Pattern.compile("`(/relay/[^`?]*)`");

  @Test
  void exactlyThePathsTheDocsListAsPublicAnswerASignedOutVisitor(TestDatabase db) throws Exception {
    try (ConsoleApp app = ConsoleApp.start(db)) {
      RequestMappingHandlerMapping mappings =
          app.context().getBean("requestMappingHandlerMapping", RequestMappingHandlerMapping.class);
      Set<String> paths = new TreeSet<>();
      for (RequestMappingInfo info : mappings.getHandlerMethods().keySet()) {
        Set<RequestMethod> methods = info.getMethodsCondition().getMethods();
        if (!methods.isEmpty() && !methods.contains(RequestMethod.GET)) {
          continue;
        }
        for (String pattern : info.getPatternValues()) {
          if (pattern.equals("/relay") || pattern.startsWith("/relay/")) {
            paths.add(pattern.replaceAll("\\{[^}]*}", "x"));
          }
        }
      }
      assertThat(paths).as("the console's GET mappings").contains("/relay", "/relay/work");

      HttpClient anonymous = HttpClient.newHttpClient(); // no cookies, redirects not followed
      TreeMap<String, Integer> answers = new TreeMap<>();
      Set<String> public200 = new TreeSet<>();
      for (String path : paths) {
        HttpResponse<Void> r =
            anonymous.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.port() + path)).build(),
                HttpResponse.BodyHandlers.discarding());
        answers.put(path, r.statusCode());
        if (r.statusCode() == 200) {
          public200.add(path);
        } else {
          assertThat(r.statusCode()).as(path).isEqualTo(302);
          assertThat(r.headers().firstValue("Location").orElse(""))
              .as(path)
              .endsWith("/relay/login");
        }
      }

      assertThat(public200).as("answers signed out: " + answers).isEqualTo(documentedPublic());
    }
  }

  /** The paths in docs/console.md's sentence that starts "The public paths". */
  private static Set<String> documentedPublic() throws Exception {
    String docs = Files.readString(Path.of("..", "docs", "console.md")).replaceAll("\\s+", " ");
    int start = docs.indexOf("The public paths");
    assertThat(start).as("docs/console.md names the public paths").isPositive();
    String sentence = docs.substring(start, docs.indexOf(';', start));
    Set<String> documented = new TreeSet<>();
    Matcher m = DOCUMENTED.matcher(sentence);
    while (m.find()) {
      documented.add(m.group(1));
    }
    return documented;
  }
}
