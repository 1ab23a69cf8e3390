package dev.relay.examples.shop;

import java.math.BigDecimal;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a purchase answered: the same on every retry of one request token.
 *
 * @param requestToken the client's token
 * @param orderId the order number
 * @param total the agreed total
 * @param status the order status ({@code pending}: no payment yet)
 * @param workId the acknowledgement's work ID
 * @param replayed true when this answer is the stored one of an earlier identical request
 */
public record Receipt(
    String requestToken,
    long orderId,
    BigDecimal total,
    String status,
    String workId,
    boolean replayed) {

  private static final Pattern FIELD = Pattern.compile("\"(\\w+)\"\\s*:\\s*\"?([^\",}]*)\"?");

  static Receipt fromJson(String token, String json, boolean replayed) {
    long orderId = 0;
    BigDecimal total = null;
    String status = null;
    String workId = null;
    Matcher m = FIELD.matcher(json);
    while (m.find()) {
      switch (m.group(1)) {
        case "order_id":
          orderId = Long.parseLong(m.group(2).trim());
          break;
        case "total":
          total = new BigDecimal(m.group(2).trim());
          break;
        case "status":
          status = m.group(2);
          break;
        case "work_id":
          workId = m.group(2);
          break;
        default:
          break;
      }
    }
    return new Receipt(token, orderId, total, status, workId, replayed);
  }
}
