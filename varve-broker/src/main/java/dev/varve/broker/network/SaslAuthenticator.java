package dev.varve.broker.network;

import dev.varve.broker.security.ListenerSecurity;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.message.SaslAuthenticateResponseData;
import org.apache.kafka.common.message.SaslHandshakeResponseData;
import org.apache.kafka.common.network.Send;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.SaslAuthenticateRequest;
import org.apache.kafka.common.requests.SaslAuthenticateResponse;
import org.apache.kafka.common.requests.SaslHandshakeRequest;
import org.apache.kafka.common.requests.SaslHandshakeResponse;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.net.ssl.SSLSession;
import javax.security.sasl.SaslException;
import javax.security.sasl.SaslServer;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The SASL exchange of one connection to a SASL listener, as Kafka's {@code SaslServerAuthenticator}
 * runs it for current clients: ApiVersions may come first, then SaslHandshake (v1) naming a mechanism,
 * then SaslAuthenticate requests carrying the mechanism's tokens until the server is done. Any other
 * request before that closes the connection, as in Kafka. A failed authentication is answered
 * SASL_AUTHENTICATION_FAILED after {@code connection.failed.authentication.delay.ms}, then the
 * connection closes; an unsupported mechanism is answered UNSUPPORTED_SASL_MECHANISM with the enabled
 * ones, then it closes. Called on the connection's request thread, one frame at a time.
 */
final class SaslAuthenticator {
    private static final Logger LOG = LoggerFactory.getLogger(SaslAuthenticator.class);

    enum State { HANDSHAKE, AUTHENTICATE, COMPLETE, FAILED }

    private final ListenerSecurity.Listener listener;
    private volatile State state = State.HANDSHAKE;
    private SaslServer server;
    private KafkaPrincipal principal;
    /** When the authenticated session ends (System.nanoTime); Long.MAX_VALUE when it does not. */
    private volatile long expiresAtNanos = Long.MAX_VALUE;
    /** During a re-authentication: the principal and mechanism of the session being renewed. */
    private KafkaPrincipal previousPrincipal;
    private String previousMechanism;

    SaslAuthenticator(ListenerSecurity.Listener listener) {
        if (listener.sasl() == null) {
            throw new IllegalArgumentException(listener.name().value() + " is not a SASL listener");
        }
        this.listener = listener;
    }

    boolean complete() {
        return state == State.COMPLETE;
    }

    /** Whether the exchange failed: the connection closes once the answer saying so is sent. */
    boolean failed() {
        return state == State.FAILED;
    }

    KafkaPrincipal principal() {
        return principal;
    }

    /** Whether the authenticated session has ended ({@code connections.max.reauth.ms}) without being renewed. */
    boolean expired(long nowNanos) {
        return state == State.COMPLETE && nowNanos - expiresAtNanos > 0;
    }

    /**
     * Whether {@code frame}, on an authenticated connection, starts a re-authentication (KIP-368): a
     * SaslHandshake when sessions expire. The exchange then runs again, and must name the same principal.
     */
    boolean beginsReauthentication(ByteBuffer frame) {
        if (state != State.COMPLETE || listener.sasl().reauthenticationMs() <= 0 || frame.remaining() < 2
                || frame.getShort(frame.position()) != ApiKeys.SASL_HANDSHAKE.id) {
            return false;
        }
        previousPrincipal = principal;
        previousMechanism = server.getMechanismName();
        disposeQuietly();
        state = State.HANDSHAKE;
        return true;
    }

    /**
     * Handles one frame of the connection before it is authenticated.
     *
     * @return the response to send
     * @throws InvalidRequestException when the connection must be closed at once
     */
    CompletableFuture<Send> handle(RequestDispatcher dispatcher, RequestDispatcher.Connection connection, ByteBuffer frame,
                                   RequestMemoryPool pool, Optional<SSLSession> tls) {
        if (state == State.FAILED || state == State.COMPLETE) {
            throw new InvalidRequestException("no SASL exchange in progress on " + connection.id());
        }
        RequestDispatcher.Parsed parsed = dispatcher.parse(connection, frame, pool);
        ApiKeys key = parsed.context().header.apiKey();
        if (key == ApiKeys.API_VERSIONS) {
            return dispatcher.dispatch(connection, parsed, pool).response();
        }
        try {
            if (key == ApiKeys.SASL_HANDSHAKE && state == State.HANDSHAKE) {
                return CompletableFuture.completedFuture(parsed.context().buildResponseSend(
                        handshake((SaslHandshakeRequest) parsed.request(), connection)));
            }
            if (key == ApiKeys.SASL_AUTHENTICATE && state == State.AUTHENTICATE) {
                SaslAuthenticateResponse response = authenticate((SaslAuthenticateRequest) parsed.request(), connection, tls);
                Send send = parsed.context().buildResponseSend(response);
                if (state == State.FAILED) {
                    // as Kafka: the answer to a failed attempt is held back a little (slows password guessing)
                    return CompletableFuture.supplyAsync(() -> send, CompletableFuture.delayedExecutor(
                            listener.sasl().failedAuthenticationDelayMs(), TimeUnit.MILLISECONDS));
                }
                return CompletableFuture.completedFuture(send);
            }
        } finally {
            pool.release(parsed.decodeReserved());
        }
        State was = state;
        state = State.FAILED;
        throw new InvalidRequestException("unexpected " + key + " request in SASL state " + was + " from " + connection.remote()
                + " on listener " + listener.name().value());
    }

