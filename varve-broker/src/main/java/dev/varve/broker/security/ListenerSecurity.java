package dev.varve.broker.security;

import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.config.internals.BrokerSecurityConfigs;
import org.apache.kafka.common.network.ChannelBuilder;
import org.apache.kafka.common.network.ChannelBuilders;
import org.apache.kafka.common.network.ConnectionMode;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.security.auth.AuthenticationContext;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.KafkaPrincipalBuilder;
import org.apache.kafka.common.security.auth.PlaintextAuthenticationContext;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.security.auth.SaslAuthenticationContext;
import org.apache.kafka.common.security.auth.SslAuthenticationContext;
import org.apache.kafka.common.security.JaasContext;
import org.apache.kafka.common.security.JaasUtils;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.plain.internals.PlainSaslServer;
import org.apache.kafka.common.security.plain.internals.PlainServerCallbackHandler;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.security.ssl.SslFactory;
import org.apache.kafka.common.security.ssl.SslPrincipalMapper;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.LogContext;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLSession;
import javax.security.sasl.SaslServer;
import java.io.Closeable;
import java.net.InetAddress;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.ArrayList;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.apache.kafka.common.config.ConfigDef.Importance.HIGH;
import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Importance.LOW;
import static org.apache.kafka.common.config.ConfigDef.Type.CLASS;
import static org.apache.kafka.common.config.ConfigDef.Type.INT;
import static org.apache.kafka.common.config.ConfigDef.Type.LIST;
import static org.apache.kafka.common.config.ConfigDef.Type.STRING;

/**
 * The security of the broker's listeners, configured under Kafka's key names: which protocol each
 * listener speaks ({@code listener.security.protocol.map}), its TLS settings ({@code ssl.*}, overridden
 * per listener by {@code listener.name.<name>.ssl.*}), how a connection's principal is named
 * ({@code principal.builder.class}, {@code ssl.principal.mapping.rules}) and which listener brokers use
 * to reach each other ({@code inter.broker.listener.name} or {@code security.inter.broker.protocol}).
 *
 * <p>TLS is Kafka's own code from kafka-clients: {@link SslFactory} reads the keystores and truststores
 * (JKS, PKCS12 and PEM, files or inline) exactly as a Kafka broker does, and the principal builder is
 * Kafka's (or the configured class). Varve only puts the engines it makes into Netty. SASL listeners
 * ({@code sasl.enabled.mechanisms}, JAAS under {@code listener.name.<name>.<mechanism>.sasl.jaas.config})
 * authenticate with Kafka's SASL servers and callback handlers; a mechanism Varve does not serve yet is
 * refused at start-up: a setting that is accepted is never ignored.
 */
public final class ListenerSecurity implements Closeable {
    public static final String PROTOCOL_MAP = "listener.security.protocol.map";
    public static final String INTER_BROKER_LISTENER_NAME = "inter.broker.listener.name";
    public static final String INTER_BROKER_PROTOCOL = "security.inter.broker.protocol";
    public static final String SASL_ENABLED_MECHANISMS = "sasl.enabled.mechanisms";
    public static final String INTER_BROKER_MECHANISM = "sasl.mechanism.inter.broker.protocol";
    public static final String FAILED_AUTHENTICATION_DELAY_MS = "connection.failed.authentication.delay.ms";
    public static final String SASL_SERVER_MAX_RECEIVE_SIZE = "sasl.server.max.receive.size";
    /** Kafka's default map: every protocol's name is a listener name of that protocol. */
    public static final String DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

    /** The keys this class reads, besides their {@code listener.name.<name>.} forms. */
    static final ConfigDef DEF = new ConfigDef()
            .withClientSslSupport()
            .withClientSaslSupport()
            .define(PROTOCOL_MAP, STRING, null, HIGH, "Listener name to security protocol.")
            .define(INTER_BROKER_LISTENER_NAME, STRING, null, MEDIUM, "The listener brokers use to reach each other.")
            .define(INTER_BROKER_PROTOCOL, STRING, null, MEDIUM, "The protocol brokers use to reach each other (a listener of that name).")
            .define(BrokerSecurityConfigs.SSL_CLIENT_AUTH_CONFIG, STRING, BrokerSecurityConfigs.SSL_CLIENT_AUTH_DEFAULT,
                    ConfigDef.ValidString.in("required", "requested", "none"), MEDIUM, "Whether TLS clients must present a certificate.")
            .define(BrokerSecurityConfigs.SSL_PRINCIPAL_MAPPING_RULES_CONFIG, STRING,
                    BrokerSecurityConfigs.DEFAULT_SSL_PRINCIPAL_MAPPING_RULES, MEDIUM, "Certificate subject to principal name rules.")
            .define(BrokerSecurityConfigs.PRINCIPAL_BUILDER_CLASS_CONFIG, CLASS, BrokerSecurityConfigs.PRINCIPAL_BUILDER_CLASS_DEFAULT,
                    MEDIUM, "The KafkaPrincipalBuilder naming each connection's principal.")
            .define(INTER_BROKER_MECHANISM, STRING, "GSSAPI", MEDIUM, "The SASL mechanism brokers use with each other (Kafka's default: GSSAPI).")
            .define(SASL_ENABLED_MECHANISMS, LIST, "GSSAPI", MEDIUM, "SASL mechanisms a SASL listener offers (Kafka's default: GSSAPI).")
            .define(FAILED_AUTHENTICATION_DELAY_MS, INT, 100, ConfigDef.Range.atLeast(0), LOW,
                    "How long a connection whose authentication failed waits before it is closed.")
            .define(BrokerSecurityConfigs.CONNECTIONS_MAX_REAUTH_MS_CONFIG, ConfigDef.Type.LONG, 0L, ConfigDef.Range.atLeast(0),
                    MEDIUM, "How long a SASL session lasts before the client must re-authenticate (KIP-368); 0: forever.")
            .define(SASL_SERVER_MAX_RECEIVE_SIZE, INT, 524_288, ConfigDef.Range.atLeast(1), LOW,
                    "Largest request frame read before a SASL connection is authenticated.");

