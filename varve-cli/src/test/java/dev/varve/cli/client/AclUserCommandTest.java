package dev.varve.cli.client;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code varve acl ...} and {@code varve user ...} end to end against a broker with Kafka's authorizer and
 * a SASL/SCRAM listener beside the plaintext one (whose anonymous principal is the super user the CLI
 * runs as): users created with the CLI log in over SCRAM, and the ACLs created with it decide what they see.
 */
class AclUserCommandTest {
    static CliHarness cli;

    @BeforeAll
    static void start() throws Exception {
        cli = new CliHarness(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512",
                "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users", "User:ANONYMOUS"));
        cli.admin.createTopics(List.of(new NewTopic("visible", 1, (short) 1), new NewTopic("hidden", 1, (short) 1))).all().get();
    }

    @AfterAll
    static void stop() throws Exception {
        cli.close();
    }

    static String saslBootstrap() {
        InetSocketAddress a = cli.broker.boundAddresses().get(1);
        return a.getHostString() + ":" + a.getPort();
    }

    /** {@code varve topic list} as {@code user} over SCRAM. */
    static CliHarness.Result topicsAs(String user, String password, String mechanism) {
        return cli.raw("topic", "list", "-o", "json", "--timeout", "5", "-b", saslBootstrap(),
                "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=" + mechanism,
                "-X", "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                        + user + "\" password=\"" + password + "\";");
    }

    static List<String> names(CliHarness.Result r) {
        List<String> out = new ArrayList<>();
        r.json().forEach(n -> out.add(n.get("name").asText()));
        return out;
    }

    static Collection<AclBinding> acls() throws Exception {
        return cli.admin.describeAcls(AclBindingFilter.ANY).values().get();
    }

    @Test
    void aCreatedUserLogsInOverScramAndSeesWhatItsAclsAllow() throws Exception {
        CliHarness.Result created = cli.run("user", "create", "alice", "--password", "s3cret", "--mechanism", "SCRAM-SHA-256,SCRAM-SHA-512");
        assertThat(created.exit()).as(created.toString()).isZero();
        assertThat(created.out()).isEqualTo("Created user alice (SCRAM-SHA-256, SCRAM-SHA-512, 4096 iterations).\n");
        assertThat(cli.admin.describeUserScramCredentials(List.of("alice")).all().get().get("alice").credentialInfos())
                .extracting(ScramCredentialInfo::mechanism).containsExactlyInAnyOrder(ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512);

        // logged in, but no ACL yet: alice sees no topic
        CliHarness.Result none = topicsAs("alice", "s3cret", "SCRAM-SHA-512");
        assertThat(none.exit()).as(none.toString()).isZero();
        assertThat(names(none)).isEmpty();
        CliHarness.Result wrong = topicsAs("alice", "guess", "SCRAM-SHA-256");
        assertThat(wrong.exit()).isEqualTo(1);
        assertThat(wrong.err()).startsWith("error: authentication failed: ");

        CliHarness.Result acl = cli.run("acl", "create", "--principal", "alice", "--operation", "describe,read", "--topic", "visible");
        assertThat(acl.exit()).as(acl.toString()).isZero();
        assertThat(acl.out()).containsPattern("PRINCIPAL\\s+HOST\\s+OPERATION\\s+PERMISSION\\s+RESOURCE-TYPE\\s+RESOURCE-NAME\\s+PATTERN\\s+STATUS")
                .containsPattern("User:alice\\s+\\*\\s+describe\\s+allow\\s+topic\\s+visible\\s+literal\\s+OK")
                .containsPattern("User:alice\\s+\\*\\s+read\\s+allow\\s+topic\\s+visible\\s+literal\\s+OK");
        assertThat(acls()).hasSize(2).allSatisfy(b -> {
            assertThat(b.entry().principal()).isEqualTo("User:alice");
            assertThat(b.entry().permissionType()).isEqualTo(AclPermissionType.ALLOW);
            assertThat(b.pattern().name()).isEqualTo("visible");
        });
        assertThat(names(topicsAs("alice", "s3cret", "SCRAM-SHA-256"))).containsExactly("visible");

        CliHarness.Result deleted = cli.run("acl", "delete", "--principal", "User:alice", "--topic", "visible");
        assertThat(deleted.exit()).as(deleted.toString()).isZero();
        assertThat(deleted.out()).startsWith("Deleted 2 ACLs:\n");
        assertThat(acls()).isEmpty();
        assertThat(names(topicsAs("alice", "s3cret", "SCRAM-SHA-256"))).isEmpty();

        // one mechanism removed: that one no longer logs in, the other does
        CliHarness.Result partly = cli.run("user", "delete", "alice", "--mechanism", "SCRAM-SHA-512", "-o", "json");
        assertThat(partly.exit()).as(partly.toString()).isZero();
        assertThat(partly.json().get(0).get("mechanisms").get(0).asText()).isEqualTo("SCRAM-SHA-512");
        assertThat(topicsAs("alice", "s3cret", "SCRAM-SHA-512").exit()).isEqualTo(1);
        assertThat(topicsAs("alice", "s3cret", "SCRAM-SHA-256").exit()).isZero();
        CliHarness.Result gone = cli.run("user", "delete", "alice");
        assertThat(gone.exit()).as(gone.toString()).isZero();
        assertThat(gone.out()).isEqualTo("Deleted SCRAM-SHA-256 credentials of user alice.\n");
        assertThat(cli.admin.describeUserScramCredentials().all().get()).doesNotContainKey("alice");
        assertThat(topicsAs("alice", "s3cret", "SCRAM-SHA-256").err()).startsWith("error: authentication failed: ");
    }

    @Test
    void listsUsersWithTheirMechanisms() throws Exception {
        assertThat(cli.run("user", "create", "bob", "-p", "pw1", "--iterations", "8192", "-m", "scram-sha-512").exit()).isZero();
        assertThat(cli.run("user", "create", "carol", "-p", "pw2").exit()).isZero();
        CliHarness.Result text = cli.run("user", "list");
        assertThat(text.exit()).as(text.toString()).isZero();
        assertThat(text.out()).containsPattern("USER\\s+MECHANISMS").containsPattern("bob\\s+SCRAM-SHA-512 \\(8192\\)")
                .containsPattern("carol\\s+SCRAM-SHA-256 \\(4096\\)");
        JsonNode yaml = cli.run("user", "list", "bob", "-o", "yaml").yaml();
        assertThat(yaml).hasSize(1);
        assertThat(yaml.get(0).get("user").asText()).isEqualTo("bob");
        assertThat(yaml.get(0).get("credentials").get(0).get("mechanism").asText()).isEqualTo("SCRAM-SHA-512");
        assertThat(yaml.get(0).get("credentials").get(0).get("iterations").asInt()).isEqualTo(8192);

        CliHarness.Result missing = cli.run("user", "delete", "nobody");
        assertThat(missing.exit()).isEqualTo(1);
        assertThat(missing.err()).isEqualTo("error: no SCRAM user nobody (list them with `varve user list`)\n");
        CliHarness.Result badMech = cli.run("user", "create", "dave", "-p", "x", "-m", "SCRAM-SHA-1");
        assertThat(badMech.exit()).isEqualTo(1);
        assertThat(badMech.err()).contains("unknown mechanism 'SCRAM-SHA-1': use SCRAM-SHA-256 or SCRAM-SHA-512");
        assertThat(cli.run("user", "delete", "bob", "carol").exit()).isZero();
        assertThat(cli.admin.describeUserScramCredentials().all().get()).doesNotContainKeys("bob", "carol");
    }

    @Test
    void createsListsAndDeletesAclsOfEveryResourceType() throws Exception {
        CliHarness.Result created = cli.run("acl", "create", "--principal", "User:etl", "--host", "10.0.0.1", "--operation", "write",
                "--permission", "deny", "--topic", "logs-", "--pattern", "prefixed", "-o", "json");
        assertThat(created.exit()).as(created.toString()).isZero();
        assertThat(created.json().get(0).get("pattern").asText()).isEqualTo("prefixed");
        assertThat(cli.run("acl", "create", "--principal", "User:etl", "--operation", "read", "--group", "etl-group").exit()).isZero();
        assertThat(cli.run("acl", "create", "--principal", "User:etl", "--operation", "idempotent-write", "--cluster").exit()).isZero();
        assertThat(cli.run("acl", "create", "--principal", "User:etl", "--operation", "write,describe", "--transactional-id", "etl-tx").exit()).isZero();

        List<AclBinding> mine = acls().stream().filter(b -> b.entry().principal().equals("User:etl")).toList();
        assertThat(mine).hasSize(5);
        assertThat(mine).anySatisfy(b -> {
            assertThat(b.pattern().resourceType()).isEqualTo(ResourceType.TOPIC);
            assertThat(b.pattern().patternType()).isEqualTo(PatternType.PREFIXED);
            assertThat(b.entry().host()).isEqualTo("10.0.0.1");
            assertThat(b.entry().permissionType()).isEqualTo(AclPermissionType.DENY);
            assertThat(b.entry().operation()).isEqualTo(AclOperation.WRITE);
        });
        assertThat(mine).anySatisfy(b -> {
            assertThat(b.pattern().resourceType()).isEqualTo(ResourceType.CLUSTER);
            assertThat(b.entry().operation()).isEqualTo(AclOperation.IDEMPOTENT_WRITE);
        });

        CliHarness.Result listed = cli.run("acl", "list", "--principal", "User:etl", "-o", "yaml");
        assertThat(listed.exit()).as(listed.toString()).isZero();
        List<String> types = new ArrayList<>();
        listed.yaml().forEach(r -> types.add(r.get("resource-type").asText() + "/" + r.get("operation").asText()));
        assertThat(types).containsExactly("cluster/idempotent-write", "group/read", "topic/write",
                "transactional-id/describe", "transactional-id/write");
        CliHarness.Result text = cli.run("acl", "list", "--topic", "logs-");
        assertThat(text.out()).containsPattern("User:etl\\s+10\\.0\\.0\\.1\\s+write\\s+deny\\s+topic\\s+logs-\\s+prefixed");
        assertThat(text.out().lines()).hasSize(2);
        // "match": the prefixed ACL applies to a topic logs-app
        assertThat(cli.run("acl", "list", "--topic", "logs-app", "--pattern", "match", "-o", "json").json()).hasSize(1);
        assertThat(cli.run("acl", "list", "--topic", "logs-app", "-o", "json").json()).isEmpty();

        CliHarness.Result dry = cli.run("acl", "delete", "--principal", "User:etl", "--transactional-id", "etl-tx", "--dry-run", "-o", "json");
        assertThat(dry.json().get("dry-run").asBoolean()).isTrue();
        assertThat(dry.json().get("deleted")).hasSize(2);
        assertThat(acls().stream().filter(b -> b.entry().principal().equals("User:etl"))).hasSize(5);

        CliHarness.Result prefixedOnly = cli.run("acl", "delete", "--topic", "logs-", "--pattern", "literal");
        assertThat(prefixedOnly.out()).isEqualTo("No ACLs matched: nothing deleted.\n");
        CliHarness.Result all = cli.run("acl", "delete", "--principal", "User:etl", "--pattern", "any", "-o", "json");
        assertThat(all.exit()).as(all.toString()).isZero();
        assertThat(all.json().get("deleted")).hasSize(5);
        assertThat(acls().stream().filter(b -> b.entry().principal().equals("User:etl"))).isEmpty();
        assertThat(cli.run("acl", "list", "--principal", "User:etl").out()).isEqualTo("No ACLs.\n");
    }

    @Test
    void badAclInputIsExplained() {
        CliHarness.Result noPrincipal = cli.run("acl", "create", "--operation", "read", "--topic", "t");
        assertThat(noPrincipal.exit()).isEqualTo(1);
        assertThat(noPrincipal.err()).contains("--principal");
        CliHarness.Result badOp = cli.run("acl", "create", "--principal", "x", "--operation", "fly", "--topic", "t");
        assertThat(badOp.exit()).isEqualTo(1);
        assertThat(badOp.err()).contains("unknown operation 'fly'");
        CliHarness.Result noResource = cli.run("acl", "create", "--principal", "x", "--operation", "read");
        assertThat(noResource.err()).contains("--topic, --group, --transactional-id or --cluster");
        CliHarness.Result badPattern = cli.run("acl", "create", "--principal", "x", "--operation", "read", "--topic", "t", "--pattern", "match");
        assertThat(badPattern.err()).contains("use literal or prefixed");
        CliHarness.Result deleteAll = cli.run("acl", "delete");
        assertThat(deleteAll.exit()).isEqualTo(1);
        assertThat(deleteAll.err()).contains("say which ACLs to delete");
    }

    @Test
    void withoutAnAuthorizerTheAclCommandsSaySo() throws Exception {
        Map<String, String> env = ClientOptions.environment;
        try (CliHarness plain = new CliHarness()) {
            CliHarness.Result create = plain.run("acl", "create", "--principal", "x", "--operation", "read", "--topic", "t");
            assertThat(create.exit()).isEqualTo(1);
            assertThat(create.err()).startsWith("error: ").contains("the cluster has no authorizer: set authorizer.class.name")
                    .hasLineCount(1);
            CliHarness.Result list = plain.run("acl", "list");
            assertThat(list.exit()).isEqualTo(1);
            assertThat(list.err()).contains("the cluster has no authorizer");
        } finally {
            ClientOptions.environment = env;
        }
    }
}
