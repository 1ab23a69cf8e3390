package dev.relay.transport.broker;

import dev.relay.Milestone;
import dev.relay.Outcome;
import java.util.Map;

/**
 * The milestone a broker transport can prove, {@value #MILESTONE}: the broker acknowledged the
 * message under its own durability settings (Kafka: {@code acks=all} from the partition leader;
 * RabbitMQ: a publisher confirm; NATS JetStream: a publish ack). It is <b>not</b> a consumer's
 * completion: nothing is known yet about whether any consumer read or applied the message.
 *
 * <p>Relay's {@code milestone} column stores {@link Milestone#ACCEPTED} (a broker's acknowledgement
 * is an acceptance of responsibility); the result JSON of the done outcome names {@value
 * #MILESTONE} and the broker's coordinates, so an operator reading the row sees where the message
 * went:
 *
 * <pre>{@code
 * {"milestone":"broker_accepted","broker":"kafka","topic":"orders","partition":3,"offset":1812}
 * }</pre>
 */
public final class BrokerAccepted {
  private BrokerAccepted() {}

  /** The milestone name a broker transport records in its done outcome's result. */
  public static final String MILESTONE = "broker_accepted";

  /** The milestone stored in the {@code milestone} column for a broker's acknowledgement. */
  public static final Milestone STORED_MILESTONE = Milestone.ACCEPTED;

  /**
   * The done outcome of a message the broker acknowledged.
   *
   * @param broker the broker's name, for example {@code kafka}
   * @param receiverRef the broker's reference for the message (for Kafka {@code
   *     topic-partition@offset}), or {@code null}
   * @param coordinates where the message is, in insertion order; values are strings, numbers or
   *     booleans
   * @return {@code done} with {@link #STORED_MILESTONE} and a result naming {@value #MILESTONE}
   */
  public static Outcome.Done outcome(
      String broker, String receiverRef, Map<String, ?> coordinates) {
    StringBuilder json = new StringBuilder("{\"milestone\":\"" + MILESTONE + "\"");
    json.append(",\"broker\":");
    appendString(json, broker);
    for (Map.Entry<String, ?> e : coordinates.entrySet()) {
      json.append(',');
      appendString(json, e.getKey());
      json.append(':');
      Object v = e.getValue();
      if (v == null) {
        json.append("null");
      } else if (v instanceof Number || v instanceof Boolean) {
        json.append(v);
      } else {
        appendString(json, v.toString());
      }
    }
    json.append('}');
    return Outcome.done(receiverRef, json.toString(), STORED_MILESTONE);
  }

  private static void appendString(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      switch (ch) {
        case '"':
          out.append("\\\"");
          break;
        case '\\':
          out.append("\\\\");
          break;
        default:
          if (ch < 0x20) {
            out.append(String.format("\\u%04x", (int) ch));
          } else {
            out.append(ch);
          }
      }
    }
    out.append('"');
  }
}
