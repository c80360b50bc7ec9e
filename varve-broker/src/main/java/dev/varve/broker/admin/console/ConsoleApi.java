package dev.varve.broker.admin.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsResult;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.internals.Topic;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static dev.varve.broker.admin.console.Console.JSON;

/**
 * The console's JSON API, answered with the stock Kafka Admin client (one, made on first use, shared, closed
 * with the listener) and, for the message browser, a short-lived Consumer per request, both connected to this
 * broker's own PLAINTEXT listener: in a cluster, every broker's console shows the whole cluster.
 *
 * <pre>
 * GET    /api/overview                 cluster id, controller, brokers (fenced or not), health
 * GET    /api/metrics                  this broker's counters and p99 latencies for the charts
 * GET    /api/topics                   topics: partitions, replication factor, under-replicated, size
 * POST   /api/topics                   {"name", "partitions", "replicationFactor", "configs"}
 * GET    /api/topics/NAME              partitions (leader, replicas, ISR, offsets) and configs
 * DELETE /api/topics/NAME
 * PUT    /api/topics/NAME/configs      {"configs": {"retention.ms": "1000", "other": null (back to default)}}
 * GET    /api/topics/NAME/messages     ?partition=&offset=|timestamp=|from=earliest|newest&limit=&decode=&filter=
 * GET    /api/groups                   consumer groups: state, members, total lag
 * GET    /api/groups/ID                members, committed offset and lag per partition
 * POST   /api/groups/ID/reset          {"topic", "to": "earliest|latest|offset|timestamp", "offset", "timestamp", "partitions"}
 * </pre>
 * Every Kafka call has a deadline of {@value #TIMEOUT_MS} ms; a request's error is a JSON {@code {"error": ...}}
 * with a 4xx or 5xx status.
 */
final class ConsoleApi implements AutoCloseable {
    static final int TIMEOUT_MS = 10_000;
    private static final int MAX_CONFIG_CHANGES = 200;

    private final ConsoleHost host;
    private final MetricsSummary metrics;
    private final Object adminLock = new Object();
    private Admin admin;
    private boolean closed;

    ConsoleApi(ConsoleHost host, PrometheusRegistry registry) {
        this.host = host;
        this.metrics = new MetricsSummary(registry);
    }

    JsonNode handle(Console.Request r) {
        String first = r.segment(0);
        int n = r.path.size();
        if (first == null) {
            throw ApiException.notFound("no such API: try /api/overview");
        }
        switch (first) {
            case "overview":
                only(r, n == 1, "GET");
                return overview();
            case "metrics":
                only(r, n == 1, "GET");
                return metrics.summary(host.nodeId());
            case "topics":
                if (n == 1) {
                    only(r, true, "GET", "POST");
                    return "GET".equals(r.method) ? topics() : createTopic(r.body);
                }
                String topic = r.segment(1);
                if (n == 2) {
                    only(r, true, "GET", "DELETE");
                    return "GET".equals(r.method) ? topic(topic) : deleteTopic(topic);
                }
                if (n == 3 && "configs".equals(r.segment(2))) {
                    only(r, true, "PUT");
                    return alterConfigs(topic, r.body);
                }
                if (n == 3 && "messages".equals(r.segment(2))) {
                    only(r, true, "GET");
                    return new MessageBrowser(bootstrap()).browse(topic, partitions(topic), r);
                }
                break;
            case "groups":
                if (n == 1) {
                    only(r, true, "GET");
                    return groups();
                }
                if (n == 2) {
                    only(r, true, "GET");
                    return group(r.segment(1));
                }
                if (n == 3 && "reset".equals(r.segment(2))) {
                    only(r, true, "POST");
                    return resetOffsets(r.segment(1), r.body);
                }
                break;
            default:
                break;
        }
        throw ApiException.notFound("no such API: /api/" + String.join("/", r.path));
    }

    private static void only(Console.Request r, boolean pathMatches, String... methods) {
        if (!pathMatches) {
            throw ApiException.notFound("no such API: /api/" + String.join("/", r.path));
        }
        for (String m : methods) {
            if (m.equals(r.method)) {
                return;
            }
        }
        throw new ApiException(405, r.method + " is not allowed here: " + String.join(", ", methods));
    }

