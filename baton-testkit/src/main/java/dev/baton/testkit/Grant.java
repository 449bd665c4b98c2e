package dev.baton.testkit;

/**
 * History event: {@code owner} was granted {@code lease} with fencing token {@code generation}.
 * Record it only once the grant is known to have happened (for example after the acquiring
 * transaction committed), never speculatively.
 *
 * @param lease the lease (mutex) name; not blank
 * @param generation the fencing token handed to the owner
 * @param owner the owner's identity; not blank
 */
public record Grant(String lease, long generation, String owner) {

    /**
     * Validates the fields.
     *
     * @param lease the lease name
     * @param generation the fencing token
     * @param owner the owner
     * @throws IllegalArgumentException if {@code lease} or {@code owner} is null or blank
     */
    public Grant {
        requireText("lease", lease);
        requireText("owner", owner);
    }

    static void requireText(String what, String value) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(
                    what + " must not be blank, was " + (value == null ? "null" : "'" + value + "'"));
        }
    }

    @Override
    public String toString() {
        return "grant(lease '" + lease + "', generation " + generation + " to '" + owner + "')";
    }
}
