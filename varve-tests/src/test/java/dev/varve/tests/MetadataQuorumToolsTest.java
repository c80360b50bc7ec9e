package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The metadata quorum and the cluster's features as Kafka's tools see them, on a 3-process cluster:
 * {@code kafka-metadata-quorum.sh describe --status/--replication} (DescribeQuorum, answered from Ratis'
 * state by the active controller) and {@code kafka-features.sh describe} (ApiVersions' features), then
 * the quorum's new leader and epoch after the old leader is killed.
 */
@Timeout(180)
class MetadataQuorumToolsTest {
    private static final String QUORUM_COMMAND = "org.apache.kafka.tools.MetadataQuorumCommand";
    private static final String FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand";

    @TempDir
    Path dir;

    @Test
    void kafkasQuorumAndFeatureToolsDescribeTheClusterAndFollowAFailover() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of());
             Admin admin = cluster.admin()) {
            String bootstrap = cluster.bootstrap();
            QuorumInfo quorum = admin.describeMetadataQuorum().quorumInfo().get(30, TimeUnit.SECONDS);
            int leader = quorum.leaderId();
            assertThat(leader).isBetween(1, 3);
            assertThat(quorum.voters()).extracting(QuorumInfo.ReplicaState::replicaId).containsExactlyInAnyOrder(1, 2, 3);
            assertThat(quorum.observers()).isEmpty();
            assertThat(quorum.highWatermark()).isPositive();
            // every voter has the committed entries (a commit needs a majority; all three are up and idle)
            await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
                QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get(30, TimeUnit.SECONDS);
                for (QuorumInfo.ReplicaState v : q.voters()) {
                    assertThat(v.logEndOffset()).as("voter %d", v.replicaId()).isGreaterThanOrEqualTo(q.highWatermark());
                    assertThat(v.lastCaughtUpTimestamp()).isPresent();
                }
            });
            assertThat(quorum.nodes()).containsKeys(1, 2, 3);

            KafkaTool.Result status = KafkaTool.run(dir, QUORUM_COMMAND, List.of("--bootstrap-server", bootstrap, "describe", "--status"));
            assertThat(status.exitCode()).as(status.toString()).isZero();
            assertThat(status.stdout()).containsPattern("LeaderId:\\s+" + leader)
                    .containsPattern("HighWatermark:\\s+[1-9]\\d*")
                    .containsPattern("CurrentVoters:\\s+\\[.*\"id\": ?1.*\"id\": ?2.*\"id\": ?3.*]");
            KafkaTool.Result replication = KafkaTool.run(dir, QUORUM_COMMAND,
                    List.of("--bootstrap-server", bootstrap, "describe", "--replication"));
            assertThat(replication.exitCode()).as(replication.toString()).isZero();
            assertThat(replication.stdout()).containsPattern("(?m)^" + leader + "\\s.*Leader")
                    .containsPattern("(?m)Follower").doesNotContain("Observer");

            KafkaTool.Result features = KafkaTool.run(dir, FEATURE_COMMAND, List.of("--bootstrap-server", bootstrap, "describe"));
            assertThat(features.exitCode()).as(features.toString()).isZero();
            assertThat(features.stdout()).containsPattern("Feature: metadata.version\\s+SupportedMinVersion: 3.3-IV3\\s+"
                            + "SupportedMaxVersion: 4.4-IV2\\s+FinalizedVersionLevel: 4.4-IV2")
                    .containsPattern("Feature: transaction.version\\s+SupportedMinVersion: 0\\s+SupportedMaxVersion: 2\\s+FinalizedVersionLevel: 2")
                    .containsPattern("Feature: group.version\\s+SupportedMinVersion: 0\\s+SupportedMaxVersion: 1\\s+FinalizedVersionLevel: 1");
            FeatureMetadata fm = admin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS);
            assertThat(fm.finalizedFeatures().get("metadata.version").maxVersionLevel()).isEqualTo((short) 33);
            assertThat(fm.finalizedFeatures().get("group.version").maxVersionLevel())
                    .as("the KIP-848 consumer group protocol is on").isEqualTo((short) 1);

            // kafka-features changes a level cluster-wide: the controller commits it, every broker announces it
            KafkaTool.Result downgrade = KafkaTool.run(dir, FEATURE_COMMAND, List.of("--bootstrap-server", bootstrap,
                    "downgrade", "--feature", "transaction.version=1"));
            assertThat(downgrade.exitCode()).as(downgrade.toString()).isZero();
            KafkaTool.Result refused = KafkaTool.run(dir, FEATURE_COMMAND, List.of("--bootstrap-server", bootstrap,
                    "upgrade", "--feature", "metadata.version=20"));
            assertThat(refused.exitCode()).as(refused.toString()).isNotZero();
            for (var node : cluster.nodes()) {
                try (org.apache.kafka.clients.admin.Admin one = org.apache.kafka.clients.admin.Admin.create(
                        Map.of("bootstrap.servers", node.bootstrap()))) {
                    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(one.describeFeatures()
                            .featureMetadata().get(10, TimeUnit.SECONDS).finalizedFeatures().get("transaction.version")
                            .maxVersionLevel()).as("node %d", node.id).isEqualTo((short) 1));
                }
            }
            KafkaTool.Result upgrade = KafkaTool.run(dir, FEATURE_COMMAND, List.of("--bootstrap-server", bootstrap,
                    "upgrade", "--feature", "transaction.version=2"));
            assertThat(upgrade.exitCode()).as(upgrade.toString()).isZero();

            // the quorum's leader dies: another voter leads in a later epoch, and reports the dead one lagging
            cluster.node(leader).kill();
            await().atMost(Duration.ofSeconds(60)).ignoreExceptions().untilAsserted(() -> {
                QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get(10, TimeUnit.SECONDS);
                assertThat(q.leaderId()).isNotEqualTo(leader);
                assertThat(q.leaderEpoch()).isGreaterThan(quorum.leaderEpoch());
            });
        }
    }
}
