package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicConfigs;
import dev.varve.broker.security.ListenerSecurity;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData.AlterConfigsResource;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData.AlterableConfig;
import org.apache.kafka.common.message.IncrementalAlterConfigsResponseData;
import org.apache.kafka.common.message.IncrementalAlterConfigsResponseData.AlterConfigsResourceResponse;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.IncrementalAlterConfigsRequest;
import org.apache.kafka.common.requests.IncrementalAlterConfigsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * IncrementalAlterConfigs for topics (validate-only too): SET and DELETE any known key; APPEND and
 * SUBTRACT list keys ({@code cleanup.policy}), starting from the topic's current value or, without
 * an override, the default. Operations apply in request order; the result is validated as a whole
 * (unknown key or bad value: INVALID_CONFIG naming the key), persisted in the topic registry and
 * applied to the topic's open logs. Nothing changes when any operation of a resource fails.
 *
 * <p>Errors per resource: an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION; a key named twice, a
 * null value for SET/APPEND/SUBTRACT, an unknown operation, or a resource named twice in the request
 * get INVALID_REQUEST. Broker resources: an empty change is accepted; on this node's id, SET and
 * DELETE of listeners' keystore and truststore settings change them without a restart (KIP-226,
 * {@link dev.varve.broker.security.DynamicTls}; refused stores: INVALID_CONFIG); anything else gets
 * INVALID_REQUEST (other dynamic broker configs are not supported on a single node); another node's id
 * gets INVALID_REQUEST. Groups (KIP-848/932 group configs): SET and DELETE of the keys
 * {@link dev.varve.broker.group.GroupConfigs} accepts, validated whole (INVALID_CONFIG naming the key), on
 * disk in {@link dev.varve.broker.LocalGroupConfigStore} before the answer; the group need not exist; the
 * empty name gets INVALID_REQUEST. Other resource types get INVALID_REQUEST.
 */
public final class IncrementalAlterConfigsHandler extends AllVersionsHandler {
    private final BrokerContext broker;
    private final ConfigDescriber describer;

    public IncrementalAlterConfigsHandler(BrokerContext broker) {
        super(ApiKeys.INCREMENTAL_ALTER_CONFIGS);
        this.broker = broker;
        this.describer = new ConfigDescriber(broker);
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        IncrementalAlterConfigsRequestData data = ((IncrementalAlterConfigsRequest) request).data();
        IncrementalAlterConfigsResponseData response = new IncrementalAlterConfigsResponseData();
        ConfigResources.alterEach(data.resources(), AlterConfigsResource::resourceType,
                AlterConfigsResource::resourceName, resource -> alter(resource, data.validateOnly()),
                (resource, error) -> response.responses().add(new AlterConfigsResourceResponse()
                        .setResourceType(resource.resourceType()).setResourceName(resource.resourceName())
                        .setErrorCode(error.error().code()).setErrorMessage(error.message())));
        return CompletableFuture.completedFuture(new IncrementalAlterConfigsResponse(response));
    }

    private void alter(AlterConfigsResource resource, boolean validateOnly) {
        String name = resource.resourceName();
        switch (ConfigResource.Type.forId(resource.resourceType())) {
            case TOPIC: {
                List<AlterableConfig> ops = new ArrayList<>(resource.configs());
                Set<String> keys = new HashSet<>();
                for (AlterableConfig c : ops) {
                    if (!keys.add(c.name())) {
                        throw new InvalidRequestException("Error due to duplicate config keys: " + c.name());
                    }
                }
                broker.alterTopicConfigs(name, current -> apply(ops, current), validateOnly);
                return;
            }
            case GROUP:
                ConfigResources.alterGroupConfigs(broker, name, current -> applyToGroup(resource.configs(), current),
                        validateOnly);
                return;
            case BROKER:
                if (!resource.configs().isEmpty() && name.equals(Integer.toString(broker.nodeId()))
                        && resource.configs().stream().allMatch(c -> ListenerSecurity.isDynamicTlsKey(c.name()))) {
                    // KIP-226: a listener's keystore or truststore, changed without a restart
                    Map<String, String> changes = new java.util.LinkedHashMap<>();
                    for (AlterableConfig c : resource.configs()) {
                        AlterConfigOp.OpType op = AlterConfigOp.OpType.forId(c.configOperation());
                        if (op != AlterConfigOp.OpType.SET && op != AlterConfigOp.OpType.DELETE) {
                            throw new InvalidRequestException(op + " is not an operation on " + c.name());
                        }
                        if (changes.containsKey(c.name())) {
                            throw new InvalidRequestException("Error due to duplicate config keys: " + c.name());
                        }
                        if (op == AlterConfigOp.OpType.SET && c.value() == null) {
                            throw new InvalidRequestException("Null value not supported for " + c.name());
                        }
                        changes.put(c.name(), op == AlterConfigOp.OpType.SET ? c.value() : null);
                    }
                    try {
                        broker.dynamicTls().alter(changes, validateOnly);
                    } catch (org.apache.kafka.common.config.ConfigException e) {
                        throw new InvalidConfigurationException(e.getMessage());
                    }
                    return;
                }
                ConfigResources.checkBrokerAlter(name, broker.nodeId(), !resource.configs().isEmpty());
                return;
            default:
                throw ConfigResources.unsupportedType(resource.resourceType());
        }
    }

