package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** {@link Admin#queues()} (depth and lag on the database clock) and {@link Admin#throughput}. */
class AdminQueuesTest extends AdminTestBase {

    /**
     * A queue's lag is how long its oldest due available job has waited, on the database clock; a queue whose
     * jobs are all scheduled for later, or only running, has none. Depth and pause come from the queue stats.
     */
    @Test
    void queuesShowDepthAndLagOnTheDatabaseClock() throws Exception {
        long late = enqueue("k", "late");
        enqueue("k", "late");
        exec("UPDATE " + schema + ".job SET run_at = clock_timestamp() - interval '1 hour' WHERE id = ?", late);
        enqueue(JobRequest.of("k", new Item("later")).queue("later").delay(Duration.ofHours(1)));
        long running = enqueue("k", "busy");
        markRunning(running);
        jobs.pause("paused");

        Map<String, QueueInfo> q =
                admin.queues().stream().collect(Collectors.toMap(i -> i.stats().queue(), Function.identity()));
        assertThat(admin.queues().stream().map(i -> i.stats().queue()))
                .as("in name order")
                .containsExactly("busy", "late", "later", "paused");
        assertThat(q.get("late").stats().available()).isEqualTo(2);
        assertThat(q.get("late").lag()).isBetween(Duration.ofHours(1), Duration.ofHours(2));
        assertThat(q.get("later").lag()).as("nothing due yet").isEqualTo(Duration.ZERO);
        assertThat(q.get("busy").stats().running()).isEqualTo(1);
        assertThat(q.get("busy").lag()).isEqualTo(Duration.ZERO);
        assertThat(q.get("paused").stats().paused()).isTrue();
        assertThat(admin.queues().stream().map(QueueInfo::stats).toList()).isEqualTo(jobs.stats());
    }

    /**
     * Throughput counts each finished job once, in the bucket of its finish time, by outcome, for the whole
     * window and only it; every bucket is returned, empty ones too; a queue narrows it.
     */
    @Test
    void throughputCountsFinishedJobsPerBucketAndOutcome() throws Exception {
        Instant now = dbNow();
        List<Long> finished = new ArrayList<>();
        // finished 10 and 70 minutes ago (inside a 3 h window of 1 h buckets, however aligned) and 200 (outside)
        String[][] jobs = {
            {"q1", "succeeded", "10 minutes"},
            {"q1", "succeeded", "10 minutes"},
            {"q1", "failed", "10 minutes"},
            {"q2", "cancelled", "10 minutes"},
            {"q1", "succeeded", "70 minutes"},
            {"q2", "failed", "70 minutes"},
            {"q1", "succeeded", "200 minutes"},
        };
        for (String[] j : jobs) {
            long id = enqueue("k", j[0]);
            finish(id, JobState.valueOf(j[1].toUpperCase(java.util.Locale.ROOT)), null, null);
            exec("UPDATE " + schema + ".job SET finished_at = clock_timestamp() - ?::interval WHERE id = ?", j[2], id);
            finished.add(id);
        }
        enqueue("k", "q1"); // available: never counted

        Duration bucket = Duration.ofHours(1);
        List<ThroughputBucket> all = admin.throughput(Duration.ofHours(3), bucket);
        assertThat(all).hasSize(3);
        for (int i = 0; i < all.size(); i++) {
            assertThat(all.get(i).length()).isEqualTo(bucket);
            assertThat(all.get(i).start().toEpochMilli() % bucket.toMillis()).isZero();
            if (i > 0) {
                assertThat(all.get(i).start()).isEqualTo(all.get(i - 1).start().plus(bucket));
            }
        }
        assertThat(all.get(2).start()).isBeforeOrEqualTo(now);
        assertThat(all.get(2).start().plus(bucket)).isAfter(now);

        // Expected counts from the finish times as stored.
        long[][] expected = new long[3][3];
        for (long id : finished) {
            JobInfo j = admin.job(id).orElseThrow();
            Instant at = j.finishedAt().orElseThrow();
            for (int i = 0; i < 3; i++) {
                Instant start = all.get(i).start();
                if (!at.isBefore(start) && at.isBefore(start.plus(bucket))) {
                    expected[i][j.state().ordinal() - JobState.SUCCEEDED.ordinal()]++;
                }
            }
        }
        for (int i = 0; i < 3; i++) {
            ThroughputBucket b = all.get(i);
            assertThat(new long[] {b.succeeded(), b.failed(), b.cancelled()})
                    .as("bucket " + i)
                    .containsExactly(expected[i]);
        }
        long total = all.stream()
                .mapToLong(b -> b.succeeded() + b.failed() + b.cancelled())
                .sum();
        assertThat(total)
                .as("the 200-minute-old job is outside every alignment of a 3 h window")
                .isEqualTo(6);

        List<ThroughputBucket> q2 = admin.throughput("q2", Duration.ofHours(3), bucket);
        assertThat(q2.stream().mapToLong(ThroughputBucket::cancelled).sum()).isEqualTo(1);
        assertThat(q2.stream().mapToLong(ThroughputBucket::failed).sum()).isEqualTo(1);
        assertThat(q2.stream().mapToLong(ThroughputBucket::succeeded).sum()).isZero();

        List<ThroughputBucket> minutes = admin.throughput(Duration.ofMinutes(5), Duration.ofMinutes(1));
        assertThat(minutes)
                .hasSize(5)
                .allSatisfy(b ->
                        assertThat(b.succeeded() + b.failed() + b.cancelled()).isZero());
    }

    /** Bad windows and buckets are refused, naming the rule and the value. */
    @Test
    void badThroughputArgumentsAreRefused() {
        assertThatThrownBy(() -> admin.throughput(Duration.ofHours(1), Duration.ofMillis(500)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("bucket must be at least PT1S and a whole number of milliseconds, but was PT0.5S");
        assertThatThrownBy(() -> admin.throughput(Duration.ofHours(1), Duration.ofNanos(1_000_000_001L)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("bucket must be at least PT1S and a whole number of milliseconds, but was PT1.000000001S");
        assertThatThrownBy(() -> admin.throughput(Duration.ofMinutes(90), Duration.ofHours(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "window must be 1 to 1000 whole buckets of PT1H, but was PT1H30M (1 buckets and a remainder)");
        assertThatThrownBy(() -> admin.throughput(Duration.ofMinutes(30), Duration.ofHours(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("window must be 1 to 1000 whole buckets of PT1H, but was PT30M (shorter than one bucket)");
        assertThatThrownBy(() -> admin.throughput(Duration.ofSeconds(1001), Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("window must be 1 to 1000 whole buckets of PT1S, but was PT16M41S (1001 buckets)");
        assertThatThrownBy(() -> admin.throughput(null, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("window must be set, but was null");
        assertThatThrownBy(() -> admin.throughput(Duration.ofSeconds(1), Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("bucket must be positive, but was PT-1S");
        assertThatThrownBy(() -> admin.throughput("No Queue", Duration.ofHours(1), Duration.ofHours(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("queue must match [a-z0-9][a-z0-9_.-]{0,62}");
    }

    private Instant dbNow() throws Exception {
        try (Connection c = pool.getConnection();
                ResultSet rs = c.createStatement().executeQuery("SELECT clock_timestamp()")) {
            rs.next();
            return rs.getTimestamp(1).toInstant();
        }
    }
}
