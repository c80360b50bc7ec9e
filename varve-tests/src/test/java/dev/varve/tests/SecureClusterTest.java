package dev.varve.tests;

import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartitionInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * A 3-process cluster whose only Kafka-protocol listener is secured, once as SSL with mutual TLS required
 * (each broker presents its own certificate to the others and checks theirs, hostname included; the
 * metadata quorum on mutual TLS too), once as SASL_SSL with SCRAM, once as SASL_SSL with SASL/PLAIN and
 * ACLs on (brokers log in to each other with the listener's own JAAS section, as Kafka brokers do):
 * clients, replica fetches, transaction markers and verification all go over it. An
 * acks=all producer keeps writing while a leader is killed -9 and restarted; the restarted broker catches
 * up over the secured listener and rejoins every ISR, and every acknowledged record is read back exactly
 * once, in order.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class SecureClusterTest {
    private static final String TOPIC = "over-tls";
    private static final int PARTITIONS = 6;

    @TempDir
    Path dir;

    @Test
    void replicationAndFailoverOverMutualTls() throws Exception {
        TestPki ca = TestPki.create(dir.resolve("pki"), "cluster");
        Path app = ca.pkcs12(ca.issue("CN=app,O=clients"), "app.p12");
        TestPki stranger = TestPki.create(dir.resolve("stranger"), "stranger");
        Path strangerCert = stranger.pkcs12(stranger.issue("CN=broker-9,O=varve"), "broker-9.p12");
        // the metadata quorum on mutual TLS too (Ratis over gRPC)
        // an authorizer that lets everyone at topics without ACLs, and only the brokers (super users) at the quorum
        try (TestCluster cluster = TestCluster.start(dir.resolve("nodes"), 3, Map.of("ssl.client.auth", "required",
                        "listener.security.protocol.map", "SSL:SSL,CONTROLLER:SSL",
                        "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                        "allow.everyone.if.no.acl.found", "true",
                        "super.users", "User:O=varve,CN=broker-1;User:O=varve,CN=broker-2;User:O=varve,CN=broker-3"), "SSL",
                id -> ca.brokerSsl("", ca.pkcs12(ca.issue("CN=broker-" + id + ",O=varve"), "broker-" + id + ".p12")),
                ca.clientSsl(app))) {
            // the leader killed -9 is a voter: the quorum elects and commits over TLS without it, and it rejoins
            produceThroughAFailover(cluster, "(SSL, SSL,");

            // the quorum port is no door to the metadata: it serves TLS to its authority's certificates only
            TestCluster.Node voter = cluster.node(2);
            assertThat(ca.servedSerial(voter.host, voter.raftPort, dir.resolve("pki").resolve("broker-1.p12")))
                    .as("a broker's certificate").isNotNull();
            assertThatThrownBy(() -> ca.servedSerial(voter.host, voter.raftPort, app))
                    .as("a client's certificate from the same authority: not a quorum peer").isInstanceOf(IllegalStateException.class);
            try (java.net.Socket plain = new java.net.Socket(voter.host, voter.raftPort)) {
                plain.setSoTimeout(5_000);
                plain.getOutputStream().write(new byte[]{0, 0, 0, 10, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0});
                assertThatThrownBy(() -> new java.io.DataInputStream(plain.getInputStream()).readInt())
                        .as("a plaintext client gets nothing back").isInstanceOf(java.io.IOException.class);
            }
            assertThatThrownBy(() -> ca.servedSerial(voter.host, voter.raftPort, null)).as("no client certificate")
                    .isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> stranger.servedSerial(voter.host, voter.raftPort, strangerCert))
                    .as("another authority's certificate").isInstanceOf(IllegalStateException.class);
            // KIP-226 in a cluster: one broker's certificate rotated through the metadata, no restart
            TestCluster.Node node = cluster.nodes().get(0);
            TestPki.Issued renewed = ca.issue("CN=broker-" + node.id + ",O=varve");
            Path renewedStore = ca.pkcs12(renewed, "broker-" + node.id + "-renewed.p12");
            String host = node.host;
            int port = node.port;
            assertThat(ca.servedSerial(host, port, app)).isNotEqualTo(renewed.chain()[0].getSerialNumber());
            try (Admin admin = cluster.admin()) {
                admin.incrementalAlterConfigs(Map.of(new org.apache.kafka.common.config.ConfigResource(
                        org.apache.kafka.common.config.ConfigResource.Type.BROKER, Integer.toString(node.id)),
                        List.of(new org.apache.kafka.clients.admin.AlterConfigOp(new org.apache.kafka.clients.admin.ConfigEntry(
                                "listener.name.ssl.ssl.keystore.location", renewedStore.toString()),
                                org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);
            }
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    assertThat(ca.servedSerial(host, port, app)).isEqualTo(renewed.chain()[0].getSerialNumber()));
            // and the cluster still works over it
            try (Admin admin = cluster.admin()) {
                assertThat(admin.describeCluster().nodes().get(30, TimeUnit.SECONDS)).hasSize(3);
            }
        }
    }

    /**
     * SCRAM-SHA-512 users live in the cluster metadata: created through one broker (by an operator
     * logged in with PLAIN), they authenticate clients on every broker, and the brokers themselves, whose
     * replica fetches log in as the SCRAM user "broker" created the same way; replication then runs
     * through a kill -9 over SCRAM alone.
     */
    @Test
    void scramUsersInTheMetadataAuthenticateClientsAndBrokers() throws Exception {
        TestPki ca = TestPki.create(dir.resolve("pki"), "cluster");
        String plainJaas = PlainUsers.jaas(null, "operator");
        String scramJaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"broker\""
                + " password=\"broker-secret\";";
        Map<String, Object> operator = plainUser(ca, "operator");
        try (TestCluster cluster = TestCluster.start(dir.resolve("nodes"), 3, Map.of("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512",
                        "sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512",
                        "listener.name.sasl_ssl.plain.sasl.jaas.config", plainJaas,
                        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", scramJaas),
                "SASL_SSL", id -> ca.brokerSsl("", ca.pkcs12(ca.issue("CN=broker-" + id + ",O=varve"), "broker-" + id + ".p12")),
                operator)) {
            try (Admin admin = cluster.admin()) {
                admin.alterUserScramCredentials(List.of(
                        new UserScramCredentialUpsertion("broker", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                "broker-secret"),
                        new UserScramCredentialUpsertion("app", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                "app-secret"))).all().get(30, TimeUnit.SECONDS);
            }
            Map<String, Object> app = new java.util.HashMap<>(ca.clientSsl(null));
            app.put("security.protocol", "SASL_SSL");
            app.put("sasl.mechanism", "SCRAM-SHA-512");
            app.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"app\""
                    + " password=\"app-secret\";");
            // every broker knows the user: each one alone authenticates it
            for (TestCluster.Node node : cluster.nodes()) {
                Map<String, Object> only = new java.util.HashMap<>(app);
                only.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, node.bootstrap());
                only.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
                try (Admin admin = Admin.create(only)) {
                    await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() ->
                            assertThat(admin.describeUserScramCredentials().all().get(10, TimeUnit.SECONDS).keySet())
                                    .containsExactlyInAnyOrder("broker", "app"));
                }
            }
            cluster.useClientSecurity(app);
            produceThroughAFailover(cluster, "(SASL_SSL, SASL_SSL,");
        }
    }

    /**
     * The ACL authorizer on a 3-process SASL_SSL cluster: ACLs created through one broker (forwarded to
     * the controller, kept in the metadata) are enforced by every broker; the brokers replicate as a super
     * user; the application user, granted its topics by prefix, writes through a kill -9 and restart of a
     * leader and reads every acknowledged record back; a user without ACLs is refused on every broker and
     * writes nothing.
     */
    @Test
    void aclsInTheMetadataAreEnforcedByEveryBrokerWhileBrokersReplicateAsSuperUsers() throws Exception {
        TestPki ca = TestPki.create(dir.resolve("pki"), "cluster");
        String jaas = PlainUsers.jaas("broker", "broker", "operator", "app", "mallory");
        try (TestCluster cluster = TestCluster.start(dir.resolve("nodes"), 3, Map.of("sasl.enabled.mechanisms", "PLAIN",
                        "sasl.mechanism.inter.broker.protocol", "PLAIN", "listener.name.sasl_ssl.plain.sasl.jaas.config", jaas,
                        "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                        "super.users", "User:broker;User:operator"),
                "SASL_SSL", id -> ca.brokerSsl("", ca.pkcs12(ca.issue("CN=broker-" + id + ",O=varve"), "broker-" + id + ".p12")),
                plainUser(ca, "operator"))) {
            try (Admin operator = cluster.admin()) {
                operator.createAcls(List.of(
                        new AclBinding(new ResourcePattern(ResourceType.TOPIC, "over-", PatternType.PREFIXED),
                                new AccessControlEntry("User:app", "*", AclOperation.ALL, AclPermissionType.ALLOW)),
                        new AclBinding(new ResourcePattern(ResourceType.GROUP, "*", PatternType.LITERAL),
                                new AccessControlEntry("User:app", "*", AclOperation.READ, AclPermissionType.ALLOW))))
                        .all().get(30, TimeUnit.SECONDS);
                // a client quota, forwarded to the controller like the ACLs (generous: it must not slow the test)
                operator.alterClientQuotas(List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration(
                        new org.apache.kafka.common.quota.ClientQuotaEntity(Map.of("user", "app")),
                        List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration.Op("producer_byte_rate", 1e9)))))
                        .all().get(30, TimeUnit.SECONDS);
            }
            // every broker has them: each alone answers DescribeAcls with both, and refuses mallory
            for (TestCluster.Node node : cluster.nodes()) {
                Map<String, Object> operatorOnly = new java.util.HashMap<>(plainUser(ca, "operator"));
                operatorOnly.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, node.bootstrap());
                Map<String, Object> malloryOnly = new java.util.HashMap<>(plainUser(ca, "mallory"));
                malloryOnly.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, node.bootstrap());
                try (Admin admin = Admin.create(operatorOnly); Admin mallory = Admin.create(malloryOnly)) {
                    await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() ->
                            assertThat(admin.describeAcls(AclBindingFilter.ANY).values().get(10, TimeUnit.SECONDS)).hasSize(2));
                    await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() ->
                            assertThat(admin.describeClientQuotas(org.apache.kafka.common.quota.ClientQuotaFilter.all())
                                    .entities().get(10, TimeUnit.SECONDS)).containsEntry(
                                    new org.apache.kafka.common.quota.ClientQuotaEntity(Map.of("user", "app")),
                                    Map.of("producer_byte_rate", 1e9)));
                    assertThatThrownBy(() -> mallory.createTopics(List.of(new NewTopic("over-mallory", 1, (short) 3)))
                            .all().get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(TopicAuthorizationException.class);
                    assertThatThrownBy(() -> mallory.describeAcls(AclBindingFilter.ANY).values().get(30, TimeUnit.SECONDS))
                            .hasCauseInstanceOf(ClusterAuthorizationException.class);
                }
            }
            cluster.useClientSecurity(plainUser(ca, "app"));
            produceThroughAFailover(cluster, "(SASL_SSL, SASL_SSL,");
            // mallory cannot write what app wrote to, on any broker, and nothing of hers lands
            cluster.useClientSecurity(plainUser(ca, "mallory"));
            try (KafkaProducer<String, String> mallory = cluster.producer(Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false,
                    ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000))) {
                assertThatThrownBy(() -> mallory.send(new ProducerRecord<>(TOPIC, 0, null, "forged")).get(30, TimeUnit.SECONDS))
                        .hasCauseInstanceOf(TopicAuthorizationException.class);
            }
            cluster.useClientSecurity(plainUser(ca, "app"));
            Map<Integer, List<String>> written = cluster.readPartitions(TOPIC, PARTITIONS);
            assertThat(written.values().stream().flatMap(List::stream)).noneMatch("forged"::equals);
            long total = written.values().stream().mapToLong(List::size).sum();

            // app consumes everything in a group (READ on the group and the topic), over SASL_SSL
            Map<String, Object> consumerProps = new java.util.HashMap<>(plainUser(ca, "app"));
            consumerProps.put(org.apache.kafka.clients.consumer.ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
            consumerProps.put(org.apache.kafka.clients.consumer.ConsumerConfig.GROUP_ID_CONFIG, "app-group");
            consumerProps.put(org.apache.kafka.clients.consumer.ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            try (var consumer = new org.apache.kafka.clients.consumer.KafkaConsumer<String, String>(consumerProps,
                    new org.apache.kafka.common.serialization.StringDeserializer(),
                    new org.apache.kafka.common.serialization.StringDeserializer())) {
                consumer.subscribe(List.of(TOPIC));
                long read = 0;
                long deadline = System.currentTimeMillis() + 60_000;
                while (read < total && System.currentTimeMillis() < deadline) {
                    read += consumer.poll(Duration.ofMillis(500)).count();
                }
                assertThat(read).as("records app's group read").isEqualTo(total);
                consumer.commitSync();
            }

            // the operator moves a partition; the new replica copies it over SASL_SSL as the broker super user
            cluster.useClientSecurity(plainUser(ca, "operator"));
            try (Admin operator = cluster.admin()) {
                TestCluster.createAndAwaitInSync(operator, new NewTopic("over-moved", 1, (short) 2), Duration.ofSeconds(60));
                List<Integer> before = new java.util.ArrayList<>(TestCluster.ids(TestCluster.describe(operator, "over-moved").get(0).replicas()));
                int absent = java.util.stream.IntStream.rangeClosed(1, 3).filter(i -> !before.contains(i)).findFirst().orElseThrow();
                try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                    for (int i = 0; i < 100; i++) {
                        p.send(new ProducerRecord<>("over-moved", 0, null, "m" + i)).get(30, TimeUnit.SECONDS);
                    }
                }
                List<Integer> after = List.of(absent, before.get(0));
                operator.alterPartitionReassignments(Map.of(new org.apache.kafka.common.TopicPartition("over-moved", 0),
                        java.util.Optional.of(new org.apache.kafka.clients.admin.NewPartitionReassignment(after))))
                        .all().get(30, TimeUnit.SECONDS);
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                    TopicPartitionInfo p = TestCluster.describe(operator, "over-moved").get(0);
                    assertThat(TestCluster.ids(p.replicas())).containsExactlyInAnyOrderElementsOf(after);
                    assertThat(TestCluster.ids(p.isr())).containsExactlyInAnyOrderElementsOf(after);
                });
            }
            assertThat(cluster.readPartition("over-moved", 0)).hasSize(100);
        }
    }

    private static Map<String, Object> plainUser(TestPki ca, String user) {
        return PlainUsers.overTls(ca, user);
    }

    private static void produceThroughAFailover(TestCluster cluster, String listenerLogged) throws Exception {
        try (Admin admin = cluster.admin()) {
            TestCluster.createAndAwaitInSync(admin, new NewTopic(TOPIC, PARTITIONS, (short) 3)
                    .configs(Map.of("min.insync.replicas", "2")), Duration.ofSeconds(60));

            AckedRecords acked = new AckedRecords();
            ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
            AtomicBoolean running = new AtomicBoolean(true);
            Thread producer = new Thread(() -> {
                try (KafkaProducer<String, String> p = cluster.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 5))) {
                    long seq = 0;
                    while (running.get()) {
                        String value = AckedRecords.value(seq);
                        int partition = (int) (seq++ % PARTITIONS);
                        p.send(new ProducerRecord<>(TOPIC, partition, null, value), (md, e) -> {
                            if (e != null) {
                                failures.add(e);
                            } else {
                                acked.add(md.partition(), value);
                            }
                        });
                        Thread.sleep(1);
                    }
                    p.flush();
                } catch (Exception e) {
                    failures.add(e);
                }
            });
            producer.start();
            try {
                acked.awaitAtLeast(500, Duration.ofSeconds(60));
                int leader = TestCluster.leaderId(TestCluster.describe(admin, TOPIC).get(0));
                cluster.node(leader).kill();
                acked.awaitAtLeast(acked.count() + 500, Duration.ofSeconds(60));
                cluster.node(leader).start();
                // it catches up from the others over TLS and is back in every ISR
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                    for (TopicPartitionInfo p : TestCluster.describe(admin, TOPIC)) {
                        assertThat(TestCluster.ids(p.isr())).as("partition %d", p.partition()).contains(leader);
                    }
                });
                acked.awaitAtLeast(acked.count() + 500, Duration.ofSeconds(60));
            } finally {
                running.set(false);
                producer.join(60_000);
            }
            assertThat(failures).as("producer errors").isEmpty();
            acked.assertReadBack(cluster.readPartitions(TOPIC, PARTITIONS), PARTITIONS);
            // the only Kafka-protocol listener was this one, so the restarted broker's catch-up went over it
            assertThat(cluster.logs()).contains(listenerLogged);
        }
    }
}
