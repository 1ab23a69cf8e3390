package dev.relay.docs.spring;

/** The mail provider of docs/spring.md's handler. */
public interface MailProvider {
  /** Sends a mail once per idempotency key and returns the provider's message ID. */
  String send(String idempotencyKey, String to, String text) throws Exception;
}
