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
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * L17 for the API's writes outside a transaction of the caller's: a write whose answer is lost after the server got
 * it. On an auto-commit connection such a write (an enqueue of one job or of a batch without keys below the COPY
 * threshold, a job's cancel or retry, a queue's pause, a job limit set or removed, an operator's bulk action, a
 * schedule's trigger) commits on its own, so the server may have committed it: reported as
 * {@link UnknownOutcomeException}, and the change is there. On a connection with {@code autoCommit=false} Baton
 * sends COMMIT itself; the answer to the write is lost before it, so nothing committed: a plain failure, and no
 * change.
 *
 * <p>Protection removed to see it fail: the connection-failure branch of {@code Db.write}; every auto-commit case
 * then got a {@link BatonException} saying the write "failed" while its change had committed.
 */
class UnknownOutcomeTest extends JobTestSupport {
    record Item(int n) {}

    /** A write of the API, and how its messages name it. */
    enum Write {
        CANCEL("cancelling job"),
        RETRY("retrying job"),
        PAUSE("pausing queue 'held'"),
        SET_LIMIT("setting job limit"),
        REMOVE_LIMIT("removing job limit"),
        BULK_CANCEL("cancelling 1 jobs"),
        TRIGGER("triggering schedule 'nightly'");

        final String what;

        Write(String what) {
            this.what = what;
        }
    }

    private final AtomicLong clock = new AtomicLong();

    @ParameterizedTest(name = "autoCommit={0}")
    @ValueSource(booleans = {true, false})
    void L17_anEnqueueWhoseAnswerIsLostIsUnknownWhereItMayHaveCommitted(boolean autoCommit) throws Exception {
        Throwable lost = answerLost(
                autoCommit,
                b -> b.jobs()
                        .enqueue(JobRequest.of("kind.lost", new Item(1))
                                .queue("lost")
                                .idempotencyKey("order-42")));
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
        Throwable lost = answerLost(autoCommit, b -> b.jobs().enqueueAll(batch));
        assertReported(lost, autoCommit, "a batch enqueue of 10 jobs");
        assertThat(count("SELECT count(*) FROM " + schema + ".job WHERE kind = 'kind.batch'"))
                .as("all of the batch or none")
                .isEqualTo(autoCommit ? 10 : 0);
    }

    @ParameterizedTest(name = "{0}, autoCommit={1}")
    @CsvSource({
        "CANCEL, true",
        "CANCEL, false",
        "RETRY, true",
        "RETRY, false",
        "PAUSE, true",
        "PAUSE, false",
        "SET_LIMIT, true",
        "SET_LIMIT, false",
        "REMOVE_LIMIT, true",
        "REMOVE_LIMIT, false",
        "BULK_CANCEL, true",
        "BULK_CANCEL, false",
        "TRIGGER, true",
        "TRIGGER, false"
    })
    void L17_aWriteWhoseAnswerIsLostIsUnknownWhereItMayHaveCommitted(Write write, boolean autoCommit) throws Exception {
        Baton healthy = closeLater(Baton.builder(pool).schema(schema).build());
        long id = healthy.jobs()
                .enqueue(JobRequest.of("kind.held", new Item(1)).queue("held"))
                .id();
        switch (write) {
            case RETRY -> healthy.jobs().cancel(id);
            case REMOVE_LIMIT -> healthy.jobs().setLimit(JobLimit.perQueue("held", 3));
            case TRIGGER ->
                healthy.schedules().create(Schedule.cron("nightly", "0 3 * * *").job("kind.report", new Item(2)));
            default -> {}
        }
        Throwable lost = answerLost(autoCommit, b -> {
            switch (write) {
                case CANCEL -> b.jobs().cancel(id);
                case RETRY -> b.jobs().retry(id);
                case PAUSE -> b.jobs().pause("held");
                case SET_LIMIT -> b.jobs().setLimit(JobLimit.perQueue("held", 3));
                case REMOVE_LIMIT -> b.jobs().removeLimit(JobLimit.perQueue("held", 3));
                case BULK_CANCEL -> b.admin().cancelJobs(List.of(id));
                case TRIGGER -> b.schedules().trigger("nightly");
            }
        });
        assertReported(lost, autoCommit, write.what);
        boolean changed = switch (write) {
            case CANCEL, BULK_CANCEL -> state(id).equals("cancelled");
            case RETRY -> state(id).equals("available");
            case PAUSE -> count("SELECT count(*) FROM " + schema + ".job_queue WHERE queue = 'held' AND paused") == 1;
            case SET_LIMIT -> count("SELECT count(*) FROM " + schema + ".job_limit") == 1;
            case REMOVE_LIMIT -> count("SELECT count(*) FROM " + schema + ".job_limit") == 0;
            case TRIGGER -> count("SELECT count(*) FROM " + schema + ".job WHERE kind = 'kind.report'") == 1;
        };
        if (write == Write.TRIGGER && autoCommit) {
            // A trigger reads the schedule before it enqueues: the answer lost is the read's, and the enqueue was
            // never sent. Unknown all the same: Baton cannot tell which statement's answer it lost.
            assertThat(changed).as("the trigger's enqueue was never sent").isFalse();
        } else {
            assertThat(changed)
                    .as("the lost write committed only where Baton did not send COMMIT itself")
                    .isEqualTo(autoCommit);
        }
    }

    /**
     * Runs {@code write} on a client whose one connection (auto-commit or not) goes through a proxy that drops
     * whatever the server sends from then on; returns what the write threw once its socket timed out.
     */
    private Throwable answerLost(boolean autoCommit, Consumer<Baton> write) throws Exception {
        try (FaultProxy proxy = FaultProxy.start(PG.host(), PG.port());
                Connection one = proxiedConnection(proxy, autoCommit)) {
            Baton client = client(one);
            // The defaults read, the connection warm.
            client.jobs().enqueue(JobRequest.of("kind.lost", new Item(0)).queue("lost"));
            clock.addAndGet(EnqueueWakes.NOTIFIER_NANOS); // each enqueue notifies in its statement: no notifier call
            proxy.blackHoleServerToClient();
            Throwable lost = catchThrowable(() -> write.accept(client));
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
    private Baton client(Connection one) {
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
        return closeLater(Baton.builder(ds).schema(schema).ticker(clock::get).build());
    }

    private static Connection proxiedConnection(FaultProxy proxy, boolean autoCommit) throws SQLException {
        String url = PG.jdbcUrlVia("127.0.0.1", proxy.port());
        Connection c = DriverManager.getConnection(url + (url.contains("?") ? "&" : "?") + "socketTimeout=2");
        c.setAutoCommit(autoCommit);
        return c;
    }

    private String state(long id) throws SQLException {
        try (Connection c = pool.getConnection();
                var rs = c.createStatement().executeQuery("SELECT state FROM " + schema + ".job WHERE id = " + id)) {
            assertThat(rs.next()).isTrue();
            return rs.getString(1);
        }
    }

    private long jobsWithKey(String key) throws SQLException {
        return count("SELECT count(*) FROM " + schema + ".job WHERE idempotency_key = '" + key + "'");
    }
}
