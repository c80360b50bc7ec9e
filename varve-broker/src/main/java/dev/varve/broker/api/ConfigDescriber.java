package dev.varve.broker.api;

import dev.varve.broker.BrokerConfig;
import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicConfigs;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.storage.LogConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.requests.DescribeConfigsResponse.ConfigSource;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The configuration entries DescribeConfigs reports, with their sources and synonyms, Kafka-style:
 * the first synonym is where the value comes from, the following ones what it would fall back to.
 *
 * <p>Topics: every key the storage engine's {@link LogConfig} knows plus {@link TopicConfigs#otherKeys()}.
 * An override is DYNAMIC_TOPIC_CONFIG (synonym: the topic key); otherwise the broker-wide default
 * ({@code log.segment.bytes} for {@code segment.bytes}), STATIC_BROKER_CONFIG when the broker's
 * file sets a value different from the built-in default, DEFAULT_CONFIG otherwise. A broker file that
 * sets a key to exactly its default therefore shows DEFAULT_CONFIG: Varve's {@link BrokerConfig} does
 * not remember which keys were written, and the value is the same either way.
 *
 * <p>The broker: the keys of {@link BrokerConfig} with their values (the advertised listeners with
 * ports configured as 0 resolved), STATIC_BROKER_CONFIG or DEFAULT_CONFIG by the same rule, all
 * read-only since dynamic broker configs are not supported.
 */
final class ConfigDescriber {
    record Synonym(String name, String value, ConfigSource source) {
    }

    record Entry(String name, String value, ConfigSource source, boolean readOnly, ConfigDef.Type type,
                 String documentation, List<Synonym> synonyms) {
    }

    private static final BrokerConfig BUILT_IN = BrokerConfig.defaults();
    private static final Map<String, Object> BUILT_IN_LOG = LogConfig.DEFAULT.toMap();

    private final BrokerContext broker;
    /** The broker-wide topic defaults; fixed for the broker's life (no dynamic broker configs). */
    private final Map<String, Object> brokerLog;

    ConfigDescriber(BrokerContext broker) {
        this.broker = broker;
        this.brokerLog = broker.topics().brokerDefaults().toMap();
    }

    /** Every topic key Varve accepts, sorted. */
    static TreeSet<String> topicKeys() {
        TreeSet<String> keys = new TreeSet<>(LogConfig.names());
        keys.addAll(TopicConfigs.otherKeys());
        return keys;
    }

    /** A topic's entries, sorted by key. */
    List<Entry> topic(TopicInfo t) {
        List<Entry> out = new ArrayList<>();
        for (String key : topicKeys()) {
            List<Synonym> synonyms = new ArrayList<>();
            String override = t.configs().get(key);
            if (override != null) {
                synonyms.add(new Synonym(key, override, ConfigSource.TOPIC_CONFIG));
            }
            synonyms.addAll(brokerLevel(key));
            Synonym first = synonyms.get(0);
            out.add(new Entry(key, first.value(), first.source(), false, TopicConfigs.type(key),
                    TopicConfigs.documentation(key), synonyms));
        }
        return out;
    }

    /** The value a topic key has when the topic does not override it. */
    String topicDefault(String key) {
        return brokerLevel(key).get(0).value();
    }

    /** A topic key's broker-level synonyms: the broker file's value (if it differs), the built-in default. */
    private List<Synonym> brokerLevel(String key) {
        String brokerValue;
        String builtIn;
        if (LogConfig.names().contains(key)) {
            brokerValue = str(brokerLog.get(key));
            builtIn = str(BUILT_IN_LOG.get(key));
        } else if (key.equals(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG)) {
            brokerValue = str(broker.config().minInsyncReplicas());
            builtIn = str(BUILT_IN.minInsyncReplicas());
        } else {
            brokerValue = TopicConfigs.otherDefault(key);
            builtIn = brokerValue;
        }
        String name = TopicConfigs.brokerSynonym(key).orElse(key);
        List<Synonym> out = new ArrayList<>(2);
        if (!Objects.equals(brokerValue, builtIn)) {
            out.add(new Synonym(name, brokerValue, ConfigSource.STATIC_BROKER_CONFIG));
        }
        out.add(new Synonym(name, builtIn, ConfigSource.DEFAULT_CONFIG));
        return out;
    }

    /**
     * A group's entries (Kafka 4.4's answer for the keys Varve accepts), sorted by key: an override is
     * DYNAMIC_GROUP_CONFIG (synonym: the group key), followed by the broker level: the broker's
     * {@code group.*} key, STATIC_BROKER_CONFIG when its file sets a value other than the built-in
     * default, DEFAULT_CONFIG otherwise; a key without a broker key ({@code share.auto.offset.reset},
     * {@code share.isolation.level}) falls back to its own default. Keys of a protocol this broker does
     * not offer are not listed (they cannot be set).
     */
    List<Entry> group(Map<String, String> overrides) {
        dev.varve.broker.group.GroupConfigs groups = broker.groupConfigs();
        dev.varve.broker.group.GroupConfigs builtIn = new dev.varve.broker.group.GroupConfigs(
                BUILT_IN.groupConfigDefaults());
        List<Entry> out = new ArrayList<>();
        for (dev.varve.broker.group.GroupConfigs.Key key : dev.varve.broker.group.GroupConfigs.KEYS) {
            if (!groups.offered(key)) {
                continue;
            }
            List<Synonym> synonyms = new ArrayList<>();
            String override = overrides.get(key.name());
            if (override != null) {
                synonyms.add(new Synonym(key.name(), override, ConfigSource.GROUP_CONFIG));
            }
            String brokerValue = groups.brokerValue(key);
            String defaultValue = builtIn.brokerValue(key);
            String synonym = key.brokerSynonym() != null ? key.brokerSynonym() : key.name();
            if (!Objects.equals(brokerValue, defaultValue)) {
                synonyms.add(new Synonym(synonym, brokerValue, ConfigSource.STATIC_BROKER_CONFIG));
            }
            synonyms.add(new Synonym(synonym, defaultValue, ConfigSource.DEFAULT_CONFIG));
            Synonym first = synonyms.get(0);
            out.add(new Entry(key.name(), first.value(), first.source(), false, key.type(), key.documentation(), synonyms));
        }
        return out;
    }