    /** The mechanisms Varve authenticates. */
    static final List<String> SUPPORTED_MECHANISMS = List.of("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER");
    /** Mechanism-prefixed keys of a listener ({@code listener.name.<name>.<mechanism>.<key>}). */
    private static final java.util.regex.Pattern MECHANISM_KEY = java.util.regex.Pattern.compile(
            "listener\\.name\\.[^.]+\\.(plain|scram-sha-256|scram-sha-512|oauthbearer|gssapi)\\."
                    + "(sasl\\.jaas\\.config|sasl\\.server\\.callback\\.handler\\.class)");

    /** One listener: its name, protocol and, for SSL, its engine factory and principal builder. */
    public static final class Listener {
        private final ListenerName name;
        private final SecurityProtocol protocol;
        private final SslFactory ssl;
        private final Sasl sasl;
        private final KafkaPrincipalBuilder principals;

        Listener(ListenerName name, SecurityProtocol protocol, SslFactory ssl, Sasl sasl, KafkaPrincipalBuilder principals) {
            this.name = name;
            this.protocol = protocol;
            this.ssl = ssl;
            this.sasl = sasl;
            this.principals = principals;
        }

        /** The SASL settings of a SASL_PLAINTEXT or SASL_SSL listener; null for the others. */
        public Sasl sasl() {
            return sasl;
        }

        /** The principal a SASL exchange that {@code server} completed authenticated. */
        public KafkaPrincipal saslPrincipal(SaslServer server, InetAddress client, java.util.Optional<SSLSession> tls) {
            return build(new SaslAuthenticationContext(server, protocol, client, name.value(), tls));
        }

        public ListenerName name() {
            return name;
        }

        public SecurityProtocol protocol() {
            return protocol;
        }

        /** Whether connections to this listener are TLS. */
        public boolean tls() {
            return ssl != null;
        }

        /** A server engine for one connection from {@code peerHost:peerPort}. */
        public SSLEngine newEngine(String peerHost, int peerPort) {
            if (ssl == null) {
                throw new IllegalStateException(name.value() + " is not a TLS listener");
            }
            return ssl.createSslEngine(peerHost, peerPort);
        }

        /** The principal of a plaintext connection from {@code client}. */
        public KafkaPrincipal plaintextPrincipal(InetAddress client) {
            return build(new PlaintextAuthenticationContext(client, name.value()));
        }

        /** The principal of a TLS connection from {@code client} whose handshake gave {@code session}. */
        public KafkaPrincipal tlsPrincipal(SSLSession session, InetAddress client) {
            return build(new SslAuthenticationContext(session, client, name.value()));
        }

        private KafkaPrincipal build(AuthenticationContext context) {
            return principals.build(context);
        }
    }

    /**
     * A SASL listener's mechanisms, each with its server callback handler (Kafka's, configured from the
     * listener's JAAS section, or the {@code sasl.server.callback.handler.class} given), and its limits.
     */
    public static final class Sasl {
        private final Map<String, AuthenticateCallbackHandler> callbacks;
        private final int failedAuthenticationDelayMs;
        private final int maxReceiveBytes;
        private final long reauthenticationMs;

        Sasl(Map<String, AuthenticateCallbackHandler> callbacks, int failedAuthenticationDelayMs, int maxReceiveBytes,
             long reauthenticationMs) {
            this.callbacks = callbacks;
            this.failedAuthenticationDelayMs = failedAuthenticationDelayMs;
            this.maxReceiveBytes = maxReceiveBytes;
            this.reauthenticationMs = reauthenticationMs;
        }

