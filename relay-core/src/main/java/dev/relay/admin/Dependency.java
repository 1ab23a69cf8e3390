package dev.relay.admin;

/**
 * A work item another item waits for ({@link dev.relay.Work#dependsOn}), with what it is now.
 *
 * @param workId the dependency's work ID
 * @param state its state as a row ({@code ready}, {@code running}, {@code done}, {@code failed},
 *     {@code cancelled}), else the final state its tombstone kept, else {@code null} when neither
 *     remains
 * @param superseded whether a replacement names it ({@link Admin#supersede})
 */
public record Dependency(String workId, String state, boolean superseded) {
  /**
   * Why this dependency holds its dependents beyond waiting: {@code dependency_failed}, {@code
   * dependency_cancelled}, {@code dependency_superseded} (cancelled and replaced) or {@code
   * dependency_missing} (purged past its tombstone); {@code null} when it is done or still on its
   * way ({@code ready} or {@code running}). A blocked dependent stays ready until the dependency is
   * redriven and done, or an operator cancels the dependent.
   */
  public String blockedReason() {
    if (state == null) {
      return "dependency_missing";
    }
    return switch (state) {
      case "done", "ready", "running" -> null;
      case "cancelled" -> superseded ? "dependency_superseded" : "dependency_cancelled";
      default -> "dependency_" + state;
    };
  }
}
