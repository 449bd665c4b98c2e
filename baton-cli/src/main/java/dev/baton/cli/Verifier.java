package dev.baton.cli;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.sql.DataSource;

/**
 * Checks what the verification workload ({@link VerifyWorkload}) recorded, in one read-only repeatable-read
 * transaction (one snapshot, so it may run while nodes are still working):
 *
 * <ul>
 *   <li>I1: in {@code verify_ledger} by {@code seq}, the generation never decreases, and each generation was
 *       written by one node.</li>
 *   <li>I2: every {@code verify_enqueued} job has exactly one {@code verify_effect} row, written by the attempt
 *       that completed it, or is still pending (available or running): none lost, none with two effects, no effect
 *       of an attempt other than the completing one, no effect of a job never enqueued.</li>
 *   <li>I3: at most one {@code verify_tick} row per {@code due_at}.</li>
 *   <li>I4 (reported, not a violation): jobs whose "external" effect ({@code verify_external}) happened more than
 *       once, with the attempts that caused them: the cost of at-least-once.</li>
 * </ul>
 *
 * Every query is in the README ("Verification workload"), so a run can be checked independently.
 */
final class Verifier {
    static final int EXAMPLES = 10;

    /** One invariant's outcome. */
    record Invariant(String id, String description, long violations, List<String> examples) {
        boolean ok() {
            return violations == 0;
        }

