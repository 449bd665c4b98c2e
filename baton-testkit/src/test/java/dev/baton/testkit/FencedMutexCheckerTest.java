package dev.baton.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class FencedMutexCheckerTest {

    @Test
    void emptyHistoryIsOk() {
        CheckResult result = FencedMutexChecker.check(List.of(), List.of());
        assertThat(result.ok()).isTrue();
        assertThat(result.violations()).isEmpty();
        result.assertOk();
    }

    @Test
    void goodHistoryIsOk() {
        List<Grant> grants = List.of(
                new Grant("L", 1, "a"),
                new Grant("L", 2, "b"),
                new Grant("L", 2, "b"), // recorded twice: harmless
                new Grant("L", 5, "a"), // gaps in generations are fine
                new Grant("M", 1, "b")); // another lease has its own generations
        List<Write> writes = List.of(
                new Write(4, "L", 2, "b"), // given out of order on purpose: seq decides
                new Write(1, "L", 1, "a"),
                new Write(2, "L", 1, "a"),
                new Write(3, "M", 1, "b"),
                new Write(7, "L", 5, "a"));
        CheckResult result = FencedMutexChecker.check(grants, writes);
        assertThat(result.violations()).isEmpty();
        result.assertOk();
    }

    @Test
    void twoOwnersOfOneGenerationViolateR1() {
        CheckResult result = FencedMutexChecker.check(
                List.of(new Grant("L", 3, "b"), new Grant("L", 3, "a"), new Grant("M", 3, "c")), List.of());
        assertThat(result.violations())
                .containsExactly("R1: lease 'L' generation 3 was granted to more than one owner: ['a', 'b']");
    }

    @Test
    void aWriteWhoseGenerationGoesBackViolatesR3() {
        CheckResult result = FencedMutexChecker.check(
                List.of(new Grant("L", 1, "a"), new Grant("L", 2, "b")),
                List.of(new Write(1, "L", 1, "a"), new Write(2, "L", 2, "b"), new Write(3, "L", 1, "a")));
        assertThat(result.violations())
                .containsExactly("R3: lease 'L': write(seq 3, lease 'L', generation 1 by 'a') committed after "
                        + "write(seq 2, lease 'L', generation 2 by 'b'); generations must never go back");
    }

    @Test
    void r3ComparesWithTheHighestEarlierGenerationNotJustThePrevious() {
        CheckResult result = FencedMutexChecker.check(
                List.of(new Grant("L", 1, "a"), new Grant("L", 2, "b"), new Grant("L", 3, "c")),
                List.of(new Write(1, "L", 3, "c"), new Write(2, "L", 1, "a"), new Write(3, "L", 2, "b")));
        assertThat(result.violations())
                .hasSize(2)
                .allSatisfy(v -> assertThat(v).startsWith("R3: ").contains("after write(seq 1,"));
    }

    @Test
    void duplicateSeqOnALeaseIsReported() {
        CheckResult result = FencedMutexChecker.check(
                List.of(new Grant("L", 1, "a")),
                List.of(new Write(1, "L", 1, "a"), new Write(1, "L", 1, "a"), new Write(1, "M2", 1, "z")));
        assertThat(result.violations())
                .anySatisfy(v -> assertThat(v).startsWith("R3: lease 'L' has more than one write with seq 1"));
    }

    @Test
    void aWriteByANonOwnerViolatesR4() {
        CheckResult result =
                FencedMutexChecker.check(List.of(new Grant("L", 1, "a")), List.of(new Write(1, "L", 1, "b")));
        assertThat(result.violations())
                .containsExactly("R4: write(seq 1, lease 'L', generation 1 by 'b') carries generation 1, "
                        + "which was granted to ['a'], not 'b'");
    }

    @Test
    void aWriteWithANeverGrantedGenerationViolatesR4() {
        CheckResult result = FencedMutexChecker.check(
                List.of(new Grant("L", 1, "a"), new Grant("other", 9, "a")), List.of(new Write(1, "L", 9, "a")));
        assertThat(result.violations())
                .containsExactly("R4: write(seq 1, lease 'L', generation 9 by 'a') carries generation 9, "
                        + "which was never granted on lease 'L'");
    }

    @Test
    void assertOkListsEveryViolation() {
        CheckResult result = FencedMutexChecker.check(
                List.of(new Grant("L", 1, "a"), new Grant("L", 1, "b")), List.of(new Write(1, "L", 2, "a")));
        assertThat(result.ok()).isFalse();
        assertThatThrownBy(result::assertOk)
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("2 grants, 1 writes")
                .hasMessageContaining("2 violation(s)")
                .hasMessageContaining("R1: lease 'L' generation 1")
                .hasMessageContaining("R4: write(seq 1, lease 'L', generation 2 by 'a')");
    }

    @Test
    void eventsRejectBlankNamesNamingTheField() {
        assertThatThrownBy(() -> new Grant(" ", 1, "a"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("lease must not be blank, was ' '");
        assertThatThrownBy(() -> new Write(1, "L", 1, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("owner must not be blank, was null");
    }
}
