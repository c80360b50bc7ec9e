package dev.varve.tests;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import dev.varve.broker.security.ListenerSecurity;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import javax.security.auth.x500.X500Principal;
import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Listener security, configured with Kafka's keys, against stock clients. SASL/PLAIN over
 * SASL_PLAINTEXT and SASL_SSL with the JAAS settings a Kafka broker takes (Java client and kcat); wrong
 * passwords, unknown users, unsupported mechanisms, requests before authentication and oversized
 * pre-authentication frames refused with nothing written. TLS listeners: bytes in equal bytes out
 * over mutual TLS (fetched records are read into buffers, not sent with sendfile), clients without a
 * certificate, with one from another authority or not trusting the broker refused with nothing
 * written, PEM stores, per-listener settings beside a PLAINTEXT listener, principal names from
 * certificates, and the settings Varve cannot serve refused at start.
 */
class ListenerSecurityTest {
    @TempDir
    Path dir;
    private final List<AutoCloseable> closing = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
    }

    private Broker start(Map<String, String> settings) throws Exception {
        Map<String, String> props = new HashMap<>(settings);
        props.put("log.dirs", dir.resolve("data").toString());
        props.putIfAbsent("listeners", "SSL://127.0.0.1:0");
        Broker broker = Broker.start(BrokerConfig.from(props));
        closing.add(broker);
        return broker;
    }

    private static String bootstrap(Broker broker, int listener) {
        InetSocketAddress a = broker.boundAddresses().get(listener);
        return "127.0.0.1:" + a.getPort();
    }

    private <T extends AutoCloseable> T closeLater(T c) {
        closing.add(c);
        return c;
    }

    private KafkaProducer<byte[], byte[]> producer(String bootstrap, Map<String, Object> ssl) {
        Map<String, Object> p = new HashMap<>(ssl);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 15_000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        return closeLater(new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer()));
    }

    private Admin admin(String bootstrap, Map<String, Object> ssl) {
        Map<String, Object> p = new HashMap<>(ssl);
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        return closeLater(Admin.create(p));
    }

    private List<ConsumerRecord<byte[], byte[]>> consumeAll(String bootstrap, Map<String, Object> ssl, String topic, int expected) {
        Map<String, Object> p = new HashMap<>(ssl);
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "tls-readers");
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (out.size() < expected && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        return out;
    }

    /** A broker whose one listener is SSL, presenting a certificate of {@code ca} and requiring clients' ({@code ssl.client.auth}). */
    private Broker mutualTlsBroker(TestPki ca) throws Exception {
        Map<String, String> settings = new HashMap<>(ca.brokerSsl("", ca.pkcs12(ca.issue("CN=broker,O=varve"), "broker.p12")));
        settings.put("ssl.client.auth", "required");
        return start(settings);
    }

    @Test
    void mutualTlsCarriesEveryByteBothWays() throws Exception {
        TestPki ca = TestPki.create(dir.resolve("pki"), "main");
        Path alice = ca.pkcs12(ca.issue("CN=alice,O=clients"), "alice.p12");
        Broker broker = mutualTlsBroker(ca);
        String boot = bootstrap(broker, 0);
        Map<String, Object> ssl = ca.clientSsl(alice);
        admin(boot, ssl).createTopics(List.of(new NewTopic("secure", 4, (short) 1))).all().get(20, TimeUnit.SECONDS);

        Random random = new Random(42);
        List<ProducerRecord<byte[], byte[]>> sent = new ArrayList<>();
        KafkaProducer<byte[], byte[]> producer = producer(boot, ssl);
        for (int i = 0; i < 3_000; i++) {
            byte[] key = ("k" + i).getBytes();
            byte[] value = new byte[random.nextInt(4_000)]; // ~6 MB in all: fetches far larger than one TLS record
            random.nextBytes(value);
            ProducerRecord<byte[], byte[]> r = new ProducerRecord<>("secure", i % 4, key, value);
            sent.add(r);
            producer.send(r);
        }
        producer.flush();

        List<ConsumerRecord<byte[], byte[]>> got = consumeAll(boot, ssl, "secure", sent.size());
        assertThat(got).hasSize(sent.size());
        for (int p = 0; p < 4; p++) {
            int partition = p;
            List<String> want = sent.stream().filter(r -> r.partition() == partition)
                    .map(r -> new String(r.key()) + ":" + java.util.Arrays.hashCode(r.value()) + ":" + r.value().length).toList();
            List<String> have = got.stream().filter(r -> r.partition() == partition)
                    .map(r -> new String(r.key()) + ":" + java.util.Arrays.hashCode(r.value()) + ":" + r.value().length).toList();
            assertThat(have).as("partition %d in order", p).isEqualTo(want);
        }
        for (ConsumerRecord<byte[], byte[]> r : got) {
            int i = Integer.parseInt(new String(r.key()).substring(1));
            assertThat(r.value()).isEqualTo(sent.get(i).value());
        }
    }

    @Test
    void clientsThatFailTheHandshakeAreRefusedAndWriteNothing() throws Exception {
        TestPki ca = TestPki.create(dir.resolve("pki"), "main");
        TestPki rogue = TestPki.create(dir.resolve("rogue"), "rogue");
        Path alice = ca.pkcs12(ca.issue("CN=alice,O=clients"), "alice.p12");
        Path mallory = rogue.pkcs12(rogue.issue("CN=alice,O=clients"), "mallory.p12");
        Broker broker = mutualTlsBroker(ca);
        String boot = bootstrap(broker, 0);
        Admin good = admin(boot, ca.clientSsl(alice));
        good.createTopics(List.of(new NewTopic("guarded", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);

        Map<String, Object> noCertificate = ca.clientSsl(null);
        Map<String, Object> otherAuthority = new HashMap<>(ca.clientSsl(mallory));
        Map<String, Object> distrustsBroker = rogue.clientSsl(null);
        Map<String, Object> plaintext = Map.of("security.protocol", "PLAINTEXT");
        for (Map<String, Object> bad : List.of(noCertificate, otherAuthority, distrustsBroker)) {
            KafkaProducer<byte[], byte[]> producer = producer(boot, bad);
            assertThatThrownBy(() -> producer.send(new ProducerRecord<>("guarded", "x".getBytes())).get(20, TimeUnit.SECONDS))
                    .satisfiesAnyOf(
                            e -> assertThat(e).isInstanceOf(ExecutionException.class).hasCauseInstanceOf(SslAuthenticationException.class),
                            e -> assertThat(e).isInstanceOf(SslAuthenticationException.class));
            producer.close(Duration.ZERO); // it would go on retrying
        }
        // a plaintext client on the TLS port gets no answer it can read: its request times out or is cut off
        Map<String, Object> shortTimeouts = new HashMap<>(plaintext);
        shortTimeouts.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 3_000);
        shortTimeouts.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 2_000);
        Admin confused = admin(boot, shortTimeouts);
        assertThatThrownBy(() -> confused.listTopics().names().get(10, TimeUnit.SECONDS)).isNotNull();

        // nothing was written, and the broker still serves a good client
        TopicPartition tp = new TopicPartition("guarded", 0);
        assertThat(good.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get(10, TimeUnit.SECONDS).offset()).isZero();
        producer(boot, ca.clientSsl(alice)).send(new ProducerRecord<>("guarded", "ok".getBytes())).get(20, TimeUnit.SECONDS);
        assertThat(good.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get(10, TimeUnit.SECONDS).offset()).isOne();
    }

    @Test
    void pemStoresAndPerListenerSettingsBesideAPlaintextListener() throws Exception {
        TestPki ca = TestPki.create(dir.resolve("pki"), "main");
        TestPki.Issued broker = ca.issue("CN=broker,O=varve");
        Map<String, String> settings = new HashMap<>();
        settings.put("listeners", "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0");
        settings.put("listener.security.protocol.map", "INTERNAL:PLAINTEXT,EXTERNAL:SSL");
        // inline PEM, only for the external listener, as Kafka reads listener.name.<name>.ssl.*
        settings.put("listener.name.external.ssl.keystore.type", "PEM");
        settings.put("listener.name.external.ssl.keystore.key", TestPki.keyPem(broker));
        settings.put("listener.name.external.ssl.keystore.certificate.chain", TestPki.chainPem(broker));
        Broker b = start(settings);
        String internal = bootstrap(b, 0);
        String external = bootstrap(b, 1);

        Admin plain = admin(internal, Map.of());
        plain.createTopics(List.of(new NewTopic("both", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
        producer(internal, Map.of()).send(new ProducerRecord<>("both", "in the clear".getBytes())).get(20, TimeUnit.SECONDS);

        // a client trusting the authority through a PEM truststore file
        Path caFile = ca.write("ca.pem", ca.caPem());
        Map<String, Object> pemClient = new HashMap<>();
        pemClient.put("security.protocol", "SSL");
        pemClient.put("ssl.truststore.type", "PEM");
        pemClient.put("ssl.truststore.location", caFile.toString());
        producer(external, pemClient).send(new ProducerRecord<>("both", "over tls".getBytes())).get(20, TimeUnit.SECONDS);

        List<String> values = consumeAll(external, pemClient, "both", 2).stream().map(r -> new String(r.value())).toList();
        assertThat(values).containsExactly("in the clear", "over tls");
        // the metadata a TLS client gets names the TLS listener's address, not the plaintext one
        Admin tls = admin(external, pemClient);
        assertThat(tls.describeCluster().nodes().get(10, TimeUnit.SECONDS))
                .allSatisfy(n -> assertThat(n.port()).isEqualTo(b.boundAddresses().get(1).getPort()));
    }

    @Test
    void kcatProducesAndConsumesOverMutualTlsWithPemFiles() throws Exception {
        Kcat.require();
        TestPki ca = TestPki.create(dir.resolve("pki"), "main");
        TestPki.Issued client = ca.issue("CN=kcat,O=clients");
        Path caPem = ca.write("ca.pem", ca.caPem());
        Path certPem = ca.write("kcat-cert.pem", TestPki.chainPem(client));
        Path keyPem = ca.write("kcat-key.pem", TestPki.keyPem(client));
        Broker broker = mutualTlsBroker(ca);
        String boot = bootstrap(broker, 0);
        admin(boot, ca.clientSsl(ca.pkcs12(client, "kcat.p12"))).createTopics(List.of(new NewTopic("kcat-tls", 1, (short) 1)))
                .all().get(20, TimeUnit.SECONDS);

        List<String> lines = java.util.stream.IntStream.range(0, 500).mapToObj(i -> "line-" + i + "-" + "x".repeat(i % 97)).toList();
        Path input = java.nio.file.Files.write(dir.resolve("lines.txt"), lines);
        List<String> tls = List.of("-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + caPem,
                "-X", "ssl.certificate.location=" + certPem, "-X", "ssl.key.location=" + keyPem);
        Kcat.roundTrip(dir, boot, tls, "kcat-tls", input, lines);

        // without its certificate kcat cannot get in
        List<String> anonymous = new ArrayList<>(List.of("kcat", "-b", boot, "-L", "-m", "5", "-X", "security.protocol=ssl",
                "-X", "ssl.ca.location=" + caPem));
        assertThat(Kcat.run(dir, anonymous, null)).doesNotStartWith("exit 0");
    }

    private static final String JAAS = PlainUsers.jaas(null, "alice", "bob");

    /** A broker with a SASL_PLAINTEXT and a SASL_SSL listener offering PLAIN to alice and bob. */
    private Broker saslBroker(TestPki ca) throws Exception {
        return saslBroker(ca, Map.of());
    }

    private Broker saslBroker(TestPki ca, Map<String, String> extra) throws Exception {
        Map<String, String> settings = new HashMap<>(ca.brokerSsl("", ca.pkcs12(ca.issue("CN=broker,O=varve"), "broker.p12")));
        settings.put("listeners", "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0");
        settings.put("sasl.enabled.mechanisms", "PLAIN");
        settings.put("listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS);
        settings.put("listener.name.sasl_ssl.plain.sasl.jaas.config", JAAS);
        settings.putAll(extra);
        return start(settings);
    }

    @Test
    void saslPlainAuthenticatesOverPlaintextAndTls() throws Exception {
        TestPki ca = TestPki.create(dir.resolve("pki"), "main");
        Broker broker = saslBroker(ca);
        String plaintext = bootstrap(broker, 0);
        String tls = bootstrap(broker, 1);
        Map<String, Object> alice = PlainUsers.client("SASL_PLAINTEXT", "alice");
        Map<String, Object> bob = new HashMap<>(ca.clientSsl(null));
        bob.putAll(PlainUsers.client("SASL_SSL", "bob"));
        admin(plaintext, alice).createTopics(List.of(new NewTopic("sasl", 2, (short) 1))).all().get(20, TimeUnit.SECONDS);
        KafkaProducer<byte[], byte[]> producer = producer(plaintext, alice);
        List<String> sent = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            sent.add("value-" + i);
            producer.send(new ProducerRecord<>("sasl", i % 2, null, ("value-" + i).getBytes()));
        }
        producer.flush();
        List<String> got = consumeAll(tls, bob, "sasl", sent.size()).stream().map(r -> new String(r.value())).sorted().toList();
        assertThat(got).isEqualTo(sent.stream().sorted().toList());
    }

    @Test
    void badCredentialsUnsupportedMechanismsAndEarlyRequestsAreRefusedAndWriteNothing() throws Exception {
        TestPki ca = TestPki.create(dir.resolve("pki"), "main");
        Broker broker = saslBroker(ca);
        String boot = bootstrap(broker, 0);
        Admin alice = admin(boot, PlainUsers.client("SASL_PLAINTEXT", "alice"));
        alice.createTopics(List.of(new NewTopic("guarded", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);

        for (Map<String, Object> bad : List.of(PlainUsers.client("SASL_PLAINTEXT", "alice", "wrong"),
                PlainUsers.client("SASL_PLAINTEXT", "mallory", "x"))) {
            KafkaProducer<byte[], byte[]> producer = producer(boot, bad);
            assertThatThrownBy(() -> producer.send(new ProducerRecord<>("guarded", "x".getBytes())).get(20, TimeUnit.SECONDS))
                    .satisfiesAnyOf(
                            e -> assertThat(e).hasCauseInstanceOf(org.apache.kafka.common.errors.SaslAuthenticationException.class),
                            e -> assertThat(e).isInstanceOf(org.apache.kafka.common.errors.SaslAuthenticationException.class))
                    .hasStackTraceContaining("Invalid username or password");
            producer.close(Duration.ZERO);
        }
        Map<String, Object> scram = new HashMap<>(PlainUsers.client("SASL_PLAINTEXT", "alice"));
        scram.put("sasl.mechanism", "SCRAM-SHA-256");
        scram.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"alice-secret\";");
        KafkaProducer<byte[], byte[]> scramProducer = producer(boot, scram);
        assertThatThrownBy(() -> scramProducer.send(new ProducerRecord<>("guarded", "x".getBytes())).get(20, TimeUnit.SECONDS))
                .hasStackTraceContaining("SCRAM-SHA-256").hasStackTraceContaining("PLAIN");
        scramProducer.close(Duration.ZERO);

        // a Produce before any SASL exchange, and a frame larger than sasl.server.max.receive.size: closed unanswered
        InetSocketAddress address = broker.boundAddresses().get(0);
        org.apache.kafka.common.message.ProduceRequestData produce = new org.apache.kafka.common.message.ProduceRequestData()
                .setAcks((short) 1).setTimeoutMs(5_000);
        produce.topicData().add(new org.apache.kafka.common.message.ProduceRequestData.TopicProduceData().setName("guarded")
                .setPartitionData(List.of(new org.apache.kafka.common.message.ProduceRequestData.PartitionProduceData().setIndex(0)
                        .setRecords(org.apache.kafka.common.record.internal.MemoryRecords.withRecords(
                                org.apache.kafka.common.compress.Compression.NONE,
                                new org.apache.kafka.common.record.internal.SimpleRecord("sneaky".getBytes()))))));
        short v = 11;
        java.nio.ByteBuffer body = new org.apache.kafka.common.requests.ProduceRequest.Builder(v, v, produce).build(v)
                .serializeWithHeader(new org.apache.kafka.common.requests.RequestHeader(
                        org.apache.kafka.common.protocol.ApiKeys.PRODUCE, v, "raw", 7));
        byte[] frame = java.nio.ByteBuffer.allocate(4 + body.remaining()).putInt(body.remaining()).put(body).array();
        assertThat(answered(address, frame)).as("a Produce before authentication").isFalse();
        byte[] huge = java.nio.ByteBuffer.allocate(8).putInt(1_000_000).putInt(0).array();
        assertThat(answered(address, huge)).as("a 1 MB frame before authentication").isFalse();

        TopicPartition tp = new TopicPartition("guarded", 0);
        assertThat(alice.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get(10, TimeUnit.SECONDS).offset()).isZero();
        producer(boot, PlainUsers.client("SASL_PLAINTEXT", "alice")).send(new ProducerRecord<>("guarded", "ok".getBytes()))
                .get(20, TimeUnit.SECONDS);
        assertThat(alice.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get(10, TimeUnit.SECONDS).offset()).isOne();
    }

    @Test
    void saslSessionsEndAtConnectionsMaxReauthMsUnlessRenewed() throws Exception {
        TestPki ca = TestPki.create(dir.resolve("pki"), "main");
        Broker broker = saslBroker(ca, Map.of("connections.max.reauth.ms", "1500"));
        String boot = bootstrap(broker, 0);
        Map<String, Object> alice = PlainUsers.client("SASL_PLAINTEXT", "alice");
        admin(boot, alice).createTopics(List.of(new NewTopic("renewed", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);

        // the Java client renews its session (KIP-368) and keeps writing on the same connections
        KafkaProducer<byte[], byte[]> producer = producer(boot, alice);
        for (int i = 0; i < 25; i++) {
            producer.send(new ProducerRecord<>("renewed", ("r" + i).getBytes())).get(20, TimeUnit.SECONDS);
            Thread.sleep(200);
        }
        double renewals = producer.metrics().entrySet().stream()
                .filter(e -> e.getKey().name().equals("successful-reauthentication-total"))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue()).sum();
        assertThat(renewals).as("re-authentications in 5 s of 1.5 s sessions").isGreaterThanOrEqualTo(2);

        // a client that does not renew: its next request after the session's end closes the connection
        InetSocketAddress address = broker.boundAddresses().get(0);
        try (java.net.Socket socket = new java.net.Socket(address.getHostString(), address.getPort())) {
            socket.setSoTimeout(10_000);
            short hv = 1;
            rawRoundTrip(socket, new org.apache.kafka.common.requests.SaslHandshakeRequest.Builder(
                    new org.apache.kafka.common.message.SaslHandshakeRequestData().setMechanism("PLAIN")).build(hv),
                    new org.apache.kafka.common.requests.RequestHeader(org.apache.kafka.common.protocol.ApiKeys.SASL_HANDSHAKE, hv, "raw", 1));
            short av = 2;
            byte[] token = "\0alice\0alice-secret".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            java.nio.ByteBuffer answer = rawRoundTrip(socket, new org.apache.kafka.common.requests.SaslAuthenticateRequest.Builder(
                    new org.apache.kafka.common.message.SaslAuthenticateRequestData().setAuthBytes(token)).build(av),
                    new org.apache.kafka.common.requests.RequestHeader(org.apache.kafka.common.protocol.ApiKeys.SASL_AUTHENTICATE, av, "raw", 2));
            org.apache.kafka.common.requests.ResponseHeader.parse(answer,
                    org.apache.kafka.common.protocol.ApiKeys.SASL_AUTHENTICATE.responseHeaderVersion(av));
            org.apache.kafka.common.message.SaslAuthenticateResponseData data = ((org.apache.kafka.common.requests.SaslAuthenticateResponse)
                    org.apache.kafka.common.requests.AbstractResponse.parseResponse(
                            org.apache.kafka.common.protocol.ApiKeys.SASL_AUTHENTICATE, new org.apache.kafka.common.protocol.ByteBufferAccessor(answer), av)).data();
            assertThat(data.errorCode()).isZero();
            assertThat(data.sessionLifetimeMs()).isEqualTo(1500);
            short mv = 12;
            org.apache.kafka.common.requests.MetadataRequest metadata = org.apache.kafka.common.requests.MetadataRequest.Builder.allTopics().build(mv);
            org.apache.kafka.common.requests.RequestHeader mh = new org.apache.kafka.common.requests.RequestHeader(
                    org.apache.kafka.common.protocol.ApiKeys.METADATA, mv, "raw", 3);
            assertThat(rawRoundTrip(socket, metadata, mh)).as("answered within the session").isNotNull();
            Thread.sleep(2_000);
            assertThat(rawRoundTrip(socket, metadata, mh)).as("closed after the session ended").isNull();
        }
    }

    /** Sends one request and reads its response (header and body), or null when the connection closed. */
    private static java.nio.ByteBuffer rawRoundTrip(java.net.Socket socket, org.apache.kafka.common.requests.AbstractRequest request,
                                                    org.apache.kafka.common.requests.RequestHeader header) throws Exception {
        java.nio.ByteBuffer body = request.serializeWithHeader(header);
        socket.getOutputStream().write(java.nio.ByteBuffer.allocate(4 + body.remaining()).putInt(body.remaining()).put(body).array());
        java.io.DataInputStream in = new java.io.DataInputStream(socket.getInputStream());
        try {
            byte[] bytes = new byte[in.readInt()];
            in.readFully(bytes);
            return java.nio.ByteBuffer.wrap(bytes);
        } catch (java.io.EOFException | java.net.SocketException closed) {
            return null;
        }
    }

    /** Whether the broker answers anything to {@code bytes} before closing (within 10 s). */
    private static boolean answered(InetSocketAddress address, byte[] bytes) throws Exception {
        try (java.net.Socket socket = new java.net.Socket(address.getHostString(), address.getPort())) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(bytes);
            try {
                return socket.getInputStream().read() >= 0;
            } catch (java.net.SocketException reset) {
                return false;
            }
        }
    }

    @Test
    void kcatAuthenticatesWithSaslPlainOverTls() throws Exception {
        Kcat.require();
        TestPki ca = TestPki.create(dir.resolve("pki"), "main");
        Broker broker = saslBroker(ca);
        String boot = bootstrap(broker, 1);
        Path caPem = ca.write("ca.pem", ca.caPem());
        List<String> lines = java.util.stream.IntStream.range(0, 200).mapToObj(i -> "sasl-line-" + i).toList();
        Path input = java.nio.file.Files.write(dir.resolve("sasl-lines.txt"), lines);
        List<String> auth = List.of("-X", "security.protocol=sasl_ssl", "-X", "ssl.ca.location=" + caPem,
                "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=bob", "-X", "sasl.password=bob-secret");
        admin(boot, new HashMap<>(Map.of("security.protocol", "SASL_SSL", "sasl.mechanism", "PLAIN",
                "sasl.jaas.config", PlainUsers.client("SASL_SSL", "bob").get("sasl.jaas.config"),
                "ssl.truststore.type", "PEM", "ssl.truststore.location", caPem.toString())))
                .createTopics(List.of(new NewTopic("kcat-sasl", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
        Kcat.roundTrip(dir, boot, auth, "kcat-sasl", input, lines);
        List<String> wrong = new ArrayList<>(List.of("kcat", "-b", boot, "-L", "-m", "5", "-X", "security.protocol=sasl_ssl",
                "-X", "ssl.ca.location=" + caPem, "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=bob", "-X", "sasl.password=nope"));
        assertThat(Kcat.run(dir, wrong, null)).doesNotStartWith("exit 0");
    }

    @Test
    void withoutAnAuthorizerAclRequestsAreAnsweredSecurityDisabledAsKafkaDoes() throws Exception {
        Broker broker = start(Map.of("listeners", "PLAINTEXT://127.0.0.1:0"));
        Admin admin = admin(bootstrap(broker, 0), Map.of());
        assertThatThrownBy(() -> admin.describeAcls(AclBindingFilter.ANY).values().get(10, TimeUnit.SECONDS))
                .hasCauseInstanceOf(SecurityDisabledException.class);
        assertThatThrownBy(() -> admin.deleteAcls(List.of(AclBindingFilter.ANY)).all().get(10, TimeUnit.SECONDS))
                .hasCauseInstanceOf(SecurityDisabledException.class);
    }

    @Test
    void principalsAreNamedFromCertificatesByKafkasMappingRules() {
        TestPki ca = TestPki.create(dir.resolve("pki"), "main");
        Path server = ca.pkcs12(ca.issue("CN=broker,O=varve"), "broker.p12");
        Map<String, String> props = new HashMap<>(ca.brokerSsl("", server));
        props.put("listener.name.mapped.ssl.principal.mapping.rules", "RULE:^CN=(.*?),O=(.*)$/$1@$2/L,DEFAULT");
        props.put("listener.security.protocol.map", "PLAIN:PLAINTEXT,SSL:SSL,MAPPED:SSL");
        try (ListenerSecurity security = new ListenerSecurity(props, List.of("PLAIN", "SSL", "MAPPED"), List.of(), false)) {
            InetAddress client = InetAddress.getLoopbackAddress();
            SSLSession alice = session(new X500Principal("CN=Alice,O=Clients"));
            assertThat(security.listener("ssl").tlsPrincipal(alice, client))
                    .isEqualTo(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "CN=Alice,O=Clients"));
            assertThat(security.listener("MAPPED").tlsPrincipal(alice, client))
                    .isEqualTo(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice@clients"));
            // no client certificate (ssl.client.auth=none or requested): the anonymous principal, as in Kafka
            assertThat(security.listener("SSL").tlsPrincipal(session(null), client)).isEqualTo(KafkaPrincipal.ANONYMOUS);
            assertThat(security.listener("PLAIN").plaintextPrincipal(client)).isEqualTo(KafkaPrincipal.ANONYMOUS);
            assertThat(security.interBrokerListener()).isEqualTo("PLAIN");
        }
    }

    private static SSLSession session(X500Principal peer) {
        return (SSLSession) Proxy.newProxyInstance(ListenerSecurityTest.class.getClassLoader(), new Class<?>[]{SSLSession.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getPeerPrincipal")) {
                        if (peer == null) {
                            throw new SSLPeerUnverifiedException("no certificate");
                        }
                        return peer;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }

    @Test
    void settingsVarveCannotServeAreRefusedAtStart() {
        TestPki ca = TestPki.create(dir.resolve("pki"), "main");
        Path server = ca.pkcs12(ca.issue("CN=broker,O=varve"), "broker.p12");
        String logs = dir.resolve("data").toString();
        Map<String, Map<String, String>> refused = new java.util.LinkedHashMap<>();
        refused.put("GSSAPI is Kafka's default", Map.of("listeners", "SASL_PLAINTEXT://127.0.0.1:0"));
        refused.put("enables GSSAPI", Map.of("listeners", "SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.enabled.mechanisms", "PLAIN,GSSAPI", "listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS));
        refused.put("no JAAS configuration for PLAIN", Map.of("listeners", "SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.enabled.mechanisms", "PLAIN"));
        refused.put("with GSSAPI, which that listener does not enable", Map.of("process.roles", "broker,controller", "node.id", "1",
                "controller.quorum.voters", "1@127.0.0.1:29193", "listeners", "SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:29193",
                "sasl.enabled.mechanisms", "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS));
        refused.put("keystore", Map.of("listeners", "SSL://127.0.0.1:0"));
        refused.put("no security protocol for listener", Map.of("listeners", "EXTERNAL://127.0.0.1:0"));
        Map<String, String> badPassword = new HashMap<>(ca.brokerSsl("", server));
        badPassword.put("listeners", "SSL://127.0.0.1:0");
        badPassword.put("ssl.keystore.password", "wrong");
        refused.put("cannot set up TLS for listener SSL", badPassword);
        refused.put("SASL on the quorum is not supported", Map.of("process.roles", "broker,controller", "node.id", "1",
                "controller.quorum.voters", "1@127.0.0.1:29193", "listeners", "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:29193",
                "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL"));
        refused.put("needs a keystore and a truststore", Map.of("process.roles", "broker,controller", "node.id", "1",
                "controller.quorum.voters", "1@127.0.0.1:29193", "listeners", "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:29193",
                "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"));
        refused.put("no listener of that name", Map.of("listeners", "PLAINTEXT://127.0.0.1:0", "inter.broker.listener.name", "INTERNAL"));
        refused.put("only one of", Map.of("listeners", "PLAINTEXT://127.0.0.1:0", "inter.broker.listener.name", "PLAINTEXT",
                "security.inter.broker.protocol", "PLAINTEXT"));
        refused.put("ssl.client.auth", Map.of("listeners", "PLAINTEXT://127.0.0.1:0", "ssl.client.auth", "sometimes"));
        refused.forEach((message, settings) -> {
            Map<String, String> props = new HashMap<>(settings);
            props.put("log.dirs", logs);
            assertThatThrownBy(() -> BrokerConfig.from(props)).as(message).isInstanceOf(ConfigException.class)
                    .hasMessageContaining(message);
        });
        // and what it serves is accepted, keys included: nothing of it is reported as unknown
        Map<String, String> ok = new HashMap<>(ca.brokerSsl("listener.name.ssl.", server));
        ok.put("listeners", "ssl://127.0.0.1:0");
        ok.put("log.dirs", logs);
        ok.put("ssl.client.auth", "requested");
        ok.put("ssl.enabled.protocols", "TLSv1.3");
        assertThat(BrokerConfig.from(ok).unknownKeys()).isEmpty();
        assertThat(ListenerSecurity.keys()).contains("ssl.keystore.location", "ssl.truststore.certificates",
                "listener.security.protocol.map", "ssl.principal.mapping.rules");
        assertThat(ok.keySet().stream().filter(k -> !ListenerSecurity.reads(k) && !k.equals("listeners") && !k.equals("log.dirs"))
                .collect(Collectors.toList())).isEmpty();
    }
}
