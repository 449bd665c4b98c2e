package dev.baton;

/**
 * The grant presented for a protected write or a renewal is no longer the lease's current grant:
 * the lease expired on the database clock, was released, or another owner (or the same owner under
 * a new generation) took it over. A fenced transaction that throws this has been rolled back and
 * wrote nothing. Stop the work the grant protected; do not retry it under the same grant.
 */
public class LeaseLostException extends BatonException {
    private static final long serialVersionUID = 1L;

    private final transient LeaseGrant grant;

    /** The lease under {@code grant} is lost, as {@code message} says. */
    public LeaseLostException(LeaseGrant grant, String message) {
        super(message);
        this.grant = grant;
    }

    /** The grant that is no longer current. */
    public LeaseGrant grant() {
        return grant;
    }
}
