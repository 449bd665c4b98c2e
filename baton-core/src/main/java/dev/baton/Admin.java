package dev.baton;

import dev.baton.internal.db.Db;
import dev.baton.internal.job.JobAdminStore;
import dev.baton.internal.job.JobStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;

/**
 * The operator's view of a Baton schema, the one place a console, {@code baton status} or an actuator
 * endpoint goes through: search jobs and act on many at once, read queue depth, lag and throughput, and
 * reach the schedules, leases, nodes and the operators' controls. Reached as {@link Baton#admin()}, on a started node or on one
 * built and never started (as a tool does: {@code Baton.builder(dataSource).schema(s).build().admin()}
 * opens no connection until a method is called). Thread-safe.
 *
 * <p>Every bulk action is bounded ({@value #MAX_BULK} jobs per call) and safe while workers run: it never
 * waits for a job a worker holds at that instant (a claim, a heartbeat, a completion), never deletes a
 * running job, and asks a running job to stop rather than ending it under its node; each reports how many
 * jobs it matched and changed ({@link BulkResult}). A bulk action whose connection fails while the
 * database may already have committed it throws {@link UnknownOutcomeException}; doing it again is safe. See
 * {@code docs/admin-api.md}.
 */
public final class Admin {
    /** The most jobs one bulk action takes: as many ids, or as many jobs of a query, per call. */
    public static final int MAX_BULK = 10_000;
    /** The end of an unknown outcome's message for a bulk action. */
    private static final String AGAIN =
            ". Doing it again is safe: it changes only the jobs still in a state it applies to";
    /** The shortest throughput bucket. */
    public static final Duration MIN_BUCKET = Duration.ofSeconds(1);
    /** The most buckets one throughput call returns. */
    public static final int MAX_BUCKETS = 1000;

    /** The states each bulk action applies to. */
    private static final Set<JobState> CANCELLABLE = EnumSet.of(JobState.AVAILABLE, JobState.RUNNING);

    private static final Set<JobState> RETRYABLE = EnumSet.of(JobState.FAILED, JobState.CANCELLED);
    private static final Set<JobState> DELETABLE =
            EnumSet.of(JobState.AVAILABLE, JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED);
    /** Opaque search cursors: a marker and the last id of the page, in base 36. */
    private static final char CURSOR_MARK = 'j';

    private final Db db;
    private final JobAdminStore store;
    private final Jobs jobs;
    private final Schedules schedules;
    private final Leases leases;
    private final Nodes nodes;
    private final Controls controls;

    Admin(
            DataSource dataSource,
            JobStore jobStore,
            Jobs jobs,
            Schedules schedules,
            Leases leases,
            Nodes nodes,
            Controls controls) {
        this.db = Db.of(dataSource);
        this.store = jobStore.admin();
        this.jobs = jobs;
        this.schedules = schedules;
        this.leases = leases;
        this.nodes = nodes;
        this.controls = controls;
    }

    /** The jobs facade: enqueue, get, cancel and retry one job, pause and resume queues, limits, stats. */
    public Jobs jobs() {
        return jobs;
    }

    /** The schedules: list with next and last runs, pause, resume, trigger, create, update, delete. */
    public Schedules schedules() {
        return schedules;
    }

    /** The leases: inspect one with its time left on the database clock, list them, the history of terms. */
    public Leases leases() {
        return leases;
    }

    /** The nodes: list, get, and who owns what right now ({@link Nodes#ownership()}). */
    public Nodes nodes() {
        return nodes;
    }

    /**
     * The operators' controls: drain or resume a node, retire a version, disable a job kind, pause a
     * schedule, expire a lease, and the record of every request.
     */
    public Controls controls() {
        return controls;
    }

    // ---------------------------------------------------------------- jobs

