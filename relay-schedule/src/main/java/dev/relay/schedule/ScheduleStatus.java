package dev.relay.schedule;

import dev.relay.Migrator;
import dev.relay.RelayException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * The stored state of one schedule, as {@code relay schedules} shows it.
 *
 * <pre>{@code
 * for (ScheduleStatus s : ScheduleStatus.list(dataSource, "relay")) {
 *   System.out.println(s.name() + " last " + s.lastSlot() + " next " + s.nextSlot());
 * }
 * }</pre>
 *
 * @param name the schedule's name
 * @param kind the kind of the work its slots become
 * @param definition the canonical definition (timing and missed-slot policy)
 * @param lastSlot the latest slot decided (enqueued or dropped), or {@code null} before the first
 * @param nextSlot the first slot after the latest decision, or {@code null} if it never fires again
 * @param decidedAt the database time of the latest decision, or {@code null}
 * @param decidedBy the scheduler that made it, or {@code null}
 * @param enqueued slots that became work
 * @param skipped slots dropped by the missed-slot policy
 * @param conflicts slots whose work ID was already taken
 * @param createdAt when the schedule was first registered; slots count from then
 */
public record ScheduleStatus(
    String name,
    String kind,
    String definition,
    Instant lastSlot,
    Instant nextSlot,
    Instant decidedAt,
    String decidedBy,
    long enqueued,
    long skipped,
    long conflicts,
    Instant createdAt) {

  /**
   * Every schedule stored in {@code schema}, by name. Reads only.
   *
   * @throws dev.relay.InvalidConfigurationException if the schema name is invalid
   * @throws RelayException if the database cannot be read
   */
  public static List<ScheduleStatus> list(DataSource dataSource, String schema) {
    Migrator.forSchema(schema); // validates the name
    ScheduleSql sql = new ScheduleSql(schema);
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.list);
        ResultSet rs = ps.executeQuery()) {
      List<ScheduleStatus> all = new ArrayList<>();
      while (rs.next()) {
        all.add(
            new ScheduleStatus(
                rs.getString(1),
                rs.getString(2),
                rs.getString(3),
                instant(rs, 4),
                instant(rs, 5),
                instant(rs, 6),
                rs.getString(7),
                rs.getLong(8),
                rs.getLong(9),
                rs.getLong(10),
                instant(rs, 11)));
      }
      return all;
    } catch (SQLException e) {
      throw new RelayException(
          "reading the schedules of schema " + schema + ": " + e.getMessage(), e.getSQLState(), e);
    }
  }

  static Instant instant(ResultSet rs, int column) throws SQLException {
    OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
    return t == null ? null : t.toInstant();
  }
}
