package dev.relay.internal.admin;

import dev.relay.admin.InvalidAdminRequestException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Base64;

/**
 * A keyset position in the work list: the (created_at, work_id) of the last item returned. Encoded
 * as URL-safe Base64 so callers treat it as opaque.
 *
 * @param createdAt the last item's creation time (microsecond precision, as stored)
 * @param workId the last item's work ID
 */
public record Cursor(Instant createdAt, String workId) {
  /** The opaque text form. */
  public String encode() {
    String raw = createdAt + "\n" + workId;
    return Base64.getUrlEncoder()
        .withoutPadding()
        .encodeToString(raw.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Parses {@link #encode()}'s output; anything else is an {@link InvalidAdminRequestException}.
   */
  public static Cursor decode(String text) {
    try {
      String raw = new String(Base64.getUrlDecoder().decode(text), StandardCharsets.UTF_8);
      int nl = raw.indexOf('\n');
      if (nl < 0 || nl == raw.length() - 1) {
        throw new IllegalArgumentException("no separator");
      }
      return new Cursor(Instant.parse(raw.substring(0, nl)), raw.substring(nl + 1));
    } catch (IllegalArgumentException | DateTimeParseException e) {
      throw new InvalidAdminRequestException(
          "cursor", "is not a cursor returned by list (pass null for the first page)");
    }
  }
}
