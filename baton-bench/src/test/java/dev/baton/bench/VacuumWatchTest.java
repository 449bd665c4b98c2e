package dev.baton.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class VacuumWatchTest {
    private static final long S = 1_000_000_000L;

    @Test
    void eachLookThatSawAVacuumCountsAQuarterSecondInTheWindowItFellIn() {
        long start = 1_000 * S;
        List<long[]> looks = List.of(
                new long[] {start - S, 1}, // before the start: not counted
                new long[] {start, 1},
                new long[] {start + S / 4, 1},
                new long[] {start + S / 2, 0},
                new long[] {start + 10 * S, 0},
                new long[] {start + 25 * S, 1},
                new long[] {start + 31 * S, 1}); // past the last window asked for
        assertThat(VacuumWatch.secondsPerWindow(looks, start, 10, 3)).isEqualTo("0.5 0.0 0.3");
    }
}
