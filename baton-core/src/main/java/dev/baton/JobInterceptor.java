package dev.baton;

import java.util.Optional;
import java.util.function.Consumer;

/**
 * Cross-cutting code around every job's enqueue and every attempt's execution: the one place for trace
 * context, tenant or security context propagation, custom metrics and logging. Registered with
 * {@link Baton.Builder#interceptor(JobInterceptor)}; several run in registration order on the way in
 * ({@link #beforeEnqueue}, the start of {@link #aroundExecution}) and in reverse order on the way out.
 * Every method has a default that does nothing, so an interceptor implements only what it needs.
 *
 * <pre>{@code
 * // Carry the tenant from the enqueuing request to the handler's thread.
 * Baton.builder(ds).interceptor(new JobInterceptor() {
 *     public JobRequest beforeEnqueue(JobRequest job) {
 *         return job.metadata("tenant", TenantContext.current());
 *     }
 *     public BatonMetrics.JobOutcome aroundExecution(JobContext job, Execution execution) {
 *         try (var scope = TenantContext.open(job.metadata().get("tenant"))) {
 *             return execution.proceed();
 *         }
 *     }
 * })
 * }</pre>
 *
 * <p>An exception thrown by {@link #beforeEnqueue} refuses the enqueue (nothing is written); one thrown by
 * {@link #afterEnqueue} is logged and ignored (the job exists). In {@link #aroundExecution}, an exception
 * thrown before {@code proceed()} fails the attempt as the handler throwing it would (retried by the
 * kind's policy); one thrown after it is logged and ignored: the outcome stands. Interceptors are called
 * on Baton's threads and must be thread-safe.
 */
public interface JobInterceptor {
    /**
     * On the enqueuing thread, before the job is written: returns the request to write, e.g. with
     * {@link JobRequest#metadata(String, String) metadata} added. Schedule firings pass through here too,
     * as a request with the schedule's kind, queue and a {@code baton.schedule} metadata entry; of what is
     * returned for them only the metadata is taken. A batch enqueue calls it once per job.
     */
    default JobRequest beforeEnqueue(JobRequest job) {
        return job;
    }

    /**
     * After the write of {@code job} (as {@link #beforeEnqueue} returned it) ended: with its result, or
     * with the failure that refused it ({@code result} null). On a caller's transaction the job exists
     * only once that commits.
     */
    default void afterEnqueue(JobRequest job, EnqueueResult result, Throwable failure) {}

    /**
     * Wraps one attempt on its handler's thread: call {@code execution.proceed()} once (the next
     * interceptor, and then the handler) and return what it returned. Baton's {@link Mdc} keys are set
     * throughout.
     */
    default BatonMetrics.JobOutcome aroundExecution(JobContext job, Execution execution) {
        return execution.proceed();
    }

    /** The rest of an attempt's execution, as seen by one interceptor. */
    interface Execution {
        /**
         * Runs the next interceptors and the handler, and returns how the attempt ended as Baton will
         * record it; {@link BatonMetrics.JobOutcome#UNKNOWN} when the handler's own
         * {@link JobContext#transaction completion transaction} failed at COMMIT. Never throws what the
         * handler threw: see {@link #failure()}.
         */
        BatonMetrics.JobOutcome proceed();

        /** After {@link #proceed()}: what the handler (or an interceptor before it) threw, if anything. */
        Optional<Throwable> failure();

        /**
         * After {@link #proceed()}: {@code callback} runs once the outcome has been recorded in the
         * database (with {@code true}), or once it is known it will not be ({@code false}: the attempt lost
         * its lease, stopped itself, or the recording failed, and the job's lease then expires and it is
         * rescued; or the attempt was no longer current when its outcome arrived, because it had been rescued
         * or ended by an operator, and nothing was written). It runs on a Baton thread; keep it short.
         */
        void whenRecorded(Consumer<Boolean> callback);
    }
}
