package dev.baton.examples.shop;

import dev.baton.Baton;
import dev.baton.JobContext;
import dev.baton.JobRequest;
import dev.baton.spring.BatonJob;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Placing an order enqueues its receipt in the same transaction; the receipt job sends it at least once. */
@Service
public class Orders {
    /** The receipt job's payload. */
    public record Receipt(String orderId) {}

    private final JdbcTemplate jdbc;
    private final Baton baton;
    private final String schema;

    public Orders(JdbcTemplate jdbc, Baton baton, ShopTables tables) {
        this.jdbc = jdbc;
        this.baton = baton;
        this.schema = tables.schema();
    }

    /**
     * The order and its receipt job commit together, or neither does: the enqueue joins this transaction.
     * An address without '@' is refused after both writes, as a late business check would: the
     * transaction rolls back, and with it the job.
     *
     * @throws IllegalArgumentException if {@code email} has no '@' (nothing is written)
     */
    @Transactional
    public void place(String orderId, String email) {
        jdbc.update("INSERT INTO " + schema + ".orders (id, email) VALUES (?, ?)", orderId, email);
        baton.jobs().enqueue(JobRequest.of("receipt.send", new Receipt(orderId)).idempotencyKey("receipt:" + orderId));
        if (!email.contains("@")) {
            throw new IllegalArgumentException("email '" + email + "' has no '@'");
        }
    }

    /** Runs at least once per order: idempotent (a second run finds the receipt already sent). */
    @BatonJob(value = "receipt.send", backoff = "2s")
    public void sendReceipt(Receipt receipt, JobContext ctx) {
        // A real service would call its mail provider here with ctx.idempotencyKey(). JdbcTemplate joins the
        // job's completion transaction: the update and the job's success commit together, fenced by the
        // attempt, or not at all.
        ctx.transaction(conn -> jdbc.update(
                "UPDATE " + schema + ".orders SET receipt_sent_at = "
                        + "clock_timestamp() WHERE id = ? AND receipt_sent_at IS NULL",
                receipt.orderId()));
    }
}
