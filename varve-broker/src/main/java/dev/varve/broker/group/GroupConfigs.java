package dev.varve.broker.group;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.InvalidConfigurationException;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Per-group configs (KIP-848 / KIP-932 group configs, Kafka's {@code GroupConfig}): the keys a group may
 * override, how an override set is validated, and each group's effective settings (its override, else
 * the broker's {@code group.*} value).
 *
 * <p>Varve accepts the keys it makes take effect: {@code consumer.session.timeout.ms} and
 * {@code consumer.heartbeat.interval.ms} (the KIP-848 coordinator's session timer and the interval its
 * heartbeat answers give), {@code share.session.timeout.ms} and {@code share.heartbeat.interval.ms}
 * (the same for share groups), {@code share.record.lock.duration.ms} (acquisition locks),
 * {@code share.auto.offset.reset} (where a share-partition without state starts) and
 * {@code share.isolation.level}. Keys of a protocol the broker does not offer
 * ({@code group.coordinator.rebalance.protocols}) and Kafka's other group keys (streams groups, dead-letter
 * queues, assignment intervals and offloading, {@code share.delivery.count.limit},
 * {@code share.partition.max.record.locks}, {@code share.renew.acknowledge.enable}) are refused with
 * INVALID_CONFIG rather than stored without effect; an unknown key is refused as Kafka refuses it.
 *
 * <p>Validation follows Kafka 4.4's {@code GroupConfig.validate}: only the keys set are checked; a value
 * must parse (type and the key's own validator), lie within the broker's bounds
 * ({@code group.consumer.min/max.*}, {@code group.share.min/max.*}), and a session timeout must exceed
 * the heartbeat interval, each taken from the overrides or else the broker's default.
 *
 * <p>Thread-safety: immutable apart from the overrides source, which is replaced atomically.
 */
public final class GroupConfigs {
    public static final String CONSUMER_SESSION_TIMEOUT_MS = "consumer.session.timeout.ms";
    public static final String CONSUMER_HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms";
    public static final String SHARE_SESSION_TIMEOUT_MS = "share.session.timeout.ms";
    public static final String SHARE_HEARTBEAT_INTERVAL_MS = "share.heartbeat.interval.ms";
    public static final String SHARE_RECORD_LOCK_DURATION_MS = "share.record.lock.duration.ms";
    public static final String SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset";
    public static final String SHARE_ISOLATION_LEVEL = "share.isolation.level";

    /** Kafka 4.4's other group config keys: Varve knows them, and refuses them. */
    static final Set<String> REFUSED = Set.of("consumer.assignment.interval.ms", "consumer.assignor.offload.enable",
            "share.delivery.count.limit", "share.partition.max.record.locks", "share.renew.acknowledge.enable",
            "share.assignment.interval.ms", "share.assignor.offload.enable", "streams.session.timeout.ms",
            "streams.heartbeat.interval.ms", "streams.num.standby.replicas", "streams.initial.rebalance.delay.ms",
            "streams.assignment.interval.ms", "streams.rack.aware.assignment.tags", "streams.assignor.offload.enable",
            "streams.task.offset.interval.ms", "streams.num.warmup.replicas", "streams.acceptable.recovery.lag",
            "streams.assignor.name", "errors.deadletterqueue.topic.name", "errors.deadletterqueue.copy.record.enable");

    /**
     * The broker's side: its defaults and the bounds an override must respect, under Kafka's broker keys,
     * and which group protocols it offers.
     */
    public record Broker(boolean consumerEnabled, boolean shareEnabled,
                         int consumerSessionTimeoutMs, int consumerMinSessionTimeoutMs, int consumerMaxSessionTimeoutMs,
                         int consumerHeartbeatIntervalMs, int consumerMinHeartbeatIntervalMs,
                         int consumerMaxHeartbeatIntervalMs,
                         int shareSessionTimeoutMs, int shareMinSessionTimeoutMs, int shareMaxSessionTimeoutMs,
                         int shareHeartbeatIntervalMs, int shareMinHeartbeatIntervalMs, int shareMaxHeartbeatIntervalMs,
                         int shareRecordLockDurationMs, int shareMinRecordLockDurationMs, int shareMaxRecordLockDurationMs) {
        /** Kafka's defaults, every protocol offered. */
        public static Broker defaults() {
            return new Broker(true, true, 45_000, 45_000, 60_000, 5_000, 5_000, 15_000,
                    45_000, 45_000, 60_000, 5_000, 5_000, 15_000, 30_000, 15_000, 60_000);
        }
    }

    /** One key a group may set: its type, the broker key it falls back to (null: the built-in default), its doc. */
    public record Key(String name, ConfigDef.Type type, String brokerSynonym, String defaultValue, String documentation,
                      boolean share) {
    }

    private static final String RESET_DOC = "The strategy to initialize the share-partition start offset: earliest, "
            + "latest, or by_duration:<ISO-8601 duration> (the first offset written at most that long ago).";
    private static final String ISOLATION_DOC = "Controls how to read records written transactionally: read_committed "
            + "delivers only committed transactional records, read_uncommitted all of them.";

    /** The keys Varve accepts, in name order. */
    public static final List<Key> KEYS = List.of(
            new Key(CONSUMER_HEARTBEAT_INTERVAL_MS, ConfigDef.Type.INT, "group.consumer.heartbeat.interval.ms", null,
                    "The heartbeat interval given to the members of this consumer group.", false),
            new Key(CONSUMER_SESSION_TIMEOUT_MS, ConfigDef.Type.INT, "group.consumer.session.timeout.ms", null,
                    "The timeout to detect client failures when using the consumer group protocol.", false),
            new Key(SHARE_AUTO_OFFSET_RESET, ConfigDef.Type.STRING, null, "latest", RESET_DOC, true),
            new Key(SHARE_HEARTBEAT_INTERVAL_MS, ConfigDef.Type.INT, "group.share.heartbeat.interval.ms", null,
                    "The heartbeat interval given to the members of this share group.", true),
            new Key(SHARE_ISOLATION_LEVEL, ConfigDef.Type.STRING, null, "read_uncommitted", ISOLATION_DOC, true),
            new Key(SHARE_RECORD_LOCK_DURATION_MS, ConfigDef.Type.INT, "group.share.record.lock.duration.ms", null,
                    "The record acquisition lock duration in milliseconds for this share group.", true),
            new Key(SHARE_SESSION_TIMEOUT_MS, ConfigDef.Type.INT, "group.share.session.timeout.ms", null,
                    "The timeout to detect client failures when using the share group protocol.", true));

    private static final Map<String, Key> BY_NAME = new HashMap<>();

    static {
        KEYS.forEach(k -> BY_NAME.put(k.name(), k));
    }

    /** The value checks Kafka's ConfigDef makes before the broker's bounds. */
    private static final ConfigDef DEF = new ConfigDef()
            .define(CONSUMER_SESSION_TIMEOUT_MS, ConfigDef.Type.INT, 45_000, ConfigDef.Range.atLeast(1),
                    ConfigDef.Importance.MEDIUM, "")
            .define(CONSUMER_HEARTBEAT_INTERVAL_MS, ConfigDef.Type.INT, 5_000, ConfigDef.Range.atLeast(1),
                    ConfigDef.Importance.MEDIUM, "")
            .define(SHARE_SESSION_TIMEOUT_MS, ConfigDef.Type.INT, 45_000, ConfigDef.Range.atLeast(1),
                    ConfigDef.Importance.MEDIUM, "")
            .define(SHARE_HEARTBEAT_INTERVAL_MS, ConfigDef.Type.INT, 5_000, ConfigDef.Range.atLeast(1),
                    ConfigDef.Importance.MEDIUM, "")
            .define(SHARE_RECORD_LOCK_DURATION_MS, ConfigDef.Type.INT, 30_000, ConfigDef.Range.atLeast(1000),
                    ConfigDef.Importance.MEDIUM, "")
            .define(SHARE_AUTO_OFFSET_RESET, ConfigDef.Type.STRING, "latest", (name, value) -> {
                if (value != null && !validReset((String) value)) {
                    throw new ConfigException(name, value, "Invalid value `" + value + "` for configuration " + name
                            + ". The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.");
                }
            }, ConfigDef.Importance.MEDIUM, "")
            .define(SHARE_ISOLATION_LEVEL, ConfigDef.Type.STRING, "read_uncommitted",
                    ConfigDef.ValidString.in("read_committed", "read_uncommitted"), ConfigDef.Importance.MEDIUM, "");

    private final Broker broker;
    private volatile Function<String, Map<String, String>> overrides = g -> Map.of();

    public GroupConfigs(Broker broker) {
        this.broker = broker;
    }

    public Broker broker() {
        return broker;
    }

    /** Where each group's overrides come from (the single node's store, or the cluster's metadata image). */
    public void setOverrides(Function<String, Map<String, String>> overrides) {
        this.overrides = overrides;
    }

    /** The group's overrides (empty when it has none). */
    public Map<String, String> overrides(String groupId) {
        Map<String, String> o = overrides.apply(groupId);
        return o == null ? Map.of() : o;
    }

    /** The keys Varve accepts, null when {@code name} is not one. */
    public static Key key(String name) {
        return BY_NAME.get(name);
    }

    /** Whether this broker offers the protocol the key belongs to (share groups, or consumer groups). */
    public boolean offered(Key key) {
        return key.share() ? broker.shareEnabled() : broker.consumerEnabled();
    }

    /** The value of {@code key} when the group does not override it: the broker's, or the built-in default. */
    public String brokerValue(Key key) {
        return switch (key.name()) {
            case CONSUMER_SESSION_TIMEOUT_MS -> Integer.toString(broker.consumerSessionTimeoutMs());
            case CONSUMER_HEARTBEAT_INTERVAL_MS -> Integer.toString(broker.consumerHeartbeatIntervalMs());
            case SHARE_SESSION_TIMEOUT_MS -> Integer.toString(broker.shareSessionTimeoutMs());
            case SHARE_HEARTBEAT_INTERVAL_MS -> Integer.toString(broker.shareHeartbeatIntervalMs());
            case SHARE_RECORD_LOCK_DURATION_MS -> Integer.toString(broker.shareRecordLockDurationMs());
            default -> key.defaultValue();
        };
    }

    // ---------------------------------------------------------------- validation

    /**
     * Checks a group's complete overrides (after a change), as Kafka does; the first problem wins.
     *
     * @throws InvalidConfigurationException naming the key (INVALID_CONFIG)
     */
    public void validate(Map<String, String> configs) {
        for (String name : configs.keySet()) {
            if (REFUSED.contains(name)) {
                throw new InvalidConfigurationException("Group config " + name + " is not supported by Varve: "
                        + "it would have no effect here.");
            }
            Key key = BY_NAME.get(name);
            if (key == null) {
                throw new InvalidConfigurationException("Unknown group config name: " + name);
            }
            if (!offered(key)) {
                throw new InvalidConfigurationException("Group config " + name + " has no effect: this broker does not "
                        + "offer " + (key.share() ? "share" : "consumer") + " groups (group.coordinator.rebalance.protocols).");
            }
        }
        Map<String, Object> parsed;
        try {
            Map<String, Object> only = new HashMap<>(configs);
            parsed = new HashMap<>(DEF.parse(only));
        } catch (ConfigException e) {
            throw new InvalidConfigurationException(e.getMessage());
        }
        parsed.keySet().retainAll(configs.keySet());
        range(parsed, CONSUMER_HEARTBEAT_INTERVAL_MS, broker.consumerMinHeartbeatIntervalMs(), broker.consumerMaxHeartbeatIntervalMs());
        range(parsed, CONSUMER_SESSION_TIMEOUT_MS, broker.consumerMinSessionTimeoutMs(), broker.consumerMaxSessionTimeoutMs());
        range(parsed, SHARE_HEARTBEAT_INTERVAL_MS, broker.shareMinHeartbeatIntervalMs(), broker.shareMaxHeartbeatIntervalMs());
        range(parsed, SHARE_SESSION_TIMEOUT_MS, broker.shareMinSessionTimeoutMs(), broker.shareMaxSessionTimeoutMs());
        range(parsed, SHARE_RECORD_LOCK_DURATION_MS, broker.shareMinRecordLockDurationMs(), broker.shareMaxRecordLockDurationMs());
        sessionExceedsHeartbeat(parsed, CONSUMER_SESSION_TIMEOUT_MS, broker.consumerSessionTimeoutMs(),
                CONSUMER_HEARTBEAT_INTERVAL_MS, broker.consumerHeartbeatIntervalMs());
        sessionExceedsHeartbeat(parsed, SHARE_SESSION_TIMEOUT_MS, broker.shareSessionTimeoutMs(),
                SHARE_HEARTBEAT_INTERVAL_MS, broker.shareHeartbeatIntervalMs());
    }

    private static void range(Map<String, Object> parsed, String key, int min, int max) {
        Object v = parsed.get(key);
        if (v != null && ((Integer) v < min || (Integer) v > max)) {
            throw new InvalidConfigurationException(key + " must be in the range " + min + " to " + max + " inclusive.");
        }
    }

    private static void sessionExceedsHeartbeat(Map<String, Object> parsed, String sessionKey, int sessionDefault,
                                                String heartbeatKey, int heartbeatDefault) {
        if (!parsed.containsKey(sessionKey) && !parsed.containsKey(heartbeatKey)) {
            return;
        }
        int session = parsed.containsKey(sessionKey) ? (Integer) parsed.get(sessionKey) : sessionDefault;
        int heartbeat = parsed.containsKey(heartbeatKey) ? (Integer) parsed.get(heartbeatKey) : heartbeatDefault;
        if (session <= heartbeat) {
            throw new InvalidConfigurationException(sessionKey + " must be greater than " + heartbeatKey);
        }
    }

    /** earliest, latest, or by_duration: and a non-negative ISO-8601 duration (Kafka's ShareGroupAutoOffsetReset rules). */
    static boolean validReset(String value) {
        if (value.equals("earliest") || value.equals("latest")) {
            return true;
        }
        if (!value.startsWith("by_duration:")) {
            return false;
        }
        try {
            return !Duration.parse(value.substring("by_duration:".length())).isNegative();
        } catch (DateTimeParseException e) {
            return false;
        }
    }

    // ---------------------------------------------------------------- effective settings

    public int consumerSessionTimeoutMs(String groupId) {
        return intOr(groupId, CONSUMER_SESSION_TIMEOUT_MS, broker.consumerSessionTimeoutMs());
    }

    public int consumerHeartbeatIntervalMs(String groupId) {
        return intOr(groupId, CONSUMER_HEARTBEAT_INTERVAL_MS, broker.consumerHeartbeatIntervalMs());
    }

    public int shareSessionTimeoutMs(String groupId) {
        return intOr(groupId, SHARE_SESSION_TIMEOUT_MS, broker.shareSessionTimeoutMs());
    }

    public int shareHeartbeatIntervalMs(String groupId) {
        return intOr(groupId, SHARE_HEARTBEAT_INTERVAL_MS, broker.shareHeartbeatIntervalMs());
    }

    public int shareRecordLockDurationMs(String groupId) {
        return intOr(groupId, SHARE_RECORD_LOCK_DURATION_MS, broker.shareRecordLockDurationMs());
    }

    public String shareAutoOffsetReset(String groupId) {
        return overrides(groupId).getOrDefault(SHARE_AUTO_OFFSET_RESET, "latest");
    }

    public boolean shareReadCommitted(String groupId) {
        return "read_committed".equals(overrides(groupId).get(SHARE_ISOLATION_LEVEL));
    }

    /**
     * The override when it parses, else the broker's value: an override was validated when it was set, but
     * the broker's bounds may have changed since (a restart with another properties file); a value that no
     * longer parses falls back rather than failing the group.
     */
    private int intOr(String groupId, String key, int brokerValue) {
        String v = overrides(groupId).get(key);
        if (v == null) {
            return brokerValue;
        }
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            return brokerValue;
        }
    }
}
