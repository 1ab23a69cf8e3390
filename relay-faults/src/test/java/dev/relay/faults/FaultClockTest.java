package dev.relay.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Proof that the clock fault moves what Relay reads: a running PostgreSQL started with {@link
 * FaultClock}'s environment reports {@code clock_timestamp()} and {@code now()} shifted by whatever
 * the timestamp file says, forwards and backwards, in a backend that was already connected and in a
 * new one, at once (no cache), while the harness's own clock does not move. The offsets are ten
 * minutes, so the time a query takes on a loaded machine cannot blur them. Skipped without Debian's
 * libfaketime; {@code .ci/run} fails on CI when it was skipped.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class FaultClockTest {
  private static final long TEN_MINUTES = 600_000;

  /** How far a clock reading may be from the expected offset: the query's own time and more. */
  private static final long SLACK = 60_000;

  private static Path parent;
  private static FaultClock clock;
  private static PgCluster pg;

  @BeforeAll
  static void start() throws Exception {
    assumeTrue(FaultClock.unavailable() == null, FaultClock.unavailable());
    parent = Files.createTempDirectory("relay-faults-" + ProcessHandle.current().pid() + "-");
    clock = FaultClock.create(parent);
    pg =
        PgCluster.start(
            parent, new PgCluster.Placement("127.0.0.1", List.of(), null, clock.environment()));
  }

  @AfterAll
  static void stop() {
    if (pg != null) {
      pg.close();
    }
    Files2.deleteTree(parent);
  }

  @Test
  void theTimestampFileMovesClockTimestampAndNowOfTheRunningServerBothWays() throws Exception {
    try (Connection before = DriverManager.getConnection(pg.jdbcUrl())) {
      assertThat(skew(before, "clock_timestamp()")).isCloseTo(0, within(SLACK));

      clock.offset(TEN_MINUTES);
      for (String reading : List.of("clock_timestamp()", "now()", "statement_timestamp()")) {
        assertThat(skew(before, reading)).as(reading).isCloseTo(TEN_MINUTES, within(SLACK));
      }
      try (Connection after = DriverManager.getConnection(pg.jdbcUrl())) {
        assertThat(skew(after, "clock_timestamp()")).isCloseTo(TEN_MINUTES, within(SLACK));
      }

      clock.offset(-TEN_MINUTES);
      assertThat(skew(before, "clock_timestamp()")).isCloseTo(-TEN_MINUTES, within(SLACK));
      assertThat(skew(before, "now()")).isCloseTo(-TEN_MINUTES, within(SLACK));

      clock.offset(0);
      assertThat(skew(before, "clock_timestamp()")).isCloseTo(0, within(SLACK));
      assertThat(clock.offsetMillis()).isZero();
    }
  }

  @Test
  void aBackwardJumpMakesAnExpiredLeaseLookLiveAgainAndAForwardOneExpiresALiveOne()
      throws Exception {
    try (Connection c = DriverManager.getConnection(pg.jdbcUrl());
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS lease (until timestamptz)");
      s.execute("TRUNCATE lease");
      s.execute("INSERT INTO lease VALUES (clock_timestamp() + interval '3 seconds')");
      assertThat(live(s)).isTrue();
      clock.offset(TEN_MINUTES);
      assertThat(live(s)).as("after a forward jump").isFalse();
      clock.offset(-TEN_MINUTES);
      assertThat(live(s)).as("after a backward jump").isTrue();
      clock.offset(0);
    }
  }

  private static boolean live(Statement s) throws SQLException {
    try (ResultSet r = s.executeQuery("SELECT until > clock_timestamp() FROM lease")) {
      r.next();
      return r.getBoolean(1);
    }
  }

  /** The server's reading minus the harness's clock in the middle of the query, in ms. */
  private static long skew(Connection c, String reading) throws SQLException {
    try (Statement s = c.createStatement()) {
      long sent = System.currentTimeMillis();
      try (ResultSet r =
          s.executeQuery("SELECT (extract(epoch FROM " + reading + ") * 1000)::bigint")) {
        r.next();
        long received = System.currentTimeMillis();
        return r.getLong(1) - (sent + received) / 2;
      }
    }
  }
}
