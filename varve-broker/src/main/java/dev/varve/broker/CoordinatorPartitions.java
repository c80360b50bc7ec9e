package dev.varve.broker;

import dev.varve.broker.cluster.ClusterReplicaManager;
import dev.varve.broker.group.CoordinatorGate;
import dev.varve.broker.group.GroupOffsets;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Cluster mode: the group coordinator moves with the leadership of {@code __consumer_offsets}
 * partitions. When this broker becomes leader of one it replays that partition (its groups are
 * COORDINATOR_LOAD_IN_PROGRESS meanwhile); when it stops leading it, it forgets those groups
 * (NOT_COORDINATOR: clients look the coordinator up again and find the new leader).
 */
final class CoordinatorPartitions implements CoordinatorGate, ClusterReplicaManager.LeadershipListener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CoordinatorPartitions.class);

    private enum State { LOADING, LOADED }

    private final OffsetsTopic offsetsTopic;
    private final GroupOffsets offsets;
    private final Map<Integer, State> owned = new ConcurrentHashMap<>();
    private final ExecutorService loader = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "group-coordinator-loader");
        t.setDaemon(true);
        return t;
    });

    CoordinatorPartitions(OffsetsTopic offsetsTopic, GroupOffsets offsets) {
        this.offsetsTopic = offsetsTopic;
        this.offsets = offsets;
    }

    @Override
    public Errors check(String groupId) {
        return checkPartition(offsetsTopic.partitionFor(groupId));
    }

    @Override
    public Errors checkPartition(int offsetsPartition) {
        State s = owned.get(offsetsPartition);
        if (s == null) {
            return Errors.NOT_COORDINATOR;
        }
        return s == State.LOADED ? Errors.NONE : Errors.COORDINATOR_LOAD_IN_PROGRESS;
    }

    @Override
    public void onBecomeLeader(TopicPartition tp, int leaderEpoch) {
        if (!tp.topic().equals(OffsetsTopic.NAME)) {
            return;
        }
        int p = tp.partition();
        owned.put(p, State.LOADING);
        loader.execute(() -> {
            try {
                offsets.unload(g -> offsetsTopic.partitionFor(g) == p);
                long n = offsetsTopic.loadPartition(p, offsets);
                offsets.completeLoad(g -> offsetsTopic.partitionFor(g) == p);
                owned.replace(p, State.LOADING, State.LOADED);
                LOG.info("Coordinating the groups of {} (epoch {}): {} record(s) replayed", tp, leaderEpoch, n);
            } catch (RuntimeException e) {
                LOG.warn("Could not load {}: {}", tp, e.toString());
                owned.remove(p, State.LOADING);
            }
        });
    }

    @Override
    public void onResign(TopicPartition tp) {
        if (!tp.topic().equals(OffsetsTopic.NAME)) {
            return;
        }
        int p = tp.partition();
        owned.remove(p);
        loader.execute(() -> {
            if (!owned.containsKey(p)) {
                int n = offsets.unload(g -> offsetsTopic.partitionFor(g) == p);
                LOG.info("No longer coordinating the groups of {} ({} unloaded)", tp, n);
            }
        });
    }

    @Override
    public void close() {
        loader.shutdownNow();
    }
}
