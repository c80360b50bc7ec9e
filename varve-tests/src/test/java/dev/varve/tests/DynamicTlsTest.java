package dev.varve.tests;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A TLS listener's certificate replaced without a restart, as a Kafka operator rotates it (KIP-226):
 * kafka-configs sets {@code listener.name.<name>.ssl.keystore.location} on the broker; new connections
 * are then served the new certificate while open ones go on; re-setting the same path reloads a file
 * rewritten in place; a keystore whose certificate names another subject, or that cannot be read, is
 * refused and the listener keeps its certificate; the change survives a restart.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class DynamicTlsTest {
    @TempDir
    Path dir;
    private Broker broker;
    private final Closer closing = new Closer();

    @AfterEach
    void close() throws Exception {
        closing.close();
        if (broker != null) {
            broker.close();
        }
    }

    private Broker start(TestPki ca, Path keystore) throws Exception {
        Map<String, String> props = new HashMap<>(ca.brokerSsl("", keystore));
        props.put("log.dirs", dir.resolve("data").toString());
        props.put("listeners", "SSL://127.0.0.1:0");
        return Broker.start(BrokerConfig.from(props));
    }

    /** The serial number of the certificate a new TLS connection to the broker is served. */
    private BigInteger served(TestPki ca) {
        var a = broker.boundAddresses().get(0);
        return ca.servedSerial(a.getHostString(), a.getPort(), null);
    }

    private KafkaTool.Result kafkaConfigs(TestPki ca, String... args) throws Exception {
        Path config = dir.resolve("client.properties");
        StringBuilder props = new StringBuilder();
        ca.clientSsl(null).forEach((k, v) -> props.append(k).append('=').append(v).append('\n'));
        Files.writeString(config, props);
        List<String> command = new ArrayList<>(List.of("--bootstrap-server", broker.bootstrapServers(), "--command-config",
                config.toString(), "--entity-type", "brokers", "--entity-name", Integer.toString(broker.context().nodeId()),
                "--alter"));
        command.addAll(List.of(args));
        return KafkaTool.run(dir, "org.apache.kafka.tools.ConfigCommand", command);
    }

    private static BigInteger serial(TestPki.Issued issued) {
        return issued.chain()[0].getSerialNumber();
    }

    @Test
    void aRotatedKeystoreServesNewConnectionsWithoutARestart() throws Exception {
        TestPki ca = TestPki.create(dir.resolve("pki"), "rotation");
        TestPki.Issued first = ca.issue("CN=broker,O=varve");
        broker = start(ca, ca.pkcs12(first, "broker-1.p12"));
        assertThat(served(ca)).isEqualTo(serial(first));
        Map<String, Object> client = new HashMap<>(ca.clientSsl(null));
        client.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        Admin open = Admin.create(client);
        closing.add(open);
        open.describeCluster().nodes().get(15, TimeUnit.SECONDS);

        // a new certificate for the same name, in a new file
        TestPki.Issued second = ca.issue("CN=broker,O=varve");
        Path secondStore = ca.pkcs12(second, "broker-2.p12");
        KafkaTool.Result rotated = kafkaConfigs(ca, "--add-config", "listener.name.ssl.ssl.keystore.location=" + secondStore);
        assertThat(rotated.exitCode()).as(rotated.toString()).isZero();
        assertThat(served(ca)).isEqualTo(serial(second));
        assertThat(open.describeCluster().nodes().get(15, TimeUnit.SECONDS)).as("an open connection goes on").hasSize(1);

        // a certificate for another subject is refused (as Kafka refuses it), and so is a missing file
        Path impostor = ca.pkcs12(ca.issue("CN=impostor,O=elsewhere"), "impostor.p12");
        KafkaTool.Result refused = kafkaConfigs(ca, "--add-config", "listener.name.ssl.ssl.keystore.location=" + impostor);
        assertThat(refused.exitCode()).as(refused.toString()).isNotZero();
        KafkaTool.Result missing = kafkaConfigs(ca, "--add-config", "listener.name.ssl.ssl.keystore.location=" + dir.resolve("nope.p12"));
        assertThat(missing.exitCode()).as(missing.toString()).isNotZero();
        assertThat(served(ca)).isEqualTo(serial(second));

        // the same path, its file rewritten in place: re-setting it reloads the file
        TestPki.Issued third = ca.issue("CN=broker,O=varve");
        Path thirdStore = ca.pkcs12(third, "broker-3.p12");
        Thread.sleep(1100); // a modification time the reload can tell apart
        Files.copy(thirdStore, secondStore, StandardCopyOption.REPLACE_EXISTING);
        KafkaTool.Result reloaded = kafkaConfigs(ca, "--add-config", "listener.name.ssl.ssl.keystore.location=" + secondStore);
        assertThat(reloaded.exitCode()).as(reloaded.toString()).isZero();
        assertThat(served(ca)).isEqualTo(serial(third));

        // a restart keeps the rotated keystore, though server.properties still names the first one
        closing.close();
        broker.close();
        broker = start(ca, dir.resolve("pki").resolve("broker-1.p12"));
        assertThat(served(ca)).isEqualTo(serial(third));
    }
}
