package dev.baton.bench;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CompareProbesTest {
    private static final long S = 1_000_000_000L;

    @Test
    void theSlowestProbesComeSlowestFirstWithTheirEnqueueCallAndWhenTheyWereSent() {
        long start = 50 * S;
        long[] sent = {start, start + S / 2, start + 12 * S, start + 20 * S};
        double[] latencies = {3.0, Double.POSITIVE_INFINITY, 9.5, 4.25};
        double[] calls = {1.0, 2.0, 7.25, 0.5};
        assertThat(Compare.slowest(sent, start, latencies, calls, 3))
                .isEqualTo("Infinity (2.0) at 0.5, 9.5 (7.3) at 12.0, 4.3 (0.5) at 20.0");
        assertThat(Compare.slowest(sent, start, latencies, calls, 10)).endsWith("3.0 (1.0) at 0.0");
    }

    @Test
    void theWorstProbePerWindowIsTakenInTheWindowItWasSentIn() {
        long start = 50 * S;
        long[] sent = {start, start + 9 * S, start + 10 * S, start + 25 * S};
        double[] latencies = {3.0, 5.0, 2.0, 7.0};
        assertThat(Compare.worstPerWindow(sent, start, latencies, 10)).isEqualTo("5 2 7");
    }
}
