package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.BeginControlledShutdown;
import dev.varve.metadata.MetadataRecord.ConfigRecord;
import dev.varve.metadata.MetadataRecord.FenceBroker;
import dev.varve.metadata.MetadataRecord.PartitionChange;
import dev.varve.metadata.MetadataRecord.PartitionRecord;
import dev.varve.metadata.MetadataRecord.ProducerIdBlock;
import dev.varve.metadata.MetadataRecord.RegisterBroker;
import dev.varve.metadata.MetadataRecord.RemoveTopic;
import dev.varve.metadata.MetadataRecord.TopicRecord;
import dev.varve.metadata.MetadataRecord.UnfenceBroker;
import dev.varve.metadata.MetadataRecord.UnregisterBroker;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * The cluster metadata as of one Raft log index: brokers, topics with their partitions, dynamic
 * configs, the producer-id high mark and the users' SCRAM credentials. Immutable and therefore safe to share between threads; a
 * broker publishes each new image with one volatile write and readers never lock.
 *
 * <p>{@link #apply} returns a new image and shares everything a batch does not touch: maps are
 * copied once per batch only when the batch changes them (O(brokers) or O(topics) references), and a
 * topic's partition list copies only the 32-partition chunks that change ({@link PartitionList}).
 *
 * <p>{@link #toRecords()} is the snapshot form: {@code EMPTY.apply(offset, image.toRecords())} equals
 * {@code image} (offset included).
 */
public final class MetadataImage {
    /** The image before the first record: offset -1. */
    public static final MetadataImage EMPTY = new MetadataImage(-1, Map.of(), Map.of(), Map.of(), Map.of(), 0,
            ScramCredentials.EMPTY, Acls.EMPTY, ClientQuotas.EMPTY, Map.of(), FinalizedFeatures.EMPTY);
    /** The resource holding cluster-wide broker config defaults (Kafka's empty broker name). */
    public static final ConfigResource CLUSTER_DEFAULTS = new ConfigResource(ConfigResource.Type.BROKER, "");

    private final long offset;
    private final Map<Integer, BrokerRegistration> brokers;
    private final Map<Uuid, TopicImage> topicsById;
    private final Map<String, TopicImage> topicsByName;
    private final Map<ConfigResource, Map<String, String>> configs;
    private final long nextProducerId;
    private final ScramCredentials scram;
    private final Acls acls;
    private final ClientQuotas quotas;
    private final Map<Integer, MetadataRecord.ControllerRegistration> controllers;
    private final FinalizedFeatures features;

    private MetadataImage(long offset, Map<Integer, BrokerRegistration> brokers, Map<Uuid, TopicImage> topicsById,
                          Map<String, TopicImage> topicsByName, Map<ConfigResource, Map<String, String>> configs,
                          long nextProducerId, ScramCredentials scram, Acls acls, ClientQuotas quotas,
                          Map<Integer, MetadataRecord.ControllerRegistration> controllers, FinalizedFeatures features) {
        this.offset = offset;
        this.brokers = brokers;
        this.topicsById = topicsById;
        this.topicsByName = topicsByName;
        this.configs = configs;
        this.nextProducerId = nextProducerId;
        this.scram = scram;
        this.acls = acls;
        this.quotas = quotas;
        this.controllers = controllers;
        this.features = features;
    }

    /** Builds an image from a snapshot's records: {@code EMPTY.apply(offset, records)}. */
    public static MetadataImage fromSnapshot(long offset, List<? extends MetadataRecord> records) {
        return EMPTY.apply(offset, records);
    }

    /** The Raft log index of the last entry this image reflects; -1 for {@link #EMPTY}. */
    public long offset() {
        return offset;
    }

    public Optional<BrokerRegistration> broker(int id) {
        return Optional.ofNullable(brokers.get(id));
    }

    /** Registered brokers by id, ascending; unmodifiable. */
    public Map<Integer, BrokerRegistration> brokers() {
        return brokers;
    }

    /** True when the broker is registered, unfenced and not shutting down: it may lead or join an ISR. */
    public boolean isEligible(int brokerId) {
        BrokerRegistration b = brokers.get(brokerId);
        return b != null && b.isEligible();
    }

    public Optional<TopicImage> topic(String name) {
        return Optional.ofNullable(topicsByName.get(name));
    }

    public Optional<TopicImage> topic(Uuid id) {
        return Optional.ofNullable(topicsById.get(id));
    }

    /** Topics by name; unmodifiable. */
    public Map<String, TopicImage> topicsByName() {
        return topicsByName;
    }

    /** Topics by id; unmodifiable. */
    public Map<Uuid, TopicImage> topicsById() {
        return topicsById;
    }

    /** The partition, or null when the topic or partition does not exist. */
    public PartitionState partition(Uuid topicId, int partition) {
        TopicImage t = topicsById.get(topicId);
        return t == null ? null : t.partition(partition);
    }

    /** The dynamic config keys set on a resource (empty when none); unmodifiable. */
    public Map<String, String> configs(ConfigResource resource) {
        return configs.getOrDefault(resource, Map.of());
    }

    /** All resources with dynamic configs; unmodifiable. */
    public Map<ConfigResource, Map<String, String>> allConfigs() {
        return configs;
    }

    /** A topic's override of {@code key}, else the cluster-wide broker default, else null. */
    public String effectiveTopicConfig(String topic, String key) {
        String v = configs(new ConfigResource(ConfigResource.Type.TOPIC, topic)).get(key);
        return v != null ? v : configs(CLUSTER_DEFAULTS).get(key);
    }

    /** The users' SCRAM credentials. */
    public ScramCredentials scram() {
        return scram;
    }

    /** The cluster's client quotas. */
    public ClientQuotas quotas() {
        return quotas;
    }

    /** The controllers that announced themselves (voters and observers of the metadata quorum), by id; unmodifiable. */
    public Map<Integer, MetadataRecord.ControllerRegistration> controllers() {
        return controllers;
    }

    /** The feature levels finalized with UpdateFeatures. */
    public FinalizedFeatures features() {
        return features;
    }

    /** The cluster's ACLs. */
    public Acls acls() {
        return acls;
    }

    /** The first producer id not yet handed out in a block. */
    public long nextProducerId() {
        return nextProducerId;
    }

    /**
     * Applies one committed batch.
     *
     * @param offset  the Raft index of the batch; must not be below {@link #offset()} (equal is allowed so
     *                a controller can project uncommitted records onto its latest image)
     * @throws IllegalStateException when a record contradicts the image (unknown broker or topic, stale
     *                               broker epoch, partition gap, decreasing producer id): a controller bug
     */
    public MetadataImage apply(long offset, List<? extends MetadataRecord> records) {
        if (offset < this.offset) {
            throw new IllegalArgumentException("offset " + offset + " is below the image's " + this.offset);
        }
        ImageDelta delta = new ImageDelta(this);
        for (MetadataRecord r : records) {
            replay(delta, r);
        }
        return delta.build(offset);
    }

    private static void replay(ImageDelta d, MetadataRecord record) {
        if (record instanceof RegisterBroker r) {
            d.putBroker(new BrokerRegistration(r.brokerId(), r.incarnationId(), r.brokerEpoch(), r.endpoints(), r.rack(),
                    r.fenced(), false));
        } else if (record instanceof FenceBroker r) {
            d.putBroker(d.brokerAtEpoch(r.brokerId(), r.brokerEpoch()).withFenced(true));
        } else if (record instanceof UnfenceBroker r) {
            d.putBroker(d.brokerAtEpoch(r.brokerId(), r.brokerEpoch()).withFenced(false));
        } else if (record instanceof BeginControlledShutdown r) {
            d.putBroker(d.brokerAtEpoch(r.brokerId(), r.brokerEpoch()).withControlledShutdown());
        } else if (record instanceof UnregisterBroker r) {
            d.brokerAtEpoch(r.brokerId(), r.brokerEpoch());
            d.removeBroker(r.brokerId());
        } else if (record instanceof TopicRecord r) {
            d.addTopic(r.name(), r.topicId());
        } else if (record instanceof PartitionRecord r) {
            d.partitions(r.topicId()).set(r.partition(), PartitionState.of(r));
        } else if (record instanceof PartitionChange r) {
            PartitionList.Builder b = d.partitions(r.topicId());
            if (r.partition() >= b.size()) {
                throw new IllegalStateException("change to unknown partition " + r.topicId() + "-" + r.partition());
            }
            b.set(r.partition(), b.get(r.partition()).apply(r));
        } else if (record instanceof RemoveTopic r) {
            d.removeTopic(r.topicId());
        } else if (record instanceof ConfigRecord r) {
            d.setConfig(r.resource(), r.key(), r.value());
        } else if (record instanceof ProducerIdBlock r) {
            d.setNextProducerId(r.nextProducerId());
        } else if (record instanceof MetadataRecord.UserScramCredential
                || record instanceof MetadataRecord.RemoveUserScramCredential) {
            d.scram = d.scram.apply(record);
        } else if (record instanceof MetadataRecord.AclRecord || record instanceof MetadataRecord.RemoveAcl) {
            d.acls = d.acls.apply(record);
        } else if (record instanceof MetadataRecord.ClientQuota) {
            d.quotas = d.quotas.apply(record);
        } else if (record instanceof MetadataRecord.ControllerRegistration r) {
            d.putController(r);
        } else if (record instanceof MetadataRecord.FeatureLevel) {
            d.features = d.features.apply(record);
        } else if (record instanceof MetadataRecord.CommandReply || record instanceof MetadataRecord.BeginTransaction
                || record instanceof MetadataRecord.EndTransaction || record instanceof MetadataRecord.AbortTransaction) {
            // an answer kept for retried commands, or transaction bounds (MetadataLoader); not state
        } else {
            throw new IllegalArgumentException("unknown record " + record);
        }
    }

    /** The snapshot form of this image: replaying it onto {@link #EMPTY} at {@link #offset()} gives an equal image. */
    public List<MetadataRecord> toRecords() {
        List<MetadataRecord> out = new ArrayList<>();
        for (BrokerRegistration b : brokers.values()) {
            out.add(new RegisterBroker(b.id(), b.incarnationId(), b.brokerEpoch(), b.endpoints(), b.rack(), b.fenced()));
            if (b.inControlledShutdown()) {
                out.add(new BeginControlledShutdown(b.id(), b.brokerEpoch()));
            }
        }
        for (TopicImage t : new TreeMap<>(topicsByName).values()) {
            out.add(new TopicRecord(t.name(), t.id()));
            for (PartitionState p : t.partitions()) {
                out.add(p.toRecord(t.id()));
            }
        }
        List<ConfigResource> resources = new ArrayList<>(configs.keySet());
        resources.sort(Comparator.comparing((ConfigResource c) -> c.type().id()).thenComparing(ConfigResource::name));
        for (ConfigResource c : resources) {
            new TreeMap<>(configs.get(c)).forEach((k, v) -> out.add(new ConfigRecord(c.type(), c.name(), k, v)));
        }
        if (nextProducerId > 0) {
            out.add(new ProducerIdBlock(-1, -1, nextProducerId));
        }
        out.addAll(scram.toRecords());
        out.addAll(acls.toRecords());
        out.addAll(quotas.toRecords());
        out.addAll(new TreeMap<>(controllers).values());
        out.addAll(features.toRecords());
        return out;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MetadataImage m && offset == m.offset && nextProducerId == m.nextProducerId
                && brokers.equals(m.brokers) && topicsById.equals(m.topicsById) && configs.equals(m.configs)
                && scram.equals(m.scram) && acls.equals(m.acls) && quotas.equals(m.quotas)
                && controllers.equals(m.controllers) && features.equals(m.features);
    }

    @Override
    public int hashCode() {
        return Objects.hash(offset, nextProducerId, brokers, topicsById.keySet(), configs);
    }

    @Override
    public String toString() {
        return "MetadataImage(offset=" + offset + ", brokers=" + brokers.keySet() + ", topics=" + topicsByName.keySet()
                + ", configs=" + configs.size() + ", nextProducerId=" + nextProducerId + ")";
    }

    /** Pending changes of one {@link #apply}: each map is copied on its first write only. Not thread-safe. */
    private static final class ImageDelta {
        private final MetadataImage base;
        private Map<Integer, BrokerRegistration> brokers;
        private final Map<Uuid, String> addedTopics = new HashMap<>();
        private final Map<Uuid, PartitionList.Builder> changedPartitions = new HashMap<>();
        private final Set<String> addedNames = new HashSet<>();
        private final Map<Uuid, String> removedTopics = new HashMap<>();
        private Map<ConfigResource, Map<String, String>> configs;
        private long nextProducerId;
        private ScramCredentials scram;
        private Acls acls;
        private ClientQuotas quotas;
        private Map<Integer, MetadataRecord.ControllerRegistration> controllers;
        private FinalizedFeatures features;

        ImageDelta(MetadataImage base) {
            this.base = base;
            this.nextProducerId = base.nextProducerId;
            this.scram = base.scram;
            this.acls = base.acls;
            this.quotas = base.quotas;
            this.features = base.features;
        }

        void putController(MetadataRecord.ControllerRegistration r) {
            if (controllers == null) {
                controllers = new TreeMap<>(base.controllers);
            }
            controllers.put(r.controllerId(), r);
        }

        BrokerRegistration brokerAtEpoch(int id, long epoch) {
            BrokerRegistration b = (brokers != null ? brokers : base.brokers).get(id);
            if (b == null) {
                throw new IllegalStateException("broker " + id + " is not registered");
            }
            if (b.brokerEpoch() != epoch) {
                throw new IllegalStateException("broker " + id + " has epoch " + b.brokerEpoch() + ", record has " + epoch);
            }
            return b;
        }

        void putBroker(BrokerRegistration b) {
            ownBrokers().put(b.id(), b);
        }

        void removeBroker(int id) {
            ownBrokers().remove(id);
        }

        private Map<Integer, BrokerRegistration> ownBrokers() {
            if (brokers == null) {
                brokers = new TreeMap<>(base.brokers);
            }
            return brokers;
        }

        private String topicName(Uuid id) {
            String added = addedTopics.get(id);
            if (added != null) {
                return added;
            }
            if (removedTopics.containsKey(id)) {
                return null;
            }
            TopicImage t = base.topicsById.get(id);
            return t == null ? null : t.name();
        }

        private boolean nameInUse(String name) {
            if (addedNames.contains(name)) {
                return true;
            }
            TopicImage t = base.topicsByName.get(name);
            return t != null && !removedTopics.containsKey(t.id());
        }

        void addTopic(String name, Uuid id) {
            if (topicName(id) != null) {
                throw new IllegalStateException("topic id " + id + " already exists");
            }
            if (nameInUse(name)) {
                throw new IllegalStateException("topic " + name + " already exists");
            }
            addedTopics.put(id, name);
            addedNames.add(name);
            changedPartitions.put(id, PartitionList.EMPTY.toBuilder());
        }

        PartitionList.Builder partitions(Uuid id) {
            if (topicName(id) == null) {
                throw new IllegalStateException("unknown topic id " + id);
            }
            return changedPartitions.computeIfAbsent(id, k -> base.topicsById.get(k).partitionList().toBuilder());
        }

        void removeTopic(Uuid id) {
            String name = topicName(id);
            if (name == null) {
                throw new IllegalStateException("unknown topic id " + id);
            }
            if (addedTopics.remove(id) != null) {
                addedNames.remove(name);
            }
            changedPartitions.remove(id);
            if (base.topicsById.containsKey(id)) {
                removedTopics.put(id, base.topicsById.get(id).name());
            }
            ownConfigs().remove(new ConfigResource(ConfigResource.Type.TOPIC, name));
        }

        void setConfig(ConfigResource resource, String key, String value) {
            Map<ConfigResource, Map<String, String>> all = ownConfigs();
            Map<String, String> keys = new HashMap<>(all.getOrDefault(resource, Map.of()));
            if (value == null) {
                keys.remove(key);
            } else {
                keys.put(key, value);
            }
            if (keys.isEmpty()) {
                all.remove(resource);
            } else {
                all.put(resource, Collections.unmodifiableMap(keys));
            }
        }

        private Map<ConfigResource, Map<String, String>> ownConfigs() {
            if (configs == null) {
                configs = new HashMap<>(base.configs);
            }
            return configs;
        }

        void setNextProducerId(long next) {
            if (next < nextProducerId) {
                throw new IllegalStateException("producer id high mark would move back from " + nextProducerId + " to " + next);
            }
            nextProducerId = next;
        }

        MetadataImage build(long offset) {
            Map<Uuid, TopicImage> byId = base.topicsById;
            Map<String, TopicImage> byName = base.topicsByName;
            if (!changedPartitions.isEmpty() || !removedTopics.isEmpty()) {
                Map<Uuid, TopicImage> newById = new HashMap<>(base.topicsById);
                Map<String, TopicImage> newByName = new HashMap<>(base.topicsByName);
                removedTopics.forEach((id, name) -> {
                    newById.remove(id);
                    newByName.remove(name);
                });
                changedPartitions.forEach((id, builder) -> {
                    String name = topicName(id);
                    TopicImage t = new TopicImage(name, id, builder.build());
                    newById.put(id, t);
                    newByName.put(name, t);
                });
                byId = Collections.unmodifiableMap(newById);
                byName = Collections.unmodifiableMap(newByName);
            }
            return new MetadataImage(offset,
                    brokers == null ? base.brokers : Collections.unmodifiableMap(brokers),
                    byId, byName,
                    configs == null ? base.configs : Collections.unmodifiableMap(configs),
                    nextProducerId, scram, acls, quotas,
                    controllers == null ? base.controllers : Collections.unmodifiableMap(controllers), features);
        }
    }
}
