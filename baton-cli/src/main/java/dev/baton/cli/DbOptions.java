package dev.baton.cli;

import dev.baton.Baton;
import picocli.CommandLine.Option;

/** {@code --jdbc-url} and {@code --schema}, shared by the commands that work on an existing database. */
final class DbOptions {
    @Option(
            names = "--jdbc-url",
            paramLabel = "URL",
            required = true,
            description = "PostgreSQL JDBC URL, e.g. jdbc:postgresql://localhost:5432/app?user=app&password=secret")
    String jdbcUrl;

    @Option(
            names = "--schema",
            paramLabel = "SCHEMA",
            defaultValue = Baton.DEFAULT_SCHEMA,
            description = "Baton's schema (default: ${DEFAULT-VALUE})")
    String schema;

    String url() {
        return Db.requireUrl(jdbcUrl, "--jdbc-url");
    }

    String schema() {
        if (schema == null || !schema.matches("[a-z_][a-z0-9_]{0,62}")) {
            throw CliException.usage(
                    "--schema must be lower-case letters, digits and underscores (at most 63), but was '" + schema
                            + "'");
        }
        return schema;
    }
}
