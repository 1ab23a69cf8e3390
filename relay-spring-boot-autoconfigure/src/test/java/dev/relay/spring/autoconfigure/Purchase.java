package dev.relay.spring.autoconfigure;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A business row for the JPA tests. */
@Entity
@Table(name = "purchase")
public class Purchase {
  @Id private String id;
  private String item;

  protected Purchase() {}

  Purchase(String id, String item) {
    this.id = id;
    this.item = item;
  }

  String id() {
    return id;
  }

  String item() {
    return item;
  }
}
