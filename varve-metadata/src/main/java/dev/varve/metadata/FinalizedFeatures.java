package dev.varve.metadata;

import org.apache.kafka.common.message.UpdateFeaturesRequestData;
import org.apache.kafka.common.message.UpdateFeaturesResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.requests.UpdateFeaturesResponse;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The feature levels finalized with UpdateFeatures ({@code kafka-features upgrade|downgrade|disable}),
 * Kafka's names and levels. Immutable; {@link #apply} returns a changed copy. A feature never
 * finalized here has the level the broker's own settings give it ({@code transaction.version},
 * {@code group.coordinator.rebalance.protocols}): what {@link #levels} holds overrides those, on every
 * broker of the cluster.
 *
 * <p>{@link #update} decides UpdateFeatures as Kafka's controller does: all or nothing, an unknown
 * feature or a level outside what Varve supports is INVALID_UPDATE_VERSION, a downgrade needs a
 * downgrade type (or {@code allowDowngrade} before v1), {@code metadata.version} stays at the level
 * Varve serves, and {@code validateOnly} changes nothing.
 */
public final class FinalizedFeatures {
    /** A feature's supported levels (0 means "off"; a feature whose minimum is above 0 cannot be off). */
    public record Supported(String name, short min, short max) {
    }

    public static final String METADATA_VERSION = "metadata.version";
    public static final String TRANSACTION_VERSION = "transaction.version";
    public static final String GROUP_VERSION = "group.version";
    public static final String KRAFT_VERSION = "kraft.version";
    public static final String SHARE_VERSION = "share.version";
    /** {@code metadata.version} of Kafka 4.4 (4.4-IV2): the protocol whose API versions Varve serves. */
    public static final short METADATA_VERSION_LEVEL = 33;
    /** The oldest metadata.version Kafka 4.4 supports (3.3-IV3), the bottom of the supported range. */
    public static final short MIN_METADATA_VERSION_LEVEL = 7;

    /** What Varve supports, in the order ApiVersions lists them. */
    public static final List<Supported> SUPPORTED = List.of(
            new Supported(METADATA_VERSION, MIN_METADATA_VERSION_LEVEL, METADATA_VERSION_LEVEL),
            new Supported(KRAFT_VERSION, (short) 0, (short) 1),
            new Supported(TRANSACTION_VERSION, (short) 0, (short) 2),
            new Supported(GROUP_VERSION, (short) 0, (short) 1),
            new Supported("eligible.leader.replicas.version", (short) 0, (short) 0),
            new Supported(SHARE_VERSION, (short) 0, (short) 1),
            new Supported("streams.version", (short) 0, (short) 0));

    private static final byte UPGRADE = 1;

    /** What a cluster can serve below {@link #SUPPORTED}: share groups run on a single node for now. */
    public static final Map<String, Short> CLUSTER_MAX_LEVELS = Map.of(SHARE_VERSION, (short) 0);

    /** The levels a cluster runs at before any UpdateFeatures: the brokers' default settings. */
    public static final Map<String, Short> DEFAULTS = Map.of(METADATA_VERSION, METADATA_VERSION_LEVEL,
            TRANSACTION_VERSION, (short) 2, GROUP_VERSION, (short) 1);

    public static final FinalizedFeatures EMPTY = new FinalizedFeatures(Map.of(), 0);

    private final Map<String, Short> levels;
    private final long epoch;

    private FinalizedFeatures(Map<String, Short> levels, long epoch) {
        this.levels = levels;
        this.epoch = epoch;
    }

    /** The levels finalized with UpdateFeatures (0: turned off), by feature name. */
    public Map<String, Short> levels() {
        return levels;
    }

    public Optional<Short> level(String feature) {
        return Optional.ofNullable(levels.get(feature));
    }

    /** Grows with every finalized change (0 before the first). */
    public long epoch() {
        return epoch;
    }

    public static Optional<Supported> supported(String feature) {
        return SUPPORTED.stream().filter(s -> s.name().equals(feature)).findFirst();
    }

    public FinalizedFeatures apply(MetadataRecord record) {
        if (!(record instanceof MetadataRecord.FeatureLevel f)) {
            return this;
        }
        Map<String, Short> next = new LinkedHashMap<>(levels);
        next.put(f.name(), f.level());
        return new FinalizedFeatures(Collections.unmodifiableMap(next), Math.max(epoch, f.epoch()));
    }

    /** The records that rebuild these features (a snapshot). */
    public List<MetadataRecord> toRecords() {
        List<MetadataRecord> out = new ArrayList<>();
        levels.forEach((name, level) -> out.add(new MetadataRecord.FeatureLevel(name, level, epoch)));
        return out;
    }

    /**
     * Decides an UpdateFeatures request.
     *
     * @param current the levels in effect where the request is decided, for the features not finalized
     *                here (a feature absent from both is taken to be at 0)
     */
    public ControllerResult<UpdateFeaturesResponseData> update(UpdateFeaturesRequestData request,
                                                               Map<String, Short> current) {
        return update(request, current, Map.of());
    }

    /**
     * As {@link #update(UpdateFeaturesRequestData, Map)}, where {@code maxLevels} lowers the highest level
     * of some features below {@link #SUPPORTED} (what the deciding node can serve: share groups run on a
     * single node, so a cluster refuses {@code share.version} 1).
     */
    public ControllerResult<UpdateFeaturesResponseData> update(UpdateFeaturesRequestData request,
                                                               Map<String, Short> current, Map<String, Short> maxLevels) {
        Set<String> names = new LinkedHashSet<>();
        request.featureUpdates().forEach(u -> names.add(u.feature()));
        List<MetadataRecord> records = new ArrayList<>();
        long nextEpoch = epoch;
        for (UpdateFeaturesRequestData.FeatureUpdateKey u : request.featureUpdates()) {
            ApiError error = check(u, current, maxLevels);
            if (error != null) {
                return new ControllerResult<>(List.of(), UpdateFeaturesResponse.createWithErrors(error, names, 0).data());
            }
            records.add(new MetadataRecord.FeatureLevel(u.feature(), u.maxVersionLevel(), ++nextEpoch));
        }
        if (names.size() != request.featureUpdates().size()) {
            return new ControllerResult<>(List.of(), UpdateFeaturesResponse.createWithErrors(
                    new ApiError(Errors.INVALID_REQUEST, "A feature is named more than once"), names, 0).data());
        }
        return new ControllerResult<>(request.validateOnly() ? List.of() : records,
                UpdateFeaturesResponse.createWithErrors(ApiError.NONE, names, 0).data());
    }

    private ApiError check(UpdateFeaturesRequestData.FeatureUpdateKey u, Map<String, Short> current,
                           Map<String, Short> maxLevels) {
        if (u.feature() == null || u.feature().isBlank()) {
            return new ApiError(Errors.INVALID_REQUEST, "A feature name can't be empty");
        }
        Optional<Supported> supported = supported(u.feature());
        if (supported.isEmpty()) {
            return new ApiError(Errors.INVALID_UPDATE_VERSION, "Unsupported feature: " + u.feature());
        }
        Supported s = supported.get();
        if (maxLevels.containsKey(s.name()) && maxLevels.get(s.name()) < s.max()) {
            s = new Supported(s.name(), s.min(), maxLevels.get(s.name()));
        }
        short level = u.maxVersionLevel();
        if (level < 0 || level > s.max() || (level < s.min() && (level != 0 || s.min() > 0))) {
            return new ApiError(Errors.INVALID_UPDATE_VERSION, "Invalid update version " + level + " for feature "
                    + u.feature() + ". Varve supports versions " + s.min() + "-" + s.max());
        }
        if (s.name().equals(KRAFT_VERSION)) {
            return new ApiError(Errors.INVALID_UPDATE_VERSION, "kraft.version follows the metadata quorum (1 in a "
                    + "cluster, whose voters change with AddRaftVoter/RemoveRaftVoter; 0 on a single node): it is not set");
        }
        if (s.name().equals(METADATA_VERSION) && level != METADATA_VERSION_LEVEL) {
            return new ApiError(Errors.INVALID_UPDATE_VERSION, "Invalid update version " + level + " for feature "
                    + METADATA_VERSION + ": Varve serves " + METADATA_VERSION_LEVEL + " (4.4-IV2) only");
        }
        short now = levels.getOrDefault(u.feature(), current.getOrDefault(u.feature(), (short) 0));
        // v0 says allowDowngrade (upgradeType then defaults to UPGRADE); v1+ says upgradeType (allowDowngrade false)
        boolean downgradeAllowed = u.allowDowngrade() || u.upgradeType() != UPGRADE;
        if (level < now && !downgradeAllowed) {
            return new ApiError(Errors.INVALID_UPDATE_VERSION, "Invalid update version " + level + " for feature "
                    + u.feature() + ". Can't downgrade from " + now + " without a downgrade type");
        }
        return null;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof FinalizedFeatures f && f.levels.equals(levels) && f.epoch == epoch;
    }

    @Override
    public int hashCode() {
        return levels.hashCode() * 31 + Long.hashCode(epoch);
    }
}
