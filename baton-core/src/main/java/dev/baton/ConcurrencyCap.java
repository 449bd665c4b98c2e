package dev.baton;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * At most {@code limit} holders per key across all instances (see
 * {@link Coordination#concurrencyCap}). A slot expires after its TTL unless renewed, so a crashed
 * holder frees it. Admission is serialised per key by a transaction-scoped advisory lock, then the
 * live holders are counted in a new statement (which sees every holder committed before the lock
 * was granted). Thread-safe.
 */
public final class ConcurrencyCap {
    private static final Logger log = LoggerFactory.getLogger(ConcurrencyCap.class);

    private final Coordination coord;
    private final String name;
    private final int limit;
    private final Duration slotTtl;
    private final int localCeiling;
    private final Map<String, Semaphore> localSlots = new ConcurrentHashMap<>();

    ConcurrencyCap(Coordination coord, String name, int limit, Duration slotTtl, int localCeiling) {
        this.coord = coord;
        this.name = Identifiers.name("cap name", name);
        if (limit < 1 || limit > 100_000) {
            throw new IllegalArgumentException("limit must be 1 to 100000, but was " + limit);
        }
        if (localCeiling < 0 || localCeiling > limit) {
            throw new IllegalArgumentException("localCeiling must be 0 to limit (" + limit + "), but was " + localCeiling);
        }
        Coordination.requireTtl("slotTtl", slotTtl);
        this.limit = limit;
        this.slotTtl = slotTtl;
        this.localCeiling = localCeiling;
    }

    /**
     * Takes a slot for {@code key} if fewer than {@code limit} are held; empty otherwise. If the
     * database is unreachable, takes one of this instance's {@code localCeiling} local slots instead
     * (the permit says so: {@link Permit#local()}).
     */
    public Optional<Permit> tryAcquire(String key) {
        Identifiers.name("cap key", key);
        String holder = coord.nodeId() + "/" + UUID.randomUUID();
        try (Connection c = coord.dataSource().getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                try (PreparedStatement ps = c.prepareStatement(coord.sql().get("advisory_xact_lock"))) {
                    ps.setString(1, "baton.cap:" + name + ":" + key);
                    ps.execute();
                }
                long held;
                try (PreparedStatement ps = c.prepareStatement(coord.sql().get("cap_count"))) {
                    ps.setString(1, name);
                    ps.setString(2, key);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        held = rs.getLong(1);
                    }
                }
                if (held >= limit) {
                    c.rollback();
                    return Optional.empty();
                }
                try (PreparedStatement ps = c.prepareStatement(coord.sql().get("cap_insert"))) {
                    ps.setString(1, name);
                    ps.setString(2, key);
                    ps.setString(3, holder);
                    ps.setLong(4, slotTtl.toMillis());
                    ps.executeUpdate();
                }
                c.commit();
                return Optional.of(new Permit(key, holder, false));
            } catch (Throwable t) {
                Jdbc.rollbackQuietly(c, t);
                throw t;
            } finally {
                if (!c.isClosed()) {
                    c.setAutoCommit(autoCommit);
                }
            }
        } catch (SQLException e) {
            if (!unreachable(e)) {
                throw new BatonException("cap '" + name + "' for key '" + key + "' failed: " + e.getMessage(), e);
            }
            coord.countFallback("concurrency_cap");
            log.warn("cap '{}': database unreachable ({}); applying this instance's local ceiling of {} for key '{}'",
                    name, e.getMessage(), localCeiling, key);
            Semaphore s = localSlots.computeIfAbsent(key, k -> new Semaphore(localCeiling));
            return s.tryAcquire() ? Optional.of(new Permit(key, holder, true)) : Optional.empty();
        }
    }

    static boolean unreachable(SQLException e) {
        return e instanceof SQLTransientConnectionException || Jdbc.isConnectionFailure(e);
    }

    /** A held slot; close it to release. */
    public final class Permit implements AutoCloseable {
        private final String key;
        private final String holder;
        private final boolean local;
        private boolean closed;

        private Permit(String key, String holder, boolean local) {
            this.key = key;
            this.holder = holder;
            this.local = local;
        }

        public String key() {
            return key;
        }

        /** True if this is a local fallback slot (the database was unreachable when it was taken). */
        public boolean local() {
            return local;
        }

        /** Extends the slot by its TTL; false if it already expired (and may have been given to another). */
        public boolean renew() {
            if (local) {
                return !closed;
            }
            try (Connection c = coord.dataSource().getConnection();
                 PreparedStatement ps = c.prepareStatement(coord.sql().get("cap_renew"))) {
                ps.setLong(1, slotTtl.toMillis());
                ps.setString(2, name);
                ps.setString(3, key);
                ps.setString(4, holder);
                return ps.executeUpdate() == 1;
            } catch (SQLException e) {
                throw new BatonException("renewing a slot of cap '" + name + "' failed: " + e.getMessage(), e);
            }
        }

        /** Releases the slot (idempotent). If the database is unreachable, the slot expires by itself. */
        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            if (local) {
                localSlots.get(key).release();
                return;
            }
            try (Connection c = coord.dataSource().getConnection();
                 PreparedStatement ps = c.prepareStatement(coord.sql().get("cap_release"))) {
                ps.setString(1, name);
                ps.setString(2, key);
                ps.setString(3, holder);
                ps.executeUpdate();
            } catch (SQLException e) {
                log.warn("releasing a slot of cap '{}' key '{}' failed; it expires within {}: {}", name, key, slotTtl,
                        e.getMessage());
            }
        }
    }
}
