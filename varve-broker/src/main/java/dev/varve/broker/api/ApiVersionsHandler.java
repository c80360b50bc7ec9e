package dev.varve.broker.api;

import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.ApiVersionsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * ApiVersions: advertises exactly the APIs and version ranges this broker implements. A version
 * this broker does not know gets UNSUPPORTED_VERSION (serialized as v0) with the ranges, so the
 * client retries with one both sides speak.
 */
public final class ApiVersionsHandler extends AllVersionsHandler {
    /** Kafka's name of the feature that turns transactions V2 on (KIP-890 part 2). */
    public static final String TRANSACTION_VERSION_FEATURE = "transaction.version";
    private final Supplier<ApiVersionsResponseData.ApiVersionCollection> versions;
    private final short transactionVersion;

    public ApiVersionsHandler(Supplier<ApiVersionsResponseData.ApiVersionCollection> versions) {
        this(versions, (short) 0);
    }

    /**
     * @param transactionVersion the finalized level of {@code transaction.version} (0-2) announced from
     *                           ApiVersions v3 on: Kafka 4 clients use transactions V2 at 2
     */
    public ApiVersionsHandler(Supplier<ApiVersionsResponseData.ApiVersionCollection> versions, short transactionVersion) {
        super(ApiKeys.API_VERSIONS);
        this.versions = versions;
        this.transactionVersion = transactionVersion;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ApiVersionsRequest req = (ApiVersionsRequest) request;
        ApiVersionsResponseData data = new ApiVersionsResponseData().setApiKeys(versions.get().duplicate());
        if (request.version() >= 3) {
            ApiVersionsResponseData.SupportedFeatureKeyCollection supported = new ApiVersionsResponseData.SupportedFeatureKeyCollection();
            supported.add(new ApiVersionsResponseData.SupportedFeatureKey().setName(TRANSACTION_VERSION_FEATURE)
                    .setMinVersion((short) 0).setMaxVersion((short) 2));
            data.setSupportedFeatures(supported);
            if (transactionVersion > 0) {
                ApiVersionsResponseData.FinalizedFeatureKeyCollection finalized = new ApiVersionsResponseData.FinalizedFeatureKeyCollection();
                finalized.add(new ApiVersionsResponseData.FinalizedFeatureKey().setName(TRANSACTION_VERSION_FEATURE)
                        .setMinVersionLevel(transactionVersion).setMaxVersionLevel(transactionVersion));
                data.setFinalizedFeatures(finalized).setFinalizedFeaturesEpoch(1);
            }
        }
        if (req.hasUnsupportedRequestVersion()) {
            data.setErrorCode(Errors.UNSUPPORTED_VERSION.code());
        } else if (!req.isValid()) {
            data.setErrorCode(Errors.INVALID_REQUEST.code());
        }
        return CompletableFuture.completedFuture(new ApiVersionsResponse(data));
    }
}
