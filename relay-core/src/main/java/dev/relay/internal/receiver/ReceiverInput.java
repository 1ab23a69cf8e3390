package dev.relay.internal.receiver;

import dev.relay.TransactionRequiredException;
import dev.relay.internal.jdbc.Tx;
import dev.relay.internal.json.JsonText;
import dev.relay.receiver.InvalidReceiverInputException;
import java.sql.Connection;
import java.util.regex.Pattern;

/** Validation shared by the receiver primitives: everything is checked before anything is sent. */
public final class ReceiverInput {
  /** Longest message ID, request key or resource, in characters (as a work ID). */
  public static final int MAX_ID_LENGTH = 200;

  /** Longest consumer name, in characters (as a kind). */
  public static final int MAX_NAME_LENGTH = 100;

  private static final Pattern ID = Pattern.compile("[A-Za-z0-9._\\-:/@+=#]+");
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._\\-:]+");

  private ReceiverInput() {}

  /** Checks a message ID, request key or resource name. */
  public static String id(String field, String value) {
    if (value == null || value.isEmpty()) {
      throw new InvalidReceiverInputException(field, "is empty");
    }
    if (value.length() > MAX_ID_LENGTH) {
      throw new InvalidReceiverInputException(
          field, "has " + value.length() + " characters; the limit is " + MAX_ID_LENGTH);
    }
    if (!ID.matcher(value).matches()) {
      throw new InvalidReceiverInputException(
          field, "'" + value + "' may only contain A-Z a-z 0-9 . _ - : / @ + = #");
    }
    return value;
  }

  /** Checks a consumer name or request scope. */
  public static String name(String field, String value) {
    if (value == null || value.isEmpty()) {
      throw new InvalidReceiverInputException(field, "is empty");
    }
    if (value.length() > MAX_NAME_LENGTH || !NAME.matcher(value).matches()) {
      throw new InvalidReceiverInputException(
          field,
          "'" + value + "' must be 1-" + MAX_NAME_LENGTH + " characters from A-Z a-z 0-9 . _ - :");
    }
    return value;
  }

  /** Checks JSON text against the scanner that mirrors jsonb's rules. */
  public static String json(String field, String value, int maxBytes) {
    String problem = JsonText.problem(value, maxBytes);
    if (problem != null) {
      throw new InvalidReceiverInputException(field, problem);
    }
    return value;
  }

  /** Checks a fencing token. */
  public static long token(String field, long token) {
    if (token < 0) {
      throw new InvalidReceiverInputException(field, "must be zero or more, was " + token);
    }
    return token;
  }

  /** Requires an open connection that is not in auto-commit mode. */
  public static void requireTransaction(Connection c, String what) {
    if (Tx.requireOpen(c)) {
      throw new TransactionRequiredException(
          what
              + " must run in the receiver's transaction: the connection is in auto-commit mode, so"
              + " the record and the effect would commit apart; call setAutoCommit(false) first");
    }
  }
}
