package dev.varve.broker.txn;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.coordinator.transaction.TransactionMetadata;
import org.apache.kafka.coordinator.transaction.TxnTransitMetadata;
import org.apache.kafka.server.common.TransactionVersion;

import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Differential: random histories of InitProducerId, AddPartitions, EndTxn, completion, fencing,
 * id rotation and expiry run through Varve's {@link TxnTransitions} and through Kafka 4.4's own
 * {@code TransactionMetadata}; after every step both agree on whether it was allowed and on every
 * field of the result.
 */
class TxnTransitionsProperties {
    private static final List<TopicPartition> TPS = List.of(new TopicPartition("a", 0), new TopicPartition("a", 1),
            new TopicPartition("b", 0));

    /** One step: kind 0-6, and parameters drawn for it. */
    record Op(int kind, int a, int b, boolean flag, boolean v2) {
    }

    @Provide
    Arbitrary<List<Op>> histories() {
        Arbitrary<Op> op = Combinators.combine(Arbitraries.integers().between(0, 6), Arbitraries.integers().between(0, 7),
                Arbitraries.integers().between(0, 3), Arbitraries.of(true, false), Arbitraries.of(true, false)).as(Op::new);
        return op.list().ofMinSize(1).ofMaxSize(30);
    }

    /** One step run on both sides: each side's result, or what it threw. */
    private record Step(TxnMetadata varve, RuntimeException varveFailure, TxnTransitMetadata kafka, RuntimeException kafkaFailure) {
        static Step of(java.util.function.Supplier<TxnMetadata> varve, java.util.function.Supplier<TxnTransitMetadata> kafka) {
            TxnMetadata v = null;
            RuntimeException vf = null;
            TxnTransitMetadata k = null;
            RuntimeException kf = null;
            try {
                v = varve.get();
            } catch (RuntimeException e) {
                vf = e;
            }
            try {
                k = kafka.get();
            } catch (RuntimeException e) {
                kf = e;
            }
            return new Step(v, vf, k, kf);
        }
    }

    private static TransactionVersion tv(boolean v2) {
        return v2 ? TransactionVersion.TV_2 : TransactionVersion.TV_0;
    }

