package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.schedule.ScheduleStore;
import dev.baton.internal.schedule.Scheduler;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * Schedules created, updated and deleted at run time ({@link Schedules#create}, issue 15, decision 0021):
 * per-tenant cron, revisions, optimistic concurrency, the line between declared and runtime schedules, and
 * their survival across reconcilers of other application versions. Where a test proves a protection, its
 * comment says what was removed (in a scratch copy) and how the test failed.
 */
class RuntimeSchedulesTest extends ScheduleTestSupport {

    /** The report of tenant "acme" at 07:00 in the tenant's zone: one runtime schedule per tenant. */
    private static Schedule acmeReport(String cron) {
        return Schedule.cron("report:acme", cron).zone("Asia/Tokyo").job("tenant.report", Map.of("tenant", "acme"));
    }

    @Test
    void create_storesAPerTenantCronInTheTenantsZone_withOriginRevisionAndAuthor() {
        Schedules api = schedulesApi().changedBy("admin@acme");
        Instant before = Instant.now();

        ScheduleInfo s = api.create(acmeReport("0 7 * * *"));

        assertThat(s.origin()).isEqualTo(ScheduleOrigin.RUNTIME);
        assertThat(s.ownerApp()).isEmpty();
        assertThat(s.declaredBy()).isEmpty();
        assertThat(s.revision()).isPositive();
        assertThat(s.definitionVersion()).isEqualTo("r" + s.revision());
        assertThat(s.changedBy()).contains("admin@acme");
        assertThat(s.changedAt()).isPresent();
        assertThat(s.enabled()).isTrue();
        assertThat(s.timeZone()).isEqualTo("Asia/Tokyo");
        assertThat(s.jobKind()).isEqualTo("tenant.report");
        ZonedDateTime next = s.nextRunAt().atZone(ZoneId.of("Asia/Tokyo"));
        assertThat(next.getHour()).isEqualTo(7);
        assertThat(next.getMinute()).isZero();
        assertThat(s.nextRunAt()).isBefore(before.plus(Duration.ofHours(25)));
        assertThat(schedulesApi().get("report:acme")).contains(s);
        assertThat(schedulesApi().list(null, 10).items()).containsExactly(s);
        // Without an actor, the author is the node's application and version.
        ScheduleInfo other = schedulesApi()
                .create(Schedule.cron("report:globex", "0 7 * * *")
                        .zone("America/Chicago")
                        .job("tenant.report", Map.of("tenant", "globex")));
        assertThat(other.changedBy()).contains("default 0");
        assertThat(other.revision()).isNotEqualTo(s.revision());
    }

    /**
     * A runtime schedule fires through the same path as a declared one (the compare-and-set on its next run
     * and the enqueue keyed by the due instant, S01): schedulers of two applications firing it yield one job
     * per due instant, carrying the schedule's job; a manual trigger works as for a declared schedule.
     */
    @Test
    void create_firesEachDueInstantOnce_acrossSchedulers() throws Exception {
        blockNodeSchedulers();
        Schedules api = schedulesApi();
        ScheduleInfo s = api.create(Schedule.every("tick:acme", Duration.ofMillis(300))
                .job("tenant.tick", Map.of("tenant", "acme"))
                .priority(3));
        Scheduler a = scheduler(pool, "svc");
        Scheduler b = scheduler(appPool, "other");

        awaitDbClock(s.nextRunAt());
        int fired = a.fireDue() + b.fireDue();

        List<FiredJob> jobs = jobsOfKind("tenant.tick");
        assertThat(fired).isEqualTo(jobs.size());
        assertThat(jobs).extracting(j -> dueOf("tick:acme", j.key())).doesNotHaveDuplicates();
        assertThat(firedInstants("tick:acme", "tenant.tick")).first().isEqualTo(s.nextRunAt());
        JobInfo job = jobsApi().get(jobs.get(0).id()).orElseThrow();
        assertThat(job.priority()).isEqualTo(3);
        assertThat(job.payloadJson()).contains("acme");
        assertThat(api.trigger("tick:acme").created()).isTrue();
    }

    @Test
    void update_movesTheNextRunWhenTheTimingChanges_andRenewsTheRevision() {
        Schedules api = schedulesApi();
        ScheduleInfo created = api.create(acmeReport("0 7 * * *"));

        ScheduleInfo moved = api.changedBy("ops@acme").update(acmeReport("30 9 * * *"), created.revision());

        assertThat(moved.revision()).isGreaterThan(created.revision());
        assertThat(moved.definitionVersion()).isEqualTo("r" + moved.revision());
        assertThat(moved.changedBy()).contains("ops@acme");
        assertThat(moved.spec()).isEqualTo("30 9 * * *");
        ZonedDateTime next = moved.nextRunAt().atZone(ZoneId.of("Asia/Tokyo"));
        assertThat(next.getHour()).isEqualTo(9);
        assertThat(next.getMinute()).isEqualTo(30);

        // Same timing, another job: the next run stays where it was.
        ScheduleInfo rekinded = api.update(
                Schedule.cron("report:acme", "30 9 * * *").zone("Asia/Tokyo").job("tenant.report.v2", null),
                moved.revision());
        assertThat(rekinded.nextRunAt()).isEqualTo(moved.nextRunAt());
        assertThat(rekinded.jobKind()).isEqualTo("tenant.report.v2");
        assertThat(rekinded.revision()).isGreaterThan(moved.revision());
        // The last-writer-wins form renews the revision too.
        assertThat(api.update(acmeReport("0 7 * * *")).revision()).isGreaterThan(rekinded.revision());
    }

    /**
     * Two operators read revision r; the first update wins, the second is refused with the current revision
     * and changes nothing. A schedule deleted and created again does not reuse an old revision, so an update
     * based on the old schedule is refused too.
     *
     * <p>Removed and seen failing: (1) the revision condition of {@code runtime_update} ({@code AND
     * (:expected_revision::bigint IS NULL OR revision = ...)} dropped): the second update succeeded and
     * overwrote the first; (2) the revision sequence in {@code runtime_insert} ({@code r.rev} → {@code 1}, so
     * every new schedule starts at revision 1, with update's {@code r.rev} → {@code revision + 1}): the
     * re-created schedule took revision 1 again, the revision an update prepared against the deleted one
     * carries.
     */
    @Test
    void staleRevision_isRefused_andChangesNothing() {
        Schedules alice = schedulesApi().changedBy("alice");
        Schedules bob = schedulesApi().changedBy("bob");
        long r = alice.create(acmeReport("0 7 * * *")).revision();

        ScheduleInfo byAlice = alice.update(acmeReport("0 8 * * *"), r);
        assertThatThrownBy(() -> bob.update(acmeReport("0 9 * * *"), r))
                .isInstanceOfSatisfying(ScheduleConflictException.class, e -> {
                    assertThat(e.scheduleName()).isEqualTo("report:acme");
                    assertThat(e.currentRevision()).isEqualTo(byAlice.revision());
                })
                .hasMessageContaining("is at revision " + byAlice.revision())
                .hasMessageContaining("changed by alice")
                .hasMessageContaining("not " + r);
        assertThatThrownBy(() -> bob.delete("report:acme", r)).isInstanceOf(ScheduleConflictException.class);
        assertThat(schedulesApi().get("report:acme")).contains(byAlice);

        // Deleted and created again: the old revisions stay stale.
        assertThat(bob.delete("report:acme", byAlice.revision())).isTrue();
        ScheduleInfo again = bob.create(acmeReport("0 10 * * *"));
        assertThat(again.revision()).isNotIn(r, byAlice.revision());
        assertThatThrownBy(() -> alice.update(acmeReport("0 11 * * *"), r))
                .isInstanceOf(ScheduleConflictException.class);
        assertThat(schedulesApi().get("report:acme").orElseThrow().spec()).isEqualTo("0 10 * * *");
    }

    /**
     * A declared schedule cannot be created over, updated or deleted at run time; the error names the
     * declaring application and version. Conversely a node declaring a name a runtime schedule holds is
     * refused at start (decision 0021), and the runtime schedule stays as it was.
     *
     * <p>Removed and seen failing: the {@code owner_app = ''} condition of {@code runtime_update} and of
     * {@code runtime_delete}: the update rewrote the declared schedule and the delete deleted it. (The
     * refusal of the declaration is the owner check that also keeps applications apart, S05; its runtime
     * message is what this test pins.)
     */
    @Test
    void declaredAndRuntimeSchedules_cannotTakeEachOthersNames() {
        blockNodeSchedulers();
        Schedule declared = Schedule.cron("report:daily", "0 3 * * *").job("report.daily", null);
        node("shop-1", "shop", "1.4", declared);
        Schedules api = schedulesApi();
        ScheduleInfo before = info("report:daily");

        Schedule runtime = Schedule.cron("report:daily", "0 4 * * *").job("hijack", null);
        assertThatThrownBy(() -> api.create(runtime))
                .isInstanceOf(ScheduleConflictException.class)
                .hasMessageContaining("declared in code by application 'shop'")
                .hasMessageContaining("1.4");
        assertThatThrownBy(() -> api.update(runtime))
                .isInstanceOf(ScheduleConflictException.class)
                .hasMessageContaining("application 'shop'");
        assertThatThrownBy(() -> api.delete("report:daily"))
                .isInstanceOf(ScheduleConflictException.class)
                .hasMessageContaining("cannot delete");
        assertThat(info("report:daily")).isEqualTo(before);

        ScheduleInfo acme = api.create(acmeReport("0 7 * * *"));
        assertThatThrownBy(() -> node("shop-2", "shop", "1.5", declared, acmeReport("0 5 * * *")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'report:acme' was created at run time")
                .hasMessageContaining("Schedules.delete");
        assertThat(schedulesApi().get("report:acme")).contains(acme);
    }

    /**
     * Runtime schedules survive every application's reconciliation and the pruner: nodes of "svc" 1 and 2
     * (different declared sets) start and stop; the orphan checks of both applications, run with and
     * without a live version (what a node of schema version 5 to 7 runs too: those statements are
     * unchanged), disable only svc's orphaned declared schedule, and pruning with no retention deletes only
     * that one.
     *
     * <p>Removed and seen failing: the runtime marker ({@code runtime_insert} storing {@code owner_app =
     * 'svc'}, the creating node's application, instead of {@code ''}): svc's orphan check disabled the runtime
     * schedules (and the pruner deleted them: 4 pruned instead of 2).
     */
    @Test
    void reconcilersOfEveryVersion_neitherDisableNorDeleteRuntimeSchedules() throws Exception {
        blockNodeSchedulers();
        Baton v1 = node("svc-1", "svc", "1", Schedule.cron("B", "0 4 * * *").job("b", null));
        Baton v2 = node("svc-2", "svc", "2", Schedule.cron("C", "0 5 * * *").job("c", null));
        ScheduleInfo acme = v1.schedules().create(acmeReport("0 7 * * *"));
        ScheduleInfo globex = v2.schedules()
                .create(Schedule.every("tick:globex", Duration.ofMinutes(5)).job("tenant.tick", null));

        v1.close();
        v2.schedules().reconcile("svc", "2");
        assertThat(info("report:acme").enabled()).isTrue();
        assertThat(info("tick:globex").enabled()).isTrue();
        assertThat(v2.schedules().disableOrphans("svc", "2")).isSubsetOf("B");
        assertThat(info("B").enabled()).isFalse();
        v2.close();
        for (String app : List.of("svc", "default", "other")) {
            assertThat(schedulesApi().disableOrphans(app)).as(app).doesNotContain("report:acme", "tick:globex");
            schedulesApi().reconcile(app, "9");
        }
        assertThat(info("report:acme").enabled()).isTrue();
        assertThat(info("C").enabled()).isFalse();
        try (Connection c = pool.getConnection()) {
            assertThat(new ScheduleStore(schema).prune(c, Duration.ZERO, 100)).isEqualTo(2);
        }
        assertThat(schedulesApi().list(null, 10).items())
                .extracting(ScheduleInfo::name)
                .containsExactly("report:acme", "tick:globex");
        assertThat(schedulesApi().get("report:acme")).contains(acme);
        assertThat(schedulesApi().get("tick:globex")).contains(globex);
    }

    /**
     * Concurrent creates of one name: one schedule, the others get a {@link ScheduleConflictException} naming
     * the winner's revision, and the stored definition is the winner's. The second part makes the overlap
     * certain: a create waits on another transaction's uncommitted insert of the name, and after that commits
     * it is refused (not a unique violation, not an overwrite).
     *
     * <p>Removed and seen failing: {@code ON CONFLICT (name) DO NOTHING} of {@code runtime_insert} replaced by
     * {@code DO UPDATE SET spec = excluded.spec, revision = excluded.revision}: every create "succeeded" and
     * the last overwrote the others.
     */
    @Test
    void racingCreatesOfOneName_oneWins_theOthersAreRefused() throws Exception {
        int n = 6;
        ExecutorService threads = Executors.newFixedThreadPool(n);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<ScheduleInfo>> calls = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int minute = i;
                // A pool per caller, as separate nodes would have (the user pool profile has 2 connections).
                Schedules api = Baton.builder(closeLater(PG.newApplicationPool("race-" + i, 2)))
                        .schema(schema)
                        .build()
                        .schedules();
                calls.add(threads.submit(() -> {
                    go.await();
                    return api.create(acmeReport(minute + " 7 * * *"));
                }));
            }
            go.countDown();
            List<ScheduleInfo> won = new ArrayList<>();
            List<ScheduleConflictException> refused = new ArrayList<>();
            for (Future<ScheduleInfo> f : calls) {
                try {
                    won.add(f.get());
                } catch (java.util.concurrent.ExecutionException e) {
                    assertThat(e.getCause()).isInstanceOf(ScheduleConflictException.class);
                    refused.add((ScheduleConflictException) e.getCause());
                }
            }
            assertThat(won).hasSize(1);
            assertThat(refused).hasSize(n - 1).allSatisfy(e -> {
                assertThat(e.currentRevision()).isEqualTo(won.get(0).revision());
                assertThat(e.getMessage()).contains("already exists");
            });
            assertThat(schedulesApi().get("report:acme").orElseThrow().spec())
                    .isEqualTo(won.get(0).spec());
        } finally {
            threads.shutdownNow();
        }

        // Certain overlap: another transaction has inserted "report:globex" and not committed.
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            ScheduleStore store = new ScheduleStore(schema);
            store.runtimeInsert(
                    c,
                    new ScheduleStore.Definition(
                            "report:globex",
                            "cron",
                            "0 6 * * *",
                            "UTC",
                            "tenant.report",
                            "default",
                            "null",
                            50,
                            3,
                            "run_once",
                            0,
                            60_000,
                            false),
                    Instant.now().plus(Duration.ofDays(1)),
                    "first");
            CompletableFuture<ScheduleInfo> second = CompletableFuture.supplyAsync(() -> schedulesApi()
                    .create(Schedule.cron("report:globex", "0 8 * * *").job("tenant.report", null)));
            Awaitility.await().atMost(WAIT).until(() -> backendsWaitingOnLock() > 0);
            c.commit();
            assertThatThrownBy(second::join)
                    .hasCauseInstanceOf(ScheduleConflictException.class)
                    .hasMessageContaining("already exists")
                    .hasMessageContaining("changed by first");
        }
        assertThat(schedulesApi().get("report:globex").orElseThrow().spec()).isEqualTo("0 6 * * *");
    }

    /**
     * Delete: no more firings; jobs fired before stay. A firing that read the schedule before a delete
     * committed, and reached its compare-and-set after, rolls back: no job is enqueued for a deleted schedule
     * once the delete has committed.
     *
     * <p>Removed and seen failing: the roll-back of a firing whose compare-and-set matched nothing
     * ({@code Scheduler.fireIn}: {@code if (!advanced) throw new LostRace()} dropped): the firing blocked on
     * the uncommitted delete committed a job of the deleted schedule.
     */
    @Test
    void delete_stopsFirings_andAFiringInFlightRollsBack() throws Exception {
        blockNodeSchedulers();
        Schedules api = schedulesApi();
        Scheduler scheduler = scheduler(pool, "svc");
        ScheduleInfo s =
                api.create(Schedule.every("tick:acme", Duration.ofMillis(200)).job("tenant.tick", null));
        awaitDbClock(s.nextRunAt());
        assertThat(scheduler.fireDue()).isPositive();
        int before = jobsOfKind("tenant.tick").size();

        assertThat(api.delete("tick:acme", s.revision())).isTrue();
        assertThat(api.get("tick:acme")).isEmpty();
        assertThat(api.delete("tick:acme")).isFalse();
        awaitDbClock(s.nextRunAt().plus(Duration.ofSeconds(1)));
        assertThat(scheduler.fireDue()).isZero();
        assertThat(jobsOfKind("tenant.tick")).hasSize(before);

        // A firing in flight: it has read the due schedule and waits at its compare-and-set on the row the
        // (uncommitted) delete holds.
        ScheduleInfo t =
                api.create(Schedule.every("tick:globex", Duration.ofMillis(200)).job("globex.tick", null));
        awaitDbClock(t.nextRunAt());
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            assertThat(new ScheduleStore(schema).runtimeDelete(c, "tick:globex", null))
                    .isTrue();
            CompletableFuture<Integer> firing = CompletableFuture.supplyAsync(() -> {
                try {
                    return scheduler.fireDue();
                } catch (java.sql.SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            Awaitility.await().atMost(WAIT).until(() -> backendsWaitingOnLock() > 0);
            c.commit();
            assertThat(firing.get()).isZero();
        }
        assertThat(jobsOfKind("globex.tick")).isEmpty();
    }

    /**
     * Creating a schedule wakes the node schedulers (the 'changed' notification), so its first due instant
     * fires on time rather than after the scheduler's longest wait (30 s while notifications arrive; the
     * test waits at most {@code WAIT}, 20 s unscaled). Through a transaction pooler nodes poll (100 ms here),
     * so the test shows the same there without the notification.
     *
     * <p>Removed and seen failing (direct connection): {@code store.notifyChanged(c)} in {@code create}: the
     * job did not run within the wait.
     */
    @Test
    void create_wakesTheSchedulers_soTheFirstInstantFires() throws Exception {
        List<String> ran = new CopyOnWriteArrayList<>();
        // A declared probe that fires once (at a given second of the year), 3 s from now: once its job has
        // run, the scheduler has fired it and gone to sleep for its longest wait (nothing else is due).
        ZonedDateTime at = dbNow().plusSeconds(3).atZone(ZoneId.of("UTC"));
        String once = at.getSecond() + " " + at.getMinute() + " " + at.getHour() + " " + at.getDayOfMonth() + " "
                + at.getMonthValue() + " *";
        HikariDataSource ds = closeLater(PG.newApplicationPool("wake-node", 8));
        Baton node = startNode(nodeBuilder("wake-node", ds)
                .application("svc", "1")
                .worker(fastWorker("default", 2).build())
                .schedule(Schedule.cron("probe", once).job("tenant.tick", "probe"))
                .handle("tenant.tick", String.class, (tenant, ctx) -> ran.add(tenant)));
        Awaitility.await().atMost(WAIT).until(() -> ran.contains("probe"));

        node.schedules()
                .create(Schedule.every("tick:acme", Duration.ofSeconds(1)).job("tenant.tick", "acme"));

        Awaitility.await().atMost(WAIT).until(() -> ran.contains("acme"));
    }

    @Test
    void badInput_isRefusedWithTheRule_andChangesNothing() {
        Schedules api = schedulesApi();
        assertThatThrownBy(() -> api.create(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("schedule must not be null");
        assertThatThrownBy(() -> api.create(Schedule.cron("report:acme", "0 7 * * *")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("has no job");
        assertThatThrownBy(() -> api.create(
                        Schedule.every("sweep:mine", Duration.ofMinutes(1)).job("x", null)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reserved for the sweeps");
        assertThatThrownBy(() ->
                        api.create(Schedule.cron("report:acme", "0 0 30 2 *").job("x", null)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("never fires");
        assertThatThrownBy(() -> api.create(Schedule.cron("report:acme", "0 7 * *")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must have 5 fields");
        assertThatThrownBy(() ->
                        api.create(Schedule.cron("report:acme", "0 7 * * *").zone("Mars/Olympus")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("time zone 'Mars/Olympus'");
        assertThatThrownBy(() -> api.update(acmeReport("0 7 * * *"), 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("expectedRevision must be")
                .hasMessageContaining("but was 0");
        assertThatThrownBy(() -> api.update(acmeReport("0 7 * * *"), 5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no schedule named 'report:acme'");
        assertThatThrownBy(() -> api.delete("report:acme", -1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("expectedRevision");
        assertThatThrownBy(() -> api.delete(""))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("schedule name");
        assertThatThrownBy(() -> api.get(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("schedule name");
        assertThatThrownBy(() -> api.changedBy(""))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("actor");
        assertThat(api.list(null, 10).items()).isEmpty();
    }

    private Baton node(String id, String app, String version, Schedule... schedules) {
        HikariDataSource ds = closeLater(PG.newApplicationPool("rt-" + id, 6));
        Baton.Builder b = nodeBuilder(id, ds).application(app, version);
        for (Schedule s : schedules) {
            b.schedule(s);
        }
        return startNode(b);
    }
}
