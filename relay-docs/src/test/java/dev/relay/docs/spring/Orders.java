package dev.relay.docs.spring;

/** The application's order table (JPA, JdbcTemplate, jOOQ: any on the same DataSource). */
public interface Orders {
  /** Stores the order in the current transaction. */
  void save(Order order);
}
