package dev.baton.test;

import static dev.baton.test.BatonAssertions.assertNotEnqueued;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.Baton;
import dev.baton.JobHandler;
import dev.baton.JobInfo;
import dev.baton.JobRequest;
import dev.baton.JobState;
import dev.baton.RetryPolicy;
import dev.baton.WorkerConfig;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The inline runner runs due jobs on the test thread through the worker's path: the handler's context,
 * its transaction, retries with backoff and permanent failures, each recorded before it returns.
 */
@BatonTest
class InlineWorkerTest {
    record Receipt(long orderId) {}

    BatonTestDatabase db;
    Baton baton;
    EnqueuedJobs jobs;
    /** (kind, attempt) of every handler call, in order. */
    final List<String> calls = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void tables(BatonTestDatabase db) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + db.schema() + ".receipts (order_id bigint PRIMARY KEY, job_id bigint)");
            if (!c.getAutoCommit()) {
                c.commit();
            }
        }
    }

    @BeforeEach
    void build(BatonTestDatabase db) {
        this.db = db;
        baton = db.batonBuilder()
                .worker(WorkerConfig.builder()
                        .queue("default", 2)
                        .queue("mail", 1)
                        .build())
                .handle("receipt.send", Receipt.class, (r, ctx) -> {
                    calls.add("receipt.send#" + ctx.attempt());
                    ctx.transaction(tx -> {
                        try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + db.schema()
                                + ".receipts (order_id, job_id) VALUES (?, ?) ON CONFLICT DO NOTHING")) {
                            ps.setLong(1, r.orderId());
                            ps.setLong(2, ctx.jobId());
                            return ps.executeUpdate();
                        }
                    });
                })
                .handle(
                        "flaky",
                        Receipt.class,
                        (r, ctx) -> {
                            calls.add("flaky#" + ctx.attempt() + "/" + ctx.maxAttempts());
                            if (ctx.attempt() < 3) {
                                throw new IllegalStateException("down on attempt " + ctx.attempt());
                            }
                        },
                        RetryPolicy.exponential(Duration.ofHours(1), Duration.ofHours(2)))
                .handle("doomed", Receipt.class, (r, ctx) -> {
                    calls.add("doomed#" + ctx.attempt());
                    throw new JobHandler.PermanentFailure("order " + r.orderId() + " does not exist");
                })
                .build(); // not started: no worker thread
        jobs = EnqueuedJobs.of(baton);
    }

    @AfterEach
    void close() {
        baton.close();
    }

    @Test
    void aDueJobRunsOnTheTestThreadAndItsTransactionCommitsWithTheCompletion() throws SQLException {
        long id = baton.jobs()
                .enqueue(JobRequest.of("receipt.send", new Receipt(7)))
                .id();

        InlineRun run = InlineWorker.of(baton).runDue();

        assertThat(run.succeeded()).containsExactly(id);
        assertThat(run.ran()).isEqualTo(1);
        assertThat(calls).containsExactly("receipt.send#1");
        assertThat(state(id)).isEqualTo(JobState.SUCCEEDED);
        assertThat(receiptJob(7)).isEqualTo(id); // written in ctx.transaction, committed with the completion
        assertNotEnqueued(jobs, "receipt.send");
    }

    @Test
    void runDueRunsOnlyDueJobsAndTheQueueAsked() {
        long later = baton.jobs()
                .enqueue(JobRequest.of("receipt.send", new Receipt(8)).delay(Duration.ofHours(1)))
                .id();
        long mail = baton.jobs()
                .enqueue(JobRequest.of("receipt.send", new Receipt(9)).queue("mail"))
                .id();
        InlineWorker inline = InlineWorker.of(baton);

        assertThat(inline.runDue("default").ran()).isZero(); // the only default job is not due for an hour
        assertThat(inline.runDue("mail").succeeded()).containsExactly(mail);
        assertThat(state(later)).isEqualTo(JobState.AVAILABLE);
        assertThatThrownBy(() -> inline.runDue("nobody-serves-this"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not served");

        assertThat(inline.drain().succeeded()).containsExactly(later); // drain makes it due now
    }

    @Test
    void aFailingAttemptIsRetriedAfterItsBackoffAndDrainRunsItToSuccess() {
        long id = baton.jobs()
                .enqueue(JobRequest.of("flaky", new Receipt(1)).maxAttempts(5))
                .id();
        InlineWorker inline = InlineWorker.of(baton);

        InlineRun first = inline.runDue();
        assertThat(first.retried()).containsExactly(id);
        JobInfo afterFirst = baton.jobs().get(id).orElseThrow();
        assertThat(afterFirst.state()).isEqualTo(JobState.AVAILABLE);
        assertThat(afterFirst.attempt()).isEqualTo(1);
        assertThat(afterFirst.errors()).hasSize(1);
        assertThat(afterFirst.errors().get(0).message()).isEqualTo("down on attempt 1");
        // The backoff is an hour: the job is not due, so runDue leaves it.
        assertThat(inline.runDue().ran()).isZero();

        InlineRun drained = inline.drain();
        assertThat(drained.retried()).containsExactly(id);
        assertThat(drained.succeeded()).containsExactly(id);
        assertThat(calls).containsExactly("flaky#1/5", "flaky#2/5", "flaky#3/5");
        assertThat(state(id)).isEqualTo(JobState.SUCCEEDED);
    }

    @Test
    void theLastAttemptEndsTheJobFailed() {
        long id = baton.jobs()
                .enqueue(JobRequest.of("flaky", new Receipt(2)).maxAttempts(2))
                .id();

        InlineRun run = InlineWorker.of(baton).drain();

        assertThat(run.retried()).containsExactly(id);
        assertThat(run.failed()).containsExactly(id);
        assertThat(state(id)).isEqualTo(JobState.FAILED);
        assertThat(baton.jobs().get(id).orElseThrow().errors()).hasSize(2);
    }

    @Test
    void aPermanentFailureEndsTheJobAtOnce() {
        long id = baton.jobs()
                .enqueue(JobRequest.of("doomed", new Receipt(3)).maxAttempts(5))
                .id();

        InlineRun run = InlineWorker.of(baton).drain();

        assertThat(run.failed()).containsExactly(id);
        assertThat(run.retried()).isEmpty();
        assertThat(calls).containsExactly("doomed#1");
        JobInfo job = baton.jobs().get(id).orElseThrow();
        assertThat(job.state()).isEqualTo(JobState.FAILED);
        assertThat(job.errors().get(0).message()).isEqualTo("order 3 does not exist");
    }

    @Test
    void aCancelledJobIsNotRun() {
        long id = baton.jobs()
                .enqueue(JobRequest.of("receipt.send", new Receipt(4)))
                .id();
        baton.jobs().cancel(id);

        assertThat(InlineWorker.of(baton).drain().ran()).isZero();
        assertThat(calls).isEmpty();
    }

    @Test
    void drainStopsAtItsBound() {
        baton.jobs().enqueue(JobRequest.of("flaky", new Receipt(5)).maxAttempts(5));

        assertThatThrownBy(() -> InlineWorker.of(baton).drain(2))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("drain ran 2 attempts (its bound)");
    }

    @Test
    void aNodeWithoutAWorkerHasNothingToRunInline() {
        try (Baton plain = db.batonBuilder().build()) {
            assertThatThrownBy(() -> InlineWorker.of(plain))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("has no worker");
        }
    }

    private JobState state(long id) {
        return baton.jobs().get(id).orElseThrow().state();
    }

    private long receiptJob(long orderId) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT job_id FROM " + db.schema() + ".receipts WHERE order_id = ?")) {
            ps.setLong(1, orderId);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("a receipt row for order " + orderId).isTrue();
                long jobId = rs.getLong(1);
                if (!c.getAutoCommit()) {
                    c.rollback();
                }
                return jobId;
            }
        }
    }
}
