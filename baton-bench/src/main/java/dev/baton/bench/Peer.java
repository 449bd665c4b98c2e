package dev.baton.bench;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.SchedulerClient;
import com.github.kagkarlsson.scheduler.task.TaskInstance;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.JobRequest;
import dev.baton.Jobs;
import dev.baton.WorkerConfig;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.stream.LongStream;
import javax.sql.DataSource;
import org.jobrunr.jobs.mappers.JobMapper;
import org.jobrunr.scheduling.JobScheduler;
import org.jobrunr.server.BackgroundJobServer;
import org.jobrunr.server.BackgroundJobServerConfiguration;
import org.jobrunr.server.JobActivator;
import org.jobrunr.storage.StorageProvider;
import org.jobrunr.storage.StorageProviderUtils;
import org.jobrunr.storage.sql.postgres.PostgresStorageProvider;
import org.jobrunr.utils.mapper.jackson.JacksonJsonMapper;
import org.quartz.DisallowConcurrentExecution;
import org.quartz.Job;
import org.quartz.JobBuilder;
import org.quartz.JobDetail;
import org.quartz.JobExecutionContext;
import org.quartz.Trigger;
import org.quartz.TriggerBuilder;
import org.quartz.impl.SchedulerRepository;
import org.quartz.impl.StdSchedulerFactory;
import org.quartz.utils.ConnectionProvider;
import org.quartz.utils.DBConnectionManager;

/**
 * One job system under comparison, on its own schema of the shared database: installs its tables,
 * enqueues a backlog through its own client API, starts in-process nodes (each with its own HikariCP
 * pool, counted by a {@link StatementCounter}), enqueues single probe jobs, and says how many jobs are
 * left. Every system's job body is {@link Sink#ran}.
 */
abstract class Peer implements AutoCloseable {
    static final String QUEUE = "bench";

    final Database db;
    final String schema;
    final int threads;
    final int poolSize;
    final StatementCounter counter;
    HikariDataSource client;

    Peer(Database db, String schema, int threads, int poolSize) {
        this.db = db;
        this.schema = schema;
        this.threads = threads;
        this.poolSize = poolSize;
        this.counter = new StatementCounter(schema, 400);
    }

    abstract String name();

    /** The settings used, for the report. */
    abstract String settings();

    /** Creates the system's tables in a fresh {@link #schema}. */
    void install() throws Exception {
        db.dropSchema(schema);
        db.execute("CREATE SCHEMA \"" + schema + "\"");
        // The latency run's probes and its load's senders call at once, each on a connection of its own.
        client = db.pool(name() + "-client", 2 + Compare.LOAD_SENDERS, schema);
        installTables();
    }

    abstract void installTables() throws Exception;

    /** Enqueues jobs {@code from .. from+n-1} through the system's client API. */
    abstract void enqueue(long from, int n) throws Exception;

    /** Enqueues one job now (a probe: id &lt; 0). */
    abstract void probe(long id) throws Exception;

    /** Starts node {@code i} (a scheduler/worker instance with its own pool), working the queue. */
    abstract AutoCloseable startNode(int i) throws Exception;

    /** Jobs not yet finished. */
    abstract long remaining() throws SQLException;

    /** Whether a statement (its first 400 characters) is the one that fetches/claims due jobs. */
    abstract boolean isClaim(String sql);

    /** Inserts {@code n} due (or finished) jobs with plain SQL, for the growth runs; false if not supported. */
    boolean bulk(long from, int n, boolean finished) throws SQLException {
        return false;
    }

    HikariDataSource nodePool(int i) {
        return db.pool(name() + "-node-" + i, poolSize, schema);
    }

