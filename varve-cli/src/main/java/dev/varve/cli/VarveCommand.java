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
        subcommands = {HelpCommand.class, ServerCommand.class, ClusterCommand.class,
                dev.varve.cli.client.TopicCommand.class, dev.varve.cli.client.ProduceCommand.class,
                dev.varve.cli.client.ConsumeCommand.class, dev.varve.cli.client.GroupCommand.class,
                dev.varve.cli.client.PartitionCommand.class, dev.varve.cli.client.AclCommand.class,
                dev.varve.cli.client.UserCommand.class, dev.varve.cli.client.BenchCommand.class,
                dev.varve.cli.client.ProfileCommand.class,
                LogCommand.class, picocli.AutoComplete.GenerateCompletion.class})
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
        if (args.length > 0 && (!CLUSTER_SIDE.contains(args[0])
                || args[0].equals("cluster") && args.length > 1 && CLUSTER_CLIENT.contains(args[1]))) {
            // a client command: Kafka's clients log reconnections and their config at INFO/WARN on stderr,
            // which would bury the command's own one-line error (logback.xml reads this property)
            System.setProperty("varve.client.log.level", "ERROR");
        }
        System.exit(commandLine().execute(args));
    }

    /** The commands that run brokers, whose logs are the point. */
    private static final java.util.Set<String> CLUSTER_SIDE = java.util.Set.of("server", "cluster");
    /** The {@code cluster} subcommands that are clients of a running cluster, not runners of one. */
    private static final java.util.Set<String> CLUSTER_CLIENT = java.util.Set.of("info", "metadata", "health");

    /** The whole command line, with the client commands' error handling: what tests run too. */
    public static CommandLine commandLine() {
        CommandLine cmd = new CommandLine(new VarveCommand());
        cmd.setExecutionExceptionHandler(new dev.varve.cli.client.CliErrors());
        cmd.setCaseInsensitiveEnumValuesAllowed(true);
        return cmd;
    }
}
