package dev.varve.cli.client;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateAclsResult;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

/** {@code varve acl ...}: create, list and delete ACLs (the cluster needs an authorizer). */
@Command(name = "acl", mixinStandardHelpOptions = true,
        description = {"Create, list and delete access control lists.",
                "The brokers need an authorizer (authorizer.class.name); principals are TYPE:NAME, e.g. User:alice."},
        subcommands = {AclCommand.Create.class, AclCommand.ListAcls.class, AclCommand.Delete.class})
public final class AclCommand {

    static final List<String> HEADERS = List.of("principal", "host", "operation", "permission", "resource-type", "resource-name", "pattern");

    /** The options that name ACLs: who, from where, what, on which resources. */
    abstract static class Base extends AdminCommand {
        @Option(names = "--principal", split = ",", paramLabel = "TYPE:NAME", description = "Principal(s), e.g. User:alice (\"User:\" is assumed without a type).")
        List<String> principals = new ArrayList<>();

        @Option(names = "--host", split = ",", paramLabel = "HOST", description = "Host(s) the principal connects from (* any).")
        List<String> hosts = new ArrayList<>();

        @Option(names = "--operation", split = ",", paramLabel = "OP",
                description = "Operation(s): all, read, write, create, delete, alter, describe, cluster-action, describe-configs,"
                        + " alter-configs, idempotent-write, create-tokens, describe-tokens.")
        List<String> operations = new ArrayList<>();

        @Option(names = "--permission", paramLabel = "allow|deny", description = "Allow or deny.")
        String permission;

        @Option(names = "--topic", split = ",", paramLabel = "NAME", description = "Topic resource(s).")
        List<String> topics = new ArrayList<>();

        @Option(names = "--group", split = ",", paramLabel = "NAME", description = "Consumer group resource(s).")
        List<String> groups = new ArrayList<>();

        @Option(names = "--transactional-id", split = ",", paramLabel = "ID", description = "Transactional id resource(s).")
        List<String> transactionalIds = new ArrayList<>();

        @Option(names = "--cluster", description = "The cluster resource.")
        boolean cluster;


        /** The resources named, as (type, name) pairs. */
        List<Map.Entry<ResourceType, String>> resources() {
            List<Map.Entry<ResourceType, String>> out = new ArrayList<>();
            topics.forEach(t -> out.add(Map.entry(ResourceType.TOPIC, t)));
            groups.forEach(g -> out.add(Map.entry(ResourceType.GROUP, g)));
            transactionalIds.forEach(t -> out.add(Map.entry(ResourceType.TRANSACTIONAL_ID, t)));
            if (cluster) {
                out.add(Map.entry(ResourceType.CLUSTER, "kafka-cluster"));
            }
            return out;
        }

        List<String> principals() {
            List<String> out = new ArrayList<>();
            for (String p : principals) {
                String v = p.trim();
                out.add(v.contains(":") ? v : "User:" + v);
            }
            return out;
        }

        List<AclOperation> operations(boolean forCreate) {
            List<AclOperation> out = new ArrayList<>();
            for (String o : operations) {
                AclOperation op = AclOperation.fromString(o.trim().replace('-', '_'));
                if (op == AclOperation.UNKNOWN || (forCreate && op == AclOperation.ANY)) {
                    throw new CliErrors.Failure("unknown operation '" + o + "': use all, read, write, create, delete, alter, describe,"
                            + " cluster-action, describe-configs, alter-configs, idempotent-write, create-tokens or describe-tokens");
                }
                out.add(op);
            }
            return out;
        }

        AclPermissionType permission(AclPermissionType none) {
            if (permission == null) {
                return none;
            }
            return switch (permission.toLowerCase(Locale.ROOT)) {
                case "allow" -> AclPermissionType.ALLOW;
                case "deny" -> AclPermissionType.DENY;
                default -> throw new CliErrors.Failure("--permission must be allow or deny (not '" + permission + "')");
            };
        }