    long count(String sql) throws SQLException {
        try (Connection c = client.getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    void sql(String sql) throws SQLException {
        try (Connection c = client.getConnection();
                Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    @Override
    public void close() {
        if (client != null) {
            client.close();
            client = null;
        }
        db.dropSchema(schema);
    }

    static AutoCloseable closing(AutoCloseable node, HikariDataSource pool) {
        return () -> {
            try {
                node.close();
            } finally {
                pool.close();
            }
        };
    }

    // ------------------------------------------------------------------ Baton

    static class BatonPeer extends Peer {
        static final String KIND = "cmp.noop";
        private Jobs jobs;

        BatonPeer(Database db, String schema, int threads, int poolSize) {
            super(db, schema, threads, poolSize);
        }

        @Override
        String name() {
            return "Baton";
        }

        @Override
        String settings() {
            return "WorkerConfig: queue concurrency " + threads
                    + " per node, defaults otherwise (poll 1 s + LISTEN/NOTIFY, "
                    + "job lease 30 s, heartbeat 5 s, rescue 10 s); HikariCP pool " + poolSize + " per node; "
                    + "enqueue: Jobs.enqueueAll, batches of 1000";
        }

        @Override
        void installTables() {
            Baton.migrate(client, schema);
            jobs = Baton.builder(client).schema(schema).build().jobs();
        }

        @Override
        void enqueue(long from, int n) {
            for (long s = from; s < from + n; s += 1000) {
                List<JobRequest> batch = new ArrayList<>();
                for (long i = s; i < Math.min(from + n, s + 1000); i++) {
                    batch.add(JobRequest.of(KIND, i).queue(QUEUE));
                }
                jobs.enqueueAll(batch);
            }
        }

        @Override
        void probe(long id) {
            jobs.enqueue(JobRequest.of(KIND, id).queue(QUEUE));
        }

        @Override
        AutoCloseable startNode(int i) throws Exception {
            HikariDataSource pool = nodePool(i);
            Baton b = Baton.builder(counter.wrap(pool))
                    .schema(schema)
                    .nodeId("node-" + i)
                    .worker(WorkerConfig.builder().queue(QUEUE, threads).build())
                    .handle(KIND, Long.class, (id, ctx) -> Sink.ran(id))
                    .build()
                    .start();
            return closing(b, pool);
        }

        @Override
        long remaining() throws SQLException {
            return count("SELECT count(*) FROM \"" + schema + "\".job WHERE state <> 'succeeded'");
        }

        @Override
        boolean isClaim(String sql) {
            return sql.startsWith("job.claim");
        }

        @Override
        boolean bulk(long from, int n, boolean finished) throws SQLException {
            sql("INSERT INTO \"" + schema + "\".job (queue, kind, payload, priority, state, run_at, max_attempts"
                    + (finished ? ", attempt, finished_at" : "") + ") SELECT '" + QUEUE + "', '" + KIND
                    + "', to_jsonb(g), 50, '" + (finished ? "succeeded" : "available") + "', now(), 25"
                    + (finished ? ", 1, now()" : "") + " FROM generate_series(" + from + ", " + (from + n - 1) + ") g");
            // Vacuumed as well, as autovacuum leaves a table that has kept its rows for a while: the visibility
            // map set, so that the first autovacuum during a measurement does not scan all of it.
            sql("VACUUM ANALYZE \"" + schema + "\".job");
            return true;
        }
    }

    // ------------------------------------------------------------------ db-scheduler

    static final class DbSchedulerPeer extends Peer {
        final boolean lockAndFetch;
        final OneTimeTask<Void> task =
                Tasks.oneTime("noop").execute((inst, ctx) -> Sink.ran(Long.parseLong(inst.getId())));
        private SchedulerClient schedulerClient;

        /** The thread count is part of the name: several counts of one strategy run side by side. */
        final boolean namedByThreads;

        DbSchedulerPeer(
                Database db, String schema, int threads, int poolSize, boolean lockAndFetch, boolean namedByThreads) {
            super(db, schema, threads, poolSize);
            this.lockAndFetch = lockAndFetch;
            this.namedByThreads = namedByThreads;
        }

        @Override
        String name() {
            return "db-scheduler (" + (lockAndFetch ? "lock-and-fetch" : "fetch-and-lock-on-execute")
                    + (namedByThreads ? ", " + threads + " threads" : "") + ")";
        }

        @Override
        String settings() {
            return "threads " + threads + " per node, pollingInterval 1 s (default 10 s), "
                    + (lockAndFetch ? "pollUsingLockAndFetch(0.5, 3.0)" : "pollUsingFetchAndLockOnExecute(0.5, 3.0)")
                    + ", heartbeat defaults; HikariCP pool " + poolSize + " per node; one-time task, no data; "
                    + "enqueue: SchedulerClient.scheduleBatch, batches of 1000";
        }

        @Override
        void installTables() throws SQLException {
            sql("CREATE TABLE scheduled_tasks (task_name text NOT NULL, task_instance text NOT NULL, task_data bytea, "
                    + "execution_time timestamptz NOT NULL, picked boolean NOT NULL, picked_by text, last_success timestamptz, "
                    + "last_failure timestamptz, consecutive_failures int, last_heartbeat timestamptz, version bigint NOT NULL, "
                    + "priority smallint, PRIMARY KEY (task_name, task_instance))");
            sql("CREATE INDEX execution_time_idx ON scheduled_tasks (execution_time)");
            sql("CREATE INDEX last_heartbeat_idx ON scheduled_tasks (last_heartbeat)");
            sql("CREATE INDEX priority_execution_time_idx ON scheduled_tasks (priority DESC, execution_time ASC)");
            schedulerClient = SchedulerClient.Builder.create(client, task).build();
        }

        @Override
        void enqueue(long from, int n) {
            Instant now = Instant.now();
            for (long s = from; s < from + n; s += 1000) {
                List<TaskInstance<?>> batch = new ArrayList<>();
                for (long i = s; i < Math.min(from + n, s + 1000); i++) {
                    batch.add(task.instance(Long.toString(i)));
                }
                schedulerClient.scheduleBatch(batch, now);
            }
        }

        @Override
        void probe(long id) {
            schedulerClient.schedule(task.instance(Long.toString(id)), Instant.now());
        }

        @Override
        AutoCloseable startNode(int i) {
            HikariDataSource pool = nodePool(i);
            var b = Scheduler.create(counter.wrap(pool), task)
                    .threads(threads)
                    .pollingInterval(Duration.ofSeconds(1))
                    .schedulerName(new com.github.kagkarlsson.scheduler.SchedulerName.Fixed("node-" + i));
            b = lockAndFetch ? b.pollUsingLockAndFetch(0.5, 3.0) : b.pollUsingFetchAndLockOnExecute(0.5, 3.0);
            Scheduler s = b.build();
            s.start();
            return closing(s::stop, pool);
        }

        @Override
        long remaining() throws SQLException {
            return count("SELECT count(*) FROM scheduled_tasks");
        }

        @Override
        boolean isClaim(String sql) {
            String s = sql.toLowerCase();
            return s.contains("scheduled_tasks") && s.contains("execution_time <=") && !s.startsWith("select count");
        }

        @Override
        boolean bulk(long from, int n, boolean finished) throws SQLException {
            if (finished) {
                return false; // one-time executions are deleted when they complete: nothing is retained
            }
            sql("INSERT INTO scheduled_tasks (task_name, task_instance, execution_time, picked, version) "
                    + "SELECT 'noop', g::text, now() - interval '1 second', false, 1 FROM generate_series(" + from
                    + ", "
                    + (from + n - 1) + ") g");
            sql("VACUUM ANALYZE scheduled_tasks");
            return true;
        }
    }

    // ------------------------------------------------------------------ JobRunr

    /** JobRunr's job: a public static method, found by JobRunr through the lambda. */
    public static final class JobRunrJob {
        public static void run(Long id) {
            Sink.ran(id);
        }
    }

    static final class JobRunrPeer extends Peer {
        static final Duration POLL = Duration.ofSeconds(Integer.getInteger("bench.jobrunrPollSeconds", 5));
        private JobScheduler scheduler;

        JobRunrPeer(Database db, String schema, int threads, int poolSize) {
            super(db, schema, threads, poolSize);
        }

        @Override
        String name() {
            return "JobRunr";
        }

        @Override
        String settings() {
            return "OSS " + Machine.comparedVersion("jobrunr") + ", PostgresStorageProvider; "
                    + "BackgroundJobServer workerCount " + threads + ", pollInterval " + POLL.toSeconds()
                    + " s (default 15 s; 5 s is the smallest the OSS edition accepts), defaults otherwise; HikariCP pool "
                    + poolSize + " per node; enqueue: JobScheduler.enqueue(Stream, lambda)";
        }

        private StorageProvider storage(DataSource ds, StorageProviderUtils.DatabaseOptions opts) {
            StorageProvider sp = new PostgresStorageProvider(ds, opts);
            sp.setJobMapper(new JobMapper(new JacksonJsonMapper()));
            return sp;
        }

        @Override
        void installTables() {
            scheduler = new JobScheduler(storage(client, StorageProviderUtils.DatabaseOptions.CREATE));
        }

        @Override
        void enqueue(long from, int n) {
            scheduler.enqueue(LongStream.range(from, from + n).boxed(), id -> JobRunrJob.run(id));
        }

        @Override
        void probe(long id) {
            Long boxed = id;
            scheduler.enqueue(() -> JobRunrJob.run(boxed));
        }

        @Override
        AutoCloseable startNode(int i) {
            HikariDataSource pool = nodePool(i);
            BackgroundJobServer server = new BackgroundJobServer(
                    storage(counter.wrap(pool), StorageProviderUtils.DatabaseOptions.SKIP_CREATE),
                    new JacksonJsonMapper(),
                    new JobActivator() {
                        @Override
                        public <T> T activateJob(Class<T> type) {
                            return null;
                        }
                    },
                    BackgroundJobServerConfiguration.usingStandardBackgroundJobServerConfiguration()
                            .andName("node-" + i)
                            .andWorkerCount(threads)
                            .andPollInterval(POLL));
            server.start();
            return closing(server::stop, pool);
        }

        @Override
        long remaining() throws SQLException {
            return count("SELECT count(*) FROM jobrunr_jobs WHERE state <> 'SUCCEEDED'");
        }

        @Override
        boolean isClaim(String sql) {
            String s = sql.toLowerCase();
            return s.startsWith("select")
                    && s.contains("from jobrunr_jobs")
                    && s.contains("state =")
                    && !s.contains("count(");
        }
    }

    // ------------------------------------------------------------------ Quartz

    /** Quartz's job: the job name is the id. */
    @DisallowConcurrentExecution
    public static final class QuartzJob implements Job {
        @Override
        public void execute(JobExecutionContext ctx) {
            Sink.ran(Long.parseLong(ctx.getJobDetail().getKey().getName()));
        }
    }

    static final class QuartzPeer extends Peer {
        private org.quartz.Scheduler clientScheduler;

        QuartzPeer(Database db, String schema, int threads, int poolSize) {
            super(db, schema, threads, poolSize);
        }

        @Override
        String name() {
            return "Quartz";
        }

        @Override
        String settings() {
            return "JobStoreTX + PostgreSQLDelegate, isClustered=true, clusterCheckinInterval 7500 ms (default), "
                    + "threadCount " + threads + ", batchTriggerAcquisitionMaxCount " + threads
                    + " with acquireTriggersWithinLock=true, idleWaitTime 1000 ms (default 30 s), misfireThreshold 1 h; "
                    + "HikariCP pool threadCount + 3 per node (as Quartz's docs recommend); one non-durable job + simple "
                    + "trigger per job; "
                    + "enqueue: Scheduler.scheduleJobs, batches of 1000";
        }

        static Properties properties(String instanceId, String dataSource, int threads) {
            Properties p = new Properties();
            p.setProperty("org.quartz.scheduler.instanceName", "baton-bench");
            p.setProperty("org.quartz.scheduler.instanceId", instanceId);
            p.setProperty("org.quartz.scheduler.skipUpdateCheck", "true");
            p.setProperty("org.quartz.scheduler.idleWaitTime", "1000");
            p.setProperty("org.quartz.scheduler.batchTriggerAcquisitionMaxCount", Integer.toString(threads));
            p.setProperty("org.quartz.threadPool.class", "org.quartz.simpl.SimpleThreadPool");
            p.setProperty("org.quartz.threadPool.threadCount", Integer.toString(threads));
            p.setProperty("org.quartz.jobStore.class", "org.quartz.impl.jdbcjobstore.JobStoreTX");
            p.setProperty("org.quartz.jobStore.driverDelegateClass", "org.quartz.impl.jdbcjobstore.PostgreSQLDelegate");
            p.setProperty("org.quartz.jobStore.dataSource", dataSource);
            p.setProperty("org.quartz.jobStore.tablePrefix", "qrtz_");
            p.setProperty("org.quartz.jobStore.isClustered", "true");
            p.setProperty("org.quartz.jobStore.clusterCheckinInterval", "7500");
            p.setProperty("org.quartz.jobStore.acquireTriggersWithinLock", "true");
            p.setProperty("org.quartz.jobStore.misfireThreshold", "3600000");
            return p;
        }

        /** A scheduler on {@code ds}; Quartz keeps one per name in a JVM, so it is taken out of its repository. */
        static org.quartz.Scheduler scheduler(String instanceId, DataSource ds, int threads) throws Exception {
            String dsName = "bench-" + instanceId + "-" + System.nanoTime();
            DBConnectionManager.getInstance().addConnectionProvider(dsName, new ConnectionProvider() {
                @Override
                public Connection getConnection() throws SQLException {
                    return ds.getConnection();
                }

                @Override
                public void shutdown() {}

                @Override
                public void initialize() {}
            });
            org.quartz.Scheduler s = new StdSchedulerFactory(properties(instanceId, dsName, threads)).getScheduler();
            SchedulerRepository.getInstance().remove(s.getSchedulerName());
            return s;
        }

        @Override
        void installTables() throws Exception {
            String ddl;
            try (InputStream in = StdSchedulerFactory.class.getResourceAsStream(
                    "/org/quartz/impl/jdbcjobstore/tables_postgres.sql")) {
                if (in == null) {
                    throw new IOException("tables_postgres.sql is not in the Quartz jar");
                }
                ddl = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            StringBuilder clean = new StringBuilder();
            for (String line : ddl.split("\n")) {
                if (!line.strip().startsWith("#") && !line.strip().startsWith("--")) {
                    clean.append(line).append('\n');
                }
            }
            for (String st : clean.toString().split(";")) {
                String s = st.strip();
                if (!s.isEmpty()
                        && !s.equalsIgnoreCase("commit")
                        && !s.toLowerCase().startsWith("drop")) {
                    sql(s);
                }
            }
            clientScheduler = scheduler("client", client, 1);
        }

        @Override
        void enqueue(long from, int n) throws Exception {
            for (long s = from; s < from + n; s += 1000) {
                Map<JobDetail, Set<? extends Trigger>> batch = new LinkedHashMap<>();
                for (long i = s; i < Math.min(from + n, s + 1000); i++) {
                    batch.put(job(i), Set.of(trigger(i)));
                }
                clientScheduler.scheduleJobs(batch, false);
            }
        }

        private static JobDetail job(long id) {
            return JobBuilder.newJob(QuartzJob.class)
                    .withIdentity(Long.toString(id), "bench")
                    .build();
        }

        private static Trigger trigger(long id) {
            return TriggerBuilder.newTrigger()
                    .withIdentity(Long.toString(id), "bench")
                    .startNow()
                    .build();
        }

        @Override
        void probe(long id) throws Exception {
            clientScheduler.scheduleJob(job(id), trigger(id));
        }

        @Override
        AutoCloseable startNode(int i) throws Exception {
            // Quartz's docs: a data source with at least as many connections as worker threads, plus three
            HikariDataSource pool = db.pool(name() + "-node-" + i, threads + 3, schema);
            org.quartz.Scheduler s = scheduler("node-" + i, counter.wrap(pool), threads);
            s.start();
            return closing(() -> s.shutdown(true), pool);
        }

        @Override
        long remaining() throws SQLException {
            return count("SELECT (SELECT count(*) FROM qrtz_triggers) + (SELECT count(*) FROM qrtz_fired_triggers)");
        }

        @Override
        boolean isClaim(String sql) {
            String s = sql.toLowerCase();
            return s.startsWith("select") && s.contains("from qrtz_triggers") && s.contains("next_fire_time <=");
        }

        @Override
        public void close() {
            if (clientScheduler != null) {
                try {
                    clientScheduler.shutdown();
                } catch (Exception e) {
                    // nothing was started
                }
            }
            super.close();
        }
    }
}
