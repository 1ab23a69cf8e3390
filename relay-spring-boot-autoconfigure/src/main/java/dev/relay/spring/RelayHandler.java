package dev.relay.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Names the kind a bean handles. Two uses:
 *
 * <ul>
 *   <li>On a method of any bean: {@code Outcome on(T message, Claim claim)} or {@code Outcome on(T
 *       message)}. The payload is read as {@code T} (a record or POJO; a raw class, no generic
 *       parameters) with the application's Jackson mapper; a payload that cannot be read ends the
 *       work {@code failed}, naming the type and the parse error, without calling the method.
 *   <li>On a {@link dev.relay.Handler} bean: on its class, or on the {@code @Bean} method that
 *       declares it. The handler gets the claim with its payload as JSON text.
 * </ul>
 *
 * <p>One handler per kind in an application context: a second one for the same kind fails start-up,
 * naming both. An exception thrown by a handler is an attempt whose effect is unknown, handled by
 * the kind's policy ({@code relay.kinds.<kind>.unknown-outcome}).
 */
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface RelayHandler {
  /**
   * The kind of work handled: 1-100 characters from {@code A-Z a-z 0-9 . _ - :}.
   *
   * @return the kind
   */
  String kind();
}
