package dev.relay.examples.springshop;

import java.util.List;

/** The shop's request, receipt and acknowledgement messages. */
final class Messages {
  private Messages() {}

  /** A purchase: the customer and the lines. */
  record PurchaseRequest(String customer, List<Line> lines) {}

  /** One line of a purchase; a missing quantity is null, refused as missing. */
  record Line(String sku, Integer quantity) {}

  /** The answer to a purchase, the same for every retry with the same key. */
  record Receipt(long order, String total, String work) {}

  /** Why a request was refused, as the body of a 4xx answer: {@code {"error": "..."}}. */
  record Problem(String error) {}

  /** The acknowledgement's payload: the order was received; payment is still pending. */
  record OrderReceived(long orderId, String customer, String total, String message) {}
}
