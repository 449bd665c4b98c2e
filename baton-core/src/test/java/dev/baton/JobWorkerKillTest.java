package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.maintenance.Maintenance;
import dev.baton.internal.service.Hooks;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/** J02: a worker process is killed (SIGKILL) after its handler's external effect, before completion. */
class JobWorkerKillTest extends JobTestSupport {

    /**
     * J02: a worker in a separate JVM claims the job, performs an external effect (an auto-commit row)
     * and is SIGKILLed before the attempt completes. Its lease expires on the database clock; the
     * rescuer returns the job to the queue with the stall counted and recorded; an in-process node runs
     * it again and completes it. The effect happened at least once (here: twice).
     *
     * <p>Protections removed to see it fail: (1) in the rescue statement ({@code job.sql}, name:
     * rescue), the stall count increment ({@code stall_count = j.stall_count + 1} → {@code j.stall_count}
     * everywhere): the job still ran again, but stallCount was 0 and the assertion failed; (2) the
     * rescue's expiry predicate ({@code lease_expires_at < clock_timestamp()} → {@code … - interval '1
     * hour'}): the dead attempt was never rescued and the job never succeeded.
     */
    @Test
    void J02_killedWorkerIsRescuedStallCountedAndRunAgain() throws Exception {
        createEffectTable(false);
        WorkerConfig config = fastWorker("default", 2)
                .rescueInterval(java.time.Duration.ofMinutes(1))
                .build();
        Process child = ChildNode.start(JobWorkerProcess.class, PG, schema, "j02-child");
        try {
            CompletableFuture<Long> effect = new CompletableFuture<>();
            List<String> childOutput = new ArrayList<>();
            ChildNode.read(child, "j02-child", "EFFECT ", effect, childOutput);

            long id =
                    jobsApi().enqueue(JobRequest.of("external", new Payload(7))).id();
            long effectJob = effect.get(WAIT.toMillis() * 2, TimeUnit.MILLISECONDS); // JVM start + claim
            assertThat(effectJob).isEqualTo(id);
            assertThat(row(id).state()).isEqualTo("running");
            assertThat(row(id).claimedBy()).isEqualTo("j02-child");

            // The in-process node: records the effect (auto-commit, like the child) and returns.
            var ownPool = ownPool("j02-node", 8);
            Baton node = startNode(nodeBuilder("j02-node", ownPool, Hooks.NONE)
                    .worker(config)
                    .handle("external", Payload.class, (p, ctx) -> {
                        try (var c = pool.getConnection()) {
                            insertEffect(c, ctx.jobId(), ctx.attempt(), "j02-node", p.n());
                        }
                    }));

            long killedAt = System.nanoTime();
            child.destroyForcibly(); // SIGKILL: no shutdown hooks, no release, no completion
            assertThat(child.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                    .as("child exited")
                    .isTrue();

            // Only an expired lease (database clock) makes the job rescuable; then rescue it.
            awaitLeaseExpired(id);
            long expiredAt = System.nanoTime();
            Maintenance rescuer = rescuer(config, "j02-rescuer");
            Awaitility.await()
                    .atMost(WAIT)
                    .pollInterval(java.time.Duration.ofMillis(20))
                    .until(() -> {
                        rescuer.rescueOnce();
                        return !row(id).state().equals("running");
                    });
            awaitState(id, "succeeded");
            long doneAt = System.nanoTime();
            System.out.printf(
                    "J02: kill → lease expired %d ms, kill → succeeded %d ms%n",
                    (expiredAt - killedAt) / 1_000_000, (doneAt - killedAt) / 1_000_000);

            JobInfo info = node.jobs().get(id).orElseThrow();
            assertThat(info.state()).isEqualTo(JobState.SUCCEEDED);
            assertThat(info.attempt()).isEqualTo(2);
            assertThat(info.stallCount()).isEqualTo(1);
            assertThat(info.errors()).singleElement().satisfies(e -> {
                assertThat(e.errorClass()).isEqualTo("stalled");
                assertThat(e.attempt()).isEqualTo(1);
                assertThat(e.node()).isEqualTo("j02-child");
                assertThat(e.message()).contains("lease expired");
            });
            assertThat(count("SELECT count(*) FROM " + schema + ".effect WHERE job_id = " + id))
                    .as("external effects (at least once)")
                    .isGreaterThanOrEqualTo(2);
            assertThat(count("SELECT count(*) FROM " + schema + ".effect WHERE job_id = " + id
                            + " AND attempt = 1 AND node = 'j02-child'"))
                    .isEqualTo(1);
            assertThat(count("SELECT count(*) FROM " + schema + ".effect WHERE job_id = " + id
                            + " AND attempt = 2 AND node = 'j02-node'"))
                    .isEqualTo(1);
        } finally {
            child.destroyForcibly();
            child.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }
}
