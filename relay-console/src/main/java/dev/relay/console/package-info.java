/**
 * The Relay console: server-rendered pages for the operator (overview, work list, item page) and
 * the audited actions of {@link dev.relay.admin.Admin}, mounted in a Spring MVC application behind
 * its Spring Security. See {@link dev.relay.console.ConsoleAutoConfiguration}.
 */
package dev.relay.console;
