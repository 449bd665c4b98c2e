package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/**
 * S05 after a database outage: every node's heartbeat row looks stale until its next beat, so the
 * orphan check must not take that as "no live node declares this schedule" (found by the chaos run,
 * E03: after a PostgreSQL restart the new maintenance leader disabled {@code verify.tick} while every
 * node declaring it was running, and nothing enabled it again).
 *
 * <p>Protections removed and seen failing: (1) the calling node's own version in {@code disable_orphans}
 * ({@code ?::text IS NULL OR NOT (...)} → {@code true}): the check disabled A although its caller
 * declares it; (2) {@code enable_declared} (statement made to match nothing, {@code AND false}): A
 * stayed disabled with a live declaring node.
 */
class ScheduleOutageTest extends ScheduleTestSupport {
    private static final Schedule A = Schedule.cron("A", "0 3 * * *").job("a", null);

    @Test
    void S05_aNodesOwnVersionIsNeverOrphaned_andAScheduleDisabledWhileNodesLookedStaleIsEnabledAgain()
            throws Exception {
        Baton v1 = startNode(nodeBuilder("v1-a", closeLater(PG.newPool("outage-v1", 6)))
                .application("svc", "1")
                .schedule(A));
        v1.close(); // no node row is live now, as after an outage long enough for every heartbeat to look stale
        assertThat(info("A").enabled()).isTrue();

        // The orphan check of a running node of version 1 (which declares A) leaves A alone.
        assertThat(schedulesApi().disableOrphans("svc", "1")).isEmpty();
        assertThat(info("A").enabled()).isTrue();

        // A check by anyone else (no live version of its own, e.g. a node of version 2) disables it ...
        assertThat(schedulesApi().disableOrphans("svc", "2")).containsExactly("A");
        assertThat(info("A").enabled()).isFalse();
        // ... and as soon as a live version-1 node reconciles, A is enabled again.
        assertThat(schedulesApi().enableDeclared("svc", "2"))
                .as("version 2 does not declare A")
                .isEmpty();
        assertThat(schedulesApi().enableDeclared("svc", "1")).containsExactly("A");
        assertThat(info("A").enabled()).isTrue();

        // The same through a live node's heartbeat row: a running version-1 node (its row fresh) re-enables A
        // for a caller of another version too.
        schedulesApi().disableOrphans("svc", "2");
        startNode(nodeBuilder("v1-b", closeLater(PG.newPool("outage-v1b", 6)))
                .application("svc", "1")
                .schedule(A));
        assertThat(info("A").enabled()).as("declaring on start enables it").isTrue();
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.execute("UPDATE " + schema + ".schedule SET enabled = false WHERE name = 'A'");
        }
        assertThat(schedulesApi().enableDeclared("svc", "2")).containsExactly("A");
        assertThat(info("A").enabled()).isTrue();
    }
}
