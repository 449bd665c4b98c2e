package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** {@link Admin#searchJobs}: each filter, keyset paging, cursors, and what a search returns. */
class AdminJobsTest extends AdminTestBase {

    /**
     * Each filter narrows to the jobs it names and nothing else, newest first; filters combine with AND.
     */
    @Test
    void eachFilterNarrowsToItsJobs() throws Exception {
        long a1 = enqueue(JobRequest.of("a", new Item("1")).queue("q1").concurrencyKey("tenant-7"));
        long a2 = enqueue(JobRequest.of("a", new Item("2")).queue("q2").idempotencyKey("order-42"));
        long b1 = enqueue(JobRequest.of("b", new Item("3")).queue("q1"));
        long b2 = enqueue(JobRequest.of("b", new Item("4")).queue("q2").concurrencyKey("tenant-8"));
        long b3 = enqueue(JobRequest.of("b", new Item("5")).queue("q2"));
        finish(a2, JobState.FAILED, "java.net.SocketTimeoutException", "read timed out after 30 s");
        finish(b1, JobState.SUCCEEDED, null, null);
        finish(b2, JobState.CANCELLED, "app.Refused", "refused by the tenant");
        exec("UPDATE " + schema + ".job SET created_at = '2026-01-01T00:00:00Z' WHERE id = ?", a1);
        exec("UPDATE " + schema + ".job SET created_at = '2026-01-02T00:00:00Z' WHERE id = ?", a2);
        exec("UPDATE " + schema + ".job SET created_at = '2026-01-03T00:00:00Z' WHERE id IN (?, ?, ?)", b1, b2, b3);

        JobQuery all = JobQuery.all();
        assertThat(ids(all)).containsExactly(b3, b2, b1, a2, a1);
        assertThat(ids(all.states(JobState.AVAILABLE))).containsExactly(b3, a1);
        assertThat(ids(all.states(JobState.FAILED, JobState.CANCELLED))).containsExactly(b2, a2);
        assertThat(ids(all.queue("q1"))).containsExactly(b1, a1);
        assertThat(ids(all.kind("a"))).containsExactly(a2, a1);
        assertThat(ids(all.createdFrom(Instant.parse("2026-01-02T00:00:00Z")))).containsExactly(b3, b2, b1, a2);
        assertThat(ids(all.createdTo(Instant.parse("2026-01-02T00:00:00Z"))))
                .as("createdTo is exclusive")
                .containsExactly(a1);
        assertThat(ids(all.createdFrom(Instant.parse("2026-01-02T00:00:00Z"))
                        .createdTo(Instant.parse("2026-01-03T00:00:00Z"))))
                .containsExactly(a2);
        assertThat(ids(all.errorContains("TIMED OUT"))).as("ignoring case").containsExactly(a2);
        assertThat(ids(all.errorContains("SocketTimeout")))
                .as("the error's class too")
                .containsExactly(a2);
        assertThat(ids(all.errorContains("refused"))).containsExactly(b2);
        assertThat(ids(all.concurrencyKey("tenant-7"))).containsExactly(a1);
        assertThat(ids(all.idempotencyKey("order-42"))).containsExactly(a2);
        assertThat(ids(all.queue("q2").kind("b").states(JobState.AVAILABLE))).containsExactly(b3);
        assertThat(ids(all.queue("q1").kind("a").states(JobState.FAILED))).isEmpty();
    }

    /**
     * Keyset paging over several pages returns every job once, newest first, while new jobs are enqueued
     * between pages (they are newer than the first page, so they shift nothing) and jobs of the pages not
     * yet read change state and leave the filter. A search started afresh sees the new jobs first.
     *
     * <p>Protection removed and seen failing: the keyset's strict {@code id < :before} (made {@code <=}):
     * the last job of each page came again first on the next page.
     */
    @Test
    void keysetPagingHasNoDuplicatesOrGapsWhileJobsAreEnqueued() {
        List<Long> before = new ArrayList<>();
        for (int i = 0; i < 23; i++) {
            before.add(0, enqueue("page", "q1"));
        }
        JobQuery q = JobQuery.all().kind("page").pageSize(5);
        List<Long> seen = new ArrayList<>();
        Set<Long> added = new HashSet<>();
        String cursor = null;
        int pages = 0;
        do {
            Page<JobInfo> p = admin.searchJobs(q, cursor);
            assertThat(p.items()).hasSizeLessThanOrEqualTo(5);
            p.items().forEach(j -> seen.add(j.id()));
            for (int i = 0; i < 3; i++) {
                added.add(enqueue("page", "q1"));
            }
            cursor = p.next().orElse(null);
            pages++;
        } while (cursor != null);
        assertThat(seen).as("every job once, newest first").containsExactlyElementsOf(before);
        assertThat(pages).isEqualTo(5);
        assertThat(seen).doesNotContainAnyElementsOf(added);
        assertThat(admin.searchJobs(q, null).items().get(0).id())
                .as("a fresh search starts at the newest job")
                .isEqualTo(added.stream().mapToLong(Long::longValue).max().orElseThrow());
    }

    /** A page of exactly the page size says there is no next page only when no job is left. */
    @Test
    void lastPageHasNoCursor() {
        for (int i = 0; i < 4; i++) {
            enqueue("k", "q1");
        }
        assertThat(pages(JobQuery.all().pageSize(2)))
                .hasSize(2)
                .allSatisfy(p -> assertThat(p).hasSize(2));
        assertThat(pages(JobQuery.all().pageSize(4))).hasSize(1);
        assertThat(admin.searchJobs(JobQuery.all().kind("none"), null))
                .isEqualTo(new Page<JobInfo>(List.of(), java.util.Optional.empty()));
    }

    /** A cursor that no page returned is refused, naming what was given and what is allowed. */
    @Test
    void badCursorsAreRefused() {
        enqueue("k", "q1");
        for (String bad : List.of("abc", "j", "j-5", "j0", "J1", " j1", "j1 ", "jzzzzzzzzzzzzzzzzz", "j\u0000")) {
            assertThatThrownBy(() -> admin.searchJobs(JobQuery.all(), bad))
                    .as(bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("cursor must be null (the first page) or the next() of a page that searchJobs "
                            + "returned, but was '" + bad.replace('\u0000', '?') + "'");
        }
        assertThatThrownBy(() -> admin.searchJobs(null, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("query must be set (JobQuery.all() selects every job), but was null");
        assertThat(admin.searchJobs(JobQuery.all(), "")).isEqualTo(admin.searchJobs(JobQuery.all(), null));
    }

    /** Every bad filter value is refused with a message naming the field, the rule and the value. */
    @Test
    void badQueryValuesAreRefused() {
        JobQuery q = JobQuery.all();
        assertRefused(
                () -> q.states(new JobState[0]),
                "states must name at least one of [AVAILABLE, RUNNING, SUCCEEDED, FAILED, "
                        + "CANCELLED], but named none (leave states unset for every state)");
        assertRefused(
                () -> q.states((JobState[]) null),
                "states must name at least one of [AVAILABLE, RUNNING, "
                        + "SUCCEEDED, FAILED, CANCELLED], but was null (leave states unset for every state)");
        assertRefused(
                () -> q.states(JobState.FAILED, null),
                "states must not contain null, but state 1 of 2 was null; allowed: "
                        + "[AVAILABLE, RUNNING, SUCCEEDED, FAILED, CANCELLED]");
        assertRefused(
                () -> q.queue("Bad Queue"),
                "queue must match [a-z0-9][a-z0-9_.-]{0,62} (lower-case letters, digits, '_', '.', '-'; "
                        + "at most 63 characters), but was 'Bad Queue'");
        assertRefused(() -> q.kind(""), "job kind must be 1 to 200 characters, but was empty");
        assertRefused(() -> q.createdFrom(null), "createdFrom must be an instant, but was null");
        assertRefused(() -> q.createdTo(null), "createdTo must be an instant, but was null");
        Instant t = Instant.parse("2026-01-01T00:00:00Z");
        assertRefused(
                () -> q.createdFrom(t).createdTo(t),
                "createdFrom (2026-01-01T00:00:00Z) must be before createdTo (2026-01-01T00:00:00Z): the range "
                        + "is [from, to)");
        assertRefused(
                () -> q.createdTo(t).createdFrom(t.plusSeconds(1)),
                "createdFrom (2026-01-01T00:00:01Z) must be before createdTo (2026-01-01T00:00:00Z): the range "
                        + "is [from, to)");
        assertRefused(
                () -> q.errorContains(""),
                "errorContains must be 1 to 200 characters of text to find in an attempt's error, but was empty");
        assertRefused(
                () -> q.errorContains("x".repeat(201)),
                "errorContains must be 1 to 200 characters of text to find in an attempt's error, but was "
                        + "201 characters");
        assertRefused(() -> q.concurrencyKey(null), "concurrencyKey must be 1 to 200 characters, but was null");
        assertRefused(
                () -> q.idempotencyKey("x".repeat(201)),
                "idempotencyKey must be 1 to 200 characters, but was 201 " + "characters");
        assertRefused(() -> q.pageSize(0), "pageSize must be 1 to 1000, but was 0");
        assertRefused(() -> q.pageSize(1001), "pageSize must be 1 to 1000, but was 1001");
        assertThat(q).as("a refused setter changes nothing").isEqualTo(JobQuery.all());
        assertThat(q.pageSize()).isEqualTo(JobQuery.DEFAULT_PAGE_SIZE);
    }

    private static void assertRefused(Runnable r, String message) {
        assertThatThrownBy(r::run).isInstanceOf(IllegalArgumentException.class).hasMessage(message);
    }

    /**
     * The user's error text is matched as text: {@code %}, {@code _} and {@code \} are not LIKE wildcards
     * or escapes.
     *
     * <p>Protection removed and seen failing: the escaping of the pattern ({@code containsPattern} appending
     * the text as it is): "50%" also found "disk 50 GB full".
     */
    @Test
    void errorTextIsMatchedAsTextNotAsAPattern() throws Exception {
        long percent = enqueue("k", "q1");
        long plain = enqueue("k", "q1");
        long underscore = enqueue("k", "q1");
        long other = enqueue("k", "q1");
        long backslash = enqueue("k", "q1");
        finish(percent, JobState.FAILED, "app.Full", "disk 50% full");
        finish(plain, JobState.FAILED, "app.Full", "disk 50 GB full");
        finish(underscore, JobState.FAILED, "app.Bad", "field a_b missing");
        finish(other, JobState.FAILED, "app.Bad", "field axb missing");
        finish(backslash, JobState.FAILED, "app.Path", "no file C:\\tmp");
        assertThat(ids(JobQuery.all().errorContains("50%"))).containsExactly(percent);
        assertThat(ids(JobQuery.all().errorContains("a_b"))).containsExactly(underscore);
        assertThat(ids(JobQuery.all().errorContains("C:\\t"))).containsExactly(backslash);
        assertThat(ids(JobQuery.all().errorContains("%"))).containsExactly(percent);
        assertThat(ids(JobQuery.all().errorContains("full"))).containsExactly(plain, percent);
    }

    /**
     * Markup in a job's kind, payload, metadata and error is stored and returned as it was given: escaping
     * is the console's job, and a search finds the text as typed.
     */
    @Test
    void markupIsStoredAndReturnedVerbatim() throws Exception {
        String script = "<script>alert('x')</script>";
        long id = enqueue(JobRequest.of(script, new Item(script)).queue("q1").metadata("note", script));
        finish(id, JobState.FAILED, "app.<b>Bold</b>", script + " & \"quoted\"");
        List<JobInfo> found =
                admin.searchJobs(JobQuery.all().errorContains("<script>"), null).items();
        assertThat(found).hasSize(1);
        JobInfo j = found.get(0);
        assertThat(j.kind()).isEqualTo(script);
        assertThat(j.payloadJson()).contains(script);
        assertThat(j.metadata()).containsEntry("note", script);
        assertThat(j.errors().get(0).message()).isEqualTo(script + " & \"quoted\"");
        assertThat(j.errors().get(0).errorClass()).isEqualTo("app.<b>Bold</b>");
        assertThat(ids(JobQuery.all().kind(script))).containsExactly(id);
    }

    /**
     * A tool gets the admin API from a Baton it never starts, without a connection until it calls a method;
     * a failing database is reported as a {@link BatonException} that names the operation.
     */
    @Test
    void aToolBuildsTheAdminApiWithoutConnecting() {
        AtomicInteger asked = new AtomicInteger();
        DataSource down = (DataSource) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {DataSource.class}, (proxy, m, args) -> {
                    if (m.getName().equals("getConnection")) {
                        asked.incrementAndGet();
                        throw new SQLException("database down", "08001");
                    }
                    if (m.getName().equals("hashCode")) {
                        return System.identityHashCode(proxy);
                    }
                    if (m.getName().equals("equals")) {
                        return proxy == args[0];
                    }
                    throw new UnsupportedOperationException(m.getName());
                });
        Admin offline = Baton.builder(down).schema(schema).build().admin();
        assertThat(asked).hasValue(0);
        assertThatThrownBy(() -> offline.searchJobs(JobQuery.all().queue("q1"), null))
                .isInstanceOf(BatonException.class)
                .hasMessageStartingWith("searching jobs (JobQuery{queue=q1, pageSize=50}) failed: database down");
    }

    /** A search shows each attempt's error without its stack; {@link Admin#job} has the stack too. */
    @Test
    void searchLeavesStacksOutAndJobHasThem() throws Exception {
        long id = enqueue("k", "q1");
        finish(id, JobState.FAILED, "app.Boom", "boom");
        JobInfo listed = admin.searchJobs(JobQuery.all(), null).items().get(0);
        JobInfo detail = admin.job(id).orElseThrow();
        assertThat(listed.errors()).hasSize(1);
        assertThat(listed.errors().get(0).message()).isEqualTo("boom");
        assertThat(listed.errors().get(0).node()).isEqualTo("node-1");
        assertThat(listed.errors().get(0).at()).isNotNull();
        assertThat(listed.errors().get(0).stack()).isNull();
        assertThat(detail.errors().get(0).stack()).isEqualTo("at app.Handler.handle(Handler.java:42)");
        assertThat(listed.state()).isEqualTo(detail.state());
        assertThat(listed.createdAt()).isEqualTo(detail.createdAt());
        assertThat(listed.finishedAt()).isEqualTo(detail.finishedAt());
        assertThat(admin.job(id + 1000)).isEmpty();
        try (Connection c = pool.getConnection();
                ResultSet rs = c.createStatement().executeQuery("SELECT count(*) FROM " + schema + ".job")) {
            rs.next();
            assertThat(rs.getLong(1)).as("reading changes nothing").isEqualTo(1);
        }
    }
}
