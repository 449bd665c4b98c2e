package dev.baton.test;

import static dev.baton.test.BatonAssertions.assertEnqueued;
import static dev.baton.test.BatonAssertions.assertNotEnqueued;
import static dev.baton.test.BatonAssertions.enqueued;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.Baton;
import dev.baton.JobRequest;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** assertEnqueued / assertNotEnqueued: pass when they should, and fail with what was enqueued. */
@BatonTest
class BatonAssertionsTest {
    record Receipt(long orderId) {}

    Baton baton;
    EnqueuedJobs jobs;

    @BeforeEach
    void build(BatonTestDatabase db) {
        baton = db.batonBuilder().build(); // enqueueing needs no start
        jobs = EnqueuedJobs.of(baton);
    }

    @AfterEach
    void close() {
        baton.close();
    }

    @Test
    void assertEnqueuedFindsAJobByItsDecodedPayload() {
        baton.jobs().enqueue(JobRequest.of("receipt.send", new Receipt(7)));
        baton.jobs().enqueue(JobRequest.of("receipt.send", new Receipt(8)).queue("mail"));

        assertThat(assertEnqueued(jobs, "receipt.send", Receipt.class, r -> r.orderId() == 7))
                .containsExactly(new Receipt(7));
        assertThat(enqueued(jobs, "receipt.send", Receipt.class)).containsExactly(new Receipt(7), new Receipt(8));
        assertThat(assertEnqueued(jobs, "receipt.send")).hasSize(2);
        assertNotEnqueued(jobs, "receipt.send", Receipt.class, r -> r.orderId() == 9);
        assertNotEnqueued(jobs, "refund.never");
    }

    @Test
    void aFailedAssertEnqueuedListsWhatWasEnqueuedOfTheKind() {
        long id = baton.jobs()
                .enqueue(JobRequest.of("invoice.send", new Receipt(41)).queue("mail"))
                .id();

        assertThatThrownBy(() -> assertEnqueued(jobs, "invoice.send", Receipt.class, r -> r.orderId() == 42))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("expected a job of kind 'invoice.send' with a matching Receipt payload")
                .hasMessageContaining("none matched; enqueued of kind 'invoice.send': 1 job:")
                .hasMessageContaining("invoice.send {\"orderId\": 41} on queue 'mail' run_at ")
                .hasMessageContaining("(job " + id + ")");
    }

    @Test
    void aFailedAssertEnqueuedSaysWhenNothingOfTheKindWasEnqueued() {
        assertThatThrownBy(() -> assertEnqueued(jobs, "nothing.here", Receipt.class, r -> true))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("no job of that kind was enqueued");
        assertThatThrownBy(() -> assertEnqueued(jobs, "nothing.here"))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("but none was");
    }

    @Test
    void aFailedAssertNotEnqueuedListsTheOffendingJobs() {
        baton.jobs().enqueue(JobRequest.of("refund.issue", new Receipt(3)).delay(Duration.ofHours(1)));

        assertThatThrownBy(() -> assertNotEnqueued(jobs, "refund.issue", Receipt.class, r -> r.orderId() == 3))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("expected no job of kind 'refund.issue' with a matching Receipt payload")
                .hasMessageContaining("refund.issue {\"orderId\": 3} on queue 'default'");
        assertThatThrownBy(() -> assertNotEnqueued(jobs, "refund.issue"))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("1 job:");
    }

    @Test
    void aPayloadThatCannotBeDecodedNamesTheJob() {
        baton.jobs().enqueue(JobRequest.of("odd.payload", "just a string"));

        assertThatThrownBy(() -> assertEnqueued(jobs, "odd.payload", Receipt.class, r -> true))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("cannot be decoded as " + Receipt.class.getName())
                .hasMessageContaining("odd.payload \"just a string\"");
    }
}
