package dev.varve.broker;

import dev.varve.storage.LogConfig;
import dev.varve.storage.checkpoint.CheckpointFile;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.internals.Topic;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The topics of a single-node broker: name, id, partition count and config overrides, kept in
 * {@code <first log dir>/varve-topics} (Kafka's checkpoint layout, one topic per line, replaced
 * atomically on every change). The Raft metadata quorum replaces this file when clustering lands;
 * the rest of the broker sees only this class's methods.
 *
 * <pre>
 *   orders 8r3Qm9JYTt2zq2vY1m1YBg 3 retention.ms=86400000&amp;cleanup.policy=delete
 * </pre>
 *
 * Thread-safe: reads are lock-free snapshots; changes are serialized.
 */
public final class TopicRegistry {
    public static final String FILE_NAME = "varve-topics";

    /** One topic: its id, partition count and the config keys set on it. */
    public record TopicInfo(String name, Uuid id, int partitions, Map<String, String> configs) {
        public TopicInfo {
            configs = Map.copyOf(configs);
        }
    }

    private static final CheckpointFile.Formatter<TopicInfo> FORMAT = new CheckpointFile.Formatter<>() {
        @Override
        public String toLine(TopicInfo t) {
            StringBuilder cfg = new StringBuilder();
            new TreeMap<>(t.configs()).forEach((k, v) -> {
                if (cfg.length() > 0) {
                    cfg.append('&');
                }
                cfg.append(URLEncoder.encode(k, StandardCharsets.UTF_8)).append('=')
                        .append(URLEncoder.encode(v, StandardCharsets.UTF_8));
            });
            return t.name() + " " + t.id() + " " + t.partitions() + " " + (cfg.length() == 0 ? "-" : cfg);
        }

        @Override
        public TopicInfo fromLine(String line) {
            String[] parts = line.split(" ");
            if (parts.length != 4) {
                throw new IllegalArgumentException(line);
            }
            Map<String, String> configs = new LinkedHashMap<>();
            if (!parts[3].equals("-")) {
                for (String kv : parts[3].split("&")) {
                    int eq = kv.indexOf('=');
                    configs.put(URLDecoder.decode(kv.substring(0, eq), StandardCharsets.UTF_8),
                            URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8));
                }
            }
            return new TopicInfo(parts[0], Uuid.fromString(parts[1]), Integer.parseInt(parts[2]), configs);
        }
    };

    private final CheckpointFile<TopicInfo> file;
    private final LogConfig brokerDefaults;
    private final Map<String, TopicInfo> byName = new ConcurrentHashMap<>();
    private final Map<Uuid, TopicInfo> byId = new ConcurrentHashMap<>();

    private volatile long version;

    private TopicRegistry(LogConfig brokerDefaults) {
        this.file = null;
        this.brokerDefaults = brokerDefaults;
    }

    /** A registry fed from the cluster's metadata image ({@link #replaceAll}); nothing is written to disk. */
    public static TopicRegistry fromMetadata(LogConfig brokerDefaults) {
        return new TopicRegistry(brokerDefaults);
    }

    /**
     * Replaces every topic (cluster mode: the metadata image is the source of truth).
     *
     * @return the names of topics whose config overrides changed
     */
    public synchronized java.util.Set<String> replaceAll(Collection<TopicInfo> topics) {
        version++;
        java.util.Set<String> configChanged = new java.util.HashSet<>();
        Map<String, TopicInfo> next = new java.util.HashMap<>();
        for (TopicInfo t : topics) {
            next.put(t.name(), t);
            TopicInfo before = byName.get(t.name());
            if (before != null && !before.configs().equals(t.configs())) {
                configChanged.add(t.name());
            }
        }
        byName.keySet().removeIf(n -> !next.containsKey(n));
        byId.clear();
        byName.putAll(next);
        for (TopicInfo t : next.values()) {
            byId.put(t.id(), t);
        }
        return configChanged;
    }

    public TopicRegistry(File dir, LogConfig brokerDefaults) throws IOException {
        this.file = new CheckpointFile<>(new File(dir, FILE_NAME), FORMAT);
        this.brokerDefaults = brokerDefaults;
        for (TopicInfo t : file.read()) {
            byName.put(t.name(), t);
            byId.put(t.id(), t);
        }
    }

    /**
     * Grows whenever a topic may have been created, deleted or resized: a reader that cached what it
     * derived from the topics (a group's regex subscriptions) knows when to derive it again.
     */
    public long version() {
        return version;
    }

    public Optional<TopicInfo> get(String name) {
        return Optional.ofNullable(byName.get(name));
    }

    public Optional<TopicInfo> get(Uuid id) {
        return Optional.ofNullable(byId.get(id));
    }

    public Collection<TopicInfo> all() {
        return List.copyOf(byName.values());
    }

    /** The effective log settings of a topic: broker defaults plus its overrides. */
    public LogConfig logConfig(String topic) {
        TopicInfo t = byName.get(topic);
        return t == null || t.configs().isEmpty() ? brokerDefaults : brokerDefaults.with(t.configs());
    }

    public LogConfig brokerDefaults() {
        return brokerDefaults;
    }

    /**
     * Checks a new topic's name, partition count and configs without creating it.
     *
     * @throws org.apache.kafka.common.errors.InvalidTopicException for a bad name
     * @throws TopicExistsException when it exists
     */
    public void validateCreate(String name, int partitions, Map<String, String> configs) {
        Topic.validate(name);
        if (byName.containsKey(name)) {
            throw new TopicExistsException("Topic '" + name + "' already exists.");
        }
        if (Topic.hasCollisionChars(name)) {
            for (String other : byName.keySet()) {
                if (Topic.hasCollision(name, other)) {
                    throw new org.apache.kafka.common.errors.InvalidTopicException("Topic '" + name
                            + "' collides with existing topic '" + other + "' ('.' and '_' are equivalent in metric names)");
                }
            }
        }
        if (partitions < 1) {
            throw new InvalidPartitionsException("Number of partitions must be larger than 0.");
        }
        validateConfigs(configs);
    }

    /** Checks topic config overrides: known keys, valid values. */
    public void validateConfigs(Map<String, String> configs) {
        for (String key : configs.keySet()) {
            if (!TopicConfigs.isKnown(key)) {
                throw new InvalidConfigurationException("Unknown topic config name: " + key);
            }
        }
        try {
            brokerDefaults.with(TopicConfigs.logConfigKeys(configs));
        } catch (org.apache.kafka.common.config.ConfigException e) {
            throw new InvalidConfigurationException(e.getMessage());
        }
        TopicConfigs.validateOthers(configs);
    }

    public synchronized TopicInfo create(String name, int partitions, Map<String, String> configs) {
        version++;
        validateCreate(name, partitions, configs);
        TopicInfo t = new TopicInfo(name, Uuid.randomUuid(), partitions, configs);
        byName.put(name, t);
        byId.put(t.id(), t);
        persist();
        return t;
    }

    public synchronized TopicInfo delete(String name) {
        version++;
        TopicInfo t = byName.remove(name);
        if (t == null) {
            throw new UnknownTopicOrPartitionException("Topic '" + name + "' does not exist.");
        }
        byId.remove(t.id());
        persist();
        return t;
    }

    public synchronized TopicInfo setPartitions(String name, int partitions) {
        version++;
        TopicInfo t = existing(name);
        TopicInfo updated = new TopicInfo(name, t.id(), partitions, t.configs());
        replace(updated);
        return updated;
    }

    public synchronized TopicInfo setConfigs(String name, Map<String, String> configs) {
        TopicInfo t = existing(name);
        validateConfigs(configs);
        TopicInfo updated = new TopicInfo(name, t.id(), t.partitions(), configs);
        replace(updated);
        return updated;
    }

    private TopicInfo existing(String name) {
        TopicInfo t = byName.get(name);
        if (t == null) {
            throw new UnknownTopicOrPartitionException("Topic '" + name + "' does not exist.");
        }
        return t;
    }

    private void replace(TopicInfo t) {
        byName.put(t.name(), t);
        byId.put(t.id(), t);
        persist();
    }

    private void persist() {
        if (file == null) {
            return;
        }
        try {
            file.write(new ArrayList<>(new TreeMap<>(byName).values()));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file.file(), e);
        }
    }
}
