package dev.varve.cli.client;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.EligibleLeadersNotAvailableException;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.apache.kafka.common.errors.PreferredLeaderNotAvailableException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;

/** {@code varve partition ...}: move leadership and replicas of partitions. */
@Command(name = "partition", mixinStandardHelpOptions = true,
        description = "Move partitions' leadership (leader election) and replicas (reassignment).",
        subcommands = {PartitionCommand.MoveLeader.class, PartitionCommand.Reassign.class, PartitionCommand.Reassignments.class})
public final class PartitionCommand {

    abstract static class Base extends AdminCommand {
    }

    static Map<String, TopicDescription> describe(Admin admin, Set<String> topics) throws Exception {
        return admin.describeTopics(topics).allTopicNames().get();
    }

    static TopicPartitionInfo info(Map<String, TopicDescription> d, TopicPartition tp) {
        TopicDescription td = d.get(tp.topic());
        for (TopicPartitionInfo p : td.partitions()) {
            if (p.partition() == tp.partition()) {
                return p;
            }
        }
        throw new CliErrors.Failure("topic " + tp.topic() + " has no partition " + tp.partition() + " (it has "
                + td.partitions().size() + ": 0.." + (td.partitions().size() - 1) + ")");
    }

    static List<Integer> ids(List<Node> nodes) {
        List<Integer> out = new ArrayList<>();
        for (Node n : nodes) {
            out.add(n.id());
        }
        return out;
    }

    @Command(name = "move-leader", mixinStandardHelpOptions = true,
            description = {"Elect leaders: make each partition's preferred replica (the first of its replicas) its leader,",
                    "or with --unclean let an out-of-sync replica lead a partition that has no in-sync one (may lose records)."})
    static final class MoveLeader extends Base {
        @Parameters(arity = "1..*", paramLabel = "TOPIC[:PARTITION]", description = "A partition, or a whole topic (all its partitions).")
        List<String> targets;

        @Option(names = "--unclean", description = "Unclean election: only for partitions without an in-sync leader; records may be lost.")
        boolean unclean;

        @Override
        protected int run(Admin admin) throws Exception {
            Map<String, List<Integer>> wanted = new LinkedHashMap<>();
            for (String t : targets) {
                int colon = t.lastIndexOf(':');
                String topic = colon < 0 ? t : t.substring(0, colon);
                List<Integer> ps = wanted.computeIfAbsent(topic, k -> new ArrayList<>());
                if (colon >= 0) {
                    try {
                        ps.add(Integer.parseInt(t.substring(colon + 1)));
                    } catch (NumberFormatException e) {
                        throw new CliErrors.Failure("'" + t + "' is not TOPIC:PARTITION (the partition is a number, e.g. orders:0)");
                    }
                } else {
                    ps.add(-1);
                }
            }
            Map<String, TopicDescription> d = describe(admin, wanted.keySet());
            Set<TopicPartition> tps = new LinkedHashSet<>();
            wanted.forEach((topic, ps) -> {
                for (int p : ps) {
                    if (p < 0) {
                        d.get(topic).partitions().forEach(i -> tps.add(new TopicPartition(topic, i.partition())));
                    } else {
                        tps.add(new TopicPartition(topic, info(d, new TopicPartition(topic, p)).partition()));
                    }
                }
            });
            Map<TopicPartition, Optional<Throwable>> result = admin.electLeaders(
                    unclean ? ElectionType.UNCLEAN : ElectionType.PREFERRED, tps).partitions().get();
            Map<String, TopicDescription> after = describe(admin, wanted.keySet());
            List<Map<String, Object>> rows = new ArrayList<>();
            int failed = 0;
            for (TopicPartition tp : tps) {
                TopicPartitionInfo i = info(after, tp);
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("topic", tp.topic());
                row.put("partition", tp.partition());
                row.put("leader", i.leader() == null ? null : i.leader().id());
                row.put("preferred-leader", i.replicas().isEmpty() ? null : i.replicas().get(0).id());
                Optional<Throwable> error = result.getOrDefault(tp, Optional.empty());
                if (error.isEmpty()) {
                    row.put("status", "elected");
                } else if (error.get() instanceof ElectionNotNeededException) {
                    row.put("status", unclean ? "has a leader already: no unclean election needed"
                            : "already led by its preferred replica");
                } else {
                    failed++;
                    row.put("status", explain(error.get()));
                }
                rows.add(row);
            }
            client.output.emit(out(), rows, o -> Output.table(o, List.of("topic", "partition", "leader", "preferred-leader", "status"), rows));
            return failed == 0 ? 0 : 1;
        }

        private static String explain(Throwable t) {
            if (t instanceof PreferredLeaderNotAvailableException) {
                return t.getMessage() + " (the preferred replica is down or out of sync; try again once it has caught up)";
            }
            if (t instanceof EligibleLeadersNotAvailableException) {
                return t.getMessage() + " (no replica can lead it now; --unclean elects an out-of-sync one, losing records)";
            }
            return CliErrors.explain(t, null);
        }
    }

