package dev.baton.testkit;

/**
 * History event: a write protected by {@code lease} <em>committed</em>, carrying fencing token
 * {@code generation}, issued by {@code owner}. Record only writes whose commit is certain (for
 * example read back from the protected table afterwards): an unacknowledged write may or may not
 * have committed.
 *
 * @param seq the write's position in commit order, such as a {@code bigserial} assigned inside the
 *     write's transaction; unique per lease, larger means committed later
 * @param lease the lease (mutex) name; not blank
 * @param generation the fencing token the write carried
 * @param owner the writer's identity; not blank
 */
public record Write(long seq, String lease, long generation, String owner) {

    /**
     * Validates the fields.
     *
     * @param seq the commit order
     * @param lease the lease name
     * @param generation the fencing token
     * @param owner the writer
     * @throws IllegalArgumentException if {@code lease} or {@code owner} is null or blank
     */
    public Write {
        Grant.requireText("lease", lease);
        Grant.requireText("owner", owner);
    }

    @Override
    public String toString() {
        return "write(seq " + seq + ", lease '" + lease + "', generation " + generation + " by '" + owner + "')";
    }
}
