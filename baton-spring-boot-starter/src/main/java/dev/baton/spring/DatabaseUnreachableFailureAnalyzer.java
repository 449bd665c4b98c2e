package dev.baton.spring;

import dev.baton.BatonException;
import java.net.ConnectException;
import java.net.UnknownHostException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.core.env.Environment;

/**
 * Turns a Baton start that cannot reach its database (a refused or failed connection, an unknown host, a
 * pool that timed out) into Spring Boot's start-up failure report naming the data source and what to check.
 */
class DatabaseUnreachableFailureAnalyzer extends AbstractFailureAnalyzer<BatonException> {
    private final Environment environment;

    DatabaseUnreachableFailureAnalyzer(Environment environment) {
        this.environment = environment;
    }

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, BatonException cause) {
        if (!unreachable(cause)) {
            return null;
        }
        String url = environment == null ? null : environment.getProperty("spring.datasource.url");
        String source = url != null
                ? "the data source at spring.datasource.url=" + url
                : "the application's DataSource bean (spring.datasource.url is not set)";
        return new FailureAnalysis(
                "Baton cannot reach its PostgreSQL database through " + source + ": " + cause.getMessage(),
                "Check that PostgreSQL is running and reachable from here (host, port and database of "
                        + "spring.datasource.url), that spring.datasource.username/password are right, and that the "
                        + "pool's connection timeout is long enough; or set baton.enabled=false to start without Baton.",
                cause);
    }

    static boolean unreachable(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof SQLTransientConnectionException
                    || c instanceof ConnectException
                    || c instanceof UnknownHostException) {
                return true;
            }
            if (c instanceof SQLException e
                    && e.getSQLState() != null
                    && e.getSQLState().startsWith("08")) {
                return true;
            }
        }
        return false;
    }
}
