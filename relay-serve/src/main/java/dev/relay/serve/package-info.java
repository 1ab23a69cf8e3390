/**
 * {@code relay serve} and {@code relay passwd}: a small Spring Boot application that runs the
 * workers, schedules and maintenance loop of a JSON config file, the Relay console behind form
 * login for the config's users, and Actuator's health and Prometheus endpoints, on 127.0.0.1 unless
 * configured. Not a library: {@link dev.relay.serve.ServeMain} is its entry point.
 */
package dev.relay.serve;
