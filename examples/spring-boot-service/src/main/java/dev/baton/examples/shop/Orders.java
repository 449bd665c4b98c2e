package dev.baton.examples.shop;

import dev.baton.Baton;
import dev.baton.JobContext;
import dev.baton.JobRequest;
import dev.baton.spring.BatonJob;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

/** Placing an order enqueues its receipt in the same transaction; the receipt job sends it at least once. */
@Service
public class Orders {
    /** The receipt job's payload. */
    public record Receipt(String orderId) {}

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final DataSource dataSource;
    private final Baton baton;
    private final String schema;

    public Orders(JdbcTemplate jdbc, TransactionTemplate tx, DataSource dataSource, Baton baton, ShopTables tables) {
        this.jdbc = jdbc;
        this.tx = tx;
        this.dataSource = dataSource;
        this.baton = baton;
        this.schema = tables.schema();
    }

    /** The order and its receipt job commit together, or neither does. */
    @Transactional
    public void place(String orderId, String email) throws SQLException {
        jdbc.update("INSERT INTO " + schema + ".orders (id, email) VALUES (?, ?)", orderId, email);
        baton.jobs()
                .enqueue(
                        DataSourceUtils.getConnection(dataSource), // the transaction's connection
                        JobRequest.of("receipt.send", new Receipt(orderId)).idempotencyKey("receipt:" + orderId));
    }

    /** Runs at least once per order: idempotent (a second run finds the receipt already sent). */
    @BatonJob(value = "receipt.send", backoff = "2s")
    public void sendReceipt(Receipt receipt, JobContext ctx) {
        // A real service would call its mail provider here with ctx.idempotencyKey(). The write runs in a
        // transaction of its own (committed also with auto-commit=false pools).
        tx.executeWithoutResult(status -> jdbc.update(
                "UPDATE " + schema + ".orders SET receipt_sent_at = "
                        + "clock_timestamp() WHERE id = ? AND receipt_sent_at IS NULL",
                receipt.orderId()));
    }
}
