package dev.relay.internal.json;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.test.RelayDatabaseTest;
import dev.relay.test.TestDatabase;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The schema's {@code payload_digest} (version 24: the payload's text hashed, number tokens whose
 * fraction ends in zeros trimmed by a regular expression) against the digest of version 1 as the
 * oracle (the text of {@code jsonb_canonical}, a PL/pgSQL rebuild of the value): they must be equal
 * on every payload, or tombstones written before the upgrade would stop matching the payloads they
 * stand for. Generated payloads lean on what the expression must tell apart: numbers with and
 * without trailing fractional zeros, with exponents and signs, and strings and keys whose content
 * looks like such numbers, with escaped quotes and backslashes around it. The seed is fixed; {@code
 * -Drelay.fuzz.seed=N -Drelay.digest.inputs=N} runs another stretch.
 */
@RelayDatabaseTest
class PayloadDigestTest {
  private static final long SEED = Long.getLong("relay.fuzz.seed", 20261204L);
  private static final int INPUTS = Integer.getInteger("relay.digest.inputs", 6_000);
  private static final int BATCH = 500;

  /** Text pieces of strings and keys: number look-alikes, escapes that end or hide a quote. */
  private static final String[] PIECES = {
    "29.00",
    "1.50",
    "v1.0",
    ".0",
    "0",
    "10",
    "\\\"",
    "\\\\",
    " ",
    "\\\"3.10\\\"",
    "é",
    "\\u0030.00",
    "a",
    "-0.0",
    "e5",
    ":",
    ",",
    "{",
    "]"
  };

  @Test
  void theDigestIsVersionOnesDigestOnEveryGeneratedPayload(TestDatabase db) throws Exception {
    db.execute(
        """
        CREATE FUNCTION {schema}.digest_oracle(t text) RETURNS text LANGUAGE plpgsql AS $$
        BEGIN
            RETURN encode(sha256(convert_to({schema}.jsonb_canonical(t::jsonb)::text, 'UTF8')),
                          'hex');
        EXCEPTION WHEN others THEN
            RETURN NULL; -- not jsonb, so never a payload
        END
        $$""");
    SplittableRandom random = new SplittableRandom(SEED);
    List<String> disagreements = new ArrayList<>();
    int payloads = 0;
    int trimmed = 0;
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT u.t, o.digest, "
                    + db.schema()
                    + ".payload_digest(u.t::jsonb), (u.t::jsonb)::text ~ '\\.[0-9]*0([^0-9]|$)'"
                    + " FROM unnest(?::text[]) AS u(t),"
                    + " LATERAL (SELECT "
                    + db.schema()
                    + ".digest_oracle(u.t) AS digest) AS o WHERE o.digest IS NOT NULL")) {
      for (int done = 0; done < INPUTS; done += BATCH) {
        List<String> batch = new ArrayList<>();
        while (batch.size() < BATCH) {
          String payload = payload(random);
          if (JsonText.problem(payload, Integer.MAX_VALUE) == null) {
            batch.add(payload);
          }
        }
        Array array = c.createArrayOf("text", batch.toArray());
        ps.setArray(1, array);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            payloads++;
            if (rs.getBoolean(4)) {
              trimmed++;
            }
            if (!rs.getString(2).equals(rs.getString(3))) {
              disagreements.add(rs.getString(1));
            }
          }
        }
        array.free();
      }
    }
    assertThat(disagreements).as("seed %d, %d payloads", SEED, payloads).isEmpty();
    // Both paths are exercised: the text hashed as it is, and the trimming expression.
    assertThat(payloads).isGreaterThan(INPUTS / 2);
    assertThat(trimmed).as("payloads with a trailing fractional zero").isGreaterThan(payloads / 5);
    assertThat(payloads - trimmed).as("payloads without one").isGreaterThan(payloads / 10);
  }

  @Test
  void equalNumbersDigestAlikeAndLookAlikeStringsDoNot(TestDatabase db) throws Exception {
    String amount = digest(db, "{\"order\": 103, \"amount\": 29.00}");
    assertThat(digest(db, "{\"amount\": 29, \"order\": 103}")).isEqualTo(amount);
    assertThat(digest(db, "{\"order\": 103, \"amount\": 29.0e0}")).isEqualTo(amount);
    assertThat(digest(db, "{\"order\": 103, \"amount\": \"29.00\"}")).isNotEqualTo(amount);
    String note = "{\"note\": \"a \\\"29.00\\\" \\\\\", \"x\": ";
    assertThat(digest(db, note + "1.50}"))
        .isEqualTo(digest(db, note + "1.5}"))
        .isNotEqualTo(digest(db, note.replace("29.00", "29") + "1.5}"));
  }

  private static String digest(TestDatabase db, String payload) throws Exception {
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement("SELECT " + db.schema() + ".payload_digest(?::jsonb)")) {
      ps.setString(1, payload);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    }
  }

  /** An object of look-alike fields most of the time, a value of the oracle test otherwise. */
  private static String payload(SplittableRandom r) {
    if (r.nextInt(5) == 0) {
      return JsonTextOracleTest.value(r, 0, new StringBuilder());
    }
    StringBuilder b = new StringBuilder("{");
    int n = 1 + r.nextInt(5);
    for (int i = 0; i < n; i++) {
      if (i > 0) {
        b.append(", ");
      }
      b.append(r.nextBoolean() ? quoted(text(r)) : "\"k" + i + "\"").append(": ");
      field(r, 0, b);
    }
    return b.append('}').toString();
  }

  private static void field(SplittableRandom r, int depth, StringBuilder b) {
    switch (r.nextInt(depth > 2 ? 3 : 5)) {
      case 0 -> b.append(decimal(r));
      case 1 -> b.append(quoted(text(r)));
      case 2 -> JsonTextOracleTest.value(r, 3, b);
      case 3 -> {
        b.append('[');
        field(r, depth + 1, b);
        b.append(", ");
        field(r, depth + 1, b);
        b.append(']');
      }
      default -> {
        b.append("{\"x\": ");
        field(r, depth + 1, b);
        b.append(", ").append(quoted(decimal(r))).append(": ");
        field(r, depth + 1, b);
        b.append('}');
      }
    }
  }

  /** 29.00, -0.50, 10.10, 0.000, 100, 1.50E3: half of them with a fraction ending in zeros. */
  private static String decimal(SplittableRandom r) {
    StringBuilder n = new StringBuilder(r.nextInt(4) == 0 ? "-" : "");
    n.append(r.nextInt(4) == 0 ? 0 : r.nextInt(1000));
    if (r.nextInt(5) > 0) {
      n.append('.');
      int digits = r.nextInt(5);
      for (int i = 0; i < digits; i++) {
        n.append(r.nextInt(10));
      }
      n.append("0".repeat(r.nextInt(4)));
      if (n.charAt(n.length() - 1) == '.') {
        n.append('0');
      }
    }
    if (r.nextInt(6) == 0) {
      n.append(r.nextBoolean() ? 'e' : 'E').append(r.nextInt(-6, 7));
    }
    return n.toString();
  }

  private static String text(SplittableRandom r) {
    StringBuilder s = new StringBuilder();
    int n = r.nextInt(5);
    for (int i = 0; i < n; i++) {
      s.append(PIECES[r.nextInt(PIECES.length)]);
    }
    return s.toString();
  }

  private static String quoted(String s) {
    return "\"" + s + "\"";
  }
}
