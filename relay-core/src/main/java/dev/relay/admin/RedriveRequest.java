package dev.relay.admin;

/**
 * Who redrives, why, and which safety checks they explicitly override.
 *
 * <pre>{@code
 * admin.redrive("order-103-ack", RedriveRequest.of("mina", "provider outage over, INC-42"));
 * }</pre>
 *
 * @param actor who asks (1-200 characters), recorded in the redrive audit
 * @param reason why (1-2000 characters), recorded in the redrive audit
 * @param force also redrive work that is not {@code failed} ({@code done}, {@code cancelled} or
 *     {@code ready}); running work is refused even so
 * @param overrideHorizon redrive even when the first attempt is older than the kind's deduplication
 *     horizon: the receiver may no longer recognise the work ID, so a repeat may be applied twice
 */
public record RedriveRequest(String actor, String reason, boolean force, boolean overrideHorizon) {
  /** A plain redrive of failed work within the dedup horizon. */
  public static RedriveRequest of(String actor, String reason) {
    return new RedriveRequest(actor, reason, false, false);
  }

  /** A copy that also redrives work that is not failed. */
  public RedriveRequest forced() {
    return new RedriveRequest(actor, reason, true, overrideHorizon);
  }

  /** A copy that redrives past the kind's deduplication horizon. */
  public RedriveRequest overridingHorizon() {
    return new RedriveRequest(actor, reason, force, true);
  }
}
