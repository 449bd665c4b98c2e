package dev.baton.spring;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.testkit.BatonPostgres;
import dev.baton.testkit.TestTimeouts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** A fresh schema and pool per test on the shared PostgreSQL, and a context runner with Baton's auto-configuration. */
abstract class StarterTestSupport {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    static final Duration WAIT = TestTimeouts.scaled(Duration.ofSeconds(20));

    protected String schema;
    protected HikariDataSource pool;
    private final List<HikariDataSource> pools = new ArrayList<>();

    @BeforeEach
    void freshSchema() {
        schema = PG.freshSchemaName();
        pool = newPool("starter-test");
    }

    @AfterEach
    void dropSchema() {
        pools.forEach(HikariDataSource::close);
        PG.dropSchema(schema);
    }

    HikariDataSource newPool(String name) {
        HikariDataSource ds = PG.newPool(name, 10);
        pools.add(ds);
        return ds;
    }

    /** Auto-configuration with a pool of its own as the application's DataSource (closed with the context), short timings. */
    ApplicationContextRunner runner() {
        return runner(() -> PG.newPool("starter-app", 10));
    }

    /** As {@link #runner()}, with {@code dataSource} giving the application's DataSource. */
    ApplicationContextRunner runner(Supplier<DataSource> dataSource) {
        return new ApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(BatonAutoConfiguration.class, BatonActuatorAutoConfiguration.class))
                .withBean(DataSource.class, dataSource)
                .withPropertyValues("spring.jmx.enabled=true", "management.endpoints.jmx.exposure.include=baton,health")
                .withPropertyValues(
                        "baton.schema=" + schema,
                        "baton.notifications=" + (PG.pooled() ? "POLL" : "AUTO"),
                        "baton.node-heartbeat=200ms",
                        "baton.maintenance.lease-ttl=1s",
                        "baton.maintenance.renew-interval=200ms",
                        "baton.maintenance.poll-interval=100ms",
                        "baton.worker.job-lease=2s",
                        "baton.worker.heartbeat-interval=150ms",
                        "baton.worker.poll-interval=50ms",
                        "baton.worker.drain-timeout=1s");
    }
}
