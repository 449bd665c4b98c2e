package dev.baton.examples.shop;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/** The shop's own tables (in {@code shop.schema}); created on start-up if missing. */
@Component
public class ShopTables {
    private final String schema;

    public ShopTables(JdbcTemplate jdbc, @Value("${shop.schema:shop}") String schema) {
        this.schema = schema;
        jdbc.execute("CREATE SCHEMA IF NOT EXISTS " + schema);
        jdbc.execute("CREATE TABLE IF NOT EXISTS " + schema + ".orders (id text PRIMARY KEY, email text NOT NULL, "
                + "placed_at timestamptz NOT NULL DEFAULT clock_timestamp(), receipt_sent_at timestamptz)");
        jdbc.execute("CREATE TABLE IF NOT EXISTS " + schema + ".carts (id bigserial PRIMARY KEY, "
                + "expires_at timestamptz NOT NULL)");
        jdbc.execute("CREATE TABLE IF NOT EXISTS " + schema + ".sweep_runs (job_id bigint PRIMARY KEY, node text NOT NULL, "
                + "expired_carts int NOT NULL, ran_at timestamptz NOT NULL DEFAULT clock_timestamp())");
        jdbc.execute("CREATE TABLE IF NOT EXISTS " + schema + ".report_runs (generation bigint PRIMARY KEY, "
                + "node text NOT NULL, open_orders int NOT NULL, ran_at timestamptz NOT NULL DEFAULT clock_timestamp())");
    }

    public String schema() {
        return schema;
    }
}
