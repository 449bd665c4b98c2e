package dev.baton.cli;

import dev.baton.cli.ChaosPlan.Kind;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
        name = "chaos",
        mixinStandardHelpOptions = true,
        header = "Seeded, randomised fault run against several node processes, ending with the checker (FAULTS E03).",
        description = {
            "Starts --nodes node processes running the verification workload (see `baton node`), each reaching the "
                    + "database through a fault proxy of its own, and for --duration injects a random fault schedule "
                    + "derived from --seed: pauses past the lease (SIGSTOP/SIGCONT), SIGKILL + restart, SIGTERM + "
                    + "restart, terminated backends, network black holes and latency, and PostgreSQL restarts (only "
                    + "on the embedded server it starts itself, when no --jdbc-url is given). Then it heals every "
                    + "fault, waits for the cluster to make progress again, stops the nodes and runs the checker "
                    + "(`baton verify`).",
            "",
            "The same seed gives the same fault schedule (the system's own timing still varies), so a failing "
                    + "run prints the command that replays its schedule. Needs a POSIX system (kill -STOP / -CONT)."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:no invariant violated and the cluster made progress after the faults",
            "1:an invariant was violated, or no progress after the faults were healed",
            "2:usage error or database unreachable"
        })
final class ChaosCommand implements Callable<Integer> {
    static final String DEFAULT_SCHEMA = "baton_chaos";

    @Spec
    CommandSpec spec;

    @Option(
            names = "--seed",
            paramLabel = "SEED",
            description = "Seed of the fault schedule (default: a random one, printed)")
    Long seed;

    @Option(
            names = "--duration",
            paramLabel = "D",
            defaultValue = "2m",
            converter = Durations.Converter.class,
            description = "How long the faults go on, 20s to 24h (default: ${DEFAULT-VALUE})")
    Duration duration;

    @Option(
            names = "--nodes",
            paramLabel = "N",
            defaultValue = "3",
            description = "Node processes, 2 to 9 (default: ${DEFAULT-VALUE})")
    int nodes;

    @Option(
            names = "--jdbc-url",
            paramLabel = "URL",
            description = "Use this PostgreSQL (or PgBouncer) instead of starting an embedded one; database restarts "
                    + "are then left out")
    String jdbcUrl;

    @Option(
            names = "--schema",
            paramLabel = "SCHEMA",
            defaultValue = DEFAULT_SCHEMA,
            description =
                    "Schema for Baton's and the workload's tables; must be new or empty unless --reset (default: ${DEFAULT-VALUE})")
    String schema;

    @Option(
            names = "--reset",
            description = "Drop the schema first if it exists (it must be a chaos or verification schema)")
    boolean reset;

    @Option(
            names = "--faults",
            paramLabel = "KINDS",
            split = ",",
            description =
                    "Fault kinds to use, comma-separated, from: ${COMPLETION-CANDIDATES} (default: all that apply)")
    List<Kind> faults;

    @Option(
            names = "--report",
            paramLabel = "FILE",
            defaultValue = "baton-chaos-report.json",
            description = "Where to write the JSON report (default: ${DEFAULT-VALUE})")
    Path report;

    @Option(
            names = "--log-dir",
            paramLabel = "DIR",
            description = "Directory for the nodes' logs (default: a new temp dir)")
    Path logDir;

    @Override
    public Integer call() throws Exception {
        jdbcUrl = Cluster.checkOptions(nodes, duration, "20s", "24h", schema, jdbcUrl);
        Set<Kind> kinds = faults == null || faults.isEmpty() ? EnumSet.allOf(Kind.class) : EnumSet.copyOf(faults);
        if (jdbcUrl != null && kinds.contains(Kind.DB_RESTART)) {
            if (faults != null && faults.contains(Kind.DB_RESTART)) {
                throw CliException.usage("--faults DB_RESTART needs the embedded server: it cannot restart the server "
                        + "behind --jdbc-url");
            }
            kinds.remove(Kind.DB_RESTART);
        }
        long s = seed != null ? seed : ThreadLocalRandom.current().nextLong(1, 1L << 48);
        ChaosPlan plan = ChaosPlan.generate(s, duration, nodes, kinds, ChaosRun.LEASE_TTL);
        return new ChaosRun(this, plan, spec.commandLine().getOut()).run();
    }

    /** The command line that replays this run's schedule. */
    String replay(ChaosPlan plan) {
        StringBuilder sb = new StringBuilder("baton chaos --seed ")
                .append(plan.seed())
                .append(" --duration ")
                .append(duration.toMillis() % 1000 == 0 ? duration.toSeconds() + "s" : duration.toMillis() + "ms")
                .append(" --nodes ")
                .append(nodes);
        if (faults != null && !faults.isEmpty()) {
            sb.append(" --faults ").append(faults.stream().map(Enum::name).collect(Collectors.joining(",")));
        }
        if (jdbcUrl != null) {
            sb.append(" --jdbc-url '").append(Db.redact(jdbcUrl)).append('\'');
        }
        return sb.toString();
    }
}
