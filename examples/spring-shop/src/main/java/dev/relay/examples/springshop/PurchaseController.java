package dev.relay.examples.springshop;

import dev.relay.examples.springshop.Messages.Problem;
import dev.relay.examples.springshop.Messages.PurchaseRequest;
import dev.relay.examples.springshop.Messages.Receipt;
import dev.relay.receiver.PayloadMismatchException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.bind.MissingRequestHeaderException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.core.JacksonException;

/**
 * {@code POST /purchases} with an {@code Idempotency-Key} chosen once per purchase. A refusal is a
 * 4xx with {@code {"error": "..."}} naming the problem: 400 for a request that is not a purchase
 * (no key, a body that is not one in JSON), 422 for one the shop cannot place as asked (an unknown
 * SKU, a quantity out of range) or a key used for another purchase, 409 for too little stock.
 */
@RestController
public class PurchaseController {
  private final Purchases purchases;

  PurchaseController(Purchases purchases) {
    this.purchases = purchases;
  }

  /** Places the order, or returns the first answer for a key already used. */
  @PostMapping("/purchases")
  ResponseEntity<Receipt> purchase(
      @RequestHeader("Idempotency-Key") String key, @RequestBody PurchaseRequest request) {
    return ResponseEntity.status(HttpStatus.CREATED).body(purchases.purchase(key, request));
  }

  @ExceptionHandler(MissingRequestHeaderException.class)
  ResponseEntity<Problem> noKey(MissingRequestHeaderException e) {
    return ResponseEntity.badRequest()
        .body(
            new Problem(
                "the "
                    + e.getHeaderName()
                    + " header is missing: choose one key per purchase and send it with every"
                    + " retry"));
  }

  @ExceptionHandler(HttpMessageNotReadableException.class)
  ResponseEntity<Problem> unreadable(HttpMessageNotReadableException e) {
    // Jackson's own words and the field they are about, without its excerpt of the body or the
    // class names of its path; Spring's words for a missing body.
    String why = e.getMessage();
    if (e.getMostSpecificCause() instanceof JacksonException j) {
      StringBuilder at = new StringBuilder();
      for (JacksonException.Reference r : j.getPath()) {
        if (r.getPropertyName() != null) {
          at.append(at.isEmpty() ? "" : ".").append(r.getPropertyName());
        } else if (r.getIndex() >= 0) {
          at.append('[').append(r.getIndex()).append(']');
        }
      }
      why = (at.isEmpty() ? "" : at + ": ") + j.getOriginalMessage();
    }
    return ResponseEntity.badRequest().body(new Problem("the body is not a purchase: " + why));
  }

  @ExceptionHandler(InvalidPurchaseException.class)
  ResponseEntity<Problem> invalid(InvalidPurchaseException e) {
    return ResponseEntity.unprocessableContent().body(new Problem(e.getMessage()));
  }

  @ExceptionHandler(SoldOutException.class)
  ResponseEntity<Problem> soldOut(SoldOutException e) {
    return ResponseEntity.status(HttpStatus.CONFLICT).body(new Problem(e.getMessage()));
  }

  @ExceptionHandler(PayloadMismatchException.class)
  ResponseEntity<Problem> keyReused(PayloadMismatchException e) {
    return ResponseEntity.unprocessableContent().body(new Problem(e.getMessage()));
  }
}
