package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;

/**
 * S05: nodes of two versions of one application ("svc" 1 declares {A, B}, "svc" 2 declares {A, C},
 * with A defined differently) share a database: neither deletes nor rewrites the other's schedules;
 * A keeps version 2's definition whatever the start order; B is disabled (never deleted) only once
 * no version-1 node lives; another application can neither take A nor disable svc's schedules.
 *
 * <p>Protections removed (in a scratch copy) and seen failing: (1) the version check of
 * {@code Schedules.declareOne} ({@code Versions.compare(version, stored) >= 0} → {@code true}): v1
 * started after v2 rewrote A with its own definition; (2) the live-node condition of
 * {@code disable_orphans} ({@code schedule.sql}: {@code WHERE n.state <> 'stopped'} → {@code WHERE false AND …},
 * no node counts as live): the schedules were disabled while their nodes ran; (3) the owner check of {@code declareOne} (the
 * {@code IllegalStateException} when {@code owner_app} differs): "other" declared A without error;
 * (4) the owner filter of {@code disable_orphans} ({@code s.owner_app = ?} → {@code ?::text IS NOT NULL}):
 * svc's orphan check disabled "other"'s X; (5) stopped nodes no longer excluded from the live ones
 * ({@code n.state <> 'stopped'} → {@code true}): B was not disabled after every v1 node had closed.
 */
class ScheduleVersionsTest extends ScheduleTestSupport {
    private static final Schedule A1 = Schedule.cron("A", "0 3 * * *").job("a.v1", null);
    private static final Schedule B = Schedule.cron("B", "0 4 * * *").job("b", null);
    private static final Schedule A2 = Schedule.cron("A", "15 5 * * *")
            .zone("Europe/Berlin")
            .job("a.v2", null)
            .misfire(MisfirePolicy.SKIP);
    private static final Schedule C = Schedule.cron("C", "0 6 * * *").job("c", null);

    /** S05: v1 starts first, then v2. */
    @Test
    void S05_v1ThenV2_neitherDeletesNorRewritesTheOthersSchedules() {
        scenario(true);
    }

    /** S05: v2 starts first, then v1. */
    @Test
    void S05_v2ThenV1_neitherDeletesNorRewritesTheOthersSchedules() {
        scenario(false);
    }

    private void scenario(boolean v1First) {
        Baton v1;
        Baton v2;
        if (v1First) {
            v1 = node("v1-a", "svc", "1", A1, B);
            assertThat(info("A").jobKind()).isEqualTo("a.v1");
            v2 = node("v2-a", "svc", "2", A2, C);
        } else {
            v2 = node("v2-a", "svc", "2", A2, C);
            v1 = node("v1-a", "svc", "1", A1, B);
        }
        // A second v1 node starting while v2 runs does not rewrite A either.
        Baton v1b = node("v1-b", "svc", "1", A1, B);
        assertVersion2DefinesA();
        assertThat(schedulesApi().list(null, 100).items())
                .extracting(ScheduleInfo::name)
                .containsExactly("A", "B", "C");
        assertThat(schedulesApi().list(null, 100).items()).allSatisfy(i -> {
            assertThat(i.enabled()).as("%s enabled", i.name()).isTrue();
            assertThat(i.ownerApp()).isEqualTo("svc");
        });
        assertThat(info("A").declaredBy()).containsExactlyInAnyOrder("1", "2");
        assertThat(info("B").declaredBy()).containsExactly("1");
        assertThat(info("C").declaredBy()).containsExactly("2");

        // While any v1 node lives, B stays enabled.
        assertThat(schedulesApi().disableOrphans("svc")).isEmpty();
        v1.close();
        assertThat(schedulesApi().disableOrphans("svc")).as("v1-b still lives").isEmpty();
        assertThat(info("B").enabled()).isTrue();

        // Another application can neither take A nor disable svc's schedules.
        assertThatThrownBy(() -> node(
                        "other-a", "other", "9", Schedule.cron("A", "0 1 * * *").job("x", null)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("belongs to application 'svc'");
        assertVersion2DefinesA();
        node("other-b", "other", "1", Schedule.cron("X", "0 1 * * *").job("x", null));

        // Once every v1 node has stopped, B (declared only by v1) is disabled, not deleted.
        v1b.close();
        // (The scheduler's own orphan check, run by whichever node leads it next, may get there first.)
        assertThat(schedulesApi().disableOrphans("svc")).isSubsetOf("B");
        ScheduleInfo b = info("B");
        assertThat(b.enabled()).isFalse();
        assertThat(b.jobKind()).isEqualTo("b");
        assertThat(info("A").enabled()).isTrue();
        assertThat(info("C").enabled()).isTrue();
        assertVersion2DefinesA();

        // With no svc node left, "other" still disables nothing of svc's.
        v2.close();
        assertThat(schedulesApi().disableOrphans("other")).isEmpty();
        assertThat(info("A").enabled()).isTrue();
        assertThat(info("C").enabled()).isTrue();
        assertThat(schedulesApi().list(null, 100).items())
                .extracting(ScheduleInfo::name)
                .containsExactly("A", "B", "C", "X");
    }

    private void assertVersion2DefinesA() {
        ScheduleInfo a = info("A");
        assertThat(a.definitionVersion()).isEqualTo("2");
        assertThat(a.spec()).isEqualTo("15 5 * * *");
        assertThat(a.timeZone()).isEqualTo("Europe/Berlin");
        assertThat(a.jobKind()).isEqualTo("a.v2");
        assertThat(a.misfirePolicy()).isEqualTo("skip");
        assertThat(a.enabled()).isTrue();
    }

    private Baton node(String id, String app, String version, Schedule... schedules) {
        HikariDataSource ds = closeLater(PG.newPool("s05-" + id, 6));
        Baton.Builder b = nodeBuilder(id, ds).application(app, version);
        for (Schedule s : schedules) {
            b.schedule(s);
        }
        return startNode(b);
    }
}
