package dev.varve.broker.api;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.requests.DescribeConfigsResponse;

import java.util.ArrayList;
import java.util.Collection;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;

/** What the config APIs (Describe, Alter, IncrementalAlter) share about resources. */
final class ConfigResources {
    private ConfigResources() {
    }

    /**
     * Accepts this node's id, or the empty name (Kafka's cluster-wide broker default).
     *
     * @throws InvalidRequestException for any other name
     */
    static void checkBrokerName(String name, int nodeId) {
        if (!name.isEmpty() && !name.equals(Integer.toString(nodeId))) {
            throw new InvalidRequestException("Unexpected broker id, expected " + nodeId
                    + " or empty string, but received " + name);
        }
    }

    static InvalidRequestException unsupportedType(byte type) {
        ConfigResource.Type t = ConfigResource.Type.forId(type);
        return new InvalidRequestException("Unsupported resource type " + (t == ConfigResource.Type.UNKNOWN ? type : t)
                + ": Varve describes and alters TOPIC and GROUP configs and describes BROKER configs.");
    }

    /** Kafka's answer for the empty group name: there are no cluster-wide group defaults to alter. */
    static void checkGroupName(String name, boolean describe) {
        if (name == null || name.isEmpty()) {
            throw new InvalidRequestException(describe ? "Group name must not be empty"
                    : "Default group resources are not allowed.");
        }
    }

    /**
     * The GROUP branch of both alter APIs on a single node: the group's overrides after {@code change},
     * validated whole ({@link dev.varve.broker.group.GroupConfigs#validate}), then (unless validating only)
     * on disk before the answer. A group need not exist to have configs, as in Kafka.
     */
    static void alterGroupConfigs(dev.varve.broker.BrokerContext broker, String name,
                                  java.util.function.UnaryOperator<java.util.Map<String, String>> change,
                                  boolean validateOnly) {
        checkGroupName(name, false);
        dev.varve.broker.LocalGroupConfigStore store = broker.groupConfigStore();
        if (store == null) {
            throw new IllegalStateException("group configs of a cluster are changed by the controller");
        }
        store.alter(name, change, broker.groupConfigs()::validate, validateOnly);
    }

    static InvalidRequestException brokerAlterUnsupported() {
        return new InvalidRequestException("Dynamic broker configs are not supported yet: "
                + "change the broker's properties file and restart it.");
    }

    /**
     * The per-resource loop of AlterConfigs and IncrementalAlterConfigs: alters each resource in
     * request order and reports each outcome to {@code respond}. A resource named twice in the
     * request is refused (INVALID_REQUEST) without being altered; any other failure is that
     * resource's own error.
     */
    static <R> void alterEach(Collection<R> resources, Function<R, Byte> type, Function<R, String> name,
                              Consumer<R> alter, BiConsumer<R, ApiError> respond) {
        Set<List<Object>> duplicates = duplicates(resources, type, name);
        for (R resource : resources) {
            ApiError error;
            if (duplicates.contains(key(type.apply(resource), name.apply(resource)))) {
                error = new ApiError(Errors.INVALID_REQUEST, "Duplicate resource " + name.apply(resource) + ".");
            } else {
                try {
                    alter.accept(resource);
                    error = ApiError.NONE;
                } catch (RuntimeException e) {
                    error = ApiError.fromThrowable(e);
                }
            }
            respond.accept(resource, error);
        }
    }

    /**
     * The BROKER branch of both alter APIs: only this node (or the cluster-wide empty name), and no
     * actual change, since dynamic broker configs are not supported.
     */
    static void checkBrokerAlter(String name, int nodeId, boolean hasChanges) {
        checkBrokerName(name, nodeId);
        if (hasChanges) {
            throw brokerAlterUnsupported();
        }
    }

    /** Resources named more than once in one request (type and name), which Kafka refuses as a whole. */
    private static <R> Set<List<Object>> duplicates(Iterable<R> resources, Function<R, Byte> type, Function<R, String> name) {
        Set<List<Object>> seen = new HashSet<>();
        Set<List<Object>> dups = new HashSet<>();
        for (R r : resources) {
            List<Object> key = key(type.apply(r), name.apply(r));
            if (!seen.add(key)) {
                dups.add(key);
            }
        }
        return dups;
    }

    private static List<Object> key(byte type, String name) {
        List<Object> key = new ArrayList<>(2);
        key.add(type);
        key.add(Objects.requireNonNullElse(name, ""));
        return key;
    }

    static DescribeConfigsResponse.ConfigType configType(ConfigDef.Type type) {
        if (type == null) {
            return DescribeConfigsResponse.ConfigType.UNKNOWN;
        }
        switch (type) {
            case BOOLEAN: return DescribeConfigsResponse.ConfigType.BOOLEAN;
            case STRING: return DescribeConfigsResponse.ConfigType.STRING;
            case INT: return DescribeConfigsResponse.ConfigType.INT;
            case SHORT: return DescribeConfigsResponse.ConfigType.SHORT;
            case LONG: return DescribeConfigsResponse.ConfigType.LONG;
            case DOUBLE: return DescribeConfigsResponse.ConfigType.DOUBLE;
            case LIST: return DescribeConfigsResponse.ConfigType.LIST;
            case CLASS: return DescribeConfigsResponse.ConfigType.CLASS;
            case PASSWORD: return DescribeConfigsResponse.ConfigType.PASSWORD;
            default: return DescribeConfigsResponse.ConfigType.UNKNOWN;
        }
    }
}
