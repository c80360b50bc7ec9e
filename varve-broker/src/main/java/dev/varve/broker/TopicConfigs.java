package dev.varve.broker;

import dev.varve.storage.LogConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.InvalidConfigurationException;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The topic-level config keys Varve accepts: the storage engine's {@link LogConfig} keys, plus those
 * the broker interprets ({@code min.insync.replicas}, {@code unclean.leader.election.enable}, the
 * replication throttles) and two held to what Varve does: {@code preallocate} accepts only false (no
 * segment file is preallocated), and {@code message.downconversion.enable} either value, since no
 * fetch is ever down-converted (Fetch v4 and later only, as in Kafka 4, read v2 batches as stored).
 */
public final class TopicConfigs {
    /** Keys stored and described but not interpreted by the storage engine (yet). */
    static final Set<String> OTHER_KEYS = Set.of(
            TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG,
            TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG,
            TopicConfig.PREALLOCATE_CONFIG,
            TopicConfig.MESSAGE_DOWNCONVERSION_ENABLE_CONFIG,
            dev.varve.broker.cluster.ReplicationQuotas.LEADER_REPLICAS,
            dev.varve.broker.cluster.ReplicationQuotas.FOLLOWER_REPLICAS);

    /** Kafka's defaults for {@link #OTHER_KEYS}, as DescribeConfigs reports them. */
    static final Map<String, String> OTHER_DEFAULTS = Map.ofEntries(
            Map.entry(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, "1"),
            Map.entry(TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG, "false"),
            Map.entry(TopicConfig.PREALLOCATE_CONFIG, "false"),
            Map.entry(TopicConfig.MESSAGE_DOWNCONVERSION_ENABLE_CONFIG, "true"),
            Map.entry(dev.varve.broker.cluster.ReplicationQuotas.LEADER_REPLICAS, ""),
            Map.entry(dev.varve.broker.cluster.ReplicationQuotas.FOLLOWER_REPLICAS, ""));

    private TopicConfigs() {
    }

    public static boolean isKnown(String key) {
        return LogConfig.names().contains(key) || OTHER_KEYS.contains(key);
    }

    /** The subset of {@code configs} the storage engine interprets. */
    public static Map<String, String> logConfigKeys(Map<String, String> configs) {
        Map<String, String> out = new HashMap<>();
        configs.forEach((k, v) -> {
            if (LogConfig.names().contains(k)) {
                out.put(k, v);
            }
        });
        return out;
    }

    /** Checks the values of keys outside the storage engine's. */
    static void validateOthers(Map<String, String> configs) {
        for (String key : List.of(dev.varve.broker.cluster.ReplicationQuotas.LEADER_REPLICAS,
                dev.varve.broker.cluster.ReplicationQuotas.FOLLOWER_REPLICAS)) {
            String v = configs.get(key);
            if (v != null && !v.isBlank() && !v.trim().equals("*")
                    && !v.trim().matches("\\d+:\\d+(\\s*,\\s*\\d+:\\d+)*")) {
                throw new InvalidConfigurationException("Invalid value " + v + " for configuration " + key
                        + ": must be * or a list of partition:broker pairs");
            }
        }
        String preallocate = configs.get(TopicConfig.PREALLOCATE_CONFIG);
        if (preallocate != null && !preallocate.trim().equalsIgnoreCase("false")) {
            // Kafka preallocates segment files (for Windows file systems); Varve's recovery reads a
            // segment to its end, so zeros past the data would count as damage: refused, not ignored
            throw new InvalidConfigurationException("Invalid value " + preallocate + " for configuration "
                    + TopicConfig.PREALLOCATE_CONFIG + ": Varve does not preallocate segment files; only false is accepted");
        }
        String downconversion = configs.get(TopicConfig.MESSAGE_DOWNCONVERSION_ENABLE_CONFIG);
        if (downconversion != null && !downconversion.trim().equalsIgnoreCase("true")
                && !downconversion.trim().equalsIgnoreCase("false")) {
            throw new InvalidConfigurationException("Invalid value " + downconversion + " for configuration "
                    + TopicConfig.MESSAGE_DOWNCONVERSION_ENABLE_CONFIG + ": must be true or false");
        }
        String minIsr = configs.get(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG);
        if (minIsr != null) {
            try {
                if (Integer.parseInt(minIsr.trim()) < 1) {
                    throw new NumberFormatException();
                }
            } catch (NumberFormatException e) {
                throw new InvalidConfigurationException("Invalid value " + minIsr + " for configuration min.insync.replicas: must be at least 1");
            }
        }
    }

    /** Keys stored and described but not interpreted by the storage engine (yet). */
    public static Set<String> otherKeys() {
        return OTHER_KEYS;
    }

    /** Kafka's default of one of {@link #otherKeys()}, or null. */
    public static String otherDefault(String key) {
        return OTHER_DEFAULTS.get(key);
    }

    /**
     * The broker key whose value is the default of a topic key ({@code log.segment.bytes} for
     * {@code segment.bytes}), if Varve's broker configuration has one.
     */
    public static Optional<String> brokerSynonym(String topicKey) {
        if (topicKey.equals(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG)) {
            return Optional.of(BrokerConfig.MIN_INSYNC_REPLICAS);
        }
        return BrokerConfig.TOPIC_DEFAULTS.entrySet().stream()
                .filter(e -> e.getValue().equals(topicKey))
                .map(Map.Entry::getKey)
                .findFirst();
    }

    /** Broker key to topic key, for the broker-wide topic defaults ({@code log.segment.bytes}...). */
    public static Map<String, String> brokerDefaultKeys() {
        return BrokerConfig.TOPIC_DEFAULTS;
    }

