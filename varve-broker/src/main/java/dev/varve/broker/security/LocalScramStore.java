package dev.varve.broker.security;

import dev.varve.metadata.MetadataRecord.UserScramCredential;
import dev.varve.metadata.ScramCredentials;
import dev.varve.storage.checkpoint.CheckpointFile;
import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData;
import org.apache.kafka.common.message.AlterUserScramCredentialsResponseData;

import java.io.File;
import java.io.IOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * The SCRAM credentials of a single-node broker (a cluster keeps them in its metadata log), in
 * {@code <first log dir>/varve-scram-credentials}: Kafka's checkpoint layout, one credential per line,
 * replaced atomically and fsynced before an alteration is answered. A line holds what the metadata
 * record does (mechanism type, salt, stored key, server key, iterations, user), never a password:
 *
 * <pre>
 *   2 c2FsdA== c3RvcmVk c2VydmVy 8192 alice
 * </pre>
 *
 * Thread-safe: alterations are serialized; readers see an immutable {@link ScramCredentials}.
 */
public final class LocalScramStore {
    public static final String FILE_NAME = "varve-scram-credentials";

    private static final CheckpointFile.Formatter<UserScramCredential> FORMAT = new CheckpointFile.Formatter<>() {
        @Override
        public String toLine(UserScramCredential c) {
            Base64.Encoder b64 = Base64.getEncoder();
            return c.mechanism() + " " + b64.encodeToString(c.salt()) + " " + b64.encodeToString(c.storedKey()) + " "
                    + b64.encodeToString(c.serverKey()) + " " + c.iterations() + " " + URLEncoder.encode(c.name(), StandardCharsets.UTF_8);
        }

        @Override
        public UserScramCredential fromLine(String line) {
            String[] p = line.split(" ");
            if (p.length != 6) {
                throw new IllegalArgumentException("expected 6 fields: " + line);
            }
            Base64.Decoder b64 = Base64.getDecoder();
            return new UserScramCredential(URLDecoder.decode(p[5], StandardCharsets.UTF_8), Byte.parseByte(p[0]),
                    b64.decode(p[1]), b64.decode(p[2]), b64.decode(p[3]), Integer.parseInt(p[4]));
        }
    };

    private final LocalRecordFile<ScramCredentials, UserScramCredential> file;

    public LocalScramStore(File dir) throws IOException {
        this.file = new LocalRecordFile<>(new File(dir, FILE_NAME), FORMAT, ScramCredentials.EMPTY, ScramCredentials::apply,
                s -> s.toRecords().stream().map(r -> (UserScramCredential) r).toList());
    }

    public ScramCredentials credentials() {
        return file.current();
    }

    /** Decides and applies an AlterUserScramCredentials request; the file holds the result before this returns. */
    public AlterUserScramCredentialsResponseData alter(AlterUserScramCredentialsRequestData request) {
        return file.change(s -> s.alter(request));
    }
}
