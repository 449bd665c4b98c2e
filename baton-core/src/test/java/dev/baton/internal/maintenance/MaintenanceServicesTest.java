package dev.baton.internal.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.Baton;
import dev.baton.DbTest;
import dev.baton.JobRequest;
import dev.baton.JobState;
import dev.baton.Jobs;
import dev.baton.WorkerConfig;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.job.JobStore;
import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * The maintenance services one at a time: each test builds a service of one maintenance term on a real
 * database and calls its {@code runOnce()} directly (no thread started), with a ticker the test moves.
 * The two rescuer tests moved here from {@code JobBadInputTest}, where they drove the former hand-written
 * maintenance loop through a scripted leader context; they assert the same.
 */
class MaintenanceServicesTest extends DbTest {
    private static final WorkerConfig.Builder WORKER = WorkerConfig.builder()
            .queue("default", 1)
            .pollInterval(Duration.ofMillis(50))
            .rescueInterval(Duration.ofMillis(100));

    private Jobs jobs() {
        return Baton.builder(appPool).schema(schema).build().jobs(); // read and enqueue only, never started
    }

    private JobState state(long id) {
        return jobs().get(id).orElseThrow().state();
    }

    /**
     * J09. After an outage every heartbeat looks stale for a while, so "no live node handles the kind" must
     * not be concluded from the node table alone. The kinds of the node running maintenance always count as
     * handled, and a maintenance term fails jobs of unhandled kinds only after watching for the whole
     * timeout. Protections removed and seen failing: the own-kinds condition of fail_unhandled
     * ({@code k.kind <> ALL (?)} dropped): the job of the maintenance node's own kind was failed; the watch
     * in {@code JobRescuer.runOnce} (failUnhandledOnce at every pass): the job was failed in the first pass.
     */
    @Test
    void J09_aBacklogIsNotFailedAsUnhandledWhenEveryHeartbeatLooksStale() throws Exception {
        // One live worker (of another kind) declares the job settings; the maintenance node's own row
        // looks stale, as after an outage, so only its own kinds say that it handles "order".
        insertLiveWorkerNode("other-worker", "invoice", 300);
        long order = jobs().enqueue(JobRequest.of("order", Map.of("id", "o1"))).id();
        long other = jobs().enqueue(JobRequest.of("report", Map.of("id", "r1"))).id();
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> count("SELECT count(*) FROM " + schema
                                + ".job WHERE run_at < clock_timestamp() - interval '300 ms'")
                        == 2);
        WorkerConfig config =
                WORKER.unhandledKindTimeout(Duration.ofMillis(300)).build();

        // A maintenance term that has just begun: it watches first.
        AtomicLong clock = new AtomicLong();
        Maintenance work = maintenance(
                config, "j09-maintenance", new JobStore(schema), Baton.DEFAULT_RETENTION, Set.of("order"), clock::get);
        JobRescuer rescuer = new JobRescuer(work, clock::get);
        assertThat(rescuer.runOnce())
                .as("the rescue interval")
                .isEqualTo(Duration.ofMillis(100).toNanos());
        clock.addAndGet(Duration.ofMillis(100).toNanos());
        rescuer.runOnce();
        assertThat(state(order))
                .as("not failed by a term that has not watched for the timeout")
                .isEqualTo(JobState.AVAILABLE);
        assertThat(state(other)).isEqualTo(JobState.AVAILABLE);

