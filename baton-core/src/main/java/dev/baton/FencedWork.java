package dev.baton;

import java.sql.Connection;

/**
 * Work done inside a fenced transaction. The connection is in a transaction that has already passed
 * the fence; do not commit, roll back or change auto-commit on it.
 */
@FunctionalInterface
public interface FencedWork<T> {
    T apply(Connection transaction) throws Exception;

    /** Runs {@code work}, passing on runtime and SQL exceptions and wrapping any other in a BatonException. */
    static <T> T run(FencedWork<T> work, Connection c, String what) throws java.sql.SQLException {
        try {
            return work.apply(c);
        } catch (RuntimeException | java.sql.SQLException e) {
            throw e;
        } catch (Exception e) {
            throw new BatonException(what + " failed: " + e.getMessage(), e);
        }
    }
}
