package dev.baton.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.cli.ChaosPlan.Fault;
import dev.baton.cli.ChaosPlan.Kind;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/** E03's schedule: a seed reproduces it, and it keeps the shape the chaos run relies on. */
class ChaosPlanTest {
    private static final Duration TTL = Duration.ofSeconds(2);

    @Test
    void E03_theSameSeedGivesTheSameSchedule_anotherSeedADifferentOne() {
        ChaosPlan a = ChaosPlan.generate(42, Duration.ofMinutes(2), 3, EnumSet.allOf(Kind.class), TTL);
        ChaosPlan b = ChaosPlan.generate(42, Duration.ofMinutes(2), 3, EnumSet.allOf(Kind.class), TTL);
        ChaosPlan c = ChaosPlan.generate(43, Duration.ofMinutes(2), 3, EnumSet.allOf(Kind.class), TTL);
        assertThat(a.faults()).isNotEmpty().isEqualTo(b.faults());
        assertThat(c.faults()).isNotEqualTo(a.faults());
    }

    @Test
    void E03_faultsStayInsideTheRun_neverOverlapOnANode_andUseOnlyTheKindsAsked() {
        Duration duration = Duration.ofMinutes(3);
        for (long seed = 1; seed <= 50; seed++) {
            ChaosPlan plan = ChaosPlan.generate(
                    seed, duration, 3, EnumSet.of(Kind.PAUSE, Kind.KILL, Kind.BLACK_HOLE, Kind.DB_RESTART), TTL);
            List<Fault> faults = plan.faults();
            for (int i = 0; i < faults.size(); i++) {
                Fault f = faults.get(i);
                assertThat(f.kind()).isIn(Kind.PAUSE, Kind.KILL, Kind.BLACK_HOLE, Kind.DB_RESTART);
                assertThat(f.at()).isGreaterThanOrEqualTo(ChaosPlan.WARM_UP);
                assertThat(f.end()).isLessThanOrEqualTo(duration.minus(ChaosPlan.QUIET_TAIL));
                assertThat(f.node())
                        .isBetween(f.kind() == Kind.DB_RESTART ? -1 : 0, f.kind() == Kind.DB_RESTART ? -1 : 2);
                if (f.kind() == Kind.PAUSE) {
                    assertThat(f.length()).as("a pause outlives the lease").isGreaterThan(TTL);
                }
                for (int j = 0; j < i; j++) {
                    Fault e = faults.get(j);
                    if (e.node() == f.node()) {
                        assertThat(e.end())
                                .as("seed %d: %s overlaps %s", seed, e, f)
                                .isLessThanOrEqualTo(f.at());
                    }
                }
            }
        }
    }

    @Test
    void E03_aTwoMinuteRunInjectsEveryKindItIsGiven() {
        ChaosPlan plan = ChaosPlan.generate(7, Duration.ofMinutes(2), 3, EnumSet.allOf(Kind.class), TTL);
        assertThat(plan.faults().size()).isGreaterThan(20);
        assertThat(plan.counts().keySet()).containsExactlyInAnyOrder(Kind.values());
    }

    @Test
    void badInputIsRefused() {
        assertThatThrownBy(() -> ChaosPlan.generate(1, Duration.ofMinutes(1), 1, EnumSet.allOf(Kind.class), TTL))
                .hasMessageContaining("at least 2 nodes");
        assertThatThrownBy(() -> ChaosPlan.generate(1, Duration.ofMinutes(1), 3, EnumSet.noneOf(Kind.class), TTL))
                .hasMessageContaining("at least one fault kind");
    }
}
