package dev.relay.internal.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class BoundTextTest {
  @Test
  void cleanTextIsReturnedAsIs() {
    String s = "plain text with a pair \uD83D\uDE00";
    assertThat(BoundText.text(s)).isSameAs(s);
    assertThat(BoundText.text(null)).isNull();
  }

  @Test
  void nulAndLoneSurrogatesAreReplacedAndCounted() {
    assertThat(BoundText.text("a\u0000b"))
        .isEqualTo("a\uFFFDb [relay: 1 character replaced (NUL or lone surrogate)]");
    assertThat(BoundText.text("\uDC00x\uD800"))
        .isEqualTo("\uFFFDx\uFFFD [relay: 2 characters replaced (NUL or lone surrogate)]");
    assertThat(BoundText.text("\uD83D\uDE00\uD83D"))
        .isEqualTo("\uD83D\uDE00\uFFFD [relay: 1 character replaced (NUL or lone surrogate)]");
  }

  @Test
  void jsonEscapesOfNulAndLoneSurrogatesAreReplacedAndOtherEscapesKept() {
    String valid = "{\"a\":\"\\ud83d\\ude00 \\\\u0000 \\n \\u0041\"}";
    assertThat(BoundText.json(valid)).isSameAs(valid);
    assertThat(BoundText.json("{\"a\":\"x\\u0000y\"}")).isEqualTo("{\"a\":\"x\\ufffdy\"}");
    assertThat(BoundText.json("[\"\\uD800\", \"\\udc00\", \"\\ud800\\u0041\"]"))
        .isEqualTo("[\"\\ufffd\", \"\\ufffd\", \"\\ufffd\\u0041\"]");
    assertThat(BoundText.json("[\"raw\u0000 \uD800\"]")).isEqualTo("[\"raw\\ufffd \\ufffd\"]");
    assertThat(BoundText.json(null)).isNull();
  }
}
