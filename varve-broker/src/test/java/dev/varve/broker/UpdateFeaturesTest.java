package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.common.errors.InvalidUpdateVersionException;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatRequest;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * UpdateFeatures on a single node through the stock Admin client (what {@code kafka-features} sends):
 * levels change, survive a restart, reach ApiVersions with a larger epoch, and take effect
 * ({@code group.version} 0 turns the consumer protocol off); bad updates are refused and change nothing.
 */
class UpdateFeaturesTest {
    @TempDir
    File dir;

    private Broker start() throws Exception {
        return Broker.start(BrokerConfig.from(Map.of("listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath())));
    }

    private static FeatureMetadata describe(Admin admin) throws Exception {
        return admin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS);
    }

    private static short finalized(FeatureMetadata m, String feature) {
        var f = m.finalizedFeatures().get(feature);
        return f == null ? 0 : f.maxVersionLevel();
    }

    @Test
    void levelsChangeTakeEffectAndSurviveARestart() throws Exception {
        long epochBefore;
        try (Broker broker = start();
             Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            FeatureMetadata before = describe(admin);
            assertThat(finalized(before, "transaction.version")).isEqualTo((short) 2);
            assertThat(finalized(before, "group.version")).isEqualTo((short) 1);
            epochBefore = before.finalizedFeaturesEpoch().orElseThrow();

            // an upgrade type cannot downgrade; nothing changes
            assertThatThrownBy(() -> admin.updateFeatures(Map.of("transaction.version",
                            new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions())
                    .all().get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(InvalidUpdateVersionException.class);
            // a dry run changes nothing either
            admin.updateFeatures(Map.of("transaction.version", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE)),
                    new UpdateFeaturesOptions().validateOnly(true)).all().get(30, TimeUnit.SECONDS);
            assertThat(finalized(describe(admin), "transaction.version")).isEqualTo((short) 2);

            admin.updateFeatures(Map.of(
                    "transaction.version", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE),
                    "group.version", new FeatureUpdate((short) 0, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE)),
                    new UpdateFeaturesOptions()).all().get(30, TimeUnit.SECONDS);
            FeatureMetadata after = describe(admin);
            assertThat(finalized(after, "transaction.version")).isEqualTo((short) 1);
            assertThat(after.finalizedFeatures()).doesNotContainKey("group.version");
            assertThat(after.finalizedFeaturesEpoch().orElseThrow()).as("clients take the new levels").isGreaterThan(epochBefore);
            assertThat(heartbeatError(broker)).as("group.version 0: the consumer protocol is off").isEqualTo(Errors.UNSUPPORTED_VERSION);
        }
        try (Broker broker = start();
             Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            FeatureMetadata restarted = describe(admin);
            assertThat(finalized(restarted, "transaction.version")).as("after a restart").isEqualTo((short) 1);
            assertThat(restarted.finalizedFeatures()).doesNotContainKey("group.version");
            assertThat(restarted.finalizedFeaturesEpoch().orElseThrow()).isGreaterThan(epochBefore);
            assertThat(heartbeatError(broker)).isEqualTo(Errors.UNSUPPORTED_VERSION);
            admin.updateFeatures(Map.of("group.version", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                    new UpdateFeaturesOptions()).all().get(30, TimeUnit.SECONDS);
            assertThat(finalized(describe(admin), "group.version")).isEqualTo((short) 1);
            assertThat(heartbeatError(broker)).as("on again").isEqualTo(Errors.NONE);
            for (var bad : List.of(Map.of("metadata.version", new FeatureUpdate((short) 20, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE)),
                    Map.of("share.version", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)))) {
                assertThatThrownBy(() -> admin.updateFeatures(bad, new UpdateFeaturesOptions()).all().get(30, TimeUnit.SECONDS))
                        .as("%s", bad).hasCauseInstanceOf(InvalidUpdateVersionException.class);
            }
        }
    }

    private static Errors heartbeatError(Broker broker) throws Exception {
        try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
            ConsumerGroupHeartbeatResponse r = c.send(new ConsumerGroupHeartbeatRequest.Builder(new ConsumerGroupHeartbeatRequestData()
                    .setGroupId("g").setMemberId("m").setMemberEpoch(0).setRebalanceTimeoutMs(1000)
                    .setSubscribedTopicNames(List.of("t")).setTopicPartitions(List.of())), ApiKeys.CONSUMER_GROUP_HEARTBEAT.latestVersion());
            return Errors.forCode(r.data().errorCode());
        }
    }
}
