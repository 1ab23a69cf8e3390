package dev.relay.transport.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.AlreadyClosedException;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Return;
import com.rabbitmq.client.ShutdownSignalException;
import java.io.IOException;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One connection and one channel in confirm mode, with the messages published on it that the broker
 * has not confirmed yet. Publishing is serialised (one channel numbers its messages in order);
 * waiting for confirms is not. Once the channel shuts down the session is spent: every unconfirmed
 * message is answered "lost" and the transport opens a new session.
 *
 * <p>Before the first publish to an exchange the session checks, with a passive declare on a second
 * channel of its own, that the exchange exists: the broker answers a publish to a missing exchange
 * by closing the publishing channel, and that close cannot tell the messages it refused from those
 * it may already have routed. The answer is remembered for the session's life (one round trip per
 * exchange per channel); a missing exchange is checked again on the next batch.
 */
final class PublishSession {
  /** The broker's text when a message exceeds its {@code max_message_size} (RabbitMQ 3.8+). */
  private static final Pattern TOO_LARGE =
      Pattern.compile("message size (\\d+) is larger than configured max size (\\d+)");

  /** The broker's text when a publish names an exchange the virtual host does not have. */
  private static final Pattern NO_EXCHANGE = Pattern.compile("no exchange '(.*)' in vhost");

  /** AMQP class and method of {@code basic.publish}, and the reply code {@code not-found}. */
  private static final int BASIC = 60, PUBLISH = 40, NOT_FOUND = 404;

  /** What became of one published message. */
  sealed interface Result {}

  /** Confirmed by the broker; {@code returned} holds the broker's reason if it was unroutable. */
  record Confirmed(String returned) implements Result {}

  /** Negatively confirmed: the broker did not take responsibility for it. */
  record Nacked() implements Result {}

  /** The channel closed before a confirm arrived: the broker may or may not have it. */
  record Lost(String reason) implements Result {}

  /** The broker closed the channel because this message exceeds its limit. */
  record TooLarge(String reason, long limit) implements Result {}

  /** A message on its way: its sequence number, work ID, size, and its result once known. */
  static final class Pending {
    final long seq;
    final String messageId;
    final int size;
    final CompletableFuture<Result> result = new CompletableFuture<>();
    volatile String returned;

    Pending(long seq, String messageId, int size) {
      this.seq = seq;
      this.messageId = messageId;
      this.size = size;
    }
  }

  /** The message was certainly not handed to the broker. */
  static final class NotSentException extends Exception {
    private static final long serialVersionUID = 1L;

    NotSentException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private final Connection connection;
  private final Channel channel;
  private final NavigableMap<Long, Pending> pending = new ConcurrentSkipListMap<>();
  private volatile String blocked;
  private volatile ShutdownSignalException shutdown;

  /** Exchanges a passive declare found on this session's broker; dropped with the session. */
  private final Set<String> exchanges = ConcurrentHashMap.newKeySet();

  private final Object checkLock = new Object();
  private Channel checkChannel; // guarded by checkLock; a 404 closes it, the next check reopens

  private PublishSession(Connection connection, Channel channel) {
    this.connection = connection;
    this.channel = channel;
  }

  static PublishSession open(ConnectionFactory factory) throws NotSentException {
    Connection connection;
    try {
      connection = factory.newConnection("relay-rabbitmq-transport");
    } catch (IOException | TimeoutException e) {
      throw new NotSentException("cannot connect to RabbitMQ: " + e, e);
    }
    try {
      Channel channel = connection.createChannel();
      channel.confirmSelect();
      PublishSession s = new PublishSession(connection, channel);
      connection.addBlockedListener(reason -> s.blocked = reason, () -> s.blocked = null);
      channel.addReturnListener(s::returned);
      channel.addConfirmListener(
          (tag, multiple) -> s.confirmed(tag, multiple, true),
          (tag, multiple) -> s.confirmed(tag, multiple, false));
      channel.addShutdownListener(s::shutDown);
      return s;
    } catch (IOException | RuntimeException e) {
      connection.abort();
      throw new NotSentException("cannot open a confirm channel: " + e, e);
    }
  }