    // ---------------------------------------------------------------------------------------- overview

    private JsonNode overview() {
        DescribeClusterResult cluster = admin().describeCluster(new DescribeClusterOptions().includeFencedBrokers(true)
                .timeoutMs(TIMEOUT_MS));
        ObjectNode out = JSON.createObjectNode();
        out.put("clusterId", await(cluster.clusterId(), "describe the cluster"));
        Collection<Node> nodes = await(cluster.nodes(), "describe the cluster");
        Node answered = await(cluster.controller(), "describe the cluster");
        int controller = host.activeControllerId().orElse(answered == null || answered.isEmpty() ? -1 : answered.id());
        out.put("controllerId", controller);
        out.put("nodeId", host.nodeId());
        ArrayNode brokers = out.putArray("brokers");
        int fenced = 0;
        for (Node b : nodes.stream().sorted(java.util.Comparator.comparingInt(Node::id)).toList()) {
            ObjectNode o = brokers.addObject();
            o.put("id", b.id());
            o.put("host", b.host());
            o.put("port", b.port());
            o.put("rack", b.rack());
            o.put("fenced", b.isFenced());
            o.put("status", b.isFenced() ? "offline" : "online");
            o.put("controller", b.id() == controller);
            fenced += b.isFenced() ? 1 : 0;
        }
        Map<String, TopicDescription> topics = describeAll();
        int partitions = 0;
        int underReplicated = 0;
        int offline = 0;
        for (TopicDescription t : topics.values()) {
            for (TopicPartitionInfo p : t.partitions()) {
                partitions += t.isInternal() ? 0 : 1;
                underReplicated += p.isr().size() < p.replicas().size() ? 1 : 0;
                offline += p.leader() == null || p.leader().isEmpty() ? 1 : 0;
            }
        }
        out.put("topicCount", topics.values().stream().filter(t -> !t.isInternal()).count());
        out.put("partitionCount", partitions); // of those topics (health below counts internal ones too)
        ObjectNode health = out.putObject("health");
        List<String> notReady;
        try {
            notReady = host.notReadyBecause();
        } catch (RuntimeException e) {
            notReady = List.of("readiness check failed: " + e);
        }
        health.put("ready", notReady.isEmpty());
        ArrayNode why = health.putArray("problems");
        notReady.forEach(w -> why.add("this broker: " + w));
        if (fenced > 0) {
            why.add(fenced + " broker(s) offline (fenced)");
        }
        if (underReplicated > 0) {
            why.add(underReplicated + " under-replicated partition(s)");
        }
        if (offline > 0) {
            why.add(offline + " offline partition(s) (no leader)");
        }
        health.put("underReplicatedPartitions", underReplicated);
        health.put("offlinePartitions", offline);
        health.put("offlineBrokers", fenced);
        health.put("status", offline > 0 || !notReady.isEmpty() ? "critical"
                : underReplicated > 0 || fenced > 0 ? "degraded" : "healthy");
        return out;
    }

    // ------------------------------------------------------------------------------------------ topics

    private Map<String, TopicDescription> describeAll() {
        Set<String> names = await(admin().listTopics(new ListTopicsOptions().listInternal(true).timeoutMs(TIMEOUT_MS)).names(),
                "list topics");
        if (names.isEmpty()) {
            return Map.of();
        }
        return new TreeMap<>(await(admin().describeTopics(names, new org.apache.kafka.clients.admin.DescribeTopicsOptions()
                .timeoutMs(TIMEOUT_MS)).allTopicNames(), "describe topics"));
    }

