package dev.relay.bench;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The no-op job JobRunr runs. JobRunr stores a job as a method reference, so it has to be a public
 * static method of a public class.
 */
public final class JobRunrJobs {
  static final AtomicLong FIRST = new AtomicLong();
  static final AtomicLong COUNT = new AtomicLong();

  private JobRunrJobs() {}

  /** Notes that the job ran. */
  public static void noop(Integer n) {
    FIRST.compareAndSet(0, System.nanoTime());
    COUNT.incrementAndGet();
  }
}