    @Property(tries = 2000)
    void varveMovesAsKafkaDoes(@ForAll("histories") List<Op> history, @ForAll boolean startV2, @ForAll boolean nearExhaustion) {
        long now = 1_000;
        // near Short.MAX_VALUE the epoch runs out within a few steps: bumps are refused, fencing stops
        short startEpoch = nearExhaustion ? (short) (Short.MAX_VALUE - 3) : (short) (startV2 ? 0 : -1);
        TxnMetadata v = new TxnMetadata("t", 100, -1, -1, startEpoch, (short) -1, (short) -1, 60_000,
                TransactionState.EMPTY, Set.of(), -1, now, (short) (startV2 ? 2 : 0));
        TransactionMetadata k = new TransactionMetadata("t", 100, -1, -1, startEpoch, (short) -1, 60_000,
                org.apache.kafka.coordinator.transaction.TransactionState.EMPTY, new HashSet<>(), -1, now, tv(startV2));
        for (Op op : history) {
            now += 10;
            Set<TopicPartition> parts = new HashSet<>(TPS.subList(op.b() % TPS.size(), TPS.size()));
            TxnMetadata cur = v;
            long t = now;
            String what;
            Step step;
            switch (op.kind()) {
                case 0 -> {
                    Optional<Short> expected = switch (op.a() % 4) {
                        case 0 -> Optional.empty();
                        case 1 -> Optional.of(v.producerEpoch());
                        case 2 -> Optional.of(v.lastProducerEpoch());
                        default -> Optional.of((short) 77);
                    };
                    what = "incrementProducerEpoch(expected " + expected + ")";
                    step = Step.of(() -> TxnTransitions.incrementProducerEpoch(cur, 30_000 + op.b(), expected, t),
                            () -> k.prepareIncrementProducerEpoch(30_000 + op.b(), expected, t));
                }
                case 1 -> {
                    what = "rotateProducerId(" + op.flag() + ")";
                    step = Step.of(() -> TxnTransitions.rotateProducerId(cur, 200 + op.a(), 30_000, t, op.flag()),
                            () -> k.prepareProducerIdRotation(200 + op.a(), 30_000, t, op.flag()));
                }
                case 2 -> {
                    what = "fenceProducerEpoch";
                    step = Step.of(() -> TxnTransitions.fenceProducerEpoch(cur), k::prepareFenceProducerEpoch);
                }
                case 3 -> {
                    what = "addPartitions(" + parts + ", v2 " + op.v2() + ")";
                    step = Step.of(() -> TxnTransitions.addPartitions(cur, parts, t, tv(op.v2()).featureLevel()),
                            () -> k.prepareAddPartitions(parts, t, tv(op.v2())));
                }
                case 4 -> {
                    long nextPid = op.a() % 2 == 0 ? -1 : 300 + op.a();
                    boolean noPartitionAdded = op.b() == 0;
                    what = (op.flag() ? "commit" : "abort") + "(v2 " + op.v2() + ", next " + nextPid + ", noPartitionAdded "
                            + noPartitionAdded + ")";
                    step = Step.of(() -> TxnTransitions.prepareEnd(cur, op.flag(), tv(op.v2()).featureLevel(), nextPid, t,
                                    noPartitionAdded),
                            () -> k.prepareAbortOrCommit(op.flag() ? org.apache.kafka.coordinator.transaction.TransactionState.PREPARE_COMMIT
                                    : org.apache.kafka.coordinator.transaction.TransactionState.PREPARE_ABORT,
                                    tv(op.v2()), nextPid, t, noPartitionAdded));
                }
                case 5 -> {
                    what = "complete";
                    step = Step.of(() -> TxnTransitions.complete(cur, t), () -> k.prepareComplete(t));
                }
                default -> {
                    what = "dead";
                    step = Step.of(() -> TxnTransitions.dead(cur), k::prepareDead);
                }
            }
            TxnMetadata vNext = step.varve();
            TxnTransitMetadata kNext = step.kafka();
            RuntimeException vFailure = step.varveFailure();
            RuntimeException kFailure = step.kafkaFailure();
            String at = what + " from " + v + " (Kafka: " + kNext + ")";
            assertThat(vFailure == null).as("allowed by Varve as by Kafka: %s (Varve: %s, Kafka: %s)", at, vFailure, kFailure)
                    .isEqualTo(kFailure == null);
            if (kFailure != null) {
                if (kFailure instanceof org.apache.kafka.common.errors.ApiException) {
                    assertThat(vFailure.getClass()).as("the error a client gets, " + at).isEqualTo(kFailure.getClass());
                } else {
                    assertThat(vFailure).as("a refused transition, " + at)
                            .isInstanceOfAny(IllegalStateException.class, IllegalArgumentException.class);
                }
                if (k.pendingTransitionInProgress()) {
                    return; // Kafka left a pending transition behind: the history ends here
                }
                continue;
            }
            assertThat(vNext.state().stateName()).as(at).isEqualTo(kNext.txnState().stateName());
            assertThat(vNext.producerId()).as("producerId after " + at).isEqualTo(kNext.producerId());
            assertThat(vNext.previousProducerId()).as("prevProducerId after " + at).isEqualTo(kNext.prevProducerId());
            assertThat(vNext.nextProducerId()).as("nextProducerId after " + at).isEqualTo(kNext.nextProducerId());
            assertThat(vNext.producerEpoch()).as("epoch after " + at).isEqualTo(kNext.producerEpoch());
            assertThat(vNext.lastProducerEpoch()).as("last epoch after " + at).isEqualTo(kNext.lastProducerEpoch());
            assertThat(vNext.timeoutMs()).as("timeout after " + at).isEqualTo(kNext.txnTimeoutMs());
            assertThat(vNext.partitions()).as("partitions after " + at).isEqualTo(kNext.topicPartitions());
            assertThat(vNext.startTimestampMs()).as("start after " + at).isEqualTo(kNext.txnStartTimestamp());
            assertThat(vNext.lastUpdateTimestampMs()).as("update time after " + at).isEqualTo(kNext.txnLastUpdateTimestamp());
            assertThat(vNext.clientTransactionVersion()).as("client version after " + at)
                    .isEqualTo(kNext.clientTransactionVersion().featureLevel());
            if (vNext.state() == TransactionState.DEAD) {
                return; // an expired id is removed, never completed: the history ends
            }
            try {
                k.completeTransitionTo(kNext);
            } catch (IllegalStateException kafkaWouldNotComplete) {
                return; // a step Kafka's coordinator never takes in this order (its completion check refuses it)
            }
            v = vNext;
        }
    }
}
