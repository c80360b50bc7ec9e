package dev.varve.broker.api;

import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.ApiVersionsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.List;
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
    private final boolean consumerGroups;

    /**
     * A feature as Kafka's ApiVersions announces it: the levels this broker supports and the cluster's
     * finalized level (0: off, not listed as finalized).
     */
    public record Feature(String name, short min, short max, short finalizedLevel) {
    }

    /** {@code metadata.version} of Kafka 4.4 (4.4-IV2): the protocol whose API versions Varve serves. */
    public static final short METADATA_VERSION = dev.varve.metadata.FinalizedFeatures.METADATA_VERSION_LEVEL;
    /** The oldest metadata.version Kafka 4.4 supports (3.3-IV3), the bottom of the supported range. */
    public static final short MIN_METADATA_VERSION = dev.varve.metadata.FinalizedFeatures.MIN_METADATA_VERSION_LEVEL;
    public static final String METADATA_VERSION_FEATURE = dev.varve.metadata.FinalizedFeatures.METADATA_VERSION;

    private final Supplier<dev.varve.metadata.FinalizedFeatures> finalized;

    /**
     * The features this broker announces, with Kafka 4.4's names and the ranges of
     * {@link dev.varve.metadata.FinalizedFeatures#SUPPORTED}, each at the level finalized with
     * UpdateFeatures or, before any, the level the broker's settings give it: {@code metadata.version}
     * at 4.4's level; {@code transaction.version} at {@code transaction.version} (0-2);
     * {@code kraft.version} at 1 in a cluster (the metadata quorum's voters are added and removed with
     * KIP-853's AddRaftVoter and RemoveRaftVoter) and at 0 on a single node (no quorum, supported 0 only);
     * {@code group.version} at 1 while the KIP-848 consumer protocol is offered (0 when
     * {@code group.coordinator.rebalance.protocols} leaves it out);
     * {@code share.version}, {@code streams.version} and {@code eligible.leader.replicas.version}
     * supported only at 0 (not implemented), so a Kafka tool or client that checks a feature before using
     * it is told the truth.
     */
    public List<Feature> features() {
        dev.varve.metadata.FinalizedFeatures f = finalized.get();
        List<Feature> out = new java.util.ArrayList<>();
        for (dev.varve.metadata.FinalizedFeatures.Supported s : dev.varve.metadata.FinalizedFeatures.SUPPORTED) {
            if (s.name().equals(dev.varve.metadata.FinalizedFeatures.KRAFT_VERSION)) {
                short level = (short) (dynamicQuorum ? 1 : 0); // follows the quorum; never finalized by hand
                out.add(new Feature(s.name(), (short) 0, level, level));
                continue;
            }
            short max = s.name().equals(dev.varve.metadata.FinalizedFeatures.SHARE_VERSION) && !shareGroups ? 0 : s.max();
            out.add(new Feature(s.name(), s.min(), max, f.level(s.name()).orElse(defaultLevel(s.name()))));
        }
        return out;
    }

    /** The level of a feature never finalized with UpdateFeatures: the broker's settings. */
    public short defaultLevel(String feature) {
        return switch (feature) {
            case dev.varve.metadata.FinalizedFeatures.METADATA_VERSION -> METADATA_VERSION;
            case dev.varve.metadata.FinalizedFeatures.TRANSACTION_VERSION -> transactionVersion;
            case dev.varve.metadata.FinalizedFeatures.GROUP_VERSION -> (short) (consumerGroups ? 1 : 0);
            case dev.varve.metadata.FinalizedFeatures.SHARE_VERSION -> (short) (shareGroups ? 1 : 0);
            default -> 0;
        };
    }

    /** Every feature's highest level this broker can serve. */
    public java.util.Map<String, Short> maxLevels() {
        java.util.Map<String, Short> out = new java.util.HashMap<>();
        features().forEach(f -> out.put(f.name(), f.max()));
        return out;
    }

    /** Every feature's level in effect here (finalized, else the default). */
    public java.util.Map<String, Short> levels() {
        java.util.Map<String, Short> out = new java.util.HashMap<>();
        features().forEach(f -> out.put(f.name(), f.finalizedLevel()));
        return out;
    }

    public ApiVersionsHandler(Supplier<ApiVersionsResponseData.ApiVersionCollection> versions) {
        this(versions, (short) 0, false, () -> dev.varve.metadata.FinalizedFeatures.EMPTY);
    }

    /**
     * @param transactionVersion the level of {@code transaction.version} (0-2) before any UpdateFeatures,
     *                           announced from ApiVersions v3 on: Kafka 4 clients use transactions V2 at 2
     * @param consumerGroups     whether the KIP-848 consumer group protocol is offered ({@code group.version} 1)
     * @param finalized          the levels finalized with UpdateFeatures (the metadata image's, or a single
     *                           node's file)
     */
    public ApiVersionsHandler(Supplier<ApiVersionsResponseData.ApiVersionCollection> versions, short transactionVersion,
                              boolean consumerGroups, Supplier<dev.varve.metadata.FinalizedFeatures> finalized) {
        this(versions, transactionVersion, consumerGroups, finalized, false);
    }

    /**
     * As above; {@code dynamicQuorum}: the node belongs to a cluster whose metadata quorum changes its
     * voters (KIP-853, {@code kraft.version} 1).
     */
    public ApiVersionsHandler(Supplier<ApiVersionsResponseData.ApiVersionCollection> versions, short transactionVersion,
                              boolean consumerGroups, Supplier<dev.varve.metadata.FinalizedFeatures> finalized,
                              boolean dynamicQuorum) {
        super(ApiKeys.API_VERSIONS);
        this.versions = versions;
        this.transactionVersion = transactionVersion;
        this.consumerGroups = consumerGroups;
        this.finalized = finalized;
        this.dynamicQuorum = dynamicQuorum;
    }

    private final boolean dynamicQuorum;
    private volatile boolean shareGroups;

    /** Share groups are offered ({@code share.version} 1 until UpdateFeatures says otherwise). */
    public void setShareGroups(boolean shareGroups) {
        this.shareGroups = shareGroups;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ApiVersionsRequest req = (ApiVersionsRequest) request;
        ApiVersionsResponseData data = new ApiVersionsResponseData().setApiKeys(versions.get().duplicate());
        if (request.version() >= 3) {
            ApiVersionsResponseData.SupportedFeatureKeyCollection supported = new ApiVersionsResponseData.SupportedFeatureKeyCollection();
            ApiVersionsResponseData.FinalizedFeatureKeyCollection finalized = new ApiVersionsResponseData.FinalizedFeatureKeyCollection();
            for (Feature f : features()) {
                supported.add(new ApiVersionsResponseData.SupportedFeatureKey().setName(f.name())
                        .setMinVersion(f.min()).setMaxVersion(f.max()));
                if (f.finalizedLevel() > 0) { // a level of 0 is "off": Kafka lists it as supported only
                    finalized.add(new ApiVersionsResponseData.FinalizedFeatureKey().setName(f.name())
                            .setMinVersionLevel(f.finalizedLevel()).setMaxVersionLevel(f.finalizedLevel()));
                }
            }
            // Kafka clients take a broker's finalized features only when their epoch is above the one they
            // hold. Before any UpdateFeatures the epoch grows with transaction.version, the one setting that
            // can change (a rolling restart from 0 to 2 then reaches running producers); after, it is 3 plus
            // the finalized features' epoch, which grows with every UpdateFeatures, so it only goes up.
            long epoch = this.finalized.get().epoch();
            data.setSupportedFeatures(supported).setFinalizedFeatures(finalized)
                    .setFinalizedFeaturesEpoch(epoch == 0 ? 1L + transactionVersion : 3L + epoch);
        }
        if (req.hasUnsupportedRequestVersion()) {
            data.setErrorCode(Errors.UNSUPPORTED_VERSION.code());
        } else if (!req.isValid()) {
            data.setErrorCode(Errors.INVALID_REQUEST.code());
        }
        return CompletableFuture.completedFuture(new ApiVersionsResponse(data));
    }
}
