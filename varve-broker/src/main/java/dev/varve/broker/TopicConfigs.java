package dev.varve.broker;

import dev.varve.storage.LogConfig;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.InvalidConfigurationException;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * The topic-level config keys Varve accepts: the storage engine's {@link LogConfig} keys, plus a few
 * kept and reported for compatibility whose behaviour arrives with later features
 * ({@code cleanup.policy} with compaction, {@code min.insync.replicas} with replication).
 */
public final class TopicConfigs {
    /** Keys stored and described but not interpreted by the storage engine (yet). */
    static final Set<String> OTHER_KEYS = Set.of(
            TopicConfig.CLEANUP_POLICY_CONFIG,
            TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG,
            TopicConfig.COMPRESSION_TYPE_CONFIG,
            TopicConfig.DELETE_RETENTION_MS_CONFIG,
            TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG,
            TopicConfig.MAX_COMPACTION_LAG_MS_CONFIG,
            TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG,
            TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG,
            TopicConfig.SEGMENT_JITTER_MS_CONFIG,
            TopicConfig.PREALLOCATE_CONFIG,
            TopicConfig.MESSAGE_DOWNCONVERSION_ENABLE_CONFIG);

    /** Kafka's defaults for {@link #OTHER_KEYS}, as DescribeConfigs reports them. */
    static final Map<String, String> OTHER_DEFAULTS = Map.ofEntries(
            Map.entry(TopicConfig.CLEANUP_POLICY_CONFIG, "delete"),
            Map.entry(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, "1"),
            Map.entry(TopicConfig.COMPRESSION_TYPE_CONFIG, "producer"),
            Map.entry(TopicConfig.DELETE_RETENTION_MS_CONFIG, "86400000"),
            Map.entry(TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG, "0"),
            Map.entry(TopicConfig.MAX_COMPACTION_LAG_MS_CONFIG, "9223372036854775807"),
            Map.entry(TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG, "0.5"),
            Map.entry(TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG, "false"),
            Map.entry(TopicConfig.SEGMENT_JITTER_MS_CONFIG, "0"),
            Map.entry(TopicConfig.PREALLOCATE_CONFIG, "false"),
            Map.entry(TopicConfig.MESSAGE_DOWNCONVERSION_ENABLE_CONFIG, "true"));

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
        String policy = configs.get(TopicConfig.CLEANUP_POLICY_CONFIG);
        if (policy != null) {
            for (String p : policy.split(",")) {
                String v = p.trim();
                if (!v.equals("delete") && !v.equals("compact")) {
                    throw new InvalidConfigurationException("Invalid value " + policy + " for configuration cleanup.policy");
                }
            }
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
}
