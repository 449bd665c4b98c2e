package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

class SchedulesSmokeTest extends DbTest {

    @Test
    void intervalScheduleFiresOncePerDueInstantAcrossTwoNodes() throws Exception {
        Set<String> runs = ConcurrentHashMap.newKeySet();
        java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
        for (String id : new String[] {"a", "b"}) {
            closeLater(Baton.builder(appPool)
                            .schema(schema)
                            .nodeId(id)
                            .application("svc", "1")
                            .worker(WorkerConfig.builder()
                                    .queue("default", 2)
                                    .jobLease(Duration.ofSeconds(2))
                                    .heartbeatInterval(Duration.ofMillis(200))
                                    .pollInterval(Duration.ofMillis(100))
                                    .build())
                            .maintenance(fastLeadership())
                            .handle("tick", Object.class, (p, ctx) -> calls.incrementAndGet())
                            .schedule(Schedule.every("tick", Duration.ofMillis(500))
                                    .job("tick", null))
                            .sweep("purge", Duration.ofMillis(500), ctx -> runs.add(ctx.idempotencyKey()))
                            .build())
                    .start();
        }
        Awaitility.await().atMost(WAIT).until(() -> calls.get() >= 4 && runs.size() >= 2);
        Awaitility.await()
                .atMost(WAIT)
                .untilAsserted(() -> assertThat(count(
                                "SELECT count(*) FROM " + schema + ".job WHERE kind = 'tick' AND state <> 'succeeded'"))
                        .isLessThanOrEqualTo(1));
        assertThat(count("SELECT count(*) FROM (SELECT idempotency_key FROM " + schema
                        + ".job WHERE kind = 'tick' GROUP BY 1 HAVING count(*) > 1) d"))
                .isZero();
        var info = node("observer").schedules().list(null, 100).items();
        assertThat(info).extracting(ScheduleInfo::name).containsExactly("sweep:purge", "tick");
        assertThat(info.get(1).declaredBy()).containsExactly("1");
        assertThat(info.get(1).nextRunAt()).isAfter(Instant.EPOCH);
    }

    @Test
    void badDeclarationsAreRefused() {
        assertThatThrownBy(() -> Schedule.cron("x", "61 * * * *")).hasMessageContaining("cron expression '61 * * * *'");
        assertThatThrownBy(() -> Schedule.cron("x", "* * *")).hasMessageContaining("must have 5 fields");
        assertThatThrownBy(() -> Schedule.cron("x", "0 3 * * *").zone("Mars/Olympus"))
                .hasMessageContaining("unknown");
        assertThatThrownBy(() -> Schedule.every("x", Duration.ZERO)).hasMessageContaining("at least PT0.1S");
        assertThatThrownBy(() -> Schedule.every("x", Duration.ofSeconds(-1))).hasMessageContaining("PT-1S");
        assertThatThrownBy(() -> Schedule.every("x", Duration.ofSeconds(1)).catchUp(0))
                .hasMessageContaining("1 to 1000");
        assertThatThrownBy(() -> Baton.builder(pool).schedule(Schedule.every("x", Duration.ofSeconds(1))))
                .hasMessageContaining("has no job");
    }
}
