package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * A handler slot is free again as soon as its handler returns, while the outcome still waits for the
 * completer; and at most as many outcomes as there are slots wait so (decision 0027). The completer is
 * parked on its hook before it records the first outcome, so nothing here depends on timing.
 */
class JobSlotTest extends JobBehaviourTestBase {

    /**
     * Protections removed and seen failing: (1) the slot given back when the handler returns (released
     * again only once the outcome was recorded, as before decision 0027): job 2 never started while job 1's
     * outcome was parked; (2) the bound on attempts not yet recorded ({@code free()} without it): job 3 was
     * claimed while two outcomes of a node with one slot were waiting.
     */
    @Test
    void aSlotIsFreeWhenItsHandlerReturnsAndAtMostAsManyOutcomesAsSlotsWait() throws Exception {
        List<String> started = new CopyOnWriteArrayList<>();
        PausePoints.Pause completer = points.arm(Hooks.Points.JOB_OUTCOMES_BEFORE_RECORD);
        Baton node = start(nodeBuilder("slots")
                .worker(fastWorker("default", 1).build())
                .handle("k", Item.class, (item, ctx) -> started.add(item.name())));
        Jobs jobs = node.jobs();

        long first = jobs.enqueue(JobRequest.of("k", new Item("1"))).id();
        completer.awaitReached(WAIT); // job 1 ran; its outcome is parked with the completer
        long second = jobs.enqueue(JobRequest.of("k", new Item("2"))).id();
        Awaitility.await().atMost(WAIT).until(() -> started.contains("2"));
        Awaitility.await().atMost(WAIT).until(() -> node.pendingOutcomes() == 1);

        long third = jobs.enqueue(JobRequest.of("k", new Item("3"))).id();
        // Two attempts of a one-slot node wait for the completer: the third job stays where it is, across
        // many polls (50 ms) and its enqueue notification.
        Awaitility.await()
                .during(Duration.ofMillis(500))
                .atMost(WAIT)
                .until(() -> row(third).state().equals("available") && !started.contains("3"));
        assertThat(count("SELECT count(*) FROM " + schema + ".job WHERE state = 'running'"))
                .as("running rows of a node with one slot: one per waiting outcome")
                .isEqualTo(2);

        completer.release();
        for (long id : List.of(first, second, third)) {
            assertThat(awaitState(jobs, id, JobState.SUCCEEDED).attempt()).isEqualTo(1);
        }
        assertThat(started).containsExactly("1", "2", "3");
    }
}
