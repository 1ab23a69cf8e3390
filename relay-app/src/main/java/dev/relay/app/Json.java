package dev.relay.app;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.time.Instant;

/** The command's JSON: one shared mapper, objects built node by node with snake_case names. */
final class Json {
  static final ObjectMapper MAPPER =
      new ObjectMapper().disable(SerializationFeature.FAIL_ON_EMPTY_BEANS);

  private Json() {}

  static ObjectNode object() {
    return MAPPER.createObjectNode();
  }

  /** Compact JSON text of {@code node}. */
  static String write(JsonNode node) {
    try {
      return MAPPER.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON", e);
    }
  }

  /** Indented JSON text of {@code node}. */
  static String pretty(JsonNode node) {
    try {
      return MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON", e);
    }
  }

  /** Puts {@code value} as text (ISO-8601 for instants, seconds for durations) or null. */
  static void put(ObjectNode node, String field, Object value) {
    if (value == null) {
      node.putNull(field);
    } else if (value instanceof Integer i) {
      node.put(field, i);
    } else if (value instanceof Long l) {
      node.put(field, l);
    } else if (value instanceof Double d) {
      node.put(field, d);
    } else if (value instanceof Boolean b) {
      node.put(field, b);
    } else if (value instanceof Duration d) {
      node.put(field, d.toMillis() / 1000.0);
    } else if (value instanceof Instant i) {
      node.put(field, i.toString());
    } else if (value instanceof JsonNode j) {
      node.set(field, j);
    } else {
      node.put(field, value.toString());
    }
  }

  /** Parses JSON text stored by Relay (a payload, a result); text that is not JSON stays text. */
  static JsonNode parseOrText(String text) {
    if (text == null) {
      return MAPPER.nullNode();
    }
    try {
      return MAPPER.readTree(text);
    } catch (JsonProcessingException e) {
      return MAPPER.getNodeFactory().textNode(text);
    }
  }
}
