package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.message.AlterConfigsRequestData;
import org.apache.kafka.common.message.AlterConfigsRequestData.AlterConfigsResource;
import org.apache.kafka.common.message.AlterConfigsRequestData.AlterableConfig;
import org.apache.kafka.common.message.AlterConfigsResponseData;
import org.apache.kafka.common.message.AlterConfigsResponseData.AlterConfigsResourceResponse;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AlterConfigsRequest;
import org.apache.kafka.common.requests.AlterConfigsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * AlterConfigs, the legacy whole-set form, for topics and groups (validate-only too): the request's
 * keys replace the resource's overrides entirely (keys left out return to their defaults), as Kafka 4
 * does for GROUP resources too. Validation, persistence and errors are those of
 * {@link IncrementalAlterConfigsHandler}; a null value gets INVALID_REQUEST, as with Kafka.
 */
public final class AlterConfigsHandler extends AllVersionsHandler {
    private final BrokerContext broker;

    public AlterConfigsHandler(BrokerContext broker) {
        super(ApiKeys.ALTER_CONFIGS);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        AlterConfigsRequestData data = ((AlterConfigsRequest) request).data();
        AlterConfigsResponseData response = new AlterConfigsResponseData();
        ConfigResources.alterEach(data.resources(), AlterConfigsResource::resourceType,
                AlterConfigsResource::resourceName, resource -> alter(resource, data.validateOnly()),
                (resource, error) -> response.responses().add(new AlterConfigsResourceResponse()
                        .setResourceType(resource.resourceType()).setResourceName(resource.resourceName())
                        .setErrorCode(error.error().code()).setErrorMessage(error.message())));
        return CompletableFuture.completedFuture(new AlterConfigsResponse(response));
    }

    private void alter(AlterConfigsResource resource, boolean validateOnly) {
        String name = resource.resourceName();
        switch (ConfigResource.Type.forId(resource.resourceType())) {
            case TOPIC: {
                Map<String, String> configs = new HashMap<>();
                for (AlterableConfig c : resource.configs()) {
                    if (c.value() == null) {
                        throw new InvalidRequestException("Null value not supported for " + c.name());
                    }
                    if (configs.put(c.name(), c.value()) != null) {
                        throw new InvalidRequestException("Error due to duplicate config keys: " + c.name());
                    }
                }
                broker.alterTopicConfigs(name, current -> configs, validateOnly);
                return;
            }
            case GROUP: {
                Map<String, String> configs = new HashMap<>();
                for (AlterableConfig c : resource.configs()) {
                    if (c.value() == null) {
                        throw new InvalidRequestException("Null value not supported for : " + c.name());
                    }
                    if (configs.put(c.name(), c.value()) != null) {
                        throw new InvalidRequestException("Error due to duplicate config keys: " + c.name());
                    }
                }
                ConfigResources.alterGroupConfigs(broker, name, current -> configs, validateOnly);
                return;
            }
            case BROKER:
                ConfigResources.checkBrokerAlter(name, broker.nodeId(), !resource.configs().isEmpty());
                return;
            default:
                throw ConfigResources.unsupportedType(resource.resourceType());
        }
    }
}
