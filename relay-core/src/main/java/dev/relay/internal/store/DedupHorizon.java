package dev.relay.internal.store;

import dev.relay.KindPolicy;
import dev.relay.internal.jdbc.SchemaName;

/**
 * The receiver's deduplication horizon of a stored row, written once for the statements that judge
 * it at claim time ({@link WorkSql}): the horizon its kind registered in the {@code kind} table, or
 * {@link KindPolicy#DEFAULT_DEDUP_HORIZON} for a kind no worker registered, as a redrive judges it.
 * A zero horizon means the receiver keeps no memory of IDs; the claim treats it as no horizon.
 */
final class DedupHorizon {
  private DedupHorizon() {}

  /**
   * The horizon of the {@code outbox} row named {@code alias}, as an SQL interval expression
   * reading the {@code kind} table of {@code schema}.
   */
  static String of(SchemaName schema, String alias) {
    return kindLookup(schema, alias, "kd.dedup_horizon");
  }

  /**
   * The horizon a claim of the row named {@code alias} must respect, as an SQL interval: zero
   * (none) for a retry of a kind that parks or reconciles unknown outcomes, since every retry such
   * a kind schedules is of work known not delivered, which the receiver has nothing to remember of
   * (the retry window of those kinds may outlast the horizon, docs/guide.md). A takeover of an
   * expired lease ({@code state = 'running'}) always has it: the expired attempt's effect is
   * unknown.
   */
  static String forClaim(SchemaName schema, String alias) {
    return kindLookup(
        schema,
        alias,
        "CASE WHEN "
            + alias
            + ".state = 'running' OR kd.unknown_outcome = 'retry' THEN kd.dedup_horizon"
            + " ELSE interval '0' END");
  }

  private static String kindLookup(SchemaName schema, String alias, String column) {
    return "coalesce((SELECT "
        + column
        + " FROM "
        + schema.sql()
        + ".kind kd WHERE kd.kind = "
        + alias
        + ".kind), interval '"
        + KindPolicy.DEFAULT_DEDUP_HORIZON.toMillis()
        + " milliseconds')";
  }
}
