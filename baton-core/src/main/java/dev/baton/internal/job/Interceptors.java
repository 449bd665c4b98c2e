package dev.baton.internal.job;

import dev.baton.BatonMetrics.JobOutcome;
import dev.baton.EnqueueResult;
import dev.baton.JobContext;
import dev.baton.JobInterceptor;
import dev.baton.JobRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's {@link JobInterceptor}s as one chain. With none registered every method returns at once,
 * so a node without interceptors pays one size check per enqueue and per attempt.
 */
public final class Interceptors {
    private static final Logger log = LoggerFactory.getLogger(Interceptors.class);

    public static final Interceptors NONE = new Interceptors(List.of());

    /** Immutable and random-access. */
    private final List<JobInterceptor> chain;

    public Interceptors(List<JobInterceptor> interceptors) {
        this.chain = List.copyOf(interceptors);
    }

    public boolean isEmpty() {
        return chain.size() == 0;
    }

    /** Each request through every interceptor's {@code beforeEnqueue}, in order; the same list if none. */
    public List<JobRequest> beforeEnqueue(List<JobRequest> requests) {
        if (chain.size() == 0) {
            return requests;
        }
        List<JobRequest> out = new ArrayList<>(requests.size());
        for (JobRequest r : requests) {
            for (int k = 0; k < chain.size(); k++) {
                JobRequest next;
                try {
                    next = chain.get(k).beforeEnqueue(r);
                    if (next == null) {
                        throw new IllegalStateException(
                                chain.get(k).getClass().getName() + ".beforeEnqueue returned null");
                    }
                } catch (RuntimeException | Error e) {
                    // Refused: whoever already saw a request of this enqueue hears that it failed.
                    afterEnqueue(out, null, e);
                    for (int j = k - 1; j >= 0; j--) {
                        after(chain.get(j), r, null, e);
                    }
                    throw e;
                }
                r = next;
            }
            out.add(r);
        }
        return out;
    }

    /** Every interceptor's {@code afterEnqueue}, in reverse order; what they throw is logged, not thrown. */
    public void afterEnqueue(List<JobRequest> requests, List<EnqueueResult> results, Throwable failure) {
        for (int n = 0; n < requests.size(); n++) {
            EnqueueResult result = results == null ? null : results.get(n);
            for (int k = chain.size() - 1; k >= 0; k--) {
                after(chain.get(k), requests.get(n), result, failure);
            }
        }
    }

    private static void after(JobInterceptor i, JobRequest request, EnqueueResult result, Throwable failure) {
        try {
            i.afterEnqueue(request, result, failure);
        } catch (RuntimeException e) {
            log.warn("{}.afterEnqueue failed; ignored: {}", i.getClass().getName(), e.toString());
        }
    }

    /** How an attempt ended: the outcome to record (null: none), as reported, and what was thrown. */
    public record Attempted(AttemptOutcome outcome, JobOutcome reported, Throwable failure) {}

    /**
     * Runs {@code handler} through the chain on the calling thread. {@code failed} maps an exception an
     * interceptor threw before it let the attempt go on. The callbacks interceptors registered with
     * {@code whenRecorded} are returned with the result (null if none).
     */
    public Run execute(JobContext job, Supplier<Attempted> handler, Function<Throwable, Attempted> failed) {
        Run run = new Run(job, handler, failed);
        run.level(0);
        return run;
    }

    /** One attempt's way through the chain. */
    public final class Run {
        private final JobContext job;
        private final Supplier<Attempted> handler;
        private final Function<Throwable, Attempted> failed;
        private Attempted result;
        private List<Consumer<Boolean>> whenRecorded;

        private Run(JobContext job, Supplier<Attempted> handler, Function<Throwable, Attempted> failed) {
            this.job = job;
            this.handler = handler;
            this.failed = failed;
        }

        public Attempted result() {
            return result;
        }

        /** Tells every registered callback whether the outcome was recorded. */
        public void recorded(boolean recorded) {
            if (whenRecorded == null) {
                return;
            }
            for (Consumer<Boolean> c : whenRecorded) {
                try {
                    c.accept(recorded);
                } catch (RuntimeException e) {
                    log.warn("a job interceptor's whenRecorded callback failed; ignored: {}", e.toString());
                }
            }
        }

        /** The callbacks as one, or null if none was registered. */
        public Consumer<Boolean> whenRecorded() {
            return whenRecorded == null ? null : this::recorded;
        }

        private JobOutcome level(int index) {
            if (index == chain.size()) {
                result = handler.get();
                return result.reported();
            }
            Level next = new Level(index + 1);
            try {
                chain.get(index).aroundExecution(job, next);
                if (!next.proceeded) {
                    result = failed.apply(new IllegalStateException(
                            chain.get(index).getClass().getName()
                                    + ".aroundExecution returned without calling execution.proceed()"));
                }
            } catch (RuntimeException | Error e) {
                if (!next.proceeded) {
                    result = failed.apply(e);
                } else {
                    log.warn(
                            "{}.aroundExecution failed after the attempt ran; its outcome stands: {}",
                            chain.get(index).getClass().getName(),
                            e.toString());
                }
            }
            return result.reported();
        }

        /** What the interceptor at one position sees as the rest of the execution. */
        private final class Level implements JobInterceptor.Execution {
            private final int index;
            private boolean proceeded;

            Level(int index) {
                this.index = index;
            }

            @Override
            public JobOutcome proceed() {
                if (proceeded) {
                    throw new IllegalStateException("execution.proceed() may be called once per interceptor");
                }
                proceeded = true;
                return level(index);
            }

            @Override
            public Optional<Throwable> failure() {
                return result == null ? Optional.empty() : Optional.ofNullable(result.failure());
            }

            @Override
            public void whenRecorded(Consumer<Boolean> callback) {
                if (whenRecorded == null) {
                    whenRecorded = new ArrayList<>(2);
                }
                whenRecorded.add(callback);
            }
        }
    }
}
