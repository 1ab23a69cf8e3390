package dev.relay.internal.receiver;

import dev.relay.receiver.http.HttpReply;
import java.util.HashMap;
import java.util.Map;

/**
 * Stores an {@link HttpReply} as a flat JSON object ({@code status}, {@code contentType}, {@code
 * body}) in the inbox's result column and reads it back from jsonb's text form. Core has no JSON
 * library; this reads only the flat shape it writes.
 */
public final class ReplyCodec {
  private ReplyCodec() {}

  /** The reply as JSON text. */
  public static String encode(HttpReply reply) {
    return "{\"status\":"
        + reply.status()
        + ",\"contentType\":"
        + quote(reply.contentType())
        + ",\"body\":"
        + quote(reply.body())
        + "}";
  }

  /** Reads a reply written by {@link #encode} (in any key order and spacing). */
  public static HttpReply decode(String json) {
    Map<String, String> fields = new HashMap<>();
    int[] pos = {skip(json, 0)};
    expect(json, pos, '{');
    while (true) {
      pos[0] = skip(json, pos[0]);
      if (json.charAt(pos[0]) == '}') {
        break;
      }
      String key = string(json, pos);
      pos[0] = skip(json, pos[0]);
      expect(json, pos, ':');
      pos[0] = skip(json, pos[0]);
      String value;
      if (json.charAt(pos[0]) == '"') {
        value = string(json, pos);
      } else {
        int start = pos[0];
        while (pos[0] < json.length() && "-0123456789.eE+".indexOf(json.charAt(pos[0])) >= 0) {
          pos[0]++;
        }
        value = json.substring(start, pos[0]);
      }
      fields.put(key, value);
      pos[0] = skip(json, pos[0]);
      if (json.charAt(pos[0]) == ',') {
        pos[0]++;
      }
    }
    return new HttpReply(
        new java.math.BigDecimal(fields.get("status")).intValueExact(),
        fields.get("contentType"),
        fields.get("body"),
        Map.of());
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }

  private static String string(String s, int[] pos) {
    expect(s, pos, '"');
    StringBuilder b = new StringBuilder();
    while (true) {
      char c = s.charAt(pos[0]++);
      if (c == '"') {
        return b.toString();
      }
      if (c != '\\') {
        b.append(c);
        continue;
      }
      char e = s.charAt(pos[0]++);
      switch (e) {
        case 'n' -> b.append('\n');
        case 'r' -> b.append('\r');
        case 't' -> b.append('\t');
        case 'b' -> b.append('\b');
        case 'f' -> b.append('\f');
        case 'u' -> {
          b.append((char) Integer.parseInt(s.substring(pos[0], pos[0] + 4), 16));
          pos[0] += 4;
        }
        default -> b.append(e); // \" \\ \/
      }
    }
  }

  private static void expect(String s, int[] pos, char c) {
    if (s.charAt(pos[0]) != c) {
      throw new IllegalStateException("stored reply is not in the expected shape: " + s);
    }
    pos[0]++;
  }

  private static int skip(String s, int pos) {
    while (pos < s.length() && Character.isWhitespace(s.charAt(pos))) {
      pos++;
    }
    return pos;
  }
}
