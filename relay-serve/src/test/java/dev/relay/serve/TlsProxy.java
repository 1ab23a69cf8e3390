package dev.relay.serve;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

/**
 * A TLS-terminating reverse proxy for tests, on the JDK's {@link SSLServerSocket} with a
 * self-signed certificate made by the JDK's {@code keytool} for {@code 127.0.0.1}: it accepts HTTPS
 * on a free loopback port and forwards each request over plain HTTP to a backend, as nginx's usual
 * {@code proxy_set_header} lines do: the client's address appended to {@code X-Forwarded-For},
 * {@code X-Forwarded-Proto: https} and {@code X-Forwarded-Port} set (what the client sent of them
 * is replaced), {@code Host} kept. It connects to the backend from a loopback address of its own
 * ({@code 127.0.0.2}), so that a server can trust the proxy's address without trusting a client on
 * {@code 127.0.0.1}. One request per connection ({@code Connection: close}).
 */
final class TlsProxy implements AutoCloseable {
  /** The address the proxy connects to the backend from. */
  static final String PROXY_ADDRESS = "127.0.0.2";

  private static final char[] PASSWORD = "relay-test".toCharArray();

  private final SSLServerSocket server;
  private final int backendPort;
  private final ExecutorService threads = Executors.newCachedThreadPool(daemon());

  private TlsProxy(SSLServerSocket server, int backendPort) {
    this.server = server;
    this.backendPort = backendPort;
  }

  /** Starts a proxy to {@code 127.0.0.1:backendPort}, its key pair made in {@code dir}. */
  static TlsProxy start(Path dir, int backendPort) throws Exception {
    Path store = dir.resolve("proxy.p12");
    Process keytool =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair",
                "-alias",
                "proxy",
                "-keyalg",
                "EC",
                "-groupname",
                "secp256r1",
                "-dname",
                "CN=127.0.0.1",
                "-ext",
                "SAN=ip:127.0.0.1",
                "-validity",
                "2",
                "-storetype",
                "PKCS12",
                "-keystore",
                store.toString(),
                "-storepass",
                new String(PASSWORD))
            .redirectErrorStream(true)
            .start();
    String output = new String(keytool.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!keytool.waitFor(2, TimeUnit.MINUTES) || keytool.exitValue() != 0) {
      throw new IllegalStateException("keytool failed: " + output);
    }
    KeyStore keys = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(store)) {
      keys.load(in, PASSWORD);
    }
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(keys, PASSWORD);
    SSLContext tls = SSLContext.getInstance("TLS");
    tls.init(kmf.getKeyManagers(), null, null);
    SSLServerSocket server =
        (SSLServerSocket)
            tls.getServerSocketFactory()
                .createServerSocket(0, 50, InetAddress.getLoopbackAddress());
    TlsProxy proxy = new TlsProxy(server, backendPort);
    proxy.threads.execute(proxy::accept);
    return proxy;
  }

  /** An SSL context that trusts any certificate: for a client of this proxy only. */
  static SSLContext trustingClient() throws Exception {
    TrustManager any =
        new X509TrustManager() {
          @Override
          public void checkClientTrusted(java.security.cert.X509Certificate[] c, String a) {}

          @Override
          public void checkServerTrusted(java.security.cert.X509Certificate[] c, String a) {}

          @Override
          public java.security.cert.X509Certificate[] getAcceptedIssuers() {
            return new java.security.cert.X509Certificate[0];
          }
        };
    SSLContext tls = SSLContext.getInstance("TLS");
    tls.init(null, new TrustManager[] {any}, null);
    return tls;
  }

  /** {@code https://127.0.0.1:PORT}. */
  String base() {
    return "https://127.0.0.1:" + server.getLocalPort();
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        threads.execute(() -> forward(client));
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private void forward(Socket client) {
    try (client;
        Socket backend = new Socket()) {
      client.setSoTimeout(60_000);
      InputStream in = client.getInputStream();
      String head = head(in);
      if (head == null) {
        return; // a connection that sent nothing (a browser's preconnect)
      }
      List<String> lines = new ArrayList<>(List.of(head.split("\r\n")));
      String requestLine = lines.remove(0);
      String forwardedFor = null;
      long length = 0;
      StringBuilder out = new StringBuilder(requestLine).append("\r\n");
      for (String line : lines) {
        int colon = line.indexOf(':');
        String name = colon < 0 ? line : line.substring(0, colon).strip().toLowerCase(Locale.ROOT);
        String value = colon < 0 ? "" : line.substring(colon + 1).strip();
        switch (name) {
          case "x-forwarded-for" -> forwardedFor = value;
          case "x-forwarded-proto", "x-forwarded-port", "connection", "keep-alive" -> {}
          default -> {
            if (name.equals("content-length")) {
              length = Long.parseLong(value);
            }
            out.append(line).append("\r\n");
          }
        }
      }
      String clientAddress = client.getInetAddress().getHostAddress();
      out.append("X-Forwarded-For: ")
          .append(forwardedFor == null ? clientAddress : forwardedFor + ", " + clientAddress)
          .append("\r\n")
          .append("X-Forwarded-Proto: https\r\n")
          .append("X-Forwarded-Port: ")
          .append(server.getLocalPort())
          .append("\r\n")
          .append("Connection: close\r\n\r\n");
      backend.bind(new InetSocketAddress(PROXY_ADDRESS, 0));
      backend.connect(new InetSocketAddress("127.0.0.1", backendPort), 10_000);
      backend.setSoTimeout(60_000);
      OutputStream toBackend = backend.getOutputStream();
      toBackend.write(out.toString().getBytes(StandardCharsets.ISO_8859_1));
      toBackend.write(in.readNBytes((int) length));
      toBackend.flush();
      backend.getInputStream().transferTo(client.getOutputStream());
      client.getOutputStream().flush();
    } catch (IOException | RuntimeException e) {
      // The client or the backend went away: nothing to forward.
    }
  }

  /** The request head up to the blank line, or null at the end of the stream. */
  private static String head(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int matched = 0;
    byte[] end = {'\r', '\n', '\r', '\n'};
    int c;
    while ((c = in.read()) >= 0) {
      b.write(c);
      matched = c == end[matched] ? matched + 1 : c == '\r' ? 1 : 0;
      if (matched == 4) {
        String s = b.toString(StandardCharsets.ISO_8859_1);
        return s.substring(0, s.length() - 4);
      }
      if (b.size() > 64 * 1024) {
        throw new IOException("request head too large");
      }
    }
    return null;
  }

  private static java.util.concurrent.ThreadFactory daemon() {
    return r -> {
      Thread t = new Thread(r, "tls-proxy");
      t.setDaemon(true);
      return t;
    };
  }

  @Override
  public void close() throws IOException {
    server.close();
    threads.shutdownNow();
  }
}