    /**
     * One page of the jobs {@code query} selects, newest first (by id), {@link JobQuery#pageSize()} at most.
     * Pass the page's {@link Page#next()} as {@code cursor} to continue; {@code null} (or empty) for the first
     * page. Paging is by keyset on the id, so jobs enqueued while an operator pages never shift a page or
     * repeat a job (they are newer than the first page). Each job carries every attempt's error, without its
     * stack trace ({@link #job(long)} has the stacks). A job that changed since it matched is shown as it is
     * now; one deleted meanwhile is left out.
     *
     * @throws IllegalArgumentException the query is null, or the cursor is not one a page returned
     */
    public Page<JobInfo> searchJobs(JobQuery query, String cursor) {
        requireQuery(query);
        long before = decodeCursor(cursor);
        int size = query.pageSize();
        JobAdminStore.Filter filter = filter(query, query.states());
        return db.transactionUnchecked("searching jobs (" + query + ")", c -> {
            List<Long> ids = store.match(c, filter, before, size + 1);
            List<Long> page = ids.size() > size ? ids.subList(0, size) : ids;
            List<JobInfo> rows = store.rows(c, page, Jobs::errors);
            Optional<String> next =
                    ids.size() > size ? Optional.of(encodeCursor(page.get(size - 1))) : Optional.empty();
            return new Page<>(rows, next);
        });
    }

    /** The job with every attempt's error (class, message, stack trace, node and time), as {@link Jobs#get}. */
    public Optional<JobInfo> job(long id) {
        return jobs.get(id);
    }

    /**
     * Cancels the jobs of {@code ids} as {@link Jobs#cancel} does: an available job ends cancelled now; a
     * running one is asked to stop (counted in {@link BulkResult#cancelRequested()}) and ends cancelled once its
     * handler stops; a finished job is left as it is.
     *
     * @param ids 1 to {@value #MAX_BULK} job ids (an unknown id is not counted as matched)
     */
    public BulkResult cancelJobs(List<Long> ids) {
        List<Long> checked = requireIds("cancelJobs", ids);
        return byIds("cancelling " + checked.size() + " jobs", checked, Action.CANCEL);
    }

    /**
     * Cancels up to {@value #MAX_BULK} available or running jobs that {@code query} selects, newest first
     * (see {@link #cancelJobs(List)}); {@link BulkResult#more()} says whether more remain.
     *
     * @throws IllegalArgumentException the query is null or asks only for states cancel does not apply to
     */
    public BulkResult cancelJobs(JobQuery query) {
        return byQuery(query, Action.CANCEL);
    }

    /**
     * Runs the failed and cancelled jobs of {@code ids} again now, as {@link Jobs#retry} does (at least one
     * more attempt allowed); jobs in other states are left as they are.
     *
     * @param ids 1 to {@value #MAX_BULK} job ids
     */
    public BulkResult retryJobs(List<Long> ids) {
        List<Long> checked = requireIds("retryJobs", ids);
        return byIds("retrying " + checked.size() + " jobs", checked, Action.RETRY);
    }

    /**
     * Retries up to {@value #MAX_BULK} failed or cancelled jobs that {@code query} selects, newest first (see
     * {@link #retryJobs(List)}). Retried jobs leave the query's failed and cancelled states, so calling
     * again while {@link BulkResult#more()} goes through all of them.
     *
     * @throws IllegalArgumentException the query is null or asks only for states retry does not apply to
     */
    public BulkResult retryJobs(JobQuery query) {
        return byQuery(query, Action.RETRY);
    }

    /**
     * Deletes the finished and available jobs of {@code ids}. A running job is never deleted (its attempt
     * belongs to the node running it: cancel it, then delete it once it has ended); it counts as matched, not
     * changed. Neither is a job a worker claims at that instant. Deleted jobs are gone for good, errors
     * and all.
     *
     * @param ids 1 to {@value #MAX_BULK} job ids
     */
    public BulkResult deleteJobs(List<Long> ids) {
        List<Long> checked = requireIds("deleteJobs", ids);
        return byIds("deleting " + checked.size() + " jobs", checked, Action.DELETE);
    }

    /**
     * Deletes up to {@value #MAX_BULK} finished or available jobs that {@code query} selects, newest first
     * (see {@link #deleteJobs(List)}); running jobs are never selected.
     *
     * @throws IllegalArgumentException the query is null or asks only for running jobs
     */
    public BulkResult deleteJobs(JobQuery query) {
        return byQuery(query, Action.DELETE);
    }

    // ---------------------------------------------------------------- queues

