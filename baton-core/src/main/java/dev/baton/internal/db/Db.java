package dev.baton.internal.db;

import dev.baton.BatonException;
import dev.baton.UnknownOutcomeException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.Objects;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How Baton runs its own statements on connections it borrows from a {@link DataSource}, so that every
 * operation commits what it reports <em>whatever the pool's defaults</em>, runs in READ COMMITTED, and
 * leaves no session state behind on the connection it returns.
 *
 * <p>A pool may hand out connections with {@code autoCommit=false} (the usual JPA tuning) or with a
 * session default isolation of REPEATABLE READ or SERIALIZABLE. Baton's statements are written for
 * READ COMMITTED: a row changed by a concurrent transaction is re-read, not a serialization failure;
 * a statement after an advisory lock sees everything committed before the lock was granted. So:
 * <ul>
 *   <li>{@link #call} runs a unit of work that needs no atomicity across statements. On a connection
 *       in auto-commit mode whose session defaults to READ COMMITTED (the common case) the statements
 *       run as they are, each its own transaction: no extra round trip. Otherwise the work runs in an
 *       explicit transaction that Baton commits.</li>
 *   <li>{@link #write} runs one writing statement the same way, and reports a connection that fails while
 *       it runs as {@link UnknownOutcomeException}: in auto-commit mode the statement may have committed.</li>
 *   <li>{@link #transaction} runs work that must be atomic: always an explicit transaction, committed by
 *       Baton, failures rolled back, a connection failure during COMMIT reported as
 *       {@link UnknownOutcomeException}.</li>
 * </ul>
 * The isolation level is changed with {@code SET TRANSACTION ISOLATION LEVEL READ COMMITTED}, which
 * lasts for that one transaction, never with {@link Connection#setTransactionIsolation} (a session-level
 * {@code SET} that a transaction-pooling PgBouncer would leak to other clients). Auto-commit is restored
 * before the connection goes back to the pool.
 *
 * <p>The session default isolation is read once per data source, from the first connection Baton
 * borrows (a pool configures its connections alike). Thread-safe.
 */
public final class Db {
    private static final Logger log = LoggerFactory.getLogger(Db.class);
    public static final String READ_COMMITTED = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";
    /** The PostgreSQL versions CI runs the whole suite on: 13 and 18 (and 15). */
    public static final int OLDEST_SUPPORTED_SERVER = 130000;

    public static final int NEWEST_TESTED_SERVER = 180000;
    /** Below 11, statements Baton uses do not exist ({@code hashtextextended}, procedures' syntax). */
    public static final int OLDEST_WORKING_SERVER = 110000;
    /**
     * The defaults of each data source seen in this JVM, read once. Weak keys, and values that do not
     * refer to their key, so a data source closed and dropped by the application is forgotten here too.
     */
    private static final Map<DataSource, AtomicReference<Defaults>> DEFAULTS = new WeakHashMap<>();
    /** The calls of this thread a stop may abort ({@link InFlight}), if it is tracked. */
    private static final ThreadLocal<InFlight> IN_FLIGHT = new ThreadLocal<>();

    /** Work on a connection. */
    @FunctionalInterface
    public interface Work<T> {
        T apply(Connection c) throws SQLException;
    }

    /** What the first connection told about the pool's session defaults. */
    public record Defaults(String isolation, boolean readOnly, int serverVersion) {
        boolean readCommitted() {
            return "read committed".equalsIgnoreCase(isolation) || "read uncommitted".equalsIgnoreCase(isolation);
        }
    }

    private final DataSource dataSource;
    private final AtomicReference<Defaults> defaults;

    private Db(DataSource dataSource, AtomicReference<Defaults> defaults) {
        this.dataSource = dataSource;
        this.defaults = defaults;
    }

    /** A Db of {@code dataSource}; every Db of one data source shares what was read of its defaults. */
    public static Db of(DataSource dataSource) {
        Objects.requireNonNull(dataSource, "dataSource");
        synchronized (DEFAULTS) {
            return new Db(dataSource, DEFAULTS.computeIfAbsent(dataSource, k -> new AtomicReference<>()));
        }
    }

    public DataSource dataSource() {
        return dataSource;
    }

    /** Borrows a connection and runs {@code work} on it (see {@link #callOn}). */
    public <T> T call(String what, Work<T> work) throws SQLException {
        return borrowed(what, c -> callOn(c, what, work));
    }

    /**
     * {@link #call} for the API, whose methods do not throw {@link SQLException}: one becomes a
     * {@link BatonException} that says what failed ({@link #failed}).
     */
    public <T> T callUnchecked(String what, Work<T> work) {
        try {
            return call(what, work);
        } catch (SQLException e) {
            throw failed(what, e);
        }
    }

    /** {@link #transaction(String, Work)} for the API, as {@link #callUnchecked}. */
    public <T> T transactionUnchecked(String what, Work<T> work) {
        return transactionUnchecked(what, "", work);
    }

    /** {@link #transaction(String, String, Work)} for the API, as {@link #callUnchecked}. */
    public <T> T transactionUnchecked(String what, String hint, Work<T> work) {
        try {
            return transaction(what, hint, work);
        } catch (SQLException e) {
            throw failed(what, e);
        }
    }

    /** The exception an API method throws when {@code what} failed in the database: "{@code what} failed: ...". */
    public static BatonException failed(String what, SQLException e) {
        return new BatonException(what + " failed: " + e.getMessage(), e);
    }

    /**
     * Borrows a connection for {@code work}, which writes, as {@link #call} does: on an auto-commit connection whose
     * session defaults to READ COMMITTED its statements run as they are, each its own transaction (a work of one
     * statement: one round trip and no COMMIT of Baton's). A connection that fails while they run leaves the
     * outcome unknown, as one failing during COMMIT does: reported as {@link UnknownOutcomeException}, never as a
     * plain failure. On other connections, as {@link #transaction(String, String, Work)}: a failure before its
     * COMMIT rolled everything back. Work whose statements must commit together uses {@link #transaction}.
     *
     * @param hint ends the message of an unknown outcome: what the caller can do about it (may be empty)
     */
    public <T> T write(String what, String hint, Work<T> work) throws SQLException {
        return borrowed(what, c -> {
            if (!c.getAutoCommit() || !defaults(c).readCommitted()) {
                return transactionOn(c, what, hint, work);
            }
            try {
                return work.apply(c);
            } catch (SQLException e) {
                if (Jdbc.isConnectionFailure(e)) {
                    throw new UnknownOutcomeException(
                            "the connection failed during " + what + ", a statement that commits on its own; it may"
                                    + " or may not have committed" + hint + " (" + e.getMessage() + ")",
                            e);
                }
                throw e;
            }
        });
    }

    /** {@link #write} for the API, as {@link #callUnchecked}: an unknown outcome is reported as one. */
    public <T> T writeUnchecked(String what, String hint, Work<T> work) {
        try {
            return write(what, hint, work);
        } catch (SQLException e) {
            throw failed(what, e);
        }
    }

    /** Borrows a connection and runs {@code work} in one transaction (see {@link #transactionOn}). */
    public <T> T transaction(String what, Work<T> work) throws SQLException {
        return transaction(what, "", work);
    }

    /** Like {@link #transaction(String, Work)}; {@code hint} ends the message of an unknown outcome. */
    public <T> T transaction(String what, String hint, Work<T> work) throws SQLException {
        return borrowed(what, c -> transactionOn(c, what, hint, work));
    }

    /** Borrows a connection for {@code body}; on a tracked thread it is in the thread's {@link InFlight} meanwhile. */
    private <T> T borrowed(String what, Work<T> body) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            InFlight calls = IN_FLIGHT.get();
            if (calls == null) {
                return body.apply(c);
            }
            calls.begin(c, what);
            try {
                return body.apply(c);
            } finally {
                calls.end();
            }
        }
    }

    /**
     * The calls ({@link #call}, {@link #transaction}) of the threads that {@link #track} it, so that whoever
     * stops those threads can {@link #abort} a call that never answers: a statement on a black-holed
     * connection waits for its socket forever, and neither an interrupt nor a query timeout (whose cancel
     * request needs a new connection) ends it. After {@link #abort} every later call of those threads fails
     * at once. Thread-safe.
     */
    public static final class InFlight {
        /** A call in flight: its connection and what it does. */
        private record Call(Connection connection, String what) {}

        /** The calls in flight, innermost first (a call may run inside another: a listening session's probe). */
        private final ArrayDeque<Call> calls = new ArrayDeque<>(2);

        private boolean aborted;

        /** Tracks the calls of the current thread in {@code calls} (null: no longer tracked); returns the previous. */
        public static InFlight track(InFlight calls) {
            InFlight previous = IN_FLIGHT.get();
            if (calls == null) {
                IN_FLIGHT.remove();
            } else {
                IN_FLIGHT.set(calls);
            }
            return previous;
        }

        /**
         * {@code c} is in a call in flight from now until the matching {@link #end()} (a call that holds its
         * connection for longer than one statement, such as a listening session, says so itself).
         *
         * @throws SQLException if the calls were aborted: nothing starts any more
         */
        public synchronized void begin(Connection c, String what) throws SQLException {
            if (aborted) {
                throw new SQLException(
                        what + ": not started, the service was stopped and gave up waiting for its database calls",
                        "08003");
            }
            calls.push(new Call(c, what));
        }

        /** The innermost call ended (nothing, when an abort already took it). */
        public synchronized void end() {
            calls.pollFirst();
        }

        /**
         * Aborts the calls in flight, if any (their connections' sockets are closed: they fail at once), and
         * makes every later call fail before it starts. Returns what the innermost call was doing, or null.
         */
        public synchronized String abort() {
            aborted = true;
            return abortCurrent();
        }

        /** Aborts the calls in flight, if any; later calls run. Returns what the innermost was doing, or null. */
        public synchronized String abortCurrent() {
            Call innermost = calls.peekFirst();
            for (Call call : calls) {
                try {
                    call.connection().abort(Runnable::run);
                } catch (SQLException | RuntimeException e) {
                    Jdbc.closeQuietly(call.connection());
                }
            }
            calls.clear();
            return innermost == null ? null : innermost.what();
        }
    }

    /**
     * Runs work whose statements need not be atomic together: as they are on an auto-commit connection
     * whose session defaults to READ COMMITTED, otherwise in one explicit READ COMMITTED transaction.
     */
    public <T> T callOn(Connection c, String what, Work<T> work) throws SQLException {
        if (c.getAutoCommit() && defaults(c).readCommitted()) {
            return work.apply(c);
        }
        return transactionOn(c, what, "", work);
    }

    /**
     * Runs {@code work} in one explicit READ COMMITTED transaction on {@code c} and commits it; rolls
     * back if anything throws. Restores the connection's auto-commit mode afterwards.
     *
     * @throws UnknownOutcomeException if the connection failed during COMMIT
     */
    public <T> T transactionOn(Connection c, String what, String hint, Work<T> work) throws SQLException {
        boolean autoCommit = c.getAutoCommit();
        boolean setIsolation = !defaults(c).readCommitted();
        if (autoCommit) {
            c.setAutoCommit(false);
        }
        try {
            if (setIsolation) {
                Jdbc.execute(c, READ_COMMITTED);
            }
            T result = work.apply(c);
            Jdbc.commit(c, what, hint);
            return result;
        } catch (Throwable t) {
            Jdbc.rollbackQuietly(c, t);
            throw t;
        } finally {
            if (autoCommit) {
                restoreAutoCommit(c);
            }
        }
    }

    /** The pool's session defaults, read from {@code c} the first time (not in a transaction of Baton's). */
    public Defaults defaults(Connection c) throws SQLException {
        Defaults d = defaults.get();
        if (d == null) {
            d = read(c);
            defaults.set(d);
            if (!d.readCommitted() || !c.getAutoCommit()) {
                log.info(
                        "data source {}: connections come with autoCommit={} and default isolation '{}'; Baton "
                                + "commits its own transactions and runs them in READ COMMITTED",
                        dataSource.getClass().getName(),
                        c.getAutoCommit(),
                        d.isolation());
            }
        }
        return d;
    }

    private static Defaults read(Connection c) throws SQLException {
        boolean autoCommit = c.getAutoCommit();
        try (PreparedStatement ps = c.prepareStatement(
                        "SELECT current_setting('default_transaction_isolation'), "
                                + "current_setting('default_transaction_read_only'), current_setting('server_version_num')::int");
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new Defaults(rs.getString(1), "on".equalsIgnoreCase(rs.getString(2)), rs.getInt(3));
        } finally {
            if (!autoCommit) {
                c.rollback(); // the query opened a transaction: end it before the work starts
            }
        }
    }

    /**
     * Checks, once per data source, that Baton can write through it; called at start-up.
     *
     * @throws IllegalStateException if the pool's connections are read-only
     */
    public void requireWritable(String role) {
        Defaults d;
        boolean readOnly;
        try (Connection c = dataSource.getConnection()) {
            d = defaults(c);
            readOnly = c.isReadOnly();
        } catch (SQLException e) {
            throw new BatonException(
                    "cannot borrow a connection from the " + role + " data source: " + e.getMessage()
                            + " (is the database reachable, and is the pool's connection timeout long enough?)",
                    e);
        }
        if (d.serverVersion() < OLDEST_WORKING_SERVER) {
            throw new IllegalStateException("the " + role + " data source reaches PostgreSQL "
                    + d.serverVersion() / 10000
                    + "; Baton needs PostgreSQL " + OLDEST_WORKING_SERVER / 10000 + " or later, and is supported and "
                    + "tested on " + OLDEST_SUPPORTED_SERVER / 10000 + " to " + NEWEST_TESTED_SERVER / 10000);
        }
        if (d.serverVersion() < OLDEST_SUPPORTED_SERVER || d.serverVersion() / 10000 > NEWEST_TESTED_SERVER / 10000) {
            log.warn(
                    "PostgreSQL {} is outside the versions Baton is tested on ({} to {}); it may work, but no test says so",
                    d.serverVersion() / 10000,
                    OLDEST_SUPPORTED_SERVER / 10000,
                    NEWEST_TESTED_SERVER / 10000);
        }
        if (d.readOnly() || readOnly) {
            throw new IllegalStateException("the " + role + " data source hands out read-only connections ("
                    + (readOnly
                            ? "Connection.isReadOnly(): a pool configured with readOnly=true"
                            : "default_transaction_read_only = on: a replica, or a role or database set read-only")
                    + "); Baton writes leases, jobs and node heartbeats: give it a data source on the primary with "
                    + "read-write connections");
        }
    }

    /**
     * Runs the application's work, which may throw anything: runtime and SQL exceptions pass as they are,
     * any other is wrapped in a {@link BatonException} that says what failed.
     */
    public static <T> T runApplicationWork(String what, java.util.concurrent.Callable<T> work) throws SQLException {
        try {
            return work.call();
        } catch (RuntimeException | SQLException e) {
            throw e;
        } catch (Exception e) {
            throw new BatonException(what + " failed: " + e.getMessage(), e);
        }
    }

    public static void restoreAutoCommit(Connection c) {
        try {
            if (!c.isClosed()) {
                c.setAutoCommit(true);
            }
        } catch (SQLException ignored) {
            // The connection is broken; the pool discards it.
        }
    }
}
