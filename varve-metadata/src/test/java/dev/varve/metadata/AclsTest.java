package dev.varve.metadata;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.message.CreateAclsRequestData;
import org.apache.kafka.common.message.DeleteAclsRequestData;
import org.apache.kafka.common.message.DescribeAclsRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Kafka's StandardAuthorizer rules as {@link Acls} decides them, ACL creation and deletion as the
 * controller decides them, and the decisions of the indexed lookup against a plain scan of every ACL
 * over random ACL sets.
 */
class AclsTest {
    private static final KafkaPrincipal ALICE = new KafkaPrincipal("User", "alice");
    private static final KafkaPrincipal BOB = new KafkaPrincipal("User", "bob");
    private final AtomicLong ids = new AtomicLong();

    private static AclBinding acl(ResourceType type, String name, PatternType pattern, String principal, String host,
                                  AclOperation op, AclPermissionType permission) {
        return new AclBinding(new ResourcePattern(type, name, pattern), new AccessControlEntry(principal, host, op, permission));
    }

    private static AclBinding allow(String topic, PatternType pattern, String principal, AclOperation op) {
        return acl(ResourceType.TOPIC, topic, pattern, principal, "*", op, AclPermissionType.ALLOW);
    }

    private static AclBinding deny(String topic, PatternType pattern, String principal, AclOperation op) {
        return acl(ResourceType.TOPIC, topic, pattern, principal, "*", op, AclPermissionType.DENY);
    }

    private Acls with(AclBinding... bindings) {
        ControllerResult<List<org.apache.kafka.common.errors.InvalidRequestException>> r =
                Acls.EMPTY.create(List.of(bindings), () -> new Uuid(0, ids.incrementAndGet()));
        assertThat(r.response()).allMatch(java.util.Objects::isNull);
        Acls acls = Acls.EMPTY;
        for (MetadataRecord record : r.records()) {
            acls = acls.apply(record);
        }
        return acls;
    }

    private static boolean may(Acls acls, KafkaPrincipal who, AclOperation op, String topic) {
        return acls.authorize(who, "10.0.0.1", op, ResourceType.TOPIC, topic, false);
    }

    @Test
    void literalPrefixedAndWildcardPatternsMatchAsInKafka() {
        Acls acls = with(allow("orders", PatternType.LITERAL, "User:alice", AclOperation.WRITE),
                allow("logs-", PatternType.PREFIXED, "User:alice", AclOperation.READ),
                allow("*", PatternType.LITERAL, "User:bob", AclOperation.DESCRIBE));
        assertThat(may(acls, ALICE, AclOperation.WRITE, "orders")).isTrue();
        assertThat(may(acls, ALICE, AclOperation.WRITE, "orders2")).as("a literal name is not a prefix").isFalse();
        assertThat(may(acls, ALICE, AclOperation.READ, "logs-app")).isTrue();
        assertThat(may(acls, ALICE, AclOperation.READ, "logs")).as("shorter than the prefix").isFalse();
        assertThat(may(acls, BOB, AclOperation.DESCRIBE, "anything")).isTrue();
        assertThat(may(acls, BOB, AclOperation.READ, "anything")).isFalse();
        assertThat(may(acls, BOB, AclOperation.WRITE, "orders")).as("alice's ACL is not bob's").isFalse();
    }

    @Test
    void denyWinsOverAllowAndAllCoversEveryOperation() {
        Acls acls = with(allow("*", PatternType.LITERAL, "User:*", AclOperation.ALL),
                deny("secret-", PatternType.PREFIXED, "User:bob", AclOperation.READ));
        assertThat(may(acls, BOB, AclOperation.READ, "secret-plans")).isFalse();
        assertThat(may(acls, BOB, AclOperation.WRITE, "secret-plans")).as("the DENY names READ only").isTrue();
        assertThat(may(acls, ALICE, AclOperation.READ, "secret-plans")).isTrue();
        Acls denyAll = with(allow("t", PatternType.LITERAL, "User:alice", AclOperation.READ),
                deny("t", PatternType.LITERAL, "User:*", AclOperation.ALL));
        assertThat(may(denyAll, ALICE, AclOperation.READ, "t")).isFalse();
    }

