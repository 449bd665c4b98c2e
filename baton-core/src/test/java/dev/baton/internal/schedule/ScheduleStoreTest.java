package dev.baton.internal.schedule;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.DbTest;
import dev.baton.ScheduleInfo;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import org.junit.jupiter.api.Test;

/**
 * The compare-and-set statements of firing, bound by name, on a real database: a failure is recorded and
 * a firing advances only at the instant the scheduler saw ({@code :seen}); the facade tests reach them
 * only through whole firings.
 *
 * <p>Protection removed (in a scratch copy) and seen failing: {@code AND next_run_at = :seen} of
 * {@code advance} replaced by {@code AND :seen::timestamptz IS NOT NULL} ("another scheduler's instant"
 * advanced).
 */
class ScheduleStoreTest extends DbTest {
    private static final ScheduleStore.Definition DEF = new ScheduleStore.Definition(
            "s", "interval", "3600000", "UTC", "work", "default", "{}", 0, 3, "skip", 0, 60_000, false);

    @Test
    void failuresAndFiringsApplyOnlyAtTheSeenInstant() throws Exception {
        ScheduleStore store = new ScheduleStore(schema);
        try (Connection c = appPool.getConnection()) {
            Instant due = store.dbNow(c).truncatedTo(ChronoUnit.SECONDS);
            Instant other = due.plusSeconds(1);
            store.insert(c, "app", "1", DEF, due);

            assertThat(store.recordFailure(c, "s", due, "boom", Duration.ofMillis(100)))
                    .isEqualTo(1);
            assertThat(store.recordFailure(c, "s", due, "boom again", Duration.ofMillis(100)))
                    .isEqualTo(2);
            assertThat(store.recordFailure(c, "s", other, "stale", Duration.ofMillis(100)))
                    .as("no longer waiting at that instant")
                    .isZero();
            assertThat(store.list(c, "", 10)).singleElement().satisfies(s -> {
                assertThat(s.errorCount()).isEqualTo(2);
                assertThat(s.lastError()).contains("boom again");
            });

            assertThat(store.advance(c, "s", other, other.plusSeconds(3600), other, 7L, 0))
                    .as("another scheduler's instant")
                    .isFalse();
            assertThat(store.advance(c, "s", due, due.plusSeconds(3600), null, null, 2))
                    .isTrue();
            ScheduleInfo s = store.list(c, "", 10).get(0);
            assertThat(s.nextRunAt()).isEqualTo(due.plusSeconds(3600));
            assertThat(s.lastDueAt()).as("nothing fired: kept").isEmpty();
            assertThat(s.lastJobId()).isEmpty();
            assertThat(s.misfiredTotal()).isEqualTo(2);
            assertThat(s.errorCount()).as("a firing clears the failure").isZero();
            assertThat(s.lastError()).isEmpty();
        }
    }
}
