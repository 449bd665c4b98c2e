package dev.baton.internal.node;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.baton.NodeState;
import dev.baton.internal.db.BoundedCalls;
import dev.baton.internal.db.Db;
import dev.baton.internal.job.JobSettings;
import dev.baton.internal.service.Service;
import java.net.InetAddress;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Registers this node and keeps its heartbeat; records draining and stopped. The node's row says which
 * application and version it runs and which job kinds it handles, so the maintenance leader can tell
 * kinds that no live node handles.
 */
public final class NodeRegistrar extends Service {
    private static final Logger log = LoggerFactory.getLogger(NodeRegistrar.class);
    public static final int PROTOCOL_VERSION = 1;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Db db;
    private final NodeStore store;
    private final String nodeId;
    private final Duration interval;
    /** This process's registration: tells a restart of this id apart from another live process using it. */
    private final String instance = UUID.randomUUID().toString();

    /** What the node writes at registration and every heartbeat; the host is looked up once. */
    private final NodeStore.Registration registration;

    /** The standing controls of operators: read with every heartbeat and handed to {@link #onControls}. */
    private final ControlStore controls;

    private final String versionTarget;
    private volatile Consumer<ControlStore.ForNode> onControls = f -> {};

    /** Reads of the controls outside the heartbeat (before a campaign after an outage), bounded too. */
    private final BoundedCalls refreshCalls;

    /** Heartbeats run bounded (a black-holed socket must not hang them), each on a borrowed connection. */
    private final BoundedCalls calls;
    /** Set before the first pass: when the first heartbeat is due (0 once it ran). Service thread only. */
    private long firstBeatAt;

    /**
     * @param kinds       the job kinds this node handles, or null when it runs no worker (it handles none)
     * @param jobSettings the job maintenance settings of its worker, declared for the maintenance leader;
     *                    null when it runs no worker
     */
    public NodeRegistrar(
            DataSource dataSource,
            String schema,
            String nodeId,
            Duration interval,
            String app,
            String appVersion,
            List<String> kinds,
            JobSettings jobSettings,
            LongSupplier ticker) {
        super("baton-node-heartbeat", ticker);
        this.db = Db.of(dataSource);
        this.store = new NodeStore(schema);
        this.nodeId = nodeId;
        this.interval = interval;
        this.calls = new BoundedCalls(dataSource, "baton-node-heartbeat-calls");
        this.refreshCalls = new BoundedCalls(dataSource, "baton-control-refresh-calls");
        this.controls = new ControlStore(schema, null);
        this.versionTarget = ControlStore.versionTarget(app, appVersion);
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("app", app);
        meta.put("appVersion", appVersion);
        meta.put("instance", instance);
        meta.put("kinds", kinds == null ? List.of() : List.copyOf(new TreeSet<>(kinds)));
        if (jobSettings != null) {
            Map<String, Object> jobs = new LinkedHashMap<>();
            jobs.put("retentionMs", jobSettings.retention().toMillis());
            jobs.put("maxStalls", jobSettings.maxStalls());
            jobs.put(
                    "unhandledKindTimeoutMs", jobSettings.unhandledKindTimeout().toMillis());
            meta.put("jobs", jobs);
        }
        String metaJson;
        try {
            metaJson = JSON.writeValueAsString(meta);
        } catch (Exception e) {
            throw new IllegalStateException("cannot encode node metadata", e);
        }
        this.registration = new NodeStore.Registration(
                nodeId,
                interval,
                PROTOCOL_VERSION,
                hostName(),
                ProcessHandle.current().pid(),
                metaJson);
    }

    /** Registers the node, in the caller's thread (a failure stops the node's start); the heartbeat is {@link #start()}. */
    public void register() {
        try {
            db.call("registering node '" + nodeId + "'", c -> {
                warnIfTaken(c);
                store.register(c, registration);
                return null;
            });
        } catch (SQLException e) {
            throw Db.failed("registering node '" + nodeId + "'", e);
        }
    }

    /** The first heartbeat comes after a jittered interval, so nodes started together do not beat in step. */
    @Override
    protected void beforeFirstPass() {
        firstBeatAt = ticker.getAsLong() + jitter(interval.toNanos());
    }