        /** {@code connections.max.reauth.ms}: how long an authenticated session lasts; 0 for ever. */
        public long reauthenticationMs() {
            return reauthenticationMs;
        }

        /** The mechanisms offered, in the order configured. */
        public List<String> mechanisms() {
            return List.copyOf(callbacks.keySet());
        }

        /** A server for one exchange of {@code mechanism} (one of {@link #mechanisms()}). */
        public SaslServer newServer(String mechanism) {
            AuthenticateCallbackHandler callback = callbacks.get(mechanism);
            if (callback == null) {
                throw new IllegalArgumentException(mechanism + " is not enabled");
            }
            return switch (mechanism) {
                case "PLAIN" -> new PlainSaslServer(callback);
                case "OAUTHBEARER" -> new org.apache.kafka.common.security.oauthbearer.internals.OAuthBearerSaslServer(callback);
                case "SCRAM-SHA-256", "SCRAM-SHA-512" -> {
                    try {
                        yield new ScramServer(
                                org.apache.kafka.common.security.scram.internals.ScramMechanism.forMechanismName(mechanism), callback);
                    } catch (java.security.NoSuchAlgorithmException e) {
                        throw new IllegalStateException(mechanism + " needs a hash this JVM lacks", e);
                    }
                }
                default -> throw new IllegalArgumentException(mechanism + " is not supported");
            };
        }

        /** {@code connection.failed.authentication.delay.ms}. */
        public int failedAuthenticationDelayMs() {
            return failedAuthenticationDelayMs;
        }

        /** {@code sasl.server.max.receive.size}: the largest frame read before authentication. */
        public int maxReceiveBytes() {
            return maxReceiveBytes;
        }

        void close() {
            callbacks.values().forEach(AuthenticateCallbackHandler::close);
        }
    }

    private final Map<String, Listener> listeners = new LinkedHashMap<>();
    /** Where SCRAM exchanges look credentials up; none until the broker says ({@link #setScramCredentials}). */
    private volatile java.util.function.Supplier<dev.varve.metadata.ScramCredentials> scramCredentials =
            () -> dev.varve.metadata.ScramCredentials.EMPTY;
    private final AbstractConfig config;
    private final String interBrokerListener;
    private final SecurityProtocol interBrokerProtocol;

