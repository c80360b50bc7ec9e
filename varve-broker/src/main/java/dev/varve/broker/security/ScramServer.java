package dev.varve.broker.security;

import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.security.scram.ScramCredential;
import org.apache.kafka.common.security.scram.ScramCredentialCallback;
import org.apache.kafka.common.security.scram.internals.ScramFormatter;
import org.apache.kafka.common.security.scram.internals.ScramMechanism;
import org.apache.kafka.common.security.scram.internals.ScramMessages.ClientFinalMessage;
import org.apache.kafka.common.security.scram.internals.ScramMessages.ClientFirstMessage;
import org.apache.kafka.common.security.scram.internals.ScramMessages.ServerFinalMessage;
import org.apache.kafka.common.security.scram.internals.ScramMessages.ServerFirstMessage;

import javax.security.auth.callback.Callback;
import javax.security.auth.callback.CallbackHandler;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.sasl.SaslException;
import javax.security.sasl.SaslServer;
import java.io.IOException;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * The server side of one SCRAM-SHA-256/512 exchange (RFC 5802, RFC 7677), on Kafka's message parsers
 * and key derivations ({@link ScramMessages}, {@link ScramFormatter}); the same flow as Kafka's
 * {@code ScramSaslServer} with one difference: the client-final nonce may also be the client nonce
 * followed by the server-first nonce. librdkafka before 2.6.1 (Debian 12's 2.0.2, so its kcat and
 * confluent-kafka) sends it that way (librdkafka PR 4895); Kafka 3.8.1-3.9 accepted it, Kafka 4 refuses
 * it, so those clients cannot use SCRAM against Kafka 4. Accepting exactly that form keeps what the
 * nonce check is for: the server's fresh nonce must come back, and the client proof is computed over
 * the message as sent. Delegation tokens are not supported ({@code tokenauth} is refused).
 *
 * <p>Proofs are compared in constant time ({@link MessageDigest#isEqual}).
 */
final class ScramServer implements SaslServer {
    private enum State { RECEIVE_CLIENT_FIRST, RECEIVE_CLIENT_FINAL, COMPLETE, FAILED }

    private final ScramMechanism mechanism;
    private final ScramFormatter formatter;
    private final CallbackHandler callbacks;
    private State state = State.RECEIVE_CLIENT_FIRST;
    private ClientFirstMessage clientFirst;
    private ServerFirstMessage serverFirst;
    private ScramCredential credential;
    private String username;

    ScramServer(ScramMechanism mechanism, CallbackHandler callbacks) throws NoSuchAlgorithmException {
        this.mechanism = mechanism;
        this.formatter = new ScramFormatter(mechanism);
        this.callbacks = callbacks;
    }

    @Override
    public byte[] evaluateResponse(byte[] response) throws SaslException {
        try {
            switch (state) {
                case RECEIVE_CLIENT_FIRST -> {
                    byte[] answer = first(response);
                    state = State.RECEIVE_CLIENT_FINAL;
                    return answer;
                }
                case RECEIVE_CLIENT_FINAL -> {
                    byte[] answer = last(response);
                    state = State.COMPLETE;
                    return answer;
                }
                default -> throw new SaslException("Unexpected SCRAM message in state " + state);
            }
        } catch (SaslException | RuntimeException e) {
            state = State.FAILED;
            credential = null;
            throw e;
        }
    }

    private byte[] first(byte[] response) throws SaslException {
        clientFirst = new ClientFirstMessage(response);
        if (clientFirst.extensions().tokenAuthenticated()) {
            throw new SaslAuthenticationException("Authentication failed: delegation tokens are not supported");
        }
        username = ScramFormatter.username(clientFirst.saslName());
        String authorizationId = clientFirst.authorizationId();
        if (!authorizationId.isEmpty() && !authorizationId.equals(username)) {
            throw new SaslAuthenticationException(
                    "Authentication failed: Client requested an authorization id that is different from username");
        }
        NameCallback name = new NameCallback("username", username);
        ScramCredentialCallback found = new ScramCredentialCallback();
        try {
            callbacks.handle(new Callback[]{name, found});
        } catch (IOException | UnsupportedCallbackException e) {
            throw new SaslException("Authentication failed: credentials could not be obtained", e);
        }
        credential = found.scramCredential();
        if (credential == null) {
            throw new SaslAuthenticationException("Authentication failed: Invalid user credentials");
        }
        if (credential.iterations() < mechanism.minIterations()) {
            throw new SaslException("Iterations " + credential.iterations() + " is less than the minimum "
                    + mechanism.minIterations() + " for " + mechanism);
        }
        serverFirst = new ServerFirstMessage(clientFirst.nonce(), formatter.secureRandomString(), credential.salt(),
                credential.iterations());
        return serverFirst.toBytes();
    }

    private byte[] last(byte[] response) throws SaslException {
        ClientFinalMessage clientFinal = new ClientFinalMessage(response);
        String nonce = clientFinal.nonce();
        if (!nonce.equals(serverFirst.nonce()) && !nonce.equals(clientFirst.nonce() + serverFirst.nonce())) {
            throw new SaslException("Invalid client nonce in the final client message.");
        }
        try {
            byte[] storedKey = credential.storedKey();
            byte[] signature = formatter.clientSignature(storedKey, clientFirst, serverFirst, clientFinal);
            byte[] proof = clientFinal.proof();
            if (proof.length != signature.length
                    || !MessageDigest.isEqual(formatter.storedKey(signature, proof), storedKey)) {
                throw new SaslAuthenticationException("Authentication failed: Invalid user credentials");
            }
            byte[] serverSignature = formatter.serverSignature(credential.serverKey(), clientFirst, serverFirst, clientFinal);
            credential = null;
            return new ServerFinalMessage(null, serverSignature).toBytes();
        } catch (InvalidKeyException e) {
            throw new SaslException("Authentication failed: Invalid client final message", e);
        }
    }

    @Override
    public String getMechanismName() {
        return mechanism.mechanismName();
    }

    @Override
    public boolean isComplete() {
        return state == State.COMPLETE;
    }

    @Override
    public String getAuthorizationID() {
        if (!isComplete()) {
            throw new IllegalStateException("Authentication exchange has not completed");
        }
        return username;
    }

    @Override
    public byte[] unwrap(byte[] incoming, int offset, int len) {
        throw new IllegalStateException("SCRAM supports neither integrity nor privacy");
    }

    @Override
    public byte[] wrap(byte[] outgoing, int offset, int len) {
        throw new IllegalStateException("SCRAM supports neither integrity nor privacy");
    }

    @Override
    public Object getNegotiatedProperty(String propName) {
        if (!isComplete()) {
            throw new IllegalStateException("Authentication exchange has not completed");
        }
        return null;
    }

    @Override
    public void dispose() {
        credential = null;
    }
}