    private Map<String, String> apply(List<AlterableConfig> ops, Map<String, String> configs) {
        for (AlterableConfig c : ops) {
            String key = c.name();
            AlterConfigOp.OpType op = AlterConfigOp.OpType.forId(c.configOperation());
            if (op == null) {
                throw new InvalidRequestException("Unknown config operation " + c.configOperation() + " for " + key);
            }
            if (op != AlterConfigOp.OpType.DELETE && c.value() == null) {
                throw new InvalidRequestException("Null value not supported for " + op + " of " + key);
            }
            if (!TopicConfigs.isKnown(key) && !(op == AlterConfigOp.OpType.DELETE && configs.containsKey(key))) {
                throw new InvalidConfigurationException("Unknown topic config name: " + key);
            }
            switch (op) {
                case SET:
                    configs.put(key, c.value());
                    break;
                case DELETE:
                    configs.remove(key);
                    break;
                case APPEND:
                case SUBTRACT: {
                    if (!TopicConfigs.isList(key)) {
                        throw new InvalidConfigurationException("Can't " + op + " to key " + key
                                + " because its type is not LIST.");
                    }
                    String current = configs.containsKey(key) ? configs.get(key) : describer.topicDefault(key);
                    List<String> values = split(current);
                    if (op == AlterConfigOp.OpType.APPEND) {
                        for (String v : split(c.value())) {
                            if (!values.contains(v)) {
                                values.add(v);
                            }
                        }
                    } else {
                        values.removeAll(split(c.value()));
                    }
                    configs.put(key, String.join(",", values));
                    break;
                }
                default:
                    throw new IllegalStateException(op.toString());
            }
        }
        return configs;
    }

    /**
     * A group's operations: SET and DELETE (DELETE of a key that is not set, even an unknown one, changes
     * nothing, as with Kafka); no group key is a list, so APPEND and SUBTRACT get INVALID_CONFIG. The
     * result is validated as a whole by the caller.
     */
    private static Map<String, String> applyToGroup(java.util.Collection<AlterableConfig> ops, Map<String, String> configs) {
        Set<String> keys = new HashSet<>();
        for (AlterableConfig c : ops) {
            String key = c.name();
            if (!keys.add(key)) {
                throw new InvalidRequestException("Error due to duplicate config keys: " + key);
            }
            AlterConfigOp.OpType op = AlterConfigOp.OpType.forId(c.configOperation());
            if (op == null) {
                throw new InvalidRequestException("Unknown config operation " + c.configOperation() + " for " + key);
            }
            switch (op) {
                case SET -> {
                    if (c.value() == null) {
                        throw new InvalidRequestException("Null value not supported for : " + key);
                    }
                    configs.put(key, c.value());
                }
                case DELETE -> configs.remove(key);
                default -> throw new InvalidConfigurationException("Can't " + op + " to key " + key
                        + " because its type is not LIST.");
            }
        }
        return configs;
    }

    private static List<String> split(String list) {
        List<String> out = new ArrayList<>();
        if (list != null) {
            for (String s : list.split(",")) {
                if (!s.isBlank()) {
                    out.add(s.trim());
                }
            }
        }
        return out;
    }
}