    /**
     * Every queue with unfinished jobs (or paused), in name order: its depth ({@link Jobs#stats()}) and its
     * lag, the age of its oldest due available job on the database clock. Reads only the small indexes of
     * unfinished jobs: cheap enough to poll.
     */
    public List<QueueInfo> queues() {
        List<QueueStats> stats = jobs.stats();
        // Read after the depth: a job that became due in between shows a lag a little larger, never negative.
        Instant now = db.callUnchecked("reading the database clock", store::dbNow);
        List<QueueInfo> out = new ArrayList<>(stats.size());
        for (QueueStats s : stats) {
            Duration lag = s.oldestAvailableRunAt()
                    .filter(t -> t.isBefore(now))
                    .map(t -> Duration.between(t, now))
                    .orElse(Duration.ZERO);
            out.add(new QueueInfo(s, lag));
        }
        return out;
    }

    /**
     * Finished jobs of every queue per {@code bucket} over the last {@code window}, by outcome, oldest bucket
     * first, empty buckets included; the last bucket holds the database's now and is still filling.
     * Reads the finished jobs of the window through the index on their finish time; only jobs still kept
     * ({@link WorkerConfig#retention()}) are counted.
     *
     * @param window a whole number of buckets, at most {@value #MAX_BUCKETS}
     * @param bucket at least {@link #MIN_BUCKET}, a whole number of milliseconds
     */
    public List<ThroughputBucket> throughput(Duration window, Duration bucket) {
        return throughputOf(null, window, bucket);
    }

    /** Finished jobs of {@code queue} per bucket over the last window (see {@link #throughput(Duration, Duration)}). */
    public List<ThroughputBucket> throughput(String queue, Duration window, Duration bucket) {
        JobRequest.validQueue(queue);
        return throughputOf(queue, window, bucket);
    }

    private List<ThroughputBucket> throughputOf(String queue, Duration window, Duration bucket) {
        Checks.requirePositive("bucket", bucket, false);
        Checks.requirePositive("window", window, false);
        if (bucket.compareTo(MIN_BUCKET) < 0 || bucket.toNanos() % 1_000_000 != 0) {
            throw new IllegalArgumentException(
                    "bucket must be at least " + MIN_BUCKET + " and a whole number of milliseconds, but was " + bucket);
        }
        long n = window.dividedBy(bucket);
        if (n < 1 || n > MAX_BUCKETS || !bucket.multipliedBy(n).equals(window)) {
            throw new IllegalArgumentException("window must be 1 to " + MAX_BUCKETS + " whole buckets of " + bucket
                    + ", but was " + window + " (" + (n == 0 ? "shorter than one bucket" : n + " buckets")
                    + (n >= 1 && !bucket.multipliedBy(n).equals(window) ? " and a remainder" : "") + ")");
        }
        long bucketMs = bucket.toMillis();
        List<ThroughputBucket> out = new ArrayList<>((int) n);
        for (JobAdminStore.Bucket b : db.callUnchecked(
                "reading throughput" + (queue == null ? "" : " of queue '" + queue + "'"),
                c -> store.throughput(c, queue, bucketMs, (int) n))) {
            out.add(new ThroughputBucket(
                    Instant.ofEpochMilli(b.startMs()), bucket, b.succeeded(), b.failed(), b.cancelled()));
        }
        return out;
    }

    // ---------------------------------------------------------------- helpers

    private enum Action {
        CANCEL("cancelJobs", "cancelling", CANCELLABLE, "finished jobs cannot be cancelled"),
        RETRY("retryJobs", "retrying", RETRYABLE, "only failed or cancelled jobs are retried"),
        DELETE("deleteJobs", "deleting", DELETABLE, "a running job is never deleted: cancel it first");

        final String method;
        final String doing;
        final Set<JobState> states;
        final String why;

        Action(String method, String doing, Set<JobState> states, String why) {
            this.method = method;
            this.doing = doing;
            this.states = states;
            this.why = why;
        }
    }

    private BulkResult byIds(String what, List<Long> ids, Action action) {
        JobAdminStore.Bulk r = db.writeUnchecked(what, AGAIN, c -> run(c, action, ids));
        return new BulkResult(r.found(), r.changed(), r.requested(), false);
    }

