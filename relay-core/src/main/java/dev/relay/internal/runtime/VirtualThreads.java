package dev.relay.internal.runtime;

import java.lang.reflect.InvocationTargetException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;

/**
 * Virtual threads where the JVM has them (Java 21 and later), reached by reflection so that Relay
 * still builds and runs on its Java 17 baseline: {@code Thread.ofVirtual().name(prefix,
 * 0).factory()} and {@code Executors.newThreadPerTaskExecutor(factory)}.
 */
public final class VirtualThreads {
  private VirtualThreads() {}

  /** Whether this JVM has virtual threads. */
  public static boolean available() {
    return Runtime.version().feature() >= 21;
  }

  /** An executor that starts a virtual thread per task, named {@code prefix0}, {@code prefix1}… */
  static ExecutorService perTaskExecutor(String prefix) {
    try {
      Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
      Class<?> type = Class.forName("java.lang.Thread$Builder");
      builder = type.getMethod("name", String.class, long.class).invoke(builder, prefix, 0L);
      ThreadFactory factory = (ThreadFactory) type.getMethod("factory").invoke(builder);
      return (ExecutorService)
          Executors.class
              .getMethod("newThreadPerTaskExecutor", ThreadFactory.class)
              .invoke(null, factory);
    } catch (ReflectiveOperationException e) {
      Throwable cause = e instanceof InvocationTargetException t ? t.getCause() : e;
      throw new IllegalStateException("virtual threads are not available on this JVM", cause);
    }
  }
}
