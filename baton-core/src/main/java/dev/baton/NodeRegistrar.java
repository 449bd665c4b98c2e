package dev.baton;

import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Registers this node and keeps its heartbeat; records draining and stopped. */
final class NodeRegistrar {
    private static final Logger log = LoggerFactory.getLogger(NodeRegistrar.class);
    static final int PROTOCOL_VERSION = 1;

    private final DataSource dataSource;
    private final Sql sql;
    private final String nodeId;
    private final Duration interval;
    private final String metaJson;
    private ScheduledExecutorService scheduler;
    /** Heartbeats run bounded on a connection of their own (a black-holed socket must not hang them). */
    private final BoundedCalls calls;

    NodeRegistrar(DataSource dataSource, String schema, String nodeId, Duration interval, String app, String appVersion) {
        this.dataSource = dataSource;
        this.sql = Sql.load("node.sql", Identifiers.schema(schema));
        this.nodeId = nodeId;
        this.interval = interval;
        this.calls = new BoundedCalls(dataSource, "baton-node-heartbeat-calls");
        this.metaJson = "{\"app\":" + JacksonCodec.quote(app) + ",\"appVersion\":" + JacksonCodec.quote(appVersion) + "}";
    }

    synchronized void start() {
        if (scheduler != null) {
            return;
        }
        register();
        scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "baton-node-heartbeat");
            t.setDaemon(true);
            return t;
        });
        long ms = interval.toMillis();
        scheduler.scheduleWithFixedDelay(this::beatSafely, Leases.jitter(ms * 1_000_000L) / 1_000_000L, ms,
                TimeUnit.MILLISECONDS);
    }

    /** Records one heartbeat; bounded to one interval, on the server too. */
    void runOnce() throws SQLException, TimeoutException {
        long bound = interval.toNanos();
        boolean recorded = calls.call(c -> {
            try (PreparedStatement ps = Jdbc.prepareBounded(c, sql.get("heartbeat"), BoundedCalls.serverMillis(bound))) {
                ps.setString(1 + Jdbc.boundOffset(BoundedCalls.serverMillis(bound)), nodeId);
                try (ResultSet rs = Jdbc.executeBounded(ps, BoundedCalls.serverMillis(bound))) {
                    return rs.next();
                }
            }
        }, bound);
        if (!recorded) {
            log.warn("node '{}' is recorded as stopped (or missing); heartbeat not recorded", nodeId);
        }
    }

    private void beatSafely() {
        try {
            runOnce();
        } catch (SQLException | TimeoutException | RuntimeException e) {
            log.warn("heartbeat of node '{}' failed: {}", nodeId,
                    e instanceof TimeoutException ? "no answer within " + interval : e.getMessage());
        }
    }

    private void register() {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement(sql.get("register"))) {
            ps.setString(1, nodeId);
            ps.setLong(2, interval.toMillis());
            ps.setInt(3, PROTOCOL_VERSION);
            ps.setString(4, hostName());
            ps.setLong(5, ProcessHandle.current().pid());
            ps.setString(6, metaJson);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new BatonException("registering node '" + nodeId + "' failed: " + e.getMessage(), e);
        }
    }

    /** Records the node's state; bounded to a few heartbeat intervals, so shutdown never hangs on it. */
    void setState(NodeState state) {
        long bound = Math.max(interval.toNanos() * 2, 1_000_000_000L);
        try (BoundedCalls once = new BoundedCalls(dataSource, "baton-node-state")) {
            once.call(c -> {
                try (PreparedStatement ps = Jdbc.prepareBounded(c, sql.get("set_state"), BoundedCalls.serverMillis(bound))) {
                    int o = Jdbc.boundOffset(BoundedCalls.serverMillis(bound));
                    ps.setString(1 + o, state.dbValue());
                    ps.setString(2 + o, state.dbValue());
                    ps.setString(3 + o, nodeId);
                    Jdbc.executeBounded(ps, BoundedCalls.serverMillis(bound));
                    return null;
                }
            }, bound);
        } catch (SQLException | TimeoutException | RuntimeException e) {
            log.warn("recording node '{}' as {} failed: {}", nodeId, state,
                    e instanceof TimeoutException ? "no answer" : e.getMessage());
        }
    }

    synchronized void stop() {
        if (scheduler != null) {
            scheduler.shutdownNow();
            scheduler = null;
        }
        calls.close();
    }

    static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            return "unknown";
        }
    }

    static String defaultNodeId() {
        String runtime = ManagementFactory.getRuntimeMXBean().getName(); // pid@host
        return hostName() + "-" + ProcessHandle.current().pid() + "-"
                + String.format("%04x", (runtime.hashCode() ^ (int) System.nanoTime()) & 0xffff);
    }
}
