package dev.varve.cli.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import dev.varve.cli.VarveCommand;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

import java.io.File;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * A real broker (in this JVM, on an ephemeral port) and the whole {@code varve} command line run against
 * it as a user would type it, with stdout and stderr captured. Profiles live in a temporary file, never
 * the user's own.
 */
final class CliHarness implements AutoCloseable {
    final Path dir;
    final Broker broker;
    final Admin admin;
    final Path profiles;

    record Result(int exit, String out, String err) {
        JsonNode json() {
            try {
                return new ObjectMapper().readTree(out);
            } catch (Exception e) {
                throw new AssertionError("not JSON: " + out + "\nstderr: " + err, e);
            }
        }

        JsonNode yaml() {
            try {
                return new YAMLMapper().readTree(out);
            } catch (Exception e) {
                throw new AssertionError("not YAML: " + out + "\nstderr: " + err, e);
            }
        }

        @Override
        public String toString() {
            return "exit " + exit + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    CliHarness(Map<String, String> extraConfig) throws Exception {
        dir = Files.createTempDirectory("varve-cli-test");
        Map<String, String> config = new HashMap<>(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.resolve("data").toString(),
                "group.initial.rebalance.delay.ms", "0",
                BrokerConfig.ADMIN_LISTENER, "127.0.0.1:0"));
        config.putAll(extraConfig);
        broker = Broker.start(BrokerConfig.from(config));
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()));
        profiles = dir.resolve("config/profiles.yaml");
        ClientOptions.environment = Map.of("VARVE_CONFIG", profiles.toString());
    }

    CliHarness() throws Exception {
        this(Map.of());
    }

    /** The broker's node id. */
    int nodeId() {
        try {
            return admin.describeCluster().nodes().get().iterator().next().id();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    String bootstrap() {
        return broker.bootstrapServers();
    }

    /** {@code varve ARGS} exactly as typed (no bootstrap added). */
    Result raw(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        var cmd = VarveCommand.commandLine();
        cmd.setOut(new PrintWriter(out, true));
        cmd.setErr(new PrintWriter(err, true));
        int exit = cmd.execute(args);
        return new Result(exit, out.toString(), err.toString());
    }

    /** {@code varve ARGS --bootstrap-server <this broker>}. */
    Result run(String... args) {
        String[] all = java.util.Arrays.copyOf(args, args.length + 2);
        all[args.length] = "--bootstrap-server";
        all[args.length + 1] = bootstrap();
        return raw(all);
    }

    @Override
    public void close() throws Exception {
        ClientOptions.environment = System.getenv();
        admin.close();
        broker.close();
        deleteTree(dir.toFile());
    }

    private static void deleteTree(File f) {
        File[] children = f.listFiles();
        if (children != null) {
            for (File c : children) {
                deleteTree(c);
            }
        }
        f.delete();
    }
}
