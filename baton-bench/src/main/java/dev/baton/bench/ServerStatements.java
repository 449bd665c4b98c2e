package dev.baton.bench;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What each statement cost the server, from pg_stat_statements (compare's {@code --server-statements}): the
 * embedded server is started with the module preloaded; another server must have it loaded already. Time is
 * the statements' execution time on the server, wall clock inside the backend: on a machine whose cores are all
 * busy it includes waiting for one.
 */
final class ServerStatements {
    record Counts(
            long calls,
            double execMs,
            long rows,
            long buffers,
            long walBytes,
            long plans,
            double planMs,
            String query) {}

    private ServerStatements() {}

    /**
     * Creates the extension in the database, or, when the server has not loaded the module, a clear error that
     * leaves nothing behind (one transaction, rolled back).
     */
    static void install(Database db) throws SQLException {
        try (Connection c = db.connect();
                Statement st = c.createStatement()) {
            c.setAutoCommit(false);
            try {
                st.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
                st.executeQuery("SELECT count(*) FROM pg_stat_statements").close();
                c.commit();
            } catch (SQLException e) {
                c.rollback();
                throw new SQLException(
                        "--server-statements needs pg_stat_statements loaded by the server (shared_preload_libraries"
                                + " = 'pg_stat_statements') and a role that may create the extension, but: "
                                + e.getMessage(),
                        e);
            }
        }
    }

    static Map<Long, Counts> snapshot(Database db) throws SQLException {
        Map<Long, Counts> out = new HashMap<>();
        try (Connection c = db.connect();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT queryid, sum(calls), sum(total_exec_time), sum(rows),"
                        + " sum(shared_blks_hit + shared_blks_read), sum(wal_bytes), sum(plans), sum(total_plan_time),"
                        + " min(query)"
                        + " FROM pg_stat_statements WHERE queryid IS NOT NULL AND query NOT LIKE '%pg_stat_statements%'"
                        + " GROUP BY queryid")) {
            while (rs.next()) {
                out.put(
                        rs.getLong(1),
                        new Counts(
                                rs.getLong(2),
                                rs.getDouble(3),
                                rs.getLong(4),
                                rs.getLong(5),
                                rs.getLong(6),
                                rs.getLong(7),
                                rs.getDouble(8),
                                rs.getString(9)));
            }
        }
        return out;
    }

    /** The {@code top} statements by execution time between two snapshots, one line each: per call and per row. */
    static List<String> costliest(Map<Long, Counts> before, Map<Long, Counts> after, double seconds, int top) {
        List<Counts> delta = new ArrayList<>();
        after.forEach((id, a) -> {
            Counts b = before.getOrDefault(id, new Counts(0, 0, 0, 0, 0, 0, 0, a.query()));
            if (a.calls() > b.calls()) {
                delta.add(new Counts(
                        a.calls() - b.calls(),
                        a.execMs() - b.execMs(),
                        a.rows() - b.rows(),
                        a.buffers() - b.buffers(),
                        a.walBytes() - b.walBytes(),
                        a.plans() - b.plans(),
                        a.planMs() - b.planMs(),
                        a.query()));
            }
        });
        delta.sort((x, y) -> Double.compare(y.execMs(), x.execMs()));
        List<String> out = new ArrayList<>();
        for (Counts d : delta.subList(0, Math.min(top, delta.size()))) {
            String perRow = d.rows() == 0
                    ? ""
                    : String.format(
                            Locale.ROOT,
                            "; per row %.1f µs, %.1f buffers, %.0f WAL bytes",
                            1000 * d.execMs() / d.rows(),
                            d.buffers() / (double) d.rows(),
                            d.walBytes() / (double) d.rows());
            out.add(String.format(
                    Locale.ROOT,
                    "%.1f calls/s × %.1f rows, %.0f ms/s; per call %.2f ms, %.0f buffers%s%s: %s",
                    d.calls() / seconds,
                    d.rows() / (double) d.calls(),
                    d.execMs() / seconds,
                    d.execMs() / d.calls(),
                    d.buffers() / (double) d.calls(),
                    perRow,
                    d.plans() == 0
                            ? ""
                            : String.format(
                                    Locale.ROOT, "; planned %d times, %.3f ms each", d.plans(), d.planMs() / d.plans()),
                    shorten(d.query())));
        }
        return out;
    }

    private static String shorten(String query) {
        String q = query.replaceAll("\\s+", " ").trim();
        return q.length() > 70 ? q.substring(0, 67) + "..." : q;
    }
}