    private JsonNode topics() {
        Map<String, TopicDescription> topics = describeAll();
        Map<TopicPartition, Long> sizes = partitionSizes();
        ObjectNode out = JSON.createObjectNode();
        ArrayNode list = out.putArray("topics");
        for (TopicDescription t : topics.values()) {
            ObjectNode o = list.addObject();
            o.put("name", t.name());
            o.put("internal", t.isInternal());
            o.put("partitions", t.partitions().size());
            o.put("replicationFactor", t.partitions().isEmpty() ? 0 : t.partitions().get(0).replicas().size());
            o.put("underReplicated", t.partitions().stream().filter(p -> p.isr().size() < p.replicas().size()).count());
            o.put("offline", t.partitions().stream().filter(p -> p.leader() == null || p.leader().isEmpty()).count());
            long size = 0;
            boolean known = !sizes.isEmpty();
            for (TopicPartitionInfo p : t.partitions()) {
                Long s = sizes.get(new TopicPartition(t.name(), p.partition()));
                if (s == null) {
                    known = false;
                } else {
                    size += s;
                }
            }
            if (known) {
                o.put("sizeBytes", size);
            } else {
                o.putNull("sizeBytes");
            }
        }
        return out;
    }

    /** Bytes on disk of each partition (its largest replica), from the brokers that answer in time; empty if none does. */
    private Map<TopicPartition, Long> partitionSizes() {
        Map<TopicPartition, Long> sizes = new HashMap<>();
        try {
            Collection<Node> live = await(admin().describeCluster(new DescribeClusterOptions().timeoutMs(TIMEOUT_MS)).nodes(),
                    "describe the cluster");
            List<Integer> ids = live.stream().map(Node::id).toList();
            var dirs = admin().describeLogDirs(ids, new org.apache.kafka.clients.admin.DescribeLogDirsOptions().timeoutMs(5_000))
                    .descriptions();
            for (KafkaFuture<Map<String, LogDirDescription>> f : dirs.values()) {
                try {
                    for (LogDirDescription d : f.get(5, TimeUnit.SECONDS).values()) {
                        for (Map.Entry<TopicPartition, ReplicaInfo> e : d.replicaInfos().entrySet()) {
                            sizes.merge(e.getKey(), e.getValue().size(), Math::max);
                        }
                    }
                } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                    // that broker's sizes are missing: its partitions show no size
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ApiException e) {
            return Map.of();
        }
        return sizes;
    }

    /** The partitions of one topic (404 when there is no such topic). */
    private List<TopicPartitionInfo> partitions(String topic) {
        return describe(topic).partitions();
    }

    private TopicDescription describe(String topic) {
        validTopicName(topic);
        return await(admin().describeTopics(List.of(topic), new org.apache.kafka.clients.admin.DescribeTopicsOptions()
                .timeoutMs(TIMEOUT_MS)).allTopicNames(), "describe topic " + topic).get(topic);
    }

    private static void validTopicName(String topic) {
        try {
            Topic.validate(topic);
        } catch (InvalidTopicException e) {
            throw ApiException.badRequest(e.getMessage());
        }
    }

    private JsonNode topic(String name) {
        TopicDescription t = describe(name);
        List<TopicPartition> tps = t.partitions().stream().map(p -> new TopicPartition(name, p.partition())).toList();
        Map<TopicPartition, Long> start = offsets(tps, OffsetSpec.earliest());
        Map<TopicPartition, Long> end = offsets(tps, OffsetSpec.latest());
        ObjectNode out = JSON.createObjectNode();
        out.put("name", t.name());
        out.put("topicId", t.topicId() == null ? null : t.topicId().toString());
        out.put("internal", t.isInternal());
        ArrayNode parts = out.putArray("partitions");
        for (TopicPartitionInfo p : t.partitions()) {
            TopicPartition tp = new TopicPartition(name, p.partition());
            ObjectNode o = parts.addObject();
            o.put("partition", p.partition());
            o.put("leader", p.leader() == null || p.leader().isEmpty() ? -1 : p.leader().id());
            ArrayNode replicas = o.putArray("replicas");
            p.replicas().forEach(b -> replicas.add(b.id()));
            ArrayNode isr = o.putArray("isr");
            p.isr().forEach(b -> isr.add(b.id()));
            o.put("underReplicated", p.isr().size() < p.replicas().size());
            putNullable(o, "startOffset", start.get(tp));
            putNullable(o, "endOffset", end.get(tp));
        }
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, name);
        Config config = await(admin().describeConfigs(List.of(resource), new org.apache.kafka.clients.admin.DescribeConfigsOptions()
                .timeoutMs(TIMEOUT_MS)).all(), "describe the configs of " + name).get(resource);
        ArrayNode configs = out.putArray("configs");
        if (config != null) {
            config.entries().stream().sorted(java.util.Comparator.comparing(ConfigEntry::name)).forEach(e -> {
                ObjectNode c = configs.addObject();
                c.put("name", e.name());
                c.put("value", e.isSensitive() ? null : e.value());
                c.put("source", e.source() == null ? null : e.source().name());
                c.put("default", e.isDefault());
                c.put("readOnly", e.isReadOnly());
                c.put("sensitive", e.isSensitive());
            });
        }
        return out;
    }

