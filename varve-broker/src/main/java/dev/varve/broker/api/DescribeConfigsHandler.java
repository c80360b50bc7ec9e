package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry.TopicInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.message.DescribeConfigsRequestData;
import org.apache.kafka.common.message.DescribeConfigsRequestData.DescribeConfigsResource;
import org.apache.kafka.common.message.DescribeConfigsResponseData;
import org.apache.kafka.common.message.DescribeConfigsResponseData.DescribeConfigsResourceResult;
import org.apache.kafka.common.message.DescribeConfigsResponseData.DescribeConfigsResult;
import org.apache.kafka.common.message.DescribeConfigsResponseData.DescribeConfigsSynonym;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.requests.DescribeConfigsRequest;
import org.apache.kafka.common.requests.DescribeConfigsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * DescribeConfigs for topics and for this broker (see {@link ConfigDescriber} for what is listed and
 * how sources are decided). Synonyms only when asked ({@code includeSynonyms}), documentation only
 * when asked (v3+); the value type is always reported (v3+). {@code configurationKeys} filters the
 * entries (null or empty: all); keys Varve does not know are simply absent, as with Kafka.
 *
 * <p>Groups (any name but the empty one; the group need not exist): the group config keys Varve
 * accepts, each DYNAMIC_GROUP_CONFIG when the group overrides it, else the broker's value (see
 * {@link ConfigDescriber#group}); in a cluster the overrides come from this broker's metadata image.
 *
 * <p>Errors per resource: an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION; a broker resource
 * naming another node id gets INVALID_REQUEST; the empty broker name (cluster-wide dynamic
 * defaults) lists nothing, since Varve has no dynamic broker configs; the empty group name gets
 * INVALID_REQUEST, as with Kafka; other resource types (broker loggers, client metrics) get
 * INVALID_REQUEST.
 */
public final class DescribeConfigsHandler extends AllVersionsHandler {
    private final BrokerContext broker;
    private final ConfigDescriber describer;

    public DescribeConfigsHandler(BrokerContext broker) {
        super(ApiKeys.DESCRIBE_CONFIGS);
        this.broker = broker;
        this.describer = new ConfigDescriber(broker);
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        DescribeConfigsRequestData data = ((DescribeConfigsRequest) request).data();
        DescribeConfigsResponseData response = new DescribeConfigsResponseData();
        for (DescribeConfigsResource resource : data.resources()) {
            DescribeConfigsResult result = new DescribeConfigsResult()
                    .setResourceType(resource.resourceType()).setResourceName(resource.resourceName())
                    .setErrorCode(Errors.NONE.code());
            try {
                // Null or empty: every key (Kafka treats both alike).
                Set<String> wanted = resource.configurationKeys() == null || resource.configurationKeys().isEmpty()
                        ? null : new HashSet<>(resource.configurationKeys());
                for (ConfigDescriber.Entry e : entries(resource)) {
                    if (wanted == null || wanted.contains(e.name())) {
                        result.configs().add(toWire(e, data.includeSynonyms(), data.includeDocumentation()));
                    }
                }
            } catch (RuntimeException e) {
                ApiError error = ApiError.fromThrowable(e);
                result.setErrorCode(error.error().code()).setErrorMessage(error.message()).configs().clear();
            }
            response.results().add(result);
        }
        return CompletableFuture.completedFuture(new DescribeConfigsResponse(response));
    }

    private List<ConfigDescriber.Entry> entries(DescribeConfigsResource resource) {
        ConfigResource.Type type = ConfigResource.Type.forId(resource.resourceType());
        String name = resource.resourceName();
        switch (type) {
            case TOPIC:
                TopicInfo t = broker.topics().get(name).orElseThrow(() ->
                        new UnknownTopicOrPartitionException("Topic '" + name + "' does not exist."));
                return describer.topic(t);
            case BROKER:
                ConfigResources.checkBrokerName(name, broker.nodeId());
                return name.isEmpty() ? List.of() : describer.broker();
            case GROUP:
                ConfigResources.checkGroupName(name, true);
                return describer.group(broker.groupConfigs().overrides(name));
            default:
                throw ConfigResources.unsupportedType(resource.resourceType());
        }
    }

    private static DescribeConfigsResourceResult toWire(ConfigDescriber.Entry e, boolean synonyms, boolean documentation) {
        DescribeConfigsResourceResult r = new DescribeConfigsResourceResult()
                .setName(e.name()).setValue(e.value()).setReadOnly(e.readOnly())
                .setConfigSource(e.source().id()).setIsSensitive(false)
                .setConfigType(ConfigResources.configType(e.type()).id())
                .setDocumentation(documentation ? e.documentation() : null);
        if (synonyms) {
            for (ConfigDescriber.Synonym s : e.synonyms()) {
                r.synonyms().add(new DescribeConfigsSynonym().setName(s.name()).setValue(s.value()).setSource(s.source().id()));
            }
        }
        return r;
    }
}
