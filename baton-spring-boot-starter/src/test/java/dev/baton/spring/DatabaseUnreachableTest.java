package dev.baton.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.mock.env.MockEnvironment;

/**
 * A database that cannot be reached at start-up fails the start with Spring Boot's failure report naming
 * the data source's URL and what to check, not with "migrating Baton schema 'baton' failed" alone. Seen
 * failing with the analyzer answering nothing ({@code if (!unreachable(cause))} → {@code if (true)}): no analysis.
 */
class DatabaseUnreachableTest {
    private static final String URL = "jdbc:postgresql://127.0.0.1:1/nowhere?user=postgres";

    @Test
    void anUnreachableDatabaseFailsTheStartWithAReportNamingTheUrl() {
        FailureAnalysis[] out = new FailureAnalysis[1];
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(BatonAutoConfiguration.class))
                .withBean(DataSource.class, () -> {
                    HikariDataSource ds = new HikariDataSource();
                    ds.setJdbcUrl(URL);
                    ds.setConnectionTimeout(1_000);
                    ds.setInitializationFailTimeout(-1); // the pool starts; Baton is the first to need a connection
                    return ds;
                })
                .withPropertyValues("spring.datasource.url=" + URL)
                .run(context -> {
                    assertThat(context).hasFailed();
                    // The failed context has no environment to give: the analyzer gets one with the same property.
                    out[0] = new DatabaseUnreachableFailureAnalyzer(
                                    new MockEnvironment().withProperty("spring.datasource.url", URL))
                            .analyze(context.getStartupFailure());
                });
        assertThat(out[0]).as("an unreachable database in the cause chain").isNotNull();
        assertThat(out[0].getDescription())
                .contains("Baton cannot reach its PostgreSQL database")
                .contains("spring.datasource.url=" + URL);
        assertThat(out[0].getAction()).contains("Check that PostgreSQL is running");
    }
}
