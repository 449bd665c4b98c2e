package dev.baton.cli;

import dev.baton.LeadershipConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "demo", mixinStandardHelpOptions = true,
        header = "Multi-process failover demo on an embedded PostgreSQL, with a verified report.",
        description = {
            "Runs several Baton nodes as separate processes against one PostgreSQL (an embedded one unless "
                    + "--jdbc-url is given). While leading, a node appends a fenced row to a ledger every 50 ms. "
                    + "The demo then pauses the leader (SIGSTOP) past its lease, kills one (SIGKILL) and stops one "
                    + "gracefully (SIGTERM), showing each takeover live, and that a resumed former leader's write "
                    + "is refused. At the end it checks the whole lease and ledger history with the fenced-mutex "
                    + "checker and prints a verified report (also written as JSON).",
            "",
            "Needs a POSIX system (kill -STOP / -CONT)."},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:the history check passed and every fault step was observed",
            "1:the history check failed, or a fault step was not observed in time",
            "2:usage error or database unreachable"})
final class DemoCommand implements Callable<Integer> {
    static final String DEFAULT_SCHEMA = "baton_demo";
    static final String LEASE = VerifyWorkload.LEASE;
    static final String LEDGER = "verify_ledger";

    @Spec
    CommandSpec spec;

    @Option(names = "--nodes", paramLabel = "N", defaultValue = "3", description = "Node processes, 2 to 9 (default: ${DEFAULT-VALUE})")
    int nodes;

    @Option(names = "--duration", paramLabel = "D", defaultValue = "30s", converter = Durations.Converter.class,
            description = "How long the nodes run after the first election, 10s to 1h; the faults are spread over it "
                    + "(default: ${DEFAULT-VALUE}; also 1m, PT45S)")
    Duration duration;

    @Option(names = "--jdbc-url", paramLabel = "URL",
            description = "Use this PostgreSQL instead of starting an embedded one")
    String jdbcUrl;

    @Option(names = "--schema", paramLabel = "SCHEMA", defaultValue = DEFAULT_SCHEMA,
            description = "Schema for Baton's tables and the ledger (default: ${DEFAULT-VALUE})")
    String schema;

    @Option(names = "--report", paramLabel = "FILE", defaultValue = "baton-demo-report.json",
            description = "Where to write the JSON report (default: ${DEFAULT-VALUE})")
    Path report;

    @Option(names = "--ttl", hidden = true, defaultValue = "2s", converter = Durations.Converter.class)
    Duration ttl;

    @Option(names = "--renew", hidden = true, defaultValue = "400ms", converter = Durations.Converter.class)
    Duration renew;

    @Option(names = "--log-dir", hidden = true, description = "Directory for the nodes' logs (default: a new temp dir)")
    Path logDir;

    @Override
    public Integer call() throws Exception {
        if (nodes < 2 || nodes > 9) {
            throw CliException.usage("--nodes must be 2 to 9, but was " + nodes);
        }
        if (duration.compareTo(Duration.ofSeconds(10)) < 0 || duration.compareTo(Duration.ofHours(1)) > 0) {
            throw CliException.usage("--duration must be 10s to 1h, but was " + Durations.human(duration));
        }
        if (schema == null || !schema.matches("[a-z_][a-z0-9_]{0,62}")) {
            throw CliException.usage("--schema must be lower-case letters, digits and underscores, but was '" + schema + "'");
        }
        if (jdbcUrl != null) {
            jdbcUrl = Db.requireUrl(jdbcUrl, "--jdbc-url");
        }
        try {
            LeadershipConfig.builder().leaseTtl(ttl).renewInterval(renew).build();
        } catch (IllegalArgumentException e) {
            throw CliException.usage("invalid --ttl/--renew: " + e.getMessage());
        }
        return new DemoRun(this, spec.commandLine().getOut(), spec.commandLine().getErr()).run();
    }
}
