package dev.varve.cli.client;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;

/** {@code varve topic ...}: create, list, describe, configure, grow and delete topics. */
@Command(name = "topic", description = "Create, list, describe, configure, grow and delete topics.",
        mixinStandardHelpOptions = true,
        subcommands = {TopicCommand.Create.class, TopicCommand.ListTopics.class, TopicCommand.Describe.class,
                TopicCommand.AlterConfig.class, TopicCommand.Delete.class, TopicCommand.AddPartitions.class})
public final class TopicCommand {

    abstract static class Base extends AdminCommand {
    }

    @Command(name = "create", mixinStandardHelpOptions = true, description = "Create topics.")
    static final class Create extends Base {
        @Parameters(arity = "1..*", paramLabel = "TOPIC")
        List<String> topics;

        @Option(names = {"-p", "--partitions"}, description = "Partitions (default: the cluster's num.partitions).")
        Integer partitions;

        @Option(names = {"-r", "--replicas"}, description = "Replication factor (default: the cluster's default.replication.factor).")
        Short replicas;

        @Option(names = {"-c", "--config"}, paramLabel = "KEY=VALUE", description = "A topic config (repeatable).")
        Map<String, String> configs = new LinkedHashMap<>();

        @Option(names = "--if-not-exists", description = "Succeed when a topic already exists.")
        boolean ifNotExists;

