package dev.baton;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

/** What a {@link LeaderTask} gets for one term of leadership. */
public interface LeaderContext {
    /** The grant of this term; its generation is the fencing token of every write the task makes. */
    LeaseGrant grant();

    /**
     * True once this term is over (stop, lost lease, local deadline). The runner also interrupts the
     * task's thread. A cancelled task must stop and write nothing more; fenced writes are rejected.
     */
    boolean isCancelled();

    /**
     * Waits up to {@code timeout} for cancellation; use it instead of {@code Thread.sleep} between
     * iterations. Returns true if the term was cancelled (or the thread interrupted).
     */
    boolean awaitCancellation(Duration timeout);

    /**
     * Runs {@code work} in a fenced transaction under this term's grant (see {@link Leases#fenced}).
     *
     * @throws LeaseLostException      when the term is cancelled or the grant is no longer current
     * @throws UnknownOutcomeException when the connection failed during COMMIT
     */
    <T> T fenced(FencedWork<T> work);

    /** The fence on the caller's own transaction (see {@link Leases#check}). */
    void check(Connection transaction) throws SQLException;
}
