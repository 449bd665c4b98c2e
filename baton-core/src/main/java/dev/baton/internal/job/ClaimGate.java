package dev.baton.internal.job;

import java.util.Arrays;
import java.util.Set;

/**
 * What a node's claims may take, as operators' controls set it: nothing while the node is held (drained
 * or its version retired), and only the kinds it handles that are not disabled. Shared by the worker's
 * producers; read before every claim.
 */
public final class ClaimGate {
    private final String[] handled;
    private volatile String[] kinds;
    private volatile boolean held;

    public ClaimGate(String[] handled) {
        this.handled = handled.clone();
        this.kinds = this.handled;
    }

    /** The kinds to claim now: those handled and not disabled (empty: claim nothing). */
    public String[] kinds() {
        return kinds;
    }

    /** True while the node may claim. */
    public boolean open() {
        return !held && kinds.length > 0;
    }

    public boolean held() {
        return held;
    }

    void hold(boolean hold) {
        held = hold;
    }

    /** Claims leave out {@code disabled} kinds from now on. Returns true if the set of kinds to claim changed. */
    boolean disable(Set<String> disabled) {
        String[] next =
                Arrays.stream(handled).filter(k -> !disabled.contains(k)).toArray(String[]::new);
        if (Arrays.equals(next, kinds)) {
            return false;
        }
        kinds = next;
        return true;
    }
}
