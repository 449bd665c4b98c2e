package dev.baton.spring;

import dev.baton.NotificationMode;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code baton.*} properties. Unset values take Baton's own defaults; every value is validated by
 * Baton's builders at start-up, and a bad one fails the start naming the property and the rule.
 */
@ConfigurationProperties(prefix = "baton")
public class BatonProperties {
    /** Whether to create a Baton node in this application. */
    private boolean enabled = true;
    /** The schema holding Baton's tables (lower-case letters, digits, underscores). */
    private String schema = "baton";
    /** This node's id, unique per running process; default host-pid-random. */
    private String nodeId;
    /** Apply Baton's schema migrations at start-up; false only verifies the version (Flyway/Liquibase users). */
    private boolean migrateOnStart = true;
    /** How nodes learn about releases and new jobs: AUTO probes LISTEN and falls back to polling; LISTEN; POLL. */
    private NotificationMode notifications = NotificationMode.AUTO;
    /** How often this node records its heartbeat (at least 100ms); a node is stale after 3 missed beats. */
    private Duration nodeHeartbeat;

    private final Application application = new Application();
    private final Listen listen = new Listen();
    private final Worker worker = new Worker();
    private final Maintenance maintenance = new Maintenance();
    private final SingleRunner singleRunner = new SingleRunner();
    private final Metrics metrics = new Metrics();
    private final Tracing tracing = new Tracing();
    private final Console console = new Console();

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public String getSchema() {
        return schema;
    }

    public void setSchema(String schema) {
        this.schema = schema;
    }

    public String getNodeId() {
        return nodeId;
    }

    public void setNodeId(String nodeId) {
        this.nodeId = nodeId;
    }

    public boolean isMigrateOnStart() {
        return migrateOnStart;
    }

    public void setMigrateOnStart(boolean migrateOnStart) {
        this.migrateOnStart = migrateOnStart;
    }

    public NotificationMode getNotifications() {
        return notifications;
    }

    public void setNotifications(NotificationMode notifications) {
        this.notifications = notifications;
    }

    public Duration getNodeHeartbeat() {
        return nodeHeartbeat;
    }

    public void setNodeHeartbeat(Duration nodeHeartbeat) {
        this.nodeHeartbeat = nodeHeartbeat;
    }

    public Application getApplication() {
        return application;
    }

    public Listen getListen() {
        return listen;
    }

    public Worker getWorker() {
        return worker;
    }

    public Maintenance getMaintenance() {
        return maintenance;
    }

    public SingleRunner getSingleRunner() {
        return singleRunner;
    }

    public Metrics getMetrics() {
        return metrics;
    }

    public Console getConsole() {
        return console;
    }

    public Tracing getTracing() {
        return tracing;
    }

    /** The application schedules belong to. */
    public static class Application {
        /** Application name owning the declared schedules; default spring.application.name, else "default". */
        private String name;
        /** Application version; a version never rewrites schedules stored by a newer one. */
        private String version = "0";

        public String getName() {
            return name;
        }

        public void setName(String name) {
            this.name = name;
        }

        public String getVersion() {
            return version;
        }

        public void setVersion(String version) {
            this.version = version;
        }
    }

    /** A direct (not transaction-pooled) connection for LISTEN when the application's pool goes through PgBouncer. */
    public static class Listen {
        /** JDBC URL of a direct connection for LISTEN; unset: the application's DataSource. */
        private String url;
        /** User name for the LISTEN connection. */
        private String username;
        /** Password for the LISTEN connection. */
        private String password;

        public String getUrl() {
            return url;
        }

        public void setUrl(String url) {
            this.url = url;
        }

        public String getUsername() {
            return username;
        }

        public void setUsername(String username) {
            this.username = username;
        }

        public String getPassword() {
            return password;
        }

        public void setPassword(String password) {
            this.password = password;
        }
    }

    /** The job worker on this node. It runs when queues are set or job handlers or schedules are declared. */
    public static class Worker {
        /** Whether this node works jobs (false: it can still enqueue). */
        private boolean enabled = true;
        /** Queues and their concurrency on this node (1-1000); default {default: 10} when handlers exist. */
        private Map<String, Integer> queues = new LinkedHashMap<>();
        /** Lease of a running attempt; a crashed worker's jobs are rescued within about lease + rescue interval. */
        private Duration jobLease;
        /** Heartbeat of running attempts; jobLease/2 must exceed 2 x heartbeatInterval. */
        private Duration heartbeatInterval;
        /** Poll interval when notifications are unavailable. */
        private Duration pollInterval;
        /** How often the maintenance leader rescues expired attempts. */
        private Duration rescueInterval;
        /** Expired attempts before a job fails. */
        private Integer maxStalls;
        /** Budget for running jobs to finish at shutdown before they are released to other nodes. */
        private Duration drainTimeout;
        /** Finished jobs are pruned after this. */
        private Duration retention;
        /** Larger payloads are refused at enqueue. */
        private Integer maxPayloadBytes;
        /**
         * How long an available job of a kind no live node handles waits before it fails (default 1h);
         * meanwhile it uses no attempt, and the workers serving its queue report it.
         */
        private Duration unhandledKindTimeout;

        public Duration getUnhandledKindTimeout() {
            return unhandledKindTimeout;
        }

        public void setUnhandledKindTimeout(Duration unhandledKindTimeout) {
            this.unhandledKindTimeout = unhandledKindTimeout;
        }

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public Map<String, Integer> getQueues() {
            return queues;
        }

