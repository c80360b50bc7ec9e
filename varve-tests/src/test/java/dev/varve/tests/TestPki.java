package dev.varve.tests;

import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

import java.io.IOException;
import java.io.OutputStream;
import java.io.StringWriter;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A certificate authority for tests and the stores made from it, in the formats Kafka users have:
 * PKCS12 keystores and truststores, and PEM files. Leaf certificates name localhost and 127.0.0.1, so
 * Kafka's default hostname verification ({@code ssl.endpoint.identification.algorithm=https}) passes.
 */
public final class TestPki {
    public static final String PASSWORD = "varve-test-pw";
    private static final AtomicLong SERIALS = new AtomicLong(System.currentTimeMillis());

    private final Path dir;
    private final String name;
    private final KeyPair caKeys;
    private final X509Certificate caCert;

    private TestPki(Path dir, String name) throws GeneralSecurityException, IOException {
        this.dir = dir;
        this.name = name;
        this.caKeys = keyPair();
        X500Name subject = new X500Name("CN=" + name + " CA,O=Varve tests");
        X509v3CertificateBuilder b = builder(subject, subject, caKeys, Duration.ofDays(30));
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
        b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
        this.caCert = sign(b, caKeys.getPrivate());
        Files.createDirectories(dir);
    }

    /** A new authority whose files go under {@code dir}; {@code name} tells two authorities apart. */
    public static TestPki create(Path dir, String name) {
        try {
            return new TestPki(dir, name);
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException("cannot make a test CA", e);
        }
    }

    /** A key and certificate issued by this authority. */
    public record Issued(String subject, PrivateKey key, X509Certificate[] chain) {
    }

