package dev.relay;

/**
 * A setting outside its allowed range, such as a schema name that is not a plain identifier. Raised
 * when the configuration is built, before anything touches the database.
 */
public final class InvalidConfigurationException extends RelayException {
  private static final long serialVersionUID = 1L;

  private final String setting;
  private final String problem;

  /**
   * @param setting the name of the setting
   * @param problem what is wrong and what is allowed
   */
  public InvalidConfigurationException(String setting, String problem) {
    super("invalid setting " + setting + ": " + problem);
    this.setting = setting;
    this.problem = problem;
  }

  /** The name of the offending setting. */
  public String setting() {
    return setting;
  }

  /**
   * What is wrong and what is allowed, without the setting's name: for callers that name the
   * setting in their own terms (a property, a config key).
   */
  public String problem() {
    return problem;
  }
}
