package dev.relay.bench;

import com.sun.management.GarbageCollectionNotificationInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.ListenerNotFoundException;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

/**
 * The largest heap in use right after any garbage collection while it is open: the live set's peak,
 * read from the JVM's own GC notifications (the same figures a GC log prints as "after"). Heap in
 * use between collections is mostly garbage not yet collected and says little.
 */
final class HeapWatch implements AutoCloseable, NotificationListener {
  private final Set<String> heapPools = new HashSet<>();
  private final List<NotificationEmitter> emitters = new ArrayList<>();
  private final AtomicLong peakAfterGc = new AtomicLong();
  private final AtomicLong collections = new AtomicLong();

  HeapWatch() {
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP) {
        heapPools.add(pool.getName());
      }
    }
    for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      if (gc instanceof NotificationEmitter emitter) {
        emitter.addNotificationListener(this, null, null);
        emitters.add(emitter);
      }
    }
  }

  @Override
  public void handleNotification(Notification n, Object handback) {
    if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(n.getType())) {
      return;
    }
    GarbageCollectionNotificationInfo info =
        GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData());
    long used = 0;
    for (Map.Entry<String, MemoryUsage> e : info.getGcInfo().getMemoryUsageAfterGc().entrySet()) {
      if (heapPools.contains(e.getKey())) {
        used += e.getValue().getUsed();
      }
    }
    collections.incrementAndGet();
    peakAfterGc.accumulateAndGet(used, Math::max);
  }

  /** The peak heap in use after a collection, MiB; 0 if none ran. */
  double peakMiB() {
    return peakAfterGc.get() / (1024.0 * 1024);
  }

  /** Collections seen. */
  long collections() {
    return collections.get();
  }

  @Override
  public void close() {
    for (NotificationEmitter e : emitters) {
      try {
        e.removeNotificationListener(this);
      } catch (ListenerNotFoundException ignored) {
        // never added: nothing to remove
      }
    }
  }
}