    /** A key and certificate for {@code subject} (an X.500 name such as {@code CN=alice,O=clients}), valid for {@code validity}. */
    public Issued issue(String subject, Duration validity) {
        try {
            KeyPair keys = keyPair();
            X509v3CertificateBuilder b = builder(X500Name.getInstance(caCert.getSubjectX500Principal().getEncoded()),
                    new X500Name(subject), keys, validity);
            b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
            b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyEncipherment));
            b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[]{
                    new GeneralName(GeneralName.dNSName, "localhost"), new GeneralName(GeneralName.iPAddress, "127.0.0.1")}));
            return new Issued(subject, keys.getPrivate(), new X509Certificate[]{sign(b, caKeys.getPrivate()), caCert});
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException("cannot issue " + subject, e);
        }
    }

    public Issued issue(String subject) {
        return issue(subject, Duration.ofDays(30));
    }

    /** {@code issued} as a PKCS12 keystore file (store and key password {@link #PASSWORD}). */
    public Path pkcs12(Issued issued, String file) {
        try {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            ks.setKeyEntry("key", issued.key(), PASSWORD.toCharArray(), issued.chain());
            return store(ks, file);
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A PKCS12 truststore holding this authority's certificate. */
    public Path truststore(String file) {
        try {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            ks.setCertificateEntry("ca", caCert);
            return store(ks, file);
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** This authority's certificate in PEM. */
    public String caPem() {
        return pem(caCert);
    }

    /** The unencrypted PKCS#8 key of {@code issued}, in PEM. */
    public static String keyPem(Issued issued) {
        try {
            return pem(new JcaPKCS8Generator(issued.key(), null));
        } catch (org.bouncycastle.util.io.pem.PemGenerationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The certificate chain of {@code issued}, leaf first, in PEM. */
    public static String chainPem(Issued issued) {
        StringBuilder out = new StringBuilder();
        for (X509Certificate c : issued.chain()) {
            out.append(pem(c));
        }
        return out.toString();
    }

    /**
     * The serial number of the certificate a new TLS connection to {@code host:port} is served, trusting this
     * authority and presenting {@code keystore} when not null (mutual TLS); IllegalStateException when the
     * handshake fails.
     */
    public java.math.BigInteger servedSerial(String host, int port, Path keystore) {
        try {
            KeyStore trust = KeyStore.getInstance("PKCS12");
            trust.load(null, null);
            trust.setCertificateEntry("ca", caCert);
            javax.net.ssl.TrustManagerFactory tmf = javax.net.ssl.TrustManagerFactory.getInstance(
                    javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trust);
            javax.net.ssl.KeyManager[] keys = null;
            if (keystore != null) {
                KeyStore ks = KeyStore.getInstance("PKCS12");
                try (java.io.InputStream in = Files.newInputStream(keystore)) {
                    ks.load(in, PASSWORD.toCharArray());
                }
                javax.net.ssl.KeyManagerFactory kmf = javax.net.ssl.KeyManagerFactory.getInstance(
                        javax.net.ssl.KeyManagerFactory.getDefaultAlgorithm());
                kmf.init(ks, PASSWORD.toCharArray());
                keys = kmf.getKeyManagers();
            }
            javax.net.ssl.SSLContext ctx = javax.net.ssl.SSLContext.getInstance("TLS");
            ctx.init(keys, tmf.getTrustManagers(), null);
            try (javax.net.ssl.SSLSocket socket = (javax.net.ssl.SSLSocket) ctx.getSocketFactory().createSocket(host, port)) {
                socket.setSoTimeout(10_000);
                // TLS 1.2: a server that requires a client certificate refuses one inside the handshake (with
                // 1.3 the client's handshake ends before the server has judged its certificate)
                socket.setEnabledProtocols(new String[]{"TLSv1.2"});
                socket.startHandshake();
                return ((X509Certificate) socket.getSession().getPeerCertificates()[0]).getSerialNumber();
            }
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException("no TLS handshake with " + host + ":" + port, e);
        }
    }

    /** Writes {@code content} to {@code file} under this authority's directory. */
    public Path write(String file, String content) {
        try {
            return Files.writeString(dir.resolve(file), content);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The broker settings of a TLS listener presenting {@code server} (PKCS12) and trusting this
     * authority, under {@code prefix} ("" or {@code listener.name.<name>.}).
     */
    public Map<String, String> brokerSsl(String prefix, Path keystore) {
        Map<String, String> out = new HashMap<>();
        out.put(prefix + "ssl.keystore.location", keystore.toString());
        out.put(prefix + "ssl.keystore.type", "PKCS12");
        out.put(prefix + "ssl.keystore.password", PASSWORD);
        out.put(prefix + "ssl.key.password", PASSWORD);
        out.put(prefix + "ssl.truststore.location", truststore(name + "-truststore.p12").toString());
        out.put(prefix + "ssl.truststore.type", "PKCS12");
        out.put(prefix + "ssl.truststore.password", PASSWORD);
        return out;
    }

    /** A client's settings for TLS trusting this authority, presenting {@code keystore} when not null. */
    public Map<String, Object> clientSsl(Path keystore) {
        Map<String, Object> out = new HashMap<>();
        out.put("security.protocol", "SSL");
        out.put("ssl.truststore.location", truststore(name + "-truststore.p12").toString());
        out.put("ssl.truststore.type", "PKCS12");
        out.put("ssl.truststore.password", PASSWORD);
        if (keystore != null) {
            out.put("ssl.keystore.location", keystore.toString());
            out.put("ssl.keystore.type", "PKCS12");
            out.put("ssl.keystore.password", PASSWORD);
            out.put("ssl.key.password", PASSWORD);
        }
        return out;
    }

    private Path store(KeyStore ks, String file) throws GeneralSecurityException, IOException {
        Path path = dir.resolve(file);
        try (OutputStream out = Files.newOutputStream(path)) {
            ks.store(out, PASSWORD.toCharArray());
        }
        return path;
    }

    private static KeyPair keyPair() throws GeneralSecurityException {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(256);
        return g.generateKeyPair();
    }

    private static X509v3CertificateBuilder builder(X500Name issuer, X500Name subject, KeyPair keys, Duration validity) {
        Instant now = Instant.now();
        Instant notAfter = now.plus(validity);
        return new JcaX509v3CertificateBuilder(issuer, BigInteger.valueOf(SERIALS.incrementAndGet()),
                Date.from(now.minus(Duration.ofHours(1))), Date.from(notAfter), subject, keys.getPublic());
    }

    private static X509Certificate sign(X509v3CertificateBuilder b, PrivateKey issuerKey) throws GeneralSecurityException {
        try {
            return new JcaX509CertificateConverter().getCertificate(b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(issuerKey)));
        } catch (org.bouncycastle.operator.OperatorCreationException e) {
            throw new GeneralSecurityException(e);
        }
    }

    private static String pem(Object o) {
        StringWriter s = new StringWriter();
        try (JcaPEMWriter w = new JcaPEMWriter(s)) {
            if (o instanceof org.bouncycastle.util.io.pem.PemObjectGenerator g) {
                w.writeObject(g);
            } else {
                w.writeObject(o);
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        return s.toString();
    }
}
