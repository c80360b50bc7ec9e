package dev.varve.broker.security;

import dev.varve.metadata.Acls;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.internals.SecurityUtils;

import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The broker's authorizer: Kafka's {@code StandardAuthorizer} semantics over the cluster's ACLs (the
 * metadata image of a cluster, the local file of a single node), asked by every API handler with
 * Kafka's operation and resource for what the request does.
 *
 * <p>{@link #NONE} is the broker without an authorizer ({@code authorizer.class.name} empty, Kafka's
 * default): everything is allowed and the ACL APIs answer SECURITY_DISABLED. Otherwise a super user
 * ({@code super.users}) may do anything; anybody else as the ACLs say, and on a resource no ACL applies
 * to as {@code allow.everyone.if.no.acl.found} says (default false: denied).
 */
public final class AclAuthorizer {
    /** Kafka's KRaft authorizer, the one name {@code authorizer.class.name} accepts. */
    public static final String STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";
    public static final String AUTHORIZER_CLASS_NAME = "authorizer.class.name";
    public static final String SUPER_USERS = "super.users";
    public static final String ALLOW_EVERYONE_IF_NO_ACL_FOUND = "allow.everyone.if.no.acl.found";

    /** No authorizer: everything is allowed. */
    public static final AclAuthorizer NONE = new AclAuthorizer(null, Set.of(), true);

    private final Supplier<Acls> acls;
    private final Set<KafkaPrincipal> superUsers;
    private final boolean allowIfNoAcl;

    private AclAuthorizer(Supplier<Acls> acls, Set<KafkaPrincipal> superUsers, boolean allowIfNoAcl) {
        this.acls = acls;
        this.superUsers = superUsers;
        this.allowIfNoAcl = allowIfNoAcl;
    }

    /**
     * The authorizer the settings ask for, deciding over {@code acls}; {@link #NONE} when
     * {@code className} is empty.
     *
     * @throws ConfigException for another class name or a super user that is not {@code Type:name}
     */
    public static AclAuthorizer configure(String className, String superUsers, boolean allowIfNoAcl, Supplier<Acls> acls) {
        if (className == null || className.isBlank()) {
            return NONE;
        }
        if (!STANDARD_AUTHORIZER.equals(className.trim())) {
            throw new ConfigException(AUTHORIZER_CLASS_NAME, className, "Varve's authorizer is Kafka's " + STANDARD_AUTHORIZER
                    + " (ACLs in the cluster metadata); another class cannot be loaded");
        }
        return new AclAuthorizer(acls, parseSuperUsers(superUsers), allowIfNoAcl);
    }

    /** {@code super.users}: principals separated by semicolons, as in Kafka. */
    static Set<KafkaPrincipal> parseSuperUsers(String value) {
        Set<KafkaPrincipal> out = new HashSet<>();
        if (value == null) {
            return out;
        }
        for (String s : value.split(";")) {
            if (s.isBlank()) {
                continue;
            }
            try {
                out.add(SecurityUtils.parseKafkaPrincipal(s.trim()));
            } catch (IllegalArgumentException e) {
                throw new ConfigException(SUPER_USERS, value, e.getMessage());
            }
        }
        return Set.copyOf(out);
    }

    /** Whether an authorizer is configured (else the ACL APIs answer SECURITY_DISABLED). */
    public boolean enabled() {
        return acls != null;
    }

    /** The ACLs decided over (empty without an authorizer). */
    public Acls acls() {
        return acls == null ? Acls.EMPTY : acls.get();
    }

    /** Whether the request's principal, from its address, may do {@code op} on the named resource. */
    public boolean authorize(RequestContext context, AclOperation op, ResourceType type, String name) {
        return authorize(context.principal, host(context), op, type, name);
    }

    public boolean authorize(KafkaPrincipal principal, String host, AclOperation op, ResourceType type, String name) {
        if (acls == null || isSuperUser(principal)) {
            return true;
        }
        return acls.get().authorize(principal, host, op, type, name, allowIfNoAcl);
    }

    /** Whether the principal may do {@code op} on the cluster (Kafka's one CLUSTER resource). */
    public boolean authorizeCluster(RequestContext context, AclOperation op) {
        return authorize(context, op, ResourceType.CLUSTER, Acls.CLUSTER_NAME);
    }

    /**
     * Whether {@code principal} may be a peer of the metadata quorum (a voter, or a broker sending it
     * commands): with an authorizer, a super user or a principal granted CLUSTER_ACTION on the cluster by an
     * ACL for any host; {@code allow.everyone.if.no.acl.found} never opens the quorum. Everyone without one.
     */
    public boolean authorizeQuorumPeer(KafkaPrincipal principal) {
        if (acls == null || isSuperUser(principal)) {
            return true;
        }
        return acls.get().authorize(principal, "*", AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, Acls.CLUSTER_NAME, false);
    }

    /** Whether the principal may do {@code op} on some resource of {@code type} (Kafka's authorizeByResourceType). */
    public boolean authorizeAnyOfType(RequestContext context, AclOperation op, ResourceType type) {
        if (acls == null || isSuperUser(context.principal)) {
            return true;
        }
        return acls.get().authorizeAnyOfType(context.principal, host(context), op, type, allowIfNoAcl);
    }

    /**
     * The operations of {@code supported} the principal may do on the resource, as the bit field of
     * their codes that Metadata, DescribeGroups and DescribeCluster answers carry (every one of them
     * without an authorizer, as in Kafka).
     */
    public int authorizedOperations(RequestContext context, ResourceType type, String name, Collection<AclOperation> supported) {
        int bits = 0;
        for (AclOperation op : supported) {
            if (authorize(context, op, type, name)) {
                bits |= 1 << op.code();
            }
        }
        return bits;
    }

    private boolean isSuperUser(KafkaPrincipal principal) {
        return superUsers.contains(principal);
    }

    private static String host(RequestContext context) {
        return context.clientAddress == null ? "" : context.clientAddress.getHostAddress();
    }

    /** The operations Kafka reports for a topic, a group, the cluster (its AclEntry.supportedOperations). */
    public static final List<AclOperation> TOPIC_OPERATIONS = List.of(AclOperation.READ, AclOperation.WRITE,
            AclOperation.CREATE, AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.ALTER,
            AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS);
    public static final List<AclOperation> GROUP_OPERATIONS = List.of(AclOperation.READ, AclOperation.DESCRIBE,
            AclOperation.DELETE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS);
    public static final List<AclOperation> CLUSTER_OPERATIONS = List.of(AclOperation.CREATE, AclOperation.CLUSTER_ACTION,
            AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
            AclOperation.DESCRIBE);
}
