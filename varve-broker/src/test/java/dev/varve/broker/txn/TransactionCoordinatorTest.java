package dev.varve.broker.txn;

import dev.varve.broker.ManualTime;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.CoordinatorLoadInProgressException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The coordinator's answers and writes, against a log and a marker writer whose completions the test
 * drives: what a transactional producer sees at each step, what reaches __transaction_state, and what
 * survives a coordinator failover.
 */
class TransactionCoordinatorTest {
    private static final int PARTITION = 7;
    private static final int EPOCH = 3;
    private static final TopicPartition A = new TopicPartition("orders", 0);
    private static final TopicPartition B = new TopicPartition("orders", 1);

    /** A log whose writes wait for the test (or complete at once when {@code autoComplete}). */
    static final class FakeLog implements TransactionCoordinator.Log {
        record Write(int partition, int coordinatorEpoch, TxnMetadata metadata, CompletableFuture<Void> done) {
        }

        final List<Write> writes = new ArrayList<>();
        boolean autoComplete = true;
        RuntimeException failWith;

        @Override
        public int partitionFor(String transactionalId) {
            return PARTITION;
        }

        @Override
        public synchronized CompletableFuture<Void> write(int partition, int coordinatorEpoch, TxnMetadata metadata) {
            CompletableFuture<Void> f = new CompletableFuture<>();
            writes.add(new Write(partition, coordinatorEpoch, metadata, f));
            if (failWith != null) {
                f.completeExceptionally(failWith);
            } else if (autoComplete) {
                f.complete(null);
            }
            return f;
        }

        synchronized Write last() {
            return writes.get(writes.size() - 1);
        }

        synchronized List<TransactionState> states() {
            return writes.stream().map(w -> w.metadata().state()).toList();
        }
    }

    /** Marker writes, completed by the test. */
    static final class FakeMarkers implements TransactionCoordinator.MarkerWriter {
        record Sent(String id, long producerId, short epoch, int coordinatorEpoch, boolean commit, Set<TopicPartition> partitions,
                    short transactionVersion, CompletableFuture<Void> done) {
        }

        final List<Sent> sent = new ArrayList<>();

        @Override
        public synchronized CompletableFuture<Void> write(String transactionalId, long producerId, short producerEpoch,
                                                          int coordinatorEpoch, boolean commit, Set<TopicPartition> partitions,
                                                          short transactionVersion) {
            CompletableFuture<Void> f = new CompletableFuture<>();
            sent.add(new Sent(transactionalId, producerId, producerEpoch, coordinatorEpoch, commit, partitions,
                    transactionVersion, f));
            return f;
        }

        synchronized Sent last() {
            return sent.get(sent.size() - 1);
        }
    }

    private final ManualTime time = new ManualTime(1_000_000L);
    private final FakeLog log = new FakeLog();
    private final FakeMarkers markers = new FakeMarkers();
    private final AtomicLong ids = new AtomicLong(1000);
    private final TransactionCoordinator coordinator = new TransactionCoordinator(
            new TransactionCoordinator.Config(60_000, 3_600_000L), log, markers, ids::getAndIncrement, time);

    private void loaded() {
        coordinator.becomeCoordinator(PARTITION, EPOCH);
        coordinator.completeLoad(PARTITION, EPOCH, Map.of());
    }

    private TransactionCoordinator.InitResult init(String id) {
        return coordinator.initProducerId(id, 30_000, -1, (short) -1).join();
    }