        // Watched long enough: the kind it handles itself stays, the other fails.
        clock.addAndGet(Duration.ofMillis(200).toNanos());
        rescuer.runOnce();
        assertThat(state(order)).as("the maintenance node's own kind").isEqualTo(JobState.AVAILABLE);
        assertThat(state(other)).isEqualTo(JobState.FAILED);
    }

    /**
     * A node without a worker leads maintenance while no worker looks live (right after an outage, before
     * the heartbeats are back): job maintenance waits, and resumes at the next pass once a worker's
     * heartbeat is in, not at the next minute. Protection removed and seen failing: reading the cluster's job
     * settings at the term's first pass and then only once a minute ({@code settings.isEmpty() ||} replaced in
     * {@code JobRescuer.runOnce}): the expired attempt was still running after the second pass.
     */
    @Test
    void aWorkerLessLeaderRescuesOnceAWorkerLooksLiveAgain() throws Exception {
        long id = jobs().enqueue(JobRequest.of("order", Map.of("id", "o1"))).id();
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(
                    c,
                    "UPDATE " + schema + ".job SET state = 'running', attempt = 1, attempt_token = 1, "
                            + "claimed_by = 'cut-off', attempted_at = clock_timestamp(), "
                            + "lease_expires_at = clock_timestamp() - interval '1 second' WHERE id = " + id);
        }
        AtomicLong clock = new AtomicLong();
        Maintenance web = maintenance(null, "web", new JobStore(schema), Baton.DEFAULT_RETENTION, Set.of(), clock::get);
        JobRescuer rescuer = new JobRescuer(web, clock::get);
        assertThat(rescuer.runOnce())
                .as("a node without a worker: the default rescue interval")
                .isEqualTo(WorkerConfig.DEFAULT_RESCUE_INTERVAL.toNanos());
        assertThat(state(id))
                .as("no worker live: no job settings, nothing rescued")
                .isEqualTo(JobState.RUNNING);

        clock.addAndGet(Duration.ofSeconds(10).toNanos());
        insertLiveWorkerNode("back-again", "order", 3_600_000);
        rescuer.runOnce();
        assertThat(state(id))
                .as("rescued at the pass after the worker's heartbeat")
                .isEqualTo(JobState.AVAILABLE);
        assertThat(jobs().get(id).orElseThrow().stallCount()).isEqualTo(1);
    }

    /**
     * The purger runs on a node without a worker (the functional bug of the fused maintenance: a service
     * using only the coordination primitives never had their rows purged). Protection removed and seen
     * failing: the purger left out of {@code Maintenance.services()}: the services of a term had no purger.
     */
    @Test
    void aTermWithoutAWorkerPurgesExpiredCoordinationRowsAndPrunesOnItsInterval() throws Exception {
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(
                    c,
                    "INSERT INTO " + schema
                            + ".single_use_token (token_hash, purpose, subject, created_at, expires_at) "
                            + "VALUES (sha256('t-expired'), 'p', 's', clock_timestamp() - interval '2 hours', "
                            + "clock_timestamp() - interval '1 hour')");
        }
        AtomicLong clock = new AtomicLong();
        Maintenance web = maintenance(null, "web", new JobStore(schema), Baton.DEFAULT_RETENTION, Set.of(), clock::get);
        CoordinationPurger purger = web.services().stream()
                .map(s -> s.get())
                .filter(CoordinationPurger.class::isInstance)
                .map(CoordinationPurger.class::cast)
                .findFirst()
                .orElseThrow();
        assertThat(purger.runOnce()).as("next pass in a minute").isEqualTo(Maintenance.PRUNE_INTERVAL.toNanos());
        assertThat(count("SELECT count(*) FROM " + schema + ".single_use_token"))
                .as("expired token purged")
                .isZero();
        assertThat(new Pruner(web, clock::get).runOnce()).isEqualTo(Maintenance.PRUNE_INTERVAL.toNanos());
    }

    /**
     * A backlog of expired finished jobs larger than one prune run removes ({@value Maintenance#MAX_PRUNE_BATCHES}
     * batches of {@value Maintenance#BATCH}) is pruned run after run with a short pause, not one run a minute,
     * which would cap pruning at 333 finished jobs/s however many finish (docs/benchmarks/retention.md).
     * Protection removed and seen failing: {@code Pruner.runOnce} returning PRUNE_INTERVAL after a full run: the
     * first run's next pass was a minute away.
     */
    @Test
    void E06_aPruneRunThatEndsWithMoreDueRunsAgainAfterTheCatchUpPause() throws Exception {
        int due = Maintenance.BATCH * Maintenance.MAX_PRUNE_BATCHES + 1;
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(
                    c,
                    "INSERT INTO " + schema + ".job (queue, kind, payload, priority, state, run_at, max_attempts, "
                            + "attempt, finished_at) SELECT 'default', 'k', '{}', 50, 'succeeded', now(), 1, 1, "
                            + "now() - interval '400 days' FROM generate_series(1, " + due + ")");
        }
        Maintenance node = maintenance(WORKER.build(), "pruner");
        Pruner pruner = new Pruner(node, System::nanoTime);
        assertThat(pruner.runOnce()).as("next run after a full one").isEqualTo(Maintenance.PRUNE_CATCH_UP.toNanos());
        assertThat(count("SELECT count(*) FROM " + schema + ".job")).isEqualTo(1);
        assertThat(pruner.runOnce())
                .as("next run after one that found less than a full run")
                .isEqualTo(Maintenance.PRUNE_INTERVAL.toNanos());
        assertThat(count("SELECT count(*) FROM " + schema + ".job")).isZero();
    }

    /** A live node row of a worker that handles {@code kind} and declares its job settings. */
    private void insertLiveWorkerNode(String id, String kind, long unhandledKindTimeoutMs) throws Exception {
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(
                    c,
                    "INSERT INTO " + schema + ".node (id, started_at, heartbeat_at, heartbeat_interval_ms, state, "
                            + "protocol_version, meta) VALUES ('" + id + "', clock_timestamp(), clock_timestamp(), "
                            + "600000, 'active', 1, jsonb_build_object('kinds', jsonb_build_array('" + kind
                            + "'::text), "
                            + "'jobs', jsonb_build_object('retentionMs', 604800000, 'maxStalls', 3, "
                            + "'unhandledKindTimeoutMs', " + unhandledKindTimeoutMs + "::bigint))) "
                            + "ON CONFLICT (id) DO NOTHING");
        }
    }
}
