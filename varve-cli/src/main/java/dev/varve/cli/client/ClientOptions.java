package dev.varve.cli.client;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * The connection options every client command takes (a picocli mixin). Where the client settings come
 * from, later ones winning: the default {@code localhost:9092}; the profile named by {@code --profile},
 * else the current one; {@code $VARVE_BOOTSTRAP_SERVERS}; {@code --command-config FILE} (Kafka client
 * properties, as Kafka's own tools take); each {@code -X key=value}; {@code --bootstrap-server}.
 */
public final class ClientOptions {
    public static final String DEFAULT_BOOTSTRAP = "localhost:9092";

    @Option(names = {"-b", "--bootstrap-server"}, paramLabel = "HOST:PORT[,...]",
            description = "Brokers to connect to (default: the profile's, else $VARVE_BOOTSTRAP_SERVERS, else " + DEFAULT_BOOTSTRAP + ").")
    String bootstrap;

    @Option(names = "--profile", paramLabel = "NAME", description = "Use this profile's settings (see `varve profile`), not the current one's.")
    String profile;

    @Option(names = "--command-config", paramLabel = "FILE",
            description = "Kafka client properties (TLS, SASL, ...), as Kafka's tools take them.")
    Path commandConfig;

    @Option(names = {"-X", "--client-property"}, paramLabel = "KEY=VALUE",
            description = "One Kafka client property, e.g. -X security.protocol=SSL (repeatable).")
    Map<String, String> overrides = new LinkedHashMap<>();

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", converter = OutputConverter.class, defaultValue = "text",
            description = "text (default), json or yaml.")
    public Output output = Output.TEXT;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "15",
            description = "Give up on the cluster after this long (default 15).")
    int timeoutSeconds = 15;

    /** The process environment; tests replace it. */
    static Map<String, String> environment = System.getenv();

    static final class OutputConverter implements picocli.CommandLine.ITypeConverter<Output> {
        @Override
        public Output convert(String value) {
            return Output.parse(value);
        }
    }

    public int timeoutSeconds() {
        return timeoutSeconds;
    }

    public long timeoutMs() {
        return timeoutSeconds * 1000L;
    }

    /** The client properties these options resolve to. */
    public Properties properties() {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, DEFAULT_BOOTSTRAP);
        Profiles profiles = Profiles.load(Profiles.defaultFile(environment));
        if (profile != null) {
            p.putAll(profiles.get(profile));
        } else if (profiles.current() != null && profiles.all().containsKey(profiles.current())) {
            p.putAll(profiles.all().get(profiles.current()));
        }
        String env = environment.get("VARVE_BOOTSTRAP_SERVERS");
        if (env != null && !env.isBlank()) {
            p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, env);
        }
        if (commandConfig != null) {
            try (Reader r = Files.newBufferedReader(commandConfig)) {
                p.load(r);
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read --command-config " + commandConfig + ": " + e.getMessage());
            }
        }
        p.putAll(overrides);
        if (bootstrap != null) {
            p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        }
        return p;
    }

    public String bootstrapServers() {
        return properties().getProperty(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG);
    }

    /** An Admin client whose calls give up after {@code --timeout}. */
    public Admin admin() {
        Properties p = properties();
        int ms = (int) Math.min(Integer.MAX_VALUE, timeoutMs());
        p.putIfAbsent(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Integer.toString(Math.max(1, ms)));
        p.putIfAbsent(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Integer.toString(Math.max(1, ms)));
        p.putIfAbsent(AdminClientConfig.CLIENT_ID_CONFIG, "varve-cli");
        return Admin.create(p);
    }

    /** Client properties for a producer or consumer, with {@code extra} under the user's own settings. */
    public Properties clientProperties(Map<String, ?> extra) {
        Properties p = new Properties();
        p.putAll(extra);
        Properties mine = properties();
        p.putAll(mine);
        return p;
    }

    /** The keys of properties set on the command line ({@code -X}), for commands that report them. */
    public List<String> overriddenKeys() {
        return List.copyOf(overrides.keySet());
    }
}
