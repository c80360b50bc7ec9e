package dev.varve.metadata;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;

import java.util.List;
import java.util.Objects;

/**
 * One change to the cluster metadata. The controller decides changes as lists of these records; one
 * list is one Raft entry (serialized by {@link MetadataRecordSerde}); every broker replays committed
 * entries, in log order, into its {@link MetadataImage}. A snapshot is the record list
 * {@link MetadataImage#toRecords()} of an image.
 *
 * <p>Records are immutable values (lists are copied on construction) and check their own shape in the
 * constructor ({@link IllegalArgumentException}); whether a record makes sense against the current
 * image is the controller's business and is checked again by {@link MetadataImage#apply}.
 *
 * <p>Type ids (the serialized form) are fixed forever: never renumber, only append.
 */
public sealed interface MetadataRecord {

    /** No leader: the partition is offline. */
    int NO_LEADER = -1;
    /** In {@link PartitionChange#leader()}: the leader field is not changed by this record. */
    int NO_LEADER_CHANGE = -2;

    /** The record's type id in the serialized form. */
    short typeId();

    /** One listener a broker advertises: Kafka's listener name, host and port. */
    record Endpoint(String name, String host, int port) {
        public Endpoint {
            requireText(name, "listener name");
            requireText(host, "host");
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port out of range: " + port);
            }
        }
    }

    /**
     * A broker registered (or re-registered) with a new incarnation. The registration replaces any
     * earlier one of the same id; a new registration starts fenced and not in controlled shutdown.
     *
     * @param incarnationId random id the broker process picks at start; a new one means a new process
     * @param brokerEpoch   increases with every registration of this broker id
     * @param rack          {@code broker.rack}, or null
     * @param fenced        true for every registration the controller writes; snapshots may carry false
     */
    record RegisterBroker(int brokerId, Uuid incarnationId, long brokerEpoch, List<Endpoint> endpoints,
                          String rack, boolean fenced) implements MetadataRecord {
        public RegisterBroker {
            requireBrokerId(brokerId);
            Objects.requireNonNull(incarnationId, "incarnationId");
            requireEpoch(brokerEpoch);
            endpoints = List.copyOf(endpoints);
        }

        @Override
        public short typeId() {
            return 1;
        }
    }

    /** The broker may no longer lead or join ISRs (session expired, or it asked to be fenced). Also ends a controlled shutdown. */
    record FenceBroker(int brokerId, long brokerEpoch) implements MetadataRecord {
        public FenceBroker {
            requireBrokerId(brokerId);
            requireEpoch(brokerEpoch);
        }

        @Override
        public short typeId() {
            return 2;
        }
    }

    /** The broker caught up with the metadata log and may lead and join ISRs again. */
    record UnfenceBroker(int brokerId, long brokerEpoch) implements MetadataRecord {
        public UnfenceBroker {
            requireBrokerId(brokerId);
            requireEpoch(brokerEpoch);
        }

        @Override
        public short typeId() {
            return 3;
        }
    }

    /** The broker asked to shut down: it is no longer eligible as leader or new ISR member. */
    record BeginControlledShutdown(int brokerId, long brokerEpoch) implements MetadataRecord {
        public BeginControlledShutdown {
            requireBrokerId(brokerId);
            requireEpoch(brokerEpoch);
        }

        @Override
        public short typeId() {
            return 4;
        }
    }

    /** The broker id is removed from the cluster. */
    record UnregisterBroker(int brokerId, long brokerEpoch) implements MetadataRecord {
        public UnregisterBroker {
            requireBrokerId(brokerId);
            requireEpoch(brokerEpoch);
        }

        @Override
        public short typeId() {
            return 5;
        }
    }

    /** A topic exists with this name and id; its partitions follow as {@link PartitionRecord}s. */
    record TopicRecord(String name, Uuid topicId) implements MetadataRecord {
        public TopicRecord {
            requireText(name, "topic name");
            requireTopicId(topicId);
        }

        @Override
        public short typeId() {
            return 6;
        }
    }

    /**
     * The full state of one partition (creation, or a snapshot). Partitions of a topic are added in
     * index order: index {@code n} may only be written once {@code 0..n-1} exist.
     *
     * @param elr          eligible leader replicas (KIP-966): outside the ISR but holding every record
     *                     acknowledged to an {@code acks=all} producer
     * @param lastKnownElr replicas that were the last ISR/ELR members but restarted after an unclean
     *                     shutdown: electable only when ISR and ELR are both empty (see {@link LeaderElection})
     * @param addingReplicas   replicas an ongoing reassignment (KIP-455) is adding; empty when none
     * @param removingReplicas replicas an ongoing reassignment is removing; empty when none
     */
    record PartitionRecord(Uuid topicId, int partition, List<Integer> replicas, List<Integer> isr,
                           List<Integer> elr, List<Integer> lastKnownElr, int leader, int leaderEpoch,
                           int partitionEpoch, List<Integer> addingReplicas, List<Integer> removingReplicas)
            implements MetadataRecord {
        public PartitionRecord {
            requireTopicId(topicId);
            if (partition < 0) {
                throw new IllegalArgumentException("negative partition " + partition);
            }
            replicas = List.copyOf(replicas);
            isr = List.copyOf(isr);
            elr = List.copyOf(elr);
            lastKnownElr = List.copyOf(lastKnownElr);
            if (leader < NO_LEADER) {
                throw new IllegalArgumentException("bad leader " + leader);
            }
            if (leaderEpoch < 0 || partitionEpoch < 0) {
                throw new IllegalArgumentException("negative epoch");
            }
            addingReplicas = List.copyOf(addingReplicas);
            removingReplicas = List.copyOf(removingReplicas);
        }

        /** A partition with no reassignment in progress. */
        public PartitionRecord(Uuid topicId, int partition, List<Integer> replicas, List<Integer> isr, List<Integer> elr,
                               List<Integer> lastKnownElr, int leader, int leaderEpoch, int partitionEpoch) {
            this(topicId, partition, replicas, isr, elr, lastKnownElr, leader, leaderEpoch, partitionEpoch, List.of(), List.of());
        }

        @Override
        public short typeId() {
            return 7;
        }
    }

    /**
     * A change to one partition: only the fields that change are set (lists null, leader
     * {@link #NO_LEADER_CHANGE} when unchanged). Applying it always bumps the partition epoch by one,
     * and bumps the leader epoch by one when {@code leader} is set (also to the current leader: the
     * controller does that when a reassignment drops replicas, so they are fenced).
     */
    record PartitionChange(Uuid topicId, int partition, int leader, List<Integer> replicas, List<Integer> isr,
                           List<Integer> elr, List<Integer> lastKnownElr, List<Integer> addingReplicas,
                           List<Integer> removingReplicas) implements MetadataRecord {
        public PartitionChange {
            requireTopicId(topicId);
            if (partition < 0) {
                throw new IllegalArgumentException("negative partition " + partition);
            }
            if (leader < NO_LEADER_CHANGE) {
                throw new IllegalArgumentException("bad leader " + leader);
            }
            replicas = copyOrNull(replicas);
            isr = copyOrNull(isr);
            elr = copyOrNull(elr);
            lastKnownElr = copyOrNull(lastKnownElr);
            addingReplicas = copyOrNull(addingReplicas);
            removingReplicas = copyOrNull(removingReplicas);
        }

        /** A change that leaves any reassignment as it is. */
        public PartitionChange(Uuid topicId, int partition, int leader, List<Integer> replicas, List<Integer> isr,
                               List<Integer> elr, List<Integer> lastKnownElr) {
            this(topicId, partition, leader, replicas, isr, elr, lastKnownElr, null, null);
        }

        public boolean changesLeader() {
            return leader != NO_LEADER_CHANGE;
        }

        @Override
        public short typeId() {
            return 8;
        }
    }

    /** The topic, its partitions and its config overrides are gone. */
    record RemoveTopic(Uuid topicId) implements MetadataRecord {
        public RemoveTopic {
            requireTopicId(topicId);
        }

        @Override
        public short typeId() {
            return 9;
        }
    }

    /**
     * One dynamic config key of a broker (name is the broker id, or "" for the cluster-wide default), of a
     * topic (name is the topic name) or of a consumer or share group (name is the group id, never empty:
     * KIP-848/932 group configs). A null value deletes the key.
     */
    record ConfigRecord(ConfigResource.Type resourceType, String resourceName, String key, String value)
            implements MetadataRecord {
        public ConfigRecord {
            if (resourceType != ConfigResource.Type.BROKER && resourceType != ConfigResource.Type.TOPIC
                    && resourceType != ConfigResource.Type.GROUP) {
                throw new IllegalArgumentException("unsupported config resource type " + resourceType);
            }
            Objects.requireNonNull(resourceName, "resourceName");
            requireText(key, "config key");
        }

        public ConfigResource resource() {
            return new ConfigResource(resourceType, resourceName);
        }

        @Override
        public short typeId() {
            return 10;
        }
    }

    /**
     * Producer ids below {@code nextProducerId} are handed out; the block ending there went to
     * {@code brokerId} (-1 in snapshots). Never decreases.
     */
    record ProducerIdBlock(int brokerId, long brokerEpoch, long nextProducerId) implements MetadataRecord {
        public ProducerIdBlock {
            if (nextProducerId < 0) {
                throw new IllegalArgumentException("negative nextProducerId " + nextProducerId);
            }
        }

        @Override
        public short typeId() {
            return 11;
        }
    }

    /**
     * The answer a controller command got, committed in the same Raft entry as the records it decided,
     * so that a retry of that command (same {@code requestId}) is answered with it instead of being
     * decided again, by this controller or the next one. Changes nothing in the image and is not part
     * of snapshots; {@code MetadataLoader} keeps the most recent ones.
     *
     * @param response the encoded {@code XxxResponseData}, at the version of the request
     */
    record CommandReply(Uuid requestId, byte[] response) implements MetadataRecord {
        public CommandReply {
            if (requestId == null || Uuid.ZERO_UUID.equals(requestId)) {
                throw new IllegalArgumentException("request id must be set");
            }
            response = response.clone();
        }

        @Override
        public byte[] response() {
            return response.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof CommandReply c && requestId.equals(c.requestId) && java.util.Arrays.equals(response, c.response);
        }

        @Override
        public int hashCode() {
            return 31 * requestId.hashCode() + java.util.Arrays.hashCode(response);
        }

        @Override
        public String toString() {
            return "CommandReply(" + requestId + ", " + response.length + " bytes)";
        }

        @Override
        public short typeId() {
            return 12;
        }
    }

    private static List<Integer> copyOrNull(List<Integer> list) {
        return list == null ? null : List.copyOf(list);
    }

    private static void requireText(String s, String what) {
        if (s == null || s.isEmpty()) {
            throw new IllegalArgumentException(what + " must not be empty");
        }
    }

    private static void requireBrokerId(int id) {
        if (id < 0) {
            throw new IllegalArgumentException("negative broker id " + id);
        }
    }

    private static void requireEpoch(long epoch) {
        if (epoch < 0) {
            throw new IllegalArgumentException("negative broker epoch " + epoch);
        }
    }

    private static void requireTopicId(Uuid id) {
        if (id == null || Uuid.ZERO_UUID.equals(id)) {
            throw new IllegalArgumentException("topic id must be set");
        }
    }

    /**
     * Opens a metadata transaction (Kafka's BeginTransactionRecord, KIP-868): the records of one decision
     * too large for one Raft entry follow over several entries, and no node applies any of them until the
     * {@link EndTransaction}; an {@link AbortTransaction} (written by the next active controller when the
     * one that began it failed before the end) discards them. Never part of snapshots.
     *
     * @param name what the transaction is, for logs
     */
    record BeginTransaction(String name) implements MetadataRecord {
        public BeginTransaction {
            name = name == null ? "" : name;
        }

        @Override
        public short typeId() {
            return 13;
        }
    }

    /** Closes the open metadata transaction: its records apply now, together. */
    record EndTransaction() implements MetadataRecord {
        @Override
        public short typeId() {
            return 14;
        }
    }

    /** Discards the open metadata transaction's records (its controller failed before the end). */
    record AbortTransaction(String reason) implements MetadataRecord {
        public AbortTransaction {
            reason = reason == null ? "" : reason;
        }

        @Override
        public short typeId() {
            return 15;
        }
    }
    /**
     * A user's SCRAM credential for one mechanism (Kafka's UserScramCredentialRecord): what the server
     * side of a SCRAM exchange needs, never the password. Replaces the user's earlier credential of the
     * mechanism.
     *
     * @param mechanism Kafka's mechanism type: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512
     */
    record UserScramCredential(String name, byte mechanism, byte[] salt, byte[] storedKey, byte[] serverKey,
                               int iterations) implements MetadataRecord {
        public UserScramCredential {
            requireText(name, "user name");
            requireScramMechanism(mechanism);
            java.util.Objects.requireNonNull(salt, "salt");
            java.util.Objects.requireNonNull(storedKey, "storedKey");
            java.util.Objects.requireNonNull(serverKey, "serverKey");
            salt = salt.clone();
            storedKey = storedKey.clone();
            serverKey = serverKey.clone();
            if (iterations <= 0) {
                throw new IllegalArgumentException("non-positive iterations " + iterations);
            }
        }

        @Override
        public byte[] salt() {
            return salt.clone();
        }

        @Override
        public byte[] storedKey() {
            return storedKey.clone();
        }

        @Override
        public byte[] serverKey() {
            return serverKey.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof UserScramCredential c && name.equals(c.name) && mechanism == c.mechanism
                    && iterations == c.iterations && java.util.Arrays.equals(salt, c.salt)
                    && java.util.Arrays.equals(storedKey, c.storedKey) && java.util.Arrays.equals(serverKey, c.serverKey);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(name, mechanism, iterations, java.util.Arrays.hashCode(salt),
                    java.util.Arrays.hashCode(storedKey), java.util.Arrays.hashCode(serverKey));
        }

        @Override
        public String toString() {
            return "UserScramCredential(name=" + name + ", mechanism=" + mechanism + ", iterations=" + iterations + ")";
        }

        @Override
        public short typeId() {
            return 16;
        }
    }

    /** Removes a user's SCRAM credential for one mechanism (Kafka's RemoveUserScramCredentialRecord). */
    record RemoveUserScramCredential(String name, byte mechanism) implements MetadataRecord {
        public RemoveUserScramCredential {
            requireText(name, "user name");
            requireScramMechanism(mechanism);
        }

        @Override
        public short typeId() {
            return 17;
        }
    }

    /**
     * One ACL (Kafka's AccessControlEntryRecord): a binding of a resource pattern to a principal, host,
     * operation and permission, under an id of its own. Codes are Kafka's ({@code ResourceType},
     * {@code PatternType}, {@code AclOperation}, {@code AclPermissionType}).
     */
    record AclRecord(Uuid id, byte resourceType, String resourceName, byte patternType, String principal, String host,
                     byte operation, byte permissionType) implements MetadataRecord {
        public AclRecord {
            Objects.requireNonNull(id, "id");
            requireText(resourceName, "resource name");
            requireText(principal, "principal");
            requireText(host, "host");
        }

        public static AclRecord of(Uuid id, org.apache.kafka.common.acl.AclBinding b) {
            return new AclRecord(id, b.pattern().resourceType().code(), b.pattern().name(), b.pattern().patternType().code(),
                    b.entry().principal(), b.entry().host(), b.entry().operation().code(), b.entry().permissionType().code());
        }

        public org.apache.kafka.common.acl.AclBinding binding() {
            return new org.apache.kafka.common.acl.AclBinding(
                    new org.apache.kafka.common.resource.ResourcePattern(
                            org.apache.kafka.common.resource.ResourceType.fromCode(resourceType), resourceName,
                            org.apache.kafka.common.resource.PatternType.fromCode(patternType)),
                    new org.apache.kafka.common.acl.AccessControlEntry(principal, host,
                            org.apache.kafka.common.acl.AclOperation.fromCode(operation),
                            org.apache.kafka.common.acl.AclPermissionType.fromCode(permissionType)));
        }

        @Override
        public short typeId() {
            return 18;
        }
    }

    /** Removes the ACL of {@code id} (Kafka's RemoveAccessControlEntryRecord). */
    record RemoveAcl(Uuid id) implements MetadataRecord {
        public RemoveAcl {
            Objects.requireNonNull(id, "id");
        }

        @Override
        public short typeId() {
            return 19;
        }
    }

    /**
     * Sets ({@code remove} false) or removes one client quota of an entity (Kafka's QuotaRecord): the
     * entity maps each of its types (user, client-id, ip) to a name, or to null for the type's default.
     */
    record ClientQuota(java.util.SortedMap<String, String> entity, String key, double value, boolean remove)
            implements MetadataRecord {
        public ClientQuota {
            if (entity == null || entity.isEmpty()) {
                throw new IllegalArgumentException("a quota entity has at least one type");
            }
            entity = java.util.Collections.unmodifiableSortedMap(new java.util.TreeMap<>(entity));
            requireText(key, "quota key");
        }

        @Override
        public short typeId() {
            return 20;
        }
    }

    /**
     * Finalizes a feature of the cluster at a level (Kafka's FeatureLevelRecord; level 0 turns it off),
     * with the features' epoch after the change, which grows with every change so clients can tell a
     * newer view of the features from an older one.
     */
    record FeatureLevel(String name, short level, long epoch) implements MetadataRecord {
        public FeatureLevel {
            requireText(name, "feature name");
            if (level < 0) {
                throw new IllegalArgumentException("feature level " + level + " < 0");
            }
            if (epoch < 1) {
                throw new IllegalArgumentException("features epoch " + epoch + " < 1");
            }
        }

        @Override
        public short typeId() {
            return 22;
        }
    }

    /**
     * A controller announced itself to the active controller (Kafka's ControllerRegistrationRecord, with the
     * directory id Kafka keeps for voters in its VotersRecord): its Raft endpoint and the {@code directory.id}
     * of its metadata log directory. Replaces an earlier registration of the same id. Whether the controller
     * votes is the Raft configuration's business, not this record's.
     */
    record ControllerRegistration(int controllerId, Uuid directoryId, Endpoint endpoint) implements MetadataRecord {
        public ControllerRegistration {
            requireBrokerId(controllerId);
            Objects.requireNonNull(directoryId, "directoryId");
            Objects.requireNonNull(endpoint, "endpoint");
        }

        @Override
        public short typeId() {
            return 21;
        }
    }

    private static void requireScramMechanism(byte mechanism) {
        if (mechanism != 1 && mechanism != 2) {
            throw new IllegalArgumentException("unknown SCRAM mechanism type " + mechanism);
        }
    }
}
