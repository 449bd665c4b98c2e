package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * E05: identifiers at their limits: a 63-character schema, the longest lease, node, queue, kind, key and
 * schedule names allowed, non-ASCII names and payloads. Every operation works end to end; a value past a
 * limit is refused where it is declared, with a clear error.
 */
class IdentifierLimitsTest extends LeadershipDbTest {
    /** 200 characters, most of them outside ASCII (2 to 4 bytes each in UTF-8). */
    private static String longest(String prefix) {
        StringBuilder sb = new StringBuilder(prefix);
        String[] tail = {"é", "ß", "ж", "東", "🚀"}; // the rocket is two chars (a surrogate pair)
        int i = 0;
        while (sb.length() < 199) {
            sb.append(tail[i++ % tail.length]);
        }
        while (sb.length() < 200) {
            sb.append('z');
        }
        return sb.toString();
    }

    /**
     * Protection removed and seen failing: channel names derived within 63 bytes ({@code Identifiers.channel}
     * back to {@code schema + ".job"}): with the 63-character schema the enqueue's pg_notify failed
     * ("channel name too long") and nothing ran; before S07 the 150-character schedule name had no limit
     * and a longer one failed at every firing instead of at declaration.
     */
    @Test
    void E05_everyOperationWorksWithIdentifiersAtTheirLimits() throws Exception {
        String longSchema = ("e05_" + schema + "_").concat("x".repeat(63)).substring(0, 63);
        closeLater(() -> PG.dropSchema(longSchema));
        String queue = ("q" + "0123456789".repeat(7)).substring(0, 63);
        String kind = longest("kind-");
        String nodeA = longest("node-a-");
        String lease = longest("lease-");
        String scheduleName = "s".repeat(Schedule.MAX_NAME_LENGTH - 3) + "ñé✓";
        Set<String> payloads = ConcurrentHashMap.newKeySet();
        Baton a = closeLater(Baton.builder(appPool)
                        .schema(longSchema)
                        .nodeId(nodeA)
                        .nodeHeartbeat(Duration.ofMillis(200))
                        .notifications(PG.pooled() ? NotificationMode.POLL : NotificationMode.AUTO)
                        .maintenance(fastLeadership())
                        .worker(WorkerConfig.builder()
                                .queue(queue, 2)
                                .jobLease(Duration.ofSeconds(2))
                                .heartbeatInterval(Duration.ofMillis(200))
                                .pollInterval(Duration.ofMillis(50))
                                .build())
                        .handle(kind, String.class, (p, ctx) -> payloads.add(p))
                        .schedule(Schedule.every(scheduleName, Duration.ofMillis(200))
                                .job(kind, "from the schedule")
                                .queue(queue))
                        .build())
                .start();
        for (String channel : List.of("lease", "job", "schedule")) {
            assertThat(Identifiers.channel(longSchema, channel).getBytes(java.nio.charset.StandardCharsets.UTF_8))
                    .hasSizeLessThanOrEqualTo(63);
        }
        if (!PG.pooled() && !PG.userPoolProfile()) {
            assertThat(a.notificationsActive())
                    .as("LISTEN on the derived channels")
                    .isTrue();
        }

        // Jobs: longest kind, queue, keys; a payload outside ASCII.
        String payload = "grüße 🚀 " + longest("p-");
        EnqueueResult job = a.jobs()
                .enqueue(JobRequest.of(kind, payload)
                        .queue(queue)
                        .idempotencyKey(longest("idem-"))
                        .concurrencyKey(longest("conc-")));
        Awaitility.await()
                .atMost(WAIT)
                .until(() -> a.jobs().get(job.id()).map(JobInfo::state).orElse(null) == JobState.SUCCEEDED);
        assertThat(payloads).contains(payload);
        Awaitility.await().atMost(WAIT).until(() -> payloads.contains("from the schedule"));
        assertThat(a.jobs()
                        .enqueue(JobRequest.of(kind, payload).queue(queue).idempotencyKey(longest("idem-")))
                        .created())
                .isFalse();
        assertThat(a.schedules().list(null, 10).items())
                .extracting(ScheduleInfo::name)
                .containsExactly(scheduleName);

        // A batch large enough for COPY in binary format (100 jobs or more without idempotency keys), the same
        // names at their limits, a concurrency key on half of it: every job stored as sent and run.
        List<JobRequest> batch = new java.util.ArrayList<>();
        List<String> sent = new java.util.ArrayList<>();
        for (int i = 0; i < 120; i++) {
            sent.add("batch " + i + " " + payload);
            JobRequest r = JobRequest.of(kind, sent.get(i)).queue(queue);
            batch.add(i % 2 == 0 ? r.concurrencyKey(longest("conc-" + (i % 4) + "-")) : r);
        }
        List<EnqueueResult> copied = a.jobs().enqueueAll(batch);
        assertThat(copied)
                .hasSize(batch.size())
                .allSatisfy(r -> assertThat(r.created()).isTrue());
        assertThat(a.jobs().get(copied.get(0).id()).orElseThrow())
                .satisfies(j -> assertThat(j.kind()).isEqualTo(kind))
                .satisfies(j -> assertThat(j.queue()).isEqualTo(queue));
        Awaitility.await().atMost(WAIT).until(() -> payloads.containsAll(sent));

        // Leases: the longest name, fenced writes, a hand-off to a second node woken by the release.
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(
                    c, "CREATE TABLE \"" + longSchema + "\".ledger (seq bigserial PRIMARY KEY, generation bigint)");
        }
        Recorder ra = new Recorder();
        Leadership runner = a.leadership(
                        lease,
                        fastLeadership(),
                        ctx -> {
                            ctx.fenced(tx -> {
                                try (var ps = tx.prepareStatement(
                                        "INSERT INTO \"" + longSchema + "\".ledger (generation) VALUES (?)")) {
                                    ps.setLong(1, ctx.grant().generation());
                                    return ps.executeUpdate();
                                }
                            });
                            ctx.awaitCancellation(Duration.ofMinutes(1));
                        },
                        ra)
                .start();
        LeaseGrant ga = ra.awaitElected().grant();
        assertThat(ga.name()).isEqualTo(lease);
        Baton b = closeLater(Baton.builder(appPool)
                        .schema(longSchema)
                        .nodeId(longest("node-b-"))
                        .nodeHeartbeat(Duration.ofMillis(200))
                        .maintenance(fastLeadership())
                        .notifications(PG.pooled() ? NotificationMode.POLL : NotificationMode.AUTO)
                        .build())
                .start();
        Recorder rb = new Recorder();
        b.leadership(lease, fastLeadership(), idleTask(), rb).start();
        runner.stop();
        assertThat(rb.awaitElected().grant().generation()).isGreaterThan(ga.generation());
        assertThat(b.leases().history(lease, 10)).hasSizeGreaterThanOrEqualTo(2);
        assertThat(b.nodes().ownership().ownerOf(lease)).contains(longest("node-b-"));

