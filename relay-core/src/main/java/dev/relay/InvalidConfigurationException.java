package dev.relay;

/**
 * A setting outside its allowed range, such as a schema name that is not a plain identifier. Raised
 * when the configuration is built, before anything touches the database.
 */
public final class InvalidConfigurationException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String setting;

  /**
   * @param setting the name of the setting
   * @param problem what is wrong and what is allowed
   */
  public InvalidConfigurationException(String setting, String problem) {
    super("invalid setting " + setting + ": " + problem);
    this.setting = setting;
  }

  /** The name of the offending setting. */
  public String setting() {
    return setting;
  }
}
