package dev.baton.examples.shop;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The shop's own tables (in {@code shop.schema}); created on start-up if missing, in a transaction, so
 * that they are committed also with a pool set to {@code auto-commit=false}.
 */
@Component
public class ShopTables {
    private final String schema;

    public ShopTables(JdbcTemplate jdbc, TransactionTemplate tx, @Value("${shop.schema:shop}") String schema) {
        this.schema = schema;
        tx.executeWithoutResult(status -> create(jdbc, schema));
    }

    private static void create(JdbcTemplate jdbc, String schema) {
        jdbc.execute("CREATE SCHEMA IF NOT EXISTS " + schema);
        jdbc.execute("CREATE TABLE IF NOT EXISTS " + schema + ".orders (id text PRIMARY KEY, email text NOT NULL, "
                + "placed_at timestamptz NOT NULL DEFAULT clock_timestamp(), receipt_sent_at timestamptz)");
        jdbc.execute("CREATE TABLE IF NOT EXISTS " + schema + ".carts (id bigserial PRIMARY KEY, "
                + "expires_at timestamptz NOT NULL)");
        jdbc.execute(
                "CREATE TABLE IF NOT EXISTS " + schema + ".sweep_runs (job_id bigint PRIMARY KEY, node text NOT NULL, "
                        + "expired_carts int NOT NULL, ran_at timestamptz NOT NULL DEFAULT clock_timestamp())");
        jdbc.execute(
                "CREATE TABLE IF NOT EXISTS " + schema + ".report_runs (generation bigint PRIMARY KEY, "
                        + "node text NOT NULL, open_orders int NOT NULL, ran_at timestamptz NOT NULL DEFAULT clock_timestamp())");
    }

    public String schema() {
        return schema;
    }
}
