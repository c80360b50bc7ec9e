package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.AclRecord;
import dev.varve.metadata.MetadataRecord.RemoveAcl;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * The cluster's ACLs, as the metadata holds them: each binding (resource pattern, principal, host,
 * operation, permission) under an id of its own, so a deletion names exactly what it removes.
 * Immutable; {@link #apply} returns a changed copy.
 *
 * <p>{@link #authorize} decides as Kafka's {@code StandardAuthorizer} does, for one principal and host
 * asking for one operation on one resource: a matching DENY wins over any ALLOW; an ALLOW of the
 * operation itself, of ALL, or of an operation that implies it (READ, WRITE, DELETE and ALTER imply
 * DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows; an ACL matches the resource when it names it
 * literally, names the literal wildcard {@code *}, or is a PREFIXED pattern the name starts with; it
 * matches the principal when it names it or {@code User:*}, and the host when it names it or {@code *}.
 * When no ACL at all applies to the resource (whatever its principal), the answer is the
 * {@code noAclFound} one given ({@code allow.everyone.if.no.acl.found}). Super users are the caller's
 * business.
 */
public final class Acls {
    public static final Acls EMPTY = new Acls(Collections.emptyMap());
    /** Kafka's name of the one CLUSTER resource. */
    public static final String CLUSTER_NAME = "kafka-cluster";
    public static final String WILDCARD = ResourcePattern.WILDCARD_RESOURCE;

    /** By id; sorted so that snapshots are stable. */
    private final Map<Uuid, AclBinding> byId;
    /** By resource type, then literal name or prefix: what {@link #authorize} looks at. */
    private final Map<ResourceType, Map<String, List<AclBinding>>> literal;
    private final Map<ResourceType, TreeMap<String, List<AclBinding>>> prefixed;

    private Acls(Map<Uuid, AclBinding> byId) {
        this.byId = byId;
        Map<ResourceType, Map<String, List<AclBinding>>> lit = new HashMap<>();
        Map<ResourceType, TreeMap<String, List<AclBinding>>> pre = new HashMap<>();
        for (AclBinding b : byId.values()) {
            ResourcePattern p = b.pattern();
            if (p.patternType() == PatternType.PREFIXED) {
                pre.computeIfAbsent(p.resourceType(), t -> new TreeMap<>()).computeIfAbsent(p.name(), n -> new ArrayList<>()).add(b);
            } else {
                lit.computeIfAbsent(p.resourceType(), t -> new HashMap<>()).computeIfAbsent(p.name(), n -> new ArrayList<>()).add(b);
            }
        }
        this.literal = lit;
        this.prefixed = pre;
    }

    public int size() {
        return byId.size();
    }

    public boolean isEmpty() {
        return byId.isEmpty();
    }

    /** Every binding by id. */
    public Map<Uuid, AclBinding> all() {
        return byId;
    }

    /** With an ACL record applied; other records leave it as it is. */
    public Acls apply(MetadataRecord record) {
        if (record instanceof AclRecord r) {
            if (byId.containsKey(r.id())) {
                throw new IllegalStateException("ACL " + r.id() + " already exists");
            }
            Map<Uuid, AclBinding> next = new TreeMap<>(byId);
            next.put(r.id(), r.binding());
            return new Acls(Collections.unmodifiableMap(next));
        }
        if (record instanceof RemoveAcl r) {
            if (!byId.containsKey(r.id())) {
                throw new IllegalStateException("no ACL " + r.id());
            }
            Map<Uuid, AclBinding> next = new TreeMap<>(byId);
            next.remove(r.id());
            return new Acls(Collections.unmodifiableMap(next));
        }
        return this;
    }

    /** The records that rebuild these ACLs from {@link #EMPTY}. */
    public List<MetadataRecord> toRecords() {
        List<MetadataRecord> out = new ArrayList<>();
        byId.forEach((id, b) -> out.add(AclRecord.of(id, b)));
        return out;
    }

    /** The bindings {@code filter} matches. */
    public List<AclBinding> matching(AclBindingFilter filter) {
        List<AclBinding> out = new ArrayList<>();
        for (AclBinding b : byId.values()) {
            if (filter.matches(b)) {
                out.add(b);
            }
        }
        return out;
    }

    /** The answer to a CreateAcls binding: null to create it, else why it is refused. */
    public static InvalidRequestException invalid(AclBinding b) {
        ResourcePattern p = b.pattern();
        AccessControlEntry e = b.entry();
        if (p.resourceType() == ResourceType.UNKNOWN || p.resourceType() == ResourceType.ANY) {
            return new InvalidRequestException("Invalid resourceType " + p.resourceType());
        }
        if (p.patternType() != PatternType.LITERAL && p.patternType() != PatternType.PREFIXED) {
            return new InvalidRequestException("Invalid patternType " + p.patternType());
        }
        if (e.operation() == AclOperation.UNKNOWN || e.operation() == AclOperation.ANY) {
            return new InvalidRequestException("Invalid operation " + e.operation());
        }
        if (e.permissionType() != AclPermissionType.ALLOW && e.permissionType() != AclPermissionType.DENY) {
            return new InvalidRequestException("Invalid permissionType " + e.permissionType());
        }
        if (p.name() == null || p.name().isEmpty()) {
            return new InvalidRequestException("Resource name should not be empty");
        }
        if (p.resourceType() == ResourceType.CLUSTER && !(p.patternType() == PatternType.LITERAL && CLUSTER_NAME.equals(p.name()))) {
            return new InvalidRequestException("The only valid name for the CLUSTER resource is " + CLUSTER_NAME);
        }
        if (e.principal() == null || e.principal().indexOf(':') < 0) {
            return new InvalidRequestException("Could not parse principal from `" + e.principal()
                    + "` (no colon is present separating the principal type from the principal name)");
        }
        if (e.host() == null || e.host().isEmpty()) {
            return new InvalidRequestException("Invalid host: the host must be given (\"*\" for any host)");
        }
        return null;
    }

    /**
     * Decides a CreateAcls request: per binding, in order, null (created, or already present: creating
     * an ACL twice is not an error, as in Kafka) or the error.
     */
    public ControllerResult<List<InvalidRequestException>> create(List<AclBinding> bindings, Supplier<Uuid> ids) {
        List<MetadataRecord> records = new ArrayList<>();
        List<InvalidRequestException> results = new ArrayList<>();
        Set<AclBinding> present = new HashSet<>(byId.values());
        for (AclBinding b : bindings) {
            InvalidRequestException error = invalid(b);
            results.add(error);
            if (error == null && present.add(b)) {
                Uuid id = ids.get();
                while (byId.containsKey(id)) {
                    id = ids.get();
                }
                records.add(AclRecord.of(id, b));
            }
        }
        return new ControllerResult<>(records, results);
    }

    /** Decides a DeleteAcls request: per filter, in order, the bindings it removes (each once overall). */
    public ControllerResult<List<List<AclBinding>>> delete(List<AclBindingFilter> filters) {
        List<MetadataRecord> records = new ArrayList<>();
        List<List<AclBinding>> results = new ArrayList<>();
        Set<Uuid> removed = new HashSet<>();
        for (AclBindingFilter f : filters) {
            List<AclBinding> matched = new ArrayList<>();
            if (!f.isUnknown()) {
                byId.forEach((id, b) -> {
                    if (f.matches(b) && removed.add(id)) {
                        matched.add(b);
                        records.add(new RemoveAcl(id));
                    }
                });
            }
            results.add(matched);
        }
        return new ControllerResult<>(records, results);
    }

    /**
     * Whether {@code principal} at {@code host} may do {@code operation} on the resource; see the class
     * comment. {@code noAclFound} is the answer when no ACL applies to the resource.
     */
    public boolean authorize(KafkaPrincipal principal, String host, AclOperation operation, ResourceType type, String name,
                             boolean noAclFound) {
        String user = principal.getPrincipalType() + ":" + principal.getName();
        boolean anyForResource = false;
        boolean allowed = false;
        for (List<AclBinding> group : candidates(type, name)) {
            for (AclBinding b : group) {
                anyForResource = true;
                AccessControlEntry e = b.entry();
                if (!(e.principal().equals(user) || e.principal().equals("User:*"))) {
                    continue;
                }
                if (!(e.host().equals(host) || e.host().equals(WILDCARD))) {
                    continue;
                }
                if (e.permissionType() == AclPermissionType.DENY) {
                    if (e.operation() == operation || e.operation() == AclOperation.ALL) {
                        return false;
                    }
                } else if (e.permissionType() == AclPermissionType.ALLOW && allows(e.operation(), operation)) {
                    allowed = true;
                }
            }
        }
        return anyForResource ? allowed : noAclFound;
    }

    /**
     * Whether {@code principal} at {@code host} may do {@code operation} on some resource of {@code type}
     * (Kafka's {@code authorizeByResourceType}, which lets an idempotent producer with WRITE on any
     * topic initialise without IDEMPOTENT_WRITE on the cluster): an ALLOW of the operation itself (or
     * ALL) on a pattern that no DENY of it covers. A DENY on the literal wildcard covers everything; a
     * DENY covers a literal name it names or starts with, and a prefix it starts. As in Kafka, the
     * answer for an arbitrary name of the type (which brings in {@code noAclFound}) is asked first.
     */
    public boolean authorizeAnyOfType(KafkaPrincipal principal, String host, AclOperation operation, ResourceType type,
                                      boolean noAclFound) {
        if (authorize(principal, host, operation, type, "hardcode", noAclFound)) {
            return true;
        }
        String user = principal.getPrincipalType() + ":" + principal.getName();
        Set<String> deniedLiterals = new HashSet<>();
        List<String> deniedPrefixes = new ArrayList<>();
        List<ResourcePattern> allowed = new ArrayList<>();
        for (AclBinding b : byId.values()) {
            AccessControlEntry e = b.entry();
            if (b.pattern().resourceType() != type
                    || !(e.principal().equals(user) || e.principal().equals("User:*"))
                    || !(e.host().equals(host) || e.host().equals(WILDCARD))
                    || !(e.operation() == operation || e.operation() == AclOperation.ALL)) {
                continue;
            }
            if (e.permissionType() == AclPermissionType.DENY) {
                if (b.pattern().patternType() == PatternType.LITERAL) {
                    if (WILDCARD.equals(b.pattern().name())) {
                        return false;
                    }
                    deniedLiterals.add(b.pattern().name());
                } else {
                    deniedPrefixes.add(b.pattern().name());
                }
            } else if (e.permissionType() == AclPermissionType.ALLOW) {
                allowed.add(b.pattern());
            }
        }
        for (ResourcePattern p : allowed) {
            boolean literal = p.patternType() == PatternType.LITERAL;
            if (literal && WILDCARD.equals(p.name())) {
                return true;
            }
            if (literal && deniedLiterals.contains(p.name())) {
                continue;
            }
            if (deniedPrefixes.stream().noneMatch(p.name()::startsWith)) {
                return true;
            }
        }
        return false;
    }

    /** Whether an ALLOW of {@code granted} covers {@code wanted}. */
    static boolean allows(AclOperation granted, AclOperation wanted) {
        if (granted == wanted || granted == AclOperation.ALL) {
            return true;
        }
        if (wanted == AclOperation.DESCRIBE) {
            return granted == AclOperation.READ || granted == AclOperation.WRITE || granted == AclOperation.DELETE
                    || granted == AclOperation.ALTER;
        }
        if (wanted == AclOperation.DESCRIBE_CONFIGS) {
            return granted == AclOperation.ALTER_CONFIGS;
        }
        return false;
    }

    /** The groups of bindings that may apply to a resource: literal name, literal wildcard, prefixes of the name. */
    private List<List<AclBinding>> candidates(ResourceType type, String name) {
        List<List<AclBinding>> out = new ArrayList<>(3);
        Map<String, List<AclBinding>> lit = literal.get(type);
        if (lit != null) {
            List<AclBinding> exact = lit.get(name);
            if (exact != null) {
                out.add(exact);
            }
            List<AclBinding> any = lit.get(WILDCARD);
            if (any != null && !WILDCARD.equals(name)) {
                out.add(any);
            }
        }
        TreeMap<String, List<AclBinding>> pre = prefixed.get(type);
        if (pre != null) {
            // every prefix of the name is at or below it in order; walk down from the name
            for (Map.Entry<String, List<AclBinding>> e = pre.floorEntry(name); e != null; e = pre.lowerEntry(e.getKey())) {
                if (name.startsWith(e.getKey())) {
                    out.add(e.getValue());
                } else if (commonPrefix(name, e.getKey()) == 0) {
                    break; // nothing lower shares even a first character
                }
            }
        }
        return out;
    }

    private static int commonPrefix(String a, String b) {
        int n = Math.min(a.length(), b.length());
        int i = 0;
        while (i < n && a.charAt(i) == b.charAt(i)) {
            i++;
        }
        return i;
    }

    /** The bindings grouped by resource pattern, in a stable order (DescribeAcls answers). */
    public static Map<ResourcePattern, List<AccessControlEntry>> byPattern(Collection<AclBinding> bindings) {
        Map<ResourcePattern, List<AccessControlEntry>> out = new LinkedHashMap<>();
        for (AclBinding b : bindings) {
            out.computeIfAbsent(b.pattern(), p -> new ArrayList<>()).add(b.entry());
        }
        return out;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Acls a && byId.equals(a.byId);
    }

    @Override
    public int hashCode() {
        return byId.hashCode();
    }

    @Override
    public String toString() {
        return "Acls(" + byId.size() + ")";
    }
}
