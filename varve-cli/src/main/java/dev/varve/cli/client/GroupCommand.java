package dev.varve.cli.client;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.PrintWriter;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

/** {@code varve group ...}: list, describe (with lag), reset offsets of and delete consumer groups. */
@Command(name = "group", description = "List and describe consumer groups (with lag), reset their offsets, delete them.",
        mixinStandardHelpOptions = true,
        subcommands = {GroupCommand.ListGroups.class, GroupCommand.Describe.class, GroupCommand.ResetOffsets.class,
                GroupCommand.Delete.class, GroupCommand.DeleteOffsets.class})
public final class GroupCommand {

    /** Orders partitions by topic, then partition number. */
    static final Comparator<TopicPartition> BY_TOPIC_PARTITION =
            Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    abstract static class Base extends AdminCommand {
        PrintWriter err() {
            return spec.commandLine().getErr();
        }

    }

    // ---------------------------------------------------------------- shared helpers

    /** A group's name in lower case as Kafka spells its type ("classic", "consumer"). */
    static String lower(Object o) {
        return o == null ? null : o.toString().toLowerCase(Locale.ROOT);
    }

    /** Describes one group, or null when the cluster does not know it (no members and no offsets). */
    static ConsumerGroupDescription describeOrNull(Admin admin, String group) throws Exception {
        try {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
            return d.groupState() == GroupState.DEAD ? null : d;
        } catch (ExecutionException e) {
            if (CliErrors.unwrap(e) instanceof GroupIdNotFoundException) {
                return null;
            }
            throw e;
        }
    }

    /** The group's committed offsets (partitions without one left out). */
    static Map<TopicPartition, Long> committed(Admin admin, String group) throws Exception {
        Map<TopicPartition, Long> result = new HashMap<>();
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        offsets.forEach((tp, om) -> {
            if (om != null) {
                result.put(tp, om.offset());
            }
        });
        return result;
    }

    /** {@code spec} offsets of {@code partitions}; a partition the cluster cannot answer for (topic gone) is left out. */
    static Map<TopicPartition, Long> offsets(Admin admin, Collection<TopicPartition> partitions, OffsetSpec spec) throws Exception {
        Map<TopicPartition, Long> result = new HashMap<>();
        if (partitions.isEmpty()) {
            return result;
        }
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        partitions.forEach(tp -> request.put(tp, spec));
        ListOffsetsResult r = admin.listOffsets(request);
        for (TopicPartition tp : partitions) {
            try {
                result.put(tp, r.partitionResult(tp).get().offset());
            } catch (ExecutionException e) {
                // unknown topic or partition: no offset to show
            }
        }
        return result;
    }

    /**
     * The partitions {@code specs} name: {@code TOPIC} is every partition of the topic, {@code TOPIC:P,P} those
     * partitions (checked against the topic).
     */
    static List<TopicPartition> resolvePartitions(Admin admin, List<String> specs) throws Exception {
        Map<String, List<Integer>> wanted = new LinkedHashMap<>();
        for (String spec : specs) {
            int colon = spec.lastIndexOf(':');
            String topic = colon < 0 ? spec : spec.substring(0, colon);
            if (topic.isEmpty()) {
                throw new CliErrors.Failure("bad --topic '" + spec + "': use TOPIC or TOPIC:PARTITION,PARTITION,...");
            }
            List<Integer> parts = wanted.computeIfAbsent(topic, t -> new ArrayList<>());
            if (colon >= 0) {
                for (String p : spec.substring(colon + 1).split(",")) {
                    try {
                        parts.add(Integer.parseInt(p.trim()));
                    } catch (NumberFormatException e) {
                        throw new CliErrors.Failure("bad partition '" + p + "' in --topic '" + spec + "': use TOPIC:0,1,2");
                    }
                }
            } else {
                parts.add(-1); // all of them
            }
        }
        Map<String, TopicDescription> described = admin.describeTopics(wanted.keySet()).allTopicNames().get();
        Set<TopicPartition> result = new TreeSet<>(BY_TOPIC_PARTITION);
        wanted.forEach((topic, parts) -> {
            List<Integer> existing = described.get(topic).partitions().stream().map(TopicPartitionInfo::partition).toList();
            for (int p : parts) {
                if (p == -1) {
                    existing.forEach(e -> result.add(new TopicPartition(topic, e)));
                } else if (existing.contains(p)) {
                    result.add(new TopicPartition(topic, p));
                } else {
                    throw new CliErrors.Failure("topic " + topic + " has no partition " + p + " (it has " + existing.size()
                            + ": 0-" + (existing.size() - 1) + ")");
                }
            }
        });
        return new ArrayList<>(result);
    }