    @Test
    void readWriteDeleteAndAlterImplyDescribeAndAlterConfigsImpliesDescribeConfigs() {
        for (AclOperation op : List.of(AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER)) {
            assertThat(may(with(allow("t", PatternType.LITERAL, "User:alice", op)), ALICE, AclOperation.DESCRIBE, "t"))
                    .as(op + " implies DESCRIBE").isTrue();
        }
        assertThat(may(with(allow("t", PatternType.LITERAL, "User:alice", AclOperation.CREATE)), ALICE, AclOperation.DESCRIBE, "t"))
                .isFalse();
        assertThat(may(with(allow("t", PatternType.LITERAL, "User:alice", AclOperation.ALTER_CONFIGS)), ALICE,
                AclOperation.DESCRIBE_CONFIGS, "t")).isTrue();
        // an implied DESCRIBE does not survive a DENY of DESCRIBE
        assertThat(may(with(allow("t", PatternType.LITERAL, "User:alice", AclOperation.READ),
                deny("t", PatternType.LITERAL, "User:alice", AclOperation.DESCRIBE)), ALICE, AclOperation.DESCRIBE, "t")).isFalse();
    }

    @Test
    void hostsMatchExactlyOrByWildcard() {
        Acls acls = with(acl(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:alice", "10.0.0.1", AclOperation.READ,
                AclPermissionType.ALLOW));
        assertThat(acls.authorize(ALICE, "10.0.0.1", AclOperation.READ, ResourceType.TOPIC, "t", false)).isTrue();
        assertThat(acls.authorize(ALICE, "10.0.0.2", AclOperation.READ, ResourceType.TOPIC, "t", false)).isFalse();
    }

    @Test
    void aResourceNoAclAppliesToGetsTheNoAclFoundAnswerButOneWithAnyAclDoesNot() {
        Acls acls = with(allow("t", PatternType.LITERAL, "User:alice", AclOperation.READ));
        assertThat(acls.authorize(BOB, "h", AclOperation.READ, ResourceType.TOPIC, "other", true)).isTrue();
        assertThat(acls.authorize(BOB, "h", AclOperation.READ, ResourceType.TOPIC, "other", false)).isFalse();
        assertThat(acls.authorize(BOB, "h", AclOperation.READ, ResourceType.TOPIC, "t", true))
                .as("t has an ACL (alice's): bob is not allowed even with allow.everyone.if.no.acl.found").isFalse();
        assertThat(acls.authorize(BOB, "h", AclOperation.READ, ResourceType.GROUP, "t", true))
                .as("resource types are apart").isTrue();
    }

    @Test
    void writeOnAnyTopicIsFoundUnlessADenyCoversIt() {
        KafkaPrincipal p = ALICE;
        assertThat(with().authorizeAnyOfType(p, "h", AclOperation.WRITE, ResourceType.TOPIC, false)).isFalse();
        assertThat(with().authorizeAnyOfType(p, "h", AclOperation.WRITE, ResourceType.TOPIC, true)).isTrue();
        assertThat(with(allow("orders", PatternType.LITERAL, "User:alice", AclOperation.WRITE))
                .authorizeAnyOfType(p, "h", AclOperation.WRITE, ResourceType.TOPIC, false)).isTrue();
        assertThat(with(allow("orders", PatternType.LITERAL, "User:alice", AclOperation.READ))
                .authorizeAnyOfType(p, "h", AclOperation.WRITE, ResourceType.TOPIC, false)).as("no implication here").isFalse();
        assertThat(with(allow("orders", PatternType.LITERAL, "User:alice", AclOperation.WRITE),
                deny("ord", PatternType.PREFIXED, "User:alice", AclOperation.WRITE))
                .authorizeAnyOfType(p, "h", AclOperation.WRITE, ResourceType.TOPIC, false)).isFalse();
        assertThat(with(allow("orders-", PatternType.PREFIXED, "User:alice", AclOperation.WRITE),
                deny("orders-eu", PatternType.PREFIXED, "User:alice", AclOperation.WRITE))
                .authorizeAnyOfType(p, "h", AclOperation.WRITE, ResourceType.TOPIC, false))
                .as("the DENY covers only part of the prefix").isTrue();
        assertThat(with(allow("*", PatternType.LITERAL, "User:alice", AclOperation.WRITE),
                deny("*", PatternType.LITERAL, "User:*", AclOperation.WRITE))
                .authorizeAnyOfType(p, "h", AclOperation.WRITE, ResourceType.TOPIC, false)).isFalse();
    }

