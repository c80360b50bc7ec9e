package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.ConfigRecord;
import dev.varve.metadata.MetadataRecord.PartitionRecord;
import dev.varve.metadata.MetadataRecord.RemoveTopic;
import dev.varve.metadata.MetadataRecord.TopicRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * CreateTopics, DeleteTopics and CreatePartitions decisions, validated the way Kafka's controller does
 * (names, partition counts, replication factors, manual assignments, configs) and placed by
 * {@link ReplicaPlacement}. Topic ids come from the injected supplier (random in production, seeded in
 * simulations). Thread-safe if the id supplier is.
 */
public final class TopicControl {
    /** Upper bound on partitions of one topic, so a bad request cannot exhaust the controller's memory. */
    public static final int MAX_PARTITIONS_PER_TOPIC = 100_000;

    /** Checks topic config overrides (the broker passes its {@code TopicConfigs} rules); throws an {@link ApiException}. */
    @FunctionalInterface
    public interface TopicConfigValidator {
        void validate(String topic, Map<String, String> configs);
    }

    /**
     * One topic of CreateTopics. {@code numPartitions}/{@code replicationFactor} -1 mean the defaults;
     * {@code assignments} (in request order, may be empty) replaces placement and then both must be -1
     * (see {@link ManualAssignments}).
     */
    public record CreatableTopic(String name, int numPartitions, short replicationFactor,
                                 List<ManualAssignments.PartitionReplicas> assignments, Map<String, String> configs) {
        public CreatableTopic {
            assignments = assignments == null ? List.of() : List.copyOf(assignments);
            configs = configs == null ? Map.of() : java.util.Collections.unmodifiableMap(new TreeMap<>(configs)); // null values kept for validation
        }
    }

    public record CreateTopicResult(String name, Uuid topicId, ApiError error, int numPartitions, short replicationFactor) {
    }

    /** One topic of CreatePartitions: the new total {@code count}, optional assignments for the new partitions only. */
    public record CreatePartitionsTopic(String name, int count, List<List<Integer>> assignments) {
        public CreatePartitionsTopic {
            assignments = assignments == null ? null : List.copyOf(assignments);
        }
    }

    private final ControllerConfig config;
    private final Supplier<Uuid> topicIds;
    private final TopicConfigValidator configValidator;

    public TopicControl(ControllerConfig config, Supplier<Uuid> topicIds, TopicConfigValidator configValidator) {
        this.config = config;
        this.topicIds = topicIds;
        this.configValidator = configValidator;
    }

    /** Validates and (unless {@code validateOnly}) creates topics; one result per requested topic, in order. */
    public ControllerResult<List<CreateTopicResult>> createTopics(MetadataImage image, List<CreatableTopic> topics,
                                                                  boolean validateOnly) {
        List<MetadataRecord> records = new ArrayList<>();
        List<CreateTopicResult> results = new ArrayList<>();
        ReplicaPlacement placement = ReplicaPlacement.forImage(image);
        Set<String> seen = new HashSet<>();
        Set<String> duplicates = new HashSet<>();
        for (CreatableTopic t : topics) {
            if (!seen.add(t.name())) {
                duplicates.add(t.name());
            }
        }
        Set<String> created = new HashSet<>();
        for (CreatableTopic t : topics) {
            if (duplicates.contains(t.name())) {
                results.add(failed(t.name(), new ApiError(Errors.INVALID_REQUEST, "Duplicate topic name.")));
                continue;
            }
            try {
                List<List<Integer>> assignment = validateAndPlace(image, t, created, placement);
                Uuid id = validateOnly ? Uuid.ZERO_UUID : newTopicId(image);
                if (!validateOnly) {
                    records.add(new TopicRecord(t.name(), id));
                    t.configs().forEach((k, v) -> records.add(new ConfigRecord(ConfigResource.Type.TOPIC, t.name(), k, v)));
                    for (int p = 0; p < assignment.size(); p++) {
                        records.add(newPartition(image, id, p, assignment.get(p)));
                    }
                }
                created.add(t.name());
                results.add(new CreateTopicResult(t.name(), id, ApiError.NONE, assignment.size(), (short) assignment.get(0).size()));
            } catch (ApiException e) {
                results.add(failed(t.name(), ApiError.fromThrowable(e)));
            }
        }
        return new ControllerResult<>(records, results);
    }

