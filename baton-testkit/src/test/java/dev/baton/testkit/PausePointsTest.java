package dev.baton.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class PausePointsTest {

    private static final Duration WAIT = Duration.ofSeconds(10);

    private final PausePoints points = new PausePoints();
    private final List<Thread> threads = new ArrayList<>();

    @AfterEach
    void cleanUp() throws InterruptedException {
        points.releaseAll();
        for (Thread t : threads) {
            t.join(TestTimeouts.scaled(WAIT).toMillis());
        }
    }

    /** Starts a worker that reaches {@code point} and then counts down {@code passed}. */
    private Thread worker(String name, Consumer<String> reach, String point, CountDownLatch passed) {
        Thread t = new Thread(
                () -> {
                    reach.accept(point);
                    passed.countDown();
                },
                name);
        threads.add(t);
        t.start();
        return t;
    }

    private static boolean passedInTime(CountDownLatch latch) throws InterruptedException {
        return latch.await(TestTimeouts.scaled(WAIT).toMillis(), TimeUnit.MILLISECONDS);
    }

    @Test
    void unarmedPointIsAPassThrough() {
        points.reach("nothing-armed"); // returns, or the @Timeout fails the test
    }

    @Test
    void armedPointParksTheNextThreadUntilReleased() throws InterruptedException {
        PausePoints.Pause pause = points.arm("before-commit");
        CountDownLatch passed = new CountDownLatch(1);
        Thread worker = worker("worker", points::reach, "before-commit", passed);

        pause.awaitReached(WAIT);
        assertThat(pause.thread()).isSameAs(worker);
        assertThat(pause.parkedCount()).isEqualTo(1);
        assertThat(passed.getCount()).isEqualTo(1);
        await().atMost(TestTimeouts.scaled(WAIT)).until(() -> worker.getState() == Thread.State.TIMED_WAITING);
        assertThat(passed.getCount()).as("still parked").isEqualTo(1);

        pause.release();
        assertThat(passedInTime(passed)).isTrue();
        assertThat(pause.parkedCount()).isZero();
    }

    @Test
    void onlyTheNextThreadParks() throws InterruptedException {
        PausePoints.Pause pause = points.arm("p");
        CountDownLatch firstPassed = new CountDownLatch(1);
        worker("first", points::reach, "p", firstPassed);
        pause.awaitReached(WAIT);

        points.reach("p"); // the test thread is the second reacher: it must not block

        assertThat(firstPassed.getCount()).isEqualTo(1);
        pause.release();
        assertThat(passedInTime(firstPassed)).isTrue();
    }

    @Test
    void canReArmOnceTakenButNotBefore() throws InterruptedException {
        PausePoints.Pause first = points.arm("p");
        assertThatThrownBy(() -> points.arm("p"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'p'");

        CountDownLatch passed1 = new CountDownLatch(1);
        worker("w1", points::reach, "p", passed1);
        first.awaitReached(WAIT);

        PausePoints.Pause second = points.arm("p");
        CountDownLatch passed2 = new CountDownLatch(1);
        Thread w2 = worker("w2", points::reach, "p", passed2);
        second.awaitReached(WAIT);
        assertThat(second.thread()).isSameAs(w2);

        second.release();
        assertThat(passedInTime(passed2)).isTrue();
        assertThat(passed1.getCount()).isEqualTo(1);
        first.release();
        assertThat(passedInTime(passed1)).isTrue();
    }

    @Test
    void releaseBeforeReachDisarms() {
        PausePoints.Pause pause = points.arm("p");
        pause.release();
        points.reach("p"); // passes straight through
        assertThatThrownBy(pause::thread)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'p'");
    }

    @Test
    void awaitReachedTimesOutWithThePointName() {
        PausePoints.Pause pause = points.arm("never-reached");
        assertThatThrownBy(() -> pause.awaitReached(Duration.ofMillis(50)))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("'never-reached'");
    }

    @Test
    void awaitReachedIsScaled() {
        String saved = System.getProperty(TestTimeouts.SCALE_PROPERTY);
        System.setProperty(TestTimeouts.SCALE_PROPERTY, "3");
        try {
            PausePoints.Pause pause = points.arm("p");
            assertThatThrownBy(() -> pause.awaitReached(Duration.ofMillis(20)))
                    .isInstanceOf(AssertionError.class)
                    .hasMessageContaining("PT0.06S");
        } finally {
            if (saved == null) {
                System.clearProperty(TestTimeouts.SCALE_PROPERTY);
            } else {
                System.setProperty(TestTimeouts.SCALE_PROPERTY, saved);
            }
        }
    }

    @Test
    void interruptEndsThePauseAndKeepsTheFlag() throws InterruptedException {
        PausePoints.Pause pause = points.arm("p");
        AtomicBoolean interruptedAfter = new AtomicBoolean();
        CountDownLatch passed = new CountDownLatch(1);
        Thread worker = worker(
                "w",
                p -> {
                    points.reach(p);
                    interruptedAfter.set(Thread.currentThread().isInterrupted());
                },
                "p",
                passed);
        pause.awaitReached(WAIT);

        worker.interrupt();

        assertThat(passedInTime(passed)).isTrue();
        assertThat(interruptedAfter).isTrue();
    }

    @Test
    void armAllParksEveryReacherUntilReleased() throws InterruptedException {
        PausePoints.Pause pause = points.armAll("gate");
        CountDownLatch passed = new CountDownLatch(3);
        for (int i = 0; i < 3; i++) {
            worker("w" + i, points::reach, "gate", passed);
        }
        pause.awaitReached(WAIT);
        await().atMost(TestTimeouts.scaled(WAIT)).until(() -> pause.parkedCount() == 3);
        assertThat(passed.getCount()).isEqualTo(3);

        points.disarm("gate");
        assertThat(passedInTime(passed)).isTrue();
        points.reach("gate"); // disarmed: passes
    }

    @Test
    void parkedThreadGivesUpWhenNeverReleased() throws InterruptedException {
        PausePoints impatient = new PausePoints(Duration.ofMillis(100));
        impatient.arm("forgotten");
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(1);
        Thread t = new Thread(
                () -> {
                    try {
                        impatient.reach("forgotten");
                    } catch (Throwable e) {
                        thrown.set(e);
                    } finally {
                        done.countDown();
                    }
                },
                "forgetful");
        threads.add(t);
        t.start();

        assertThat(passedInTime(done)).isTrue();
        assertThat(thrown.get()).isInstanceOf(AssertionError.class).hasMessageContaining("'forgotten'");
    }

    @Test
    void releaseAllFreesThreadsThatTookAOneShotPause() throws InterruptedException {
        PausePoints.Pause pause = points.arm("p");
        CountDownLatch passed = new CountDownLatch(1);
        worker("w", points::reach, "p", passed);
        pause.awaitReached(WAIT);

        points.disarm("p"); // no effect: the one-shot pause was already taken
        assertThat(passed.getCount()).isEqualTo(1);

        points.releaseAll();
        assertThat(passedInTime(passed)).isTrue();
    }
}
