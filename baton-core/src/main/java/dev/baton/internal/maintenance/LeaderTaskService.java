package dev.baton.internal.maintenance;

import dev.baton.FencedWork;
import dev.baton.LeaderContext;
import dev.baton.LeaderTask;
import dev.baton.LeaseGrant;
import dev.baton.internal.service.Service;
import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * TEMPORARY, until {@link Maintenance} is a {@link Service} of its own: runs a leader task once, as a service
 * of one maintenance term. Its context is cancelled when the service is stopped (at the term's end); it has
 * no grant and no fenced writes, which {@code Maintenance} does not use.
 */
public final class LeaderTaskService extends Service {
    /** The wait after the task has returned, until the service is stopped. */
    private static final long IDLE_NANOS = TimeUnit.MINUTES.toNanos(1);

    private final LeaderTask task;
    private final CountDownLatch cancelled = new CountDownLatch(1);
    private boolean ran;

    public LeaderTaskService(String name, LeaderTask task, LongSupplier ticker) {
        super(name, ticker);
        this.task = task;
    }

    @Override
    protected long runOnce() throws Exception {
        if (!ran) {
            ran = true;
            task.run(new Context());
        }
        return IDLE_NANOS;
    }

    @Override
    protected void onStopRequested() {
        cancelled.countDown();
    }

    /** A term as the task sees it: cancelled when the service stops. */
    private final class Context implements LeaderContext {
        @Override
        public LeaseGrant grant() {
            throw new UnsupportedOperationException("a maintenance service has no grant of its own");
        }

        @Override
        public boolean isCancelled() {
            return cancelled.getCount() == 0;
        }

        @Override
        public boolean awaitCancellation(Duration timeout) {
            try {
                return cancelled.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return true;
            }
        }

        @Override
        public <T> T fenced(FencedWork<T> work) {
            throw new UnsupportedOperationException("a maintenance service makes no fenced writes");
        }

        @Override
        public void check(Connection transaction) {
            throw new UnsupportedOperationException("a maintenance service makes no fenced writes");
        }
    }
}
