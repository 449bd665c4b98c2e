package dev.baton.internal.testsupport;

import dev.baton.PayloadCodec;
import dev.baton.internal.job.InlineExecution;
import dev.baton.internal.schedule.Scheduler;
import javax.sql.DataSource;

/**
 * How the test helpers of baton-test (module {@code dev.baton.test}, to which {@code module-info} exports
 * this package and the ones it names) reach the parts of a node they drive, without a public method on
 * the API: the node's class installs an {@link Access} when it is initialised, and the helpers, holding a
 * node, ask it. Nothing here runs in production.
 */
public final class TestSupport {
    private static volatile Access access;

    private TestSupport() {}

    /** What the test helpers need of a node; each method takes the node ({@code dev.baton.Baton}). */
    public interface Access {
        /**
         * The node's handlers, run on the calling thread (see {@link InlineExecution}); stops the node's
         * worker from claiming if it is started.
         *
         * @throws IllegalStateException if the node has no worker (no handlers)
         */
        InlineExecution inline(Object baton);

        /**
         * A scheduler of the node's schedule table that is never started, for firing as of a given instant.
         * Declares the node's schedules first, as its start does, if the node is not started.
         */
        Scheduler scheduler(Object baton);

        /** The pool the node's statements run on. */
        DataSource dataSource(Object baton);

        /** The node's payload codec. */
        PayloadCodec codec(Object baton);
    }

    /** Called once, by the node's class initialiser. */
    public static void install(Access a) {
        if (access != null) {
            throw new IllegalStateException("test support is already installed");
        }
        access = a;
    }

    /** The installed access; initialises the node's class if nothing has yet. */
    public static Access access() {
        Access a = access;
        if (a == null) {
            try {
                // By name: the internals never refer to the API's classes (decision 0016).
                Class.forName("dev.baton.Baton", true, TestSupport.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException("dev.baton.Baton is not on the class path", e);
            }
            a = access;
        }
        if (a == null) {
            throw new IllegalStateException("dev.baton.Baton did not install its test support");
        }
        return a;
    }
}
