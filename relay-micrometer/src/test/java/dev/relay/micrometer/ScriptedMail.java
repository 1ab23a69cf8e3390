package dev.relay.micrometer;

import dev.relay.Claim;
import dev.relay.Handler;
import dev.relay.Outcome;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A handler whose outcome the work ID scripts, so a run moves the meters along known paths: {@code
 * m-fail} fails, {@code m-retry} retries once, {@code m-snooze} snoozes once, {@code m-throw}
 * throws once, anything else is done.
 */
final class ScriptedMail implements Handler {
  private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();

  @Override
  public Outcome handle(Claim claim) {
    int n = calls.computeIfAbsent(claim.workId(), k -> new AtomicInteger()).incrementAndGet();
    switch (claim.workId()) {
      case "m-fail":
        return Outcome.fail("bad address");
      case "m-retry":
        return n == 1 ? Outcome.retry("provider busy") : Outcome.done("ref");
      case "m-snooze":
        return n == 1 ? Outcome.retryAfter(Duration.ofMillis(10), "HTTP 429") : Outcome.done("ref");
      case "m-throw":
        if (n == 1) {
          throw new IllegalStateException("connection reset");
        }
        return Outcome.done("ref");
      default:
        return Outcome.done("ref");
    }
  }
}
