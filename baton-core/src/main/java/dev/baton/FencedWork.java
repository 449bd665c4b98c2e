package dev.baton;

import java.sql.Connection;

/**
 * Work done inside a fenced transaction. The connection is in a transaction that has already passed
 * the fence; do not commit, roll back or change auto-commit on it.
 */
@FunctionalInterface
public interface FencedWork<T> {
    T apply(Connection transaction) throws Exception;
}