    private List<List<Integer>> validateAndPlace(MetadataImage image, CreatableTopic t, Set<String> created,
                                                 ReplicaPlacement placement) {
        Topic.validate(t.name());
        if (image.topic(t.name()).isPresent() || created.contains(t.name())) {
            throw new org.apache.kafka.common.errors.TopicExistsException("Topic '" + t.name() + "' already exists.");
        }
        if (Topic.hasCollisionChars(t.name())) {
            Set<String> existing = new HashSet<>(image.topicsByName().keySet());
            existing.addAll(created);
            for (String other : existing) {
                if (Topic.hasCollision(t.name(), other)) {
                    throw new org.apache.kafka.common.errors.InvalidTopicException("Topic '" + t.name()
                            + "' collides with existing topic: " + other);
                }
            }
        }
        validateConfigs(t.name(), t.configs());
        if (!t.assignments().isEmpty()) {
            List<List<Integer>> out = ManualAssignments.forNewTopic(t.numPartitions(), t.replicationFactor(), t.assignments(),
                    ManualAssignments.Brokers.of(image));
            if (out.size() > MAX_PARTITIONS_PER_TOPIC) {
                throw new org.apache.kafka.common.errors.InvalidPartitionsException("Number of partitions " + out.size()
                        + " is above the limit of " + MAX_PARTITIONS_PER_TOPIC + ".");
            }
            return out;
        }
        int partitions = t.numPartitions() == -1 ? config.defaultNumPartitions() : t.numPartitions();
        if (partitions < 1) {
            throw new org.apache.kafka.common.errors.InvalidPartitionsException("Number of partitions was set to an invalid non-positive value.");
        }
        if (partitions > MAX_PARTITIONS_PER_TOPIC) {
            throw new org.apache.kafka.common.errors.InvalidPartitionsException("Number of partitions " + partitions
                    + " is above the limit of " + MAX_PARTITIONS_PER_TOPIC + ".");
        }
        short rf = t.replicationFactor() == -1 ? config.defaultReplicationFactor() : t.replicationFactor();
        if (rf < 1) {
            throw new org.apache.kafka.common.errors.InvalidReplicationFactorException(
                    "Replication factor must be larger than 0, or -1 to use the default value.");
        }
        return placement.place(partitions, rf);
    }

    /**
     * Checks a topic's config overrides as CreateTopics does: no null values, {@code min.insync.replicas}
     * at least 1, {@code unclean.leader.election.enable} a boolean, then the injected validator.
     *
     * @throws ApiException (INVALID_CONFIG and the like) naming the offending key
     */
    void validateConfigs(String topic, Map<String, String> configs) {
        for (Map.Entry<String, String> e : configs.entrySet()) {
            if (e.getValue() == null) {
                throw new InvalidConfigurationException("Null value not supported for topic configs: " + e.getKey());
            }
        }
        String minIsr = configs.get(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG);
        if (minIsr != null) {
            try {
                if (Integer.parseInt(minIsr.trim()) < 1) {
                    throw new NumberFormatException();
                }
            } catch (NumberFormatException ex) {
                throw new InvalidConfigurationException("Invalid value " + minIsr + " for configuration "
                        + TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG + ": must be at least 1");
            }
        }
        String unclean = configs.get(TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG);
        if (unclean != null && !unclean.trim().equalsIgnoreCase("true") && !unclean.trim().equalsIgnoreCase("false")) {
            throw new InvalidConfigurationException("Invalid value " + unclean + " for configuration "
                    + TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG + ": Expected value to be either true or false");
        }
        configValidator.validate(topic, configs);
    }

    /** A new partition: the eligible replicas form the ISR, the first of them leads; epochs start at 0. */
    private static PartitionRecord newPartition(MetadataImage image, Uuid topicId, int partition, List<Integer> replicas) {
        List<Integer> isr = ManualAssignments.initialIsr(replicas, ManualAssignments.Brokers.of(image));
        int leader = isr.isEmpty() ? MetadataRecord.NO_LEADER : isr.get(0);
        return new PartitionRecord(topicId, partition, replicas, isr, List.of(), List.of(), leader, 0, 0);
    }

    private Uuid newTopicId(MetadataImage image) {
        for (int attempt = 0; attempt < 100; attempt++) {
            Uuid id = topicIds.get();
            if (!Uuid.RESERVED.contains(id) && !id.toString().startsWith("-") && image.topic(id).isEmpty()) {
                return id;
            }
        }
        throw new IllegalStateException("topic id supplier keeps returning reserved or used ids");
    }

    private static CreateTopicResult failed(String name, ApiError error) {
        return new CreateTopicResult(name, Uuid.ZERO_UUID, error, -1, (short) -1);
    }

