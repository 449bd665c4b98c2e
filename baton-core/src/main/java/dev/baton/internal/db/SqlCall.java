package dev.baton.internal.db;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Instant;
import java.util.BitSet;
import java.util.Map;

/**
 * A prepared named statement of a {@link Sql} file, bound by parameter name: {@code set*} binds every
 * position where the name occurs, and {@link #query()}, {@link #update()} and {@link #addBatch()} refuse
 * to run while a parameter is unbound (naming it), so a statement edited without its caller fails at
 * once, not with a driver's "no value specified for parameter 3". Closing the call closes the statement.
 */
public final class SqlCall implements AutoCloseable {
    private final String where;
    private final PreparedStatement ps;
    private final Map<String, int[]> positions;
    private final int offset;
    private final long boundMillis;
    private final BitSet bound = new BitSet();

    SqlCall(String where, PreparedStatement ps, Map<String, int[]> positions, int offset, long boundMillis) {
        this.where = where;
        this.ps = ps;
        this.positions = positions;
        this.offset = offset;
        this.boundMillis = boundMillis;
    }

    public SqlCall setString(String name, String value) throws SQLException {
        for (int i : positions(name)) {
            if (value == null) {
                ps.setNull(offset + i + 1, Types.VARCHAR);
            } else {
                ps.setString(offset + i + 1, value);
            }
        }
        return this;
    }

    public SqlCall setLong(String name, long value) throws SQLException {
        for (int i : positions(name)) {
            ps.setLong(offset + i + 1, value);
        }
        return this;
    }

    /** Binds a {@code bigint} that may be SQL NULL. */
    public SqlCall setLongOrNull(String name, Long value) throws SQLException {
        for (int i : positions(name)) {
            if (value == null) {
                ps.setNull(offset + i + 1, Types.BIGINT);
            } else {
                ps.setLong(offset + i + 1, value);
            }
        }
        return this;
    }

    public SqlCall setInt(String name, int value) throws SQLException {
        for (int i : positions(name)) {
            ps.setInt(offset + i + 1, value);
        }
        return this;
    }

    public SqlCall setBoolean(String name, boolean value) throws SQLException {
        for (int i : positions(name)) {
            ps.setBoolean(offset + i + 1, value);
        }
        return this;
    }

    public SqlCall setBytes(String name, byte[] value) throws SQLException {
        for (int i : positions(name)) {
            ps.setBytes(offset + i + 1, value);
        }
        return this;
    }

    /** Binds a {@code timestamptz}, or SQL NULL for a null instant. */
    public SqlCall setInstant(String name, Instant value) throws SQLException {
        for (int i : positions(name)) {
            if (value == null) {
                ps.setNull(offset + i + 1, Types.TIMESTAMP);
            } else {
                ps.setTimestamp(offset + i + 1, Timestamp.from(value));
            }
        }
        return this;
    }

    /** Binds an array of the given PostgreSQL element type ({@code text}, {@code bigint}, …). */
    public SqlCall setArray(String name, String elementType, Object[] values) throws SQLException {
        for (int i : positions(name)) {
            ps.setArray(offset + i + 1, ps.getConnection().createArrayOf(elementType, values));
        }
        return this;
    }

    /** Runs a query; the result set closes with this call. */
    public ResultSet query() throws SQLException {
        requireBound();
        if (boundMillis > 0) {
            return Jdbc.executeBounded(ps, boundMillis);
        }
        return ps.executeQuery();
    }

    /** Runs a statement without a result set and returns its row count. */
    public int update() throws SQLException {
        requireBound();
        if (boundMillis > 0) {
            ps.execute();
            ps.getMoreResults();
            return ps.getUpdateCount();
        }
        return ps.executeUpdate();
    }

    /**
     * Runs a statement whose results are not read: a {@code SELECT set_config(...)}, or several statements
     * sent in one round trip (which {@link #query()} refuses).
     */
    public void execute() throws SQLException {
        requireBound();
        ps.execute();
    }

    /** Adds the current binding to the batch; the next row binds every parameter again. */
    public void addBatch() throws SQLException {
        requireBound();
        ps.addBatch();
        bound.clear();
    }

    public int[] executeBatch() throws SQLException {
        return ps.executeBatch();
    }

    /** Bounds the statement on the client side (for statements that are not bounded on the server). */
    public SqlCall timeoutMillis(long millis) throws SQLException {
        Jdbc.queryTimeout(ps, millis);
        return this;
    }

    @Override
    public void close() throws SQLException {
        ps.close();
    }

    private int[] positions(String name) {
        int[] at = positions.get(name);
        if (at == null) {
            throw new IllegalArgumentException(
                    where + " has no parameter :" + name + " (it has " + positions.keySet() + ")");
        }
        for (int i : at) {
            bound.set(i);
        }
        return at;
    }

    private void requireBound() {
        for (Map.Entry<String, int[]> e : positions.entrySet()) {
            if (!bound.get(e.getValue()[0])) {
                throw new IllegalStateException(where + ": parameter :" + e.getKey() + " is not bound");
            }
        }
    }
}
