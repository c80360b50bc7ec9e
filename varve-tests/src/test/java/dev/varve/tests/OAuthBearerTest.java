package dev.varve.tests;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jose4j.jwk.JsonWebKey;
import org.jose4j.jwk.JsonWebKeySet;
import org.jose4j.jwk.RsaJsonWebKey;
import org.jose4j.jwk.RsaJwkGenerator;
import org.jose4j.jws.AlgorithmIdentifiers;
import org.jose4j.jws.JsonWebSignature;
import org.jose4j.jwt.JwtClaims;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * SASL/OAUTHBEARER with Kafka's own server classes: unsecured JWTs (Kafka's default validator, for
 * development), and signed JWTs checked against a JWKS file by Kafka's
 * {@code OAuthBearerValidatorCallbackHandler} (signature, audience, expiry), the client fetching its
 * token with Kafka's {@code OAuthBearerLoginCallbackHandler} from a file. A token signed by another
 * key, for another audience or from another issuer is refused; so is a JWKS setup without an expected
 * audience and issuer, at start (Kafka 4.4's validator requires both).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class OAuthBearerTest {
    private static final String ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls";
    private static final String LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required";

    @TempDir
    Path dir;
    private final List<AutoCloseable> closing = new ArrayList<>();
    private String allowedBefore;

    @AfterEach
    void close() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
        if (allowedBefore == null) {
            System.clearProperty(ALLOWED_URLS);
        } else {
            System.setProperty(ALLOWED_URLS, allowedBefore);
        }
    }

    private Broker start(Map<String, String> extra) throws Exception {
        Map<String, String> props = new HashMap<>(extra);
        props.put("log.dirs", dir.resolve("data").toString());
        props.put("listeners", "SASL_PLAINTEXT://127.0.0.1:0");
        props.put("sasl.enabled.mechanisms", "OAUTHBEARER");
        props.put("listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config", LOGIN_MODULE + ";");
        Broker broker = Broker.start(BrokerConfig.from(props));
        closing.add(broker);
        return broker;
    }

    private static String bootstrap(Broker broker) {
        return "127.0.0.1:" + broker.boundAddresses().get(0).getPort();
    }

    /** Writes values with {@code security} and reads them back with it; the admin creates the topic first. */
    private void roundTrip(Broker broker, Map<String, Object> security, String topic) throws Exception {
        Map<String, Object> a = new HashMap<>(security);
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap(broker));
        try (Admin admin = Admin.create(a)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
        }
        Map<String, Object> p = new HashMap<>(a);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 200; i++) {
                sent.add("token-" + i);
                producer.send(new ProducerRecord<>(topic, 0, null, "token-" + i));
            }
            producer.flush();
        }
        Map<String, Object> c = new HashMap<>(a);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, "oauth-readers");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (got.size() < sent.size() && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> got.add(r.value()));
            }
        }
        assertThat(got).isEqualTo(sent);
    }

    @Test
    void unsecuredTokensAuthenticateWithKafkasDefaultValidator() throws Exception {
        Broker broker = start(Map.of());
        roundTrip(broker, Map.of("security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "OAUTHBEARER",
                "sasl.jaas.config", LOGIN_MODULE + " unsecuredLoginStringClaim_sub=\"alice\";"), "oauth-unsecured");
    }

    @Test
    void signedTokensAreCheckedAgainstAJwksFile() throws Exception {
        RsaJsonWebKey key = RsaJwkGenerator.generateJwk(2048);
        key.setKeyId("varve-test-1");
        RsaJsonWebKey stranger = RsaJwkGenerator.generateJwk(2048);
        stranger.setKeyId("varve-test-1"); // same key id, another key: only the signature can tell
        Path jwks = Files.writeString(dir.resolve("jwks.json"), new JsonWebKeySet(key).toJson(JsonWebKey.OutputControlLevel.PUBLIC_ONLY));
        Path good = Files.writeString(dir.resolve("good.jwt"), token(key, "alice", "varve"));
        Path forged = Files.writeString(dir.resolve("forged.jwt"), token(stranger, "mallory", "varve"));
        Path elsewhere = Files.writeString(dir.resolve("elsewhere.jwt"), token(key, "alice", "another-service"));
        Path foreign = Files.writeString(dir.resolve("foreign.jwt"), token(key, "https://other.example", "alice", "varve"));
        allowedBefore = System.getProperty(ALLOWED_URLS);
        System.setProperty(ALLOWED_URLS, String.join(",", jwks.toUri().toString(), good.toUri().toString(),
                forged.toUri().toString(), elsewhere.toUri().toString(), foreign.toUri().toString()));
        assertThatThrownBy(() -> start(Map.of(
                "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
                "sasl.oauthbearer.jwks.endpoint.url", jwks.toUri().toString())))
                .isInstanceOf(org.apache.kafka.common.config.ConfigException.class).hasMessageContaining("sasl.oauthbearer.expected.audience");

        Broker broker = start(Map.of(
                "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
                "sasl.oauthbearer.jwks.endpoint.url", jwks.toUri().toString(),
                "sasl.oauthbearer.expected.audience", "varve",
                "sasl.oauthbearer.expected.issuer", "https://issuer.example"));
        roundTrip(broker, client(good), "oauth-signed");
        for (Path refused : List.of(forged, elsewhere, foreign)) {
            Map<String, Object> a = new HashMap<>(client(refused));
            a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap(broker));
            try (Admin admin = Admin.create(a)) {
                assertThatThrownBy(() -> admin.listTopics().names().get(20, TimeUnit.SECONDS)).as(refused.toString())
                        .isInstanceOf(ExecutionException.class).cause().isInstanceOf(SaslAuthenticationException.class);
            }
        }
    }

    /** A client that fetches its token from {@code tokenFile} with Kafka's login callback handler. */
    private static Map<String, Object> client(Path tokenFile) {
        return Map.of("security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "OAUTHBEARER",
                "sasl.jaas.config", LOGIN_MODULE + ";",
                "sasl.login.callback.handler.class", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
                "sasl.oauthbearer.token.endpoint.url", tokenFile.toUri().toString());
    }

    private static String token(RsaJsonWebKey key, String subject, String audience) throws Exception {
        return token(key, "https://issuer.example", subject, audience);
    }

    private static String token(RsaJsonWebKey key, String issuer, String subject, String audience) throws Exception {
        JwtClaims claims = new JwtClaims();
        claims.setIssuer(issuer);
        claims.setSubject(subject);
        claims.setAudience(audience);
        claims.setIssuedAtToNow();
        claims.setExpirationTimeMinutesInTheFuture(60);
        claims.setClaim("scope", "kafka");
        JsonWebSignature jws = new JsonWebSignature();
        jws.setPayload(claims.toJson());
        jws.setKey(key.getPrivateKey());
        jws.setKeyIdHeaderValue(key.getKeyId());
        jws.setAlgorithmHeaderValue(AlgorithmIdentifiers.RSA_USING_SHA256);
        return jws.getCompactSerialization();
    }
}
