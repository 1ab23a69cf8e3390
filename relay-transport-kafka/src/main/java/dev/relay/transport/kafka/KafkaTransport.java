package dev.relay.transport.kafka;

import dev.relay.BatchHandler;
import dev.relay.Claim;
import dev.relay.Handler;
import dev.relay.InvalidConfigurationException;
import dev.relay.Outcome;
import dev.relay.Outcome.Effect;
import dev.relay.transport.broker.BrokerAccepted;
import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.broker.PublishPrologue;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A {@link Handler} that publishes each attempt to Kafka and is done only when the broker
 * acknowledged the record. Build one per process, register it for every kind it routes, and close
 * it on shutdown (it owns one {@link KafkaProducer}, shared by all handler threads).
 *
 * <pre>{@code
 * KafkaTransport kafka = KafkaTransport.builder(Map.of("bootstrap.servers", "127.0.0.1:9092"))
 *     .topic("order_received", "orders")
 *     .build();
 * Relay relay = Relay.builder(dataSource).handle("order_received", kafka).build();
 * }</pre>
 *
 * <p>The producer is idempotent with {@code acks=all} (both enforced; any other value is refused at
 * {@link Builder#build()}), so the producer's own retries neither duplicate nor reorder records
 * within one producer session. Each record carries:
 *
 * <ul>
 *   <li>the topic of its kind ({@link Builder#topic}, or {@link Builder#topics} for the rest);
 *   <li>key = the ordering key, else the work ID, so one key's records share a partition and keep
 *       their order;
 *   <li>value = the payload, UTF-8 JSON as enqueued;
 *   <li>headers = {@link BrokerHeaders#of(Claim, BrokerHeaders.Fencing)}: work ID, kind,
 *       generation, the fencing token when {@link Builder#fencing} gives one, and the ordering
 *       headers.
 * </ul>
 *
 * <p>Batches: this is a {@link BatchHandler}. Relay hands it the claims of a kind that are waiting
 * in its buffer together (up to {@link #maxBatchSize()}, 100 unless {@link Builder#maxBatchSize}
 * says otherwise, per call, one handler slot per call); {@link #publishAll} gives every record to
 * the producer before it waits, so the whole claim batch is in flight at once (the producer groups
 * records per partition, {@code linger.ms}) and it is completed as one batch after the acks. Each
 * item's outcome is decided on its own record's answer: a record the broker refuses (too large,
 * say) does not hold the others. Relay writes the outcomes back in batches ({@code
 * completionBatchSize}), each still fenced by its claim's generation.
 *
 * <table>
 *   <caption>What the producer said and what it becomes</caption>
 *   <tr><th>Producer</th><th>Outcome</th></tr>
 *   <tr><td>ack</td><td>done, milestone {@value BrokerAccepted#MILESTONE} (stored as {@code
 *       accepted}), receiver reference {@code topic-partition@offset}</td></tr>
 *   <tr><td>record too large (client or broker limit), invalid record, invalid topic</td><td>failed
 *       permanently, not delivered, with the record's size and the limit's error as
 *       evidence</td></tr>
 *   <tr><td>authorization refused</td><td>retry, not delivered</td></tr>
 *   <tr><td>metadata not available within {@code max.block.ms} (nothing was queued)</td><td>retry,
 *       not delivered</td></tr>
 *   <tr><td>producer closed, or interrupted before the record was queued</td><td>retry, not
 *       delivered</td></tr>
 *   <tr><td>no ack within the claim's run time left, {@code delivery.timeout.ms} passed, or another
 *       error after the record was queued</td><td>retry, effect unknown: the kind's {@link
 *       dev.relay.UnknownOutcomePolicy} decides</td></tr>
 * </table>
 *
 * <p>Timeouts: the wait for each ack is bounded by its {@link Claim#runTimeRemaining()} less a
 * margin; the producer's own attempts by {@code delivery.timeout.ms} (default here 30 s); {@code
 * send}'s wait for metadata or buffer space by {@code max.block.ms} (default here 10 s). What it
 * does not promise: the broker's ack says the record is in the partition's log under {@code
 * acks=all}; it says nothing about any consumer. A Relay retry after an unknown outcome publishes
 * the record again (a new producer session does not deduplicate it): consumers deduplicate by the
 * {@value BrokerHeaders#WORK_ID} header ({@code KafkaInboxConsumer}).
 */
public final class KafkaTransport implements BatchHandler, AutoCloseable {
  /** The broker name recorded in the done outcome's result. */
  public static final String BROKER = "kafka";

  /** Time kept free before the run time ends. */
  static final Duration RUN_TIME_MARGIN = Duration.ofMillis(100);

  /** Producer settings Relay sets unless the caller gives them. */
  static final Map<String, Object> DEFAULTS =
      Map.of(
          ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000,
          ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000,
          ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000,
          ProducerConfig.LINGER_MS_CONFIG, 5);

  /**
   * How a record is fenced: the resource and token to carry for a claim, or empty for none.
   * Allocate tokens from the resource's own counter ({@code FenceTokens}), for example when the
   * work is enqueued, and read them from the payload here.
   */
  @FunctionalInterface
  public interface Fencing {
    /**
     * The fencing token of one claim.
     *
     * @param claim the claim being published
     * @return the token to carry, or empty
     */
    Optional<BrokerHeaders.Fencing> of(Claim claim);
  }

  private final Producer<byte[], byte[]> producer;
  private final Map<String, String> topics;
  private final Function<String, String> otherTopics;
  private final Fencing fencing;
  private final int maxBatchSize;
  private final String bootstrapServers;

  private KafkaTransport(Builder b, Producer<byte[], byte[]> producer) {
    this.producer = producer;
    this.bootstrapServers = String.valueOf(b.config.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG));
    this.topics = Map.copyOf(b.topics);
    this.otherTopics = b.otherTopics;
    this.fencing = b.fencing;
    this.maxBatchSize = b.maxBatchSize;
  }

  /**
   * A builder for a transport whose producer takes {@code producerConfig} (at least {@code
   * bootstrap.servers}); serializers, {@code enable.idempotence} and {@code acks} are Relay's.
   */
  public static Builder builder(Map<String, ?> producerConfig) {
    return new Builder(producerConfig);
  }

  /** Configures a {@link KafkaTransport}; validated at {@link #build()}. */
  public static final class Builder {
    private final Map<String, Object> config;
    private final Map<String, String> topics = new LinkedHashMap<>();
    private Function<String, String> otherTopics;
    private Fencing fencing = claim -> Optional.empty();
    private int maxBatchSize = BatchHandler.DEFAULT_MAX_BATCH_SIZE;

    private Builder(Map<String, ?> producerConfig) {
      this.config = producerConfig == null ? null : new HashMap<>(producerConfig);
    }

    /** Publishes {@code kind} to {@code topic}. */
    public Builder topic(String kind, String topic) {
      topics.put(kind, topic);
      return this;
    }

    /**
     * The topic of every kind without a {@link #topic} of its own (for example {@code kind ->
     * "relay." + kind}); without it, such work fails not delivered.
     */
    public Builder topics(Function<String, String> kindToTopic) {
      this.otherTopics = kindToTopic;
      return this;
    }

    /** Where each claim's fencing token comes from (default: none). */
    public Builder fencing(Fencing fencing) {
      this.fencing = fencing;
      return this;
    }

    /**
     * The most claims Relay hands this transport in one call, sent together (1 to 1000, default
     * 100): {@link BatchHandler#maxBatchSize()}.
     */
    public Builder maxBatchSize(int maxBatchSize) {
      this.maxBatchSize = maxBatchSize;
      return this;
    }

    /** Validates the settings and creates the producer. */
    public KafkaTransport build() {
      Map<String, Object> c = producerConfig();
      try {
        return new KafkaTransport(this, new KafkaProducer<>(c));
      } catch (KafkaException e) {
        // The client's own checks (unknown values, timeouts that contradict each other).
        throw new InvalidConfigurationException("producerConfig", KafkaTransport.causes(e));
      }
    }

    /** The producer configuration {@link #build()} uses, validated. */
    Map<String, Object> producerConfig() {
      if (config == null || config.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG) == null) {
        throw new InvalidConfigurationException(
            "producerConfig", "needs " + ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);
      }
      if (topics.isEmpty() && otherTopics == null) {
        throw new InvalidConfigurationException(
            "topics", "is empty: map each kind to a topic with topic(kind, topic) or topics(...)");
      }
      topics.forEach(
          (kind, topic) -> {
            if (kind == null || kind.isBlank() || topic == null || topic.isBlank()) {
              throw new InvalidConfigurationException(
                  "topic",
                  "kind and topic must not be blank, were '" + kind + "', '" + topic + "'");
            }
          });
      if (fencing == null) {
        throw new InvalidConfigurationException("fencing", "is null");
      }
      PublishPrologue.checkBatchSize(maxBatchSize);
      requireSetting(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
      requireSetting(ProducerConfig.ACKS_CONFIG, "all", "-1");
      if (config.containsKey(ProducerConfig.TRANSACTIONAL_ID_CONFIG)) {
        throw new InvalidConfigurationException(
            ProducerConfig.TRANSACTIONAL_ID_CONFIG,
            "is not supported: each record is published and acknowledged on its own");
      }
      Map<String, Object> c = new HashMap<>(DEFAULTS);
      c.putAll(config);
      c.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
      c.put(ProducerConfig.ACKS_CONFIG, "all");
      c.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
      c.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
      return c;
    }

    private void requireSetting(String name, String... allowed) {
      Object v = config.get(name);
      if (v != null && !Set.of(allowed).contains(v.toString().strip().toLowerCase())) {
        throw new InvalidConfigurationException(
            name,
            "must be " + allowed[0] + " (Relay's done means the broker acknowledged), was " + v);
      }
    }
  }

  /** The topic of {@code kind}, or {@code null} when none is configured. */
  public String topicOf(String kind) {
    String t = topics.get(kind);
    if (t == null && otherTopics != null) {
      t = otherTopics.apply(kind);
    }
    return t;
  }

  /** The most claims per {@link #handleAll} call ({@link Builder#maxBatchSize}). */
  @Override
  public int maxBatchSize() {
    return maxBatchSize;
  }

  /** Publishes a claim batch the runtime hands over: {@link #publishAll}. */
  @Override
  public List<Outcome> handleAll(List<? extends Claim> claims) {
    return publishAll(claims);
  }

  /**
   * Hands every claim's record to the producer first, then waits for the acks: one outcome per
   * claim, in order, each decided on its own record's answer (the table above), so one refused
   * record (too large, say) does not hold the others. Each wait is bounded by that claim's run time
   * left. No exception for a broker problem.
   *
   * @param claims the claims, of kinds this transport has a topic for
   * @return the outcomes, in the order of {@code claims}
   */
  public List<Outcome> publishAll(List<? extends Claim> claims) {
    Outcome[] out = new Outcome[claims.size()];
    List<Sent> sent = new ArrayList<>(claims.size());
    for (int i = 0; i < claims.size(); i++) {
      Claim claim = claims.get(i);
      String topic = topicOf(claim.kind());
      if (topic == null || topic.isBlank()) {
        out[i] = Outcome.fail("no Kafka topic for kind " + claim.kind(), Effect.NOT_DELIVERED);
        continue;
      }
      Duration left = claim.runTimeRemaining().minus(RUN_TIME_MARGIN);
      if (left.toMillis() < 1) {
        out[i] =
            Outcome.retry(
                "run time or deadline nearly over before publishing; not sent",
                Effect.NOT_DELIVERED);
        continue;
      }
      ProducerRecord<byte[], byte[]> record = record(topic, claim);
      Future<RecordMetadata> ack;
      try {
        ack = producer.send(record);
      } catch (KafkaException | IllegalStateException e) {
        // Thrown by send itself: the record was not queued (a closed producer, an interrupt while
        // waiting for metadata or buffer space).
        out[i] = outcome(e, record, false);
        continue;
      }
      // A future already failed when send returned was refused before it was queued (metadata
      // unavailable, a record over max.request.size): nothing can have reached the broker.
      boolean refusedAtSend = ack.isDone();
      sent.add(new Sent(i, record, ack, refusedAtSend, System.nanoTime() + left.toNanos(), left));
    }
    for (Sent s : sent) {
      out[s.index] = await(s);
    }
    return Arrays.asList(out);
  }

  private record Sent(
      int index,
      ProducerRecord<byte[], byte[]> record,
      Future<RecordMetadata> ack,
      boolean refusedAtSend,
      long deadlineNanos,
      Duration bound) {}

  private Outcome await(Sent s) {
    try {
      long nanos = Math.max(0, s.deadlineNanos - System.nanoTime());
      return accepted(s.ack.get(nanos, TimeUnit.NANOSECONDS));
    } catch (ExecutionException e) {
      return outcome(e.getCause(), s.record, !s.refusedAtSend);
    } catch (java.util.concurrent.TimeoutException e) {
      return Outcome.retry(
          "no broker ack within the run time left ("
              + s.bound.toMillis()
              + " ms) for "
              + s.record.topic()
              + ": effect unknown",
          Effect.UNKNOWN);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Outcome.retry("interrupted while the record was in flight", Effect.UNKNOWN);
    }
  }

  private ProducerRecord<byte[], byte[]> record(String topic, Claim claim) {
    RecordHeaders headers = new RecordHeaders();
    BrokerHeaders.of(claim, fencing.of(claim).orElse(null))
        .forEach((name, value) -> headers.add(name, BrokerHeaders.encode(value)));
    String key = claim.orderingKey() != null ? claim.orderingKey() : claim.workId();
    return new ProducerRecord<>(
        topic,
        null,
        key.getBytes(StandardCharsets.UTF_8),
        claim.payload().getBytes(StandardCharsets.UTF_8),
        headers);
  }

  static Outcome accepted(RecordMetadata m) {
    Map<String, Object> where = new LinkedHashMap<>();
    where.put("topic", m.topic());
    where.put("partition", m.partition());
    where.put("offset", m.hasOffset() ? m.offset() : null);
    String ref = m.topic() + "-" + m.partition() + (m.hasOffset() ? "@" + m.offset() : "");
    return BrokerAccepted.outcome(BROKER, ref, where);
  }

  /**
   * {@link #outcomeOf}, and for a wait for metadata that timed out before the record was queued
   * (which reads the same for a missing topic and a wrong address), the bootstrap servers and
   * whether the producer ever connected to a broker.
   */
  private Outcome outcome(Throwable e, ProducerRecord<byte[], byte[]> record, boolean queued) {
    Outcome o = outcomeOf(e, record, queued);
    if (queued || !(e instanceof TimeoutException) || !(o instanceof Outcome.Retry r)) {
      return o;
    }
    String reach = "bootstrap.servers " + bootstrapServers;
    Boolean connected = everConnected();
    if (Boolean.TRUE.equals(connected)) {
      reach += "; the producer has connected to a broker: check that the topic exists";
    } else if (Boolean.FALSE.equals(connected)) {
      reach +=
          "; the producer has never connected to a broker: check bootstrap.servers and the"
              + " network";
    }
    return Outcome.retry(r.reason() + " (" + reach + ")", r.effect());
  }

  /**
   * Whether the producer ever completed a connection to a broker (its {@code
   * connection-creation-total} metric), or null when the client does not say.
   */
  private Boolean everConnected() {
    try {
      for (var m : producer.metrics().entrySet()) {
        if (m.getKey().name().equals("connection-creation-total")
            && m.getKey().group().equals("producer-metrics")
            && m.getValue().metricValue() instanceof Number n) {
          return n.doubleValue() > 0;
        }
      }
    } catch (RuntimeException e) {
      // A closed producer, or metrics the client no longer keeps: say nothing.
    }
    return null;
  }

  /**
   * The outcome of a failed publish.
   *
   * @param queued whether the record may have been queued, and so sent
   */
  static Outcome outcomeOf(Throwable e, ProducerRecord<byte[], byte[]> record, boolean queued) {
    String what =
        "record of "
            + record.value().length
            + " bytes (key "
            + record.key().length
            + " bytes) to "
            + record.topic()
            + ": "
            + e.getClass().getSimpleName()
            + ": "
            + e.getMessage();
    if (e instanceof RecordTooLargeException
        || e instanceof RecordBatchTooLargeException
        || e instanceof InvalidRecordException
        || e instanceof CorruptRecordException
        || e instanceof InvalidTopicException) {
      // The client refused it before sending, or the broker refused it without appending it.
      return Outcome.fail("refused: " + what, Effect.NOT_DELIVERED);
    }
    if (e instanceof AuthorizationException) {
      return Outcome.retry("not authorized: " + what, Effect.NOT_DELIVERED);
    }
    if (!queued) {
      return Outcome.retry("not queued: " + what, Effect.NOT_DELIVERED);
    }
    if (e instanceof TimeoutException) {
      return Outcome.retry("no ack in time, effect unknown: " + what, Effect.UNKNOWN);
    }
    return Outcome.retry("effect unknown: " + what, Effect.UNKNOWN);
  }

  /** Flushes what is queued (bounded) and closes the producer. */
  @Override
  public void close() {
    producer.close(Duration.ofSeconds(10));
  }

  /** The messages of {@code e} and its causes, joined: the client puts the reason in a cause. */
  static String causes(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t.getMessage() != null) {
        b.append(b.length() == 0 ? "" : ": ").append(t.getMessage());
      }
    }
    return b.toString();
  }
}