        /** Filters matching what the options name (every combination); what is not given matches anything. */
        List<AclBindingFilter> filters(PatternType pattern) {
            List<ResourcePatternFilter> rs = new ArrayList<>();
            for (Map.Entry<ResourceType, String> r : resources()) {
                rs.add(new ResourcePatternFilter(r.getKey(), r.getValue(), pattern));
            }
            if (rs.isEmpty()) {
                rs.add(new ResourcePatternFilter(ResourceType.ANY, null, pattern));
            }
            List<String> ps = principals().isEmpty() ? java.util.Collections.singletonList(null) : principals();
            List<String> hs = hosts.isEmpty() ? java.util.Collections.singletonList(null) : hosts;
            List<AclOperation> os = operations(false).isEmpty() ? List.of(AclOperation.ANY) : operations(false);
            AclPermissionType perm = permission(AclPermissionType.ANY);
            List<AclBindingFilter> out = new ArrayList<>();
            for (ResourcePatternFilter r : rs) {
                for (String p : ps) {
                    for (String h : hs) {
                        for (AclOperation o : os) {
                            out.add(new AclBindingFilter(r, new AccessControlEntryFilter(p, h, o, perm)));
                        }
                    }
                }
            }
            return out;
        }
    }

    static PatternType patternType(String value, boolean forCreate) {
        PatternType t = PatternType.fromString(value.trim().toUpperCase(Locale.ROOT));
        if (t == PatternType.UNKNOWN || (forCreate && !t.isSpecific())) {
            throw new CliErrors.Failure("unknown pattern type '" + value + "': use " + (forCreate ? "literal or prefixed"
                    : "literal, prefixed, any or match"));
        }
        return t;
    }