    /**
     * @param props               the broker's settings as written
     * @param clientListenerNames the Kafka-protocol listeners, in the order of {@code listeners}
     * @param controllerListeners the listeners the metadata quorum binds ({@code controller.listener.names})
     * @param controller          whether this node is a controller (Kafka then maps an unmapped controller
     *                            listener to PLAINTEXT when the map is not set)
     * @throws ConfigException naming the key at fault
     */
    public ListenerSecurity(Map<String, String> props, List<String> clientListenerNames, Collection<String> controllerListeners,
                            boolean controller) {
        this.config = new AbstractConfig(DEF, props, false);
        Map<String, SecurityProtocol> map = protocolMap(config.getString(PROTOCOL_MAP), controllerListeners,
                controller && config.getString(PROTOCOL_MAP) == null);
        QuorumTlsHolder quorum = null;
        for (String name : controllerListeners) {
            SecurityProtocol p = map.get(ListenerName.normalised(name).value());
            if (p != null && p != SecurityProtocol.PLAINTEXT && p != SecurityProtocol.SSL) {
                throw new ConfigException(PROTOCOL_MAP, config.getString(PROTOCOL_MAP),
                        "the controller listener " + name + " is " + p + ": Varve's metadata quorum speaks PLAINTEXT, or SSL"
                                + " with mutual authentication (SASL on the quorum is not supported)");
            }
            if (p == SecurityProtocol.SSL && quorum == null) {
                quorum = new QuorumTlsHolder(quorumTls(ListenerName.normalised(name)));
            }
        }
        this.quorumTls = quorum == null ? null : quorum.tls();
        try {
            for (String listed : clientListenerNames) {
                String name = ListenerName.normalised(listed).value();
                SecurityProtocol protocol = map.get(name);
                if (protocol == null) {
                    throw new ConfigException(PROTOCOL_MAP, config.getString(PROTOCOL_MAP) == null ? DEFAULT_PROTOCOL_MAP
                            : config.getString(PROTOCOL_MAP), "no security protocol for listener " + name);
                }
                listeners.put(name, listener(ListenerName.normalised(name), protocol));
            }
            this.interBrokerListener = interBrokerListener(clientListenerNames, map);
            this.interBrokerProtocol = listeners.get(interBrokerListener).protocol();
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private record QuorumTlsHolder(dev.varve.metadata.quorum.QuorumTls tls) {
    }

    private final dev.varve.metadata.quorum.QuorumTls quorumTls;

    /** Mutual TLS for the metadata quorum (controller listener on SSL), or null for plaintext. */
    public dev.varve.metadata.quorum.QuorumTls quorumTls() {
        return quorumTls;
    }

    /**
     * The controller listener's key and trust material ({@code listener.name.<controller>.ssl.keystore.*},
     * {@code .ssl.truststore.*}, or the unprefixed ones): this node presents its certificate to the other
     * voters and to brokers, and accepts only peers whose certificate the truststore trusts.
     */
    private dev.varve.metadata.quorum.QuorumTls quorumTls(ListenerName name) {
        Map<String, Object> values = config.valuesWithPrefixOverride(name.configPrefix());
        String prefix = name.configPrefix();
        String keystore = (String) values.get(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG);
        String truststore = (String) values.get(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG);
        if (keystore == null || truststore == null) {
            throw new ConfigException(prefix + (keystore == null ? SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG
                    : SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG), null, "the metadata quorum on SSL authenticates every peer:"
                    + " the controller listener needs a keystore and a truststore (files, PKCS12 or JKS)");
        }
        try {
            java.security.KeyStore keys = loadStore(prefix + SslConfigs.SSL_KEYSTORE_TYPE_CONFIG,
                    (String) values.get(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG), keystore,
                    (org.apache.kafka.common.config.types.Password) values.get(SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG));
            org.apache.kafka.common.config.types.Password keyPassword =
                    (org.apache.kafka.common.config.types.Password) values.get(SslConfigs.SSL_KEY_PASSWORD_CONFIG);
            if (keyPassword == null) {
                keyPassword = (org.apache.kafka.common.config.types.Password) values.get(SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG);
            }
            javax.net.ssl.KeyManagerFactory kmf = javax.net.ssl.KeyManagerFactory.getInstance(
                    javax.net.ssl.KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(keys, keyPassword == null ? new char[0] : keyPassword.value().toCharArray());
            java.security.KeyStore trust = loadStore(prefix + SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG,
                    (String) values.get(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG), truststore,
                    (org.apache.kafka.common.config.types.Password) values.get(SslConfigs.SSL_TRUSTSTORE_PASSWORD_CONFIG));
            javax.net.ssl.TrustManagerFactory tmf = javax.net.ssl.TrustManagerFactory.getInstance(
                    javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trust);
            SslPrincipalMapper mapper = SslPrincipalMapper.fromRules(
                    (String) values.get(BrokerSecurityConfigs.SSL_PRINCIPAL_MAPPING_RULES_CONFIG));
            return new dev.varve.metadata.quorum.QuorumTls(kmf.getKeyManagers()[0],
                    new QuorumPeerTrust((javax.net.ssl.X509ExtendedTrustManager) tmf.getTrustManagers()[0], mapper));
        } catch (java.security.GeneralSecurityException | java.io.IOException e) {
            throw new ConfigException("cannot set up TLS for the metadata quorum (listener " + name.value() + "): " + e.getMessage());
        }
    }

    private volatile java.util.function.Predicate<org.apache.kafka.common.security.auth.KafkaPrincipal> quorumPeers = p -> true;

    /** Who may be a peer of the metadata quorum (its certificate's principal), beyond holding a trusted certificate. */
    public void setQuorumPeers(java.util.function.Predicate<org.apache.kafka.common.security.auth.KafkaPrincipal> allowed) {
        this.quorumPeers = allowed;
    }

    /**
     * The quorum's trust: a peer's certificate must chain to the truststore (the JDK's checks, hostname
     * included) and name a principal ({@code ssl.principal.mapping.rules}) allowed on the quorum: with an
     * authorizer, a super user or one granted CLUSTER_ACTION, as Kafka requires of controller RPCs.
     */
    private final class QuorumPeerTrust extends javax.net.ssl.X509ExtendedTrustManager {
        private final javax.net.ssl.X509ExtendedTrustManager trust;
        private final SslPrincipalMapper mapper;

        QuorumPeerTrust(javax.net.ssl.X509ExtendedTrustManager trust, SslPrincipalMapper mapper) {
            this.trust = trust;
            this.mapper = mapper;
        }

        private void allowed(java.security.cert.X509Certificate[] chain) throws java.security.cert.CertificateException {
            String name;
            try {
                name = mapper.getName(chain[0].getSubjectX500Principal().getName());
            } catch (java.io.IOException e) {
                throw new java.security.cert.CertificateException("no principal for " + chain[0].getSubjectX500Principal(), e);
            }
            org.apache.kafka.common.security.auth.KafkaPrincipal p =
                    new org.apache.kafka.common.security.auth.KafkaPrincipal(org.apache.kafka.common.security.auth.KafkaPrincipal.USER_TYPE, name);
            if (!quorumPeers.test(p)) {
                throw new java.security.cert.CertificateException(p + " is not allowed on the metadata quorum"
                        + " (a super user, or CLUSTER_ACTION on the cluster, is)");
            }
        }

        @Override
        public void checkClientTrusted(java.security.cert.X509Certificate[] chain, String authType, java.net.Socket socket)
                throws java.security.cert.CertificateException {
            trust.checkClientTrusted(chain, authType, socket);
            allowed(chain);
        }

        @Override
        public void checkServerTrusted(java.security.cert.X509Certificate[] chain, String authType, java.net.Socket socket)
                throws java.security.cert.CertificateException {
            trust.checkServerTrusted(chain, authType, socket);
            allowed(chain);
        }

        @Override
        public void checkClientTrusted(java.security.cert.X509Certificate[] chain, String authType, javax.net.ssl.SSLEngine engine)
                throws java.security.cert.CertificateException {
            trust.checkClientTrusted(chain, authType, engine);
            allowed(chain);
        }

        @Override
        public void checkServerTrusted(java.security.cert.X509Certificate[] chain, String authType, javax.net.ssl.SSLEngine engine)
                throws java.security.cert.CertificateException {
            trust.checkServerTrusted(chain, authType, engine);
            allowed(chain);
        }

        @Override
        public void checkClientTrusted(java.security.cert.X509Certificate[] chain, String authType)
                throws java.security.cert.CertificateException {
            trust.checkClientTrusted(chain, authType);
            allowed(chain);
        }

        @Override
        public void checkServerTrusted(java.security.cert.X509Certificate[] chain, String authType)
                throws java.security.cert.CertificateException {
            trust.checkServerTrusted(chain, authType);
            allowed(chain);
        }

        @Override
        public java.security.cert.X509Certificate[] getAcceptedIssuers() {
            return trust.getAcceptedIssuers();
        }
    }

    private static java.security.KeyStore loadStore(String typeKey, String type, String location,
                                                    org.apache.kafka.common.config.types.Password password)
            throws java.security.GeneralSecurityException, java.io.IOException {
        String t = type == null ? "JKS" : type;
        if (t.equalsIgnoreCase("PEM")) {
            throw new ConfigException(typeKey, t, "the metadata quorum reads PKCS12 or JKS stores, not PEM");
        }
        java.security.KeyStore store = java.security.KeyStore.getInstance(t);
        try (java.io.InputStream in = java.nio.file.Files.newInputStream(java.nio.file.Path.of(location))) {
            store.load(in, password == null ? null : password.value().toCharArray());
        }
        return store;
    }

    private Listener listener(ListenerName name, SecurityProtocol protocol) {
        Map<String, Object> values = config.valuesWithPrefixOverride(name.configPrefix());
        KafkaPrincipalBuilder principals = ChannelBuilders.createPrincipalBuilder(values, null,
                SslPrincipalMapper.fromRules((String) values.get(BrokerSecurityConfigs.SSL_PRINCIPAL_MAPPING_RULES_CONFIG)));
        SslFactory ssl = protocol == SecurityProtocol.SSL || protocol == SecurityProtocol.SASL_SSL ? sslFactory(name, values) : null;
        try {
            Sasl sasl = protocol == SecurityProtocol.SASL_PLAINTEXT || protocol == SecurityProtocol.SASL_SSL ? sasl(name, values) : null;
            return new Listener(name, protocol, ssl, sasl, principals);
        } catch (RuntimeException e) {
            if (ssl != null) {
                ssl.close();
            }
            throw e;
        }
    }

    private static SslFactory sslFactory(ListenerName name, Map<String, Object> values) {
        String prefix = name.configPrefix();
        if (values.get(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG) == null && values.get(SslConfigs.SSL_KEYSTORE_KEY_CONFIG) == null
                && values.get(SslConfigs.SSL_ENGINE_FACTORY_CLASS_CONFIG) == null) {
            throw new ConfigException(prefix + SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG, null,
                    "the TLS listener " + name.value() + " needs a keystore (" + SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG
                            + ", or " + SslConfigs.SSL_KEYSTORE_KEY_CONFIG + " with " + SslConfigs.SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG
                            + " in PEM)");
        }
        SslFactory factory = new SslFactory(ConnectionMode.SERVER);
        try {
            factory.configure(values); // reads and checks the stores now: a bad one stops the start
        } catch (RuntimeException e) {
            factory.close();
            throw new ConfigException("cannot set up TLS for listener " + name.value() + ": " + e.getMessage());
        }
        return factory;
    }

    @SuppressWarnings("unchecked")
    private Sasl sasl(ListenerName name, Map<String, Object> values) {
        String prefix = name.configPrefix();
        List<String> mechanisms = ((List<String>) values.get(SASL_ENABLED_MECHANISMS)).stream().map(String::trim)
                .filter(m -> !m.isEmpty()).distinct().toList();
        if (mechanisms.isEmpty()) {
            throw new ConfigException(prefix + SASL_ENABLED_MECHANISMS, "", "a SASL listener needs at least one mechanism");
        }
        Map<String, AuthenticateCallbackHandler> callbacks = new LinkedHashMap<>();
        try {
            for (String mechanism : mechanisms) {
                if (!SUPPORTED_MECHANISMS.contains(mechanism)) {
                    throw new ConfigException(SASL_ENABLED_MECHANISMS, String.join(",", mechanisms), "listener " + name.value()
                            + " enables " + mechanism + ": Varve authenticates " + SUPPORTED_MECHANISMS + " only so far"
                            + (mechanism.equals("GSSAPI") ? " (GSSAPI is Kafka's default: set sasl.enabled.mechanisms)" : ""));
                }
                String mech = mechanism.toLowerCase(Locale.ROOT) + ".";
                Map<String, Object> configs = mechanismConfigs(name, mechanism, values);
                boolean scram = mechanism.startsWith("SCRAM-");
                Object handlerClass = config.originals().get(prefix + mech + "sasl.server.callback.handler.class");
                // the server side of SCRAM needs nothing from JAAS (Kafka wants a ScramLoginModule line; it is read if given)
                List<javax.security.auth.login.AppConfigurationEntry> jaas = scram && !hasJaas(name, mechanism)
                        ? List.of() : jaasContext(name, mechanism, configs).configurationEntries();
                AuthenticateCallbackHandler handler;
                try {
                    handler = handlerClass != null
                            ? org.apache.kafka.common.utils.Utils.newInstance(String.valueOf(handlerClass), AuthenticateCallbackHandler.class)
                            : defaultCallbackHandler(mechanism);
                } catch (ClassNotFoundException | RuntimeException e) {
                    throw new ConfigException(prefix + mech + "sasl.server.callback.handler.class", handlerClass,
                            "cannot make the callback handler: " + e);
                }
                handler.configure(configs, mechanism, jaas);
                callbacks.put(mechanism, handler);
            }
        } catch (RuntimeException e) {
            callbacks.values().forEach(AuthenticateCallbackHandler::close);
            throw e;
        }
        return new Sasl(callbacks, (Integer) values.get(FAILED_AUTHENTICATION_DELAY_MS), (Integer) values.get(SASL_SERVER_MAX_RECEIVE_SIZE),
                (Long) values.get(BrokerSecurityConfigs.CONNECTIONS_MAX_REAUTH_MS_CONFIG));
    }

    /** {@code values} with the listener's {@code <mechanism>.sasl.jaas.config} in the form Kafka's JaasContext reads. */
    private Map<String, Object> mechanismConfigs(ListenerName name, String mechanism, Map<String, Object> values) {
        String mech = mechanism.toLowerCase(Locale.ROOT) + ".";
        Map<String, Object> configs = new HashMap<>(values);
        Object jaas = config.originals().get(name.configPrefix() + mech + "sasl.jaas.config");
        if (jaas != null) {
            configs.put(mech + "sasl.jaas.config", new Password(String.valueOf(jaas)));
        }
        return configs;
    }

    /** The server callback handler of {@code mechanism} when the listener names none. */
    private AuthenticateCallbackHandler defaultCallbackHandler(String mechanism) {
        return switch (mechanism) {
            case "SCRAM-SHA-256", "SCRAM-SHA-512" -> new ScramCallbackHandler(() -> scramCredentials.get());
            // Kafka's default: unsecured JWTs (development only); production sets
            // OAuthBearerValidatorCallbackHandler with sasl.oauthbearer.jwks.endpoint.url
            case "OAUTHBEARER" -> new org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler();
            default -> new PlainServerCallbackHandler();
        };
    }

    /** Whether a JAAS section for {@code mechanism} on the listener is given (inline, or a JAAS file is set). */
    private boolean hasJaas(ListenerName name, String mechanism) {
        return config.originals().get(name.configPrefix() + mechanism.toLowerCase(Locale.ROOT) + ".sasl.jaas.config") != null
                || System.getProperty(JaasUtils.JAVA_LOGIN_CONFIG_PARAM) != null;
    }

    /**
     * Where SCRAM exchanges find the users' credentials from now on: the broker's metadata image in a
     * cluster, its {@link LocalScramStore} on a single node.
     */
    public void setScramCredentials(java.util.function.Supplier<dev.varve.metadata.ScramCredentials> credentials) {
        this.scramCredentials = java.util.Objects.requireNonNull(credentials);
    }

    private static JaasContext jaasContext(ListenerName name, String mechanism, Map<String, Object> configs) {
        try {
            return JaasContext.loadServerContext(name, mechanism, configs);
        } catch (RuntimeException e) {
            throw new ConfigException(name.configPrefix() + mechanism.toLowerCase(Locale.ROOT) + ".sasl.jaas.config", null,
                    "no JAAS configuration for " + mechanism + " on listener " + name.value() + ": " + e.getMessage());
        }
    }

    private String interBrokerListener(List<String> clientListenerNames, Map<String, SecurityProtocol> map) {
        String byName = config.getString(INTER_BROKER_LISTENER_NAME);
        String byProtocol = config.getString(INTER_BROKER_PROTOCOL);
        if (byName != null && byProtocol != null) {
            // as Kafka: one or the other
            throw new ConfigException(INTER_BROKER_LISTENER_NAME, byName, "only one of " + INTER_BROKER_LISTENER_NAME
                    + " and " + INTER_BROKER_PROTOCOL + " may be set");
        }
        String chosen;
        String key;
        if (byName != null) {
            chosen = ListenerName.normalised(byName).value();
            key = INTER_BROKER_LISTENER_NAME;
        } else if (byProtocol != null) {
            try {
                chosen = SecurityProtocol.forName(byProtocol.trim().toUpperCase(Locale.ROOT)).name;
            } catch (IllegalArgumentException e) {
                throw new ConfigException(INTER_BROKER_PROTOCOL, byProtocol, "not a security protocol");
            }
            key = INTER_BROKER_PROTOCOL;
        } else {
            return ListenerName.normalised(clientListenerNames.get(0)).value(); // Varve's default: the first listener
        }
        if (!listeners.containsKey(chosen)) {
            throw new ConfigException(key, chosen, "no listener of that name among " + clientListenerNames);
        }
        return chosen;
    }

    /**
     * Parses {@code listener.security.protocol.map}; when it is not set, Kafka's default, with the
     * controller listeners mapped to PLAINTEXT if {@code controllerDefaultsToPlaintext}.
     */
    static Map<String, SecurityProtocol> protocolMap(String value, Collection<String> controllerListeners,
                                                     boolean controllerDefaultsToPlaintext) {
        Map<String, SecurityProtocol> out = new HashMap<>();
        String raw = value == null ? DEFAULT_PROTOCOL_MAP : value;
        for (String entry : raw.split(",")) {
            String e = entry.trim();
            if (e.isEmpty()) {
                continue;
            }
            int colon = e.indexOf(':');
            if (colon <= 0 || colon == e.length() - 1) {
                throw new ConfigException(PROTOCOL_MAP, raw, "expected LISTENER:PROTOCOL entries, got " + e);
            }
            String name = ListenerName.normalised(e.substring(0, colon).trim()).value();
            SecurityProtocol protocol;
            try {
                protocol = SecurityProtocol.forName(e.substring(colon + 1).trim().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException ex) {
                throw new ConfigException(PROTOCOL_MAP, raw, "unknown security protocol in " + e);
            }
            if (out.put(name, protocol) != null) {
                throw new ConfigException(PROTOCOL_MAP, raw, "listener " + name + " is mapped twice");
            }
        }
        if (controllerDefaultsToPlaintext) {
            for (String name : controllerListeners) {
                out.putIfAbsent(ListenerName.normalised(name).value(), SecurityProtocol.PLAINTEXT);
            }
        }
        return out;
    }

    /** A PLAINTEXT listener called {@code name} with Kafka's default principal builder (tests, tools). */
    public static Listener plaintext(String name) {
        return new Listener(ListenerName.normalised(name), SecurityProtocol.PLAINTEXT, null, null,
                new org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder(null,
                        SslPrincipalMapper.fromRules(BrokerSecurityConfigs.DEFAULT_SSL_PRINCIPAL_MAPPING_RULES)));
    }

    /** The listener called {@code name} (a Kafka-protocol listener). */
    /** A dynamic TLS key: {@code listener.name.<name>.<key>} for a key Kafka reconfigures without restart. */
    private static final java.util.regex.Pattern DYNAMIC_TLS_KEY = java.util.regex.Pattern.compile("listener\\.name\\.([^.]+)\\.(ssl\\..+)");

    /** Whether {@code key} is a listener's keystore or truststore setting that can change without a restart (KIP-226). */
    public static boolean isDynamicTlsKey(String key) {
        java.util.regex.Matcher m = DYNAMIC_TLS_KEY.matcher(key);
        return m.matches() && SslConfigs.RECONFIGURABLE_CONFIGS.contains(m.group(2));
    }

    /**
     * Reconfigures the TLS of listeners from dynamic keys ({@link #isDynamicTlsKey}; a null value goes back
     * to the static setting), as Kafka's dynamic {@code ssl.keystore.*} / {@code ssl.truststore.*} update
     * does: Kafka's SslFactory checks the new stores (a keystore whose certificate changes its subject or
     * names is refused, as in Kafka) and, unless {@code validateOnly}, new connections get them; open
     * connections keep theirs. Re-setting the same path reloads a file that changed on disk.
     *
     * @param dynamic every dynamic TLS key in force after the change (the others return to their static values)
     * @throws ConfigException when a key is not one, names a listener that is not TLS, or the stores are refused
     */
    public synchronized void reconfigureTls(Map<String, String> dynamic, boolean validateOnly) {
        Map<String, Map<String, String>> byListener = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : dynamic.entrySet()) {
            java.util.regex.Matcher m = DYNAMIC_TLS_KEY.matcher(e.getKey());
            if (!m.matches() || !SslConfigs.RECONFIGURABLE_CONFIGS.contains(m.group(2))) {
                throw new ConfigException(e.getKey(), e.getValue(), "not a TLS setting that can change without a restart");
            }
            byListener.computeIfAbsent(ListenerName.normalised(m.group(1)).value(), l -> new LinkedHashMap<>())
                    .put(m.group(2), e.getValue());
        }
        for (String name : byListener.keySet()) {
            Listener l = listeners.get(name);
            if (l == null || l.ssl == null) {
                throw new ConfigException("listener.name." + name.toLowerCase(Locale.ROOT) + ".ssl.*", null,
                        "no TLS listener is named " + name);
            }
        }
        ConfigDef ssl = new ConfigDef().withClientSslSupport();
        List<Runnable> apply = new ArrayList<>();
        for (Listener l : listeners.values()) {
            if (l.ssl == null) {
                continue;
            }
            Map<String, Object> values = new HashMap<>(config.valuesWithPrefixOverride(l.name.configPrefix()));
            byListener.getOrDefault(l.name.value(), Map.of()).forEach((key, value) -> {
                if (value != null) {
                    values.put(key, ssl.parseType(key, value, ssl.configKeys().get(key).type));
                }
            });
            try {
                l.ssl.validateReconfiguration(values);
            } catch (RuntimeException e) {
                throw new ConfigException("listener " + l.name.value() + ": " + e.getMessage());
            }
            apply.add(() -> l.ssl.reconfigure(values));
        }
        if (!validateOnly) {
            apply.forEach(Runnable::run);
        }
    }

    public Listener listener(String name) {
        Listener l = listeners.get(ListenerName.normalised(name).value());
        if (l == null) {
            throw new IllegalArgumentException("no listener " + name);
        }
        return l;
    }

    /** The listener brokers connect to each other on. */
    public String interBrokerListener() {
        return interBrokerListener;
    }

    public SecurityProtocol interBrokerProtocol() {
        return interBrokerProtocol;
    }

    /**
     * A client channel builder for connections to other brokers' inter-broker listener, with that
     * listener's settings (for SSL: the truststore checking their certificates and, for mutual TLS,
     * the keystore this broker presents). Each caller owns (and closes) what it gets.
     */
    public ChannelBuilder interBrokerChannelBuilder(LogContext logContext) {
        ListenerName name = ListenerName.normalised(interBrokerListener);
        if (interBrokerProtocol != SecurityProtocol.SASL_PLAINTEXT && interBrokerProtocol != SecurityProtocol.SASL_SSL) {
            return ChannelBuilders.clientChannelBuilder(interBrokerProtocol, null, config, name, null, Time.SYSTEM, logContext);
        }
        // As a Kafka broker: the client side of the exchange logs in with the listener's own JAAS section
        // (its username and password options), with sasl.mechanism.inter.broker.protocol.
        String mechanism = interBrokerMechanism();
        Map<String, Object> configs = mechanismConfigs(name, mechanism, config.valuesWithPrefixOverride(name.configPrefix()));
        org.apache.kafka.common.network.SaslChannelBuilder builder = new org.apache.kafka.common.network.SaslChannelBuilder(
                ConnectionMode.CLIENT, Map.of(mechanism, jaasContext(name, mechanism, configs)), interBrokerProtocol, name, true,
                mechanism, null, null, null, Time.SYSTEM, logContext, null);
        builder.configure(configs);
        return builder;
    }

    /** {@code sasl.mechanism.inter.broker.protocol}. */
    public String interBrokerMechanism() {
        return config.getString(INTER_BROKER_MECHANISM);
    }

    /** Whether {@code key} is one this class reads (plain or in a {@code listener.name.<name>.} form). */
    public static boolean reads(String key) {
        if (DEF.names().contains(key)) {
            return true;
        }
        if (MECHANISM_KEY.matcher(key).matches()) {
            return true;
        }
        if (key.startsWith("listener.name.")) {
            int dot = key.indexOf('.', "listener.name.".length());
            return dot > 0 && DEF.names().contains(key.substring(dot + 1));
        }
        return false;
    }

    /** Every key this class reads, for documentation and tests. */
    public static Set<String> keys() {
        return new TreeSet<>(DEF.names());
    }

    @Override
    public void close() {
        for (Listener l : listeners.values()) {
            if (l.ssl != null) {
                l.ssl.close();
            }
            if (l.sasl != null) {
                l.sasl.close();
            }
        }
    }
}
