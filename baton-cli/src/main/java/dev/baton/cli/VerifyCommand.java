package dev.baton.cli;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
        name = "verify",
        mixinStandardHelpOptions = true,
        header = "Checks what the verification workload recorded (invariants I1-I4).",
        description = {
            "Checks the tables of the verification workload (written by `baton node --workload verify` "
                    + "and `baton demo`) in one consistent snapshot; safe while nodes run. Read-only.",
            "",
            "I1 ledger: by seq the generation never decreases, and each generation has one node.",
            "I2 jobs: every enqueued job has exactly one effect row, by the attempt that completed it, or is still "
                    + "pending; none lost.",
            "I3 ticks: at most one verify_tick row per due instant.",
            "I4 (reported, not a violation): external effects repeated by retried attempts."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:every invariant holds",
            "1:an invariant was violated (named in the output)",
            "2:usage error, database unreachable, or no verification tables in the schema"
        })
final class VerifyCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    DbOptions db;

    @Option(names = "--json", description = "Print JSON instead of text.")
    boolean json;

    @Override
    public Integer call() throws SQLException {
        String url = db.url();
        String schema = db.schema();
        DataSource ds = Db.simple(url);
        Db.probe(ds, url);
        List<String> missing;
        try (Connection c = ds.getConnection()) {
            missing = Verifier.missingTables(c, schema);
        }
        if (missing.size() == VerifyWorkload.TABLES.size() + 1) {
            throw CliException.usage("schema '" + schema + "' has no Baton or verification tables: nothing to verify "
                    + "(pass the --schema the nodes used)");
        }
        if (!missing.isEmpty()) {
            throw CliException.usage("schema '" + schema
                    + "' is not a verification-workload database: missing table(s) "
                    + String.join(", ", missing) + "; run `baton node --workload verify` or `baton demo` on it first, "
                    + "or pass the right --schema");
        }
        Verifier.Result r = Verifier.check(ds, schema);
        PrintWriter out = spec.commandLine().getOut();
        out.print(json ? Json.write(r.toJson()) : r.text());
        out.flush();
        return r.ok() ? Main.EXIT_OK : Main.EXIT_CHECK_FAILED;
    }
}
