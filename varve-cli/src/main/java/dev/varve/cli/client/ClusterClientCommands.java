package dev.varve.cli.client;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

/**
 * {@code varve cluster info|metadata|health}: what any Kafka-protocol cluster says about itself, through the Admin
 * client (these sit beside {@code cluster up|down|status}, which run a local cluster).
 *
 * <ul>
 *   <li>{@code info}: cluster id, controller, brokers (as {@code rpk cluster info}).</li>
 *   <li>{@code metadata}: the same plus topics, each partition's leader, replicas and ISR.</li>
 *   <li>{@code health}: healthy or not and why; exit 0 when healthy, 1 when not.</li>
 * </ul>
 */
public final class ClusterClientCommands {
    private ClusterClientCommands() {
    }

    abstract static class Base extends AdminCommand {
    }

    /** Cluster id, controller and brokers as plain data. */
    static Map<String, Object> clusterDoc(Admin admin) throws Exception {
        DescribeClusterResult c = admin.describeCluster();
        List<Node> nodes = new ArrayList<>(c.nodes().get());
        nodes.sort(Comparator.comparingInt(Node::id));
        Node controller = c.controller().get();
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("cluster-id", c.clusterId().get());
        doc.put("controller", controller == null || controller.isEmpty() ? null : controller.id());
        List<Map<String, Object>> brokers = new ArrayList<>();
        for (Node n : nodes) {
            Map<String, Object> b = new LinkedHashMap<>();
            b.put("id", n.id());
            b.put("host", n.host());
            b.put("port", n.port());
            b.put("rack", n.rack());
            brokers.add(b);
        }
        doc.put("brokers", brokers);
        return doc;
    }

    @SuppressWarnings("unchecked")
    static void clusterText(PrintWriter o, Map<String, Object> doc) {
        o.println("CLUSTER");
        o.println("=======");
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("id", doc.get("cluster-id"));
        fields.put("controller", doc.get("controller"));
        Output.fields(o, fields);
        o.println();
        o.println("BROKERS");
        o.println("=======");
        Output.table(o, List.of("id", "host", "port", "rack"), (List<Map<String, Object>>) doc.get("brokers"));
    }

    /** Every topic described (those deleted meanwhile left out). */
    static Map<String, TopicDescription> describeTopics(Admin admin, Collection<String> names, boolean tolerateMissing) throws Exception {
        Map<String, TopicDescription> result = new TreeMap<>();
        if (names.isEmpty()) {
            return result;
        }
        for (Map.Entry<String, KafkaFuture<TopicDescription>> e : admin.describeTopics(names).topicNameValues().entrySet()) {
            try {
                result.put(e.getKey(), e.getValue().get());
            } catch (ExecutionException ex) {
                if (!(tolerateMissing && CliErrors.unwrap(ex) instanceof UnknownTopicOrPartitionException)) {
                    throw ex;
                }
            }
        }
        return result;
    }

    static Set<String> allTopics(Admin admin, boolean internal) throws Exception {
        return new TreeSet<>(admin.listTopics(new ListTopicsOptions().listInternal(internal)).names().get());
    }

    static Integer leaderOf(TopicPartitionInfo p) {
        return p.leader() == null || p.leader().isEmpty() ? null : p.leader().id();
    }

    // ---------------------------------------------------------------- info

    @Command(name = "info", mixinStandardHelpOptions = true,
            description = "Show the cluster id, the controller and the brokers (id, host, port, rack) of a running cluster.")
    public static final class Info extends Base {
        @Override
        protected int run(Admin admin) throws Exception {
            Map<String, Object> doc = clusterDoc(admin);
            client.output.emit(out(), doc, o -> clusterText(o, doc));
            return 0;
        }
    }

    // ---------------------------------------------------------------- metadata

    @Command(name = "metadata", mixinStandardHelpOptions = true,
            description = "What `cluster info` shows, plus topics with each partition's leader, replicas, ISR and offline replicas.")
    public static final class Metadata extends Base {
        @Parameters(arity = "0..*", paramLabel = "TOPIC", description = "Only these topics (default: all).")
        List<String> topics = new ArrayList<>();

        @Option(names = {"-i", "--internal"}, description = "Include internal topics (__consumer_offsets, ...) when listing all.")
        boolean internal;

