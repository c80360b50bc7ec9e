package dev.varve.broker.security;

import dev.varve.metadata.AclRequests;
import dev.varve.metadata.Acls;
import dev.varve.metadata.MetadataRecord.AclRecord;
import dev.varve.storage.checkpoint.CheckpointFile;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.CreateAclsRequestData;
import org.apache.kafka.common.message.CreateAclsResponseData;
import org.apache.kafka.common.message.DeleteAclsRequestData;
import org.apache.kafka.common.message.DeleteAclsResponseData;

import java.io.File;
import java.io.IOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/**
 * The ACLs of a single-node broker (a cluster keeps them in its metadata log), in
 * {@code <first log dir>/varve-acls}: one ACL per line, as its metadata record holds it (id, resource
 * type, pattern type, operation and permission codes, then the URL-encoded resource name, principal and
 * host), for example
 *
 * <pre>
 *   Qb6cX1QzTP2R3vPy1kUq7g 2 3 3 3 orders User%3Aalice *
 * </pre>
 */
public final class LocalAclStore {
    public static final String FILE_NAME = "varve-acls";

    private static final CheckpointFile.Formatter<AclRecord> FORMAT = new CheckpointFile.Formatter<>() {
        @Override
        public String toLine(AclRecord a) {
            return a.id() + " " + a.resourceType() + " " + a.patternType() + " " + a.operation() + " " + a.permissionType()
                    + " " + encode(a.resourceName()) + " " + encode(a.principal()) + " " + encode(a.host());
        }

        @Override
        public AclRecord fromLine(String line) {
            String[] p = line.split(" ");
            if (p.length != 8) {
                throw new IllegalArgumentException("expected 8 fields: " + line);
            }
            return new AclRecord(Uuid.fromString(p[0]), Byte.parseByte(p[1]), decode(p[5]), Byte.parseByte(p[2]),
                    decode(p[6]), decode(p[7]), Byte.parseByte(p[3]), Byte.parseByte(p[4]));
        }
    };

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    private final LocalRecordFile<Acls, AclRecord> file;

    public LocalAclStore(File dir) throws IOException {
        this.file = new LocalRecordFile<>(new File(dir, FILE_NAME), FORMAT, Acls.EMPTY, Acls::apply,
                a -> a.toRecords().stream().map(r -> (AclRecord) r).toList());
    }

    public Acls acls() {
        return file.current();
    }

    /** Decides and applies a CreateAcls request; the file holds the result before this returns. */
    public CreateAclsResponseData create(CreateAclsRequestData request) {
        return file.change(a -> AclRequests.create(a, request, Uuid::randomUuid));
    }

    /** Decides and applies a DeleteAcls request; the file holds the result before this returns. */
    public DeleteAclsResponseData delete(DeleteAclsRequestData request) {
        return file.change(a -> AclRequests.delete(a, request));
    }
}
