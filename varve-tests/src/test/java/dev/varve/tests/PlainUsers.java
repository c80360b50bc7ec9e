package dev.varve.tests;

import java.util.HashMap;
import java.util.Map;

/**
 * SASL/PLAIN users of the tests: user {@code name} has password {@code name-secret}. The broker side is
 * a listener's JAAS line naming them; the client side a client's security settings.
 */
final class PlainUsers {
    private PlainUsers() {
    }

    /** A broker listener's JAAS line knowing {@code users}; {@code self}, when not null, is the broker's own login. */
    static String jaas(String self, String... users) {
        StringBuilder line = new StringBuilder("org.apache.kafka.common.security.plain.PlainLoginModule required");
        if (self != null) {
            line.append(" username=\"").append(self).append("\" password=\"").append(self).append("-secret\"");
        }
        for (String u : users) {
            line.append(" user_").append(u).append("=\"").append(u).append("-secret\"");
        }
        return line.append(';').toString();
    }

    /** A client's settings to log in as {@code name} with PLAIN over {@code protocol} (SASL_PLAINTEXT or SASL_SSL). */
    static Map<String, Object> client(String protocol, String name) {
        return client(protocol, name, name + "-secret");
    }

    /** As {@link #client(String, String)} with any password (a wrong one, to be refused). */
    static Map<String, Object> client(String protocol, String name, String password) {
        Map<String, Object> p = new HashMap<>();
        p.put("security.protocol", protocol);
        p.put("sasl.mechanism", "PLAIN");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + name
                + "\" password=\"" + password + "\";");
        return p;
    }

    /** As {@link #client}, over SASL_SSL trusting {@code ca}. */
    static Map<String, Object> overTls(TestPki ca, String name) {
        Map<String, Object> p = new HashMap<>(ca.clientSsl(null));
        p.putAll(client("SASL_SSL", name));
        return p;
    }
}