        public void setQueues(Map<String, Integer> queues) {
            this.queues = queues;
        }

        public Duration getJobLease() {
            return jobLease;
        }

        public void setJobLease(Duration jobLease) {
            this.jobLease = jobLease;
        }

        public Duration getHeartbeatInterval() {
            return heartbeatInterval;
        }

        public void setHeartbeatInterval(Duration heartbeatInterval) {
            this.heartbeatInterval = heartbeatInterval;
        }

        public Duration getPollInterval() {
            return pollInterval;
        }

        public void setPollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
        }

        public Duration getRescueInterval() {
            return rescueInterval;
        }

        public void setRescueInterval(Duration rescueInterval) {
            this.rescueInterval = rescueInterval;
        }

        public Integer getMaxStalls() {
            return maxStalls;
        }

        public void setMaxStalls(Integer maxStalls) {
            this.maxStalls = maxStalls;
        }

        public Duration getDrainTimeout() {
            return drainTimeout;
        }

        public void setDrainTimeout(Duration drainTimeout) {
            this.drainTimeout = drainTimeout;
        }

        public Duration getRetention() {
            return retention;
        }

        public void setRetention(Duration retention) {
            this.retention = retention;
        }

        public Integer getMaxPayloadBytes() {
            return maxPayloadBytes;
        }

        public void setMaxPayloadBytes(Integer maxPayloadBytes) {
            this.maxPayloadBytes = maxPayloadBytes;
        }
    }

    /** Timing of the maintenance lease (job rescue, pruning, the scheduler). */
    public static class Maintenance {
        /** Lease TTL (L); a crashed leader is replaced within L + R. */
        private Duration leaseTtl;
        /** Renew interval (R); L/2 must exceed 2R. */
        private Duration renewInterval;
        /** Candidates' poll interval when no release notification arrives. */
        private Duration pollInterval;
        /** How long a graceful stop waits for the task before releasing. */
        private Duration stopTimeout;

        public Duration getLeaseTtl() {
            return leaseTtl;
        }

        public void setLeaseTtl(Duration leaseTtl) {
            this.leaseTtl = leaseTtl;
        }

        public Duration getRenewInterval() {
            return renewInterval;
        }

        public void setRenewInterval(Duration renewInterval) {
            this.renewInterval = renewInterval;
        }

        public Duration getPollInterval() {
            return pollInterval;
        }

        public void setPollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
        }

        public Duration getStopTimeout() {
            return stopTimeout;
        }

        public void setStopTimeout(Duration stopTimeout) {
            this.stopTimeout = stopTimeout;
        }
    }

    /** Defaults of {@code @BatonSingleRunner}. */
    public static class SingleRunner {
        /** Lease TTL while a single-runner method runs (renewed every third of it). */
        private Duration leaseTtl = Duration.ofSeconds(30);

        public Duration getLeaseTtl() {
            return leaseTtl;
        }

        public void setLeaseTtl(Duration leaseTtl) {
            this.leaseTtl = leaseTtl;
        }
    }

    /** Micrometer binding (when a MeterRegistry bean exists). */
    public static class Metrics {
        /** Whether to record Baton's meters in the application's MeterRegistry. */
        private boolean enabled = true;
        /** Refresh interval of the queue depth gauges (one grouped query each; at least 1s). */
        private Duration queueDepthRefresh = Duration.ofSeconds(15);

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public Duration getQueueDepthRefresh() {
            return queueDepthRefresh;
        }

        public void setQueueDepthRefresh(Duration queueDepthRefresh) {
            this.queueDepthRefresh = queueDepthRefresh;
        }
    }

    /** Traces of jobs through the application's ObservationRegistry (Micrometer Tracing). */
    public static class Tracing {
        /** Whether to observe enqueues, executions, completions and leadership terms when an ObservationRegistry exists. */
        private boolean enabled = true;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /** The operator console (needs dev.baton:baton-console and a servlet web application). */
    public static class Console {
        /** The default mount path. */
        public static final String DEFAULT_PATH = "/baton";
        /** The default role an operator needs to act when Spring Security is present. */
        public static final String DEFAULT_ROLE = "BATON_ADMIN";

        /** Whether to mount the console. */
        private boolean enabled = false;
        /** The path the console is served at, e.g. /baton (its pages are below it). */
        private String path = DEFAULT_PATH;
        /** Whether the console may act (bulk actions, drain, retire, pause, expire); read-only when false. */
        private boolean actionsEnabled = false;
        /** With Spring Security: the role (request.isUserInRole) an operator needs to act. */
        private String role = DEFAULT_ROLE;
        /** Without Spring Security: allow actions anyway (recorded as the container's remote user, else "console"). */
        private boolean allowActionsWithoutSecurity = false;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public String getPath() {
            return path;
        }

        public void setPath(String path) {
            this.path = path;
        }

        public boolean isActionsEnabled() {
            return actionsEnabled;
        }

        public void setActionsEnabled(boolean actionsEnabled) {
            this.actionsEnabled = actionsEnabled;
        }

        public String getRole() {
            return role;
        }

        public void setRole(String role) {
            this.role = role;
        }

        public boolean isAllowActionsWithoutSecurity() {
            return allowActionsWithoutSecurity;
        }

        public void setAllowActionsWithoutSecurity(boolean allowActionsWithoutSecurity) {
            this.allowActionsWithoutSecurity = allowActionsWithoutSecurity;
        }
    }
}
