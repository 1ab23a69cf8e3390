package dev.relay.transport.rabbitmq;

import dev.relay.Claim;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The Relay headers of one message, from its claim. Stand-in until the shared broker module
 * (relay-transport-broker) provides the names and their encoding; kept in one place so it is
 * replaced in one step.
 */
final class MessageHeaders {
  static final String WORK_ID = "relay-work-id";
  static final String KIND = "relay-kind";
  static final String GENERATION = "relay-generation";
  static final String FENCING_RESOURCE = "relay-fencing-resource";
  static final String FENCING_TOKEN = "relay-fencing-token";
  static final String ORDERING_KEY = "relay-ordering-key";
  static final String SEQUENCE = "relay-sequence";
  static final String PREVIOUS_SEQUENCE = "relay-previous-sequence";

  private MessageHeaders() {}

  /** The headers as text values: work ID, kind, generation, fence (work ID + generation), order. */
  static Map<String, Object> of(Claim claim) {
    Map<String, Object> h = new LinkedHashMap<>();
    h.put(WORK_ID, claim.workId());
    h.put(KIND, claim.kind());
    h.put(GENERATION, Long.toString(claim.generation()));
    h.put(FENCING_RESOURCE, claim.workId());
    h.put(FENCING_TOKEN, Long.toString(claim.generation()));
    if (claim.orderingKey() != null) {
      h.put(ORDERING_KEY, claim.orderingKey());
      h.put(SEQUENCE, Long.toString(claim.sequence()));
      if (claim.previousDeliveredSequence() != null) {
        h.put(PREVIOUS_SEQUENCE, Long.toString(claim.previousDeliveredSequence()));
      }
    }
    return h;
  }
}