    static Map<String, Object> row(AclBinding b) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("principal", b.entry().principal());
        row.put("host", b.entry().host());
        row.put("operation", name(b.entry().operation()));
        row.put("permission", name(b.entry().permissionType()));
        row.put("resource-type", name(b.pattern().resourceType()));
        row.put("resource-name", b.pattern().name());
        row.put("pattern", name(b.pattern().patternType()));
        return row;
    }

    static String name(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    static final Comparator<Map<String, Object>> ORDER = Comparator
            .comparing((Map<String, Object> r) -> (String) r.get("resource-type"))
            .thenComparing(r -> (String) r.get("resource-name"))
            .thenComparing(r -> (String) r.get("pattern"))
            .thenComparing(r -> (String) r.get("principal"))
            .thenComparing(r -> (String) r.get("host"))
            .thenComparing(r -> (String) r.get("operation"))
            .thenComparing(r -> (String) r.get("permission"));

    @Command(name = "create", mixinStandardHelpOptions = true,
            description = {"Create ACLs: each principal x host x operation on each resource.",
                    "e.g. varve acl create --principal User:alice --operation read,describe --topic orders --group app"})
    static final class Create extends Base {
        @Option(names = "--pattern", paramLabel = "literal|prefixed", defaultValue = "literal",
                description = "literal (default): the resource names exactly; prefixed: every resource whose name starts so.")
        String pattern;

        @Override
        protected int run(Admin admin) throws Exception {
            PatternType type = patternType(pattern, true);
            if (principals.isEmpty()) {
                throw new CliErrors.Failure("say whose ACL it is with --principal (e.g. User:alice)");
            }
            if (operations.isEmpty()) {
                throw new CliErrors.Failure("say what it allows or denies with --operation (e.g. read,describe)");
            }
            if (resources().isEmpty()) {
                throw new CliErrors.Failure("say what it applies to with --topic, --group, --transactional-id or --cluster");
            }
            AclPermissionType perm = permission(AclPermissionType.ALLOW);
            List<String> hs = hosts.isEmpty() ? List.of("*") : hosts;
            Set<AclBinding> bindings = new LinkedHashSet<>();
            for (Map.Entry<ResourceType, String> r : resources()) {
                for (String p : principals()) {
                    for (String h : hs) {
                        for (AclOperation o : operations(true)) {
                            bindings.add(new AclBinding(new ResourcePattern(r.getKey(), r.getValue(),
                                    r.getKey() == ResourceType.CLUSTER ? PatternType.LITERAL : type), new AccessControlEntry(p, h, o, perm)));
                        }
                    }
                }
            }
            CreateAclsResult result = admin.createAcls(bindings);
            List<Map<String, Object>> rows = new ArrayList<>();
            int failed = 0;
            Throwable first = null;
            for (AclBinding b : bindings) {
                Map<String, Object> row = row(b);
                try {
                    result.values().get(b).get();
                    row.put("status", "OK");
                } catch (ExecutionException e) {
                    failed++;
                    Throwable cause = CliErrors.unwrap(e);
                    first = first == null ? cause : first;
                    row.put("status", CliErrors.explain(cause, null));
                }
                rows.add(row);
            }
            if (failed == bindings.size() && first instanceof org.apache.kafka.common.errors.SecurityDisabledException) {
                throw new CliErrors.Failure(CliErrors.explain(first, null)); // the same for every row: say it once
            }
            List<String> headers = new ArrayList<>(HEADERS);
            headers.add("status");
            client.output.emit(out(), rows, o -> Output.table(o, headers, rows));
            return failed == 0 ? 0 : 1;
        }
    }

    @Command(name = "list", aliases = "ls", mixinStandardHelpOptions = true,
            description = "List ACLs; the options narrow the list (all of them when none is given).")
    static final class ListAcls extends Base {
        @Option(names = "--pattern", paramLabel = "TYPE", defaultValue = "any",
                description = "any (default): the names given, literally or as prefixes; match: also the ACLs that apply to"
                        + " them (wildcard, prefixes); literal; prefixed.")
        String pattern;

        @Override
        protected int run(Admin admin) throws Exception {
            List<Map<String, Object>> rows = describe(admin, filters(patternType(pattern, false)));
            client.output.emit(out(), rows, o -> {
                if (rows.isEmpty()) {
                    o.println("No ACLs.");
                } else {
                    Output.table(o, HEADERS, rows);
                }
            });
            return 0;
        }
    }

    static List<Map<String, Object>> describe(Admin admin, List<AclBindingFilter> filters) throws Exception {
        Set<AclBinding> found = new LinkedHashSet<>();
        for (AclBindingFilter f : filters) {
            found.addAll(admin.describeAcls(f).values().get());
        }
        List<Map<String, Object>> rows = new ArrayList<>();
        for (AclBinding b : found) {
            rows.add(row(b));
        }
        rows.sort(ORDER);
        return rows;
    }

    @Command(name = "delete", mixinStandardHelpOptions = true,
            description = {"Delete the ACLs the options match (what is not given matches anything; at least a principal or a",
                    "resource is needed). --dry-run shows them without deleting."})
    static final class Delete extends Base {
        @Option(names = "--pattern", paramLabel = "TYPE", defaultValue = "literal",
                description = "literal (default), prefixed, any (both) or match (also wildcard and prefix ACLs that apply).")
        String pattern;

        @Option(names = "--dry-run", description = "Show what would be deleted; delete nothing.")
        boolean dryRun;

        @Override
        protected int run(Admin admin) throws Exception {
            if (principals.isEmpty() && resources().isEmpty()) {
                throw new CliErrors.Failure("say which ACLs to delete with --principal and/or a resource (--topic, --group,"
                        + " --transactional-id, --cluster); `varve acl list` shows them");
            }
            List<AclBindingFilter> filters = filters(patternType(pattern, false));
            List<Map<String, Object>> rows;
            if (dryRun) {
                rows = describe(admin, filters);
            } else {
                Set<AclBinding> deleted = new LinkedHashSet<>();
                for (AclBindingFilter f : filters) {
                    deleted.addAll(admin.deleteAcls(List.of(f)).all().get());
                }
                rows = new ArrayList<>();
                for (AclBinding b : deleted) {
                    rows.add(row(b));
                }
                rows.sort(ORDER);
            }
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("dry-run", dryRun);
            result.put("deleted", rows);
            client.output.emit(out(), result, o -> {
                if (rows.isEmpty()) {
                    o.println("No ACLs matched: nothing " + (dryRun ? "would be " : "") + "deleted.");
                } else {
                    o.println((dryRun ? "Would delete " : "Deleted ") + rows.size() + " ACL" + (rows.size() == 1 ? "" : "s") + ":");
                    Output.table(o, HEADERS, rows);
                }
            });
            return 0;
        }
    }
}
