package dev.varve.broker.network;

import org.apache.kafka.common.security.authenticator.SaslInternalConfigs;
import org.junit.jupiter.api.Test;

import javax.security.sasl.SaslServer;
import java.lang.reflect.Proxy;

import static org.assertj.core.api.Assertions.assertThat;

/** A SASL session lasts connections.max.reauth.ms, and never past its credential (an OAUTHBEARER token's expiry). */
class SessionLifetimeTest {
    private static SaslServer expiringAt(Long expiresAtMs) {
        return (SaslServer) Proxy.newProxyInstance(SaslServer.class.getClassLoader(), new Class<?>[]{SaslServer.class},
                (proxy, method, args) -> method.getName().equals("getNegotiatedProperty")
                        && SaslInternalConfigs.CREDENTIAL_LIFETIME_MS_SASL_NEGOTIATED_PROPERTY_KEY.equals(args[0]) ? expiresAtMs : null);
    }

    @Test
    void theSessionEndsWithTheReauthenticationPeriodOrTheCredentialWhicheverComesFirst() {
        long now = System.currentTimeMillis();
        assertThat(SaslAuthenticator.sessionLifetimeMs(expiringAt(null), 0)).as("neither: for ever").isEqualTo(-1);
        assertThat(SaslAuthenticator.sessionLifetimeMs(expiringAt(null), 60_000)).isEqualTo(60_000);
        assertThat(SaslAuthenticator.sessionLifetimeMs(expiringAt(now + 600_000), 0)).as("the token alone")
                .isBetween(590_000L, 600_000L);
        assertThat(SaslAuthenticator.sessionLifetimeMs(expiringAt(now + 600_000), 60_000)).isEqualTo(60_000);
        assertThat(SaslAuthenticator.sessionLifetimeMs(expiringAt(now + 30_000), 60_000)).isBetween(20_000L, 30_000L);
        assertThat(SaslAuthenticator.sessionLifetimeMs(expiringAt(now - 5_000), 60_000)).as("already expired").isZero();
    }
}
