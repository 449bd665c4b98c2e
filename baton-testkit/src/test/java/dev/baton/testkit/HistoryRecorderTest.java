package dev.baton.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class HistoryRecorderTest {

    @Test
    void recordsConcurrentlyAndChecks() throws Exception {
        HistoryRecorder history = new HistoryRecorder();
        AtomicLong seq = new AtomicLong();
        int owners = 8;
        int writesEach = 200;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(owners);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int i = 0; i < owners; i++) {
                String owner = "owner-" + i;
                String lease = "lease-" + i; // one lease per owner keeps the history valid
                futures.add(pool.submit(() -> {
                    start.await();
                    history.grant(lease, 1, owner);
                    for (int w = 0; w < writesEach; w++) {
                        history.write(seq.incrementAndGet(), lease, 1, owner);
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : futures) {
                f.get(TestTimeouts.scaled(Duration.ofSeconds(30)).toMillis(), TimeUnit.MILLISECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(history.grants()).hasSize(owners);
        assertThat(history.writes()).hasSize(owners * writesEach);
        CheckResult result = history.check();
        assertThat(result.grantsChecked()).isEqualTo(owners);
        assertThat(result.writesChecked()).isEqualTo(owners * writesEach);
        result.assertOk();
    }

    @Test
    void snapshotsAreImmutable() {
        HistoryRecorder history = new HistoryRecorder();
        history.grant("L", 1, "a");
        List<Grant> snapshot = history.grants();
        history.grant("L", 2, "b");
        assertThat(snapshot).containsExactly(new Grant("L", 1, "a"));
        assertThatThrownBy(() -> snapshot.add(new Grant("L", 3, "c")))
                .isInstanceOf(UnsupportedOperationException.class);
    }
}
