package dev.varve.broker.security;

import dev.varve.metadata.ClientQuotas;
import dev.varve.metadata.MetadataRecord.ClientQuota;
import dev.varve.storage.checkpoint.CheckpointFile;
import org.apache.kafka.common.message.AlterClientQuotasRequestData;
import org.apache.kafka.common.message.AlterClientQuotasResponseData;

import java.io.File;
import java.io.IOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The client quotas of a single-node broker (a cluster keeps them in its metadata log), in
 * {@code <first log dir>/varve-client-quotas}: one quota per line, its key, value and entity (each
 * type with its URL-encoded name, or {@code -} for the type's default), for example
 *
 * <pre>
 *   producer_byte_rate 1048576.0 user=alice client-id=-
 * </pre>
 */
public final class LocalQuotaStore {
    public static final String FILE_NAME = "varve-client-quotas";

    private static final CheckpointFile.Formatter<ClientQuota> FORMAT = new CheckpointFile.Formatter<>() {
        @Override
        public String toLine(ClientQuota q) {
            StringBuilder line = new StringBuilder(q.key()).append(' ').append(q.value());
            q.entity().forEach((type, name) -> line.append(' ').append(encode(type)).append('=')
                    .append(name == null ? "-" : encode(name)));
            return line.toString();
        }

        @Override
        public ClientQuota fromLine(String line) {
            String[] p = line.split(" ");
            if (p.length < 3) {
                throw new IllegalArgumentException("expected a key, a value and an entity: " + line);
            }
            SortedMap<String, String> entity = new TreeMap<>();
            for (int i = 2; i < p.length; i++) {
                int eq = p[i].indexOf('=');
                if (eq < 0) {
                    throw new IllegalArgumentException("expected type=name: " + p[i]);
                }
                String name = p[i].substring(eq + 1);
                entity.put(decode(p[i].substring(0, eq)), name.equals("-") ? null : decode(name));
            }
            return new ClientQuota(entity, p[0], Double.parseDouble(p[1]), false);
        }
    };

    /** URL encoding turns '-' alone into itself, so a name "-" is written %2D to stay apart from the default. */
    private static String encode(String s) {
        String e = URLEncoder.encode(s, StandardCharsets.UTF_8);
        return e.equals("-") ? "%2D" : e;
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    private final LocalRecordFile<ClientQuotas, ClientQuota> file;

    public LocalQuotaStore(File dir) throws IOException {
        this.file = new LocalRecordFile<>(new File(dir, FILE_NAME), FORMAT, ClientQuotas.EMPTY, ClientQuotas::apply,
                q -> q.toRecords().stream().map(r -> (ClientQuota) r).toList());
    }

    public ClientQuotas quotas() {
        return file.current();
    }

    /** Decides and applies an AlterClientQuotas request; the file holds the result before this returns. */
    public AlterClientQuotasResponseData alter(AlterClientQuotasRequestData request) {
        return file.change(q -> q.alter(request));
    }
}
