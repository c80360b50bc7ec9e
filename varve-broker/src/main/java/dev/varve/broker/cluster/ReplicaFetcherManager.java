package dev.varve.broker.cluster;

import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * The follower side of replication on one broker: which partitions it fetches from which leader, and the
 * {@link ReplicaFetcherThread}s that do it (Kafka's {@code ReplicaFetcherManager}). A partition goes to
 * the thread of its leader broker and fetcher index {@code floorMod(31 * hash(topic) + partition,
 * num.replica.fetchers)}, so a leader gets at most {@code num.replica.fetchers} threads and connections.
 * Threads start when they get their first partition and stop when they lose their last one.
 *
 * <p>The broker drives it from metadata: {@link #addPartitions} when this broker becomes (or stays) a
 * follower of a new leader or epoch, {@link #removePartitions} before it makes a partition a leader,
 * truncates it outside the fetcher or deletes it.
 *
 * <p>Thread-safety: every method is synchronized; threads are started, re-targeted and stopped under
 * that monitor. A fetcher thread never calls back into the manager.
 */
public final class ReplicaFetcherManager implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicaFetcherManager.class);

    /** A leader broker and the endpoint its replicas fetch from (the inter-broker listener). */
    public record Leader(int brokerId, String host, int port) {
        public Leader {
            Objects.requireNonNull(host, "host");
        }
    }

    /**
     * A partition this broker follows.
     *
     * @param tp          the partition
     * @param topicId     its topic id (Fetch v13+ names topics by id; a zero id limits fetches to v12)
     * @param leaderEpoch the leader epoch this broker knows: sent as CurrentLeaderEpoch for fencing
     * @param log         the local replica's log; only the fetcher changes it while the partition is fetched
     */
    public record FollowerPartition(TopicPartition tp, Uuid topicId, int leaderEpoch, PartitionLog log) {
        public FollowerPartition {
            Objects.requireNonNull(tp, "tp");
            Objects.requireNonNull(topicId, "topicId");
            Objects.requireNonNull(log, "log");
        }
    }

    private record FetcherKey(int leaderId, int fetcherId) {
    }

    private final int localBrokerId;
    private final LongSupplier brokerEpoch;
    private final ReplicaFetcherConfig config;
    private final Time time;
    /** Written under the manager's lock; concurrent so that {@link #maxLag} reads it without taking it. */
    private final Map<FetcherKey, ReplicaFetcherThread> fetchers = new java.util.concurrent.ConcurrentHashMap<>();
    /** Which thread each added partition went to. */
    private final Map<TopicPartition, FetcherKey> assignment = new HashMap<>();
    private boolean closed;

    private volatile ReplicationQuotas quotas;

    /** Follower throttles ({@code follower.replication.throttled.*}); none until set. */
    public void setQuotas(ReplicationQuotas quotas) {
        this.quotas = quotas;
    }

    ReplicationQuotas quotas() {
        return quotas;
    }

    private volatile java.util.function.LongConsumer replicatedBytes = bytes -> { };

    /** Told the size of every batch run a follower here appends (Kafka's ReplicationBytesInPerSec). */
    public void setReplicatedBytes(java.util.function.LongConsumer replicatedBytes) {
        this.replicatedBytes = replicatedBytes;
    }

    private volatile java.util.function.Consumer<java.util.Collection<TopicPartition>> highWatermarksMoved = tps -> { };

    /**
     * Told, once per answer, the followed partitions whose high watermark the answer moved: consumer
     * fetches waiting on this follower (KIP-392) must be woken, as Kafka's follower completes its
     * delayed fetches when its high watermark moves.
     */
    public void setHighWatermarksMoved(java.util.function.Consumer<java.util.Collection<TopicPartition>> moved) {
        this.highWatermarksMoved = moved;
    }

    private volatile InterBrokerTransport transport = InterBrokerTransport.PLAINTEXT;

    /** How fetchers connect to leaders (the inter-broker listener's protocol); plaintext until set. */
    public void setTransport(InterBrokerTransport transport) {
        this.transport = transport;
    }

    private volatile Runnable afterTruncation = () -> { };

    /**
     * Run by a fetcher after each leader answer it handled, before fetching more: the log manager
     * writes the recovery-point checkpoint of directories where the answer truncated a log below its
     * recovery point ({@code LogManager.checkpointLoweredRecoveryPoints}), as Kafka does after truncating.
     */
    public void setAfterTruncation(Runnable r) {
        this.afterTruncation = Objects.requireNonNull(r);
    }

    private void afterTruncation() {
        afterTruncation.run();
    }

    public ReplicaFetcherManager(int localBrokerId, LongSupplier brokerEpoch, ReplicaFetcherConfig config, Time time) {
        this.localBrokerId = localBrokerId;
        this.brokerEpoch = Objects.requireNonNull(brokerEpoch, "brokerEpoch");
        this.config = Objects.requireNonNull(config, "config");
        this.time = Objects.requireNonNull(time, "time");
    }

    /** Starts fetching these partitions from leader (replacing any earlier target or epoch of the same partitions). */
    public synchronized void addPartitions(Leader leader, Collection<FollowerPartition> partitions) {
        if (closed) {
            throw new IllegalStateException("the replica fetcher manager is closed");
        }
        if (leader.brokerId() == localBrokerId) {
            throw new IllegalArgumentException("broker " + localBrokerId + " cannot fetch from itself: " + partitions);
        }
        Map<FetcherKey, List<FollowerPartition>> byFetcher = new LinkedHashMap<>();
        for (FollowerPartition p : partitions) {
            FetcherKey key = new FetcherKey(leader.brokerId(), fetcherId(p.tp()));
            FetcherKey previous = assignment.put(p.tp(), key);
            if (previous != null && !previous.equals(key)) {
                // Moves to another leader: the old thread lets go of the log before the new one starts.
                ReplicaFetcherThread old = fetchers.get(previous);
                if (old != null) {
                    old.removePartitions(List.of(p.tp()));
                }
            }
            byFetcher.computeIfAbsent(key, k -> new ArrayList<>()).add(p);
        }
        for (Map.Entry<FetcherKey, List<FollowerPartition>> e : byFetcher.entrySet()) {
            ReplicaFetcherThread thread = fetchers.get(e.getKey());
            List<FollowerPartition> toAdd = new ArrayList<>();
            if (thread != null && !thread.leader().equals(leader)) {
                // Same broker, new endpoint: a new thread (and connection) takes over its partitions.
                LOG.info("leader {} moved from {}:{} to {}:{}", leader.brokerId(), thread.leader().host(),
                        thread.leader().port(), leader.host(), leader.port());
                thread.shutdown();
                toAdd.addAll(thread.targets());
                thread = null;
            }
            if (thread == null) {
                thread = new ReplicaFetcherThread(leader, e.getKey().fetcherId(), localBrokerId, brokerEpoch, config, time,
                        this::quotas, this::afterTruncation, transport);
                thread.setReplicatedBytes(bytes -> replicatedBytes.accept(bytes));
                thread.setHighWatermarksMoved(tps -> highWatermarksMoved.accept(tps));
                fetchers.put(e.getKey(), thread);
                thread.start();
            }
            toAdd.addAll(e.getValue());
            thread.addPartitions(toAdd);
        }
        stopIdleThreads();
    }

    /**
     * Stops fetching them; returns only once no fetcher thread will touch their logs again (so the caller
     * may make the partition a leader, truncate or delete it).
     */
    public synchronized void removePartitions(Collection<TopicPartition> partitions) {
        Map<FetcherKey, List<TopicPartition>> byFetcher = new HashMap<>();
        for (TopicPartition tp : partitions) {
            FetcherKey key = assignment.remove(tp);
            if (key != null) {
                byFetcher.computeIfAbsent(key, k -> new ArrayList<>()).add(tp);
            }
        }
        byFetcher.forEach((key, tps) -> {
            ReplicaFetcherThread thread = fetchers.get(key);
            if (thread != null) {
                thread.removePartitions(tps);
            }
        });
        stopIdleThreads();
    }

    /** The partitions currently fetched (without those dropped after a local storage failure). */
    public synchronized Set<TopicPartition> partitions() {
        Set<TopicPartition> all = new HashSet<>();
        fetchers.values().forEach(t -> all.addAll(t.partitions()));
        return all;
    }

    /**
     * Kafka's {@code kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica}: how many
     * messages the most lagging followed partition is behind its leader's high watermark (0 when this
     * broker follows nothing). Never blocks on the manager.
     */
    public long maxLag() {
        long max = 0;
        for (ReplicaFetcherThread t : fetchers.values()) {
            max = Math.max(max, t.maxLag());
        }
        return max;
    }

    /** Stops all threads and closes their connections. */
    @Override
    public synchronized void close() {
        closed = true;
        fetchers.values().forEach(ReplicaFetcherThread::shutdown);
        fetchers.clear();
        assignment.clear();
    }

    /** The fetcher thread index of a partition (Kafka's formula). */
    int fetcherId(TopicPartition tp) {
        return Math.floorMod(31 * tp.topic().hashCode() + tp.partition(), config.numFetchers());
    }

    /** The names of the running threads (for tests). */
    synchronized Set<String> threadNames() {
        Set<String> names = new HashSet<>();
        fetchers.values().forEach(t -> names.add(t.getName()));
        return names;
    }

    private void stopIdleThreads() {
        fetchers.entrySet().removeIf(e -> {
            if (e.getValue().partitions().isEmpty()) {
                e.getValue().shutdown();
                return true;
            }
            return false;
        });
        assignment.values().removeIf(key -> !fetchers.containsKey(key));
    }
}
