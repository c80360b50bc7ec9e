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
    private final Supplier<ApiVersionsResponseData.ApiVersionCollection> versions;

    public ApiVersionsHandler(Supplier<ApiVersionsResponseData.ApiVersionCollection> versions) {
        super(ApiKeys.API_VERSIONS);
        this.versions = versions;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ApiVersionsRequest req = (ApiVersionsRequest) request;
        ApiVersionsResponseData data = new ApiVersionsResponseData().setApiKeys(versions.get().duplicate());
        if (req.hasUnsupportedRequestVersion()) {
            data.setErrorCode(Errors.UNSUPPORTED_VERSION.code());
        } else if (!req.isValid()) {
            data.setErrorCode(Errors.INVALID_REQUEST.code());
        }
        return CompletableFuture.completedFuture(new ApiVersionsResponse(data));
    }
}
