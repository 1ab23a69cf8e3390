package dev.relay.admin;

import dev.relay.RelayException;

/**
 * A supersede was refused; nothing changed: the old work is {@code done} (its effect happened, so a
 * correction is a compensation with its own identity, not a replacement), it is already superseded
 * by another replacement (one live replacement per work: supersede that replacement to correct it
 * again; {@link #replacementWorkId()} names it), or the replacement's ID is already used by other
 * work.
 */
public final class SupersedeRefusedException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String oldWorkId;
  private final String replacementWorkId;

  /**
   * @param oldWorkId the work that was to be replaced
   * @param message why it was refused
   */
  public SupersedeRefusedException(String oldWorkId, String message) {
    this(oldWorkId, null, message);
  }

  /**
   * @param oldWorkId the work that was to be replaced
   * @param replacementWorkId the replacement that already supersedes it, or {@code null}
   * @param message why it was refused
   */
  public SupersedeRefusedException(String oldWorkId, String replacementWorkId, String message) {
    super(message);
    this.oldWorkId = oldWorkId;
    this.replacementWorkId = replacementWorkId;
  }

  /** The work that was to be replaced. */
  public String oldWorkId() {
    return oldWorkId;
  }

  /**
   * The replacement that already supersedes the old work, when that is why the supersede was
   * refused (supersede it instead to correct the intention again); {@code null} otherwise.
   */
  public String replacementWorkId() {
    return replacementWorkId;
  }
}