    /**
     * Records one heartbeat, bounded to one interval (on the server too); a failure is logged and the next
     * beat comes at its time. Returns the time until the next beat (one interval from this one's start).
     */
    @Override
    protected long runOnce() {
        long now = ticker.getAsLong();
        if (firstBeatAt != 0 && firstBeatAt - now > 0) {
            return firstBeatAt - now;
        }
        firstBeatAt = 0;
        try {
            beat();
        } catch (SQLException | TimeoutException | RuntimeException e) {
            log.warn(
                    "heartbeat of node '{}' failed: {}",
                    nodeId,
                    e instanceof TimeoutException ? "no answer within " + interval : e.getMessage());
        }
        return interval.toNanos() - (ticker.getAsLong() - now);
    }

    private void beat() throws SQLException, TimeoutException {
        long bound = interval.toNanos();
        NodeStore.Heartbeat beat = calls.call(
                c -> store.heartbeat(c, registration, versionTarget, BoundedCalls.serverMillis(bound)), bound);
        if (!beat.recorded()) {
            log.warn("node '{}' is recorded as stopped; heartbeat not recorded", nodeId);
        }
        deliver(beat.controls());
    }

    /**
     * Where the standing controls that concern this node go, after every heartbeat (on the heartbeat's
     * thread) and when {@link #readControls()} is called.
     */
    public void onControls(Consumer<ControlStore.ForNode> listener) {
        this.onControls = listener;
    }

    /** Reads the standing controls now, in the caller's thread, and hands them to the listener (at start). */
    public void readControls() {
        ControlStore.ForNode f;
        try {
            f = db.call(
                    "reading the controls of node '" + nodeId + "'", c -> controls.forNode(c, nodeId, versionTarget));
        } catch (SQLException e) {
            throw Db.failed("reading the controls of node '" + nodeId + "'", e);
        }
        deliver(f);
    }

    /**
     * Reads the standing controls now, bounded by one heartbeat interval, and hands them to the listener;
     * false if they could not be read (the caller then cannot know whether it may proceed).
     */
    public boolean refreshControls() {
        long bound = interval.toNanos();
        ControlStore.ForNode f;
        try {
            f = refreshCalls.call(c -> controls.forNode(c, nodeId, versionTarget), bound);
        } catch (SQLException | TimeoutException | RuntimeException e) {
            return false;
        }
        deliver(f);
        return true;
    }

    private void deliver(ControlStore.ForNode f) {
        try {
            onControls.accept(f);
        } catch (RuntimeException e) {
            log.error("node '{}': applying the operators' controls failed", nodeId, e);
        }
    }

    /**
     * Node ids must be unique per running process. Leases stay safe when two processes share one (each
     * acquisition is its own holder), but the registry and the ownership view would mix the two up.
     */
    private void warnIfTaken(Connection c) throws SQLException {
        store.liveTwin(c, nodeId, instance)
                .ifPresent(twin -> log.warn(
                        "node id '{}' is also registered by a process that looks alive (host {}, pid {}, last "
                                + "heartbeat {} ms ago): node ids must be unique per running process. Leases still "
                                + "exclude the two, but status views will mix them up; if that process has just died, "
                                + "ignore this",
                        nodeId,
                        twin.host(),
                        twin.pid(),
                        twin.heartbeatAgoMillis()));
    }

    /** Records the node's state; bounded to a few heartbeat intervals, so shutdown never hangs on it. */
    public void setState(NodeState state) {
        long bound = Math.max(interval.toNanos() * 2, 1_000_000_000L);
        try (BoundedCalls once = new BoundedCalls(db.dataSource(), "baton-node-state")) {
            once.call(
                    c -> {
                        store.setState(c, nodeId, state, BoundedCalls.serverMillis(bound));
                        return null;
                    },
                    bound);
        } catch (SQLException | TimeoutException | RuntimeException e) {
            log.warn(
                    "recording node '{}' as {} failed: {}",
                    nodeId,
                    state,
                    e instanceof TimeoutException ? "no answer" : e.getMessage());
        }
    }

    @Override
    protected void afterLastPass() {
        calls.close();
        refreshCalls.close();
    }

    public static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            return "unknown";
        }
    }

    /**
     * host-pid-random: the host and pid for people, 64 random bits so that two processes never share an
     * id, also in containers where every process is pid 1 and host names repeat.
     */
    public static String defaultNodeId() {
        String host = hostName();
        if (host.length() > 150) {
            host = host.substring(0, 150);
        }
        return host + "-" + ProcessHandle.current().pid() + "-" + String.format("%016x", RANDOM.nextLong());
    }
}