    /** This broker's entries, sorted by key. */
    List<Entry> broker() {
        BrokerConfig c = broker.config();
        List<Entry> out = new ArrayList<>();
        add(out, BrokerConfig.NODE_ID, str(c.nodeId()), str(BUILT_IN.nodeId()), ConfigDef.Type.INT, null);
        add(out, BrokerConfig.LISTENERS, endpoints(c.listeners()), endpoints(BUILT_IN.listeners()), ConfigDef.Type.LIST, null);
        add(out, BrokerConfig.ADVERTISED_LISTENERS, endpoints(broker.advertisedEndpoints()),
                endpoints(BUILT_IN.advertisedListeners()), ConfigDef.Type.LIST, null);
        add(out, BrokerConfig.LOG_DIRS, dirs(c.logDirs()), dirs(BUILT_IN.logDirs()), ConfigDef.Type.LIST, null);
        add(out, BrokerConfig.NUM_PARTITIONS, str(c.numPartitions()), str(BUILT_IN.numPartitions()), ConfigDef.Type.INT, null);
        add(out, BrokerConfig.DEFAULT_REPLICATION_FACTOR, str(c.defaultReplicationFactor()),
                str(BUILT_IN.defaultReplicationFactor()), ConfigDef.Type.INT, null);
        add(out, BrokerConfig.AUTO_CREATE_TOPICS, str(c.autoCreateTopics()), str(BUILT_IN.autoCreateTopics()),
                ConfigDef.Type.BOOLEAN, null);
        add(out, BrokerConfig.DELETE_TOPIC_ENABLE, str(c.deleteTopicEnable()), str(BUILT_IN.deleteTopicEnable()),
                ConfigDef.Type.BOOLEAN, null);
        add(out, BrokerConfig.SOCKET_REQUEST_MAX_BYTES, str(c.socketRequestMaxBytes()), str(BUILT_IN.socketRequestMaxBytes()),
                ConfigDef.Type.INT, null);
        add(out, BrokerConfig.QUEUED_MAX_REQUEST_BYTES, str(c.longValue(BrokerConfig.QUEUED_MAX_REQUEST_BYTES)),
                str(BUILT_IN.longValue(BrokerConfig.QUEUED_MAX_REQUEST_BYTES)), ConfigDef.Type.LONG, null);
        add(out, BrokerConfig.NUM_IO_THREADS, str(c.numIoThreads()), str(BUILT_IN.numIoThreads()), ConfigDef.Type.INT, null);
        add(out, BrokerConfig.NUM_NETWORK_THREADS, str(c.numNetworkThreads()), str(BUILT_IN.numNetworkThreads()),
                ConfigDef.Type.INT, null);
        add(out, BrokerConfig.BROKER_RACK, c.rack(), BUILT_IN.rack(), ConfigDef.Type.STRING, null);
        add(out, BrokerConfig.MIN_INSYNC_REPLICAS, str(c.minInsyncReplicas()), str(BUILT_IN.minInsyncReplicas()),
                ConfigDef.Type.INT, TopicConfig.MIN_IN_SYNC_REPLICAS_DOC);
        for (String key : List.of(BrokerConfig.RETENTION_CHECK_INTERVAL_MS, BrokerConfig.FLUSH_SCHEDULER_INTERVAL_MS,
                BrokerConfig.FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS, BrokerConfig.FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS,
                BrokerConfig.HW_CHECKPOINT_INTERVAL_MS)) {
            add(out, key, str(c.longValue(key)), str(BUILT_IN.longValue(key)), ConfigDef.Type.LONG, null);
        }
        TopicConfigs.brokerDefaultKeys().forEach((brokerKey, topicKey) -> add(out, brokerKey,
                str(brokerLog.get(topicKey)), str(BUILT_IN_LOG.get(topicKey)), TopicConfigs.type(topicKey),
                "Broker-wide default of topic setting " + topicKey + ". " + Optional.ofNullable(
                        TopicConfigs.documentation(topicKey)).orElse("")));
        out.sort((a, b) -> a.name().compareTo(b.name()));
        return out;
    }

    private static void add(List<Entry> out, String key, String value, String builtIn, ConfigDef.Type type, String doc) {
        List<Synonym> synonyms = new ArrayList<>(2);
        if (!Objects.equals(value, builtIn)) {
            synonyms.add(new Synonym(key, value, ConfigSource.STATIC_BROKER_CONFIG));
        }
        synonyms.add(new Synonym(key, builtIn, ConfigSource.DEFAULT_CONFIG));
        out.add(new Entry(key, value, synonyms.get(0).source(), true, type, doc, synonyms));
    }

    private static String str(Object v) {
        return v == null ? null : String.valueOf(v);
    }

    private static String endpoints(List<BrokerConfig.Endpoint> endpoints) {
        return endpoints.stream()
                .map(e -> e.listenerName() + "://" + (e.host().contains(":") ? "[" + e.host() + "]" : e.host()) + ":" + e.port())
                .collect(Collectors.joining(","));
    }

    private static String dirs(List<File> dirs) {
        return dirs.stream().map(File::getPath).collect(Collectors.joining(","));
    }
}