    @Test
    void createKeepsEachBindingOnceRefusesInvalidOnesAndDeleteRemovesWhatFiltersMatch() {
        CreateAclsRequestData create = new CreateAclsRequestData();
        create.creations().add(creation(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", AclOperation.READ));
        create.creations().add(creation(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", AclOperation.READ));
        create.creations().add(creation(ResourceType.CLUSTER, "not-the-cluster", PatternType.LITERAL, "User:alice", AclOperation.ALTER));
        create.creations().add(creation(ResourceType.TOPIC, "orders", PatternType.LITERAL, "alice", AclOperation.READ));
        create.creations().add(creation(ResourceType.GROUP, "g-", PatternType.PREFIXED, "User:bob", AclOperation.READ));
        ControllerResult<org.apache.kafka.common.message.CreateAclsResponseData> created =
                AclRequests.create(Acls.EMPTY, create, () -> new Uuid(1, ids.incrementAndGet()));
        assertThat(created.response().results()).extracting(r -> Errors.forCode(r.errorCode())).containsExactly(
                Errors.NONE, Errors.NONE, Errors.INVALID_REQUEST, Errors.INVALID_REQUEST, Errors.NONE);
        assertThat(created.records()).hasSize(2);
        MetadataImage image = MetadataImage.EMPTY.apply(0, created.records());
        assertThat(image.acls().size()).isEqualTo(2);
        assertThat(MetadataImage.fromSnapshot(0, image.toRecords()).acls()).isEqualTo(image.acls());

        DescribeAclsRequestData describe = new DescribeAclsRequestData().setResourceTypeFilter(ResourceType.ANY.code())
                .setPatternTypeFilter(PatternType.ANY.code()).setOperation(AclOperation.ANY.code())
                .setPermissionType(AclPermissionType.ANY.code()).setPrincipalFilter("User:bob").setResourceNameFilter(null)
                .setHostFilter(null);
        var described = AclRequests.describe(image.acls(), describe);
        assertThat(described.errorCode()).as(described.toString()).isZero();
        assertThat(described.resources()).as(image.acls().all().toString()).singleElement()
                .satisfies(r -> assertThat(r.resourceName()).isEqualTo("g-"));

        DeleteAclsRequestData delete = new DeleteAclsRequestData();
        delete.filters().add(new DeleteAclsRequestData.DeleteAclsFilter().setResourceTypeFilter(ResourceType.TOPIC.code())
                .setPatternTypeFilter(PatternType.MATCH.code()).setResourceNameFilter("orders")
                .setOperation(AclOperation.ANY.code()).setPermissionType(AclPermissionType.ANY.code()).setPrincipalFilter(null)
                .setHostFilter(null));
        delete.filters().add(new DeleteAclsRequestData.DeleteAclsFilter().setResourceTypeFilter(ResourceType.ANY.code())
                .setPatternTypeFilter(PatternType.ANY.code()).setOperation(AclOperation.ANY.code())
                .setPermissionType(AclPermissionType.ANY.code()).setResourceNameFilter(null).setPrincipalFilter(null)
                .setHostFilter(null));
        ControllerResult<org.apache.kafka.common.message.DeleteAclsResponseData> deleted = AclRequests.delete(image.acls(), delete);
        assertThat(deleted.response().filterResults().get(0).matchingAcls()).singleElement()
                .satisfies(m -> assertThat(m.resourceName()).isEqualTo("orders"));
        assertThat(deleted.response().filterResults().get(1).matchingAcls()).as("each ACL removed once").singleElement()
                .satisfies(m -> assertThat(m.resourceName()).isEqualTo("g-"));
        assertThat(image.apply(1, deleted.records()).acls().isEmpty()).isTrue();
    }

    private static CreateAclsRequestData.AclCreation creation(ResourceType type, String name, PatternType pattern,
                                                              String principal, AclOperation op) {
        return new CreateAclsRequestData.AclCreation().setResourceType(type.code()).setResourceName(name)
                .setResourcePatternType(pattern.code()).setPrincipal(principal).setHost("*").setOperation(op.code())
                .setPermissionType(AclPermissionType.ALLOW.code());
    }

    /** Every decision of the indexed lookup equals a scan of all ACLs by the documented rules. */
    @Test
    void indexedDecisionsEqualAPlainScanOverRandomAcls() {
        String[] names = {"a", "ab", "abc", "abd", "b", "ba", "orders", "orders-eu", "*", "o"};
        String[] principals = {"User:alice", "User:bob", "User:*"};
        String[] hosts = {"*", "10.0.0.1", "10.0.0.2"};
        AclOperation[] ops = {AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL,
                AclOperation.ALTER_CONFIGS, AclOperation.DESCRIBE_CONFIGS, AclOperation.DELETE};
        for (int seed = 0; seed < 200; seed++) {
            Random random = new Random(seed);
            List<AclBinding> bindings = new ArrayList<>();
            int n = random.nextInt(12);
            for (int i = 0; i < n; i++) {
                String name = names[random.nextInt(names.length)];
                PatternType pattern = random.nextBoolean() || name.equals("*") ? PatternType.LITERAL : PatternType.PREFIXED;
                bindings.add(acl(random.nextInt(4) == 0 ? ResourceType.GROUP : ResourceType.TOPIC, name, pattern,
                        principals[random.nextInt(principals.length)], hosts[random.nextInt(hosts.length)],
                        ops[random.nextInt(ops.length)], random.nextInt(3) == 0 ? AclPermissionType.DENY : AclPermissionType.ALLOW));
            }
            Acls acls = with(bindings.stream().distinct().toArray(AclBinding[]::new));
            for (String name : names) {
                for (KafkaPrincipal who : List.of(ALICE, BOB)) {
                    for (AclOperation op : ops) {
                        if (op == AclOperation.ALL) {
                            continue;
                        }
                        for (boolean noAcl : new boolean[]{false, true}) {
                            String host = hosts[1 + random.nextInt(2)];
                            assertThat(acls.authorize(who, host, op, ResourceType.TOPIC, name, noAcl))
                                    .as("seed %d: %s %s %s from %s over %s", seed, who, op, name, host, bindings)
                                    .isEqualTo(scan(bindings, who, host, op, name, noAcl));
                        }
                    }
                }
            }
        }
    }

    private static boolean scan(List<AclBinding> bindings, KafkaPrincipal who, String host, AclOperation op, String name,
                                boolean noAcl) {
        boolean any = false;
        boolean allowed = false;
        for (AclBinding b : bindings) {
            ResourcePattern p = b.pattern();
            boolean matches = p.resourceType() == ResourceType.TOPIC && (p.patternType() == PatternType.LITERAL
                    ? p.name().equals(name) || p.name().equals("*") : name.startsWith(p.name()));
            if (!matches) {
                continue;
            }
            any = true;
            AccessControlEntry e = b.entry();
            if (!(e.principal().equals("User:" + who.getName()) || e.principal().equals("User:*"))
                    || !(e.host().equals(host) || e.host().equals("*"))) {
                continue;
            }
            boolean covers = e.operation() == op || e.operation() == AclOperation.ALL;
            if (e.permissionType() == AclPermissionType.DENY && covers) {
                return false;
            }
            if (e.permissionType() == AclPermissionType.ALLOW && (covers
                    || op == AclOperation.DESCRIBE && List.of(AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                    AclOperation.ALTER).contains(e.operation())
                    || op == AclOperation.DESCRIBE_CONFIGS && e.operation() == AclOperation.ALTER_CONFIGS)) {
                allowed = true;
            }
        }
        return any ? allowed : noAcl;
    }

    @Test
    void aFilterMatchesThroughKafkasOwnRules() {
        Acls acls = with(allow("orders", PatternType.LITERAL, "User:alice", AclOperation.READ),
                allow("ord", PatternType.PREFIXED, "User:alice", AclOperation.READ));
        AclBindingFilter match = new AclBindingFilter(new org.apache.kafka.common.resource.ResourcePatternFilter(
                ResourceType.TOPIC, "orders", PatternType.MATCH), org.apache.kafka.common.acl.AccessControlEntryFilter.ANY);
        assertThat(acls.matching(match)).hasSize(2);
    }
}