    private static void putNullable(ObjectNode o, String name, Long v) {
        if (v == null) {
            o.putNull(name);
        } else {
            o.put(name, v);
        }
    }

    /** Offsets of {@code spec} for each partition that answers; a partition without a leader is missing. */
    private Map<TopicPartition, Long> offsets(Collection<TopicPartition> tps, OffsetSpec spec) {
        Map<TopicPartition, Long> out = new HashMap<>();
        if (tps.isEmpty()) {
            return out;
        }
        Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
        tps.forEach(tp -> ask.put(tp, spec));
        ListOffsetsResult result = admin().listOffsets(ask, new org.apache.kafka.clients.admin.ListOffsetsOptions().timeoutMs(TIMEOUT_MS));
        for (TopicPartition tp : tps) {
            try {
                out.put(tp, result.partitionResult(tp).get(TIMEOUT_MS, TimeUnit.MILLISECONDS).offset());
            } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                // no leader now, or it did not answer: no offset shown
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ApiException(503, "interrupted");
            }
        }
        return out;
    }

    private JsonNode createTopic(JsonNode body) {
        String name = text(body, "name", true);
        validTopicName(name);
        int partitions = (int) number(body, "partitions", -1, 1, 100_000);
        int rf = (int) number(body, "replicationFactor", -1, 1, Short.MAX_VALUE);
        Map<String, String> configs = new HashMap<>();
        JsonNode c = body.get("configs");
        if (c != null && !c.isNull()) {
            if (!c.isObject() || c.size() > MAX_CONFIG_CHANGES) {
                throw ApiException.badRequest("configs must be an object of at most " + MAX_CONFIG_CHANGES + " settings");
            }
            for (Map.Entry<String, JsonNode> e : c.properties()) {
                if (!e.getValue().isValueNode() || e.getValue().isNull()) {
                    throw ApiException.badRequest("config " + e.getKey() + " needs a value");
                }
                configs.put(configName(e.getKey()), e.getValue().asText());
            }
        }
        NewTopic topic = new NewTopic(name, partitions < 0 ? java.util.Optional.empty() : java.util.Optional.of(partitions),
                rf < 0 ? java.util.Optional.empty() : java.util.Optional.of((short) rf)).configs(configs);
        await(admin().createTopics(List.of(topic), new org.apache.kafka.clients.admin.CreateTopicsOptions().timeoutMs(TIMEOUT_MS)).all(),
                "create topic " + name);
        ObjectNode out = JSON.createObjectNode();
        out.put("created", name);
        return out;
    }

    private JsonNode deleteTopic(String name) {
        TopicDescription t = describe(name);
        if (t.isInternal()) {
            throw ApiException.badRequest(name + " is an internal topic: the console does not delete it");
        }
        await(admin().deleteTopics(List.of(name), new org.apache.kafka.clients.admin.DeleteTopicsOptions().timeoutMs(TIMEOUT_MS)).all(),
                "delete topic " + name);
        ObjectNode out = JSON.createObjectNode();
        out.put("deleted", name);
        return out;
    }

    private JsonNode alterConfigs(String name, JsonNode body) {
        validTopicName(name);
        JsonNode c = body.get("configs");
        if (c == null || !c.isObject() || c.isEmpty() || c.size() > MAX_CONFIG_CHANGES) {
            throw ApiException.badRequest("expected {\"configs\": {NAME: VALUE or null (back to the default), ...}} with 1 to "
                    + MAX_CONFIG_CHANGES + " settings");
        }
        List<AlterConfigOp> ops = new ArrayList<>();
        for (Map.Entry<String, JsonNode> e : c.properties()) {
            String key = configName(e.getKey());
            JsonNode v = e.getValue();
            if (v.isNull()) {
                ops.add(new AlterConfigOp(new ConfigEntry(key, null), AlterConfigOp.OpType.DELETE));
            } else if (v.isValueNode()) {
                ops.add(new AlterConfigOp(new ConfigEntry(key, v.asText()), AlterConfigOp.OpType.SET));
            } else {
                throw ApiException.badRequest("config " + key + ": the value must be a string, a number or null");
            }
        }
        describe(name); // 404 for an unknown topic, as for the other topic endpoints
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, name);
        await(admin().incrementalAlterConfigs(Map.of(resource, ops),
                new org.apache.kafka.clients.admin.AlterConfigsOptions().timeoutMs(TIMEOUT_MS)).all(), "alter the configs of " + name);
        ObjectNode out = JSON.createObjectNode();
        out.put("altered", name);
        out.put("changes", ops.size());
        return out;
    }

    private static String configName(String key) {
        if (key.isEmpty() || key.length() > 255 || !key.matches("[A-Za-z0-9._-]+")) {
            throw ApiException.badRequest("'" + Console.Request.abbreviate(key) + "' is not a config name");
        }
        return key;
    }

    // ------------------------------------------------------------------------------------------ groups

    /** Consumer groups (classic and KIP-848 ones, and groups that only commit offsets), not Connect's or share groups. */
    private List<String> consumerGroupIds() {
        Collection<GroupListing> all = await(admin().listGroups(new org.apache.kafka.clients.admin.ListGroupsOptions()
                .timeoutMs(TIMEOUT_MS)).all(), "list groups");
        List<String> ids = new ArrayList<>();
        for (GroupListing g : all) {
            GroupType type = g.type().orElse(GroupType.CLASSIC);
            boolean consumer = type == GroupType.CONSUMER
                    || type == GroupType.CLASSIC && (g.protocol() == null || g.protocol().isEmpty() || "consumer".equals(g.protocol()));
            if (consumer) {
                ids.add(g.groupId());
            }
        }
        ids.sort(null);
        return ids;
    }

    private JsonNode groups() {
        List<String> ids = consumerGroupIds();
        ObjectNode out = JSON.createObjectNode();
        ArrayNode list = out.putArray("groups");
        if (ids.isEmpty()) {
            return out;
        }
        Map<String, ConsumerGroupDescription> described = await(admin().describeConsumerGroups(ids,
                new org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions().timeoutMs(TIMEOUT_MS)).all(), "describe groups");
        Map<String, ListConsumerGroupOffsetsSpec> specs = new HashMap<>();
        ids.forEach(id -> specs.put(id, new ListConsumerGroupOffsetsSpec()));
        ListConsumerGroupOffsetsResult committed = admin().listConsumerGroupOffsets(specs,
                new org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions().timeoutMs(TIMEOUT_MS));
        Map<String, Map<TopicPartition, OffsetAndMetadata>> offsets = new HashMap<>();
        Set<TopicPartition> all = new HashSet<>();
        for (String id : ids) {
            try {
                Map<TopicPartition, OffsetAndMetadata> m = committed.partitionsToOffsetAndMetadata(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                offsets.put(id, m);
                all.addAll(m.keySet());
            } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                // lag unknown for this group
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ApiException(503, "interrupted");
            }
        }
        Map<TopicPartition, Long> end = offsets(all, OffsetSpec.latest());
        for (String id : ids) {
            ConsumerGroupDescription d = described.get(id);
            ObjectNode o = list.addObject();
            o.put("groupId", id);
            o.put("state", d == null ? "UNKNOWN" : d.groupState().name());
            o.put("members", d == null ? 0 : d.members().size());
            Map<TopicPartition, OffsetAndMetadata> m = offsets.get(id);
            if (m == null) {
                o.putNull("lag");
                o.putArray("topics");
                continue;
            }
            long lag = 0;
            boolean known = true;
            Set<String> topics = new java.util.TreeSet<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : m.entrySet()) {
                topics.add(e.getKey().topic());
                Long l = lag(e.getValue(), end.get(e.getKey()));
                if (l == null) {
                    known = false;
                } else {
                    lag += l;
                }
            }
            if (known) {
                o.put("lag", lag);
            } else {
                o.putNull("lag");
            }
            ArrayNode t = o.putArray("topics");
            topics.forEach(t::add);
        }
        return out;
    }

    private static Long lag(OffsetAndMetadata committed, Long end) {
        if (committed == null || end == null) {
            return null;
        }
        return Math.max(0, end - committed.offset());
    }

    private ConsumerGroupDescription describeGroup(String id) {
        if (id.isEmpty() || id.length() > 1000) {
            throw ApiException.badRequest("a group id has 1 to 1000 characters");
        }
        return await(admin().describeConsumerGroups(List.of(id),
                new org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions().timeoutMs(TIMEOUT_MS)).all(), "describe group " + id)
                .get(id);
    }

    private Map<TopicPartition, OffsetAndMetadata> committed(String id) {
        Map<TopicPartition, OffsetAndMetadata> m = await(admin().listConsumerGroupOffsets(id,
                new org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions().timeoutMs(TIMEOUT_MS))
                .partitionsToOffsetAndMetadata(id), "list the offsets of group " + id);
        Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
        m.forEach((tp, o) -> {
            if (o != null) {
                out.put(tp, o);
            }
        });
        return out;
    }

    private JsonNode group(String id) {
        ConsumerGroupDescription d = describeGroup(id);
        if (d == null || d.groupState() == org.apache.kafka.common.GroupState.DEAD) {
            throw ApiException.notFound("no consumer group " + id);
        }
        Map<TopicPartition, OffsetAndMetadata> committed = committed(id);
        Map<TopicPartition, MemberDescription> owner = new HashMap<>();
        ObjectNode out = JSON.createObjectNode();
        out.put("groupId", id);
        out.put("state", d.groupState().name());
        out.put("type", d.type() == null ? null : d.type().name());
        out.put("partitionAssignor", d.partitionAssignor());
        out.put("coordinator", d.coordinator() == null ? -1 : d.coordinator().id());
        ArrayNode members = out.putArray("members");
        for (MemberDescription m : d.members()) {
            ObjectNode o = members.addObject();
            o.put("memberId", m.consumerId());
            o.put("clientId", m.clientId());
            o.put("host", m.host());
            o.put("groupInstanceId", m.groupInstanceId().orElse(null));
            ArrayNode a = o.putArray("assignment");
            m.assignment().topicPartitions().stream()
                    .sorted(java.util.Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition))
                    .forEach(tp -> {
                        owner.put(tp, m);
                        a.addObject().put("topic", tp.topic()).put("partition", tp.partition());
                    });
        }
        Set<TopicPartition> tps = new HashSet<>(committed.keySet());
        tps.addAll(owner.keySet());
        Map<TopicPartition, Long> end = offsets(tps, OffsetSpec.latest());
        ArrayNode offsets = out.putArray("offsets");
        long total = 0;
        for (TopicPartition tp : tps.stream()
                .sorted(java.util.Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition)).toList()) {
            ObjectNode o = offsets.addObject();
            o.put("topic", tp.topic());
            o.put("partition", tp.partition());
            OffsetAndMetadata c = committed.get(tp);
            putNullable(o, "committed", c == null ? null : c.offset());
            putNullable(o, "endOffset", end.get(tp));
            Long l = lag(c, end.get(tp));
            putNullable(o, "lag", l);
            total += l == null ? 0 : l;
            MemberDescription m = owner.get(tp);
            o.put("memberId", m == null ? null : m.consumerId());
            o.put("clientId", m == null ? null : m.clientId());
        }
        out.put("lag", total);
        return out;
    }

    private JsonNode resetOffsets(String id, JsonNode body) {
        String topic = text(body, "topic", true);
        String to = text(body, "to", true);
        if (!List.of("earliest", "latest", "offset", "timestamp").contains(to)) {
            throw ApiException.badRequest("to must be one of earliest, latest, offset, timestamp, not '" + Console.Request.abbreviate(to) + "'");
        }
        long offset = "offset".equals(to) ? number(body, "offset", Long.MIN_VALUE, 0, Long.MAX_VALUE) : 0;
        long timestamp = "timestamp".equals(to) ? number(body, "timestamp", Long.MIN_VALUE, 0, Long.MAX_VALUE) : 0;
        if ("offset".equals(to) && offset == Long.MIN_VALUE || "timestamp".equals(to) && timestamp == Long.MIN_VALUE) {
            throw ApiException.badRequest("to=" + to + " needs \"" + to + "\": a whole number >= 0");
        }
        List<TopicPartitionInfo> parts = partitions(topic);
        Set<Integer> chosen = new java.util.TreeSet<>();
        JsonNode ps = body.get("partitions");
        if (ps != null && !ps.isNull()) {
            if (!ps.isArray() || ps.size() > 100_000) {
                throw ApiException.badRequest("partitions must be an array of partition numbers");
            }
            for (JsonNode p : ps) {
                if (!p.canConvertToInt() || !p.isIntegralNumber() || p.asInt() < 0 || p.asInt() >= parts.size()) {
                    throw ApiException.badRequest("partition " + p + " is not one of " + topic + "'s 0.." + (parts.size() - 1));
                }
                chosen.add(p.asInt());
            }
        } else {
            parts.forEach(p -> chosen.add(p.partition()));
        }
        ConsumerGroupDescription d;
        try {
            d = describeGroup(id);
        } catch (ApiException e) {
            if (e.status != 404) {
                throw e;
            }
            d = null; // no such group yet: the commit makes it, as kafka-consumer-groups.sh --reset-offsets does
        }
        if (d != null && !d.members().isEmpty()) {
            throw new ApiException(409, "group " + id + " has " + d.members().size() + " active member(s): stop its consumers "
                    + "first (offsets of a group in use would be overwritten by its next commit)");
        }
        List<TopicPartition> tps = chosen.stream().map(p -> new TopicPartition(topic, p)).toList();
        Map<TopicPartition, Long> earliest = offsets(tps, OffsetSpec.earliest());
        Map<TopicPartition, Long> latest = offsets(tps, OffsetSpec.latest());
        Map<TopicPartition, Long> target = switch (to) {
            case "earliest" -> earliest;
            case "latest" -> latest;
            case "timestamp" -> offsets(tps, OffsetSpec.forTimestamp(timestamp));
            default -> {
                Map<TopicPartition, Long> m = new HashMap<>();
                tps.forEach(tp -> m.put(tp, offset));
                yield m;
            }
        };
        Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
        for (TopicPartition tp : tps) {
            Long lo = earliest.get(tp);
            Long hi = latest.get(tp);
            Long t = target.get(tp);
            if (lo == null || hi == null || t == null) {
                throw new ApiException(503, tp + " has no leader now: its offsets cannot be read");
            }
            // as kafka-consumer-groups.sh: within the log; no record at or after the timestamp means the end
            long o = t < 0 ? hi : Math.max(lo, Math.min(hi, t));
            commit.put(tp, new OffsetAndMetadata(o));
        }
        await(admin().alterConsumerGroupOffsets(id, commit,
                new org.apache.kafka.clients.admin.AlterConsumerGroupOffsetsOptions().timeoutMs(TIMEOUT_MS)).all(),
                "reset the offsets of group " + id);
        ObjectNode out = JSON.createObjectNode();
        out.put("groupId", id);
        out.put("topic", topic);
        ArrayNode list = out.putArray("offsets");
        tps.forEach(tp -> list.addObject().put("partition", tp.partition()).put("offset", commit.get(tp).offset()));
        return out;
    }

    // ------------------------------------------------------------------------------------------ helpers

    private static String text(JsonNode body, String field, boolean required) {
        JsonNode v = body.get(field);
        if (v == null || v.isNull()) {
            if (required) {
                throw ApiException.badRequest("\"" + field + "\" is missing");
            }
            return null;
        }
        if (!v.isTextual() || v.asText().length() > 1000) {
            throw ApiException.badRequest("\"" + field + "\" must be a string");
        }
        return v.asText();
    }

    /** A whole number field within [min, max] (a JSON number or a string of digits), {@code dflt} when absent. */
    private static long number(JsonNode body, String field, long dflt, long min, long max) {
        JsonNode v = body.get(field);
        if (v == null || v.isNull() || v.isTextual() && v.asText().isBlank()) {
            return dflt;
        }
        if (v.isIntegralNumber() && v.canConvertToLong()) {
            long n = v.asLong();
            if (n < min || n > max) {
                throw ApiException.badRequest(field + " must be between " + min + " and " + max + ", not " + n);
            }
            return n;
        }
        if (v.isTextual()) {
            return Console.Request.parseLong(field, v.asText(), min, max);
        }
        throw ApiException.badRequest(field + " must be a whole number, not " + Console.Request.abbreviate(v.toString()));
    }

    /** The future's value within the deadline; Kafka's errors as HTTP statuses with their message. */
    static <T> T await(KafkaFuture<T> future, String what) {
        try {
            return future.get(TIMEOUT_MS + 1_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ApiException(503, "interrupted while trying to " + what);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new ApiException(504, "timed out trying to " + what);
        } catch (ExecutionException e) {
            throw kafkaError(e.getCause(), what);
        }
    }

    static ApiException kafkaError(Throwable e, String what) {
        String message = "cannot " + what + ": " + e.getMessage();
        if (e instanceof UnknownTopicOrPartitionException || e instanceof GroupIdNotFoundException) {
            return ApiException.notFound(message);
        }
        if (e instanceof TopicExistsException || e instanceof GroupNotEmptyException
                || e instanceof org.apache.kafka.common.errors.UnknownMemberIdException) {
            return new ApiException(409, message);
        }
        if (e instanceof InvalidTopicException || e instanceof InvalidPartitionsException
                || e instanceof InvalidReplicationFactorException || e instanceof InvalidConfigurationException
                || e instanceof InvalidRequestException || e instanceof PolicyViolationException
                || e instanceof org.apache.kafka.common.errors.InvalidConfigurationException
                || e instanceof org.apache.kafka.common.config.ConfigException) {
            return ApiException.badRequest(message);
        }
        if (e instanceof AuthorizationException) {
            return new ApiException(403, message);
        }
        if (e instanceof TimeoutException) {
            return new ApiException(504, message);
        }
        return new ApiException(502, message + " (" + e.getClass().getSimpleName() + ")");
    }

    private String bootstrap() {
        try {
            return host.plaintextBootstrap();
        } catch (IllegalStateException e) {
            throw new ApiException(503, e.getMessage());
        }
    }

    /** The shared Admin client, made on first use. */
    private Admin admin() {
        synchronized (adminLock) {
            if (closed) {
                throw new ApiException(503, "the admin listener is closing");
            }
            if (admin == null) {
                Map<String, Object> cfg = new HashMap<>();
                cfg.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
                cfg.put(AdminClientConfig.CLIENT_ID_CONFIG, "varve-console-" + host.nodeId());
                cfg.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, TIMEOUT_MS);
                cfg.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, TIMEOUT_MS);
                admin = Admin.create(cfg);
            }
            return admin;
        }
    }

    @Override
    public void close() {
        Admin a;
        synchronized (adminLock) {
            closed = true;
            a = admin;
            admin = null;
        }
        if (a != null) {
            a.close(Duration.ofSeconds(5));
        }
    }
}