        @Override
        protected int run(Admin admin) throws Exception {
            Map<String, Object> doc = clusterDoc(admin);
            Collection<String> names = topics.isEmpty() ? allTopics(admin, internal) : new TreeSet<>(topics);
            Map<String, TopicDescription> described = describeTopics(admin, names, topics.isEmpty());
            List<Map<String, Object>> topicDocs = new ArrayList<>();
            for (TopicDescription td : described.values()) {
                Map<String, Object> t = new LinkedHashMap<>();
                t.put("name", td.name());
                t.put("id", td.topicId().toString());
                t.put("internal", td.isInternal());
                List<Map<String, Object>> parts = new ArrayList<>();
                for (TopicPartitionInfo p : td.partitions()) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("partition", p.partition());
                    row.put("leader", leaderOf(p));
                    row.put("replicas", p.replicas().stream().map(Node::id).toList());
                    row.put("isr", p.isr().stream().map(Node::id).toList());
                    row.put("offline-replicas", offline(p, doc));
                    parts.add(row);
                }
                t.put("partitions", parts);
                topicDocs.add(t);
            }
            doc.put("topics", topicDocs);
            client.output.emit(out(), doc, o -> {
                clusterText(o, doc);
                o.println();
                o.println("TOPICS");
                o.println("======");
                List<Map<String, Object>> summary = new ArrayList<>();
                List<Map<String, Object>> partitions = new ArrayList<>();
                for (Map<String, Object> t : topicDocs) {
                    @SuppressWarnings("unchecked")
                    List<Map<String, Object>> parts = (List<Map<String, Object>>) t.get("partitions");
                    Map<String, Object> s = new LinkedHashMap<>();
                    s.put("name", t.get("name"));
                    s.put("partitions", parts.size());
                    s.put("replicas", parts.isEmpty() ? 0 : ((List<?>) parts.get(0).get("replicas")).size());
                    summary.add(s);
                    for (Map<String, Object> p : parts) {
                        Map<String, Object> row = new LinkedHashMap<>(p);
                        row.put("topic", t.get("name"));
                        partitions.add(row);
                    }
                }
                Output.table(o, List.of("name", "partitions", "replicas"), summary);
                o.println();
                o.println("PARTITIONS");
                o.println("==========");
                Output.table(o, List.of("topic", "partition", "leader", "replicas", "isr", "offline-replicas"), partitions);
            });
            return 0;
        }

