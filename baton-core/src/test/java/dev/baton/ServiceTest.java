package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.baton.internal.service.Service;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The service base: its loop, its waits and its lifecycle, without a database. */
class ServiceTest {
    private static final long FOREVER = TimeUnit.HOURS.toNanos(1);

    /** Counts its passes; the first {@code failures} passes throw. */
    private static final class Counting extends Service {
        final AtomicInteger passes = new AtomicInteger();
        final AtomicInteger afterLast = new AtomicInteger();
        final int failures;
        final long wait;

        Counting(int failures, long wait) {
            super("baton-test-service", System::nanoTime);
            this.failures = failures;
            this.wait = wait;
        }

        @Override
        protected long runOnce() {
            if (passes.incrementAndGet() <= failures) {
                throw new IllegalStateException("pass " + passes.get() + " fails on purpose");
            }
            return wait;
        }

        @Override
        protected void afterLastPass() {
            afterLast.incrementAndGet();
        }
    }

    @Test
    void aFailingPassIsLoggedAndTheLoopGoesOn() {
        Counting s = new Counting(1, FOREVER);
        s.start();
        try {
            // the first pass throws; the loop waits RETRY_AFTER_FAILURE_NANOS and runs the second
            await().atMost(DbTest.WAIT).until(() -> s.passes.get() >= 2);
            assertThat(s.isRunning()).isTrue();
        } finally {
            s.stop();
        }
    }

    @Test
    void wakeEndsTheWaitAndStopEndsTheLoop() {
        Counting s = new Counting(0, FOREVER);
        s.start();
        await().atMost(DbTest.WAIT).until(() -> s.passes.get() == 1);
        s.wake();
        await().atMost(DbTest.WAIT).until(() -> s.passes.get() == 2);
        s.stop();
        int passes = s.passes.get();
        s.wake();
        assertThat(s.isRunning()).isFalse();
        assertThat(s.passes).as("no pass after stop returned").hasValue(passes);
        assertThat(s.afterLast).hasValue(1);
    }

    @Test
    void startAndStopAreIdempotentFromManyThreadsAndAStoppedServiceStaysStopped() throws Exception {
        for (int round = 0; round < 20; round++) {
            Counting s = new Counting(0, FOREVER);
            CyclicBarrier go = new CyclicBarrier(4);
            CountDownLatch done = new CountDownLatch(4);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                boolean starter = t % 2 == 0;
                Thread th = new Thread(() -> {
                    try {
                        go.await();
                        if (starter) {
                            s.start();
                        } else {
                            s.stop();
                        }
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    } finally {
                        done.countDown();
                    }
                });
                threads.add(th);
                th.start();
            }
            assertThat(done.await(DbTest.WAIT.toMillis(), TimeUnit.MILLISECONDS))
                    .isTrue();
            s.stop();
            s.stop();
            assertThat(s.isRunning()).isFalse();
            assertThat(s.afterLast.get())
                    .as("afterLastPass runs once, if the service ran at all")
                    .isLessThanOrEqualTo(1);
            s.start();
            assertThat(s.isRunning())
                    .as("a stopped service is not started again")
                    .isFalse();
        }
    }
}
