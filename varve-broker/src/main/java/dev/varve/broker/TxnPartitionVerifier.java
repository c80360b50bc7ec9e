package dev.varve.broker;

import dev.varve.broker.cluster.AddPartitionsChannel;
import dev.varve.broker.cluster.ClusterReplicaManager;
import dev.varve.broker.group.TxnOffsetCommitVerifier;
import dev.varve.broker.txn.TransactionCoordinator;
import dev.varve.metadata.MetadataImage;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.protocol.Errors;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * A partition leader asking the transaction coordinator about a producer's first transactional write
 * to its partitions (Kafka's {@code AddPartitionsToTxnManager}): whether they are in the transaction
 * (KIP-890 part 1, {@link Operation#VERIFY}), or, for a transactions V2 client, to add them
 * ({@link Operation#ADD}, part 2). The coordinator is called directly when this broker coordinates the
 * transactional id, otherwise over AddPartitionsToTxn v4/v5 to the leader of its
 * {@code __transaction_state} partition ({@link AddPartitionsChannel}). Never blocks.
 */
public final class TxnPartitionVerifier {
    /** Kafka's {@code add.partitions.to.txn.retry.backoff.ms} and {@code .max.ms} defaults. */
    static final long ADD_RETRY_BACKOFF_MS = 20;
    static final long ADD_RETRY_MAX_MS = 100;

    /** What the request that triggers the call can do and understand (Kafka's TransactionSupportedOperation). */
    public enum Operation {
        /** Verify; the client predates TRANSACTION_ABORTABLE (Produce v0-10, TxnOffsetCommit v0-3). */
        VERIFY_OLD_CLIENT,
        /** Verify (Produce v11, TxnOffsetCommit v4). */
        VERIFY,
        /** Add the partitions: transactions V2 (Produce v12+, TxnOffsetCommit v5+). */
        ADD;

        public static Operation forProduce(short version) {
            return version > 11 ? ADD : version > 10 ? VERIFY : VERIFY_OLD_CLIENT;
        }

        public static Operation forTxnOffsetCommit(short version) {
            return version > 4 ? ADD : version > 3 ? VERIFY : VERIFY_OLD_CLIENT;
        }
    }

    private final BrokerContext broker;
    private final TransactionCoordinator coordinator;
    private final TransactionLog log;
    private final WheelTimer timer;
    private final boolean verificationEnabled;
    private volatile AddPartitionsChannel channel;

    public TxnPartitionVerifier(BrokerContext broker, TransactionCoordinator coordinator, TransactionLog log, WheelTimer timer) {
        this.broker = broker;
        this.coordinator = coordinator;
        this.log = log;
        this.timer = timer;
        this.verificationEnabled = broker.config().transactionPartitionVerificationEnable();
    }

    /** In a cluster: how requests reach a coordinator on another broker. */
    public void setChannel(AddPartitionsChannel channel) {
        this.channel = channel;
    }

    /** Whether {@code op} asks the coordinator at all ({@code transaction.partition.verification.enable} off: only adds). */
    public boolean asks(Operation op) {
        return op == Operation.ADD || verificationEnabled;
    }

    /**
     * Verifies or adds {@code partitions}; completes with the error of each partition that failed (none:
     * all good), in the codes a producer understands: PRODUCER_FENCED as INVALID_PRODUCER_EPOCH,
     * TRANSACTION_ABORTABLE as INVALID_TXN_STATE for old clients, the coordinator being unreachable or
     * busy as NOT_ENOUGH_REPLICAS (retriable, no metadata refresh), as Kafka maps them. An add answered
     * CONCURRENT_TRANSACTIONS (the previous transaction's markers still going out) is retried for up to
     * {@value #ADD_RETRY_MAX_MS} ms first.
     */
    public CompletableFuture<Map<TopicPartition, Errors>> addOrVerify(String transactionalId, long producerId,
                                                                      short producerEpoch, Set<TopicPartition> partitions,
                                                                      Operation op) {
        CompletableFuture<Map<TopicPartition, Errors>> result = new CompletableFuture<>();
        attempt(transactionalId, producerId, producerEpoch, partitions, op, System.nanoTime(), result);
        return result;
    }

    private void attempt(String transactionalId, long producerId, short producerEpoch, Set<TopicPartition> partitions,
                         Operation op, long startNanos, CompletableFuture<Map<TopicPartition, Errors>> result) {
        ask(transactionalId, producerId, producerEpoch, partitions, op).whenComplete((answers, failure) -> {
            Map<TopicPartition, Errors> raw = answers;
            if (failure != null) {
                raw = new HashMap<>();
                for (TopicPartition tp : partitions) {
                    raw.put(tp, Errors.forException(failure));
                }
            }
            boolean concurrent = raw.values().stream().anyMatch(e -> e == Errors.CONCURRENT_TRANSACTIONS);
            if (op == Operation.ADD && concurrent
                    && System.nanoTime() - startNanos < ADD_RETRY_MAX_MS * 1_000_000L) {
                timer.schedule(ADD_RETRY_BACKOFF_MS,
                        () -> attempt(transactionalId, producerId, producerEpoch, partitions, op, startNanos, result));
                return;
            }
            Map<TopicPartition, Errors> failed = new HashMap<>();
            raw.forEach((tp, e) -> {
                Errors mapped = forProducer(e, op);
                if (mapped != Errors.NONE) {
                    failed.put(tp, mapped);
                }
            });
            result.complete(failed);
        });
    }

    /**
     * Starts the leader's side of a verification of {@code tp} for a transactional write (KIP-890): the
     * guard the append must present, NONE when the producer's transaction is open there already (nothing
     * to ask). A V2 client ({@link Operation#ADD}, the partition added by this write) keeps its guard across
     * the marker of its previous transaction, which carries the epoch it now writes with.
     *
     * @throws RuntimeException with the Kafka error the write is refused with (e.g. an older epoch)
     */
    public dev.varve.storage.VerificationGuard startGuard(TopicPartition tp, long producerId, short producerEpoch, Operation op) {
        return broker.replicaManager().startTransactionVerification(tp, producerId, producerEpoch, op == Operation.ADD);
    }

    /**
     * The say on a TxnOffsetCommit of version {@code apiVersion} (see {@link TxnOffsetCommitVerifier}) for
     * the group whose {@code __consumer_offsets} partition is {@code offsets}: as for a produce, the guard
     * first, so a marker written while the coordinator answers voids the answer. The coordinator being
     * unreachable is answered COORDINATOR_NOT_AVAILABLE (the producer finds it again and retries), a
     * partition this broker cannot start a verification on NOT_COORDINATOR.
     */
    public CompletableFuture<TxnOffsetCommitVerifier.Verified> verifyOffsetCommit(String transactionalId, long producerId,
                                                                                 short producerEpoch, TopicPartition offsets,
                                                                                 short apiVersion) {
        Operation op = Operation.forTxnOffsetCommit(apiVersion);
        if (!asks(op)) {
            return CompletableFuture.completedFuture(TxnOffsetCommitVerifier.Verified.OK);
        }
        dev.varve.storage.VerificationGuard guard;
        try {
            guard = startGuard(offsets, producerId, producerEpoch, op);
        } catch (RuntimeException e) {
            Errors error = Errors.forException(e);
            return CompletableFuture.completedFuture(TxnOffsetCommitVerifier.Verified.refused(
                    error == Errors.INVALID_PRODUCER_EPOCH ? error : Errors.NOT_COORDINATOR));
        }
        if (guard == dev.varve.storage.VerificationGuard.NONE) {
            return CompletableFuture.completedFuture(new TxnOffsetCommitVerifier.Verified(Errors.NONE, guard));
        }
        return addOrVerify(transactionalId, producerId, producerEpoch, Set.of(offsets), op).thenApply(failed -> {
            Errors e = failed.getOrDefault(offsets, Errors.NONE);
            if (e == Errors.NOT_ENOUGH_REPLICAS) {
                e = Errors.COORDINATOR_NOT_AVAILABLE;
            }
            return e == Errors.NONE ? new TxnOffsetCommitVerifier.Verified(e, guard) : TxnOffsetCommitVerifier.Verified.refused(e);
        });
    }

    /** The coordinator's answer per partition (its own codes). */
    private CompletableFuture<Map<TopicPartition, Errors>> ask(String transactionalId, long producerId, short producerEpoch,
                                                               Set<TopicPartition> partitions, Operation op) {
        if (coordinator.check(transactionalId) != Errors.NOT_COORDINATOR) {
            if (op != Operation.ADD) {
                return CompletableFuture.completedFuture(
                        coordinator.verifyPartitions(transactionalId, producerId, producerEpoch, partitions));
            }
            return coordinator.addPartitions(transactionalId, producerId, producerEpoch, partitions, (short) 2)
                    .thenApply(error -> all(partitions, error));
        }
        ClusterReplicaManager cluster = broker.replicaManager().cluster();
        AddPartitionsChannel c = channel;
        if (cluster == null || c == null) {
            return CompletableFuture.completedFuture(all(partitions, Errors.COORDINATOR_NOT_AVAILABLE));
        }
        MetadataImage image = cluster.image();
        int partition = log.partitionFor(transactionalId);
        var topic = image.topic(TransactionLog.NAME);
        int leader = topic.isEmpty() || partition >= topic.get().partitionCount() ? -1
                : topic.get().partition(partition).leader();
        if (leader < 0 || leader == broker.nodeId()) {
            return CompletableFuture.completedFuture(all(partitions, Errors.COORDINATOR_NOT_AVAILABLE));
        }
        return c.send(leader, new AddPartitionsChannel.Check(transactionalId, producerId, producerEpoch, partitions,
                op != Operation.ADD));
    }

    private static Map<TopicPartition, Errors> all(Set<TopicPartition> partitions, Errors error) {
        Map<TopicPartition, Errors> out = new HashMap<>();
        partitions.forEach(tp -> out.put(tp, error));
        return out;
    }

    /** A coordinator's (or the network's) answer as the producer's append is told it. */
    public static Errors forProducer(Errors error, Operation op) {
        return switch (error) {
            case PRODUCER_FENCED -> Errors.INVALID_PRODUCER_EPOCH;
            case TRANSACTION_ABORTABLE -> op == Operation.VERIFY_OLD_CLIENT ? Errors.INVALID_TXN_STATE : error;
            case CLUSTER_AUTHORIZATION_FAILED -> Errors.INVALID_TXN_STATE;
            case NETWORK_EXCEPTION, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
                 LEADER_NOT_AVAILABLE, BROKER_NOT_AVAILABLE, REQUEST_TIMED_OUT -> Errors.NOT_ENOUGH_REPLICAS;
            case CONCURRENT_TRANSACTIONS -> op == Operation.ADD ? error : Errors.NOT_ENOUGH_REPLICAS;
            default -> error;
        };
    }

    /** The exception a refused append carries for {@code error} (its message says why). */
    public static RuntimeException exception(Errors error) {
        if (error == Errors.NOT_ENOUGH_REPLICAS) {
            return new NotEnoughReplicasException("Unable to verify the partition has been added to the transaction");
        }
        if (error == Errors.INVALID_TXN_STATE) {
            return error.exception("Partition was not added to the transaction");
        }
        return error.exception();
    }
}
