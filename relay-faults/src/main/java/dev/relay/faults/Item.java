package dev.relay.faults;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What one work item carries: its producer transaction, the fenced resource it writes and the token
 * it got for it in the producer's transaction.
 */
record Item(String tx, String resource, long token) {
  private static final Pattern FIELD = Pattern.compile("\"(tx|res|token)\"\\s*:\\s*\"?([^\",}]+)");

  String json() {
    return "{\"tx\":\"" + tx + "\",\"res\":\"" + resource + "\",\"token\":" + token + "}";
  }

  static Item parse(String json) {
    String tx = null;
    String res = null;
    long token = 0;
    Matcher m = FIELD.matcher(json);
    while (m.find()) {
      switch (m.group(1)) {
        case "tx" -> tx = m.group(2).trim();
        case "res" -> res = m.group(2).trim();
        default -> token = Long.parseLong(m.group(2).trim());
      }
    }
    if (tx == null || res == null) {
      throw new IllegalArgumentException("not a fault-suite payload: " + json);
    }
    return new Item(tx, res, token);
  }
}
