package dev.baton.test;

import dev.baton.Baton;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * A migrated Baton schema on a test database: what {@link BatonExtension} gives each test class.
 *
 * <p>The schema is shared by the tests of the class (they run in its order and may see each other's
 * jobs; use distinct kinds or ids), and dropped after the class. Nodes built with
 * {@link #batonBuilder()} are the test's to close.
 */
public final class BatonTestDatabase {
    private final DataSource dataSource;
    private final String schema;

    BatonTestDatabase(DataSource dataSource, String schema) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.schema = Objects.requireNonNull(schema, "schema");
    }

    /** A pool on the test database, shared by the tests of the class; closed after the class. */
    public DataSource dataSource() {
        return dataSource;
    }

    /** The class's schema, already migrated to {@link Baton#schemaVersion()}. */
    public String schema() {
        return schema;
    }

    /**
     * A builder of a node on this schema and pool (add a worker, handlers, schedules; then build it, and
     * start it only if the test wants background workers).
     */
    public Baton.Builder batonBuilder() {
        return Baton.builder(dataSource).schema(schema);
    }

    /** The jobs waiting in this schema, decoded with the default Jackson codec (see {@link EnqueuedJobs}). */
    public EnqueuedJobs enqueuedJobs() {
        return EnqueuedJobs.of(dataSource, schema);
    }

    @Override
    public String toString() {
        return "BatonTestDatabase[schema=" + schema + "]";
    }
}
