package dev.varve.metadata;

import org.apache.kafka.common.message.UpdateFeaturesRequestData;
import org.apache.kafka.common.message.UpdateFeaturesResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** UpdateFeatures decided as Kafka's controller decides it: all or nothing, Kafka's error codes. */
class FinalizedFeaturesTest {
    private static final byte UPGRADE = 1;
    private static final byte SAFE_DOWNGRADE = 2;

    private static UpdateFeaturesRequestData request(boolean validateOnly, Object... featureLevelType) {
        UpdateFeaturesRequestData r = new UpdateFeaturesRequestData().setValidateOnly(validateOnly).setTimeoutMs(1000);
        for (int i = 0; i < featureLevelType.length; i += 3) {
            r.featureUpdates().add(new UpdateFeaturesRequestData.FeatureUpdateKey().setFeature((String) featureLevelType[i])
                    .setMaxVersionLevel(((Number) featureLevelType[i + 1]).shortValue())
                    .setUpgradeType((Byte) featureLevelType[i + 2]));
        }
        return r;
    }

    private static FinalizedFeatures apply(FinalizedFeatures f, ControllerResult<?> r) {
        for (MetadataRecord rec : r.records()) {
            f = f.apply(rec);
        }
        return f;
    }

    @Test
    void aDowngradeNeedsADowngradeTypeAndTheEpochGrowsWithEveryChange() {
        FinalizedFeatures f = FinalizedFeatures.EMPTY;
        var refused = f.update(request(false, "transaction.version", 1, UPGRADE), FinalizedFeatures.DEFAULTS);
        assertThat(Errors.forCode(refused.response().errorCode())).isEqualTo(Errors.INVALID_UPDATE_VERSION);
        assertThat(refused.response().errorMessage()).contains("downgrade");
        assertThat(refused.records()).isEmpty();

        var down = f.update(request(false, "transaction.version", 1, SAFE_DOWNGRADE, "group.version", 0, SAFE_DOWNGRADE),
                FinalizedFeatures.DEFAULTS);
        assertThat(Errors.forCode(down.response().errorCode())).isEqualTo(Errors.NONE);
        f = apply(f, down);
        assertThat(f.levels()).isEqualTo(Map.of("transaction.version", (short) 1, "group.version", (short) 0));
        assertThat(f.epoch()).isEqualTo(2);

        var up = f.update(request(false, "transaction.version", 2, UPGRADE), Map.of());
        assertThat(Errors.forCode(up.response().errorCode())).isEqualTo(Errors.NONE);
        f = apply(f, up);
        assertThat(f.level("transaction.version")).contains((short) 2);
        assertThat(f.epoch()).isEqualTo(3);

        // v0's allowDowngrade flag is a downgrade too
        UpdateFeaturesRequestData v0 = new UpdateFeaturesRequestData();
        v0.featureUpdates().add(new UpdateFeaturesRequestData.FeatureUpdateKey().setFeature("transaction.version")
                .setMaxVersionLevel((short) 0).setAllowDowngrade(true));
        assertThat(Errors.forCode(f.update(v0, Map.of()).response().errorCode())).isEqualTo(Errors.NONE);
        // snapshots keep the levels and the epoch
        FinalizedFeatures rebuilt = FinalizedFeatures.EMPTY;
        for (MetadataRecord r : f.toRecords()) {
            rebuilt = rebuilt.apply(r);
        }
        assertThat(rebuilt).isEqualTo(f);
    }

    @Test
    void badUpdatesChangeNothingAndSayWhy() {
        FinalizedFeatures f = FinalizedFeatures.EMPTY;
        Map<String, UpdateFeaturesRequestData> bad = Map.of(
                "unknown feature", request(false, "no.such.version", 1, UPGRADE),
                "above the supported range", request(false, "transaction.version", 3, UPGRADE),
                "negative", request(false, "group.version", -1, SAFE_DOWNGRADE),
                "metadata.version other than 4.4-IV2", request(false, "metadata.version", 20, SAFE_DOWNGRADE),
                "metadata.version off", request(false, "metadata.version", 0, SAFE_DOWNGRADE),
                "kraft.version by hand", request(false, "kraft.version", 1, UPGRADE),
                "one bad update spoils the request", request(false, "transaction.version", 1, SAFE_DOWNGRADE,
                        "streams.version", 1, UPGRADE));
        bad.forEach((why, req) -> {
            var r = f.update(req, FinalizedFeatures.DEFAULTS);
            assertThat(Errors.forCode(r.response().errorCode())).as(why).isEqualTo(Errors.INVALID_UPDATE_VERSION);
            assertThat(r.response().errorMessage()).as(why).isNotBlank();
            assertThat(r.records()).as(why).isEmpty();
        });
        UpdateFeaturesRequestData empty = request(false, "", 1, UPGRADE);
        assertThat(Errors.forCode(f.update(empty, Map.of()).response().errorCode())).isEqualTo(Errors.INVALID_REQUEST);
    }

    @Test
    void validateOnlyAnswersWithoutChanging() {
        var r = FinalizedFeatures.EMPTY.update(request(true, "transaction.version", 1, SAFE_DOWNGRADE), FinalizedFeatures.DEFAULTS);
        UpdateFeaturesResponseData response = r.response();
        assertThat(Errors.forCode(response.errorCode())).isEqualTo(Errors.NONE);
        assertThat(r.records()).isEmpty();
        assertThat(List.copyOf(response.results())).extracting(UpdateFeaturesResponseData.UpdatableFeatureResult::feature)
                .containsExactly("transaction.version");
    }
}