    /** Whether a key holds a comma-separated list (IncrementalAlterConfigs APPEND/SUBTRACT apply). */
    public static boolean isList(String key) {
        return type(key) == ConfigDef.Type.LIST;
    }

    /** The value type of a known topic key, as DescribeConfigs reports it; null when unknown. */
    public static ConfigDef.Type type(String key) {
        switch (key) {
            case TopicConfig.SEGMENT_BYTES_CONFIG, TopicConfig.SEGMENT_INDEX_BYTES_CONFIG,
                 TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, TopicConfig.MAX_MESSAGE_BYTES_CONFIG,
                 TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG:
                return ConfigDef.Type.INT;
            case TopicConfig.SEGMENT_MS_CONFIG, TopicConfig.RETENTION_MS_CONFIG, TopicConfig.RETENTION_BYTES_CONFIG,
                 LogConfig.RETENTION_MESSAGES_CONFIG, TopicConfig.FLUSH_MESSAGES_INTERVAL_CONFIG,
                 TopicConfig.FLUSH_MS_CONFIG, TopicConfig.FILE_DELETE_DELAY_MS_CONFIG,
                 TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG, TopicConfig.MESSAGE_TIMESTAMP_AFTER_MAX_MS_CONFIG,
                 TopicConfig.DELETE_RETENTION_MS_CONFIG, TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG,
                 TopicConfig.MAX_COMPACTION_LAG_MS_CONFIG, TopicConfig.SEGMENT_JITTER_MS_CONFIG:
                return ConfigDef.Type.LONG;
            case TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, TopicConfig.COMPRESSION_TYPE_CONFIG:
                return ConfigDef.Type.STRING;
            case TopicConfig.CLEANUP_POLICY_CONFIG:
                return ConfigDef.Type.LIST;
            case TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG:
                return ConfigDef.Type.DOUBLE;
            case TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG, TopicConfig.PREALLOCATE_CONFIG,
                 TopicConfig.MESSAGE_DOWNCONVERSION_ENABLE_CONFIG:
                return ConfigDef.Type.BOOLEAN;
            default:
                return null;
        }
    }

    /** Kafka's documentation of a topic key (Varve's for {@code retention.messages}); null when unknown. */
    public static String documentation(String key) {
        switch (key) {
            case TopicConfig.SEGMENT_BYTES_CONFIG: return TopicConfig.SEGMENT_BYTES_DOC;
            case TopicConfig.SEGMENT_MS_CONFIG: return TopicConfig.SEGMENT_MS_DOC;
            case TopicConfig.SEGMENT_INDEX_BYTES_CONFIG: return TopicConfig.SEGMENT_INDEX_BYTES_DOC;
            case TopicConfig.INDEX_INTERVAL_BYTES_CONFIG: return TopicConfig.INDEX_INTERVAL_BYTES_DOC;
            case TopicConfig.RETENTION_MS_CONFIG: return TopicConfig.RETENTION_MS_DOC;
            case TopicConfig.RETENTION_BYTES_CONFIG: return TopicConfig.RETENTION_BYTES_DOC;
            case LogConfig.RETENTION_MESSAGES_CONFIG:
                return "Varve only: delete the oldest segments while more than this many offsets would remain; -1 for no limit.";
            case TopicConfig.FLUSH_MESSAGES_INTERVAL_CONFIG: return TopicConfig.FLUSH_MESSAGES_INTERVAL_DOC;
            case TopicConfig.FLUSH_MS_CONFIG: return TopicConfig.FLUSH_MS_DOC;
            case TopicConfig.MAX_MESSAGE_BYTES_CONFIG: return TopicConfig.MAX_MESSAGE_BYTES_DOC;
            case TopicConfig.FILE_DELETE_DELAY_MS_CONFIG: return TopicConfig.FILE_DELETE_DELAY_MS_DOC;
            case TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG: return TopicConfig.MESSAGE_TIMESTAMP_TYPE_DOC;
            case TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG: return TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_DOC;
            case TopicConfig.MESSAGE_TIMESTAMP_AFTER_MAX_MS_CONFIG: return TopicConfig.MESSAGE_TIMESTAMP_AFTER_MAX_MS_DOC;
            case TopicConfig.CLEANUP_POLICY_CONFIG: return TopicConfig.CLEANUP_POLICY_DOC;
            case TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG: return TopicConfig.MIN_IN_SYNC_REPLICAS_DOC;
            case TopicConfig.COMPRESSION_TYPE_CONFIG: return TopicConfig.COMPRESSION_TYPE_DOC;
            case TopicConfig.DELETE_RETENTION_MS_CONFIG: return TopicConfig.DELETE_RETENTION_MS_DOC;
            case TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG: return TopicConfig.MIN_COMPACTION_LAG_MS_DOC;
            case TopicConfig.MAX_COMPACTION_LAG_MS_CONFIG: return TopicConfig.MAX_COMPACTION_LAG_MS_DOC;
            case TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG: return TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_DOC;
            case TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG: return TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_DOC;
            case TopicConfig.SEGMENT_JITTER_MS_CONFIG: return TopicConfig.SEGMENT_JITTER_MS_DOC;
            case TopicConfig.PREALLOCATE_CONFIG: return TopicConfig.PREALLOCATE_DOC;
            case TopicConfig.MESSAGE_DOWNCONVERSION_ENABLE_CONFIG: return TopicConfig.MESSAGE_DOWNCONVERSION_ENABLE_DOC;
            default: return null;
        }
    }
}
