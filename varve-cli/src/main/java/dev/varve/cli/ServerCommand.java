package dev.varve.cli;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.common.config.ConfigException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.File;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/**
 * {@code varve server}: runs a broker until SIGTERM/SIGINT, then shuts down cleanly (stop
 * accepting, finish in-flight requests, flush, checkpoint, clean-shutdown marker) and exits 0.
 */
@Command(name = "server", mixinStandardHelpOptions = true,
        description = {"Run a Varve broker.",
                "With no options: a single-node broker on 127.0.0.1:9092 with data in ./varve-data."})
final class ServerCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = {"-c", "--config"}, paramLabel = "FILE",
            description = "A server.properties file with Kafka's key names (node.id, listeners, log.dirs, ...).")
    File configFile;

    @Override
    public Integer call() throws Exception {
        return run(configFile, spec.commandLine().getErr());
    }

    /**
     * The {@code server} command's fast path: {@code varve server} and {@code varve server --config
     * FILE} skip picocli's reflective command model (about 0.3 s of start-up); anything else (help,
     * typos) goes through picocli.
     *
     * @return the config file argument (null for none), or empty when the arguments need picocli
     */
    static java.util.Optional<java.util.Optional<File>> fastPathArgs(String[] args) {
        if (args.length == 0 || !args[0].equals("server")) {
            return java.util.Optional.empty();
        }
        if (args.length == 1) {
            return java.util.Optional.of(java.util.Optional.empty());
        }
        if (args.length == 3 && (args[1].equals("--config") || args[1].equals("-c"))) {
            return java.util.Optional.of(java.util.Optional.of(new File(args[2])));
        }
        if (args.length == 2 && args[1].startsWith("--config=")) {
            return java.util.Optional.of(java.util.Optional.of(new File(args[1].substring("--config=".length()))));
        }
        return java.util.Optional.empty();
    }

    /** Where {@code varve server} serves /metrics and /health when its config does not say. */
    static final String DEFAULT_ADMIN_LISTENER = "127.0.0.1:9644";

    static int run(File configFile, java.io.PrintWriter err) throws Exception {
        Properties props = new Properties();
        if (configFile != null) {
            if (!configFile.isFile()) {
                err.println("varve server: no such config file: " + configFile);
                err.flush();
                return 2;
            }
            try (Reader r = Files.newBufferedReader(configFile.toPath())) {
                props.load(r);
            }
        }
        // metrics and health on loopback unless the file says otherwise (an empty value: none)
        boolean defaultAdmin = props.putIfAbsent(BrokerConfig.ADMIN_LISTENER, DEFAULT_ADMIN_LISTENER) == null;
        BrokerConfig config;
        try {
            config = BrokerConfig.from(props);
        } catch (ConfigException e) {
            err.println("varve server: invalid configuration: " + e.getMessage());
            err.flush();
            return 2;
        }
        long startNanos = System.nanoTime();
        Broker broker = Broker.start(config, defaultAdmin);
        System.err.printf("Varve broker %d started in %d ms; bootstrap.servers=%s; data in %s%s%n", config.nodeId(),
                (System.nanoTime() - startNanos) / 1_000_000, broker.bootstrapServers(), config.logDirs(),
                broker.adminAddress() == null ? "" : "; metrics at http://" + LocalCluster.address(
                        broker.adminAddress().getHostString(), broker.adminAddress().getPort()) + "/metrics");
        // SIGTERM and SIGINT end the wait; the broker then shuts down cleanly and the process exits 0.
        CountDownLatch stop = new CountDownLatch(1);
        try {
            for (String name : new String[]{"TERM", "INT"}) {
                sun.misc.Signal.handle(new sun.misc.Signal(name), signal -> stop.countDown());
            }
        } catch (IllegalArgumentException | UnsupportedOperationException e) {
            // No signal handling here: fall back to a shutdown hook (the exit status is then the JVM's).
            Runtime.getRuntime().addShutdownHook(new Thread(() -> closeQuietly(broker), "varve-shutdown"));
        }
        stop.await();
        System.err.println("Varve broker " + config.nodeId() + " stopping");
        broker.close();
        return 0;
    }

    private static void closeQuietly(Broker broker) {
        try {
            broker.close();
        } catch (IOException e) {
            System.err.println("varve server: unclean shutdown: " + e.getMessage());
        }
    }
}
