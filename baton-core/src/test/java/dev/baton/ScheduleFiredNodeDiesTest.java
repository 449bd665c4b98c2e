package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.maintenance.MaintenanceTask;
import java.sql.Connection;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/** S02: the node that fired a schedule dies before the job runs; the job still runs (at least once). */
class ScheduleFiredNodeDiesTest extends ScheduleTestSupport {
    /** Declared identically by the in-process nodes and by {@link ScheduleNodeProcess}. */
    static final Schedule S02 = Schedule.every("s02", Duration.ofMillis(500)).job("s02.job", null);

    /**
     * S02: the firing node has no worker for the job's queue; it fires, then stops for good. A node
     * that declares nothing but works the queue runs every job the dead node fired, to success.
     * (Control: the job is a row committed with the firing, owned by no node.)
     */
    @Test
    void S02_jobsFiredByANodeThatStoppedAreRunByAnother() throws Exception {
        HikariDataSource firerPool = closeLater(PG.newPool("s02-firer", 6));
        Baton firer = startNode(
                nodeBuilder("firer", firerPool).application("svc", "1").schedule(S02));
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> !jobsOfKind("s02.job").isEmpty());
        firer.close();
        List<Long> firedByFirer =
                jobsOfKind("s02.job").stream().map(FiredJob::id).toList();
        assertThat(firedByFirer).isNotEmpty();

