package dev.relay.examples.springshop;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;

/** A mail the mailer queued, one per acknowledgement (the table the mailer writes). */
@Entity
public class SentMail {
  @Id private String messageId;

  @Column(nullable = false, columnDefinition = "text")
  private String body;

  protected SentMail() {}
}
