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
 * Fuzzes the payload validator against PostgreSQL's own {@code jsonb} parser as the oracle: random
 * JSON values, then random mutations of them (characters inserted, deleted, replaced, slices
 * repeated, text cut), each judged by {@link JsonText#problem} and by a cast to {@code jsonb} in
 * the test's database. They must agree on every input, except where a documented limit says
 * otherwise: nesting deeper than {@link JsonText#MAX_DEPTH} (refused here, accepted by jsonb) and
 * text that a PostgreSQL {@code text} value cannot carry at all (a raw U+0000 or an unpaired UTF-16
 * surrogate, refused here; the driver could not even send them). The seed is fixed so that a
 * failure repeats; {@code -Drelay.fuzz.seed=N -Drelay.fuzz.inputs=N} runs another stretch.
 */
@RelayDatabaseTest
class JsonTextOracleTest {
  private static final long SEED = Long.getLong("relay.fuzz.seed", 20261204L);
  private static final int INPUTS = Integer.getInteger("relay.fuzz.inputs", 20_000);
  private static final int BATCH = 2_000;

  private static final String[] SEEDS = {
    "{}",
    "[]",
    "0",
    "-0",
    "-0.5e-3",
    "1E+2",
    "\"text\"",
    "true",
    "false",
    "null",
    "{\"order_id\": 103, \"lines\": [1, 2.50, {\"a\": null}]}",
    "\"\\ud83d\\ude00 \\u00e9 \\\" \\\\ \\/ \\b \\f \\n \\r \\t\"",
    "[[[[[[1]]]]]]",
    " \t\n\r 7 \r\n",
    "{\"a\":{\"b\":{\"c\":[true,false,null]}}}"
  };

  /** Characters mutations insert: the grammar's own, escapes, controls, non-ASCII, surrogates. */
  private static final String PALETTE =
      "{}[]:,\"\\ \t\n\r0123456789+-.eEtrufalsn/bu\u0001\u001f\u007f\u00e9\u2028\ud83d\ude00\ud800";

  @Test
  void theValidatorAgreesWithJsonbOnEveryInputOutsideItsDocumentedLimits(TestDatabase db)
      throws Exception {
    db.execute(
        """
        CREATE FUNCTION {schema}.fuzz_is_jsonb(t text) RETURNS boolean LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM t::jsonb;
            RETURN true;
        EXCEPTION WHEN others THEN
            RETURN false;
        END
        $$""");
    SplittableRandom random = new SplittableRandom(SEED);
    List<String> disagreements = new ArrayList<>();
    int judged = 0;
    int valid = 0;
    try (Connection c = db.connection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT u.t, "
                    + db.schema()
                    + ".fuzz_is_jsonb(u.t) FROM unnest(?::text[]) WITH ORDINALITY AS u(t, n)"
                    + " ORDER BY u.n")) {
      for (int done = 0; done < INPUTS; done += BATCH) {
        List<String> batch = new ArrayList<>();
        while (batch.size() < BATCH) {
          String input = next(random);
          if (sendable(input)) {
            batch.add(input);
          } else {
            // What text cannot carry: the validator must refuse it on its own.
            assertThat(JsonText.problem(input, Integer.MAX_VALUE))
                .as("raw NUL or unpaired surrogate in %s", show(input))
                .isNotNull();
          }
        }
        Array array = c.createArrayOf("text", batch.toArray());
        ps.setArray(1, array);
        try (ResultSet rs = ps.executeQuery()) {
          int i = 0;
          while (rs.next()) {
            String input = batch.get(i++);
            boolean jsonb = rs.getBoolean(2);
            String problem = JsonText.problem(input, Integer.MAX_VALUE);
            judged++;
            if (jsonb) {
              valid++;
            }
            if (jsonb != (problem == null) && !(jsonb && problem.contains("too deeply nested"))) {
              disagreements.add(
                  show(input)
                      + " jsonb "
                      + (jsonb ? "accepts" : "refuses")
                      + ", validator: "
                      + (problem == null ? "valid" : problem));
            }
          }
        }
        array.free();
      }
    }
    assertThat(disagreements).as("seed %d, %d inputs judged", SEED, judged).isEmpty();
    // Not a fuzz of garbage only: a good share of the inputs are valid JSON.
    assertThat(valid).as("valid inputs among %d", judged).isGreaterThan(judged / 10);
  }

  @Test
  void nestingPastTheLimitIsTheOneDocumentedDifference(TestDatabase db) throws Exception {
    String deep = "[".repeat(JsonText.MAX_DEPTH + 1) + "]".repeat(JsonText.MAX_DEPTH + 1);
    assertThat(JsonText.problem(deep, Integer.MAX_VALUE)).contains("too deeply nested");
    assertThat(db.queryString("SELECT jsonb_typeof('" + deep + "'::jsonb)")).isEqualTo("array");
  }

  /** A generated value (half the time), or a mutation of one or of a seed. */
  private static String next(SplittableRandom r) {
    String base =
        r.nextInt(3) == 0 ? SEEDS[r.nextInt(SEEDS.length)] : value(r, 0, new StringBuilder());
    if (r.nextBoolean()) {
      return base;
    }
    StringBuilder s = new StringBuilder(base);
    int mutations = 1 + r.nextInt(3);
    for (int m = 0; m < mutations; m++) {
      int at = s.length() == 0 ? 0 : r.nextInt(s.length() + 1);
      switch (r.nextInt(5)) {
        case 0 -> s.insert(at, PALETTE.charAt(r.nextInt(PALETTE.length())));
        case 1 -> {
          if (at < s.length()) {
            s.deleteCharAt(at);
          }
        }
        case 2 -> {
          if (at < s.length()) {
            s.setCharAt(at, PALETTE.charAt(r.nextInt(PALETTE.length())));
          }
        }
        case 3 -> {
          int end = Math.min(s.length(), at + 1 + r.nextInt(6));
          s.insert(at, s.substring(at, end));
        }
        default -> s.setLength(at);
      }
    }
    return s.toString();
  }

  /**
   * A random valid JSON value appended to {@code out} (also {@code PayloadDigestTest}'s source).
   */
  static String value(SplittableRandom r, int depth, StringBuilder out) {
    int kind = depth > 3 ? r.nextInt(4) : r.nextInt(6);
    switch (kind) {
      case 0 -> out.append(number(r));
      case 1 -> out.append(string(r));
      case 2 -> out.append(new String[] {"true", "false", "null"}[r.nextInt(3)]);
      case 3 -> out.append(number(r));
      case 4 -> {
        out.append('[').append(space(r));
        int n = r.nextInt(4);
        for (int i = 0; i < n; i++) {
          if (i > 0) {
            out.append(',').append(space(r));
          }
          value(r, depth + 1, out);
        }
        out.append(space(r)).append(']');
      }
      default -> {
        out.append('{').append(space(r));
        int n = r.nextInt(4);
        for (int i = 0; i < n; i++) {
          if (i > 0) {
            out.append(',');
          }
          out.append(string(r)).append(space(r)).append(':').append(space(r));
          value(r, depth + 1, out);
        }
        out.append('}');
      }
    }
    return out.toString();
  }

  private static String number(SplittableRandom r) {
    StringBuilder n = new StringBuilder();
    if (r.nextBoolean()) {
      n.append('-');
    }
    n.append(r.nextInt(10) == 0 ? "0" : String.valueOf(1 + r.nextInt(999_999)));
    if (r.nextInt(40) == 0) {
      // near numeric's limits: 131072 digits before the point, 16383 after
      n.append("0".repeat(r.nextInt(131_070, 131_075)));
    }
    if (r.nextBoolean()) {
      n.append('.').append(r.nextInt(4) == 0 ? "000" : String.valueOf(r.nextInt(100_000)));
      if (r.nextInt(40) == 0) {
        n.append((r.nextBoolean() ? "7" : "0").repeat(r.nextInt(16_378, 16_388)));
      }
    }
    if (r.nextInt(3) == 0) {
      n.append(r.nextBoolean() ? 'e' : 'E');
      n.append(new String[] {"", "+", "-"}[r.nextInt(3)]);
      long[] exponents = {
        0,
        1,
        9,
        308,
        1000,
        16_383,
        16_384,
        131_071,
        131_072,
        131_073,
        200_000,
        1_073_741_822,
        1_073_741_823,
        99_999_999_999L
      };
      n.append(r.nextInt(4) == 0 ? exponents[r.nextInt(exponents.length)] : r.nextInt(40));
    }
    return n.toString();
  }

  private static String string(SplittableRandom r) {
    StringBuilder s = new StringBuilder("\"");
    int n = r.nextInt(8);
    String[] pieces = {
      "a",
      "é",
      "😀",
      " ",
      "\\\"",
      "\\\\",
      "\\/",
      "\\b",
      "\\f",
      "\\n",
      "\\r",
      "\\t",
      "\\u0041",
      "\\u00e9",
      "\\ud83d\\ude00",
      "\\ud800",
      "\\udc00",
      "\\u0000",
      "\\uD83D\\uDE00",
      "\\x",
      "\u0001",
      "\t"
    };
    for (int i = 0; i < n; i++) {
      s.append(pieces[r.nextInt(pieces.length)]);
    }
    return s.append('"').toString();
  }

  private static String space(SplittableRandom r) {
    return new String[] {"", "", " ", "\n", "\t ", "\r\n"}[r.nextInt(6)];
  }

  /** Whether a PostgreSQL text value can carry {@code s}: no NUL, no unpaired surrogate. */
  private static boolean sendable(String s) {
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      if (ch == 0) {
        return false;
      }
      if (Character.isHighSurrogate(ch)) {
        if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
        } else {
          return false;
        }
      } else if (Character.isLowSurrogate(ch)) {
        return false;
      }
    }
    return true;
  }

  private static String show(String s) {
    String shown =
        s.length() > 120
            ? s.substring(0, 60) + "…(" + s.length() + " chars)…" + s.substring(s.length() - 40)
            : s;
    StringBuilder b = new StringBuilder("'");
    shown
        .chars()
        .forEach(
            ch ->
                b.append(
                    ch < 0x20 || ch == 0x7f
                        ? String.format("\\u%04x", ch)
                        : String.valueOf((char) ch)));
    return b.append('\'').toString();
  }
}