        Map<String, Object> toJson() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", id);
            m.put("description", description);
            m.put("ok", ok());
            m.put("violations", violations);
            m.put("examples", examples);
            return m;
        }
    }

    /** The whole verdict. {@code i4} counts jobs with a repeated external effect; never a violation. */
    record Result(
            String schema,
            Map<String, Long> counts,
            List<Invariant> invariants,
            long externalDuplicateJobs,
            long externalDuplicateRows,
            List<String> externalDuplicateExamples) {
        boolean ok() {
            return invariants.stream().allMatch(Invariant::ok);
        }

        List<String> violated() {
            return invariants.stream().filter(i -> !i.ok()).map(Invariant::id).toList();
        }

        Map<String, Object> toJson() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("schema", schema);
            m.put("verdict", ok() ? "PASS" : "FAIL");
            m.put("ok", ok());
            m.put("counts", counts);
            List<Object> inv = new ArrayList<>();
            invariants.forEach(i -> inv.add(i.toJson()));
            m.put("invariants", inv);
            Map<String, Object> i4 = new LinkedHashMap<>();
            i4.put("id", "I4");
            i4.put(
                    "description",
                    "external effects repeated by a retried attempt (at least once; reported, not a violation)");
            i4.put("jobs", externalDuplicateJobs);
            i4.put("extraRows", externalDuplicateRows);
            i4.put("examples", externalDuplicateExamples);
            m.put("externalDuplicates", i4);
            return m;
        }

        String text() {
            StringBuilder sb = new StringBuilder();
            sb.append("Verification workload in schema '").append(schema).append("'\n");
            sb.append(String.format(
                    Locale.ROOT,
                    "  ledger   %,d rows in %,d generations%n",
                    counts.get("ledgerRows"),
                    counts.get("generations")));
            sb.append(String.format(
                    Locale.ROOT,
                    "  jobs     %,d enqueued: %,d with their effect, %,d still pending%n",
                    counts.get("enqueued"),
                    counts.get("effects"),
                    counts.get("pending")));
            sb.append(String.format(
                    Locale.ROOT,
                    "  ticks    %,d rows for %,d due instants%n",
                    counts.get("ticks"),
                    counts.get("tickDueInstants")));
            for (Invariant i : invariants) {
                sb.append(String.format(
                        Locale.ROOT, "  %-3s %-4s %s%n", i.id(), i.ok() ? "PASS" : "FAIL", i.description()));
                if (!i.ok()) {
                    sb.append(String.format(
                            Locale.ROOT,
                            "           %,d violation(s)%s%n",
                            i.violations(),
                            i.violations() > i.examples().size()
                                    ? ", first " + i.examples().size() + ":"
                                    : ":"));
                    i.examples()
                            .forEach(e ->
                                    sb.append("           VIOLATION ").append(e).append('\n'));
                }
            }
            sb.append(String.format(
                    Locale.ROOT,
                    "  I4  info %,d job(s) ran their external effect more than once "
                            + "(%,d extra rows; at least once, not a violation)%n",
                    externalDuplicateJobs,
                    externalDuplicateRows));
            externalDuplicateExamples.forEach(
                    e -> sb.append("           ").append(e).append('\n'));
            sb.append("verdict: ")
                    .append(ok() ? "PASS" : "FAIL (" + String.join(", ", violated()) + " violated)")
                    .append('\n');
            return sb.toString();
        }
    }

    private Verifier() {}

    /** The verification tables missing from {@code schema} (with Baton's {@code job}); empty when all exist. */
    static List<String> missingTables(Connection c, String schema) throws SQLException {
        List<String> missing = new ArrayList<>();
        List<String> needed = new ArrayList<>(VerifyWorkload.TABLES);
        needed.add("job");
        try (PreparedStatement ps =
                c.prepareStatement("SELECT to_regclass(quote_ident(?) || '.' || quote_ident(?)) IS NULL")) {
            for (String t : needed) {
                ps.setString(1, schema);
                ps.setString(2, t);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        missing.add(t);
                    }
                }
            }
        }
        return missing;
    }

    static Result check(DataSource ds, String schema) throws SQLException {
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            try {
                // Transaction-scoped (not the driver's session-level setters): safe behind a transaction-pooling proxy.
                try (Statement s = c.createStatement()) {
                    s.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
                }
                Result r = check(c, schema);
                c.commit();
                return r;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        }
    }

    private static Result check(Connection c, String schema) throws SQLException {
        String s = "\"" + schema + "\".";
        String lease = "'" + VerifyWorkload.LEASE + "'";
        Map<String, Long> counts = new LinkedHashMap<>();
        counts.put("ledgerRows", count(c, "SELECT count(*) FROM " + s + "verify_ledger"));
        counts.put("generations", count(c, "SELECT count(DISTINCT generation) FROM " + s + "verify_ledger"));
        counts.put("enqueued", count(c, "SELECT count(*) FROM " + s + "verify_enqueued"));
        counts.put("effects", count(c, "SELECT count(*) FROM " + s + "verify_effect"));
        counts.put(
                "pending",
                count(
                        c,
                        "SELECT count(*) FROM " + s + "verify_enqueued e JOIN " + s + "job j ON j.id = e.job_id "
                                + "WHERE j.state IN ('available', 'running')"));
        counts.put("externals", count(c, "SELECT count(*) FROM " + s + "verify_external"));
        counts.put("ticks", count(c, "SELECT count(*) FROM " + s + "verify_tick"));
        counts.put("tickDueInstants", count(c, "SELECT count(DISTINCT due_at) FROM " + s + "verify_tick"));

        List<Invariant> invariants = new ArrayList<>();
        // I1
        List<String> i1 = new ArrayList<>();
        long backwards = collect(
                c,
                "SELECT seq, generation, prev_seq, prev_generation, count(*) OVER () FROM ("
                        + "SELECT seq, generation, lag(seq) OVER w AS prev_seq, lag(generation) OVER w AS prev_generation "
                        + "FROM " + s + "verify_ledger WHERE lease_name = " + lease + " WINDOW w AS (ORDER BY seq)) x "
                        + "WHERE generation < prev_generation ORDER BY seq LIMIT " + EXAMPLES,
                i1,
                rs -> "ledger seq " + rs.getLong(1) + " has generation " + rs.getLong(2) + " after seq " + rs.getLong(3)
                        + " with generation " + rs.getLong(4) + " (the generation went back)");
        long shared = collect(
                c,
                "SELECT generation, string_agg(DISTINCT node_id, ', '), count(*) OVER () FROM " + s
                        + "verify_ledger WHERE lease_name = " + lease
                        + " GROUP BY generation HAVING count(DISTINCT node_id) > 1 "
                        + "ORDER BY generation LIMIT " + EXAMPLES,
                i1,
                rs -> "generation " + rs.getLong(1) + " was written by more than one node: " + rs.getString(2));
        invariants.add(new Invariant(
                "I1",
                "ledger: the generation never decreases by seq, and each generation has one node",
                backwards + shared,
                i1));
        // I2
        List<String> i2 = new ArrayList<>();
        long lost = collect(
                c,
                "SELECT e.job_id, j.state, count(*) OVER () FROM " + s + "verify_enqueued e LEFT JOIN " + s
                        + "job j ON j.id = e.job_id WHERE NOT EXISTS (SELECT 1 FROM " + s
                        + "verify_effect f WHERE f.job_id = e.job_id) "
                        + "AND (j.state IS NULL OR j.state NOT IN ('available', 'running')) ORDER BY e.job_id LIMIT "
                        + EXAMPLES,
                i2,
                rs -> "job " + rs.getLong(1) + " was lost: no effect row, and the job is "
                        + (rs.getString(2) == null ? "missing from the queue" : rs.getString(2)));
        long twice = collect(
                c,
                "SELECT job_id, count(*), string_agg(attempt::text, ', ' ORDER BY attempt), count(*) OVER () FROM " + s
                        + "verify_effect GROUP BY job_id HAVING count(*) > 1 ORDER BY job_id LIMIT " + EXAMPLES,
                i2,
                rs -> "job " + rs.getLong(1) + " has " + rs.getLong(2) + " effect rows (attempts " + rs.getString(3)
                        + ")");
        long wrongAttempt = collect(
                c,
                "SELECT f.job_id, f.attempt, j.state, j.attempt, count(*) OVER () FROM " + s
                        + "verify_effect f LEFT JOIN " + s + "job j ON j.id = f.job_id "
                        + "WHERE j.id IS NULL OR j.state <> 'succeeded' OR j.attempt <> f.attempt ORDER BY f.job_id LIMIT "
                        + EXAMPLES,
                i2,
                rs -> rs.getString(3) == null
                        ? "job " + rs.getLong(1) + " has an effect row (attempt " + rs.getInt(2)
                                + ") but is missing from the queue"
                        : "job " + rs.getLong(1) + " has an effect row of attempt " + rs.getInt(2) + " but the job is "
                                + rs.getString(3)
                                + (rs.getString(3).equals("succeeded") ? " by attempt " + rs.getInt(4) : "")
                                + " (not the attempt that completed it)");
        long orphan = collect(
                c,
                "SELECT f.job_id, count(*) OVER () FROM " + s + "verify_effect f WHERE NOT EXISTS " + "(SELECT 1 FROM "
                        + s + "verify_enqueued e WHERE e.job_id = f.job_id) ORDER BY f.job_id LIMIT " + EXAMPLES,
                i2,
                rs -> "job " + rs.getLong(1) + " has an effect row but was never recorded in verify_enqueued");
        invariants.add(new Invariant(
                "I2",
                "jobs: none lost, none with two effect rows, every effect by the attempt that "
                        + "completed the job (pending jobs are fine)",
                lost + twice + wrongAttempt + orphan,
                trim(i2)));
        // I3
        List<String> i3 = new ArrayList<>();
        long ticks = collect(
                c,
                "SELECT due_at, count(*), string_agg(job_id::text, ', ' ORDER BY job_id), count(*) OVER () FROM " + s
                        + "verify_tick GROUP BY due_at HAVING count(*) > 1 ORDER BY due_at LIMIT " + EXAMPLES,
                i3,
                rs -> "due instant " + rs.getTimestamp(1).toInstant() + " has " + rs.getLong(2) + " tick rows (jobs "
                        + rs.getString(3) + ")");
        invariants.add(new Invariant("I3", "ticks: at most one row per due instant", ticks, i3));
        // I4
        List<String> i4 = new ArrayList<>();
        long dupJobs = collect(
                c,
                "SELECT job_id, string_agg(attempt::text, ', ' ORDER BY attempt), "
                        + "string_agg(node_id, ', ' ORDER BY attempt), count(*) OVER () FROM " + s + "verify_external "
                        + "GROUP BY job_id HAVING count(*) > 1 ORDER BY job_id LIMIT " + EXAMPLES,
                i4,
                rs -> "job " + rs.getLong(1) + ": attempts " + rs.getString(2) + " (nodes " + rs.getString(3) + ")");
        long dupRows = count(
                c,
                "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM " + s
                        + "verify_external GROUP BY job_id HAVING count(*) > 1) x");
        return new Result(schema, counts, invariants, dupJobs, dupRows, i4);
    }

    private static List<String> trim(List<String> l) {
        return l.size() > EXAMPLES ? List.copyOf(l.subList(0, EXAMPLES)) : l;
    }

    @FunctionalInterface
    private interface Row {
        String describe(ResultSet rs) throws SQLException;
    }

    /** Adds each row's description to {@code into}; returns the total count (the last column, count(*) OVER ()). */
    private static long collect(Connection c, String sql, List<String> into, Row row) throws SQLException {
        long total = 0;
        try (PreparedStatement ps = c.prepareStatement(sql);
                ResultSet rs = ps.executeQuery()) {
            int last = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                total = rs.getLong(last);
                into.add(row.describe(rs));
            }
        }
        return total;
    }

    private static long count(Connection c, String sql) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
