package dev.baton.bench;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.Schedules;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.JobRequest;
import dev.baton.Leadership;
import dev.baton.LeadershipConfig;
import dev.baton.WorkerConfig;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.provider.jdbc.JdbcLockProvider;
import net.javacrumbs.shedlock.support.KeepAliveLockProvider;
import org.quartz.InterruptableJob;
import org.quartz.JobBuilder;
import org.quartz.JobExecutionContext;
import org.quartz.SimpleScheduleBuilder;
import org.quartz.TriggerBuilder;

/**
 * A child process of the failover measurement: {@code FailoverNode SYSTEM JDBC_URL SCHEMA NODE_ID}. Runs one
 * node of SYSTEM whose singleton task prints {@code TICK node epochMillis} every 100 ms while this node runs
 * it; prints {@code READY node} once started. SIGTERM (a JVM shutdown hook) stops the node gracefully.
 * SYSTEM {@code baton-job} instead runs a Baton worker whose handler prints {@code JOBSTART id} and never returns.
 */
public final class FailoverNode {
    static volatile String node;
    static volatile boolean stopping;

    private FailoverNode() {}

    static void tick() {
        System.out.println("TICK " + node + " " + System.currentTimeMillis());
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "error");
        String system = args[0];
        String url = args[1];
        String schema = args[2];
        node = args[3];
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(url);
        hc.setSchema(schema);
        hc.setMaximumPoolSize(10);
        hc.setPoolName("failover-" + node);
        HikariDataSource pool = new HikariDataSource(hc);
        CountDownLatch done = new CountDownLatch(1);
        Runnable stop;
        switch (system) {
            case "baton" -> {
                Baton b =
                        Baton.builder(pool).schema(schema).nodeId(node).build().start();
                Leadership l = b.leadership("bench.singleton", LeadershipConfig.defaults(), ctx -> {
                            while (!ctx.isCancelled()) {
                                tick();
                                ctx.awaitCancellation(Duration.ofMillis(100));
                            }
                        })
                        .start();
                stop = () -> {
                    l.close();
                    b.close();
                };
            }
            case "baton-job" -> {
                Baton b = Baton.builder(pool)
                        .schema(schema)
                        .nodeId(node)
                        .worker(WorkerConfig.builder()
                                .queue("rescue", 1)
                                .jobLease(Duration.ofMillis(Long.getLong("lease", 3000)))
                                .heartbeatInterval(Duration.ofMillis(500))
                                .rescueInterval(Duration.ofSeconds(1))
                                .build())
                        .handle("hold", Long.class, (id, ctx) -> {
                            System.out.println("JOBSTART " + id);
                            System.out.flush();
                            new CountDownLatch(1).await();
                        })
                        .build()
                        .start();
                stop = b::close;
            }
            case "shedlock" -> {
                ScheduledExecutorService keepAlive = Executors.newSingleThreadScheduledExecutor();
                DefaultLockingTaskExecutor ex = new DefaultLockingTaskExecutor(
                        new KeepAliveLockProvider(new JdbcLockProvider(pool), keepAlive));
                ScheduledExecutorService sched = Executors.newSingleThreadScheduledExecutor();
                sched.scheduleWithFixedDelay(
                        () -> ex.executeWithLock(
                                (Runnable) () -> {
                                    while (!stopping) {
                                        tick();
                                        sleep(100);
                                    }
                                },
                                new LockConfiguration(
                                        Instant.now(), "bench.singleton", Duration.ofSeconds(30), Duration.ZERO)),
                        0,
                        100,
                        TimeUnit.MILLISECONDS);
                stop = () -> {
                    stopping = true;
                    sched.shutdown();
                    try {
                        sched.awaitTermination(10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    keepAlive.shutdownNow();
                };
            }
            case "quartz" -> {
                org.quartz.Scheduler s = Peer.QuartzPeer.scheduler(node, pool, 2);
                org.quartz.JobDetail job = JobBuilder.newJob(QuartzSingleton.class)
                        .withIdentity("singleton", "bench")
                        .requestRecovery(true)
                        .storeDurably()
                        .build();
                try {
                    s.scheduleJob(
                            job,
                            TriggerBuilder.newTrigger()
                                    .withIdentity("singleton", "bench")
                                    .startNow()
                                    .withSchedule(SimpleScheduleBuilder.repeatSecondlyForever(1))
                                    .build());
                } catch (org.quartz.ObjectAlreadyExistsException e) {
                    // declared by the other node
                }
                s.start();
                stop = () -> {
                    stopping = true;
                    try {
                        s.shutdown(true);
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                };
            }
            case "dbs" -> {
                RecurringTask<Void> task = Tasks.recurring("singleton", Schedules.fixedDelay(Duration.ofMillis(100)))
                        .execute((inst, ctx) -> {
                            while (!ctx.getSchedulerState().isShuttingDown()) {
                                tick();
                                sleep(100);
                            }
                        });
                Scheduler s = Scheduler.create(pool)
                        .startTasks(task)
                        .threads(2)
                        .pollingInterval(Duration.ofSeconds(1))
                        .heartbeatInterval(Duration.ofSeconds(Integer.getInteger("heartbeat", 2)))
                        .schedulerName(new com.github.kagkarlsson.scheduler.SchedulerName.Fixed(node))
                        .build();
                s.start();
                stop = s::stop;
            }
            default -> throw new IllegalArgumentException("unknown system " + system);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            try {
                stop.run();
            } finally {
                pool.close();
                done.countDown();
            }
        }));
        System.out.println("READY " + node);
        System.out.flush();
        done.await();
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The Quartz singleton: loops while this node runs it. */
    @org.quartz.DisallowConcurrentExecution
    public static final class QuartzSingleton implements InterruptableJob {
        private volatile boolean interrupted;

        @Override
        public void execute(JobExecutionContext ctx) {
            while (!interrupted && !stopping) {
                tick();
                sleep(100);
            }
        }

        @Override
        public void interrupt() {
            interrupted = true;
        }
    }

    static JobRequest hold(long id) {
        return JobRequest.of("hold", id).queue("rescue");
    }
}
