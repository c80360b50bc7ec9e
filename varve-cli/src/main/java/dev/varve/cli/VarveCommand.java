package dev.varve.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * The top-level {@code varve} command. Subcommands (server, topic, produce, ...) hang off it.
 *
 * <p>Run with no subcommand it prints its usage to stderr and exits with picocli's usage-error
 * code (2), as there is nothing to do.
 */
@Command(
        name = "varve",
        mixinStandardHelpOptions = true,
        versionProvider = VarveVersion.class,
        description = "Varve: a distributed commit log that speaks the Apache Kafka protocol.",
        subcommands = {HelpCommand.class, ServerCommand.class, ClusterCommand.class, LogCommand.class})
public final class VarveCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        CommandLine cmd = spec.commandLine();
        cmd.usage(cmd.getErr());
        return CommandLine.ExitCode.USAGE;
    }

    public static void main(String[] args) throws Exception {
        var server = ServerCommand.fastPathArgs(args);
        if (server.isPresent()) {
            java.io.PrintWriter err = new java.io.PrintWriter(System.err, true);
            System.exit(ServerCommand.run(server.get().orElse(null), err));
        }
        System.exit(new CommandLine(new VarveCommand()).execute(args));
    }
}
