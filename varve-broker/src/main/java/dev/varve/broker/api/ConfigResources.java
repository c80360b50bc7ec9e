package dev.varve.broker.api;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.requests.DescribeConfigsResponse;

import java.util.ArrayList;
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
                + ": Varve describes and alters TOPIC configs and describes BROKER configs.");
    }

    static InvalidRequestException brokerAlterUnsupported() {
        return new InvalidRequestException("Dynamic broker configs are not supported yet: "
                + "change the broker's properties file and restart it.");
    }

    /** Resources named more than once in one request (type and name), which Kafka refuses as a whole. */
    static <R> Set<List<Object>> duplicates(Iterable<R> resources, Function<R, Byte> type, Function<R, String> name) {
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

    static List<Object> key(byte type, String name) {
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
