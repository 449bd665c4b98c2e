package dev.baton.internal.notify;

import java.lang.reflect.Field;
import java.sql.Connection;
import org.postgresql.PGConnection;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.PGStream;
import org.postgresql.core.QueryExecutorBase;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes about a millisecond off every notification the listener reads (decision 0025).
 *
 * <p>pgjdbc's {@code getNotifications(timeout)} returns only after it has looked for a further message: once it
 * has read a notification it calls {@code PGStream.hasMessagePending()}, which, unless bytes are already buffered,
 * reads the socket with a 1 ms timeout. That read times out on an idle connection, and the timeout is not
 * remembered (only a peek that finds the stream ended arms pgjdbc's one-second back-off), so each notification
 * reaches the listener a millisecond after it arrived. Setting that back-off's deadline out of reach makes
 * {@code hasMessagePending()} look at buffered bytes only: messages already received are still read in the same
 * call, a later one ends the next call's blocking read at once, and none is missed.
 *
 * <p>The field is private to pgjdbc, so this is done by reflection, only on the listening connection, and undone
 * before the connection goes back to its pool. If pgjdbc changes (the field is gone, a module forbids access), the
 * listener reads as before: {@link #tighten} returns {@link #NONE}, logged once at INFO. {@code NotificationReadsTest}
 * fails when the shipped pgjdbc no longer has the field.
 */
final class NotificationReads {
    private static final Logger log = LoggerFactory.getLogger(NotificationReads.class);

    /** How the read was changed, and how to undo it. */
    interface Undo extends AutoCloseable {
        /** True when the trailing wait is skipped on this connection. */
        boolean active();

        @Override
        void close();
    }

    /** Nothing changed: the listener reads with pgjdbc's trailing wait. */
    static final Undo NONE = new Undo() {
        @Override
        public boolean active() {
            return false;
        }

        @Override
        public void close() {}
    };

    private static final Field STREAM;
    private static final Field NEXT_CHECK;
    private static volatile boolean reported;

    static {
        Field stream = null;
        Field nextCheck = null;
        try {
            stream = QueryExecutorBase.class.getDeclaredField("pgStream");
            nextCheck = PGStream.class.getDeclaredField("nextStreamAvailableCheckTime");
            stream.setAccessible(true);
            nextCheck.setAccessible(true);
            if (nextCheck.getType() != long.class) {
                stream = null;
                nextCheck = null;
            }
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            stream = null;
            nextCheck = null;
        }
        STREAM = stream;
        NEXT_CHECK = nextCheck;
    }

    private NotificationReads() {}

    /**
     * Makes notification reads on {@code c} return as soon as the buffered messages are read; the returned
     * {@link Undo} restores the connection. {@link #NONE} when that cannot be done with this pgjdbc.
     */
    static Undo tighten(Connection c) {
        if (STREAM == null) {
            report("this pgjdbc version has no PGStream.nextStreamAvailableCheckTime");
            return NONE;
        }
        try {
            if (!(c.unwrap(PGConnection.class) instanceof BaseConnection base)
                    || !(base.getQueryExecutor() instanceof QueryExecutorBase executor)
                    || !(STREAM.get(executor) instanceof PGStream stream)) {
                report("the listening connection is not pgjdbc's own");
                return NONE;
            }
            long before = NEXT_CHECK.getLong(stream);
            NEXT_CHECK.setLong(stream, Long.MAX_VALUE);
            return new Undo() {
                @Override
                public boolean active() {
                    return true;
                }

                @Override
                public void close() {
                    try {
                        NEXT_CHECK.setLong(stream, before);
                    } catch (IllegalAccessException | RuntimeException e) {
                        log.debug("could not restore the listening connection's read setting: {}", e.toString());
                    }
                }
            };
        } catch (Exception | LinkageError e) {
            report(e.toString());
            return NONE;
        }
    }

    /** True when this pgjdbc has the fields {@link #tighten} changes. */
    static boolean supported() {
        return STREAM != null;
    }

    /** The value on {@code c} (tests): {@code Long.MAX_VALUE} while tightened. */
    static long nextCheck(Connection c) throws Exception {
        BaseConnection base = (BaseConnection) c.unwrap(PGConnection.class);
        return NEXT_CHECK.getLong(STREAM.get(base.getQueryExecutor()));
    }

    private static void report(String why) {
        if (!reported) {
            reported = true;
            log.info(
                    "notifications reach this node about 1 ms after they arrive (pgjdbc waits for a further message "
                            + "after each; Baton could not shorten that wait: {})",
                    why);
        }
    }
}
