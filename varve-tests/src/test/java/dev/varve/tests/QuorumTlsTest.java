package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartitionInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The metadata quorum over mutual TLS ({@code listener.security.protocol.map=...,CONTROLLER:SSL}): three
 * processes elect, commit and fail over with the Raft traffic and the brokers' commands encrypted and
 * authenticated both ways; the quorum port is no door to the metadata: a plaintext client, a TLS client
 * without a certificate, and one whose certificate another authority issued are all refused in the
 * handshake, and the cluster serves on.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class QuorumTlsTest {
    @TempDir
    Path dir;

    @Test
    void theQuorumRunsOverMutualTlsAndRefusesPeersWithoutAValidCertificate() throws Exception {
        TestPki ca = TestPki.create(dir.resolve("pki"), "quorum");
        TestPki stranger = TestPki.create(dir.resolve("stranger"), "stranger");
        Path strangerCert = stranger.pkcs12(stranger.issue("CN=broker-9,O=varve"), "broker-9.p12");
        Path app = ca.pkcs12(ca.issue("CN=app,O=clients"), "app.p12");
        try (TestCluster cluster = TestCluster.start(dir.resolve("nodes"), 3,
                Map.of("listener.security.protocol.map", "SSL:SSL,CONTROLLER:SSL"), "SSL",
                id -> ca.brokerSsl("", ca.pkcs12(ca.issue("CN=broker-" + id + ",O=varve"), "broker-" + id + ".p12")),
                ca.clientSsl(null))) {
            try (Admin admin = cluster.admin()) {
                TestCluster.createAndAwaitInSync(admin, new NewTopic("guarded", 3, (short) 3)
                        .configs(Map.of("min.insync.replicas", "2")), Duration.ofSeconds(60));
            }
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                for (int i = 0; i < 300; i++) {
                    p.send(new ProducerRecord<>("guarded", i % 3, null, "v" + i)).get(30, TimeUnit.SECONDS);
                }
            }

            TestCluster.Node target = cluster.node(2);
            // the quorum port speaks TLS and knows its own authority's certificates
            assertThat(ca.servedSerial(target.host, target.raftPort, app)).isNotNull();
            // a plaintext client gets nothing back
            try (Socket plain = new Socket(target.host, target.raftPort)) {
                plain.setSoTimeout(5_000);
                plain.getOutputStream().write(new byte[]{0, 0, 0, 10, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0});
                DataInputStream in = new DataInputStream(plain.getInputStream());
                assertThatThrownBy(in::readInt).isInstanceOf(IOException.class);
            }
            // no client certificate, or one from another authority: refused in the handshake
            assertThatThrownBy(() -> ca.servedSerial(target.host, target.raftPort, null)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> stranger.servedSerial(target.host, target.raftPort, strangerCert))
                    .isInstanceOf(IllegalStateException.class);

            // failover over TLS: node 1 killed, the others elect and commit without it, it comes back
            cluster.node(1).kill();
            try (Admin admin = cluster.admin()) {
                await().atMost(Duration.ofSeconds(60)).ignoreExceptions().untilAsserted(() ->
                        admin.createTopics(List.of(new NewTopic("after-failover", 1, (short) 2))).all().get(10, TimeUnit.SECONDS));
                cluster.node(1).start();
                await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> {
                    for (TopicPartitionInfo p : TestCluster.describe(admin, "guarded")) {
                        assertThat(TestCluster.ids(p.isr())).as("partition %d", p.partition()).contains(1);
                    }
                });
            }
            assertThat(cluster.readPartitions("guarded", 3).values().stream().mapToInt(List::size).sum()).isEqualTo(300);
        }
    }
}
