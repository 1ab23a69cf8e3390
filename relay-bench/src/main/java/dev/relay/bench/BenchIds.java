package dev.relay.bench;

/**
 * How the bench names the work it loads ({@code --ids}): the IDs of a burn-down's backlog, of the
 * limit's rows and of the growth part's retained rows. Sequential IDs ({@code b-1}, {@code b-2},
 * ...) put each load's keys side by side in every index on the ID, so a backlog's completions touch
 * only the newest index pages. Random IDs (32 hex digits, as a UUID without its dashes) spread them
 * over the whole index, as an application that names work by UUID or by a hash does: with millions
 * of retained rows, each enqueue's and each completion's index entry lands on a page of its own.
 */
enum BenchIds {
  sequential,
  random;

  /**
   * The SQL expression for the ID of row {@code g} (an integer expression) of the load named {@code
   * prefix}: {@code prefix || g}, or its MD5. The same {@code prefix} and {@code g} give the same
   * ID, so a load's rows can be found again from the series that made them.
   */
  String sql(String prefix, String g) {
    String plain = "'" + prefix + "' || " + g;
    return this == sequential ? plain : "md5(" + plain + ")";
  }
}
