package dev.relay.transport.nats;

import dev.relay.InvalidConfigurationException;
import dev.relay.KindPolicy;
import java.time.Duration;

/**
 * Where one kind of work is published on JetStream, and how long a repeat is recognised: a subject,
 * the stream that must store it, and the kind's deduplication horizon. Immutable; validated at
 * construction.
 *
 * <p>The horizon has no default on purpose: it is how long after the first attempt Relay may still
 * send the work ID again (retries, and redrives without an override), so it must not be longer than
 * the time the stream recognises a repeat, its {@code duplicate_window} (two minutes unless the
 * stream sets another). {@link NatsTransport#start()} reads the window from the server and refuses
 * a longer horizon. A consumer that applies messages through Relay's inbox must keep its records at
 * least as long. Register the same horizon with the kind's policy ({@link #policy}), so Relay
 * refuses a retry window that outlasts it.
 *
 * @param kind the kind of work this route publishes
 * @param stream the stream that must store the messages (the publish names it as expected)
 * @param subject the subject published to; the stream must capture it
 * @param dedupHorizon how long a repeat is recognised; at least 1 second
 */
public record NatsRoute(String kind, String stream, String subject, Duration dedupHorizon) {

  /** Validates every setting; the messages name the setting. */
  public NatsRoute {
    if (kind == null || kind.isBlank()) {
      throw new InvalidConfigurationException("kind", "is empty");
    }
    if (stream == null || !stream.matches("[^\\s.*>/\\\\]{1,255}")) {
      throw new InvalidConfigurationException(
          "stream", "of kind " + kind + " is not a valid stream name: " + stream);
    }
    if (subject == null
        || subject.isEmpty()
        || subject.contains("*")
        || subject.contains(">")
        || subject.chars().anyMatch(Character::isWhitespace)) {
      throw new InvalidConfigurationException(
          "subject", "of kind " + kind + " must be a subject without wildcards, was " + subject);
    }
    if (dedupHorizon == null || dedupHorizon.toSeconds() < 1) {
      throw new InvalidConfigurationException(
          "dedupHorizon",
          "of kind "
              + kind
              + " must be set explicitly (the stream's duplicate window or the consumer inbox's"
              + " retention), at least 1 second; was "
              + dedupHorizon);
    }
  }

  /**
   * {@code base} with this route's horizon, and its retry window ({@link KindPolicy#maxElapsed()})
   * shortened to the horizon if it was longer, to register with the kind: {@code
   * Relay.builder(ds).handle(route.kind(), route.policy(KindPolicy.DEFAULT), nats)}. Relay then
   * never retries (and, without an override, never redrives) a work ID after the stream forgot it.
   *
   * @param base the kind's policy otherwise
   * @return the policy with {@link KindPolicy#dedupHorizon()} = {@link #dedupHorizon()}
   */
  public KindPolicy policy(KindPolicy base) {
    KindPolicy p = base.withDedupHorizon(dedupHorizon);
    return p.maxElapsed().compareTo(dedupHorizon) > 0 ? p.withMaxElapsed(dedupHorizon) : p;
  }
}
