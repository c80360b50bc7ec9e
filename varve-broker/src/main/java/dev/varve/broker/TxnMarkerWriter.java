package dev.varve.broker;

import dev.varve.broker.cluster.ClusterReplicaManager;
import dev.varve.broker.cluster.TxnMarkerChannel;
import dev.varve.broker.txn.TransactionCoordinator;
import dev.varve.metadata.MetadataImage;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.NotCoordinatorException;
import org.apache.kafka.common.errors.TransactionCoordinatorFencedException;
import org.apache.kafka.common.protocol.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * Writes the markers of a transaction the coordinator ended: a partition this broker leads gets its
 * marker as a local acks=all append ({@link #writeLocal}, also what WriteTxnMarkers from another
 * coordinator runs); one another broker leads gets it through a WriteTxnMarkers request to that
 * leader ({@link TxnMarkerChannel}). What can be retried is retried every {@value #RETRY_MS} ms against
 * the partition's leader of the moment (a leader moving, too few replicas in sync, a full disk, a
 * lost connection) while this broker still coordinates the transaction in the marker's coordinator
 * epoch ({@link #setCoordinating}: a deposed coordinator's late marker could end the producer's next
 * transaction in a partition); a partition that no longer exists is skipped, as Kafka skips it; a
 * refusal that says the coordinator or the producer epoch is stale ends the attempt. Once a
 * {@code __consumer_offsets} partition led here has its marker, the group coordinator is told
 * ({@link OffsetsMarkerListener}), so a committed transaction's offsets become visible.
 */
public final class TxnMarkerWriter implements TransactionCoordinator.MarkerWriter {
    private static final Logger LOG = LoggerFactory.getLogger(TxnMarkerWriter.class);
    static final long RETRY_MS = 100;
    private static final long ACK_TIMEOUT_MS = 30_000;

    /** The group coordinator's side of a marker in a {@code __consumer_offsets} partition led here. */
    public interface OffsetsMarkerListener {
        /**
         * Whether the groups of the partition are loaded (NONE); a marker for a partition still
         * loading is refused with COORDINATOR_LOAD_IN_PROGRESS and retried, so the load cannot miss it.
         */
        Errors check(int offsetsPartition);

        /** The marker at {@code markerOffset} is in the partition and replicated. */
        void onMarker(int offsetsPartition, long producerId, boolean commit, long markerOffset);
    }

    private final ReplicaManager replicas;
    private final WheelTimer timer;
    /** Cluster mode: requests to other leaders (null on a single node). */
    private volatile TxnMarkerChannel channel;
    private volatile OffsetsMarkerListener offsetsListener = new OffsetsMarkerListener() {
        @Override
        public Errors check(int offsetsPartition) {
            return Errors.NONE;
        }

        @Override
        public void onMarker(int offsetsPartition, long producerId, boolean commit, long markerOffset) {
        }
    };
    private volatile java.util.function.BiPredicate<String, Integer> coordinating = (id, epoch) -> true;
    private volatile boolean closed;

    public TxnMarkerWriter(ReplicaManager replicas, WheelTimer timer) {
        this.replicas = replicas;
        this.timer = timer;
    }

    public void setOffsetsListener(OffsetsMarkerListener listener) {
        this.offsetsListener = listener;
    }

    /**
     * Whether this broker still coordinates a transactional id in a coordinator epoch
     * ({@link TransactionCoordinator#coordinates}); a marker is sent (or sent again) only while it does.
     */
    public void setCoordinating(java.util.function.BiPredicate<String, Integer> coordinating) {
        this.coordinating = coordinating;
    }

    /** Cluster mode: how markers reach partitions other brokers lead. */
    public void setChannel(TxnMarkerChannel channel) {
        this.channel = channel;
    }

    @Override
    public CompletableFuture<Void> write(String transactionalId, long producerId, short producerEpoch, int coordinatorEpoch,
                                         boolean commit, Set<TopicPartition> partitions, short transactionVersion) {
        CompletableFuture<?>[] each = partitions.stream()
                .map(tp -> {
                    CompletableFuture<Void> done = new CompletableFuture<>();
                    attempt(new TxnMarkerChannel.Marker(producerId, producerEpoch, coordinatorEpoch, commit, tp,
                                    transactionVersion),
                            transactionalId, done);
                    return done;
                })
                .toArray(CompletableFuture[]::new);
        return CompletableFuture.allOf(each);
    }

    /**
     * Appends one marker to a partition this broker leads and waits for its in-sync replicas;
     * completes with the error code Kafka's WriteTxnMarkers would answer for the partition.
     */
    public CompletableFuture<Errors> writeLocal(TxnMarkerChannel.Marker m) {
        boolean offsets = m.tp().topic().equals(OffsetsTopic.NAME);
        if (offsets) {
            Errors loading = offsetsListener.check(m.tp().partition());
            if (loading != Errors.NONE) {
                return CompletableFuture.completedFuture(loading);
            }
        }
        ReplicaManager.LeaderAppend appended;
        try {
            appended = replicas.appendMarkerAsLeader(m.tp(), m.producerId(), m.producerEpoch(), m.coordinatorEpoch(), m.commit(),
                    m.transactionVersion());
        } catch (RuntimeException e) {
            return CompletableFuture.completedFuture(Errors.forException(e));
        }
        return replicas.awaitAck(m.tp(), appended, ACK_TIMEOUT_MS).handle((error, failure) -> {
            Errors result = failure != null ? Errors.forException(failure) : error;
            if (result == Errors.NONE && offsets) {
                try {
                    offsetsListener.onMarker(m.tp().partition(), m.producerId(), m.commit(), appended.info().firstOffset());
                } catch (RuntimeException e) {
                    LOG.error("Completing the transactional offsets of producer {} in {} failed", m.producerId(), m.tp(), e);
                }
            }
            return result;
        });
    }

    private void attempt(TxnMarkerChannel.Marker m, String transactionalId, CompletableFuture<Void> done) {
        if (closed) {
            done.completeExceptionally(new IllegalStateException("the broker is shutting down"));
            return;
        }
        if (!coordinating.test(transactionalId, m.coordinatorEpoch())) {
            // the next coordinator ends the transaction from the log: a marker of this one could come too late
            done.completeExceptionally(new NotCoordinatorException("no longer the coordinator of " + transactionalId
                    + " in coordinator epoch " + m.coordinatorEpoch() + ": its " + (m.commit() ? "commit" : "abort")
                    + " marker for " + m.tp() + " is not sent"));
            return;
        }
        ClusterReplicaManager cluster = replicas.cluster();
        CompletableFuture<Errors> sent;
        if (cluster == null || cluster.isLeader(m.tp())) {
            sent = writeLocal(m);
        } else {
            MetadataImage image = cluster.image();
            var topic = image.topic(m.tp().topic());
            if (topic.isEmpty() || m.tp().partition() >= topic.get().partitionCount()) {
                sent = CompletableFuture.completedFuture(Errors.UNKNOWN_TOPIC_OR_PARTITION);
            } else {
                int leader = topic.get().partition(m.tp().partition()).leader();
                TxnMarkerChannel c = channel;
                sent = leader < 0 || c == null ? CompletableFuture.completedFuture(Errors.LEADER_NOT_AVAILABLE) : c.send(leader, m);
            }
        }
        sent.whenComplete((error, failure) -> {
            Errors e = failure != null ? Errors.forException(failure) : error;
            switch (e) {
                case NONE -> done.complete(null);
                case UNKNOWN_TOPIC_OR_PARTITION -> {
                    if (exists(m.tp())) {
                        retry(m, transactionalId, done, e.name());
                    } else {
                        LOG.info("{} no longer exists: the {} marker of {} is not written there", m.tp(),
                                m.commit() ? "commit" : "abort", transactionalId);
                        done.complete(null);
                    }
                }
                case TRANSACTION_COORDINATOR_FENCED, INVALID_PRODUCER_EPOCH -> {
                    LOG.warn("The {} marker of {} (producer {} epoch {}, coordinator epoch {}) was refused by {}: {}",
                            m.commit() ? "commit" : "abort", transactionalId, m.producerId(), m.producerEpoch(),
                            m.coordinatorEpoch(), m.tp(), e);
                    done.completeExceptionally(e == Errors.TRANSACTION_COORDINATOR_FENCED
                            ? new TransactionCoordinatorFencedException(e.message())
                            : new InvalidProducerEpochException(e.message()));
                }
                default -> retry(m, transactionalId, done, e.name());
            }
        });
    }

    private boolean exists(TopicPartition tp) {
        TopicRegistry.TopicInfo info = replicas.topics().get(tp.topic()).orElse(null);
        return info != null && tp.partition() < info.partitions();
    }

    private void retry(TxnMarkerChannel.Marker m, String transactionalId, CompletableFuture<Void> done, String why) {
        LOG.debug("The marker of {} in {} is retried: {}", transactionalId, m.tp(), why);
        try {
            timer.schedule(RETRY_MS, () -> attempt(m, transactionalId, done));
        } catch (IllegalStateException timerClosed) {
            done.completeExceptionally(timerClosed);
        }
    }

    /** Stops retrying: markers not yet written are left to the next coordinator (it resends them on load). */
    public void close() {
        closed = true;
    }
}
