package dev.relay.admin;

import dev.relay.CancelResult;

/**
 * What a supersede did, all in one transaction: the replacement was enqueued under its new ID, the
 * link recorded, and the old work cancelled.
 *
 * @param oldWorkId the replaced work
 * @param newWorkId the replacement
 * @param oldWork what the cancel of the old work did: {@code CANCELLED} (it was ready), {@code
 *     CANCEL_REQUESTED} (it was running; its worker may still finish it, and an in-flight call is
 *     not recalled) or {@code ALREADY_FINISHED} (it had failed or been cancelled)
 * @param repeated whether this exact supersede had already been recorded (an idempotent repeat;
 *     nothing changed)
 */
public record SupersedeResult(
    String oldWorkId, String newWorkId, CancelResult.Status oldWork, boolean repeated) {}
