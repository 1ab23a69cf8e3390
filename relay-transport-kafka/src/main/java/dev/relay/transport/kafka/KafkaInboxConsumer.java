package dev.relay.transport.kafka;

import dev.relay.InvalidConfigurationException;
import dev.relay.transport.broker.BrokerEffect;
import dev.relay.transport.broker.BrokerHeaders;
import dev.relay.transport.broker.BrokerInbox;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Kafka consumer loop that applies each record once through Relay's inbox and commits offsets
 * only after the database transaction that applied them committed.
 *
 * <pre>{@code
 * BrokerInbox inbox = BrokerInbox.builder(dataSource).consumer("billing").build();
 * KafkaInboxConsumer loop = KafkaInboxConsumer.builder(
 *         Map.of("bootstrap.servers", "127.0.0.1:9092", "group.id", "billing"), dataSource, inbox)
 *     .topics(List.of("orders"))
 *     .effect((tx, delivery) -> billing.record(tx, delivery.payload()))
 *     .build();
 * loop.start();                                      // its own thread; loop.close() on shutdown
 * }</pre>
 *
 * <p>Each poll, per partition: one transaction on a connection from the data source applies the
 * partition's records in offset order ({@link BrokerInbox#applyIn}, each behind a savepoint, and
 * each in the span of the inbox's tracing hook continuing the record's {@code traceparent}), then
 * commits; only then is the partition's offset committed to Kafka. A record already applied (a
 * redelivery after a rebalance or a crash between the two commits, or a repeat publish after an
 * unknown outcome) is a {@link BrokerInbox.Status#DUPLICATE} and changes nothing.
 *
 * <ul>
 *   <li>An effect that throws, or a database error: the records before it commit with their
 *       offsets; the partition is rewound to the failed record and paused for {@link
 *       Builder#retryBackoff}, then tried again. Nothing is skipped.
 *   <li>A poison record (headers invalid, payload not JSON, a changed payload under a used work ID)
 *       goes to {@link Builder#poison}; by default there is none, and the record is treated like a
 *       failure, so the partition stalls visibly (logged) rather than lose it. A poison handler
 *       that returns normally (for example after writing the record to a dead-letter table) lets
 *       the loop skip it.
 *   <li>A failed offset commit (rebalance, broker down) is logged and left: the records are
 *       redelivered and answered as duplicates.
 * </ul>
 *
 * <p>It forces {@code enable.auto.commit=false} and byte-array deserializers, and defaults {@code
 * auto.offset.reset} to {@code earliest}. It does not order across partitions, and it remembers
 * work IDs only for the inbox consumer's horizon. Not thread-safe: {@link #pollOnce} from one
 * thread, or {@link #start} once.
 */
public final class KafkaInboxConsumer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(KafkaInboxConsumer.class);

  /** What the loop does with a record that can never be applied. */
  @FunctionalInterface
  public interface PoisonHandler {
    /**
     * Handles one poison record; return normally to skip it, throw to hold its partition.
     *
     * @param record the record
     * @param problem why it cannot be applied
     * @throws Exception to hold the partition and retry the record after the backoff
     */
    void handle(ConsumerRecord<byte[], byte[]> record, RuntimeException problem) throws Exception;
  }

  /**
   * What one poll did.
   *
   * @param records records received
   * @param applied records applied now
   * @param duplicates records applied before (redeliveries)
   * @param stale records refused by their fence
   * @param poisoned poison records handed to the poison handler and skipped
   * @param failed partitions rewound after a failure
   */
  public record PollResult(
      int records, int applied, int duplicates, int stale, int poisoned, int failed) {}

  private final KafkaConsumer<byte[], byte[]> consumer;
  private final DataSource dataSource;
  private final BrokerInbox inbox;
  private final BrokerEffect effect;
  private final PoisonHandler poison;
  private final Duration retryBackoff;
  private final Duration pollTimeout;
  private final Map<TopicPartition, Long> pausedUntil = new HashMap<>();
  private final AtomicLong committed = new AtomicLong();
  private volatile boolean closed;
  private Thread thread;

  private KafkaInboxConsumer(Builder b, Map<String, Object> config) {
    this.dataSource = b.dataSource;
    this.inbox = b.inbox;
    this.effect = b.effect;
    this.poison = b.poison;
    this.retryBackoff = b.retryBackoff;
    this.pollTimeout = b.pollTimeout;
    this.consumer = new KafkaConsumer<>(config);
    consumer.subscribe(
        b.topics,
        new ConsumerRebalanceListener() {
          @Override
          public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            partitions.forEach(p -> pausedUntil.remove(p));
          }

          @Override
          public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}
        });
  }

  /**
   * A builder.
   *
   * @param consumerConfig the Kafka consumer's settings: at least {@code bootstrap.servers} and
   *     {@code group.id}
   * @param dataSource the consumer's own database (holding Relay's inbox tables)
   * @param inbox the inbox helper, naming the inbox consumer
   * @return the builder
   */
  public static Builder builder(
      Map<String, ?> consumerConfig, DataSource dataSource, BrokerInbox inbox) {
    return new Builder(consumerConfig, dataSource, inbox);
  }

  /** Configures a {@link KafkaInboxConsumer}; validated at {@link #build()}. */
  public static final class Builder {
    private final Map<String, Object> config;
    private final DataSource dataSource;
    private final BrokerInbox inbox;
    private List<String> topics = List.of();
    private BrokerEffect effect;
    private PoisonHandler poison;
    private Duration retryBackoff = Duration.ofSeconds(1);
    private Duration pollTimeout = Duration.ofMillis(500);

    private Builder(Map<String, ?> config, DataSource dataSource, BrokerInbox inbox) {
      this.config = config == null ? null : new HashMap<>(config);
      this.dataSource = dataSource;
      this.inbox = inbox;
    }

    /** The topics to consume (required). */
    public Builder topics(Collection<String> topics) {
      this.topics = List.copyOf(topics);
      return this;
    }

    /** The consumer's writes per record (required). */
    public Builder effect(BrokerEffect effect) {
      this.effect = effect;
      return this;
    }

    /** What to do with a record that can never be applied (default: hold its partition). */
    public Builder poison(PoisonHandler poison) {
      this.poison = poison;
      return this;
    }

    /** How long a partition waits after a failure before its record is tried again (1 s). */
    public Builder retryBackoff(Duration retryBackoff) {
      this.retryBackoff = retryBackoff;
      return this;
    }

    /** The longest one poll of {@link #start}'s loop waits for records (500 ms). */
    public Builder pollTimeout(Duration pollTimeout) {
      this.pollTimeout = pollTimeout;
      return this;
    }

    /** Validates the settings and creates the Kafka consumer. */
    public KafkaInboxConsumer build() {
      if (config == null
          || config.get(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG) == null
          || config.get(ConsumerConfig.GROUP_ID_CONFIG) == null) {
        throw new InvalidConfigurationException(
            "consumerConfig",
            "needs "
                + ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG
                + " and "
                + ConsumerConfig.GROUP_ID_CONFIG);
      }
      Object autoCommit = config.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);
      if (autoCommit != null && Boolean.parseBoolean(autoCommit.toString())) {
        throw new InvalidConfigurationException(
            ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
            "must be false: offsets are committed after the database transaction");
      }
      if (dataSource == null) {
        throw new InvalidConfigurationException("dataSource", "is null");
      }
      if (inbox == null) {
        throw new InvalidConfigurationException("inbox", "is null");
      }
      if (topics.isEmpty()) {
        throw new InvalidConfigurationException("topics", "is empty");
      }
      if (effect == null) {
        throw new InvalidConfigurationException("effect", "is null");
      }
      requirePositive("retryBackoff", retryBackoff);
      requirePositive("pollTimeout", pollTimeout);
      Map<String, Object> c = new HashMap<>(config);
      c.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
      c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
      c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
      c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
      try {
        return new KafkaInboxConsumer(this, c);
      } catch (KafkaException e) {
        throw new InvalidConfigurationException("consumerConfig", KafkaTransport.causes(e));
      }
    }

    private static void requirePositive(String name, Duration d) {
      if (d == null || d.toMillis() < 1 || d.toHours() > 1) {
        throw new InvalidConfigurationException(name, "must be between 1 ms and 1 hour, was " + d);
      }
    }
  }

  /** How to read the {@link BrokerHeaders} of a Kafka record (the last value of each name). */
  public static BrokerHeaders.Lookup headers(ConsumerRecord<?, ?> record) {
    return name -> {
      Header h = record.headers().lastHeader(name);
      return h == null ? null : BrokerHeaders.decode(h.value());
    };
  }

  /**
   * Polls once (waiting up to {@code timeout}) and applies what arrived; see the class comment.
   * Call from one thread only, and not together with {@link #start}.
   *
   * @param timeout the longest the poll waits for records
   * @return what the poll did
   */
  public PollResult pollOnce(Duration timeout) {
    resumeDue();
    ConsumerRecords<byte[], byte[]> records = consumer.poll(timeout);
    int[] counts = new int[6];
    counts[0] = records.count();
    for (TopicPartition tp : records.partitions()) {
      applyPartition(tp, records.records(tp), counts);
    }
    return new PollResult(counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]);
  }

  /** Offsets committed to Kafka so far by this loop (partitions times commits). */
  long offsetCommits() {
    return committed.get();
  }

  private void applyPartition(
      TopicPartition tp, List<ConsumerRecord<byte[], byte[]>> records, int[] counts) {
    long first = records.get(0).offset();
    long next = first;
    Exception failure = null;
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        for (ConsumerRecord<byte[], byte[]> r : records) {
          Exception f = applyOne(c, r, counts);
          if (f != null) {
            failure = f;
            break;
          }
          next = r.offset() + 1;
        }
        c.commit();
      } catch (SQLException | RuntimeException e) {
        rollbackQuietly(c);
        failure = e;
        next = first; // nothing of this poll's records of the partition is known committed
      } finally {
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      failure = e;
      next = first;
    }
    if (next > first) {
      commitOffset(tp, next);
    }
    if (failure != null) {
      counts[5]++;
      log.warn(
          "record {}@{} not applied; retrying after {}: {}",
          tp,
          next,
          retryBackoff,
          failure.toString());
      consumer.seek(tp, next);
      consumer.pause(List.of(tp));
      pausedUntil.put(tp, System.nanoTime() + retryBackoff.toNanos());
    }
  }

  /** Applies one record; returns the failure that stops its partition, or {@code null}. */
  private Exception applyOne(Connection c, ConsumerRecord<byte[], byte[]> r, int[] counts) {
    try {
      String payload = r.value() == null ? null : new String(r.value(), StandardCharsets.UTF_8);
      // read with the headers, so the inbox's tracing hook continues the publisher's trace
      BrokerInbox.Result result = inbox.applyIn(c, headers(r), payload, effect);
      switch (result.status()) {
        case APPLIED:
          counts[1]++;
          break;
        case DUPLICATE:
          counts[2]++;
          break;
        default:
          counts[3]++;
          break;
      }
      return null;
    } catch (RuntimeException e) {
      if (!BrokerInbox.isPoison(e)) {
        return e;
      }
      if (poison == null) {
        log.error(
            "poison record {}-{}@{} holds its partition (configure a poison handler): {}",
            r.topic(),
            r.partition(),
            r.offset(),
            e.getMessage());
        return e;
      }
      try {
        poison.handle(r, e);
        counts[4]++;
        return null;
      } catch (Exception handlerFailure) {
        handlerFailure.addSuppressed(e);
        return handlerFailure;
      }
    }
  }

  private void commitOffset(TopicPartition tp, long next) {
    try {
      consumer.commitSync(Map.of(tp, new OffsetAndMetadata(next)), Duration.ofSeconds(10));
      committed.incrementAndGet();
    } catch (WakeupException e) {
      throw e;
    } catch (KafkaException e) {
      // The records are applied; a redelivery of them is answered as duplicates.
      log.warn(
          "offset {} of {} not committed (redelivery will be deduplicated): {}",
          next,
          tp,
          e.toString());
    }
  }

  private void resumeDue() {
    if (pausedUntil.isEmpty()) {
      return;
    }
    long now = System.nanoTime();
    List<TopicPartition> due =
        pausedUntil.entrySet().stream()
            .filter(e -> now - e.getValue() >= 0)
            .map(Map.Entry::getKey)
            .toList();
    due.forEach(pausedUntil::remove);
    consumer.resume(due.stream().filter(tp -> consumer.assignment().contains(tp)).toList());
  }

  private static void rollbackQuietly(Connection c) {
    try {
      c.rollback();
    } catch (SQLException ignored) {
      // A broken connection: the server rolls back the unfinished transaction by itself.
    }
  }

  /**
   * Runs the loop on a thread of its own until {@link #close}. A failure of the loop itself (not of
   * a record) is logged and the loop goes on after the retry backoff.
   */
  public synchronized void start() {
    if (thread != null) {
      throw new IllegalStateException("already started");
    }
    thread =
        new Thread(
            () -> {
              try {
                while (!closed) {
                  try {
                    pollOnce(pollTimeout);
                  } catch (WakeupException e) {
                    // close() asked the loop to end.
                  } catch (RuntimeException e) {
                    log.error("Kafka inbox loop failed; going on", e);
                  }
                }
              } finally {
                consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
              }
            },
            "relay-kafka-inbox-" + inbox.consumer());
    thread.setDaemon(true);
    thread.start();
  }

  /** Stops the loop (waiting for its current poll to finish) and closes the Kafka consumer. */
  @Override
  public void close() {
    closed = true;
    Thread t;
    synchronized (this) {
      t = thread;
    }
    if (t == null) {
      consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
      return;
    }
    consumer.wakeup();
    try {
      t.join(Duration.ofSeconds(30).toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