    /**
     * DeleteTopics by name. UNKNOWN_TOPIC_OR_PARTITION for a missing topic; TOPIC_DELETION_DISABLED when
     * {@code delete.topic.enable} is false. The topic's partitions and config overrides go with it.
     */
    public ControllerResult<Map<String, ApiError>> deleteTopics(MetadataImage image, List<String> names) {
        List<MetadataRecord> records = new ArrayList<>();
        Map<String, ApiError> results = new TreeMap<>();
        for (String name : names) {
            TopicImage t = image.topic(name).orElse(null);
            ApiError e = checkDelete(t, Errors.UNKNOWN_TOPIC_OR_PARTITION, name);
            if (e.isSuccess() && !results.containsKey(name)) {
                records.add(new RemoveTopic(t.id()));
            }
            results.putIfAbsent(name, e);
        }
        return new ControllerResult<>(records, results);
    }

    /** DeleteTopics by id (v6+). UNKNOWN_TOPIC_ID for a missing topic. */
    public ControllerResult<Map<Uuid, ApiError>> deleteTopicsById(MetadataImage image, List<Uuid> ids) {
        List<MetadataRecord> records = new ArrayList<>();
        Map<Uuid, ApiError> results = new java.util.LinkedHashMap<>();
        for (Uuid id : ids) {
            TopicImage t = image.topic(id).orElse(null);
            ApiError e = checkDelete(t, Errors.UNKNOWN_TOPIC_ID, id.toString());
            if (e.isSuccess() && !results.containsKey(id)) {
                records.add(new RemoveTopic(id));
            }
            results.putIfAbsent(id, e);
        }
        return new ControllerResult<>(records, results);
    }

    private ApiError checkDelete(TopicImage t, Errors unknown, String what) {
        if (!config.deleteTopicEnable()) {
            return new ApiError(Errors.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.");
        }
        return t == null ? new ApiError(unknown, "Topic " + what + " does not exist.") : ApiError.NONE;
    }

    /**
     * CreatePartitions: grows topics to {@code count} partitions, with the replication factor of
     * partition 0, placed like new topics unless assignments for the new partitions are given.
     */
    public ControllerResult<Map<String, ApiError>> createPartitions(MetadataImage image, List<CreatePartitionsTopic> topics,
                                                                    boolean validateOnly) {
        List<MetadataRecord> records = new ArrayList<>();
        Map<String, ApiError> results = new TreeMap<>();
        ReplicaPlacement placement = ReplicaPlacement.forImage(image);
        Set<String> seen = new HashSet<>();
        Set<String> duplicates = new HashSet<>();
        topics.forEach(t -> {
            if (!seen.add(t.name())) {
                duplicates.add(t.name());
            }
        });
        for (CreatePartitionsTopic req : topics) {
            if (duplicates.contains(req.name())) {
                results.put(req.name(), new ApiError(Errors.INVALID_REQUEST, "Duplicate topic name."));
                continue;
            }
            try {
                List<MetadataRecord> added = growTopic(image, req, placement);
                if (!validateOnly) {
                    records.addAll(added);
                }
                results.put(req.name(), ApiError.NONE);
            } catch (ApiException e) {
                results.put(req.name(), ApiError.fromThrowable(e));
            }
        }
        return new ControllerResult<>(records, results);
    }

    private List<MetadataRecord> growTopic(MetadataImage image, CreatePartitionsTopic req, ReplicaPlacement placement) {
        TopicImage t = image.topic(req.name()).orElseThrow(() ->
                new org.apache.kafka.common.errors.UnknownTopicOrPartitionException("Topic '" + req.name() + "' does not exist."));
        int current = t.partitionCount();
        if (req.count() < current) {
            throw new org.apache.kafka.common.errors.InvalidPartitionsException("The topic " + req.name() + " currently has "
                    + current + " partition(s); " + req.count() + " would not be an increase.");
        }
        if (req.count() == current) {
            throw new org.apache.kafka.common.errors.InvalidPartitionsException("Topic already has " + current + " partition(s).");
        }
        if (req.count() > MAX_PARTITIONS_PER_TOPIC) {
            throw new org.apache.kafka.common.errors.InvalidPartitionsException("Number of partitions " + req.count()
                    + " is above the limit of " + MAX_PARTITIONS_PER_TOPIC + ".");
        }
        int rf = current == 0 ? config.defaultReplicationFactor() : t.partition(0).targetReplicas().size();
        int adding = req.count() - current;
        List<List<Integer>> assignment;
        if (req.assignments() != null) {
            assignment = ManualAssignments.forNewPartitions(current, req.count(), rf, req.assignments(),
                    ManualAssignments.Brokers.of(image));
        } else {
            assignment = placement.place(adding, rf);
        }
        List<MetadataRecord> out = new ArrayList<>(adding);
        for (int i = 0; i < adding; i++) {
            out.add(newPartition(image, t.id(), current + i, assignment.get(i)));
        }
        return out;
    }
}
