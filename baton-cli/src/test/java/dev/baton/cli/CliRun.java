package dev.baton.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/** Runs the command line in-process and captures what it prints. */
record CliRun(int exitCode, String out, String err) {
    static CliRun of(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cmd = Main.commandLine();
        cmd.setOut(new PrintWriter(out, true));
        cmd.setErr(new PrintWriter(err, true));
        int code = cmd.execute(args);
        return new CliRun(code, out.toString(), err.toString());
    }

    @Override
    public String toString() {
        return "exit " + exitCode + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
    }
}
