package dev.baton.testkit;

import java.util.ArrayList;
import java.util.List;

/**
 * Thread-safe collector of a fenced-mutex history ({@link Grant}s and committed {@link Write}s)
 * for {@link FencedMutexChecker}. Events may be recorded from any thread in any order; the checker
 * relies on generations and {@link Write#seq()}, not on recording order.
 */
public final class HistoryRecorder {

    private final List<Grant> grants = new ArrayList<>(); // guarded by this
    private final List<Write> writes = new ArrayList<>(); // guarded by this

    /** Creates an empty recorder. */
    public HistoryRecorder() {}

    /**
     * Records that {@code owner} was granted {@code lease} at {@code generation}.
     *
     * @param lease the lease name
     * @param generation the fencing token granted
     * @param owner the owner
     * @return the recorded event
     * @throws IllegalArgumentException if {@code lease} or {@code owner} is blank
     */
    public Grant grant(String lease, long generation, String owner) {
        Grant g = new Grant(lease, generation, owner);
        synchronized (this) {
            grants.add(g);
        }
        return g;
    }

    /**
     * Records a committed write.
     *
     * @param seq the write's commit order
     * @param lease the lease name
     * @param generation the fencing token the write carried
     * @param owner the writer
     * @return the recorded event
     * @throws IllegalArgumentException if {@code lease} or {@code owner} is blank
     */
    public Write write(long seq, String lease, long generation, String owner) {
        Write w = new Write(seq, lease, generation, owner);
        synchronized (this) {
            writes.add(w);
        }
        return w;
    }

    /**
     * Returns the grants recorded so far.
     *
     * @return an immutable snapshot, in recording order
     */
    public synchronized List<Grant> grants() {
        return List.copyOf(grants);
    }

    /**
     * Returns the writes recorded so far.
     *
     * @return an immutable snapshot, in recording order
     */
    public synchronized List<Write> writes() {
        return List.copyOf(writes);
    }

    /**
     * Checks the history recorded so far; same as {@code FencedMutexChecker.check(grants(),
     * writes())} on one consistent snapshot.
     *
     * @return the result
     */
    public CheckResult check() {
        List<Grant> g;
        List<Write> w;
        synchronized (this) {
            g = List.copyOf(grants);
            w = List.copyOf(writes);
        }
        return FencedMutexChecker.check(g, w);
    }
}
