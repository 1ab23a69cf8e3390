package dev.relay.internal.store;

import dev.relay.Work;
import dev.relay.internal.jdbc.SchemaName;

/**
 * The attempt cap of a stored row, written once for every statement that reads it (claim, settle,
 * recovery, the admin views): an SQL fragment for the catalogs ({@link WorkSql}, {@code AdminSql}),
 * the lower of the row's own cap, stored only when the producer named one, and the cap its kind
 * registered in the {@code kind} table; {@link Work#DEFAULT_MAX_ATTEMPTS} when neither is set.
 * {@code least} ignores NULLs, so either may be missing.
 */
public final class AttemptCap {
  private AttemptCap() {}

  /**
   * The cap of the {@code outbox} row named {@code alias}, as an SQL expression reading the {@code
   * kind} table of {@code schema}.
   */
  public static String of(SchemaName schema, String alias) {
    return "coalesce(least("
        + alias
        + ".max_attempts, (SELECT kd.max_attempts FROM "
        + schema.sql()
        + ".kind kd WHERE kd.kind = "
        + alias
        + ".kind)), "
        + Work.DEFAULT_MAX_ATTEMPTS
        + ")";
  }

  /**
   * The same cap where the statement joins the row's {@code kind} row itself (a left join, so a
   * kind with no registered policy reads NULL): {@code row} and {@code kind} are the aliases.
   */
  public static String joined(String row, String kind) {
    return "coalesce(least("
        + row
        + ".max_attempts, "
        + kind
        + ".max_attempts), "
        + Work.DEFAULT_MAX_ATTEMPTS
        + ")";
  }
}
