package dev.varve.metadata;

import org.apache.kafka.clients.admin.AlterConfigOp.OpType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * Turns AlterConfigs and IncrementalAlterConfigs operations into the key changes
 * {@link ControllerLogic#alterConfigs} takes: against the resource's current dynamic configs, the keys
 * whose value changes, with null for a key that goes away. Pure functions; failures are
 * {@link org.apache.kafka.common.errors.ApiException}s naming the offending key.
 */
final class ConfigChanges {
    /**
     * Keys of list type ({@code APPEND}/{@code SUBTRACT} allowed) and the static default an operation
     * starts from when the resource has no value of its own: Kafka's topic keys of type LIST, and the
     * broker's {@code log.cleanup.policy}.
     */
    private static final Map<ConfigResource.Type, Map<String, String>> LIST_KEY_DEFAULTS = Map.of(
            ConfigResource.Type.TOPIC, Map.of(
                    TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_DELETE,
                    "leader.replication.throttled.replicas", "",
                    "follower.replication.throttled.replicas", ""),
            ConfigResource.Type.BROKER, Map.of("log.cleanup.policy", TopicConfig.CLEANUP_POLICY_DELETE));

    /** One IncrementalAlterConfigs operation; {@code op} is null when the request's code is unknown. */
    record Op(String key, OpType op, String value) {
    }

    private ConfigChanges() {
    }

    /**
     * IncrementalAlterConfigs: applies {@code ops} in order to {@code current}. A key may appear once;
     * SET, APPEND and SUBTRACT need a value; APPEND adds the listed items not yet present, SUBTRACT
     * removes them (an empty list stays set, as the empty string).
     */
    static Map<String, String> incremental(ConfigResource.Type type, Map<String, String> current, List<Op> ops) {
        Map<String, String> next = new HashMap<>(current);
        Set<String> seen = new HashSet<>();
        for (Op op : ops) {
            if (!seen.add(op.key())) {
                throw new InvalidRequestException("Duplicate config key in the request: " + op.key());
            }
            if (op.op() == null) {
                throw new InvalidRequestException("Unknown config operation for key " + op.key());
            }
            if (op.op() != OpType.DELETE && op.value() == null) {
                throw new InvalidRequestException("Null value not supported for " + op.op() + " of key " + op.key());
            }
            switch (op.op()) {
                case SET -> next.put(op.key(), op.value());
                case DELETE -> next.remove(op.key());
                case APPEND, SUBTRACT -> {
                    String defaultValue = LIST_KEY_DEFAULTS.getOrDefault(type, Map.of()).get(op.key());
                    if (defaultValue == null) {
                        throw new InvalidConfigurationException("Config key " + op.key()
                                + " is not a list: " + op.op() + " is not allowed");
                    }
                    List<String> items = split(next.getOrDefault(op.key(), defaultValue));
                    for (String item : split(op.value())) {
                        if (op.op() == OpType.SUBTRACT) {
                            items.removeIf(item::equals);
                        } else if (!items.contains(item)) {
                            items.add(item);
                        }
                    }
                    next.put(op.key(), String.join(",", items));
                }
            }
        }
        return diff(current, next);
    }

    /**
     * Legacy AlterConfigs: {@code wanted} replaces the resource's dynamic configs entirely, so keys it
     * does not list are deleted.
     */
    static Map<String, String> replacement(Map<String, String> current, Map<String, String> wanted) {
        wanted.forEach((k, v) -> {
            if (v == null) {
                throw new InvalidRequestException("Null value not supported for key " + k);
            }
        });
        return diff(current, wanted);
    }

    /** The keys whose value differs between {@code from} and {@code to}, with their new value (null: removed). */
    private static Map<String, String> diff(Map<String, String> from, Map<String, String> to) {
        Map<String, String> changes = new TreeMap<>();
        from.keySet().forEach(k -> {
            if (!to.containsKey(k)) {
                changes.put(k, null);
            }
        });
        to.forEach((k, v) -> {
            if (!Objects.equals(from.get(k), v)) {
                changes.put(k, v);
            }
        });
        return changes;
    }

    private static List<String> split(String list) {
        List<String> out = new ArrayList<>();
        for (String s : list.split(",")) {
            String item = s.trim();
            if (!item.isEmpty()) {
                out.add(item);
            }
        }
        return out;
    }
}
