package dev.varve.broker.security;

import dev.varve.metadata.MetadataRecord.UserScramCredential;
import dev.varve.metadata.ScramCredentials;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.security.scram.internals.ScramFormatter;
import org.apache.kafka.common.security.scram.internals.ScramMechanism;
import org.apache.kafka.common.security.scram.internals.ScramMessages.ClientFinalMessage;
import org.apache.kafka.common.security.scram.internals.ScramMessages.ClientFirstMessage;
import org.apache.kafka.common.security.scram.internals.ScramMessages.ServerFinalMessage;
import org.apache.kafka.common.security.scram.internals.ScramMessages.ServerFirstMessage;
import org.junit.jupiter.api.Test;

import javax.security.sasl.SaslException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** One SCRAM exchange at a time against {@link ScramServer}, the client side computed with Kafka's formatter. */
class ScramServerTest {
    private static final ScramMechanism MECHANISM = ScramMechanism.SCRAM_SHA_512;
    private final ScramFormatter formatter;
    private final ScramCredentials credentials;

    ScramServerTest() throws Exception {
        formatter = new ScramFormatter(MECHANISM);
        byte[] salt = "pepper".getBytes(StandardCharsets.UTF_8);
        byte[] salted = formatter.saltedPassword("alice-secret", salt, 4096);
        credentials = ScramCredentials.EMPTY.with(new UserScramCredential("alice", (byte) 2, salt,
                formatter.storedKey(formatter.clientKey(salted)), formatter.serverKey(salted), 4096));
    }

    private ScramServer server() throws Exception {
        ScramCallbackHandler handler = new ScramCallbackHandler(() -> credentials);
        handler.configure(Map.of(), MECHANISM.mechanismName(), List.of());
        return new ScramServer(MECHANISM, handler);
    }

    /** How the final nonce is formed from the client's first nonce and the server's combined one. */
    private interface NonceForm {
        String of(String clientNonce, String combined);
    }

    /** Runs an exchange for {@code user} with {@code password}; checks the server's signature. */
    private void exchange(ScramServer server, String user, String password, NonceForm form) throws Exception {
        ClientFirstMessage first = new ClientFirstMessage(user, formatter.secureRandomString(), Map.of());
        ServerFirstMessage serverFirst = new ServerFirstMessage(server.evaluateResponse(first.toBytes()));
        assertThat(serverFirst.nonce()).startsWith(first.nonce());
        ClientFinalMessage last = new ClientFinalMessage("n,,".getBytes(StandardCharsets.UTF_8),
                form.of(first.nonce(), serverFirst.nonce()));
        byte[] salted = formatter.saltedPassword(password, serverFirst.salt(), serverFirst.iterations());
        last.proof(formatter.clientProof(salted, first, serverFirst, last));
        ServerFinalMessage serverFinal = new ServerFinalMessage(server.evaluateResponse(last.toBytes()));
        // the client checks the server knew the key too
        byte[] expected = formatter.serverSignature(formatter.serverKey(salted), first, serverFirst, last);
        assertThat(serverFinal.serverSignature()).isEqualTo(expected);
    }

    @Test
    void aRightPasswordAuthenticatesWithTheRfcNonceAndWithOldLibrdkafkasForm() throws Exception {
        ScramServer rfc = server();
        exchange(rfc, "alice", "alice-secret", (client, combined) -> combined);
        assertThat(rfc.isComplete()).isTrue();
        assertThat(rfc.getAuthorizationID()).isEqualTo("alice");

        ScramServer librdkafka = server();
        exchange(librdkafka, "alice", "alice-secret", (client, combined) -> client + combined);
        assertThat(librdkafka.isComplete()).isTrue();
    }

    @Test
    void wrongPasswordsUsersAndNoncesAreRefused() throws Exception {
        assertThatThrownBy(() -> exchange(server(), "alice", "wrong", (c, n) -> n))
                .isInstanceOf(SaslAuthenticationException.class).hasMessageContaining("Invalid user credentials");
        assertThatThrownBy(() -> exchange(server(), "mallory", "x", (c, n) -> n))
                .isInstanceOf(SaslAuthenticationException.class).hasMessageContaining("Invalid user credentials");
        // the server's nonce must come back whole: the client's own, or another prefix, is refused
        assertThatThrownBy(() -> exchange(server(), "alice", "alice-secret", (c, n) -> c))
                .isInstanceOf(SaslException.class).hasMessageContaining("nonce");
        assertThatThrownBy(() -> exchange(server(), "alice", "alice-secret", (c, n) -> "x" + n))
                .isInstanceOf(SaslException.class).hasMessageContaining("nonce");
        assertThatThrownBy(() -> exchange(server(), "alice", "alice-secret", (c, n) -> n + c))
                .isInstanceOf(SaslException.class).hasMessageContaining("nonce");
    }

    @Test
    void aFinalMessageReplayedIntoAnotherExchangeIsRefused() throws Exception {
        ScramServer first = server();
        ClientFirstMessage clientFirst = new ClientFirstMessage("alice", formatter.secureRandomString(), Map.of());
        ServerFirstMessage serverFirst = new ServerFirstMessage(first.evaluateResponse(clientFirst.toBytes()));
        ClientFinalMessage last = new ClientFinalMessage("n,,".getBytes(StandardCharsets.UTF_8), serverFirst.nonce());
        last.proof(formatter.clientProof(formatter.saltedPassword("alice-secret", serverFirst.salt(), 4096), clientFirst,
                serverFirst, last));
        first.evaluateResponse(last.toBytes());
        assertThat(first.isComplete()).isTrue();

        // an eavesdropper replays both client messages: the second server's fresh nonce is missing
        ScramServer second = server();
        second.evaluateResponse(clientFirst.toBytes());
        assertThatThrownBy(() -> second.evaluateResponse(last.toBytes())).isInstanceOf(SaslException.class);
        assertThat(second.isComplete()).isFalse();
    }
}
