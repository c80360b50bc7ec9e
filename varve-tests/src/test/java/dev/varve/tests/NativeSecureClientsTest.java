package dev.varve.tests;

import com.fasterxml.jackson.databind.JsonNode;
import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import dev.varve.storage.testing.Capabilities;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * librdkafka (python3-confluent-kafka, Debian's 2.0.2) and kafkajs over secured listeners of one
 * broker: SASL_SSL with SCRAM-SHA-512 and SCRAM-SHA-256 users created through the Admin API, and SSL
 * with mutual TLS from PEM files. Each client writes records to a topic and reads the same values back
 * ({@code src/test/python/confluent_kafka_secure.py}, {@code src/test/js/kafkajs_secure.js}); the test
 * also checks with the Java Admin that exactly that many records are in the log. Skipped when a client
 * is missing, except with {@code CI=true}.
 */
@Timeout(240)
class NativeSecureClientsTest {
    private static final int RECORDS = 300;

    @TempDir
    static Path tmp;
    private static TestPki ca;
    private static Broker broker;
    private static Admin operator;
    private static Path caPem;
    private static Path certPem;
    private static Path keyPem;

    /** One way in: a listener and the client's credentials. */
    enum Access { SCRAM_SHA_512, SCRAM_SHA_256, MUTUAL_TLS }

    @BeforeAll
    static void start() throws Exception {
        ca = TestPki.create(tmp.resolve("pki"), "native");
        Map<String, String> props = new HashMap<>(ca.brokerSsl("", ca.pkcs12(ca.issue("CN=broker,O=varve"), "broker.p12")));
        props.put("log.dirs", tmp.resolve("data").toString());
        props.put("listeners", "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0");
        props.put("sasl.enabled.mechanisms", "SCRAM-SHA-512,SCRAM-SHA-256");
        props.put("listener.name.ssl.ssl.client.auth", "required");
        broker = Broker.start(BrokerConfig.from(props));
        operator = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap(0)));
        operator.alterUserScramCredentials(List.of(
                new UserScramCredentialUpsertion("native512", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), "secret-512"),
                new UserScramCredentialUpsertion("native256", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), "secret-256")))
                .all().get(15, TimeUnit.SECONDS);
        TestPki.Issued client = ca.issue("CN=native,O=clients");
        caPem = ca.write("ca.pem", ca.caPem());
        certPem = ca.write("native-cert.pem", TestPki.chainPem(client));
        keyPem = ca.write("native-key.pem", TestPki.keyPem(client));
    }

    @AfterAll
    static void stop() throws Exception {
        if (operator != null) {
            operator.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    private static String bootstrap(int listener) {
        return "127.0.0.1:" + broker.boundAddresses().get(listener).getPort();
    }

    /** The script's arguments for {@code access}: its listener and credentials, in the client's own terms. */
    private static List<String> args(NativeTransactionalClientsTest.Client client, Access access) {
        boolean python = client == NativeTransactionalClientsTest.Client.LIBRDKAFKA;
        List<String> out = new ArrayList<>();
        switch (access) {
            case SCRAM_SHA_512, SCRAM_SHA_256 -> {
                String mechanism = access == Access.SCRAM_SHA_512 ? "SCRAM-SHA-512" : "SCRAM-SHA-256";
                String user = access == Access.SCRAM_SHA_512 ? "native512" : "native256";
                String password = access == Access.SCRAM_SHA_512 ? "secret-512" : "secret-256";
                out.addAll(List.of("--bootstrap", bootstrap(1)));
                if (python) {
                    out.addAll(List.of("--config", "security.protocol=sasl_ssl", "--config", "sasl.mechanisms=" + mechanism,
                            "--config", "sasl.username=" + user, "--config", "sasl.password=" + password,
                            "--config", "ssl.ca.location=" + caPem));
                } else {
                    out.addAll(List.of("--sasl", mechanism.toLowerCase(java.util.Locale.ROOT) + ":" + user + ":" + password,
                            "--ca", caPem.toString()));
                }
            }
            case MUTUAL_TLS -> {
                out.addAll(List.of("--bootstrap", bootstrap(2)));
                if (python) {
                    out.addAll(List.of("--config", "security.protocol=ssl", "--config", "ssl.ca.location=" + caPem,
                            "--config", "ssl.certificate.location=" + certPem, "--config", "ssl.key.location=" + keyPem));
                } else {
                    out.addAll(List.of("--ca", caPem.toString(), "--cert", certPem.toString(), "--key", keyPem.toString()));
                }
            }
            default -> throw new IllegalArgumentException(access.toString());
        }
        return out;
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(Access.class)
    void librdkafkaRoundTrips(Access access) throws Exception {
        roundTrip(NativeTransactionalClientsTest.Client.LIBRDKAFKA, "python/confluent_kafka_secure.py", access);
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(Access.class)
    void kafkajsRoundTrips(Access access) throws Exception {
        roundTrip(NativeTransactionalClientsTest.Client.KAFKAJS, "js/kafkajs_secure.js", access);
    }

    private void roundTrip(NativeTransactionalClientsTest.Client client, String script, Access access) throws Exception {
        assumeTrue(Capabilities.require(NativeTransactionalClientsTest.probe(client), client.what), client.what + " is missing");
        String topic = "secure-" + client.name().toLowerCase(java.util.Locale.ROOT) + "-" + access.name().toLowerCase(java.util.Locale.ROOT);
        operator.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(15, TimeUnit.SECONDS);
        List<String> command = new ArrayList<>(List.of("--topic", topic, "--records", Integer.toString(RECORDS)));
        command.addAll(args(client, access));
        NativeTransactionalClientsTest.Run run = NativeTransactionalClientsTest.run(tmp, client, script, command.toArray(new String[0]));

        assertThat(run.ofType("produced").get(0).get("delivered").asInt()).as("records delivered\n%s", run).isEqualTo(RECORDS);
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < RECORDS; i++) {
            expected.add("secure-" + i + "-" + "x".repeat(i % 200));
        }
        List<String> consumed = new ArrayList<>();
        for (JsonNode v : run.ofType("consumed").get(0).get("values")) {
            consumed.add(v.asText());
        }
        assertThat(consumed).as("values read back\n%s", run).isEqualTo(expected);
        TopicPartition tp = new TopicPartition(topic, 0);
        assertThat(operator.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get(15, TimeUnit.SECONDS).offset())
                .as("records in the log").isEqualTo(RECORDS);
    }
}
