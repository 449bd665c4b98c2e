package dev.baton.cli;

import dev.baton.LeadershipConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        header = "Multi-process demo with injected faults, checked by the verification workload's invariants.",
        description = {
            "Runs N Baton nodes as separate processes against one PostgreSQL (an embedded one unless --jdbc-url is "
                    + "given), each running the verification workload (`baton node --workload verify`): the leader of "
                    + "'verify-leader' appends a fenced ledger row every 20 ms and enqueues 50 jobs/s; every node runs "
                    + "jobs and a schedule ticking every second. While they run, the demo pauses the leader past its "
                    + "lease (SIGSTOP, then SIGCONT: its stale write is refused), kills a node (SIGKILL) and restarts it, "
                    + "terminates a node's database connections (pg_terminate_backend) and stops a leader gracefully "
                    + "(SIGTERM), showing live progress. Then it stops the nodes, checks invariants I1-I4 (as "
                    + "`baton verify` does) and the lease history, prints a summary and writes a JSON report.",
            "",
            "Needs a POSIX system (kill -STOP / -CONT)."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:every invariant held, the history check passed and every fault step was observed",
            "1:an invariant was violated, the history check failed, or a fault step was not observed in time",
            "2:usage error or database unreachable"
        })
final class DemoCommand implements Callable<Integer> {
    static final String DEFAULT_SCHEMA = "baton_demo";
    static final String LEASE = VerifyWorkload.LEASE;
    static final String LEDGER = "verify_ledger";

    @Spec
    CommandSpec spec;

    @Option(
            names = "--nodes",
            paramLabel = "N",
            defaultValue = "3",
            description = "Node processes, 2 to 9 (default: ${DEFAULT-VALUE})")
    int nodes;

    @Option(
            names = "--duration",
            paramLabel = "D",
            defaultValue = "60s",
            converter = Durations.Converter.class,
            description = "How long the nodes run after the first election, 10s to 1h; the faults are spread over it "
                    + "(default: ${DEFAULT-VALUE}; also 1m, PT45S)")
    Duration duration;

    @Option(
            names = "--jdbc-url",
            paramLabel = "URL",
            description = "Use this PostgreSQL instead of starting an embedded one")
    String jdbcUrl;

    @Option(
            names = "--schema",
            paramLabel = "SCHEMA",
            defaultValue = DEFAULT_SCHEMA,
            description = "Schema for Baton's tables and the ledger (default: ${DEFAULT-VALUE})")
    String schema;

    @Option(
            names = "--report",
            paramLabel = "FILE",
            defaultValue = "baton-demo-report.json",
            description = "Where to write the JSON report (default: ${DEFAULT-VALUE})")
    Path report;

    @Option(names = "--ttl", hidden = true, defaultValue = "2s", converter = Durations.Converter.class)
    Duration ttl;

    @Option(names = "--renew", hidden = true, defaultValue = "400ms", converter = Durations.Converter.class)
    Duration renew;

    @Option(names = "--plain", description = "Plain progress lines even on a terminal (no line redrawn in place)")
    boolean plain;

    @Option(names = "--log-dir", hidden = true, description = "Directory for the nodes' logs (default: a new temp dir)")
    Path logDir;

    @Override
    public Integer call() throws Exception {
        jdbcUrl = Cluster.checkOptions(nodes, duration, "10s", "1h", schema, jdbcUrl);
        try {
            LeadershipConfig.builder().leaseTtl(ttl).renewInterval(renew).build();
        } catch (IllegalArgumentException e) {
            throw CliException.usage("invalid --ttl/--renew: " + e.getMessage());
        }
        return new DemoRun(this, spec.commandLine().getOut()).run();
    }
}