        Set<Long> ran = ConcurrentHashMap.newKeySet();
        HikariDataSource workerPool = closeLater(PG.newPool("s02-worker", 8));
        startNode(nodeBuilder("worker", workerPool)
                .worker(fastWorker("default", 2).build())
                .handle("s02.job", Object.class, (p, ctx) -> ran.add(ctx.jobId())));
        for (long id : firedByFirer) {
            awaitJobState(id, JobState.SUCCEEDED);
            assertThat(jobsApi().get(id).orElseThrow().claimedBy()).contains("worker");
        }
        assertThat(ran).containsAll(firedByFirer);
    }

    /**
     * S02: the node that fired also claimed the job and is killed (SIGKILL, a separate JVM) with its
     * handler still running. Another node takes over the scheduler, its maintenance rescues the
     * attempt once its lease expired on the database clock, and runs the job: SUCCEEDED, attempt 2,
     * stall counted.
     *
     * <p>Protection removed to see it fail: the rescue of expired attempts ({@code job.sql}, name:
     * rescue, {@code lease_expires_at < clock_timestamp()} → {@code … - interval '1 hour'}): the
     * killed node's job stayed running and the test timed out waiting for SUCCEEDED.
     */
    @Test
    void S02_firingNodeKilledWithTheJobClaimed_anotherNodeRunsIt() throws Exception {
        Process child = ChildNode.start(ScheduleNodeProcess.class, PG, schema, "s02-child");
        try {
            CompletableFuture<Long> claimed = new CompletableFuture<>();
            List<String> output = new ArrayList<>();
            ChildNode.read(child, "s02-child", "CLAIMED ", claimed, output);
            long id = claimed.get(WAIT.toMillis() * 2, TimeUnit.MILLISECONDS); // JVM start + first instant
            JobInfo before = jobsApi().get(id).orElseThrow();
            assertThat(before.state()).isEqualTo(JobState.RUNNING);
            assertThat(before.claimedBy()).contains("s02-child");
            Instant due = dueOf("s02", before.idempotencyKey().orElseThrow());
            assertThat(leases.inspect(MaintenanceTask.LEASE).orElseThrow().owner())
                    .contains("s02-child");

            child.destroyForcibly(); // SIGKILL: no release, no completion, no goodbye
            assertThat(child.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                    .as("child exited")
                    .isTrue();

            Set<Long> ran = ConcurrentHashMap.newKeySet();
            HikariDataSource survivorPool = closeLater(PG.newPool("s02-survivor", 8));
            startNode(nodeBuilder("survivor", survivorPool)
                    .application("svc", "1")
                    .schedule(S02)
                    .worker(fastWorker("default", 2).build())
                    .handle("s02.job", Object.class, (p, ctx) -> ran.add(ctx.jobId())));

            awaitJobState(id, JobState.SUCCEEDED);
            JobInfo after = jobsApi().get(id).orElseThrow();
            assertThat(after.attempt()).isEqualTo(2);
            assertThat(after.stallCount()).isEqualTo(1);
            assertThat(after.claimedBy()).contains("survivor");
            assertThat(ran).contains(id);
            // The survivor fires on: later instants get their own jobs, the killed one is not re-fired.
            Awaitility.await()
                    .atMost(WAIT)
                    .pollInterval(Duration.ofMillis(20))
                    .until(() ->
                            info("s02").lastDueAt().map(d -> d.isAfter(due)).orElse(false));
            List<Instant> instants = firedInstants("s02", "s02.job");
            assertThat(instants).doesNotHaveDuplicates().contains(due);
        } finally {
            child.destroyForcibly();
            child.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /**
     * S02: the firing node dies in the middle of firing: its transaction has enqueued the job but not
     * committed (the test holds a lock on the job table, so the enqueue waits; then the test
     * terminates that backend and closes the node). Nothing of the firing survives, so the instant
     * is still due, and another node fires it and runs its job.
     *
     * <p>Protection removed to see it fail: the atomicity of firing, i.e. enqueue and
     * {@code advance} in one transaction ({@code Scheduler.fire} changed to run and commit the
     * advance first, then enqueue): the instant was advanced past and its job never existed, so the
     * wait for the job of that instant timed out.
     */
    @Test
    void S02_firingNodeDiesBeforeItsFiringCommits_anotherNodeFiresTheSameInstant() throws Exception {
        schedulesApi().declare("svc", "1", List.of(S02));
        Instant n0 = nextRunAt("s02");
        HikariDataSource firerPool = closeLater(PG.newPool("s02-firer", 6));
        Baton firer;
        try (Connection lock = pool.getConnection()) {
            lock.setAutoCommit(false);
            Jdbc.execute(lock, "LOCK TABLE " + schema + ".job IN EXCLUSIVE MODE"); // inserts wait
            firer = startNode(
                    nodeBuilder("firer", firerPool).application("svc", "1").schedule(S02));
            Awaitility.await()
                    .atMost(WAIT)
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> backendsWaitingOnLock() == 1);
            try (Connection c = PG.connect();
                    ResultSet rs = c.createStatement()
                            .executeQuery("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                    + "WHERE state = 'active' AND wait_event_type = 'Lock' AND query LIKE '%" + schema
                                    + "%'")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getBoolean(1)).as("firing backend terminated").isTrue();
            }
            firer.close(); // the node is gone before the lock is released: it cannot retry
            lock.rollback();
        }
        assertThat(count("SELECT count(*) FROM " + schema + ".job"))
                .as("nothing of the firing committed")
                .isZero();
        assertThat(nextRunAt("s02")).as("the instant is still due").isEqualTo(n0);

        Set<Long> ran = ConcurrentHashMap.newKeySet();
        HikariDataSource survivorPool = closeLater(PG.newPool("s02-survivor", 8));
        startNode(nodeBuilder("survivor", survivorPool)
                .application("svc", "1")
                .schedule(S02)
                .worker(fastWorker("default", 2).build())
                .handle("s02.job", Object.class, (p, ctx) -> ran.add(ctx.jobId())));
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> firedInstants("s02", "s02.job").contains(n0));
        long id = jobsOfKind("s02.job").stream()
                .filter(j -> dueOf("s02", j.key()).equals(n0))
                .findFirst()
                .orElseThrow()
                .id();
        awaitJobState(id, JobState.SUCCEEDED);
        assertThat(ran).contains(id);
        assertThat(firedInstants("s02", "s02.job")).doesNotHaveDuplicates();
    }

    private void awaitJobState(long id, JobState state) {
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> jobsApi().get(id).map(j -> j.state() == state).orElse(false));
    }
}