    @Command(name = "reassign", mixinStandardHelpOptions = true,
            description = {"Move a partition's replicas to other brokers (the first replica is the preferred leader);",
                    "the cluster copies the data in the background: follow it with `varve partition reassignments`."})
    static final class Reassign extends Base {
        @Option(names = {"-t", "--topic"}, required = true, paramLabel = "TOPIC")
        String topic;

        @Option(names = {"-p", "--partition"}, required = true, split = ",", paramLabel = "P[,P...]")
        List<Integer> partitions;

        @Option(names = {"-r", "--replicas"}, split = ",", paramLabel = "BROKER[,BROKER...]",
                description = "The new replica set, broker ids in order of preference.")
        List<Integer> replicas;

        @Option(names = "--cancel", description = "Cancel the partitions' reassignment in progress instead (back to the old replicas).")
        boolean cancel;

        @Override
        protected int run(Admin admin) throws Exception {
            if (cancel == (replicas != null)) {
                throw new CliErrors.Failure("give either --replicas BROKER,... (the new replica set) or --cancel");
            }
            Map<String, TopicDescription> d = describe(admin, Set.of(topic));
            Map<TopicPartition, Optional<NewPartitionReassignment>> moves = new LinkedHashMap<>();
            Map<TopicPartition, List<Integer>> before = new LinkedHashMap<>();
            for (int p : new TreeSet<>(partitions)) {
                TopicPartition tp = new TopicPartition(topic, p);
                before.put(tp, ids(info(d, tp).replicas()));
                moves.put(tp, cancel ? Optional.empty() : Optional.of(new NewPartitionReassignment(replicas)));
            }
            if (!cancel) {
                if (new LinkedHashSet<>(replicas).size() != replicas.size()) {
                    throw new CliErrors.Failure("--replicas " + Output.cell(replicas) + " names a broker twice");
                }
                List<Integer> brokers = ids(new ArrayList<>(admin.describeCluster().nodes().get()));
                brokers.sort(Comparator.naturalOrder());
                for (int r : replicas) {
                    if (!brokers.contains(r)) {
                        throw new CliErrors.Failure("broker " + r + " is not in the cluster (its brokers are " + Output.cell(brokers)
                                + ": see `varve cluster info`)");
                    }
                }
            }
            var result = admin.alterPartitionReassignments(moves).values();
            Map<TopicPartition, String> errors = new LinkedHashMap<>();
            for (TopicPartition tp : moves.keySet()) {
                try {
                    result.get(tp).get();
                } catch (ExecutionException e) {
                    errors.put(tp, explain(CliErrors.unwrap(e)));
                }
            }
            Map<TopicPartition, PartitionReassignment> ongoing = admin.listPartitionReassignments(moves.keySet()).reassignments().get();
            Map<String, TopicDescription> after = describe(admin, Set.of(topic));
            List<Map<String, Object>> rows = new ArrayList<>();
            for (TopicPartition tp : moves.keySet()) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("topic", tp.topic());
                row.put("partition", tp.partition());
                row.put("old-replicas", before.get(tp));
                row.put("replicas", ids(info(after, tp).replicas()));
                row.put("status", errors.containsKey(tp) ? errors.get(tp)
                        : ongoing.containsKey(tp) ? "in progress" : cancel ? "cancelled" : "done");
                rows.add(row);
            }
            client.output.emit(out(), rows, o -> Output.table(o, List.of("topic", "partition", "old-replicas", "replicas", "status"), rows));
            return errors.isEmpty() ? 0 : 1;
        }

        private static String explain(Throwable t) {
            if (t instanceof NoReassignmentInProgressException) {
                return t.getMessage() + " (nothing to cancel)";
            }
            if (t instanceof InvalidReplicaAssignmentException) {
                return t.getMessage() + " (see the brokers with `varve cluster info`)";
            }
            return CliErrors.explain(t, null);
        }
    }

    @Command(name = "reassignments", mixinStandardHelpOptions = true,
            description = "List the reassignments in progress: each partition's replicas and which are being added and removed.")
    static final class Reassignments extends Base {
        @Override
        protected int run(Admin admin) throws Exception {
            Map<TopicPartition, PartitionReassignment> all = admin.listPartitionReassignments().reassignments().get();
            List<TopicPartition> tps = new ArrayList<>(all.keySet());
            tps.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
            List<Map<String, Object>> rows = new ArrayList<>();
            for (TopicPartition tp : tps) {
                PartitionReassignment r = all.get(tp);
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("topic", tp.topic());
                row.put("partition", tp.partition());
                row.put("replicas", r.replicas());
                row.put("adding", r.addingReplicas());
                row.put("removing", r.removingReplicas());
                rows.add(row);
            }
            client.output.emit(out(), rows, o -> {
                if (rows.isEmpty()) {
                    o.println("No reassignments in progress.");
                } else {
                    Output.table(o, List.of("topic", "partition", "replicas", "adding", "removing"), rows);
                }
            });
            return 0;
        }
    }
}
