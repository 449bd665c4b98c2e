package dev.baton.cli;

import dev.baton.Baton;
import dev.baton.MigrationResult;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

@Command(
        name = "migrate",
        mixinStandardHelpOptions = true,
        header = "Creates or upgrades Baton's tables in a schema.",
        description = {
            "Creates or upgrades Baton's tables in a schema. Safe to run while instances are running and "
                    + "from several places at once: the first applies, the others find nothing to do."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:the schema is at the current version",
            "2:usage error, database unreachable, or migration failed"
        })
final class MigrateCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    DbOptions db;

    @Override
    public Integer call() {
        String url = db.url();
        String schema = db.schema();
        DataSource ds = Db.simple(url);
        Db.probe(ds, url);
        MigrationResult r = Baton.migrate(ds, schema);
        PrintWriter out = spec.commandLine().getOut();
        if (r.changed()) {
            out.printf("schema '%s': migrated from version %d to %d%n", r.schema(), r.from(), r.to());
            for (String script : r.applied()) {
                out.printf("  applied %s%n", script);
            }
        } else {
            out.printf("schema '%s': already at version %d, nothing to apply%n", r.schema(), r.to());
        }
        out.flush();
        return Main.EXIT_OK;
    }
}
