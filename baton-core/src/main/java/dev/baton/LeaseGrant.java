package dev.baton;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * Proof that {@code owner} was granted lease {@code name} under fencing token {@code generation}.
 * A grant is a claim to check, never a permission: every protected write must present it to
 * {@link Leases#check} (or run through {@link Leases#fenced}) inside its own transaction.
 *
 * @param name        the lease name
 * @param owner       the owner id that holds it
 * @param generation  the fencing token; strictly increases on every change of ownership
 * @param acquiredAt  when this generation began, on the database clock
 * @param expiresAt   when the lease expires unless renewed, on the database clock
 * @param ttl         the time to live the lease was last granted or renewed with
 * @param confirmedSendNanos the {@link System#nanoTime()}-style reading taken just before the call that
 *                    acquired or last renewed this grant was sent; the holder's local deadline is counted
 *                    from here, because the database may have started the TTL any time after it
 */
public record LeaseGrant(
        String name,
        String owner,
        long generation,
        Instant acquiredAt,
        Instant expiresAt,
        Duration ttl,
        long confirmedSendNanos) {

    /** Checks the grant's values. */
    public LeaseGrant {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(acquiredAt, "acquiredAt");
        Objects.requireNonNull(expiresAt, "expiresAt");
        Objects.requireNonNull(ttl, "ttl");
    }

    /**
     * The local monotonic deadline after which the holder can no longer prove it owns the lease:
     * half the TTL after the send time of the last confirmed acquire or renewal. Safety never rests on
     * it (the database fence does), but work that stops here stops before anyone else can be let in.
     */
    public long localDeadlineNanos() {
        return confirmedSendNanos + ttl.toNanos() / 2;
    }

    @Override
    public String toString() {
        return "LeaseGrant[" + name + " owner=" + owner + " generation=" + generation + " expiresAt=" + expiresAt + "]";
    }
}
