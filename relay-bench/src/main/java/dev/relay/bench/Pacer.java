package dev.relay.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * An open-loop producer: item {@code i} is due at {@code start + i / rate}; several threads share
 * the schedule so that a slow commit does not delay the items behind it.
 */
final class Pacer {
  /** Produces one item. */
  interface Producer {
    void produce(int index) throws Exception;
  }

  private Pacer() {}

  static void run(int rate, int total, Producer producer) throws InterruptedException {
    int threads = Math.max(2, Math.min(16, rate / 100));
    long start = System.nanoTime() + 20_000_000L;
    double interval = 1e9 / rate;
    AtomicReference<Exception> failure = new AtomicReference<>();
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int first = t;
      Thread th =
          new Thread(
              () -> {
                for (int i = first; i < total && failure.get() == null; i += threads) {
                  RelayBench.parkUntil(start + (long) (i * interval));
                  try {
                    producer.produce(i);
                  } catch (Exception e) {
                    failure.compareAndSet(null, e);
                  }
                }
              },
              "bench-producer-" + t);
      th.start();
      workers.add(th);
    }
    for (Thread th : workers) {
      th.join();
    }
    if (failure.get() != null) {
      throw new IllegalStateException("producer failed", failure.get());
    }
  }
}
