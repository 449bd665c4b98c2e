package dev.baton;

import java.time.Duration;

/** Checks of the API's input, with messages that name the value, the rule and what was given. */
final class Checks {
    private Checks() {}

    /** {@code d} is set and positive (or zero, when {@code zeroAllowed}). */
    static void requirePositive(String what, Duration d, boolean zeroAllowed) {
        if (d == null) {
            throw new IllegalArgumentException(what + " must be set, but was null");
        }
        if (d.isNegative() || (!zeroAllowed && d.isZero())) {
            throw new IllegalArgumentException(
                    what + " must be " + (zeroAllowed ? "zero or positive" : "positive") + ", but was " + d);
        }
    }
}
