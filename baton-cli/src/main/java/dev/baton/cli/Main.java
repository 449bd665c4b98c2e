package dev.baton.cli;

import dev.baton.Baton;
import dev.baton.SchemaVersionException;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** The {@code baton} command. */
@Command(
        name = "baton",
        mixinStandardHelpOptions = true,
        versionProvider = Main.Version.class,
        description = {
            "Fenced leases on PostgreSQL: at most one database-authorized owner per lease, and writes that a "
                    + "paused or partitioned former owner can no longer commit.",
            "",
            "Start with: baton demo"
        },
        subcommands = {
            DemoCommand.class,
            ChaosCommand.class,
            NodeCommand.class,
            VerifyCommand.class,
            StatusCommand.class,
            ConsoleCommand.class,
            MigrateCommand.class,
            AuditCommand.class,
            CommandLine.HelpCommand.class
        },
        commandListHeading = "%nCommands:%n",
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:success",
            "1:a check failed: an invariant was violated (verify, demo, chaos), a demo fault step was not observed, or"
                    + " the audit found state at or above --fail-on",
            "2:usage error, database unreachable, or the command could not run"
        })
public final class Main implements Callable<Integer> {
    static final int EXIT_OK = 0;
    static final int EXIT_CHECK_FAILED = 1;
    static final int EXIT_USAGE = 2;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        CommandLine cmd = spec.commandLine();
        cmd.usage(cmd.getErr());
        cmd.getErr().flush();
        return EXIT_USAGE;
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Runs the command line and returns the exit code (never calls {@code System.exit}). */
    public static int run(String... args) {
        return commandLine().execute(args);
    }

    /** The configured command line; tests set its output and error writers. */
    public static CommandLine commandLine() {
        CommandLine cmd = new CommandLine(new Main());
        cmd.setCaseInsensitiveEnumValuesAllowed(true);
        cmd.setExecutionExceptionHandler(Main::handle);
        return cmd;
    }

    private static int handle(Exception e, CommandLine cmd, CommandLine.ParseResult parsed) {
        PrintWriter err = cmd.getErr();
        String name = cmd.getCommandSpec().qualifiedName();
        int code;
        if (e instanceof CliException c) {
            err.println(name + ": " + c.getMessage());
            code = c.exitCode();
        } else if (Db.isConnectionProblem(e)) {
            err.println(name + ": cannot reach the database: " + Db.rootMessage(e));
            code = EXIT_USAGE;
        } else if (e instanceof SchemaVersionException || e instanceof IllegalArgumentException) {
            err.println(name + ": " + e.getMessage());
            code = EXIT_USAGE;
        } else {
            err.println(name + ": failed: " + Db.rootMessage(e));
            code = EXIT_USAGE;
        }
        if (debug()
                || (code == EXIT_USAGE
                        && !(e instanceof CliException)
                        && !(e instanceof IllegalArgumentException)
                        && !(e instanceof SchemaVersionException)
                        && !Db.isConnectionProblem(e))) {
            e.printStackTrace(err);
        }
        err.flush();
        return code;
    }

    static boolean debug() {
        return Boolean.getBoolean("baton.debug") || "1".equals(System.getenv("BATON_DEBUG"));
    }

    /** {@code --version}. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = Main.class.getPackage().getImplementationVersion();
            return new String[] {
                "baton " + (v != null ? v : "(development build)") + ", schema version " + Baton.schemaVersion(),
                "Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ")"
            };
        }
    }
}
