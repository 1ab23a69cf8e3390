package dev.relay.test;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A TCP proxy on 127.0.0.1 in front of a PostgreSQL server, for fault tests: it can cut every
 * connection, stall traffic, delay it, or let a {@code COMMIT} happen at the server and lose its
 * reply.
 *
 * <pre>{@code
 * try (LoopbackProxy proxy = LoopbackProxy.start(db.host(), db.port());
 *     Connection connection = DriverManager.getConnection(db.jdbcUrlVia("127.0.0.1", proxy.port()))) {
 *   connection.setAutoCommit(false);
 *   // ... write something ...
 *   proxy.dropReplyAfterNextCommit();
 *   assertThatThrownBy(connection::commit).isInstanceOf(SQLException.class);
 *   // the commit happened: a direct connection sees the rows
 * }
 * }</pre>
 *
 * <p>It reads the PostgreSQL protocol only as far as it must to find commits and their replies, so
 * clients must not encrypt: {@link TestDatabase#jdbcUrlVia} disables SSL. An SSL or GSS connection
 * that the server accepts is relayed opaquely, and its commits are not recognised. It delays bytes
 * only when asked ({@link #latency}), never reorders them, and does not reconnect anything it
 * closed; connections made after a fault are relayed normally. Each connection uses two threads;
 * close the proxy after the test.
 */
public final class LoopbackProxy implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(LoopbackProxy.class);
  private static final int SSL_REQUEST = 80877103;
  private static final int GSSENC_REQUEST = 80877104;
  // What the server side of a link reads next, and the end signal for both sides.
  private static final int EXPECT_BYTE = 1;
  private static final int EXPECT_MESSAGES = 2;
  private static final int STOP = -1;

  private volatile InetSocketAddress target;
  private final ServerSocket listener;
  private final Set<Link> links = ConcurrentHashMap.newKeySet();
  private final AtomicInteger accepted = new AtomicInteger();
  private final AtomicLong clientBytes = new AtomicLong();
  private final Object stallLock = new Object();
  private boolean stalled; // guarded by stallLock
  private final Object dropLock = new Object();
  private boolean dropArmed; // guarded by dropLock: waiting for a client to send COMMIT
  private long dropsRequested; // guarded by dropLock
  private long dropsDone; // guarded by dropLock
  private volatile boolean closed;
  private volatile long latencyNanos;

  private LoopbackProxy(String bindHost, String targetHost, int targetPort) throws IOException {
    this.target = new InetSocketAddress(targetHost, targetPort);
    this.listener = new ServerSocket(0, 50, InetAddress.getByName(bindHost));
  }

  /**
   * Starts a proxy on 127.0.0.1, on a free port, that relays each accepted connection to the
   * target.
   *
   * @param targetHost the server's host, for example {@link TestDatabase#host()}
   * @param targetPort the server's port, for example {@link TestDatabase#port()}
   * @return the running proxy
   * @throws IOException if no port can be bound
   */
  public static LoopbackProxy start(String targetHost, int targetPort) throws IOException {
    return start("127.0.0.1", targetHost, targetPort);
  }

  /**
   * Starts a proxy on another local address than 127.0.0.1, on a free port: for clients that cannot
   * reach this machine's loopback, such as processes in another network namespace that reach this
   * one over a veth pair.
   *
   * @param bindHost a local address of this machine to listen on
   * @param targetHost the server's host
   * @param targetPort the server's port
   * @return the running proxy
   * @throws IOException if the address cannot be bound
   */
  public static LoopbackProxy start(String bindHost, String targetHost, int targetPort)
      throws IOException {
    LoopbackProxy proxy = new LoopbackProxy(bindHost, targetHost, targetPort);
    daemon(proxy::acceptLoop, "loopback-proxy-" + proxy.port()).start();
    return proxy;
  }

  /**
   * The address the proxy listens on.
   *
   * @return the address, {@code 127.0.0.1} unless the proxy was started on another
   */
  public String host() {
    return listener.getInetAddress().getHostAddress();
  }

  /**
   * The port the proxy listens on, on 127.0.0.1.
   *
   * @return the port
   */
  public int port() {
    return listener.getLocalPort();
  }

  /**
   * How many client connections the proxy has accepted so far.
   *
   * @return the count
   */
  public int connectionsAccepted() {
    return accepted.get();
  }

  /**
   * How many bytes the proxy has read from its clients so far, relayed or (while stalled) held.
   * While stalled, each connection has at most one message read and held, so a rise shows that a
   * client opened a connection or sent on one that had nothing pending.
   *
   * @return the count
   */
  public long bytesFromClients() {
    return clientBytes.get();
  }

  /**
   * Closes every open connection now, on both the client side and the server side. The clients see
   * a broken connection (pgjdbc: SQLState class 08) on their next read or write; the server sees
   * the clients disconnect. The proxy keeps accepting new connections.
   */
  public void dropAll() {
    for (Link link : links) {
      link.close();
    }
  }

  /**
   * Sends new connections to another server from now on and closes every open one, as a virtual IP
   * or DNS name moved to a promoted standby does after a failover.
   *
   * @param targetHost the new server's host
   * @param targetPort the new server's port
   */
  public void retarget(String targetHost, int targetPort) {
    target = new InetSocketAddress(targetHost, targetPort);
    dropAll();
  }

  /**
   * Stops or resumes relaying. While stalled, no bytes are relayed in either direction and no
   * connection is closed, as in a network partition; bytes already relayed stay delivered. New
   * connections are still accepted, but their traffic waits too.
   *
   * @param on true to stall, false to resume
   */
  public void stall(boolean on) {
    synchronized (stallLock) {
      stalled = on;
      stallLock.notifyAll();
    }
  }

  /**
   * Delays traffic in both directions from now on, as a long network path does (this proxy can
   * stand in where the kernel has no {@code netem}). A message that arrives while the proxy waits
   * for nothing in that direction is relayed {@code oneWay} after it was read; messages that were
   * already buffered behind it leave with it, so a request and its reply each take one delay and a
   * round trip takes two. Messages held when the latency is lowered still wait out the delay they
   * were given. {@link Duration#ZERO} turns it off; {@link #stall} and the other faults still
   * apply.
   *
   * @param oneWay the delay per direction, zero or positive
   * @throws IllegalArgumentException if {@code oneWay} is negative
   */
  public void latency(Duration oneWay) {
    if (oneWay.isNegative()) {
      throw new IllegalArgumentException("latency must be zero or positive, was " + oneWay);
    }
    latencyNanos = oneWay.toNanos();
  }

  /**
   * Arms the loss of one commit reply. The next {@code COMMIT} that any client sends through the
   * proxy (a simple query, or an extended-protocol statement, also a prepared one) is relayed to
   * the server; when the server's reply to it arrives (CommandComplete with tag {@code COMMIT}),
   * the reply is not relayed: that connection is closed on both sides instead. The transaction is
   * committed, but the client cannot know it. If the transaction rolls back instead, the next
   * commit is armed again. Calling this while a drop is pending has no further effect.
   */
  public void dropReplyAfterNextCommit() {
    synchronized (dropLock) {
      if (dropsDone < dropsRequested) {
        return;
      }
      dropsRequested++;
      dropArmed = true;
    }
  }

  /**
   * Waits until the commit reply armed by {@link #dropReplyAfterNextCommit()} has been dropped.
   *
   * @param timeout how long to wait at most
   * @return true if every drop requested so far has happened (also if none was requested), false if
   *     the time ran out
   * @throws InterruptedException if the waiting thread is interrupted
   */
  public boolean awaitCommitReplyDropped(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    synchronized (dropLock) {
      while (dropsDone < dropsRequested) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        TimeUnit.NANOSECONDS.timedWait(dropLock, left);
      }
      return true;
    }
  }

  /** Stops accepting connections and closes every open one. */
  @Override
  public void close() {
    closed = true;
    closeQuietly(listener);
    dropAll();
  }

  private void acceptLoop() {
    int number = 0;
    while (!closed) {
      Socket client;
      try {
        client = listener.accept();
      } catch (IOException e) {
        if (!closed) {
          LOG.warn("Proxy on port {} stopped accepting", port(), e);
        }
        return;
      }
      accepted.incrementAndGet();
      Socket server = new Socket();
      try {
        client.setTcpNoDelay(true);
        server.setTcpNoDelay(true);
        server.connect(target, (int) Duration.ofSeconds(30).toMillis());
      } catch (IOException e) {
        LOG.debug("Proxy cannot reach {}", target, e);
        closeQuietly(client);
        closeQuietly(server);
        continue;
      }
      Link link = new Link(client, server);
      links.add(link);
      if (closed) {
        link.close();
        return;
      }
      number++;
      String name = "loopback-proxy-" + port() + "-" + number;
      daemon(link::relayClientToServer, name + "-up").start();
      daemon(link::relayServerToClient, name + "-down").start();
    }
  }

  /** A client socket and the server socket it is relayed to. */
  private final class Link {
    private final Socket client;
    private final Socket server;
    private final BlockingQueue<Integer> serverExpects = new LinkedBlockingQueue<>();
    private final BlockingQueue<Integer> negotiationAnswers = new LinkedBlockingQueue<>();
    private final Set<String> commitStatements = new HashSet<>(); // client thread only
    private final AtomicBoolean isClosed = new AtomicBoolean();
    private volatile boolean dropCommitReply;

    Link(Socket client, Socket server) {
      this.client = client;
      this.server = server;
    }

    void relayClientToServer() {
      try {
        DataInputStream in = new DataInputStream(new BufferedInputStream(client.getInputStream()));
        OutputStream out = server.getOutputStream();
        Pace pace = new Pace();
        // Startup packets have no type byte. An SSL or GSS request gets a one-byte answer,
        // after which the client either sends a new startup packet or starts encrypting.
        while (true) {
          pace.beforeRead(in);
          int length = in.readInt();
          byte[] frame = readFrame(in, -1, length);
          pace.afterRead();
          clientBytes.addAndGet(frame.length);
          int code = length >= 8 ? ByteBuffer.wrap(frame, 4, 4).getInt() : 0;
          boolean negotiation = code == SSL_REQUEST || code == GSSENC_REQUEST;
          serverExpects.put(negotiation ? EXPECT_BYTE : EXPECT_MESSAGES);
          relay(out, frame, pace);
          if (!negotiation) {
            break;
          }
          int answer = negotiationAnswers.take();
          if (answer == STOP) {
            return;
          }
          if (answer == 'S' || answer == 'G') {
            relayOpaquely(in, out, pace);
            return;
          }
        }
        while (true) {
          pace.beforeRead(in);
          int type = in.read();
          if (type < 0) {
            return;
          }
          byte[] frame = readFrame(in, type, in.readInt());
          pace.afterRead();
          clientBytes.addAndGet(frame.length);
          noticeCommit(type, frame);
          relay(out, frame, pace);
        }
      } catch (IOException e) {
        LOG.trace("Client side ended", e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        close();
      }
    }

    void relayServerToClient() {
      try {
        DataInputStream in = new DataInputStream(new BufferedInputStream(server.getInputStream()));
        OutputStream out = client.getOutputStream();
        Pace pace = new Pace();
        while (true) {
          int expected = serverExpects.take();
          if (expected == STOP) {
            return;
          }
          if (expected == EXPECT_MESSAGES) {
            break;
          }
          pace.beforeRead(in);
          int answer = in.read();
          if (answer < 0) {
            return;
          }
          pace.afterRead();
          relay(out, new byte[] {(byte) answer}, pace);
          negotiationAnswers.put(answer);
          if (answer == 'S' || answer == 'G') {
            relayOpaquely(in, out, pace);
            return;
          }
        }
        while (true) {
          pace.beforeRead(in);
          int type = in.read();
          if (type < 0) {
            return;
          }
          byte[] frame = readFrame(in, type, in.readInt());
          pace.afterRead();
          if (dropCommitReply && type == 'C' && cString(frame, 5).equals("COMMIT")) {
            // The server has committed; the client never learns it.
            dropCommitReply = false;
            close();
            synchronized (dropLock) {
              dropsDone++;
              dropLock.notifyAll();
            }
            return;
          }
          if (dropCommitReply && type == 'Z' && frame.length > 5 && frame[5] == 'I') {
            // Idle without a COMMIT tag: the transaction rolled back; wait for the next commit.
            dropCommitReply = false;
            rearm();
          }
          relay(out, frame, pace);
        }
      } catch (IOException e) {
        LOG.trace("Server side ended", e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        close();
      }
    }

    /** Marks this link when the client sends COMMIT while a drop is armed. */
    private void noticeCommit(int type, byte[] frame) {
      boolean commit = false;
      if (type == 'Q') {
        commit = isCommit(cString(frame, 5));
      } else if (type == 'P') {
        String statement = cString(frame, 5);
        commit = isCommit(cString(frame, 5 + utf8Length(statement) + 1));
        if (!statement.isEmpty()) {
          if (commit) {
            commitStatements.add(statement);
          } else {
            commitStatements.remove(statement);
          }
        }
      } else if (type == 'B') {
        String portal = cString(frame, 5);
        commit = commitStatements.contains(cString(frame, 5 + utf8Length(portal) + 1));
      } else if (type == 'C' && frame.length > 5 && frame[5] == 'S') {
        commitStatements.remove(cString(frame, 6));
      }
      if (commit) {
        synchronized (dropLock) {
          if (dropArmed && !dropCommitReply) {
            dropArmed = false;
            dropCommitReply = true;
          }
        }
      }
    }

    private void relay(OutputStream out, byte[] bytes, Pace pace)
        throws IOException, InterruptedException {
      pace.awaitDue();
      awaitRelaying();
      out.write(bytes);
    }

    private void relayOpaquely(InputStream in, OutputStream out, Pace pace)
        throws IOException, InterruptedException {
      byte[] buffer = new byte[8192];
      while (true) {
        pace.beforeRead(in);
        int n = in.read(buffer);
        if (n < 0) {
          return;
        }
        pace.afterRead();
        pace.awaitDue();
        awaitRelaying();
        out.write(buffer, 0, n);
      }
    }

    private void awaitRelaying() throws InterruptedException {
      synchronized (stallLock) {
        while (stalled && !isClosed.get()) {
          stallLock.wait();
        }
      }
    }

    void close() {
      if (!isClosed.compareAndSet(false, true)) {
        return;
      }
      links.remove(this);
      closeQuietly(client);
      closeQuietly(server);
      serverExpects.offer(STOP);
      negotiationAnswers.offer(STOP);
      synchronized (stallLock) {
        stallLock.notifyAll();
      }
      if (dropCommitReply) {
        // Closed before the commit's reply came: the armed drop waits for the next commit.
        dropCommitReply = false;
        rearm();
      }
    }
  }

  /**
   * When a message of one direction may leave under {@link #latency}: one delay after it was read
   * if nothing was waiting to be read before it, else with the message it was buffered behind. Used
   * by that direction's thread only.
   */
  private final class Pace {
    private boolean fresh;
    private long due;

    void beforeRead(InputStream in) throws IOException {
      fresh = in.available() == 0; // the latency may be set while this thread waits to read
    }

    void afterRead() {
      long latency = latencyNanos;
      if (fresh && latency > 0) {
        due = System.nanoTime() + latency;
      }
    }

    void awaitDue() throws InterruptedException {
      long left = due - System.nanoTime();
      if (left > 0) {
        TimeUnit.NANOSECONDS.sleep(left);
      }
    }
  }

  private void rearm() {
    synchronized (dropLock) {
      if (dropsDone < dropsRequested) {
        dropArmed = true;
      }
    }
  }

  /** Reads the rest of a message whose type byte (or -1 for none) and length were read. */
  private static byte[] readFrame(DataInputStream in, int type, int length) throws IOException {
    if (length < 4) {
      throw new IOException("Invalid message length " + length);
    }
    int header = type < 0 ? 0 : 1;
    byte[] frame = new byte[header + length];
    if (type >= 0) {
      frame[0] = (byte) type;
    }
    ByteBuffer.wrap(frame, header, 4).putInt(length);
    in.readFully(frame, header + 4, length - 4);
    return frame;
  }

  /** The NUL-terminated UTF-8 string at the offset, or "" past the end. */
  private static String cString(byte[] frame, int offset) {
    int end = offset;
    while (end < frame.length && frame[end] != 0) {
      end++;
    }
    return offset >= frame.length
        ? ""
        : new String(frame, offset, end - offset, StandardCharsets.UTF_8);
  }

  private static int utf8Length(String text) {
    return text.getBytes(StandardCharsets.UTF_8).length;
  }

  private static boolean isCommit(String sql) {
    String text = sql.trim();
    if (text.endsWith(";")) {
      text = text.substring(0, text.length() - 1).trim();
    }
    return text.toUpperCase(Locale.ROOT).equals("COMMIT");
  }

  private static Thread daemon(Runnable task, String name) {
    Thread thread = new Thread(task, name);
    thread.setDaemon(true);
    return thread;
  }

  private static void closeQuietly(AutoCloseable closeable) {
    try {
      closeable.close();
    } catch (Exception e) {
      LOG.trace("Ignored failure to close {}", closeable, e);
    }
  }
}
