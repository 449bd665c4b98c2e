package dev.baton.examples.audit.jobs;

import dev.baton.spring.BatonSingleRunner;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/** Already fixed: a @Scheduled method made single-runner with @BatonSingleRunner. Not a finding. */
@Component
public class Housekeeping {
    private final JdbcTemplate jdbc;

    public Housekeeping(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @Scheduled(fixedDelay = 60_000)
    @BatonSingleRunner("audit-example.expire-carts")
    public void expireCarts() {
        jdbc.update("DELETE FROM app.cart WHERE expires_at < now()");
    }
}