    private SaslHandshakeResponse handshake(SaslHandshakeRequest request, RequestDispatcher.Connection connection) {
        String mechanism = request.data().mechanism();
        SaslHandshakeResponseData data = new SaslHandshakeResponseData().setMechanisms(listener.sasl().mechanisms());
        if (!listener.sasl().mechanisms().contains(mechanism)) {
            LOG.info("Failed authentication with {} (unsupported SASL mechanism {})", connection.remote(), mechanism);
            state = State.FAILED;
            return new SaslHandshakeResponse(data.setErrorCode(Errors.UNSUPPORTED_SASL_MECHANISM.code()));
        }
        if (previousMechanism != null && !previousMechanism.equals(mechanism)) {
            LOG.info("Failed re-authentication with {} (mechanism changed from {} to {})", connection.remote(), previousMechanism, mechanism);
            state = State.FAILED;
            return new SaslHandshakeResponse(data.setErrorCode(Errors.ILLEGAL_SASL_STATE.code()));
        }
        server = listener.sasl().newServer(mechanism);
        state = State.AUTHENTICATE;
        return new SaslHandshakeResponse(data.setErrorCode(Errors.NONE.code()));
    }

    private SaslAuthenticateResponse authenticate(SaslAuthenticateRequest request, RequestDispatcher.Connection connection,
                                                  Optional<SSLSession> tls) {
        SaslAuthenticateResponseData data = new SaslAuthenticateResponseData();
        try {
            byte[] challenge = server.evaluateResponse(request.data().authBytes());
            data.setAuthBytes(challenge == null ? new byte[0] : challenge);
            if (server.isComplete()) {
                KafkaPrincipal authenticated = listener.saslPrincipal(server, connection.remote().getAddress(), tls);
                if (previousPrincipal != null && !previousPrincipal.equals(authenticated)) {
                    return failed(data, connection, "Cannot change principals during re-authentication from " + previousPrincipal
                            + ": " + authenticated);
                }
                principal = authenticated;
                previousPrincipal = null;
                state = State.COMPLETE;
                long lifetimeMs = sessionLifetimeMs(server, listener.sasl().reauthenticationMs());
                if (lifetimeMs >= 0) {
                    // v0 clients cannot re-authenticate: their connection simply ends with the session, as in Kafka
                    expiresAtNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(lifetimeMs);
                    if (request.version() > 0) {
                        data.setSessionLifetimeMs(lifetimeMs);
                    }
                } else {
                    expiresAtNanos = Long.MAX_VALUE;
                }
                LOG.debug("{} authenticated as {} with {}", connection.remote(), principal, server.getMechanismName());
            }
            return new SaslAuthenticateResponse(data.setErrorCode(Errors.NONE.code()));
        } catch (SaslAuthenticationException e) {
            return failed(data, connection, e.getMessage());
        } catch (SaslException | RuntimeException e) {
            // not the client's credentials but the exchange itself (a malformed token, a failing callback)
            LOG.debug("SASL exchange with {} failed", connection.remote(), e);
            return failed(data, connection, "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                    + server.getMechanismName());
        }
    }

    /**
     * How long the session just authenticated lasts, as Kafka computes it: {@code connections.max.reauth.ms}
     * (when above 0), and no longer than the credential itself (an OAUTHBEARER token's expiry); -1 for ever.
     */
    static long sessionLifetimeMs(SaslServer server, long reauthenticationMs) {
        Object expiry = server.getNegotiatedProperty(
                org.apache.kafka.common.security.authenticator.SaslInternalConfigs.CREDENTIAL_LIFETIME_MS_SASL_NEGOTIATED_PROPERTY_KEY);
        long lifetime = reauthenticationMs > 0 ? reauthenticationMs : -1;
        if (expiry instanceof Long expiresAtMs) {
            long left = Math.max(0, expiresAtMs - System.currentTimeMillis());
            lifetime = lifetime < 0 ? left : Math.min(lifetime, left);
        }
        return lifetime;
    }

    private SaslAuthenticateResponse failed(SaslAuthenticateResponseData data, RequestDispatcher.Connection connection, String message) {
        LOG.info("Failed authentication with {} ({})", connection.remote(), message);
        state = State.FAILED;
        disposeQuietly();
        return new SaslAuthenticateResponse(data.setErrorCode(Errors.SASL_AUTHENTICATION_FAILED.code())
                .setErrorMessage(message).setAuthBytes(new byte[0]));
    }

    private void disposeQuietly() {
        try {
            if (server != null) {
                server.dispose();
            }
        } catch (SaslException e) {
            LOG.debug("disposing a SASL server failed", e);
        }
    }
}