  boolean isOpen() {
    return shutdown == null && channel.isOpen();
  }

  /**
   * Publishes one persistent, mandatory message. Returns its pending entry; throws when it was
   * certainly not sent. An I/O error while writing leaves the entry answered "lost".
   */
  Pending publish(
      String exchange, String routingKey, AMQP.BasicProperties props, byte[] body, String id)
      throws NotSentException {
    Pending p;
    synchronized (this) {
      if (!isOpen()) {
        // The client marks the channel closed before it runs the shutdown listeners: the stored
        // cause may not be there yet, the channel's own close reason is.
        ShutdownSignalException cause = shutdown != null ? shutdown : channel.getCloseReason();
        throw new NotSentException("the channel is closed: " + describe(cause), cause);
      }
      String blockedNow = blocked;
      if (blockedNow != null) {
        // A blocked connection would hold the write (and this thread) until the alarm clears.
        throw new NotSentException("the broker blocks publishing: " + blockedNow, null);
      }
      p = new Pending(channel.getNextPublishSeqNo(), id, body.length);
      pending.put(p.seq, p);
      try {
        channel.basicPublish(exchange, routingKey, true, props, body);
      } catch (AlreadyClosedException e) {
        pending.remove(p.seq);
        throw new NotSentException("the channel closed before sending: " + e.getMessage(), e);
      } catch (IOException e) {
        pending.remove(p.seq);
        p.result.complete(new Lost("write failed, the broker may have the message: " + e));
        return p;
      }
    }
    ShutdownSignalException down = shutdown;
    if (down != null) {
      // The channel shut down while this was being written; the shutdown may have drained the
      // pending map before this entry was in it.
      p.result.complete(lost(down));
    }
    return p;
  }

  /**
   * Checks, once per session, that {@code exchange} exists, with a passive declare on a channel
   * other than the publishing one (a 404 closes the channel it is answered on). Returns null when
   * it exists, else why nothing may be published to it (a configuration problem); throws when the
   * check could not be made. The default exchange ({@code ""}) always exists.
   */
  String checkExchange(String exchange) throws NotSentException {
    if (exchange.isEmpty() || exchanges.contains(exchange)) {
      return null;
    }
    synchronized (checkLock) {
      if (exchanges.contains(exchange)) {
        return null;
      }
      try {
        if (checkChannel == null || !checkChannel.isOpen()) {
          checkChannel = connection.createChannel();
          if (checkChannel == null) {
            throw new IOException("the connection has no channel left");
          }
        }
        checkChannel.exchangeDeclarePassive(exchange);
        exchanges.add(exchange);
        return null;
      } catch (IOException | ShutdownSignalException e) {
        ShutdownSignalException cause =
            e instanceof ShutdownSignalException s
                ? s
                : e.getCause() instanceof ShutdownSignalException s ? s : null;
        if (cause != null
            && !cause.isHardError()
            && cause.getReason() instanceof AMQP.Channel.Close close
            && close.getReplyCode() == NOT_FOUND) {
          checkChannel = null; // the broker closed it
          return missingExchangeText(exchange);
        }
        dropCheckChannel();
        throw new NotSentException(
            "cannot check that exchange '" + exchange + "' exists: " + e.getMessage(), e);
      } catch (RuntimeException e) {
        dropCheckChannel();
        throw new NotSentException("cannot check that exchange '" + exchange + "' exists: " + e, e);
      }
    }
  }

  private void dropCheckChannel() {
    Channel c = checkChannel;
    checkChannel = null;
    if (c != null) {
      try {
        c.abort();
      } catch (IOException | RuntimeException ignored) {
        // it is being dropped
      }
    }
  }