        // Coordination primitives, every name and key at its longest.
        Coordination c = b.coordination();
        String delivery = ("délivrance-" + "🚀".repeat(250)).substring(0, 500);
        assertThat(c.firstDelivery(longest("src-"), delivery, Duration.ofMinutes(1)))
                .isTrue();
        assertThat(c.firstDelivery(longest("src-"), delivery, Duration.ofMinutes(1)))
                .isFalse();
        String token = c.tokens().mint(longest("purpose-"), longest("subject-"), Duration.ofMinutes(1));
        assertThat(c.tokens().consume(longest("purpose-"), token)).contains(longest("subject-"));
        try (ConcurrencyCap.Permit p = c.concurrencyCap(longest("cap-"), 1, Duration.ofMinutes(1), 0)
                .tryAcquire(longest("key-"))
                .orElseThrow()) {
            assertThat(p.local()).isFalse();
        }
        assertThat(c.rateLimiter(longest("rl-"), 1, Duration.ofMinutes(1), 0)
                        .tryAcquire(longest("ip-"))
                        .allowed())
                .isTrue();
        assertThat(c.withClaimLock(List.of(longest("lock-a-"), longest("lock-b-")), Duration.ofSeconds(1), claim -> 7))
                .contains(7);
        assertThat(c.withLease(
                        longest("wl-"),
                        Duration.ofSeconds(5),
                        Duration.ofSeconds(1),
                        Duration.ofMillis(50),
                        g -> g.name()))
                .contains(longest("wl-"));
        assertThat(c.fallbacks()).isZero();
    }

    /** One past each limit: refused where it is declared, naming the limit (bad input, changes nothing). */
    @Test
    void E05_valuesPastTheLimitsAreRefusedWhereTheyAreDeclared() {
        assertThatThrownBy(() -> Baton.builder(appPool).schema("s".repeat(64)))
                .hasMessageContaining("at most 63 characters");
        assertThatThrownBy(() -> Baton.builder(appPool).nodeId(longest("n-") + "x"))
                .hasMessageContaining("1 to 200 characters, but was 201");
        assertThatThrownBy(() -> JobRequest.of(longest("k-") + "x", null)).hasMessageContaining("job kind");
        assertThatThrownBy(() -> JobRequest.of("k", null).queue("q".repeat(64))).hasMessageContaining("at most 63");
        assertThatThrownBy(() -> JobRequest.of("k", null).idempotencyKey(longest("i-") + "x"))
                .hasMessageContaining("idempotencyKey");
        assertThatThrownBy(() -> Schedule.every("s".repeat(151), Duration.ofMinutes(1)))
                .hasMessageContaining("schedule name must be 1 to 150 characters");
        assertThatThrownBy(() -> leases.tryAcquire(longest("l-") + "x", "o", Duration.ofSeconds(1)))
                .hasMessageContaining("lease name");
        Optional<LeaseGrant> ok = leases.tryAcquire(longest("l-"), longest("o-"), Duration.ofSeconds(1));
        assertThat(ok).isPresent();
    }
}
