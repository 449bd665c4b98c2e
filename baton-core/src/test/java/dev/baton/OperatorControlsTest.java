package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.testkit.FaultProxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * Operations (FAULTS.md O01–O04): operators' controls reach nodes through the database — a paused node
 * obeys a drain once it runs again, a retired version steps down even when the retirement was issued during
 * a fault, two operators acting at once are put in order and both recorded, and a restarted node stays
 * retired.
 *
 * <p>"Claims nothing" is checked against the node's own progress, never a sleep: the node's heartbeat row
 * must advance several times (each heartbeat is followed by claim polls every 50 ms) while a job it handles
 * waits, and the same job is claimed by that node once the control is lifted.
 */
class OperatorControlsTest extends JobBehaviourTestBase {
    private static final String APP = "svc";

    /**
     * O01: a node running a job is SIGSTOPped; an operator drains it; another node rescues and runs the job.
     * Once the paused node runs again it claims nothing new (a job it handles waits through several of its
     * heartbeats, with no other node to take it) and holds no lease (the maintenance lease stays free), is
     * shown as draining; resumed, it claims that job and campaigns again.
     *
     * <p>Protection removed and seen failing: the hold in {@code ClaimGate.open()} (open whatever the hold) —
     * the child, running again, claimed the waiting job while drained ("running" instead of "available").
     */
    @Test
    void O01_aPausedNodeDrainedMeanwhileClaimsNothingOnceItRunsAndResumesWhenLifted() throws Exception {
        createEffectTable();
        Process child = ChildNode.start(JobWorkerProcess.class, PG, schema, "o01-child");
        try {
            CompletableFuture<Long> first = new CompletableFuture<>();
            List<String> output = new ArrayList<>();
            ChildNode.read(child, "o01-child", "EFFECT ", first, output);
            Jobs client = jobsClient();
            long j1 = client.enqueue(external(1)).id();
            assertThat(first.get(WAIT.toMillis() * 2, TimeUnit.MILLISECONDS)).isEqualTo(j1);

            ChildNode.signal(child, "STOP");
            Controls controls = client(appPool).controls();
            Controls.Result drained = controls.drainNode("o01-child", "alice", "host maintenance");
            assertThat(drained.changed()).isTrue();

            // Another node rescues the paused node's job once its lease expires, and runs it.
            Baton other = start(nodeBuilder("o01-other")
                    .application(APP, "1")
                    .worker(fastWorker("default", 2).build())
                    .handle("external", java.util.Map.class, (p, ctx) -> effect(ctx, "o01-other")));
            awaitState(other.jobs(), j1, JobState.SUCCEEDED);
            other.close(); // from here on only the drained child could take a job

            ChildNode.signal(child, "CONT");
            awaitNodeState("o01-child", "draining");
            long j2 = client.enqueue(external(2)).id();
            awaitHeartbeats("o01-child", 4);
            assertThat(row(j2).state()).as("a drained node claims nothing new").isEqualTo("available");
            assertThat(leaseOwners()).as("a drained node holds no lease").doesNotContain("o01-child");
            OwnershipView.NodeStatus shown =
                    client(appPool).nodes().ownership().node("o01-child").orElseThrow();
            assertThat(shown.role()).isEqualTo(OwnershipView.Role.DRAINING);
            assertThat(shown.heldBy().map(ControlRecord::createdBy)).contains("alice");

            controls.resumeNode("o01-child", "alice");
            Awaitility.await().atMost(WAIT).until(() -> "o01-child".equals(row(j2).claimedBy()));
            Awaitility.await().atMost(WAIT).until(() -> leaseOwners().contains("o01-child"));
        } finally {
            child.destroyForcibly();
            child.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /**
     * O02: version 1's node leads a lease and is black-holed; while the fault lasts an operator retires
     * version 1; version 2's node takes over. Once the old node reaches the database again it is held: it
     * holds no lease through several of its heartbeats and claims no job, though it handles the jobs that
     * wait; un-retired, it works again.
     *
     * <p>Protections removed and seen failing: the hold of the leadership runners ({@code l.hold(held)} in
     * {@code Baton.applyControls}) — the healed node took the free lease back while retired; the campaign
     * gate ({@code Baton.mayCampaign} reading stale controls before a campaign) — right after the heal the node
     * took a lease before its first heartbeat read the retirement.
     */
    @Test
    void O02_aVersionRetiredDuringAFaultStepsDownAndClaimsNothingOnceItCanReachTheDatabase() throws Exception {
        FaultProxy proxy = closeLater(FaultProxy.start(PG.host(), PG.port()));
        CountDownLatch v1Leads = new CountDownLatch(1);
        Baton v1 = start(nodeBuilder("o02-v1", proxiedPool("o02-v1", proxy, 8))
                .application(APP, "1")
                .worker(fastWorker("work", 1).build())
                .handle("step", Item.class, (item, ctx) -> {}));
        Leadership lead1 = closeLater(v1.leadership("o02-lead", fastLeadership(), ctx -> {
            v1Leads.countDown();
            ctx.awaitCancellation(Duration.ofMinutes(5));
        }));
        lead1.start();
        assertThat(v1Leads.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

        proxy.blackHole();
        Controls controls = client(appPool).controls();
        assertThat(controls.retireVersion(APP, "1", "bob", "rollout to 2").changed())
                .isTrue();
        Baton v2 = start(nodeBuilder("o02-v2").application(APP, "2"));
        Leadership lead2 = closeLater(
                v2.leadership("o02-lead", fastLeadership(), ctx -> ctx.awaitCancellation(Duration.ofMinutes(5))));
        lead2.start();
        Awaitility.await().atMost(WAIT).until(lead2::isLeader);
        v2.close(); // the lease is free again: only the retired node could take it

        // The leases v1 held before the fault have expired (v2 led after them). v1 reads the controls before it
        // campaigns again after the outage, so from the heal on it never holds a lease.
        assertThat(leaseOwners()).doesNotContain("o02-v1");
        Set<String> owners = ConcurrentHashMap.newKeySet();
        proxy.heal();
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            owners.addAll(leaseOwners());
            return v1.heldByOperator();
        });
        long job = jobsClient()
                .enqueue(JobRequest.of("step", new Item("x")).queue("work"))
                .id();
        awaitHeartbeats("o02-v1", 4, () -> owners.addAll(leaseOwners()));
        assertThat(owners)
                .as("a retired node holds no lease once it can reach the database")
                .doesNotContain("o02-v1");
        assertThat(row(job).state()).as("a retired node claims nothing").isEqualTo("available");
        OwnershipView.NodeStatus shown =
                client(appPool).nodes().ownership().node("o02-v1").orElseThrow();
        assertThat(shown.role()).isEqualTo(OwnershipView.Role.RETIRED);
        assertThat(shown.node().version()).contains("1");
        assertThat(shown.heldBy().map(ControlRecord::target)).contains("svc@1");

        controls.unretireVersion(APP, "1", "bob");
        awaitState(v1.jobs(), job, JobState.SUCCEEDED);
        Awaitility.await().atMost(WAIT).until(lead1::isLeader);
    }

    /**
     * O03: two operators act at once, many rounds: on one node (drain and resume racing) and on one lease
     * term (both expiring it). Every request is recorded; at most one drain of the node is ever in force; of
     * two expiries of one term exactly one ends it.
     *
     * <p>Protection removed and seen failing: the unique index {@code control_standing} made a plain index and
     * the {@code ON CONFLICT} of the issue statement removed — racing drains created two standing controls for
     * one node (both requests "changed").
     */
    @Test
    void O03_twoOperatorsActingAtOnceApplyOnceInOrderAndAreBothRecorded() throws Exception {
        Controls a = client(ownPool("o03-a", 4)).controls();
        Controls b = client(ownPool("o03-b", 4)).controls();
        int rounds = 30;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int i = 0; i < rounds; i++) {
                CyclicBarrier together = new CyclicBarrier(2);
                Future<Controls.Result> fa = pool.submit(() -> {
                    together.await();
                    return a.drainNode("o03-node", "alice", null);
                });
                Future<Controls.Result> fb = pool.submit(() -> {
                    together.await();
                    return b.drainNode("o03-node", "bob", null);
                });
                List<Controls.Result> both = List.of(fa.get(), fb.get());
                assertThat(both.stream().filter(Controls.Result::changed)).hasSize(1);
                assertThat(a.standing()).hasSize(1);
                assertThat(a.resumeNode("o03-node", "carol").changed()).isTrue();
            }
            Leases leaseApi = client(appPool).leases();
            for (int i = 0; i < rounds; i++) {
                LeaseGrant g = leaseApi.tryAcquire("o03-lease", "holder", Duration.ofMinutes(1))
                        .orElseThrow();
                CyclicBarrier together = new CyclicBarrier(2);
                Future<Controls.Result> fa = pool.submit(() -> {
                    together.await();
                    return a.expireLease("o03-lease", g.generation(), "alice", "stuck");
                });
                Future<Controls.Result> fb = pool.submit(() -> {
                    together.await();
                    return b.expireLease("o03-lease", g.generation(), "bob", "stuck");
                });
                assertThat(List.of(fa.get(), fb.get()).stream().filter(Controls.Result::changed))
                        .hasSize(1);
                assertThat(leaseApi.inspect("o03-lease").orElseThrow().expiresAt())
                        .isBeforeOrEqualTo(
                                leaseApi.inspect("o03-lease").orElseThrow().dbNow());
            }
        } finally {
            pool.shutdownNow();
        }
        List<ControlRecord> log = new ArrayList<>();
        Page<ControlRecord> page = a.audit(null, 50);
        log.addAll(page.items());
        while (page.next().isPresent()) {
            page = a.audit(page.next().get(), 50);
            log.addAll(page.items());
        }
        // Per round: the drain that changed something (its row later lifted by the resume) and the one that
        // found it in force; the expiry that ended the term and the one that found it gone.
        assertThat(log).as("every request recorded").hasSize(rounds * 4);
        assertThat(log.stream().filter(r -> r.liftedBy().isPresent())).hasSize(rounds);
        assertThat(log.stream().map(ControlRecord::id).distinct()).hasSize(log.size());
        assertThat(log.stream()
                        .filter(r -> r.action() == ControlAction.DRAIN_NODE
                                && r.createdBy().equals("alice")))
                .hasSizeGreaterThanOrEqualTo(rounds);
        assertThat(a.standing()).isEmpty();
    }

    /**
     * O04: a node of a retired version is SIGKILLed and restarted by its supervisor (same node id, same
     * version): it starts held — no claim, no lease, through several heartbeats, a job it handles waiting —
     * and works once the version is un-retired.
     *
     * <p>Protection removed and seen failing: reading the controls at start ({@code registrar.readControls()}
     * in {@code Baton.start}) — the restarted node claimed the waiting job before its first heartbeat read
     * the retirement.
     */
    @Test
    void O04_aRetiredNodeRestartedByItsSupervisorStaysRetiredUntilLifted() throws Exception {
        createEffectTable();
        Controls controls = client(appPool).controls();
        // The child nodes run application "default" version "0" (they declare none).
        Process first = ChildNode.start(JobWorkerProcess.class, PG, schema, "o04-child");
        Process second = null;
        try {
            CompletableFuture<Long> ran = new CompletableFuture<>();
            ChildNode.read(first, "o04-first", "EFFECT ", ran, new ArrayList<>());
            Jobs client = jobsClient();
            long j1 = client.enqueue(external(1)).id();
            assertThat(ran.get(WAIT.toMillis() * 2, TimeUnit.MILLISECONDS)).isEqualTo(j1);
            controls.retireVersion("default", "0", "dora", "replaced by 1");
            awaitNodeState("o04-child", "draining");

            first.destroyForcibly(); // SIGKILL
            assertThat(first.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            long j2 = client.enqueue(external(2)).id();
            Timestamp before = heartbeatAt("o04-child");
            second = ChildNode.start(JobWorkerProcess.class, PG, schema, "o04-child");
            CompletableFuture<Long> ranAgain = new CompletableFuture<>();
            ChildNode.read(second, "o04-second", "EFFECT ", ranAgain, new ArrayList<>());
            Awaitility.await()
                    .atMost(WAIT.multipliedBy(2))
                    .until(() -> heartbeatAt("o04-child").after(before));
            awaitHeartbeats("o04-child", 4);
            assertThat(row(j2).state())
                    .as("a restarted retired node claims nothing")
                    .isEqualTo("available");
            assertThat(leaseOwners()).doesNotContain("o04-child");
            assertThat(ranAgain).isNotDone();

            controls.unretireVersion("default", "0", "dora");
            assertThat(ranAgain.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isIn(j1, j2);
        } finally {
            first.destroyForcibly();
            if (second != null) {
                second.destroyForcibly();
                second.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            }
        }
    }

    /**
     * A drain of a running node (not paused): no new claims; the job still running after the drain timeout
     * is told to stop and handed back without using an attempt; the node's leases are released; resumed,
     * the node works again.
     *
     * <p>Protection removed and seen failing: the hand-back after the drain timeout ({@code a.stop(DRAIN)}
     * in {@code Worker.handBack}) — the job stayed on the drained node.
     */
    @Test
    void aDrainedNodeHandsBackWhatStillRunsAfterTheDrainTimeoutAndReleasesItsLeases() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        List<Integer> attempts = new java.util.concurrent.CopyOnWriteArrayList<>();
        Baton node = start(nodeBuilder("drained")
                .application(APP, "1")
                .worker(fastWorker("default", 1)
                        .drainTimeout(Duration.ofMillis(300))
                        .build())
                .handle("slow", Item.class, (item, ctx) -> {
                    attempts.add(ctx.attempt());
                    started.countDown();
                    ctx.awaitCancellation(Duration.ofMinutes(5));
                }));
        Awaitility.await().atMost(WAIT).until(() -> leaseOwners().contains("drained"));
        long job = node.jobs().enqueue(JobRequest.of("slow", new Item("s"))).id();
        assertThat(started.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

        node.controls().drainNode("drained", "erin", null);
        Awaitility.await().atMost(WAIT).until(() -> row(job).state().equals("available"));
        assertThat(row(job).attempt()).as("handed back: no attempt used").isZero();
        Awaitility.await().atMost(WAIT).until(() -> !leaseOwners().contains("drained"));
        assertThat(node.heldByOperator()).isTrue();

        node.controls().resumeNode("drained", "erin");
        Awaitility.await().atMost(WAIT).until(() -> attempts.size() == 2);
        assertThat(attempts).containsExactly(1, 1);
    }

    /**
     * A disabled kind is not claimed (its jobs wait, using no attempt, and are not failed as unhandled)
     * while other kinds run; enabled again, its jobs run.
     *
     * <p>Protection removed and seen failing: the disabled kinds left out of the claim ({@code gate.kinds()}
     * replaced by every handled kind) — the disabled kind's job ran.
     */
    @Test
    void aDisabledKindWaitsWhileOthersRunAndRunsWhenEnabled() throws Exception {
        Baton node = start(nodeBuilder("kinds")
                .worker(fastWorker("default", 2).build())
                .handle("paused.kind", Item.class, (item, ctx) -> {})
                .handle("other", Item.class, (item, ctx) -> {}));
        node.controls().disableKind("paused.kind", "fay", "its downstream is down");
        awaitHeartbeats("kinds", 2);
        long waiting =
                node.jobs().enqueue(JobRequest.of("paused.kind", new Item("p"))).id();
        long other = node.jobs().enqueue(JobRequest.of("other", new Item("o"))).id();
        awaitState(node.jobs(), other, JobState.SUCCEEDED);
        awaitHeartbeats("kinds", 3);
        assertThat(row(waiting).state()).isEqualTo("available");
        assertThat(row(waiting).attempt()).isZero();

        node.controls().enableKind("paused.kind", "fay");
        awaitState(node.jobs(), waiting, JobState.SUCCEEDED);
    }

    // ---------------------------------------------------------------- helpers

    private Baton client(javax.sql.DataSource ds) {
        return Baton.builder(ds).schema(schema).build();
    }

    private static JobRequest external(int n) {
        return JobRequest.of("external", java.util.Map.of("n", n));
    }

    private void effect(JobContext ctx, String node) throws Exception {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.executeUpdate("INSERT INTO " + schema + ".effect (job_id, attempt, node, n) VALUES (" + ctx.jobId() + ", "
                    + ctx.attempt() + ", '" + node + "', 0)");
        }
    }

    private void createEffectTable() throws Exception {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + schema + ".effect (job_id bigint, attempt int, node text, n int)");
        }
    }

    private Set<String> leaseOwners() throws Exception {
        Set<String> owners = new HashSet<>();
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT owner_id FROM " + schema
                        + ".lease WHERE owner_id IS NOT NULL AND expires_at > clock_timestamp()")) {
            while (rs.next()) {
                owners.add(rs.getString(1));
            }
        }
        return owners;
    }

    private Timestamp heartbeatAt(String node) throws Exception {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement();
                ResultSet rs =
                        s.executeQuery("SELECT heartbeat_at FROM " + schema + ".node WHERE id = '" + node + "'")) {
            return rs.next() ? rs.getTimestamp(1) : new Timestamp(0);
        }
    }

    private String nodeState(String node) throws Exception {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT state FROM " + schema + ".node WHERE id = '" + node + "'")) {
            return rs.next() ? rs.getString(1) : null;
        }
    }

    private void awaitNodeState(String node, String state) {
        Awaitility.await().atMost(WAIT).until(() -> state.equals(nodeState(node)));
    }

    /** Waits until the node's heartbeat has advanced {@code beats} times: its own progress, not a sleep. */
    private void awaitHeartbeats(String node, int beats) throws Exception {
        awaitHeartbeats(node, beats, () -> {});
    }

    /** {@link #awaitHeartbeats(String, int)}, running {@code sample} at every poll. */
    private void awaitHeartbeats(String node, int beats, Sample sample) throws Exception {
        Set<Timestamp> seen = new HashSet<>();
        seen.add(heartbeatAt(node));
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            sample.run();
            seen.add(heartbeatAt(node));
            return seen.size() > beats;
        });
    }

    /** Something read from the database at every poll of a wait. */
    private interface Sample {
        void run() throws Exception;
    }
}
