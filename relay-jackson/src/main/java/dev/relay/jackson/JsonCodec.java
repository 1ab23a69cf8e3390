package dev.relay.jackson;

import dev.relay.Handler;
import dev.relay.InvalidWorkException;
import dev.relay.Outcome;
import dev.relay.Work;
import java.util.Objects;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * Writes messages (records, POJOs) as the JSON text Relay enqueues, and reads them back for
 * handlers, with a Jackson 3 {@link ObjectMapper}.
 *
 * <pre>{@code
 * JsonCodec codec = JsonCodec.create();                // or JsonCodec.using(applicationMapper)
 * outbox.enqueue(c, codec.work("order-103-ack", "order_received", new OrderReceived("103", total)));
 *
 * Relay.builder(dataSource)
 *     .handle("order_received", codec.handler(OrderReceived.class, (order, claim) -> mail(order)))
 *     ...
 * }</pre>
 *
 * <p>Identity stays the outbox's: the same work ID with an equal object serializes to JSON that is
 * {@code jsonb}-equal to the stored payload, so it is a repeat ({@code ALREADY_ENQUEUED}); a
 * changed object is a different payload and is refused with {@link
 * dev.relay.WorkConflictException}. Keep the mapper's settings stable across deployments (property
 * naming, inclusion of nulls), or an equal object may serialize differently and be refused.
 *
 * <p>A payload the handler's type cannot read (a malformed document, a missing required property, a
 * wrong type) will not become readable by retrying: the adapter returns {@link Outcome#fail} with
 * {@link Outcome.Effect#NOT_DELIVERED} (the handler never ran) and a reason naming the type and the
 * parse error, so the item ends {@code failed} with that evidence instead of retrying. Fix the
 * handler or the data and redrive it.
 *
 * <p>Thread-safe when the mapper is (Jackson 3 mappers are immutable).
 */
public final class JsonCodec {
  /** Longest parse error kept in a failure reason, in characters. */
  static final int MAX_ERROR_LENGTH = 500;

  private final ObjectMapper mapper;

  private JsonCodec(ObjectMapper mapper) {
    this.mapper = mapper;
  }

  /** A codec with a default {@link JsonMapper}. */
  public static JsonCodec create() {
    return new JsonCodec(JsonMapper.builder().build());
  }

  /** A codec with {@code mapper}, for example the application's configured one. */
  public static JsonCodec using(ObjectMapper mapper) {
    return new JsonCodec(Objects.requireNonNull(mapper, "mapper"));
  }

  /** The mapper this codec uses. */
  public ObjectMapper mapper() {
    return mapper;
  }

  /**
   * The JSON text of {@code message}.
   *
   * @throws InvalidWorkException if {@code message} is null or cannot be written as JSON
   */
  public String write(Object message) {
    if (message == null) {
      throw new InvalidWorkException(null, "payload", "is null; enqueue an object");
    }
    try {
      return mapper.writeValueAsString(message);
    } catch (JacksonException e) {
      throw new InvalidWorkException(
          null,
          "payload",
          "cannot be written as JSON ("
              + message.getClass().getName()
              + "): "
              + shorten(e.getOriginalMessage()));
    }
  }

  /**
   * New work whose payload is {@code message} written as JSON; see {@link Work#of}.
   *
   * @throws InvalidWorkException if {@code message} is null or cannot be written as JSON
   */
  public Work work(String workId, String kind, Object message) {
    return Work.of(workId, kind, write(message));
  }

  /**
   * Reads {@code json} as a {@code type}.
   *
   * @throws UnreadablePayloadException if the text is not a {@code type}, or is JSON {@code null}
   */
  public <T> T read(String json, Class<T> type) {
    Objects.requireNonNull(type, "type");
    T value;
    try {
      value = mapper.readValue(json == null ? "null" : json, type);
    } catch (JacksonException e) {
      throw new UnreadablePayloadException(type, describe(e), e);
    }
    if (value == null) {
      throw new UnreadablePayloadException(type, "the payload is JSON null", null);
    }
    return value;
  }

  /**
   * A {@link Handler} that reads each claim's payload as a {@code type} and calls {@code handler}.
   * An unreadable payload ends the work {@code failed} (see the class comment); the handler is not
   * called.
   */
  public <T> Handler handler(Class<T> type, MessageHandler<? super T> handler) {
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(handler, "handler");
    return claim -> {
      T message;
      try {
        message = read(claim.payload(), type);
      } catch (UnreadablePayloadException e) {
        return Outcome.fail(e.getMessage(), Outcome.Effect.NOT_DELIVERED);
      }
      return handler.handle(message, claim);
    };
  }

  /** Jackson's message without the source excerpt, with the property path when there is one. */
  private static String describe(JacksonException e) {
    String path = e.getPath().isEmpty() ? "" : " (at " + e.getPathReference() + ")";
    return shorten(e.getOriginalMessage() + path);
  }

  private static String shorten(String text) {
    String t = text == null ? "no detail" : text.replaceAll("\\s+", " ").strip();
    return t.length() <= MAX_ERROR_LENGTH ? t : t.substring(0, MAX_ERROR_LENGTH) + "...";
  }
}
