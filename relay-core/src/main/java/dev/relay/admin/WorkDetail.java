package dev.relay.admin;

import java.time.Instant;
import java.util.List;

/**
 * One work item with everything recorded about it: the row, its payload and result, the attempt
 * history, the redrive and cancel audits, and the {@code supersedes} links in both directions.
 *
 * @param item the row
 * @param payload the payload as JSON text
 * @param result the result a done handler recorded (JSON text), or {@code null}
 * @param milestone what the receiver's acceptance meant ({@code accepted}, {@code queued}, {@code
 *     delivered}), or {@code null}
 * @param attempts claim generations that ended other than in plain success, oldest first
 * @param redrives redrives, oldest first
 * @param cancels cancel calls, oldest first
 * @param supersedes the item this one replaces, as links (at most one)
 * @param supersededBy the items that replace this one
 */
public record WorkDetail(
    WorkItem item,
    String payload,
    String result,
    String milestone,
    List<Attempt> attempts,
    List<Redrive> redrives,
    List<Cancel> cancels,
    List<SupersedeLink> supersedes,
    List<SupersedeLink> supersededBy) {
  /** Copies the lists. */
  public WorkDetail {
    attempts = List.copyOf(attempts);
    redrives = List.copyOf(redrives);
    cancels = List.copyOf(cancels);
    supersedes = List.copyOf(supersedes);
    supersededBy = List.copyOf(supersededBy);
  }

  /**
   * One claim generation that ended other than in plain success.
   *
   * @param generation the claim generation
   * @param worker the worker that held it, or {@code null}
   * @param claimedAt when it was claimed, or {@code null} when unknown
   * @param endedAt when it ended
   * @param ending {@code retry}, {@code failed}, {@code lease_expired}, {@code stale_write}, {@code
   *     cancelled}, {@code released} or {@code abandoned}
   * @param errorKind the error kind, or {@code null}
   * @param error the error text, or {@code null}
   * @param outcome the evidence of the effect, or {@code null}
   * @param action for an {@code abandoned} ending, the outcome the worker gave up ({@code
   *     complete}, {@code retry}, {@code fail}, {@code cancelled} or {@code release}); otherwise
   *     {@code null}
   * @param receiverRef for an {@code abandoned} ending, the receiver's reference the given-up
   *     outcome carried, or {@code null}
   */
  public record Attempt(
      long generation,
      String worker,
      Instant claimedAt,
      Instant endedAt,
      String ending,
      String errorKind,
      String error,
      String outcome,
      String action,
      String receiverRef) {}

  /**
   * One redrive.
   *
   * @param actor who redrove
   * @param reason why
   * @param at when
   * @param fromState the state before
   * @param fromGeneration the claim generation before
   * @param forced whether an override was needed (not failed, or past the dedup horizon)
   */
  public record Redrive(
      String actor,
      String reason,
      Instant at,
      String fromState,
      long fromGeneration,
      boolean forced) {}

  /**
   * One cancel call.
   *
   * @param actor who asked
   * @param reason why
   * @param at when
   * @param fromState the state found, or {@code null}
   * @param result {@code cancelled}, {@code cancel_requested}, {@code already_finished} or {@code
   *     not_found}
   */
  public record Cancel(String actor, String reason, Instant at, String fromState, String result) {}

  /**
   * A corrected intention's link to the one it replaces.
   *
   * @param workId the replacement
   * @param supersedesWorkId the replaced work
   * @param actor who recorded it
   * @param reason why
   * @param at when
   */
  public record SupersedeLink(
      String workId, String supersedesWorkId, String actor, String reason, Instant at) {}
}