    private BulkResult byQuery(JobQuery query, Action action) {
        requireQuery(query);
        Set<JobState> wanted = EnumSet.copyOf(action.states);
        if (!query.states().isEmpty()) {
            wanted.retainAll(query.states());
        }
        if (wanted.isEmpty()) {
            throw new IllegalArgumentException(action.method + " applies only to jobs in " + action.states + " ("
                    + action.why + "), but the query asks only for " + query.states());
        }
        JobAdminStore.Filter filter = filter(query, wanted);
        return db.transactionUnchecked(action.doing + " the jobs of " + query, AGAIN, c -> {
            List<Long> ids = store.match(c, filter, Long.MAX_VALUE, MAX_BULK + 1);
            boolean more = ids.size() > MAX_BULK;
            List<Long> taken = more ? ids.subList(0, MAX_BULK) : ids;
            if (taken.isEmpty()) {
                return new BulkResult(0, 0, 0, false);
            }
            JobAdminStore.Bulk r = run(c, action, taken);
            return new BulkResult(taken.size(), r.changed(), r.requested(), more);
        });
    }

    private JobAdminStore.Bulk run(java.sql.Connection c, Action action, List<Long> ids) throws java.sql.SQLException {
        return switch (action) {
            case CANCEL -> store.cancel(c, ids);
            case RETRY -> store.retry(c, ids);
            case DELETE -> store.delete(c, ids);
        };
    }

    private static JobAdminStore.Filter filter(JobQuery q, Set<JobState> states) {
        Set<JobState> all = states.isEmpty() ? EnumSet.allOf(JobState.class) : states;
        String[] names =
                all.stream().map(s -> s.name().toLowerCase(Locale.ROOT)).toArray(String[]::new);
        return new JobAdminStore.Filter(
                names,
                q.queue().orElse(null),
                q.kind().orElse(null),
                q.createdFrom().orElse(null),
                q.createdTo().orElse(null),
                q.concurrencyKey().orElse(null),
                q.idempotencyKey().orElse(null),
                q.errorContains().map(JobAdminStore::containsPattern).orElse(null));
    }

    private static void requireQuery(JobQuery query) {
        if (query == null) {
            throw new IllegalArgumentException("query must be set (JobQuery.all() selects every job), but was null");
        }
    }

    private static List<Long> requireIds(String method, List<Long> ids) {
        if (ids == null || ids.isEmpty() || ids.size() > MAX_BULK) {
            throw new IllegalArgumentException(method + " takes 1 to " + MAX_BULK + " job ids per call, but got "
                    + (ids == null ? "null" : ids.size())
                    + (ids != null && ids.size() > MAX_BULK
                            ? "; split the list, or act by JobQuery and call again while BulkResult.more()"
                            : ""));
        }
        for (int i = 0; i < ids.size(); i++) {
            if (ids.get(i) == null) {
                throw new IllegalArgumentException(
                        method + " takes job ids, but id " + i + " of " + ids.size() + " was null");
            }
        }
        return List.copyOf(ids);
    }

    static String encodeCursor(long lastId) {
        return CURSOR_MARK + Long.toString(lastId, 36);
    }

    /** The id below which the page starts: Long.MAX_VALUE for the first page. */
    static long decodeCursor(String cursor) {
        if (cursor == null || cursor.isEmpty()) {
            return Long.MAX_VALUE;
        }
        long id = -1;
        if (cursor.length() > 1 && cursor.length() <= 14 && cursor.charAt(0) == CURSOR_MARK) {
            try {
                id = Long.parseLong(cursor.substring(1), 36);
            } catch (NumberFormatException e) {
                id = -1;
            }
        }
        if (id < 1 || !encodeCursor(id).equals(cursor)) {
            String shown = cursor.length() > 40 ? cursor.substring(0, 40) + "…" : cursor;
            throw new IllegalArgumentException("cursor must be null (the first page) or the next() of a page that "
                    + "searchJobs returned, but was '" + shown.replaceAll("\\p{Cntrl}", "?") + "'");
        }
        return id;
    }
}
