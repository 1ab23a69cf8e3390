package dev.relay.internal.json;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class JsonTextTest {
  @ParameterizedTest
  @ValueSource(
      strings = {
        "{}",
        "[]",
        "0",
        "-0.5e-3",
        "\"text\"",
        "true",
        "null",
        " { \"order_id\" : 103 , \"total\" : \"29.00\", \"lines\": [1, 2.50, {\"a\": null}] } ",
        "{\"emoji\":\"\\ud83d\\ude00 😀\",\"esc\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}",
        "1e5",
        // zero at any exponent numeric_in parses (found by JsonTextOracleTest)
        "0e200000",
        "-0.0e5000000",
        "0e1073741822",
        "0e-16383"
      })
  void acceptsValidJson(String json) {
    assertThat(JsonText.problem(json, 1 << 20)).isNull();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        " ",
        "{",
        "{\"a\":}",
        "{\"a\":1,}",
        "[1,]",
        "{a:1}",
        "'x'",
        "01",
        "1.",
        ".5",
        "-",
        "1e",
        "tru",
        "nul",
        "{\"a\":1}{}",
        "\"\\u0000\"",
        "\"\\ud83d\"",
        "\"\\ude00\"",
        "\"\\x\"",
        "\"tab\there\"",
        "\"unterminated",
        "1e200000",
        "0e1073741823",
        "0e-16384",
        "NaN"
      })
  void refusesInvalidJsonWithAReason(String json) {
    assertThat(JsonText.problem(json, 1 << 20)).isNotNull().contains("JSON");
  }

  @org.junit.jupiter.api.Test
  void refusesUnpairedRawSurrogate() {
    assertThat(JsonText.problem("\"\ud83d\"", 100)).contains("surrogate");
  }

  @org.junit.jupiter.api.Test
  void acceptsNestingUpToTheLimit() {
    String array = "[".repeat(JsonText.MAX_DEPTH) + "]".repeat(JsonText.MAX_DEPTH);
    String object =
        "{\"a\":".repeat(JsonText.MAX_DEPTH - 1) + "[1]" + "}".repeat(JsonText.MAX_DEPTH - 1);

    assertThat(JsonText.problem(array, 1 << 20)).isNull();
    assertThat(JsonText.problem(object, 1 << 20)).isNull();
  }

  @org.junit.jupiter.api.Test
  void validJsonNestedPastTheLimitIsTooDeeplyNestedNotInvalid() {
    String deep = "[".repeat(JsonText.MAX_DEPTH + 1) + "]".repeat(JsonText.MAX_DEPTH + 1);
    String deeper = "{\"a\":".repeat(JsonText.MAX_DEPTH) + "[]" + "}".repeat(JsonText.MAX_DEPTH);

    assertThat(JsonText.problem(deep, 1 << 20))
        .startsWith("is too deeply nested")
        .contains("more than 512 levels")
        .doesNotContain("not valid JSON");
    assertThat(JsonText.problem(deeper, 1 << 20)).startsWith("is too deeply nested");
  }

  @org.junit.jupiter.api.Test
  void measuresTheLimitInUtf8Bytes() {
    String json = "\"" + "é".repeat(10) + "\""; // 12 chars, 22 bytes
    assertThat(JsonText.problem(json, 22)).isNull();
    assertThat(JsonText.problem(json, 21)).contains("22 bytes").contains("limit is 21");
  }
}
