package dev.baton.spring;

import dev.baton.FencedWork;
import dev.baton.LeaseGrant;
import dev.baton.Leases;
import java.util.Optional;

/**
 * The lease of the {@link BatonSingleRunner} method running on the current thread, for fenced writes.
 */
public final class SingleRunner {
    private static final ThreadLocal<Current> CURRENT = new ThreadLocal<>();

    record Current(LeaseGrant grant, Leases leases) {}

    private SingleRunner() {}

    /** The grant under which the current {@code @BatonSingleRunner} method runs; empty outside one. */
    public static Optional<LeaseGrant> currentGrant() {
        Current c = CURRENT.get();
        return c == null ? Optional.empty() : Optional.of(c.grant());
    }

    /**
     * Runs {@code work} in one transaction that commits only while the current single-runner grant is
     * still the lease's current generation ({@link Leases#fenced}).
     *
     * @throws dev.baton.LeaseLostException if another instance took the lease over
     * @throws IllegalStateException outside a {@code @BatonSingleRunner} method
     */
    public static <T> T fenced(FencedWork<T> work) {
        Current c = CURRENT.get();
        if (c == null) {
            throw new IllegalStateException("SingleRunner.fenced is only available inside a @BatonSingleRunner method "
                    + "(on the thread that runs it)");
        }
        return c.leases().fenced(c.grant(), work);
    }

    static Current enter(Current c) {
        Current previous = CURRENT.get();
        CURRENT.set(c);
        return previous;
    }

    static void exit(Current previous) {
        if (previous == null) {
            CURRENT.remove();
        } else {
            CURRENT.set(previous);
        }
    }
}
