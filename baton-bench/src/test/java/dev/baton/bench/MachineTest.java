package dev.baton.bench;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The build fingerprint that ties a result to a code state covers every file it names: when baton-core
 * moves or renames one (as the package layout of decision 0016 did, which left the fingerprint covering
 * only job.sql, silently), this fails. Seen failing with the file list's old paths ("dev/baton/Worker.class").
 */
class MachineTest {
    @Test
    void theFingerprintFindsEveryFileItHashes() {
        assertThat(Machine.fingerprint()).matches("[0-9a-f]{12}");
    }
}
