package dev.relay.console;

/**
 * A label and where it leads, for a template to write as a link ({@code href} null: as text).
 *
 * @param label the text shown
 * @param href the link, or null when there is nothing to link to
 */
record Link(String label, String href) {}