        /** Replicas on brokers the cluster does not list as alive. */
        @SuppressWarnings("unchecked")
        private static List<Integer> offline(TopicPartitionInfo p, Map<String, Object> doc) {
            Set<Integer> alive = ((List<Map<String, Object>>) doc.get("brokers")).stream()
                    .map(b -> (Integer) b.get("id")).collect(Collectors.toSet());
            return p.replicas().stream().map(Node::id).filter(id -> !alive.contains(id)).toList();
        }
    }

    // ---------------------------------------------------------------- health

    @Command(name = "health", mixinStandardHelpOptions = true,
            description = {"Is the cluster healthy? Checks every partition (internal topics too) for: no leader (offline), "
                    + "fewer in-sync replicas than replicas (under-replicated), fewer in-sync replicas than the topic's "
                    + "min.insync.replicas (under-min-ISR: acks=all writes fail), replicas on brokers that are not alive "
                    + "(nodes down); and that the cluster names a controller.",
                    "Exits 0 when healthy and 1 when not, so scripts can test it."})
    public static final class Health extends Base {
        @Option(names = {"-w", "--wait"}, paramLabel = "SECONDS",
                description = "Check again every second until healthy, for up to SECONDS; then report as usual.")
        Integer waitSeconds;

        /** How many partitions of each kind the text lists before "... and N more". */
        static final int TEXT_LIMIT = 10;

        @Override
        protected int run(Admin admin) throws Exception {
            long deadline = System.nanoTime() + (waitSeconds == null ? 0 : waitSeconds * 1_000_000_000L);
            Map<String, Object> doc = check(admin);
            while (!(Boolean) doc.get("healthy") && System.nanoTime() < deadline) {
                Thread.sleep(Math.max(1, Math.min(1000, (deadline - System.nanoTime()) / 1_000_000)));
                doc = check(admin);
            }
            Map<String, Object> result = doc;
            client.output.emit(out(), result, o -> text(o, result));
            return (Boolean) result.get("healthy") ? 0 : 1;
        }

        static Map<String, Object> check(Admin admin) throws Exception {
            Map<String, Object> cluster = clusterDoc(admin);
            @SuppressWarnings("unchecked")
            Set<Integer> alive = ((List<Map<String, Object>>) cluster.get("brokers")).stream()
                    .map(b -> (Integer) b.get("id")).collect(Collectors.toCollection(TreeSet::new));
            Map<String, TopicDescription> topics = describeTopics(admin, allTopics(admin, true), true);
            Map<String, Integer> minIsr = minInsyncReplicas(admin, topics.keySet());
            Set<Integer> down = new TreeSet<>();
            List<Map<String, Object>> offline = new ArrayList<>();
            List<Map<String, Object>> underReplicated = new ArrayList<>();
            List<Map<String, Object>> underMinIsr = new ArrayList<>();
            for (TopicDescription td : topics.values()) {
                int min = minIsr.getOrDefault(td.name(), 1);
                for (TopicPartitionInfo p : td.partitions()) {
                    for (Node r : p.replicas()) {
                        if (!alive.contains(r.id())) {
                            down.add(r.id());
                        }
                    }
                    if (leaderOf(p) == null) {
                        offline.add(partition(td, p, null));
                    }
                    if (p.isr().size() < p.replicas().size()) {
                        underReplicated.add(partition(td, p, null));
                    }
                    if (p.isr().size() < min) {
                        underMinIsr.add(partition(td, p, min));
                    }
                }
            }
            List<String> reasons = new ArrayList<>();
            if (cluster.get("controller") == null) {
                reasons.add("no-controller");
            }
            if (!down.isEmpty()) {
                reasons.add("nodes-down");
            }
            if (!offline.isEmpty()) {
                reasons.add("offline-partitions");
            }
            if (!underReplicated.isEmpty()) {
                reasons.add("under-replicated-partitions");
            }
            if (!underMinIsr.isEmpty()) {
                reasons.add("under-min-isr-partitions");
            }
            Map<String, Object> doc = new LinkedHashMap<>();
            doc.put("healthy", reasons.isEmpty());
            doc.put("reasons", reasons);
            doc.put("cluster-id", cluster.get("cluster-id"));
            doc.put("controller", cluster.get("controller"));
            doc.put("brokers", new ArrayList<>(alive));
            doc.put("nodes-down", new ArrayList<>(down));
            doc.put("topics", topics.size());
            doc.put("partitions", topics.values().stream().mapToInt(t -> t.partitions().size()).sum());
            doc.put("offline-partitions", offline);
            doc.put("under-replicated-partitions", underReplicated);
            doc.put("under-min-isr-partitions", underMinIsr);
            return doc;
        }

        private static Map<String, Object> partition(TopicDescription td, TopicPartitionInfo p, Integer minIsr) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("topic", td.name());
            row.put("partition", p.partition());
            row.put("leader", leaderOf(p));
            row.put("replicas", p.replicas().stream().map(Node::id).toList());
            row.put("isr", p.isr().stream().map(Node::id).toList());
            if (minIsr != null) {
                row.put("min-insync-replicas", minIsr);
            }
            return row;
        }

        /** Each topic's effective min.insync.replicas (its own, else the broker's). */
        private static Map<String, Integer> minInsyncReplicas(Admin admin, Collection<String> topics) throws Exception {
            Map<String, Integer> result = new HashMap<>();
            if (topics.isEmpty()) {
                return result;
            }
            List<ConfigResource> resources = topics.stream().map(t -> new ConfigResource(ConfigResource.Type.TOPIC, t)).toList();
            for (Map.Entry<ConfigResource, KafkaFuture<Config>> e : admin.describeConfigs(resources).values().entrySet()) {
                Config config;
                try {
                    config = e.getValue().get();
                } catch (ExecutionException ex) {
                    if (CliErrors.unwrap(ex) instanceof UnknownTopicOrPartitionException) {
                        continue; // deleted meanwhile
                    }
                    throw ex;
                }
                ConfigEntry entry = config.get(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG);
                if (entry != null && entry.value() != null) {
                    try {
                        result.put(e.getKey().name(), Integer.parseInt(entry.value()));
                    } catch (NumberFormatException ignored) {
                        // not a number: leave the default
                    }
                }
            }
            return result;
        }

        @SuppressWarnings("unchecked")
        private static void text(PrintWriter o, Map<String, Object> doc) {
            Map<String, Object> fields = new LinkedHashMap<>();
            fields.put("healthy", doc.get("healthy"));
            fields.put("reasons", doc.get("reasons"));
            fields.put("controller", doc.get("controller"));
            fields.put("brokers", doc.get("brokers"));
            fields.put("nodes-down", doc.get("nodes-down"));
            fields.put("topics", doc.get("topics"));
            fields.put("partitions", doc.get("partitions"));
            for (String kind : List.of("offline-partitions", "under-replicated-partitions", "under-min-isr-partitions")) {
                List<Map<String, Object>> parts = (List<Map<String, Object>>) doc.get(kind);
                StringBuilder sb = new StringBuilder().append(parts.size());
                if (!parts.isEmpty()) {
                    sb.append(" (").append(parts.stream().limit(TEXT_LIMIT)
                            .map(p -> p.get("topic") + "-" + p.get("partition")).collect(Collectors.joining(", ")));
                    if (parts.size() > TEXT_LIMIT) {
                        sb.append(", ... and ").append(parts.size() - TEXT_LIMIT).append(" more");
                    }
                    sb.append(')');
                }
                fields.put(kind, sb.toString());
            }
            Output.fields(o, fields);
        }
    }
}
