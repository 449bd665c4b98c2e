package dev.baton;

import java.util.List;

/**
 * What {@link Baton#migrate} did.
 *
 * @param schema  the schema migrated
 * @param from    the version found (0: not installed)
 * @param to      the version now installed
 * @param applied the scripts applied, in order (empty when already current)
 */
public record MigrationResult(String schema, int from, int to, List<String> applied) {
    /** True if this migration applied at least one script. */
    public boolean changed() {
        return !applied.isEmpty();
    }
}
