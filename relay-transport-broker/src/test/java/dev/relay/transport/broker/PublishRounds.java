package dev.relay.transport.broker;

import static org.assertj.core.api.Assertions.assertThat;

import dev.relay.HeldClaim;
import dev.relay.Outcome;
import dev.relay.testkit.ManualWorker;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Test support for the broker transports' tests (shipped in this module's test jar): one round of a
 * manual worker driving a transport's batch publish.
 */
public final class PublishRounds {
  private PublishRounds() {}

  /**
   * Claims up to {@code limit} items of {@code kind}, publishes them as one batch with {@code
   * publishAll}, settles each with its outcome (asserting the settlement applied), and returns the
   * outcomes by work ID, in claim order.
   */
  public static Map<String, Outcome> round(
      ManualWorker w, String kind, int limit, Function<List<HeldClaim>, List<Outcome>> publishAll) {
    List<HeldClaim> claims = w.claim(List.of(kind), limit).claimed();
    List<Outcome> outcomes = publishAll.apply(claims);
    Map<String, Outcome> byId = new LinkedHashMap<>();
    for (int i = 0; i < claims.size(); i++) {
      assertThat(w.settle(claims.get(i), outcomes.get(i)).applied()).isTrue();
      byId.put(claims.get(i).workId(), outcomes.get(i));
    }
    return byId;
  }
}
