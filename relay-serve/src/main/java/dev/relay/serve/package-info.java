/**
 * {@code relay serve} and {@code relay passwd}: a small Spring Boot application that runs the
 * workers, schedules and maintenance loop of a configuration file with the Spring Boot starter's
 * {@code relay.*} properties (or, for one more release, the JSON file of before), the Relay console
 * behind form login for the configured users, and Actuator's health and Prometheus endpoints, on
 * 127.0.0.1 unless configured. Not a library: {@link dev.relay.serve.ServeMain} is its entry point.
 */
package dev.relay.serve;
