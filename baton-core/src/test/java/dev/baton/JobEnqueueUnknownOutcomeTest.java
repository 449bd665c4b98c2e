package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.baton.internal.job.EnqueueWakes;
import dev.baton.testkit.FaultProxy;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * L17 for enqueues: an enqueue whose answer is lost after the server got it. On an auto-commit connection an
 * enqueue of one job, or of a batch without keys below the COPY threshold, is one statement that commits on its
 * own, so the server may have committed it: reported as {@link UnknownOutcomeException}, and the job is there. On
 * a connection with {@code autoCommit=false} Baton sends COMMIT itself; the answer to the insert is lost before
 * it, so nothing committed: a plain failure, and no job.
 *
 * <p>Protection removed to see it fail: the connection-failure branch of {@code Db.write}; both auto-commit cases
 * then got a {@link BatonException} saying the enqueue "failed" while the jobs had committed.
 */
class JobEnqueueUnknownOutcomeTest extends JobTestSupport {
    record Item(int n) {}

    private final AtomicLong clock = new AtomicLong();

    @ParameterizedTest(name = "autoCommit={0}")
    @ValueSource(booleans = {true, false})
    void L17_anEnqueueWhoseAnswerIsLostIsUnknownWhereItMayHaveCommitted(boolean autoCommit) throws Exception {
        Throwable lost = answerLost(
                autoCommit,
                jobs -> jobs.enqueue(
                        JobRequest.of("kind.lost", new Item(1)).queue("lost").idempotencyKey("order-42")));
        assertReported(lost, autoCommit, "an enqueue of a 'kind.lost' job");
        assertThat(jobsWithKey("order-42"))
                .as("the lost enqueue committed only where Baton did not send COMMIT itself")
                .isEqualTo(autoCommit ? 1 : 0);
        // Retried with the same key, on a healthy connection: one job in either case.
        EnqueueResult retried = jobsApi()
                .enqueue(JobRequest.of("kind.lost", new Item(1)).queue("lost").idempotencyKey("order-42"));
        assertThat(retried.created()).isEqualTo(!autoCommit);
        assertThat(jobsWithKey("order-42")).isEqualTo(1);
    }

    @ParameterizedTest(name = "autoCommit={0}")
    @ValueSource(booleans = {true, false})
    void L17_aBatchEnqueueWhoseAnswerIsLostIsUnknownWhereItMayHaveCommitted(boolean autoCommit) throws Exception {
        List<JobRequest> batch = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            batch.add(JobRequest.of("kind.batch", new Item(i)).queue("lost"));
        }
        Throwable lost = answerLost(autoCommit, jobs -> jobs.enqueueAll(batch));
        assertReported(lost, autoCommit, "a batch enqueue of 10 jobs");
        assertThat(count("SELECT count(*) FROM " + schema + ".job WHERE kind = 'kind.batch'"))
                .as("all of the batch or none")
                .isEqualTo(autoCommit ? 10 : 0);
    }

    /**
     * Runs {@code enqueue} on a client whose one connection (auto-commit or not) goes through a proxy that drops
     * whatever the server sends from then on; returns what the enqueue threw once its socket timed out.
     */
    private Throwable answerLost(boolean autoCommit, Consumer<Jobs> enqueue) throws Exception {
        try (FaultProxy proxy = FaultProxy.start(PG.host(), PG.port());
                Connection one = proxiedConnection(proxy, autoCommit)) {
            Jobs jobs = client(one);
            jobs.enqueue(JobRequest.of("kind.lost", new Item(0)).queue("lost")); // the defaults read, the pool warm
            clock.addAndGet(EnqueueWakes.NOTIFIER_NANOS); // each enqueue notifies in its statement: no notifier call
            proxy.blackHoleServerToClient();
            Throwable lost = catchThrowable(() -> enqueue.accept(jobs));
            proxy.heal();
            return lost;
        }
    }

    /** Unknown where the statement committed on its own; a plain failure where Baton's COMMIT was never sent. */
    private static void assertReported(Throwable lost, boolean autoCommit, String what) {
        if (autoCommit) {
            assertThat(lost)
                    .isInstanceOf(UnknownOutcomeException.class)
                    .hasMessageContaining(what)
                    .hasMessageContaining("may or may not have committed");
        } else {
            assertThat(lost)
                    .isInstanceOf(BatonException.class)
                    .isNotInstanceOf(UnknownOutcomeException.class)
                    .hasMessageContaining("failed");
        }
    }

    /**
     * A client whose every call gets {@code one} connection (its close ignored), so that the test decides what
     * happens to the bytes of the very connection the enqueue runs on: a pool would check an idle connection first
     * and fail to borrow, before any statement was sent.
     */
    private Jobs client(Connection one) {
        Connection kept = (Connection) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {Connection.class}, (p, m, args) -> {
                    if (m.getName().equals("close")) {
                        return null;
                    }
                    try {
                        return m.invoke(one, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        DataSource ds = (DataSource) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {DataSource.class}, (p, m, args) -> {
                    return switch (m.getName()) {
                        case "getConnection" -> kept;
                        case "hashCode" -> System.identityHashCode(p);
                        case "equals" -> p == args[0];
                        case "toString" -> "one proxied connection";
                        default -> throw new UnsupportedOperationException(m.getName());
                    };
                });
        return closeLater(Baton.builder(ds).schema(schema).ticker(clock::get).build())
                .jobs();
    }

    private static Connection proxiedConnection(FaultProxy proxy, boolean autoCommit) throws SQLException {
        String url = PG.jdbcUrlVia("127.0.0.1", proxy.port());
        Connection c = DriverManager.getConnection(url + (url.contains("?") ? "&" : "?") + "socketTimeout=2");
        c.setAutoCommit(autoCommit);
        return c;
    }

    private long jobsWithKey(String key) throws SQLException {
        return count("SELECT count(*) FROM " + schema + ".job WHERE idempotency_key = '" + key + "'");
    }
}
