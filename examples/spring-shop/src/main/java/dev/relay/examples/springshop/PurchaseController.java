package dev.relay.examples.springshop;

import dev.relay.examples.springshop.Messages.PurchaseRequest;
import dev.relay.examples.springshop.Messages.Receipt;
import dev.relay.receiver.PayloadMismatchException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/** {@code POST /purchases} with an {@code Idempotency-Key} chosen once per purchase. */
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

  @ExceptionHandler(SoldOutException.class)
  ResponseEntity<String> soldOut(SoldOutException e) {
    return ResponseEntity.status(HttpStatus.CONFLICT).body(e.getMessage());
  }

  @ExceptionHandler(PayloadMismatchException.class)
  ResponseEntity<String> keyReused(PayloadMismatchException e) {
    return ResponseEntity.unprocessableContent().body(e.getMessage());
  }
}
