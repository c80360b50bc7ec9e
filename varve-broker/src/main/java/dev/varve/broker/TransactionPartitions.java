package dev.varve.broker;

import dev.varve.broker.cluster.ClusterReplicaManager;
import dev.varve.broker.txn.TransactionCoordinator;
import dev.varve.broker.txn.TxnMetadata;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Moves the transaction coordinator with the leadership of {@code __transaction_state} partitions: a
 * partition this broker starts leading is read on a loader thread (its ids answer
 * COORDINATOR_LOAD_IN_PROGRESS meanwhile) and handed to the coordinator with the leader epoch as the
 * coordinator epoch; one it stops leading is forgotten at once (NOT_COORDINATOR: clients look the
 * coordinator up again). A single node leads every partition, in epoch 0, from start-up. Also runs the
 * coordinator's periodic work on the broker's timer: aborting transactions past their timeout,
 * removing expired transactional ids and writing again the ends whose Complete write failed.
 */
final class TransactionPartitions implements ClusterReplicaManager.LeadershipListener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionPartitions.class);

    private final TransactionLog log;
    private final TransactionCoordinator coordinator;
    private final WheelTimer timer;
    private final ExecutorService loader = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "transaction-coordinator-loader");
        t.setDaemon(true);
        return t;
    });
    private volatile boolean closed;

    TransactionPartitions(TransactionLog log, TransactionCoordinator coordinator, WheelTimer timer) {
        this.log = log;
        this.coordinator = coordinator;
        this.timer = timer;
    }

    /**
     * Starts the periodic aborts of timed-out transactions and removals of expired ids, and the retries
     * of Complete writes that failed after every marker was written (every {@value TxnMarkerWriter#RETRY_MS} ms).
     */
    void startPeriodicWork(long abortIntervalMs, long expireIntervalMs) {
        repeat(abortIntervalMs, coordinator::abortTimedOutTransactions);
        repeat(expireIntervalMs, coordinator::expireTransactionalIds);
        repeat(TxnMarkerWriter.RETRY_MS, coordinator::retryCompletions);
    }

    private void repeat(long intervalMs, Runnable task) {
        if (closed) {
            return;
        }
        try {
            timer.schedule(intervalMs, () -> {
                try {
                    task.run();
                } catch (RuntimeException e) {
                    LOG.error("transaction coordinator task failed", e);
                } finally {
                    repeat(intervalMs, task);
                }
            });
        } catch (IllegalStateException timerClosed) {
            // the broker is shutting down
        }
    }

    /** A single node: coordinates every partition, in epoch 0 (its log's only leader epoch). */
    void loadAll() {
        for (int p = 0; p < log.partitions(); p++) {
            onBecomeLeader(new TopicPartition(TransactionLog.NAME, p), ReplicaManager.LEADER_EPOCH);
        }
    }

    @Override
    public void onBecomeLeader(TopicPartition tp, int leaderEpoch) {
        if (!tp.topic().equals(TransactionLog.NAME)) {
            return;
        }
        int p = tp.partition();
        coordinator.becomeCoordinator(p, leaderEpoch);
        loader.execute(() -> {
            try {
                Map<String, TxnMetadata> ids = log.load(p);
                coordinator.completeLoad(p, leaderEpoch, ids);
            } catch (RuntimeException e) {
                LOG.warn("Could not load {}: {}", tp, e.toString());
                coordinator.resign(p, leaderEpoch);
            }
        });
    }

    @Override
    public void onResign(TopicPartition tp) {
        if (tp.topic().equals(TransactionLog.NAME)) {
            coordinator.resign(tp.partition());
        }
    }

    @Override
    public void close() {
        closed = true;
        loader.shutdownNow();
    }
}