    @Test
    void answersNotCoordinatorUntilItOwnsThePartitionAndLoadInProgressWhileLoading() {
        assertThat(init("app").error()).isEqualTo(Errors.NOT_COORDINATOR);
        coordinator.becomeCoordinator(PARTITION, EPOCH);
        assertThat(init("app").error()).isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS);
        assertThat(coordinator.addPartitions("app", 1, (short) 0, Set.of(A)).join()).isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS);
        coordinator.completeLoad(PARTITION, EPOCH, Map.of());
        assertThat(init("app").error()).isEqualTo(Errors.NONE);
        coordinator.resign(PARTITION);
        assertThat(coordinator.endTransaction("app", 1000, (short) 0, true).join()).isEqualTo(Errors.NOT_COORDINATOR);
        assertThat(coordinator.check("app")).isEqualTo(Errors.NOT_COORDINATOR);
    }

    @Test
    void aNewIdGetsAProducerIdAtEpochZeroAndEachInitBumpsTheEpoch() {
        loaded();
        TransactionCoordinator.InitResult first = init("app");
        assertThat(first).isEqualTo(new TransactionCoordinator.InitResult(Errors.NONE, 1000, (short) 0));
        assertThat(log.last().metadata().state()).isEqualTo(TransactionState.EMPTY);
        assertThat(log.last().coordinatorEpoch()).isEqualTo(EPOCH);
        assertThat(init("app")).isEqualTo(new TransactionCoordinator.InitResult(Errors.NONE, 1000, (short) 1));
        assertThat(init("other").producerId()).isEqualTo(1001);
    }

    @Test
    void badInputGetsKafkasErrors() {
        loaded();
        assertThat(coordinator.initProducerId("app", 0, -1, (short) -1).join().error()).isEqualTo(Errors.INVALID_TRANSACTION_TIMEOUT);
        assertThat(coordinator.initProducerId("app", 60_001, -1, (short) -1).join().error())
                .isEqualTo(Errors.INVALID_TRANSACTION_TIMEOUT);
        assertThat(coordinator.initProducerId("", 1000, -1, (short) -1).join().error()).isEqualTo(Errors.INVALID_REQUEST);
        TransactionCoordinator.InitResult p = init("app");
        assertThat(coordinator.addPartitions("app", p.producerId() + 1, p.producerEpoch(), Set.of(A)).join())
                .isEqualTo(Errors.INVALID_PRODUCER_ID_MAPPING);
        assertThat(coordinator.addPartitions("unknown", p.producerId(), p.producerEpoch(), Set.of(A)).join())
                .isEqualTo(Errors.INVALID_PRODUCER_ID_MAPPING);
        assertThat(coordinator.addPartitions("app", p.producerId(), (short) (p.producerEpoch() - 1), Set.of(A)).join())
                .isEqualTo(Errors.PRODUCER_FENCED);
        assertThat(coordinator.endTransaction("app", p.producerId(), p.producerEpoch(), true).join())
                .as("nothing to end").isEqualTo(Errors.INVALID_TXN_STATE);
    }

    @Test
    void aCommitIsAnsweredOncePreparedThenMarkersThenComplete() {
        loaded();
        TransactionCoordinator.InitResult p = init("app");
        assertThat(coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(A)).join()).isEqualTo(Errors.NONE);
        int writesBefore = log.writes.size();
        assertThat(coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(A)).join())
                .as("already in the transaction").isEqualTo(Errors.NONE);
        assertThat(log.writes).as("no write for a partition already added").hasSize(writesBefore);
        assertThat(coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(B)).join()).isEqualTo(Errors.NONE);
        assertThat(coordinator.describe("app").orElseThrow().partitions()).containsExactly(A, B);

        assertThat(coordinator.endTransaction("app", p.producerId(), p.producerEpoch(), true).join()).isEqualTo(Errors.NONE);
        assertThat(log.last().metadata().state()).isEqualTo(TransactionState.PREPARE_COMMIT);
        FakeMarkers.Sent sent = markers.last();
        assertThat(sent.commit()).isTrue();
        assertThat(sent.partitions()).containsExactlyInAnyOrder(A, B);
        assertThat(sent.producerId()).isEqualTo(p.producerId());
        assertThat(sent.epoch()).isEqualTo(p.producerEpoch());
        assertThat(sent.coordinatorEpoch()).isEqualTo(EPOCH);
        assertThat(sent.transactionVersion()).as("a V1 transaction").isEqualTo((short) 0);

        // while the markers are out: a retry of the commit waits, an abort is refused, a new transaction waits
        assertThat(coordinator.endTransaction("app", p.producerId(), p.producerEpoch(), true).join())
                .isEqualTo(Errors.CONCURRENT_TRANSACTIONS);
        assertThat(coordinator.endTransaction("app", p.producerId(), p.producerEpoch(), false).join())
                .isEqualTo(Errors.INVALID_TXN_STATE);
        assertThat(coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(A)).join())
                .isEqualTo(Errors.CONCURRENT_TRANSACTIONS);
        assertThat(init("app").error()).isEqualTo(Errors.CONCURRENT_TRANSACTIONS);

        sent.done().complete(null);
        assertThat(log.last().metadata().state()).isEqualTo(TransactionState.COMPLETE_COMMIT);
        assertThat(log.last().metadata().partitions()).isEmpty();
        assertThat(coordinator.describe("app").orElseThrow().state()).isEqualTo(TransactionState.COMPLETE_COMMIT);
        assertThat(coordinator.endTransaction("app", p.producerId(), p.producerEpoch(), true).join())
                .as("a retried commit that completed").isEqualTo(Errors.NONE);
        assertThat(coordinator.endTransaction("app", p.producerId(), p.producerEpoch(), false).join())
                .isEqualTo(Errors.INVALID_TXN_STATE);
        // the next transaction
        assertThat(coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(B)).join()).isEqualTo(Errors.NONE);
        assertThat(coordinator.describe("app").orElseThrow().partitions()).containsExactly(B);
    }

    /**
     * An id a transactions V2 client used, taken over by a V1 client (an older client, librdkafka):
     * its EndTxn below v5 must not bump the epoch, or its next transaction is fenced (found by
     * TxnSimulation). The version comes from the request, as in Kafka.
     */
    @Test
    void aV1ClientTakingOverAnIdAV2ClientUsedKeepsItsEpochAcrossEnds() {
        loaded();
        TransactionCoordinator.InitResult v2 = init("app");
        assertThat(coordinator.addPartitions("app", v2.producerId(), v2.producerEpoch(), Set.of(A), (short) 2).join())
                .isEqualTo(Errors.NONE);
        TransactionCoordinator.EndResult ended = coordinator.endTransaction("app", v2.producerId(), v2.producerEpoch(),
                true, (short) 2).join();
        assertThat(ended.producerEpoch()).as("V2 bumps at the end").isEqualTo((short) (v2.producerEpoch() + 1));
        markers.last().done().complete(null);

        TransactionCoordinator.InitResult v1 = init("app");
        assertThat(v1.error()).isEqualTo(Errors.NONE);
        for (boolean commit : new boolean[]{true, false, true}) {
            assertThat(coordinator.addPartitions("app", v1.producerId(), v1.producerEpoch(), Set.of(A, B)).join())
                    .isEqualTo(Errors.NONE);
            assertThat(coordinator.describe("app").orElseThrow().clientTransactionVersion()).isEqualTo((short) 0);
            assertThat(coordinator.endTransaction("app", v1.producerId(), v1.producerEpoch(), commit).join())
                    .isEqualTo(Errors.NONE);
            assertThat(markers.last().epoch()).as("V1 markers at the producer's own epoch").isEqualTo(v1.producerEpoch());
            markers.last().done().complete(null);
            assertThat(coordinator.describe("app").orElseThrow().producerEpoch()).isEqualTo(v1.producerEpoch());
        }
    }

    /**
     * A fenced V2 instance whose epoch is one below a V1 instance's (the V1 instance's InitProducerId
     * bumped it; its ends do not): the zombie's EndTxn is no retry of its own end and must be fenced,
     * not handed the live epoch (found by TxnSimulation: the zombie then ended the V1 instance's
     * transactions).
     */
    @Test
    void aFencedV2InstanceIsNotHandedTheEpochOfAV1InstanceThatFollowedIt() {
        loaded();
        TransactionCoordinator.InitResult zombie = init("app"); // V2 instance, epoch 0
        assertThat(coordinator.addPartitions("app", zombie.producerId(), zombie.producerEpoch(), Set.of(A), (short) 2).join())
                .isEqualTo(Errors.NONE);
        TransactionCoordinator.EndResult bumped = coordinator.endTransaction("app", zombie.producerId(),
                zombie.producerEpoch(), true, (short) 2).join();
        markers.last().done().complete(null);
        short zombieEpoch = bumped.producerEpoch(); // 1

        TransactionCoordinator.InitResult v1 = init("app"); // a V1 instance: epoch 2
        assertThat(v1.producerEpoch()).isEqualTo((short) (zombieEpoch + 1));
        assertThat(coordinator.addPartitions("app", v1.producerId(), v1.producerEpoch(), Set.of(B)).join()).isEqualTo(Errors.NONE);
        assertThat(coordinator.endTransaction("app", v1.producerId(), v1.producerEpoch(), false).join()).isEqualTo(Errors.NONE);
        markers.last().done().complete(null);
        assertThat(coordinator.describe("app").orElseThrow().state()).isEqualTo(TransactionState.COMPLETE_ABORT);

        TransactionCoordinator.EndResult answer = coordinator.endTransaction("app", zombie.producerId(), zombieEpoch,
                false, (short) 2).join();
        assertThat(answer.error()).isEqualTo(Errors.PRODUCER_FENCED);
        // a V2 retry of its own end still works
        TransactionCoordinator.InitResult v2 = init("app");
        coordinator.addPartitions("app", v2.producerId(), v2.producerEpoch(), Set.of(A), (short) 2).join();
        TransactionCoordinator.EndResult first = coordinator.endTransaction("app", v2.producerId(), v2.producerEpoch(),
                false, (short) 2).join();
        markers.last().done().complete(null);
        assertThat(coordinator.endTransaction("app", v2.producerId(), v2.producerEpoch(), false, (short) 2).join())
                .as("the retried end answers as the first did").isEqualTo(first);
    }

    @Test
    void aNewProducerFencesTheOldOneAndAbortsItsTransaction() {
        loaded();
        TransactionCoordinator.InitResult old = init("app");
        coordinator.addPartitions("app", old.producerId(), old.producerEpoch(), Set.of(A)).join();

        assertThat(init("app").error()).as("the new instance waits for the abort").isEqualTo(Errors.CONCURRENT_TRANSACTIONS);
        FakeMarkers.Sent abort = markers.last();
        assertThat(abort.commit()).isFalse();
        assertThat(abort.epoch()).as("markers at the fenced epoch").isEqualTo((short) (old.producerEpoch() + 1));
        assertThat(abort.partitions()).containsExactly(A);
        assertThat(log.last().metadata().state()).isEqualTo(TransactionState.PREPARE_ABORT);
        // the zombie can neither commit nor add
        assertThat(coordinator.endTransaction("app", old.producerId(), old.producerEpoch(), true).join())
                .isEqualTo(Errors.PRODUCER_FENCED);
        assertThat(coordinator.addPartitions("app", old.producerId(), old.producerEpoch(), Set.of(B)).join())
                .isEqualTo(Errors.PRODUCER_FENCED);
        assertThat(init("app").error()).isEqualTo(Errors.CONCURRENT_TRANSACTIONS);

        abort.done().complete(null);
        assertThat(log.last().metadata().state()).isEqualTo(TransactionState.COMPLETE_ABORT);
        TransactionCoordinator.InitResult next = init("app");
        assertThat(next).isEqualTo(new TransactionCoordinator.InitResult(Errors.NONE, old.producerId(),
                (short) (old.producerEpoch() + 2)));
    }

    @Test
    void aTransactionPastItsTimeoutIsAbortedAndItsProducerFenced() {
        loaded();
        TransactionCoordinator.InitResult p = init("app");
        coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(A, B)).join();
        time.sleep(29_000);
        assertThat(coordinator.abortTimedOutTransactions()).isZero();
        time.sleep(2_000);
        assertThat(coordinator.abortTimedOutTransactions()).isEqualTo(1);
        FakeMarkers.Sent abort = markers.last();
        assertThat(abort.commit()).isFalse();
        assertThat(abort.partitions()).containsExactlyInAnyOrder(A, B);
        abort.done().complete(null);
        assertThat(coordinator.describe("app").orElseThrow().state()).isEqualTo(TransactionState.COMPLETE_ABORT);
        assertThat(coordinator.endTransaction("app", p.producerId(), p.producerEpoch(), true).join())
                .as("the timed-out producer's commit").isEqualTo(Errors.PRODUCER_FENCED);
        assertThat(coordinator.abortTimedOutTransactions()).isZero();
    }

    @Test
    void aNewCoordinatorFinishesAnEndItsPredecessorPrepared() {
        TxnMetadata prepared = TxnTransitions.prepareEnd(
                TxnTransitions.addPartitions(TxnMetadata.empty("app", 42, (short) 5, 30_000, 1L), Set.of(A, B), 2L, (short) 0),
                true, (short) 0, -1, 3L, false);
        TxnMetadata ongoing = TxnTransitions.addPartitions(TxnMetadata.empty("other", 43, (short) 0, 30_000, 1L), Set.of(A), 2L,
                (short) 0);
        coordinator.becomeCoordinator(PARTITION, EPOCH + 1);
        coordinator.completeLoad(PARTITION, EPOCH, Map.of("app", prepared)); // a stale load: ignored
        assertThat(coordinator.check("app")).isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS);
        coordinator.completeLoad(PARTITION, EPOCH + 1, Map.of("app", prepared, "other", ongoing));
        FakeMarkers.Sent resumed = markers.last();
        assertThat(resumed.commit()).isTrue();
        assertThat(resumed.producerId()).isEqualTo(42);
        assertThat(resumed.epoch()).isEqualTo((short) 5);
        assertThat(resumed.coordinatorEpoch()).isEqualTo(EPOCH + 1);
        assertThat(markers.sent).hasSize(1);
        assertThat(coordinator.endTransaction("app", 42, (short) 5, true).join()).isEqualTo(Errors.CONCURRENT_TRANSACTIONS);
        resumed.done().complete(null);
        assertThat(log.last().metadata().state()).isEqualTo(TransactionState.COMPLETE_COMMIT);
        assertThat(log.last().coordinatorEpoch()).isEqualTo(EPOCH + 1);
        assertThat(coordinator.endTransaction("app", 42, (short) 5, true).join()).isEqualTo(Errors.NONE);
        assertThat(coordinator.describe("other").orElseThrow().state()).isEqualTo(TransactionState.ONGOING);
    }

    @Test
    void aFailedWriteChangesNothingAndTheClientRetries() {
        loaded();
        TransactionCoordinator.InitResult p = init("app");
        log.failWith = new NotEnoughReplicasException("injected");
        assertThat(coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(A)).join())
                .isEqualTo(Errors.COORDINATOR_NOT_AVAILABLE);
        assertThat(coordinator.describe("app").orElseThrow().state()).isEqualTo(TransactionState.EMPTY);
        log.failWith = null;
        assertThat(coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(A)).join()).isEqualTo(Errors.NONE);
        assertThat(coordinator.describe("app").orElseThrow().state()).isEqualTo(TransactionState.ONGOING);
    }

    /**
     * A Complete write that fails once every marker is written is written again, never the markers: sent
     * again by a coordinator that loses the partition meanwhile, a marker can land in a partition after
     * the producer's next transaction began there (under a coordinator that read the Complete state and
     * wrote no marker there since) and end that transaction there with this one's outcome. That tore a
     * committed transaction in ChaosTest (seed 30901281307092: its writes on two partitions aborted)
     * and in TxnSimulation (seed 721, before this fix).
     */
    @Test
    void aFailedCompleteWriteIsWrittenAgainWithoutSendingTheMarkersAgain() {
        loaded();
        TransactionCoordinator.InitResult p = init("app");
        assertThat(coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(A, B)).join()).isEqualTo(Errors.NONE);
        assertThat(coordinator.endTransaction("app", p.producerId(), p.producerEpoch(), false).join()).isEqualTo(Errors.NONE);
        int sent = markers.sent.size();
        log.failWith = new NotEnoughReplicasException("not replicated in time");
        markers.last().done().complete(null);
        assertThat(log.last().metadata().state()).as("the Complete write was tried").isEqualTo(TransactionState.COMPLETE_ABORT);
        assertThat(markers.sent).as("no marker sent again").hasSize(sent);
        assertThat(coordinator.describe("app").orElseThrow().state()).isEqualTo(TransactionState.PREPARE_ABORT);
        assertThat(coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(A)).join())
                .as("the next transaction waits for the end").isEqualTo(Errors.CONCURRENT_TRANSACTIONS);
        assertThat(coordinator.retryCompletions()).as("still failing").isEqualTo(1);
        assertThat(markers.sent).hasSize(sent);

        log.failWith = null;
        assertThat(coordinator.retryCompletions()).isEqualTo(1);
        assertThat(coordinator.describe("app").orElseThrow().state()).isEqualTo(TransactionState.COMPLETE_ABORT);
        assertThat(markers.sent).as("still no marker sent again").hasSize(sent);
        assertThat(coordinator.retryCompletions()).as("nothing owed").isZero();
        assertThat(coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(A)).join()).isEqualTo(Errors.NONE);
    }

    /** A coordinator that lost the partition owes nothing: the next one ends the transaction from the log. */
    @Test
    void aDeposedCoordinatorNeitherWritesTheCompleteStateAgainNorWantsItsMarkers() {
        loaded();
        TransactionCoordinator.InitResult p = init("app");
        coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(A)).join();
        coordinator.endTransaction("app", p.producerId(), p.producerEpoch(), true).join();
        assertThat(coordinator.coordinates("app", EPOCH)).isTrue();
        log.failWith = new NotEnoughReplicasException("not replicated in time");
        markers.last().done().complete(null);
        int writes = log.writes.size();
        coordinator.resign(PARTITION);
        coordinator.becomeCoordinator(PARTITION, EPOCH + 1);
        assertThat(coordinator.coordinates("app", EPOCH)).as("its markers are no longer wanted").isFalse();
        assertThat(coordinator.coordinates("app", EPOCH + 1)).isTrue();
        assertThat(coordinator.retryCompletions()).isZero();
        assertThat(log.writes).hasSize(writes);
    }

    @Test
    void aWriteThatOutlivesTheCoordinatorsLeadershipAnswersNotCoordinator() {
        loaded();
        TransactionCoordinator.InitResult p = init("app");
        log.autoComplete = false;
        CompletableFuture<Errors> add = coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(A));
        assertThat(coordinator.addPartitions("app", p.producerId(), p.producerEpoch(), Set.of(B)).join())
                .as("while the first is in flight").isEqualTo(Errors.CONCURRENT_TRANSACTIONS);
        coordinator.resign(PARTITION);
        coordinator.becomeCoordinator(PARTITION, EPOCH + 1);
        coordinator.completeLoad(PARTITION, EPOCH + 1, Map.of());
        log.writes.get(log.writes.size() - 1).done().complete(null);
        assertThat(add.join()).isEqualTo(Errors.NOT_COORDINATOR);
        assertThat(coordinator.describe("app")).as("the new epoch's state is what its load read").isEmpty();
    }

    @Test
    void anExhaustedEpochRotatesToANewProducerId() {
        coordinator.becomeCoordinator(PARTITION, EPOCH);
        Map<String, TxnMetadata> stored = new HashMap<>();
        stored.put("app", TxnMetadata.empty("app", 42, (short) (Short.MAX_VALUE - 1), 30_000, 1L));
        coordinator.completeLoad(PARTITION, EPOCH, stored);
        TransactionCoordinator.InitResult r = init("app");
        assertThat(r).isEqualTo(new TransactionCoordinator.InitResult(Errors.NONE, 1000, (short) 0));
        assertThat(log.last().metadata().previousProducerId()).isEqualTo(42);
    }

    @Test
    void noProducerIdAtHandIsRetriable() {
        TransactionCoordinator noIds = new TransactionCoordinator(TransactionCoordinator.Config.DEFAULTS, log, markers, () -> {
            throw new CoordinatorLoadInProgressException("no block yet");
        }, time);
        noIds.becomeCoordinator(PARTITION, EPOCH);
        noIds.completeLoad(PARTITION, EPOCH, Map.of());
        assertThat(noIds.initProducerId("app", 1000, -1, (short) -1).join().error()).isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS);
    }

    @Test
    void idleIdsExpireWithATombstoneButNotWithATransactionOpen() {
        loaded();
        TransactionCoordinator.InitResult p = init("idle");
        TransactionCoordinator.InitResult busy = init("busy");
        coordinator.addPartitions("busy", busy.producerId(), busy.producerEpoch(), Set.of(A)).join();
        time.sleep(3_600_000L);
        assertThat(coordinator.expireTransactionalIds()).isEqualTo(1);
        assertThat(log.last().metadata().transactionalId()).isEqualTo("idle");
        assertThat(log.last().metadata().state()).isEqualTo(TransactionState.DEAD);
        assertThat(coordinator.describe("idle")).isEmpty();
        assertThat(coordinator.describe("busy")).isPresent();
        TransactionCoordinator.InitResult again = init("idle");
        assertThat(again.error()).isEqualTo(Errors.NONE);
        assertThat(again.producerId()).as("a new id").isNotEqualTo(p.producerId());
    }

    @Test
    void transactionsV2BumpTheEpochAtEveryEndAndRecogniseARetryByTheEpochBelow() {
        loaded();
        TransactionCoordinator.InitResult p = init("v2");
        // a V2 produce adds its partition through the leader; the transaction records version 2
        assertThat(coordinator.addPartitions("v2", p.producerId(), (short) 0, Set.of(A), (short) 2).join()).isEqualTo(Errors.NONE);
        assertThat(coordinator.verifyPartitions("v2", p.producerId(), (short) 0, Set.of(A, B)))
                .isEqualTo(Map.of(A, Errors.NONE, B, Errors.TRANSACTION_ABORTABLE));
        TransactionCoordinator.EndResult end = coordinator.endTransaction("v2", p.producerId(), (short) 0, true, (short) 2).join();
        assertThat(end).isEqualTo(new TransactionCoordinator.EndResult(Errors.NONE, p.producerId(), (short) 1));
        // the markers go out at the bumped epoch, as markers of a V2 transaction (the leaders check their epoch is newer)
        assertThat(markers.last().epoch()).isEqualTo((short) 1);
        assertThat(markers.last().transactionVersion()).isEqualTo((short) 2);
        // while they are out: the retry (old epoch) waits, the next transaction's add waits
        assertThat(coordinator.endTransaction("v2", p.producerId(), (short) 0, true, (short) 2).join().error())
                .isEqualTo(Errors.CONCURRENT_TRANSACTIONS);
        assertThat(coordinator.verifyPartitions("v2", p.producerId(), (short) 1, Set.of(A)))
                .isEqualTo(Map.of(A, Errors.CONCURRENT_TRANSACTIONS));
        markers.last().done().complete(null);
        assertThat(log.last().metadata().state()).isEqualTo(TransactionState.COMPLETE_COMMIT);
        // a retry of the completed commit is answered with the epoch to continue with; an abort retry is refused
        assertThat(coordinator.endTransaction("v2", p.producerId(), (short) 0, true, (short) 2).join())
                .isEqualTo(new TransactionCoordinator.EndResult(Errors.NONE, p.producerId(), (short) 1));
        assertThat(coordinator.endTransaction("v2", p.producerId(), (short) 0, false, (short) 2).join().error())
                .isEqualTo(Errors.INVALID_TXN_STATE);
        // the old epoch is fenced everywhere else
        assertThat(coordinator.addPartitions("v2", p.producerId(), (short) 0, Set.of(A), (short) 2).join())
                .isEqualTo(Errors.PRODUCER_FENCED);
        // an abort with nothing added (the client cannot know whether its produce got in) bumps again
        TransactionCoordinator.EndResult empty = coordinator.endTransaction("v2", p.producerId(), (short) 1, false, (short) 2).join();
        assertThat(empty).isEqualTo(new TransactionCoordinator.EndResult(Errors.NONE, p.producerId(), (short) 2));
        assertThat(markers.last().partitions()).isEmpty();
        markers.last().done().complete(null);
        // a commit with nothing added is refused
        assertThat(coordinator.endTransaction("v2", p.producerId(), (short) 2, true, (short) 2).join().error())
                .isEqualTo(Errors.INVALID_TXN_STATE);
        // V1 ends (EndTxn v0-4) keep the epoch
        assertThat(coordinator.addPartitions("v2", p.producerId(), (short) 2, Set.of(B)).join()).isEqualTo(Errors.NONE);
        assertThat(coordinator.endTransaction("v2", p.producerId(), (short) 2, true, (short) 0).join())
                .isEqualTo(new TransactionCoordinator.EndResult(Errors.NONE, p.producerId(), (short) 2));
    }

    @Test
    void aVerificationAnswersPerPartitionAndFencesOtherProducers() {
        loaded();
        TransactionCoordinator.InitResult p = init("ver");
        assertThat(coordinator.addPartitions("ver", p.producerId(), (short) 0, Set.of(A)).join()).isEqualTo(Errors.NONE);
        assertThat(coordinator.verifyPartitions("ver", p.producerId(), (short) 0, Set.of(A))).isEqualTo(Map.of(A, Errors.NONE));
        assertThat(coordinator.verifyPartitions("ver", p.producerId() + 1, (short) 0, Set.of(A)))
                .isEqualTo(Map.of(A, Errors.INVALID_PRODUCER_ID_MAPPING));
        assertThat(coordinator.verifyPartitions("ver", p.producerId(), (short) 1, Set.of(A)))
                .isEqualTo(Map.of(A, Errors.PRODUCER_FENCED));
        assertThat(coordinator.verifyPartitions("nobody", 5, (short) 0, Set.of(A)))
                .isEqualTo(Map.of(A, Errors.INVALID_PRODUCER_ID_MAPPING));
        assertThat(coordinator.endTransaction("ver", p.producerId(), (short) 0, false).join()).isEqualTo(Errors.NONE);
        assertThat(coordinator.verifyPartitions("ver", p.producerId(), (short) 0, Set.of(A)))
                .isEqualTo(Map.of(A, Errors.CONCURRENT_TRANSACTIONS));
        markers.last().done().complete(null);
        // ended: the partition is no longer in a transaction, the write that comes late is refused
        assertThat(coordinator.verifyPartitions("ver", p.producerId(), (short) 0, Set.of(A)))
                .isEqualTo(Map.of(A, Errors.TRANSACTION_ABORTABLE));
    }
}