  /** How many messages were handed to the publishing channel (for tests). */
  long published() {
    return channel.getNextPublishSeqNo() - 1;
  }

  /** Forgets a message whose confirm is no longer awaited. */
  void abandon(Pending p) {
    pending.remove(p.seq);
  }

  private void returned(Return r) {
    // The broker returns an unroutable mandatory message before confirming it, on the same
    // connection thread, so the mark is set before the confirm completes the entry.
    String id = r.getProperties().getMessageId();
    for (Pending p : pending.values()) {
      if (p.messageId.equals(id) && p.returned == null) {
        p.returned =
            r.getReplyCode()
                + " "
                + r.getReplyText()
                + " (exchange '"
                + r.getExchange()
                + "', routing key '"
                + r.getRoutingKey()
                + "')";
        return;
      }
    }
  }

  private void confirmed(long tag, boolean multiple, boolean ack) {
    Map<Long, Pending> settled =
        multiple ? pending.headMap(tag, true) : pending.subMap(tag, true, tag, true);
    for (Pending p : settled.values()) {
      p.result.complete(ack ? new Confirmed(p.returned) : new Nacked());
    }
    settled.clear();
  }

  private void shutDown(ShutdownSignalException cause) {
    shutdown = cause;
    String text = String.valueOf(cause.getMessage());
    Pending tooLarge = null;
    long limit = -1;
    if (cause.getReason() instanceof AMQP.Channel.Close close) {
      Matcher m = TOO_LARGE.matcher(close.getReplyText());
      if (m.find()) {
        long size = Long.parseLong(m.group(1));
        limit = Long.parseLong(m.group(2));
        for (Pending p : pending.values()) {
          if (p.size == size) {
            tooLarge = p;
            break;
          }
        }
      }
    }
    // A 404 close here means the exchange was checked and then deleted while publishes were in
    // flight: messages published before the one the broker refused may have been routed and not
    // yet confirmed (persistent ones are confirmed after the disk write), so they stay "lost".
    for (Pending p : pending.values()) {
      p.result.complete(p == tooLarge ? new TooLarge(text, limit) : lost(cause));
    }
    pending.clear();
    // A channel error leaves the connection open: the transport closes it when it replaces this
    // spent session (not here, on the connection's own thread).
  }

  private static Lost lost(ShutdownSignalException cause) {
    return new Lost("the channel closed before the broker confirmed: " + describe(cause));
  }

  private static String missingExchangeText(String exchange) {
    return "exchange '"
        + exchange
        + "' does not exist on the broker (404 NOT_FOUND, checked before publishing): a"
        + " configuration problem, nothing was published; create the exchange, or fix the kind's"
        + " exchange";
  }

  /**
   * The exchange a channel close names as missing, when the broker closed the channel with 404
   * NOT_FOUND in reply to a {@code basic.publish}; else null.
   */
  static String missingExchange(ShutdownSignalException cause) {
    if (cause == null
        || cause.isHardError()
        || !(cause.getReason() instanceof AMQP.Channel.Close close)
        || close.getReplyCode() != NOT_FOUND
        || close.getClassId() != BASIC
        || close.getMethodId() != PUBLISH) {
      return null;
    }
    Matcher m = NO_EXCHANGE.matcher(String.valueOf(close.getReplyText()));
    return m.find() ? m.group(1) : null;
  }

  /** Why a channel closed, in words; never "null". */
  static String describe(ShutdownSignalException cause) {
    if (cause == null) {
      return "it was closed, and the client recorded no reason";
    }
    String missing = missingExchange(cause);
    if (missing != null) {
      // Checked before the first publish, so it was deleted since: what was published to it
      // before the refused message may have been routed.
      return "the broker refused a publish to exchange '"
          + missing
          + "' (404 NOT_FOUND): it was deleted while publishes were in flight; create it again,"
          + " or fix the kind's exchange";
    }
    return String.valueOf(cause.getMessage());
  }

  void close() {
    connection.abort();
  }
}
