package dev.varve.broker.security;

import dev.varve.metadata.MetadataRecord.UserScramCredential;
import dev.varve.metadata.ScramCredentials;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.scram.ScramCredential;
import org.apache.kafka.common.security.scram.ScramCredentialCallback;
import org.apache.kafka.common.security.token.delegation.internals.DelegationTokenCredentialCallback;

import javax.security.auth.callback.Callback;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The server side of SCRAM-SHA-256/512 (Kafka's {@code ScramSaslServer}) asks this for the credential
 * of the user a client names: it is looked up in the broker's credentials of the moment (the metadata
 * image, or a single node's store), so a credential added, changed or deleted counts from the next
 * exchange on. An unknown user gets no credential, which the server answers as a failed
 * authentication. Delegation tokens are not supported: a token exchange gets no credential either.
 */
final class ScramCallbackHandler implements AuthenticateCallbackHandler {
    private final Supplier<ScramCredentials> credentials;
    private ScramMechanism mechanism;

    ScramCallbackHandler(Supplier<ScramCredentials> credentials) {
        this.credentials = credentials;
    }

    @Override
    public void configure(Map<String, ?> configs, String saslMechanism, List<AppConfigurationEntry> jaasConfigEntries) {
        this.mechanism = ScramMechanism.fromMechanismName(saslMechanism);
        if (mechanism == ScramMechanism.UNKNOWN) {
            throw new IllegalArgumentException(saslMechanism + " is not a SCRAM mechanism");
        }
    }

    @Override
    public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
        String user = null;
        for (Callback callback : callbacks) {
            if (callback instanceof NameCallback name) {
                user = name.getDefaultName();
            } else if (callback instanceof DelegationTokenCredentialCallback) {
                // no delegation tokens: the exchange fails
            } else if (callback instanceof ScramCredentialCallback scram) {
                UserScramCredential c = user == null ? null : credentials.get().get(user, mechanism);
                if (c != null) {
                    scram.scramCredential(new ScramCredential(c.salt(), c.storedKey(), c.serverKey(), c.iterations()));
                }
            } else {
                throw new UnsupportedCallbackException(callback);
            }
        }
    }

    @Override
    public void close() {
    }
}
