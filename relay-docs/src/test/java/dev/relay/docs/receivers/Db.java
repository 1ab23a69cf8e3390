package dev.relay.docs.receivers;

import javax.sql.DataSource;

/** The mail service's connection pool, as the receivers example takes it. */
final class Db {
  private Db() {}

  static DataSource pool() {
    throw new UnsupportedOperationException("the example is compiled, not run");
  }
}
