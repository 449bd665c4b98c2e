package dev.baton;

import java.sql.Connection;

/**
 * Work done inside a fenced transaction. The connection is in a transaction that has already passed
 * the fence; do not commit, roll back or change auto-commit on it.
 */
@FunctionalInterface
public interface FencedWork<T> {
    /** Does the work on {@code transaction}, which has passed the fence; Baton commits it. */
    T apply(Connection transaction) throws Exception;
}
