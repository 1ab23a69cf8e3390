package dev.relay.admin;

import dev.relay.RelayException;

/**
 * A supersede was refused; nothing changed: the old work is {@code done} (its effect happened, so a
 * correction is a compensation with its own identity, not a replacement), or the replacement's ID
 * is already used by other work.
 */
public final class SupersedeRefusedException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String oldWorkId;

  /**
   * @param oldWorkId the work that was to be replaced
   * @param message why it was refused
   */
  public SupersedeRefusedException(String oldWorkId, String message) {
    super(message);
    this.oldWorkId = oldWorkId;
  }

  /** The work that was to be replaced. */
  public String oldWorkId() {
    return oldWorkId;
  }
}
