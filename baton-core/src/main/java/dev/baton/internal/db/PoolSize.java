package dev.baton.internal.db;

import java.lang.reflect.Method;
import java.util.OptionalInt;
import javax.sql.DataSource;

/**
 * The maximum size of a connection pool, for the pools whose size Baton can read without depending on
 * them: a public no-argument getter of a well-known name (HikariCP's {@code getMaximumPoolSize}, Apache
 * DBCP2's {@code getMaxTotal}, Tomcat JDBC's {@code getMaxActive}, c3p0's {@code getMaxPoolSize}).
 * Empty for any other data source: Baton then assumes nothing.
 */
public final class PoolSize {
    private static final String[] GETTERS = {"getMaximumPoolSize", "getMaxTotal", "getMaxActive", "getMaxPoolSize"};

    private PoolSize() {}

    public static OptionalInt of(DataSource ds) {
        for (String name : GETTERS) {
            try {
                Method m = ds.getClass().getMethod(name);
                if (m.getReturnType() == int.class) {
                    int size = (int) m.invoke(ds);
                    return size > 0 ? OptionalInt.of(size) : OptionalInt.empty();
                }
            } catch (ReflectiveOperationException | RuntimeException ignored) {
                // Not this kind of pool (or not readable): try the next getter.
            }
        }
        return OptionalInt.empty();
    }
}