        @Override
        protected int run(Admin admin) throws Exception {
            List<NewTopic> news = new ArrayList<>();
            for (String t : topics) {
                news.add(new NewTopic(t, Optional.ofNullable(partitions), Optional.ofNullable(replicas)).configs(configs));
            }
            CreateTopicsResult result = admin.createTopics(news);
            List<Map<String, Object>> rows = new ArrayList<>();
            int failed = 0;
            for (String t : topics) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("topic", t);
                try {
                    result.values().get(t).get();
                    row.put("partitions", result.numPartitions(t).get());
                    row.put("replicas", result.replicationFactor(t).get());
                    row.put("status", "OK");
                } catch (java.util.concurrent.ExecutionException e) {
                    Throwable cause = CliErrors.unwrap(e);
                    if (ifNotExists && cause instanceof org.apache.kafka.common.errors.TopicExistsException) {
                        row.put("status", "EXISTS");
                    } else {
                        failed++;
                        row.put("status", CliErrors.explain(cause, null));
                    }
                }
                rows.add(row);
            }
            client.output.emit(out(), rows, o -> Output.table(o, List.of("topic", "partitions", "replicas", "status"), rows));
            return failed == 0 ? 0 : 1;
        }
    }

    @Command(name = "list", aliases = "ls", mixinStandardHelpOptions = true,
            description = "List topics with their partition and replica counts.")
    static final class ListTopics extends Base {
        @Parameters(arity = "0..1", paramLabel = "REGEX", description = "Only topics whose whole name matches.")
        String regex;

        @Option(names = {"-i", "--internal"}, description = "Include internal topics (__consumer_offsets, ...).")
        boolean internal;

        @Override
        protected int run(Admin admin) throws Exception {
            Pattern filter = regex == null ? null : Pattern.compile(regex);
            Collection<String> names = new java.util.TreeSet<>(admin.listTopics(new ListTopicsOptions().listInternal(internal)).names().get());
            names.removeIf(n -> filter != null && !filter.matcher(n).matches());
            Map<String, TopicDescription> d = names.isEmpty() ? Map.of() : admin.describeTopics(names).allTopicNames().get();
            List<Map<String, Object>> rows = new ArrayList<>();
            for (String n : names) {
                TopicDescription td = d.get(n);
                if (td == null) {
                    continue; // deleted between the two calls
                }
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("name", n);
                row.put("partitions", td.partitions().size());
                row.put("replicas", td.partitions().isEmpty() ? 0 : td.partitions().get(0).replicas().size());
                row.put("internal", td.isInternal());
                rows.add(row);
            }
            client.output.emit(out(), rows, o -> Output.table(o, List.of("name", "partitions", "replicas"), rows));
            return 0;
        }
    }

    @Command(name = "describe", mixinStandardHelpOptions = true,
            description = "Show a topic: summary, configs and partitions (leader, replicas, ISR, offsets).")
    static final class Describe extends Base {
        @Parameters(arity = "1..*", paramLabel = "TOPIC")
        List<String> topics;

        @Option(names = {"-a", "--all-configs"}, description = "Print every config, not only those set on the topic.")
        boolean allConfigs;

        @Override
        protected int run(Admin admin) throws Exception {
            Map<String, TopicDescription> described = admin.describeTopics(topics).allTopicNames().get();
            List<ConfigResource> resources = topics.stream().map(t -> new ConfigResource(ConfigResource.Type.TOPIC, t)).toList();
            Map<ConfigResource, Config> configs = admin.describeConfigs(resources).all().get();
            Map<TopicPartition, OffsetSpec> starts = new HashMap<>();
            Map<TopicPartition, OffsetSpec> ends = new HashMap<>();
            for (TopicDescription td : described.values()) {
                for (TopicPartitionInfo p : td.partitions()) {
                    TopicPartition tp = new TopicPartition(td.name(), p.partition());
                    starts.put(tp, OffsetSpec.earliest());
                    ends.put(tp, OffsetSpec.latest());
                }
            }
            Map<TopicPartition, Long> start = offsets(admin, starts);
            Map<TopicPartition, Long> end = offsets(admin, ends);
            List<Map<String, Object>> docs = new ArrayList<>();
            for (String t : topics) {
                TopicDescription td = described.get(t);
                Map<String, Object> doc = new LinkedHashMap<>();
                doc.put("name", t);
                doc.put("id", td.topicId().toString());
                doc.put("internal", td.isInternal());
                doc.put("partitions", td.partitions().size());
                doc.put("replicas", td.partitions().isEmpty() ? 0 : td.partitions().get(0).replicas().size());
                Map<String, Object> cfg = new TreeMap<>();
                for (ConfigEntry e : configs.get(new ConfigResource(ConfigResource.Type.TOPIC, t)).entries()) {
                    if (allConfigs || e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) {
                        cfg.put(e.name(), e.isSensitive() ? "(sensitive)" : e.value());
                    }
                }
                doc.put("configs", cfg);
                List<Map<String, Object>> parts = new ArrayList<>();
                for (TopicPartitionInfo p : td.partitions()) {
                    TopicPartition tp = new TopicPartition(t, p.partition());
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("partition", p.partition());
                    row.put("leader", p.leader() == null || p.leader().isEmpty() ? null : p.leader().id());
                    row.put("replicas", p.replicas().stream().map(Node::id).toList());
                    row.put("isr", p.isr().stream().map(Node::id).toList());
                    row.put("log-start-offset", start.get(tp));
                    row.put("high-watermark", end.get(tp));
                    parts.add(row);
                }
                doc.put("partition-details", parts);
                docs.add(doc);
            }
            Object data = docs.size() == 1 ? docs.get(0) : docs;
            client.output.emit(out(), data, o -> {
                boolean first = true;
                for (Map<String, Object> doc : docs) {
                    if (!first) {
                        o.println();
                    }
                    first = false;
                    Map<String, Object> summary = new LinkedHashMap<>(doc);
                    summary.remove("configs");
                    summary.remove("partition-details");
                    o.println("SUMMARY");
                    o.println("=======");
                    Output.fields(o, summary);
                    @SuppressWarnings("unchecked")
                    Map<String, Object> cfg = (Map<String, Object>) doc.get("configs");
                    o.println();
                    o.println("CONFIGS");
                    o.println("=======");
                    List<Map<String, Object>> cfgRows = new ArrayList<>();
                    cfg.forEach((k, v) -> {
                        Map<String, Object> r = new LinkedHashMap<>();
                        r.put("key", k);
                        r.put("value", v);
                        cfgRows.add(r);
                    });
                    Output.table(o, List.of("key", "value"), cfgRows);
                    o.println();
                    o.println("PARTITIONS");
                    o.println("==========");
                    @SuppressWarnings("unchecked")
                    List<Map<String, Object>> parts = (List<Map<String, Object>>) doc.get("partition-details");
                    Output.table(o, List.of("partition", "leader", "replicas", "isr", "log-start-offset", "high-watermark"), parts);
                }
            });
            return 0;
        }

        private static Map<TopicPartition, Long> offsets(Admin admin, Map<TopicPartition, OffsetSpec> specs) throws Exception {
            Map<TopicPartition, Long> result = new HashMap<>();
            if (specs.isEmpty()) {
                return result;
            }
            admin.listOffsets(specs).all().get().forEach((tp, info) -> result.put(tp, info.offset()));
            return result;
        }
    }

    @Command(name = "alter-config", mixinStandardHelpOptions = true,
            description = "Set or remove topic configs (incrementally: other configs are kept).")
    static final class AlterConfig extends Base {
        @Parameters(arity = "1..*", paramLabel = "TOPIC")
        List<String> topics;

        @Option(names = {"-s", "--set"}, paramLabel = "KEY=VALUE", description = "Set a config (repeatable).")
        Map<String, String> set = new LinkedHashMap<>();

        @Option(names = {"-d", "--delete"}, paramLabel = "KEY", description = "Remove a config: back to the broker's default (repeatable).")
        List<String> delete = new ArrayList<>();

        @Override
        protected int run(Admin admin) throws Exception {
            if (set.isEmpty() && delete.isEmpty()) {
                throw new CliErrors.Failure("nothing to change: give --set KEY=VALUE or --delete KEY");
            }
            List<AlterConfigOp> ops = new ArrayList<>();
            set.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
            delete.forEach(k -> ops.add(new AlterConfigOp(new ConfigEntry(k, null), AlterConfigOp.OpType.DELETE)));
            Map<ConfigResource, Collection<AlterConfigOp>> request = new LinkedHashMap<>();
            for (String t : topics) {
                request.put(new ConfigResource(ConfigResource.Type.TOPIC, t), ops);
            }
            var result = admin.incrementalAlterConfigs(request).values();
            StatusRows rows = new StatusRows();
            for (String t : topics) {
                rows.add(StatusRows.row("topic", t), result.get(new ConfigResource(ConfigResource.Type.TOPIC, t)));
            }
            return rows.emit(client.output, out(), List.of("topic", "status"));
        }
    }

    @Command(name = "delete", mixinStandardHelpOptions = true, description = "Delete topics and all their records.")
    static final class Delete extends Base {
        @Parameters(arity = "1..*", paramLabel = "TOPIC")
        List<String> topics;

        @Override
        protected int run(Admin admin) throws Exception {
            var result = admin.deleteTopics(topics).topicNameValues();
            StatusRows rows = new StatusRows();
            for (String t : topics) {
                rows.add(StatusRows.row("topic", t), result.get(t));
            }
            return rows.emit(client.output, out(), List.of("topic", "status"));
        }
    }

    @Command(name = "add-partitions", mixinStandardHelpOptions = true,
            description = "Add partitions to topics (a key's partition changes for keyed producers).")
    static final class AddPartitions extends Base {
        @Parameters(arity = "1..*", paramLabel = "TOPIC")
        List<String> topics;

        @Option(names = {"-n", "--num"}, required = true, description = "How many partitions to add to each topic.")
        int add;

        @Override
        protected int run(Admin admin) throws Exception {
            if (add <= 0) {
                throw new CliErrors.Failure("--num must be at least 1 (partitions can only be added)");
            }
            Map<String, TopicDescription> d = admin.describeTopics(topics).allTopicNames().get();
            Map<String, NewPartitions> request = new LinkedHashMap<>();
            for (String t : topics) {
                request.put(t, NewPartitions.increaseTo(d.get(t).partitions().size() + add));
            }
            var result = admin.createPartitions(request).values();
            StatusRows rows = new StatusRows();
            for (String t : topics) {
                Map<String, Object> row = StatusRows.row("topic", t);
                row.put("partitions", d.get(t).partitions().size() + add);
                if (!rows.add(row, result.get(t))) {
                    row.put("partitions", d.get(t).partitions().size());
                }
            }
            return rows.emit(client.output, out(), List.of("topic", "partitions", "status"));
        }
    }
}
