package dev.varve.broker.api;

import dev.varve.broker.security.LocalFeatureStore;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.UpdateFeaturesRequest;
import org.apache.kafka.common.requests.UpdateFeaturesResponse;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * UpdateFeatures on a single node ({@code kafka-features upgrade|downgrade|disable}): decided as a
 * cluster's controller decides it ({@link dev.varve.metadata.FinalizedFeatures#update}) and kept in the
 * node's {@link LocalFeatureStore}. A cluster forwards the request to its controller instead.
 */
public final class UpdateFeaturesHandler extends AllVersionsHandler {
    private final LocalFeatureStore store;
    private final Supplier<Map<String, Short>> inEffect;
    private final Supplier<Map<String, Short>> maxLevels;

    public UpdateFeaturesHandler(LocalFeatureStore store, Supplier<Map<String, Short>> inEffect,
                                 Supplier<Map<String, Short>> maxLevels) {
        super(ApiKeys.UPDATE_FEATURES);
        this.store = store;
        this.inEffect = inEffect;
        this.maxLevels = maxLevels;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        UpdateFeaturesRequest req = (UpdateFeaturesRequest) request;
        return CompletableFuture.completedFuture(new UpdateFeaturesResponse(store.update(req.data(), inEffect.get(), maxLevels.get())));
    }
}
