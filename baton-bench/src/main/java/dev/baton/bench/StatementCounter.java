package dev.baton.bench;

import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Counts, client-side, every statement Baton executes through a data source: calls, rows and time in
 * the driver, per Baton statement name ({@code job.claim}, {@code lease.renew},
 * …). A cross-check of the server-side counts and the source of the "effective claim batch". It
 * cannot see what the pool does below it (HikariCP's validation queries).
 */
final class StatementCounter {
    private final Map<String, String> labels;
    private final Map<String, String> labelCache = new ConcurrentHashMap<>();
    private final Map<String, Stat> stats = new ConcurrentHashMap<>();

    private final int labelLength;

    StatementCounter(String schema) {
        this(schema, 48);
    }

    /** Statements that are not Baton's are labelled by their first {@code labelLength} characters. */
    StatementCounter(String schema, int labelLength) {
        this.labels = BatonSql.labels(schema);
        this.labelLength = labelLength;
    }

    /** One statement's counters. */
    static final class Stat {
        final LongAdder calls = new LongAdder();
        final LongAdder rows = new LongAdder();
        final LongAdder nanos = new LongAdder();
        final LongAdder emptyCalls = new LongAdder();
        /** Calls whose rows were counted (the others' rows are unknown). */
        final LongAdder rowCalls = new LongAdder();
    }

    /** An immutable copy of the counters of one statement. */
    record Snapshot(String label, long calls, long rows, long nanos, long emptyCalls, long rowCalls) {
        double rowsPerCall() {
            return calls == 0 ? 0 : (double) rows / calls;
        }

        double rowsPerNonEmptyCall() {
            long n = calls - emptyCalls;
            return n == 0 ? 0 : (double) rows / n;
        }

        double avgMillis() {
            return calls == 0 ? 0 : nanos / 1e6 / calls;
        }

        Snapshot minus(Snapshot before) {
            if (before == null) {
                return this;
            }
            return new Snapshot(
                    label,
                    calls - before.calls,
                    rows - before.rows,
                    nanos - before.nanos,
                    emptyCalls - before.emptyCalls,
                    rowCalls - before.rowCalls);
        }
    }

    /** Counters by statement, most called first. */
    List<Snapshot> snapshot() {
        List<Snapshot> out = new ArrayList<>();
        stats.forEach((k, s) -> out.add(
                new Snapshot(k, s.calls.sum(), s.rows.sum(), s.nanos.sum(), s.emptyCalls.sum(), s.rowCalls.sum())));
        out.sort(Comparator.comparingLong(Snapshot::calls).reversed().thenComparing(Snapshot::label));
        return out;
    }

    static List<Snapshot> delta(List<Snapshot> after, List<Snapshot> before) {
        Map<String, Snapshot> b = new ConcurrentHashMap<>();
        before.forEach(s -> b.put(s.label(), s));
        List<Snapshot> out = new ArrayList<>();
        for (Snapshot s : after) {
            Snapshot d = s.minus(b.get(s.label()));
            if (d.calls() > 0) {
                out.add(d);
            }
        }
        out.sort(Comparator.comparingLong(Snapshot::calls).reversed().thenComparing(Snapshot::label));
        return out;
    }

    static Snapshot find(List<Snapshot> list, String label) {
        for (Snapshot s : list) {
            if (s.label().equals(label)) {
                return s;
            }
        }
        return new Snapshot(label, 0, 0, 0, 0, 0);
    }

    static long totalCalls(List<Snapshot> list) {
        long n = 0;
        for (Snapshot s : list) {
            n += s.calls();
        }
        return n;
    }

    /**
     * Baton's bounded statements (dev.baton.Jdbc.prepareBounded) are sent behind a transaction-local
     * statement_timeout, in the same round trip and implicit transaction: labelled by the statement, "+timeout".
     */
    private static final String BOUND_PREFIX = "SELECT set_config('statement_timeout', ?, true);";

    private String label(String sql) {
        String l = labelCache.get(sql);
        if (l == null) {
            String body = sql.strip();
            String suffix = "";
            if (body.startsWith(BOUND_PREFIX)) {
                body = body.substring(BOUND_PREFIX.length()).strip();
                suffix = " +timeout";
            }
            l = labels.get(body);
            if (l != null) {
                l += suffix;
            } else {
                String flat = sql.strip().replaceAll("\\s+", " ");
                l = flat.length() > labelLength ? flat.substring(0, labelLength - 3) + "..." : flat;
            }
            labelCache.put(sql, l);
        }
        return l;
    }

    private Stat stat(String label) {
        return stats.computeIfAbsent(label, k -> new Stat());
    }

    /** {@code delegate} with every connection it hands out counted. */
    DataSource wrap(DataSource delegate) {
        return new CountingDataSource(delegate);
    }

    private final class CountingDataSource implements DataSource {
        private final DataSource delegate;

        CountingDataSource(DataSource delegate) {
            this.delegate = delegate;
        }

        @Override
        public Connection getConnection() throws SQLException {
            return connection(delegate.getConnection());
        }

        @Override
        public Connection getConnection(String user, String password) throws SQLException {
            return connection(delegate.getConnection(user, password));
        }

        @Override
        public PrintWriter getLogWriter() throws SQLException {
            return delegate.getLogWriter();
        }

        @Override
        public void setLogWriter(PrintWriter out) throws SQLException {
            delegate.setLogWriter(out);
        }

        @Override
        public void setLoginTimeout(int seconds) throws SQLException {
            delegate.setLoginTimeout(seconds);
        }

        @Override
        public int getLoginTimeout() throws SQLException {
            return delegate.getLoginTimeout();
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            return delegate.getParentLogger();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            return delegate.unwrap(iface);
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) throws SQLException {
            return delegate.isWrapperFor(iface);
        }
    }

    private Connection connection(Connection real) {
        return proxy(Connection.class, real, (p, m, args) -> {
            Object r = call(real, m, args);
            String name = m.getName();
            if (name.equals("prepareStatement") && r instanceof PreparedStatement ps) {
                return preparedStatement(ps, label((String) args[0]));
            }
            if (name.equals("createStatement") && r instanceof Statement st) {
                return statement(st);
            }
            return r;
        });
    }

    /** Statements whose returned rows are counted one by one (a proxy on the result set): the claim. */
    private static final java.util.Set<String> COUNT_RESULT_ROWS = java.util.Set.of("job.claim", "job.claim_limited");

    /**
     * Rows of a statement: the claim's returned rows; for the batched statements (complete, fail,
     * release, heartbeat) the length of their first array parameter, i.e. the batch sent; for updates,
     * the update count. Kept cheap, because it runs on the nodes' hot path.
     */
    private PreparedStatement preparedStatement(PreparedStatement real, String label) {
        Stat stat = stat(label);
        boolean countResultRows = COUNT_RESULT_ROWS.contains(label);
        long[] arrayRows = {-1};
        return proxy(PreparedStatement.class, real, (p, m, args) -> {
            String name = m.getName();
            boolean exec = (args == null || args.length == 0) && name.startsWith("execute");
            if (!exec) {
                if (arrayRows[0] < 0
                        && name.equals("setArray")
                        && args[1] instanceof java.sql.Array a
                        && a.getArray() instanceof Object[] values) {
                    arrayRows[0] = values.length;
                }
                return call(real, m, args);
            }
            long t0 = System.nanoTime();
            Object r = call(real, m, args);
            stat.nanos.add(System.nanoTime() - t0);
            stat.calls.increment();
            long batch = arrayRows[0];
            arrayRows[0] = -1;
            if (countResultRows && r instanceof ResultSet rs) {
                stat.rowCalls.increment();
                return resultSet(rs, stat);
            }
            long rows = batch >= 0
                    ? batch
                    : r instanceof Integer n && !name.equals("execute") ? n : r instanceof Long n ? n : -1;
            if (rows >= 0) {
                stat.rowCalls.increment();
                stat.rows.add(rows);
                if (rows == 0) {
                    stat.emptyCalls.increment();
                }
            }
            return r;
        });
    }

    private Statement statement(Statement real) {
        return proxy(Statement.class, real, (p, m, args) -> {
            if (m.getName().startsWith("execute")
                    && args != null
                    && args.length >= 1
                    && args[0] instanceof String sql) {
                Stat stat = stat(label(sql));
                long t0 = System.nanoTime();
                Object r = call(real, m, args);
                stat.nanos.add(System.nanoTime() - t0);
                stat.calls.increment();
                return r;
            }
            return call(real, m, args);
        });
    }

    private ResultSet resultSet(ResultSet real, Stat stat) {
        boolean[] any = {false};
        return proxy(ResultSet.class, real, (p, m, args) -> {
            Object r = call(real, m, args);
            String name = m.getName();
            if (name.equals("next")) {
                if (Boolean.TRUE.equals(r)) {
                    stat.rows.increment();
                    any[0] = true;
                }
            } else if (name.equals("close") && !any[0]) {
                stat.emptyCalls.increment();
                any[0] = true; // count once
            }
            return r;
        });
    }

    @SuppressWarnings("unchecked")
    private static <T> T proxy(Class<T> type, T real, InvocationHandler h) {
        return (T) Proxy.newProxyInstance(StatementCounter.class.getClassLoader(), new Class<?>[] {type}, h);
    }

    @SuppressWarnings("deprecation") // isAccessible reads a flag; canAccess would repeat the check it saves
    private static Object call(Object target, Method m, Object[] args) throws Throwable {
        if (!m.isAccessible()) {
            // A proxy hands its handler the same Method object on every call: opened once, its invocations
            // skip the caller check that otherwise took a tenth of a claim thread's time (JFR, 256 slots).
            m.setAccessible(true);
        }
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
