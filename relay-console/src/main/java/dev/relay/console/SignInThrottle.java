package dev.relay.console;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Locale;

/**
 * Counts failed sign-ins per user name and per client address, and refuses further attempts once
 * either has reached its limit within the window: at most {@code maxPerUser} failures for one user
 * name and {@code maxPerAddress} from one address in any window of {@code window}. A refused
 * attempt is not checked at all (not even a right password gets through, and no password hash is
 * computed), and it is not counted. The refusal ends when the oldest of the counted failures leaves
 * the window. A successful sign-in resets nothing: failures only age out, so an attacker who also
 * holds an account cannot sign in between guesses to wipe the counts.
 *
 * <p>Memory is bounded: each table keeps at most {@code tracked} keys with at most {@code max}
 * instants each. When a table is full, keys whose failures have all left the window go first, then
 * the key whose latest failure is oldest (its count starts again). User names are kept lower-cased
 * (so {@code Olga} and {@code olga} count together) and cut to 200 characters. Thread-safe.
 */
final class SignInThrottle {
  /** Longest user name kept as a key; a longer one counts under its first 200 characters. */
  static final int MAX_NAME = 200;

  private final int maxPerUser;
  private final int maxPerAddress;
  private final Duration window;
  private final int tracked;
  private final InstantSource clock;
  private final Table users;
  private final Table addresses;

  /** Why an attempt is refused, and until when. */
  record Refusal(boolean user, boolean address, Instant until) {
    /** Whole seconds until the refusal ends, at least 1 (for {@code Retry-After}). */
    long seconds(Instant now) {
      long ms = Duration.between(now, until).toMillis();
      return Math.max(1, (ms + 999) / 1000);
    }
  }

  /** The counts after a failure: how many failures in the window, of how many allowed. */
  record Failure(int user, int maxUser, int address, int maxAddress) {
    /** Whether this failure reached a limit, so the next attempt is refused. */
    boolean locks() {
      return user >= maxUser || address >= maxAddress;
    }
  }

  SignInThrottle(
      int maxPerUser, int maxPerAddress, Duration window, int tracked, InstantSource clock) {
    this.maxPerUser = maxPerUser;
    this.maxPerAddress = maxPerAddress;
    this.window = window;
    this.tracked = tracked;
    this.clock = clock;
    this.users = new Table(maxPerUser);
    this.addresses = new Table(maxPerAddress);
  }

  static SignInThrottle of(ConsoleProperties.SignIn p, InstantSource clock) {
    return new SignInThrottle(
        p.getMaxFailuresPerUser(),
        p.getMaxFailuresPerAddress(),
        p.getWindow(),
        p.getTracked(),
        clock);
  }

  /** The key a user name counts under. */
  static String userKey(String name) {
    String n = name == null ? "" : name.strip().toLowerCase(Locale.ROOT);
    return n.length() > MAX_NAME ? n.substring(0, MAX_NAME) : n;
  }

  Instant now() {
    return clock.instant();
  }

  /** Why an attempt for {@code user} from {@code address} is refused now, or null. */
  synchronized Refusal refusal(String user, String address) {
    long now = clock.millis();
    long byUser = users.lockedUntil(userKey(user), now);
    long byAddress = addresses.lockedUntil(address, now);
    if (byUser == 0 && byAddress == 0) {
      return null;
    }
    return new Refusal(
        byUser != 0, byAddress != 0, Instant.ofEpochMilli(Math.max(byUser, byAddress)));
  }

  /** Counts a failed attempt for {@code user} from {@code address}. */
  synchronized Failure failed(String user, String address) {
    long now = clock.millis();
    int u = users.add(userKey(user), now);
    int a = addresses.add(address, now);
    return new Failure(u, maxPerUser, a, maxPerAddress);
  }

  /** Keys held now, user names and addresses (for tests: the bound on memory). */
  synchronized int size() {
    return users.keys.size() + addresses.keys.size();
  }

  Duration window() {
    return window;
  }

  /**
   * Keys with their latest failures, in the order of their latest failure (a failure moves its key
   * to the end), so the first key is the one to let go when full.
   */
  private final class Table {
    private final int max;
    private final LinkedHashMap<String, long[]> keys = new LinkedHashMap<>();

    Table(int max) {
      this.max = max;
    }

    /** Until when (epoch ms) {@code key} is refused, or 0. */
    long lockedUntil(String key, long now) {
      long[] ring = keys.get(key);
      if (ring == null) {
        return 0;
      }
      long oldest = oldest(ring, now);
      return live(ring, now) >= max ? oldest + window.toMillis() : 0;
    }

    /** Adds a failure at {@code now}; returns the failures of {@code key} in the window. */
    int add(String key, long now) {
      long[] ring = keys.remove(key);
      if (ring == null) {
        makeRoom();
        ring = new long[max];
        Arrays.fill(ring, Long.MIN_VALUE);
      }
      // The ring keeps the newest max instants: replace the oldest (an unused slot first).
      int slot = 0;
      for (int i = 1; i < ring.length; i++) {
        if (ring[i] < ring[slot]) {
          slot = i;
        }
      }
      ring[slot] = now;
      keys.put(key, ring);
      return live(ring, now);
    }

    /**
     * Lets go of the first keys until one more fits. Keys are in the order of their latest failure,
     * so keys whose failures all left the window come first, then the least recently failing.
     */
    private void makeRoom() {
      Iterator<String> it = keys.keySet().iterator();
      while (keys.size() >= tracked && it.hasNext()) {
        it.next();
        it.remove();
      }
    }

    private int live(long[] ring, long now) {
      int n = 0;
      for (long t : ring) {
        if (t > now - window.toMillis()) {
          n++;
        }
      }
      return n;
    }

    private long oldest(long[] ring, long now) {
      long oldest = Long.MAX_VALUE;
      for (long t : ring) {
        if (t > now - window.toMillis() && t < oldest) {
          oldest = t;
        }
      }
      return oldest;
    }
  }
}
