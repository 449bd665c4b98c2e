package dev.baton.test;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.testkit.BatonPostgres;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension behind {@link BatonTest}: before the test class, a fresh schema on a PostgreSQL shared
 * by the whole test run, migrated; after the class, the schema is dropped and its pool closed. Tests,
 * constructors and {@code @BeforeAll}/{@code @BeforeEach} methods get it as a {@link BatonTestDatabase}
 * parameter.
 *
 * <p><b>Which server.</b> The one in environment variable {@value BatonPostgres#JDBC_URL_ENV} when set
 * (for example {@code jdbc:postgresql://127.0.0.1:5432/test?user=postgres}); otherwise an embedded
 * PostgreSQL started once per JVM (io.zonky's binaries, which must be on the test class path).
 *
 * <p>A nested test class gets its own schema. Thread-safe: classes may run in parallel.
 */
public final class BatonExtension implements BeforeAllCallback, AfterAllCallback, ParameterResolver {
    /** The largest pool a class's tests get: enough for a node's worker, maintenance and the test's reads. */
    public static final int POOL_SIZE = 10;

    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(BatonExtension.class);
    private static final String KEY = "database";
    private static final BatonPostgres PG = new BatonPostgres();

    /** Created by JUnit (through {@link BatonTest} or {@code @ExtendWith}). */
    public BatonExtension() {}

    @Override
    public void beforeAll(ExtensionContext context) {
        String schema = PG.freshSchemaName();
        HikariDataSource pool = PG.newApplicationPool("baton-test-" + schema, POOL_SIZE);
        try {
            Baton.migrate(pool, schema);
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
        context.getStore(NAMESPACE).put(KEY, new Held(new BatonTestDatabase(pool, schema), pool));
    }

    @Override
    public void afterAll(ExtensionContext context) {
        Held held = context.getStore(NAMESPACE).remove(KEY, Held.class);
        if (held != null) {
            held.close();
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == BatonTestDatabase.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        Held held = context.getStore(NAMESPACE).get(KEY, Held.class);
        if (held == null) {
            throw new ParameterResolutionException("no Baton test database for " + context.getDisplayName()
                    + ": register BatonExtension on the test class (@BatonTest), not on a method");
        }
        return held.database;
    }

    /** The class's database and what to release after it. */
    private record Held(BatonTestDatabase database, HikariDataSource pool) implements AutoCloseable {
        @Override
        public void close() {
            try {
                pool.close();
            } finally {
                PG.dropSchema(database.schema());
            }
        }
    }
}
