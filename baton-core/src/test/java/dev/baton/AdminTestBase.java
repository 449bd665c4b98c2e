package dev.baton;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * Shared fixtures of the {@link Admin} tests: the admin API of a Baton built on the test's schema and never
 * started (as a tool uses it), a jobs client, and jobs put into any state by SQL on the test's own pool.
 */
abstract class AdminTestBase extends JobBehaviourTestBase {
    Admin admin;
    Jobs jobs;

    @org.junit.jupiter.api.BeforeEach
    void setUpAdmin() {
        Baton tool = closeLater(Baton.builder(appPool).schema(schema).build());
        admin = tool.admin();
        jobs = tool.jobs();
    }

    long enqueue(JobRequest r) {
        return jobs.enqueue(r).id();
    }

    long enqueue(String kind, String queue) {
        return enqueue(JobRequest.of(kind, new Item(kind)).queue(queue));
    }

    /** Ends job {@code id} in a terminal {@code state} after one attempt that failed with this error (or none). */
    void finish(long id, JobState state, String errorClass, String errorMessage) throws SQLException {
        exec(
                "UPDATE " + schema + ".job SET state = ?, attempt = 1, finished_at = clock_timestamp(),"
                        + " errors = CASE WHEN ?::text IS NULL THEN errors ELSE errors || jsonb_build_array("
                        + "jsonb_build_object('attempt', 1, 'node', 'node-1', 'at', clock_timestamp(), 'class', ?::text,"
                        + " 'message', ?::text, 'stack', 'at app.Handler.handle(Handler.java:42)')) END WHERE id = ?",
                state.name().toLowerCase(java.util.Locale.ROOT),
                errorMessage,
                errorClass,
                errorMessage,
                id);
    }

    /** Makes job {@code id} look claimed by a node that is working it (a live attempt lease of an hour). */
    void markRunning(long id) throws SQLException {
        exec(
                "UPDATE " + schema + ".job SET state = 'running', attempt = attempt + 1, claimed_by = 'node-1',"
                        + " attempt_token = nextval('" + schema + ".job_attempt_token'),"
                        + " lease_expires_at = clock_timestamp() + interval '1 hour', attempted_at = clock_timestamp()"
                        + " WHERE id = ?",
                id);
    }

    void exec(String sql, Object... args) throws SQLException {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            ps.executeUpdate();
        }
    }

    String state(long id) throws SQLException {
        return row(id).state();
    }

    boolean exists(long id) throws SQLException {
        return count("SELECT count(*) FROM " + schema + ".job WHERE id = " + id) == 1;
    }

    /** Every page of {@code q}, in order, as lists of ids. */
    List<List<Long>> pages(JobQuery q) {
        List<List<Long>> out = new ArrayList<>();
        String cursor = null;
        do {
            Page<JobInfo> p = admin.searchJobs(q, cursor);
            out.add(p.items().stream().map(JobInfo::id).toList());
            cursor = p.next().orElse(null);
        } while (cursor != null);
        return out;
    }

    /** The ids of every job {@code q} selects, newest first. */
    List<Long> ids(JobQuery q) {
        return pages(q.pageSize(JobQuery.MAX_PAGE_SIZE)).stream()
                .flatMap(List::stream)
                .toList();
    }
}
