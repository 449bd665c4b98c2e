package dev.baton.testkit;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Objects;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Data sources and connections for tests that watch or change what the code under test borrows: which
 * connection it gets, what it calls on it, what state it gives it back in.
 */
public final class Lending {

    private Lending() {}

    /** Lends one connection per call. */
    @FunctionalInterface
    public interface Lender {
        Connection lend() throws SQLException;
    }

    /** Sees each call on an intercepted connection; {@code proceed} makes the call on the real one. */
    @FunctionalInterface
    public interface Interceptor {
        Object invoke(Method method, Object[] args, Call proceed) throws Throwable;
    }

    /** The real call behind an intercepted one. */
    @FunctionalInterface
    public interface Call {
        Object call() throws Throwable;
    }

    /**
     * A data source whose connections come from {@code lender}; log writer, login timeout and
     * unwrapping go to {@code target} (the pool the lender usually draws from).
     */
    public static DataSource dataSource(DataSource target, Lender lender) {
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(lender, "lender");
        return new DataSource() {
            @Override
            public Connection getConnection() throws SQLException {
                return lender.lend();
            }

            @Override
            public Connection getConnection(String user, String password) throws SQLException {
                throw new SQLFeatureNotSupportedException("a lending data source lends with its own credentials");
            }

            @Override
            public PrintWriter getLogWriter() throws SQLException {
                return target.getLogWriter();
            }

            @Override
            public void setLogWriter(PrintWriter out) throws SQLException {
                target.setLogWriter(out);
            }

            @Override
            public void setLoginTimeout(int seconds) throws SQLException {
                target.setLoginTimeout(seconds);
            }

            @Override
            public int getLoginTimeout() throws SQLException {
                return target.getLoginTimeout();
            }

            @Override
            public Logger getParentLogger() throws SQLFeatureNotSupportedException {
                return target.getParentLogger();
            }

            @Override
            public <T> T unwrap(Class<T> iface) throws SQLException {
                return target.unwrap(iface);
            }

            @Override
            public boolean isWrapperFor(Class<?> iface) throws SQLException {
                return target.isWrapperFor(iface);
            }
        };
    }

    /** {@code real} with every call passed through {@code interceptor} first. */
    public static Connection intercept(Connection real, Interceptor interceptor) {
        Objects.requireNonNull(real, "real");
        Objects.requireNonNull(interceptor, "interceptor");
        return (Connection) Proxy.newProxyInstance(
                Connection.class.getClassLoader(),
                new Class<?>[] {Connection.class},
                (proxy, method, args) -> interceptor.invoke(method, args, () -> {
                    try {
                        return method.invoke(real, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                }));
    }
}
