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

    NodeRegistrar(DataSource dataSource, String schema, String nodeId, Duration interval, String app, String appVersion) {
        this.dataSource = dataSource;
        this.sql = Sql.load("node.sql", Identifiers.schema(schema));
        this.nodeId = nodeId;
        this.interval = interval;
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

    void runOnce() throws SQLException {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement(sql.get("heartbeat"))) {
            ps.setString(1, nodeId);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    log.warn("node '{}' is recorded as stopped (or missing); heartbeat not recorded", nodeId);
                }
            }
        }
    }

    private void beatSafely() {
        try {
            runOnce();
        } catch (SQLException | RuntimeException e) {
            log.warn("heartbeat of node '{}' failed: {}", nodeId, e.getMessage());
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

    void setState(NodeState state) {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement(sql.get("set_state"))) {
            ps.setString(1, state.dbValue());
            ps.setString(2, state.dbValue());
            ps.setString(3, nodeId);
            ps.executeUpdate();
        } catch (SQLException e) {
            log.warn("recording node '{}' as {} failed: {}", nodeId, state, e.getMessage());
        }
    }

    synchronized void stop() {
        if (scheduler != null) {
            scheduler.shutdownNow();
            scheduler = null;
        }
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