    static Map<String, Object> partitionRow(TopicPartition tp) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("topic", tp.topic());
        row.put("partition", tp.partition());
        return row;
    }

    // ---------------------------------------------------------------- list

    @Command(name = "list", aliases = "ls", mixinStandardHelpOptions = true,
            description = "List groups with their type, protocol, state and member count.")
    static final class ListGroups extends Base {
        @Option(names = {"-s", "--state"}, paramLabel = "STATE", split = ",",
                description = "Only groups in these states (repeatable or comma-separated): Empty, Stable, PreparingRebalance, "
                        + "CompletingRebalance, Dead, ... (any case).")
        List<String> states = new ArrayList<>();

        @Override
        protected int run(Admin admin) throws Exception {
            Set<GroupState> filter = new LinkedHashSet<>();
            for (String s : states) {
                GroupState st = GroupState.parse(s.replace("-", "").replace("_", ""));
                if (st == GroupState.UNKNOWN) {
                    throw new CliErrors.Failure("unknown group state '" + s + "': use one of " + Arrays.stream(GroupState.values())
                            .filter(g -> g != GroupState.UNKNOWN).map(GroupState::toString).collect(Collectors.joining(", ")));
                }
                filter.add(st);
            }
            List<GroupListing> listings = new ArrayList<>(admin.listGroups().all().get());
            listings.sort(Comparator.comparing(GroupListing::groupId));
            List<String> consumerGroups = listings.stream()
                    .filter(g -> "consumer".equals(g.protocol()) || g.protocol() == null || g.protocol().isEmpty())
                    .map(GroupListing::groupId).toList();
            Map<String, ConsumerGroupDescription> described = new HashMap<>();
            if (!consumerGroups.isEmpty()) {
                admin.describeConsumerGroups(consumerGroups).describedGroups().forEach((id, f) -> {
                    try {
                        described.put(id, f.get());
                    } catch (Exception e) {
                        // gone since the listing, or not a consumer group: its member count stays unknown
                    }
                });
            }
            List<Map<String, Object>> rows = new ArrayList<>();
            for (GroupListing g : listings) {
                ConsumerGroupDescription d = described.get(g.groupId());
                GroupState state = d != null ? d.groupState() : g.groupState().orElse(GroupState.UNKNOWN);
                if (!filter.isEmpty() && !filter.contains(state)) {
                    continue;
                }
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("group", g.groupId());
                row.put("type", lower(g.type().orElse(d != null ? d.type() : null)));
                row.put("protocol", g.protocol() == null || g.protocol().isEmpty() ? null : g.protocol());
                row.put("state", state.toString());
                row.put("members", d == null ? null : d.members().size());
                rows.add(row);
            }
            client.output.emit(out(), rows, o -> Output.table(o, List.of("group", "type", "protocol", "state", "members"), rows));
            return 0;
        }
    }

    // ---------------------------------------------------------------- describe

    @Command(name = "describe", mixinStandardHelpOptions = true,
            description = {"Show groups: state, coordinator, members and what they are assigned, and per partition the "
                    + "committed (current) offset, the log end offset and the lag between them.",
                    "Lag is log-end-offset - current-offset; a partition without a committed offset has no lag (\"-\")."})
    static final class Describe extends Base {
        @Parameters(arity = "1..*", paramLabel = "GROUP")
        List<String> groups;

        @Override
        protected int run(Admin admin) throws Exception {
            List<Map<String, Object>> docs = new ArrayList<>();
            List<String> missing = new ArrayList<>();
            for (String group : new LinkedHashSet<>(groups)) {
                ConsumerGroupDescription d = describeOrNull(admin, group);
                Map<TopicPartition, Long> committed = committed(admin, group);
                if (d == null && committed.isEmpty()) {
                    missing.add(group);
                    continue;
                }
                docs.add(document(admin, group, d, committed));
            }
            if (docs.isEmpty()) {
                throw new CliErrors.Failure(notFound(missing));
            }
            Object data = docs.size() == 1 ? docs.get(0) : docs;
            client.output.emit(out(), data, o -> {
                boolean first = true;
                for (Map<String, Object> doc : docs) {
                    if (!first) {
                        o.println();
                    }
                    first = false;
                    text(o, doc);
                }
            });
            if (!missing.isEmpty()) {
                err().println("error: " + notFound(missing));
                err().flush();
                return 1;
            }
            return 0;
        }

        private static String notFound(List<String> missing) {
            return (missing.size() == 1 ? "group " + missing.get(0) + " does not exist"
                    : "groups " + String.join(", ", missing) + " do not exist")
                    + " (no members and no committed offsets; list groups with `varve group list`)";
        }

        private static Map<String, Object> document(Admin admin, String group, ConsumerGroupDescription d,
                                                    Map<TopicPartition, Long> committed) throws Exception {
            Map<TopicPartition, MemberDescription> owner = new HashMap<>();
            List<Map<String, Object>> members = new ArrayList<>();
            if (d != null) {
                List<MemberDescription> sorted = new ArrayList<>(d.members());
                sorted.sort(Comparator.comparing(MemberDescription::consumerId));
                for (MemberDescription m : sorted) {
                    Map<String, List<Integer>> assigned = new TreeMap<>();
                    m.assignment().topicPartitions().stream().sorted(BY_TOPIC_PARTITION).forEach(tp -> {
                        owner.put(tp, m);
                        assigned.computeIfAbsent(tp.topic(), t -> new ArrayList<>()).add(tp.partition());
                    });
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("member-id", m.consumerId());
                    row.put("client-id", m.clientId());
                    row.put("host", m.host());
                    row.put("instance-id", m.groupInstanceId().orElse(null));
                    row.put("assigned", assigned);
                    members.add(row);
                }
            }
            Set<TopicPartition> partitions = new TreeSet<>(BY_TOPIC_PARTITION);
            partitions.addAll(committed.keySet());
            partitions.addAll(owner.keySet());
            Map<TopicPartition, Long> end = offsets(admin, partitions, OffsetSpec.latest());
            long totalLag = 0;
            List<Map<String, Object>> rows = new ArrayList<>();
            for (TopicPartition tp : partitions) {
                Map<String, Object> row = partitionRow(tp);
                Long current = committed.get(tp);
                Long logEnd = end.get(tp);
                Long lag = current == null || logEnd == null ? null : Math.max(0, logEnd - current);
                if (lag != null) {
                    totalLag += lag;
                }
                MemberDescription m = owner.get(tp);
                row.put("current-offset", current);
                row.put("log-end-offset", logEnd);
                row.put("lag", lag);
                row.put("member-id", m == null ? null : m.consumerId());
                row.put("client-id", m == null ? null : m.clientId());
                row.put("host", m == null ? null : m.host());
                rows.add(row);
            }
            Map<String, Object> doc = new LinkedHashMap<>();
            doc.put("group", group);
            Node coordinator = d == null ? null : d.coordinator();
            if (coordinator == null || coordinator.isEmpty()) {
                doc.put("coordinator", null);
            } else {
                Map<String, Object> c = new LinkedHashMap<>();
                c.put("id", coordinator.id());
                c.put("host", coordinator.host());
                c.put("port", coordinator.port());
                doc.put("coordinator", c);
            }
            doc.put("state", d == null ? GroupState.EMPTY.toString() : d.groupState().toString());
            doc.put("type", d == null ? null : lower(d.type()));
            doc.put("assignor", d == null || d.partitionAssignor() == null || d.partitionAssignor().isEmpty() ? null : d.partitionAssignor());
            doc.put("member-count", members.size());
            doc.put("total-lag", totalLag);
            doc.put("members", members);
            doc.put("partitions", rows);
            return doc;
        }

        @SuppressWarnings("unchecked")
        private static void text(PrintWriter o, Map<String, Object> doc) {
            Map<String, Object> summary = new LinkedHashMap<>(doc);
            summary.remove("members");
            summary.remove("partitions");
            Map<String, Object> c = (Map<String, Object>) doc.get("coordinator");
            summary.put("coordinator", c == null ? null : c.get("id") + " (" + c.get("host") + ":" + c.get("port") + ")");
            Output.fields(o, summary);
            List<Map<String, Object>> members = (List<Map<String, Object>>) doc.get("members");
            if (!members.isEmpty()) {
                o.println();
                o.println("MEMBERS");
                o.println("=======");
                List<Map<String, Object>> rows = new ArrayList<>();
                for (Map<String, Object> m : members) {
                    Map<String, Object> row = new LinkedHashMap<>(m);
                    Map<String, List<Integer>> assigned = (Map<String, List<Integer>>) m.get("assigned");
                    row.put("assigned", assigned.entrySet().stream()
                            .map(e -> e.getKey() + ":" + Output.cell(e.getValue())).collect(Collectors.joining(" ")));
                    rows.add(row);
                }
                Output.table(o, List.of("member-id", "client-id", "host", "instance-id", "assigned"), rows);
            }
            o.println();
            o.println("PARTITIONS");
            o.println("==========");
            Output.table(o, List.of("topic", "partition", "current-offset", "log-end-offset", "lag", "member-id", "client-id", "host"),
                    (List<Map<String, Object>>) doc.get("partitions"));
        }
    }

    // ---------------------------------------------------------------- reset-offsets

    static final class Scope {
        @Option(names = {"-t", "--topic"}, paramLabel = "TOPIC[:P,P...]", required = true,
                description = "A topic (every partition) or some of its partitions; repeatable.")
        List<String> topics;

        @Option(names = "--all-topics", required = true, description = "Every partition the group has a committed offset for.")
        boolean allTopics;
    }

    static final class Target {
        @Option(names = "--to-earliest", required = true, description = "The log start offset (re-read everything kept).")
        boolean earliest;

        @Option(names = "--to-latest", required = true, description = "The log end offset (skip everything so far).")
        boolean latest;

        @Option(names = "--to-offset", paramLabel = "N", required = true, description = "Offset N (kept within the log).")
        Long offset;

        @Option(names = "--shift-by", paramLabel = "N", required = true,
                description = "The committed offset plus N (negative: back); needs a committed offset.")
        Long shiftBy;

        @Option(names = "--to-datetime", paramLabel = "ISO-8601", required = true,
                description = "The first record at or after this time: 2024-05-01T12:00:00Z, 2024-05-01T14:00:00+02:00, "
                        + "2024-05-01T12:00:00 or 2024-05-01 (local time zone).")
        String datetime;

        @Option(names = "--to-timestamp", paramLabel = "MS", required = true,
                description = "The first record at or after this time in milliseconds since the epoch.")
        Long timestamp;
    }

    @Command(name = "reset-offsets", mixinStandardHelpOptions = true,
            description = {"Move a group's committed offsets. Without --execute this is a dry run: it prints the plan and "
                    + "changes nothing.",
                    "The group must have no active members: stop its consumers first (a running consumer would overwrite the offsets).",
                    "Offsets past either end of the log are moved to that end."})
    static final class ResetOffsets extends Base {
        @Parameters(index = "0", paramLabel = "GROUP")
        String group;

        @ArgGroup(exclusive = true, multiplicity = "1")
        Scope scope;

        @ArgGroup(exclusive = true, multiplicity = "1")
        Target target;

        @Option(names = "--execute", description = "Apply the new offsets (without it: a dry run that only prints them).")
        boolean execute;

        @Override
        protected int run(Admin admin) throws Exception {
            Long at = target.timestamp;
            if (target.datetime != null) {
                at = parseDatetime(target.datetime);
            }
            ConsumerGroupDescription d = describeOrNull(admin, group);
            if (d != null && !d.members().isEmpty()) {
                throw new CliErrors.Failure("group " + group + " has " + d.members().size() + " active member(s) (state "
                        + d.groupState() + "): stop its consumers first, then reset; a running consumer would keep"
                        + " committing its own offsets (see them with `varve group describe " + group + "`)");
            }
            Map<TopicPartition, Long> committed = committed(admin, group);
            List<TopicPartition> partitions;
            if (scope.allTopics) {
                partitions = new ArrayList<>(committed.keySet());
                partitions.sort(BY_TOPIC_PARTITION);
                if (partitions.isEmpty()) {
                    throw new CliErrors.Failure("group " + group + " has no committed offsets, so --all-topics names no partition:"
                            + " name them with --topic TOPIC");
                }
            } else {
                partitions = resolvePartitions(admin, scope.topics);
            }
            Map<TopicPartition, Long> earliest = offsets(admin, partitions, OffsetSpec.earliest());
            Map<TopicPartition, Long> latest = offsets(admin, partitions, OffsetSpec.latest());
            Map<TopicPartition, Long> byTime = at == null ? Map.of() : offsets(admin, partitions, OffsetSpec.forTimestamp(at));
            Map<TopicPartition, Long> plan = new LinkedHashMap<>();
            for (TopicPartition tp : partitions) {
                Long low = earliest.get(tp);
                Long high = latest.get(tp);
                if (low == null || high == null) {
                    throw new CliErrors.Failure("cannot read the offsets of " + tp + ": does the topic still exist? (`varve topic list`)");
                }
                long wanted;
                if (target.earliest) {
                    wanted = low;
                } else if (target.latest) {
                    wanted = high;
                } else if (target.offset != null) {
                    wanted = target.offset;
                } else if (target.shiftBy != null) {
                    Long current = committed.get(tp);
                    if (current == null) {
                        throw new CliErrors.Failure("cannot shift " + tp + ": group " + group + " has no committed offset there"
                                + " (use --to-earliest, --to-latest or --to-offset for it)");
                    }
                    wanted = current + target.shiftBy;
                } else {
                    Long found = byTime.get(tp);
                    wanted = found == null || found < 0 ? high : found; // no record that late: the end
                }
                plan.put(tp, Math.max(low, Math.min(high, wanted)));
            }
            if (execute) {
                Map<TopicPartition, OffsetAndMetadata> request = new LinkedHashMap<>();
                plan.forEach((tp, o) -> request.put(tp, new OffsetAndMetadata(o)));
                admin.alterConsumerGroupOffsets(group, request).all().get();
                Map<TopicPartition, OffsetAndMetadata> now = admin.listConsumerGroupOffsets(
                        Map.of(group, new ListConsumerGroupOffsetsSpec().topicPartitions(plan.keySet())))
                        .partitionsToOffsetAndMetadata(group).get();
                for (Map.Entry<TopicPartition, Long> e : plan.entrySet()) {
                    OffsetAndMetadata got = now.get(e.getKey());
                    if (got == null || got.offset() != e.getValue()) {
                        throw new CliErrors.Failure("the cluster accepted the reset but " + e.getKey() + " reads back as "
                                + (got == null ? "no offset" : got.offset()) + ", not " + e.getValue()
                                + ": did a consumer of the group start meanwhile? (`varve group describe " + group + "`)");
                    }
                }
            }
            List<Map<String, Object>> rows = new ArrayList<>();
            plan.forEach((tp, o) -> {
                Map<String, Object> row = partitionRow(tp);
                row.put("current-offset", committed.get(tp));
                row.put("new-offset", o);
                rows.add(row);
            });
            Map<String, Object> doc = new LinkedHashMap<>();
            doc.put("group", group);
            doc.put("executed", execute);
            doc.put("partitions", rows);
            client.output.emit(out(), doc, o -> {
                Output.table(o, List.of("topic", "partition", "current-offset", "new-offset"), rows);
                o.println();
                o.println(execute ? "Offsets of group " + group + " reset (" + rows.size() + " partition(s))."
                        : "Dry run: nothing changed. Add --execute to apply these offsets.");
            });
            return 0;
        }

        static long parseDatetime(String s) {
            try {
                return OffsetDateTime.parse(s).toInstant().toEpochMilli();
            } catch (DateTimeParseException e) {
                // no offset: try the local forms below
            }
            try {
                return Instant.parse(s).toEpochMilli();
            } catch (DateTimeParseException e) {
                // ditto
            }
            try {
                return LocalDateTime.parse(s).atZone(ZoneId.systemDefault()).toInstant().toEpochMilli();
            } catch (DateTimeParseException e) {
                // ditto
            }
            try {
                return LocalDate.parse(s).atStartOfDay(ZoneId.systemDefault()).toInstant().toEpochMilli();
            } catch (DateTimeParseException e) {
                throw new CliErrors.Failure("bad --to-datetime '" + s + "': use ISO-8601, e.g. 2024-05-01T12:00:00Z,"
                        + " 2024-05-01T14:00:00+02:00 or 2024-05-01T12:00:00 (local time)");
            }
        }
    }

    // ---------------------------------------------------------------- delete

    @Command(name = "delete", mixinStandardHelpOptions = true,
            description = "Delete groups and their committed offsets. A group with active members cannot be deleted.")
    static final class Delete extends Base {
        @Parameters(arity = "1..*", paramLabel = "GROUP")
        List<String> groups;

        @Override
        protected int run(Admin admin) throws Exception {
            List<String> unique = new ArrayList<>(new LinkedHashSet<>(groups));
            var result = admin.deleteConsumerGroups(unique).deletedGroups();
            StatusRows rows = new StatusRows();
            for (String g : unique) {
                rows.add(StatusRows.row("group", g), result.get(g));
            }
            return rows.emit(client.output, out(), List.of("group", "status"));
        }
    }

    @Command(name = "delete-offsets", mixinStandardHelpOptions = true,
            description = "Delete a group's committed offsets for some topics or partitions (not while its members consume them).")
    static final class DeleteOffsets extends Base {
        @Parameters(index = "0", paramLabel = "GROUP")
        String group;

        @Option(names = {"-t", "--topic"}, paramLabel = "TOPIC[:P,P...]", required = true,
                description = "A topic (every partition) or some of its partitions; repeatable.")
        List<String> topics;

        @Override
        protected int run(Admin admin) throws Exception {
            List<TopicPartition> partitions = resolvePartitions(admin, topics);
            var result = admin.deleteConsumerGroupOffsets(group, new LinkedHashSet<>(partitions));
            List<Map<String, Object>> rows = new ArrayList<>();
            int failed = 0;
            for (TopicPartition tp : partitions) {
                Map<String, Object> row = partitionRow(tp);
                try {
                    result.partitionResult(tp).get();
                    row.put("status", "OK");
                } catch (ExecutionException e) {
                    Throwable cause = CliErrors.unwrap(e);
                    if (cause instanceof GroupIdNotFoundException) {
                        throw e; // the whole group: one error line
                    }
                    failed++;
                    row.put("status", CliErrors.explain(cause, null));
                }
                rows.add(row);
            }
            client.output.emit(out(), rows, o -> Output.table(o, List.of("topic", "partition", "status"), rows));
            return failed == 0 ? 0 : 1;
        }
    }
}
