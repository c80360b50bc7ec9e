package dev.varve.tests;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.ResourceNotFoundException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.UnacceptableCredentialException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * SASL/SCRAM-SHA-256 and -512 on a single node: users are created with Kafka's own kafka-configs
 * ({@code ConfigCommand}) and with the Admin API, authenticate the Java client and librdkafka (kcat),
 * are refused with a wrong password, an unknown name or a mechanism they have no credential for,
 * lose access when their credential is deleted, and keep it across a restart (the single node's
 * credential file). The cluster case is {@code SecureClusterTest}.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ScramTest {
    @TempDir
    Path dir;
    private final List<AutoCloseable> closing = new ArrayList<>();
    private Broker broker;

    @AfterEach
    void close() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    /** A PLAINTEXT listener (for the operator) and a SASL_PLAINTEXT one offering both SCRAM mechanisms only. */
    private Broker start() throws Exception {
        Map<String, String> props = new HashMap<>();
        props.put("log.dirs", dir.resolve("data").toString());
        props.put("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0");
        props.put("sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512");
        return Broker.start(BrokerConfig.from(props));
    }

    private String bootstrap(int listener) {
        return "127.0.0.1:" + broker.boundAddresses().get(listener).getPort();
    }

    private static Map<String, Object> scram(String mechanism, String user, String password) {
        return new HashMap<>(Map.of("security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", mechanism,
                "sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + user
                        + "\" password=\"" + password + "\";"));
    }

    private Admin admin(String bootstrap, Map<String, Object> security) {
        Map<String, Object> p = new HashMap<>(security);
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        Admin admin = Admin.create(p);
        closing.add(admin);
        return admin;
    }

    /** The Admin calls of {@code security} on the SASL listener get through (a metadata round trip). */
    private void authenticates(Map<String, Object> security) throws Exception {
        admin(bootstrap(1), security).listTopics().names().get(15, TimeUnit.SECONDS);
    }

    private void refused(Map<String, Object> security) {
        assertThatThrownBy(() -> admin(bootstrap(1), security).listTopics().names().get(15, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class).cause().isInstanceOf(SaslAuthenticationException.class);
    }

    @Test
    void usersCreatedWithKafkaConfigsAndTheAdminApiAuthenticateAndSurviveARestart() throws Exception {
        broker = start();
        // kafka-configs.sh, as a Kafka operator adds a SCRAM user
        KafkaTool.Result added = KafkaTool.run(dir, "org.apache.kafka.tools.ConfigCommand", List.of("--bootstrap-server",
                bootstrap(0), "--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=alice-secret]",
                "--entity-type", "users", "--entity-name", "alice"));
        assertThat(added.exitCode()).as(added.toString()).isZero();
        assertThat(added.stdout()).as(added.toString()).contains("Completed updating config for user alice.");
        Admin operator = admin(bootstrap(0), Map.of());
        operator.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("bob",
                new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), "bob-secret"))).all().get(15, TimeUnit.SECONDS);

        Map<String, UserScramCredentialsDescription> described = operator.describeUserScramCredentials().all().get(15, TimeUnit.SECONDS);
        assertThat(described.keySet()).containsExactlyInAnyOrder("alice", "bob");
        assertThat(described.get("alice").credentialInfos()).extracting(ScramCredentialInfo::mechanism, ScramCredentialInfo::iterations)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(ScramMechanism.SCRAM_SHA_512, 8192));

        // alice writes over SCRAM-SHA-512, bob reads the same bytes back over SCRAM-SHA-256
        Map<String, Object> alice = scram("SCRAM-SHA-512", "alice", "alice-secret");
        admin(bootstrap(1), alice).createTopics(List.of(new NewTopic("scram", 2, (short) 1))).all().get(15, TimeUnit.SECONDS);
        List<byte[]> sent = new ArrayList<>();
        Map<String, Object> pp = new HashMap<>(alice);
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap(1));
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
            java.util.Random random = new java.util.Random(11);
            for (int i = 0; i < 400; i++) {
                byte[] value = new byte[1 + random.nextInt(2000)];
                random.nextBytes(value);
                sent.add(value);
                producer.send(new ProducerRecord<>("scram", 0, null, value));
            }
            producer.flush();
        }
        Map<String, Object> cp = scram("SCRAM-SHA-256", "bob", "bob-secret");
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap(1));
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, "scram-readers");
        List<byte[]> got = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of("scram"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (got.size() < sent.size() && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> got.add(r.value()));
            }
        }
        assertThat(got).hasSameSizeAs(sent);
        for (int i = 0; i < sent.size(); i++) {
            assertThat(Arrays.equals(got.get(i), sent.get(i))).as("record %d", i).isTrue();
        }

        // wrong password, unknown user, a mechanism alice has no credential for
        refused(scram("SCRAM-SHA-512", "alice", "wrong"));
        refused(scram("SCRAM-SHA-512", "mallory", "x"));
        refused(scram("SCRAM-SHA-256", "alice", "alice-secret"));

        // bad alterations get Kafka's errors and change nothing
        assertThatThrownBy(() -> operator.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("carol",
                new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), "c"))).all().get(15, TimeUnit.SECONDS))
                .cause().isInstanceOf(UnacceptableCredentialException.class);
        assertThatThrownBy(() -> operator.alterUserScramCredentials(List.of(new UserScramCredentialDeletion("carol",
                ScramMechanism.SCRAM_SHA_256))).all().get(15, TimeUnit.SECONDS))
                .cause().isInstanceOf(ResourceNotFoundException.class);

        // a deleted credential stops authenticating at once
        operator.alterUserScramCredentials(List.of(new UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_256)))
                .all().get(15, TimeUnit.SECONDS);
        refused(scram("SCRAM-SHA-256", "bob", "bob-secret"));

        // after a restart alice still gets in, bob still does not
        for (AutoCloseable c : closing) {
            c.close();
        }
        closing.clear();
        broker.close();
        broker = start();
        authenticates(scram("SCRAM-SHA-512", "alice", "alice-secret"));
        refused(scram("SCRAM-SHA-256", "bob", "bob-secret"));
        assertThat(admin(bootstrap(0), Map.of()).describeUserScramCredentials().all().get(15, TimeUnit.SECONDS).keySet())
                .containsExactly("alice");
        assertThat(Files.readString(dir.resolve("data").resolve("varve-scram-credentials"))).doesNotContain("alice-secret");
    }

    @Test
    void kcatAuthenticatesWithScramSha512() throws Exception {
        Kcat.require();
        broker = start();
        admin(bootstrap(0), Map.of()).alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("dora",
                new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), "dora-secret"))).all().get(15, TimeUnit.SECONDS);
        admin(bootstrap(0), Map.of()).createTopics(List.of(new NewTopic("kcat-scram", 1, (short) 1))).all().get(15, TimeUnit.SECONDS);
        List<String> lines = java.util.stream.IntStream.range(0, 200).mapToObj(i -> "scram-line-" + i).toList();
        Path input = Files.write(dir.resolve("lines.txt"), lines);
        List<String> auth = List.of("-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=SCRAM-SHA-512",
                "-X", "sasl.username=dora", "-X", "sasl.password=dora-secret");
        Kcat.roundTrip(dir, bootstrap(1), auth, "kcat-scram", input, lines);
        List<String> wrong = new ArrayList<>(List.of("kcat", "-b", bootstrap(1), "-L", "-m", "5", "-X", "security.protocol=sasl_plaintext",
                "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=dora", "-X", "sasl.password=nope"));
        assertThat(Kcat.run(dir, wrong, null)).doesNotStartWith("exit 0");
    }
}
