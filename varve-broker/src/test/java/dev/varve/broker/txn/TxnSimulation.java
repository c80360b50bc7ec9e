package dev.varve.broker.txn;

import dev.varve.broker.ManualTime;
import dev.varve.broker.TxnPartitionVerifier;
import dev.varve.storage.ProducerStateTable;
import dev.varve.storage.VerificationGuard;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Utils;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A deterministic simulation of the transaction protocol: the real {@link TransactionCoordinator} of
 * every broker (with its {@link TxnTransitions}), {@code __transaction_state} records in Kafka's format
 * ({@link TransactionRecords}, decoded again at every load), and each data partition's real
 * {@link ProducerStateTable} (epoch and sequence checks, the KIP-890 verification guard, markers) —
 * and a {@code __consumer_offsets} partition that takes TxnOffsetCommit writes as the group
 * coordinator appends them (epoch-checked, guarded) — under transactional producers that behave as Kafka's do (V1 with AddPartitionsToTxn, V2 adding
 * partitions through Produce and bumping the epoch with every EndTxn; retries, KIP-360 epoch bumps,
 * fatal fencing), on one thread with a seeded schedule.
 *
 * <p>The nemesis moves the leadership of {@code __transaction_state} partitions (the coordinator fails
 * over: the writes it had not replicated may or may not survive) and of data partitions (the new
 * leader rebuilds its producer state from the log, forgetting verifications in progress), crashes
 * brokers (their coordinator and marker sender die with them) and restarts them, starts a second
 * instance of a transactional id (a zombie), and abandons producers mid-transaction (the coordinator's
 * timeout must end it). Writes to {@code __transaction_state} fail before or after reaching the
 * leader's log; requests and responses are delayed, some far past the client's timeout, or lost.
 *
 * <p>After the faults stop and every broker is back, the producers finish, time passes beyond every
 * transaction timeout, and {@link #check} judges the run: every transaction ended the same way on every
 * partition it wrote to, as its producer was told (a commit acknowledged is committed everywhere, an
 * abort aborted everywhere), no transaction is left open on any partition (none hangs), two
 * transactions never share one open span of a producer on a partition, the coordinator holds no
 * transaction in progress, every producer still running got through, and InitProducerId never hands
 * out an epoch of a producer id that is not above every epoch handed out before (so every older
 * instance is fenced).
 *
 * <p>The wiring between these parts — how a partition leader verifies or adds a partition before a
 * transactional append (Kafka's produce path, {@code ProduceHandler}), how markers are delivered and
 * retried (Kafka's marker channel) and how a coordinator's partition is loaded ({@code TransactionLog}) —
 * is the simulation's own, kept to the rules those classes follow.
 */
final class TxnSimulation {
    /** How a run is shaped. */
    record Settings(long seed, int brokers, int statePartitions, int dataPartitions, int transactionalIds,
                    long faultsUntilMs, long newTransactionsUntilMs, long endMs, boolean verification) {
        static Settings of(long seed) {
            return new Settings(seed, 3, 2, 4, 4, 15_000, 20_000, 45_000, true);
        }

        Settings withoutVerification() {
            return new Settings(seed, brokers, statePartitions, dataPartitions, transactionalIds, faultsUntilMs,
                    newTransactionsUntilMs, endMs, false);
        }
    }

    /** What a run found: the invariants broken (empty: none), counts, and the end of its trace. */
    record Result(long seed, List<String> violations, Map<String, Integer> counts, List<String> trace) {
        boolean valid() {
            return violations.isEmpty();
        }

        @Override
        public String toString() {
            StringBuilder b = new StringBuilder("seed ").append(seed).append(": ").append(counts).append('\n');
            violations.stream().limit(20).forEach(v -> b.append("  VIOLATION ").append(v).append('\n'));
            if (!violations.isEmpty()) {
                b.append("  last events:\n");
                trace.forEach(t -> b.append("    ").append(t).append('\n'));
            }
            return b.toString();
        }
    }

    static final String TOPIC = "data";
    /** The events a failed run prints: the last 300, or all of them when one seed is replayed. */
    static final int TRACE_LIMIT = Long.getLong("varve.txnsim.seed") != null ? Integer.MAX_VALUE : 300;
    static final int TXN_TIMEOUT_MS = 3_000;
    static final long REQUEST_TIMEOUT_MS = 1_000;
    static final TransactionCoordinator.Config CONFIG = new TransactionCoordinator.Config(60_000, 12_000);

    private final Settings settings;
    private final Random random;
    private final PriorityQueue<Event> queue = new PriorityQueue<>();
    private long now;
    private long sequence;
    private final ManualTime time = ManualTime.viewOf(() -> now);
    private final ArrayDeque<String> trace = new ArrayDeque<>();
    private final List<String> violations = new ArrayList<>();
    private final Map<String, Integer> counts = new java.util.TreeMap<>();
    private long nextProducerId = 1_000;

    private final List<Broker> brokers = new ArrayList<>();
    private final List<StatePartition> state = new ArrayList<>();
    private final List<DataPartition> data = new ArrayList<>();
    private final Map<String, Client> clients = new LinkedHashMap<>();
    /** What each transaction's producer was told at its end. */
    private final Map<String, Outcome> outcomes = new HashMap<>();
    /** The highest epoch of each producer id a client was given. */
    private final Map<Long, Short> handedOut = new HashMap<>();

    enum Outcome { OPEN, COMMITTED, ABORTED, UNKNOWN }

    private record Event(long at, long seq, Runnable run) implements Comparable<Event> {
        @Override
        public int compareTo(Event o) {
            return at != o.at ? Long.compare(at, o.at) : Long.compare(seq, o.seq);
        }
    }

    TxnSimulation(Settings settings) {
        this.settings = settings;
        this.random = new Random(settings.seed());
    }

    // ------------------------------------------------------------------ scheduling

    private void after(long delayMs, Runnable run) {
        queue.add(new Event(now + Math.max(0, delayMs), sequence++, run));
    }

    /** A network hop: mostly a few ms, sometimes far past a client's request timeout. */
    private long hop() {
        int r = random.nextInt(1000);
        if (r < 15) {
            return 300 + random.nextInt(2_000);
        }
        return 1 + random.nextInt(8);
    }

    private void trace(String what) {
        if (trace.size() == TRACE_LIMIT) {
            trace.removeFirst();
        }
        trace.addLast(String.format("%6d %s", now, what));
    }

    private void count(String what) {
        counts.merge(what, 1, Integer::sum);
    }

    // ------------------------------------------------------------------ brokers and __transaction_state

    private final class Broker {
        final int id;
        boolean up = true;
        int generation;
        TransactionCoordinator coordinator;

        Broker(int id) {
            this.id = id;
            this.coordinator = newCoordinator();
        }

        TransactionCoordinator newCoordinator() {
            int gen = generation;
            Broker self = this;
            TransactionCoordinator.Log log = new TransactionCoordinator.Log() {
                @Override
                public int partitionFor(String transactionalId) {
                    return TxnSimulation.this.partitionFor(transactionalId);
                }

                @Override
                public CompletableFuture<Void> write(int partition, int coordinatorEpoch, TxnMetadata metadata) {
                    CompletableFuture<Void> f = new CompletableFuture<>();
                    after(hop(), () -> deliverStateWrite(self, gen, partition, coordinatorEpoch, metadata, f));
                    return f;
                }
            };
            TransactionCoordinator.MarkerWriter markers = (id, pid, epoch, coordinatorEpoch, commit, partitions, version) ->
                    sendMarkers(self, gen, id, pid, epoch, coordinatorEpoch, commit, partitions, version);
            TransactionCoordinator.ProducerIds ids = () -> nextProducerId++;
            return new TransactionCoordinator(CONFIG, log, markers, ids, time);
        }

        boolean alive(int gen) {
            return up && generation == gen;
        }
    }

    /** One {@code __transaction_state} partition: its leader's log, replicated up to {@code committed}. */
    private static final class StatePartition {
        final int index;
        int leader;
        int epoch;
        final List<byte[][]> log = new ArrayList<>();
        int committed;

        StatePartition(int index, int leader) {
            this.index = index;
            this.leader = leader;
        }
    }

    int partitionFor(String transactionalId) {
        return Utils.abs(transactionalId.hashCode()) % settings.statePartitions();
    }

    private void deliverStateWrite(Broker b, int gen, int partition, int coordinatorEpoch, TxnMetadata m,
                                   CompletableFuture<Void> f) {
        if (!b.alive(gen)) {
            return; // the broker died with the write: nobody waits for it
        }
        StatePartition sp = state.get(partition);
        if (sp.leader != b.id || sp.epoch != coordinatorEpoch) {
            f.completeExceptionally(new NotLeaderOrFollowerException("not the leader of __transaction_state-" + partition));
            return;
        }
        byte[] value = m.state() == TransactionState.DEAD ? null : TransactionRecords.value(m);
        int r = random.nextInt(100);
        if (r < 4) {
            trace("state-" + partition + " refuses " + m.transactionalId() + " " + m.state() + " (NOT_ENOUGH_REPLICAS)");
            f.completeExceptionally(new NotEnoughReplicasException("ISR too small"));
            return;
        }
        sp.log.add(new byte[][]{TransactionRecords.key(m.transactionalId()), value});
        if (r < 9) {
            // in the leader's log, not replicated in time: a failover may or may not keep it
            trace("state-" + partition + " appends " + describe(m) + " but times out");
            f.completeExceptionally(new TimeoutException("not replicated in time"));
            return;
        }
        sp.committed = sp.log.size();
        trace("state-" + partition + " writes " + describe(m));
        f.complete(null);
    }

    private static String describe(TxnMetadata m) {
        return m.transactionalId() + " " + m.state() + " pid " + m.producerId() + " epoch " + m.producerEpoch()
                + (m.nextProducerId() >= 0 ? " next pid " + m.nextProducerId() : "") + " " + new TreeSet<>(
                m.partitions().stream().map(TopicPartition::partition).toList());
    }

    /** The last record of each id in {@code sp}'s log (what the real TransactionLog#load reads). */
    private static Map<String, TxnMetadata> load(StatePartition sp) {
        Map<String, TxnMetadata> ids = new HashMap<>();
        for (byte[][] rec : sp.log) {
            String id = TransactionRecords.decodeKey(ByteBuffer.wrap(rec[0]));
            if (rec[1] == null) {
                ids.remove(id);
            } else {
                ids.put(id, TransactionRecords.decodeValue(id, ByteBuffer.wrap(rec[1])));
            }
        }
        return ids;
    }

    /** Leadership of {@code sp} moves to {@code to}: the new leader keeps the replicated prefix and maybe more. */
    private void moveState(StatePartition sp, Broker to) {
        int keep = sp.committed + random.nextInt(sp.log.size() - sp.committed + 1);
        while (sp.log.size() > keep) {
            sp.log.remove(sp.log.size() - 1);
        }
        sp.committed = sp.log.size();
        Broker from = brokers.get(sp.leader);
        if (from.up) {
            from.coordinator.resign(sp.index);
        }
        sp.leader = to.id;
        sp.epoch++;
        int epoch = sp.epoch;
        int gen = to.generation;
        trace("state-" + sp.index + " moves to broker " + to.id + " in epoch " + epoch + " (" + keep + " records)");
        to.coordinator.becomeCoordinator(sp.index, epoch);
        after(1 + random.nextInt(30), () -> {
            if (to.alive(gen) && sp.leader == to.id && sp.epoch == epoch) {
                to.coordinator.completeLoad(sp.index, epoch, load(sp));
            }
        });
    }

    // ------------------------------------------------------------------ data partitions and markers

    private record Entry(long offset, long producerId, short epoch, boolean marker, boolean commit, String tag,
                         MemoryRecords batch) {
    }

    private final class DataPartition {
        final TopicPartition tp;
        /** A {@code __consumer_offsets} partition: its transactional writes are a group coordinator's (TxnOffsetCommit). */
        final boolean offsets;
        int leader;
        int leaderEpoch;
        final List<Entry> log = new ArrayList<>();
        ProducerStateTable producers;

        DataPartition(TopicPartition tp, int leader, boolean offsets) {
            this.tp = tp;
            this.offsets = offsets;
            this.leader = leader;
            this.producers = new ProducerStateTable(tp);
        }

        long nextOffset() {
            return log.size();
        }
    }

    private DataPartition partition(TopicPartition tp) {
        return data.stream().filter(d -> d.tp.equals(tp)).findFirst().orElseThrow();
    }

    /** The new leader rebuilds its producer state from the log: verifications begun at the old one are gone. */
    private void moveData(DataPartition dp, Broker to) {
        dp.leader = to.id;
        dp.leaderEpoch++;
        dp.producers = new ProducerStateTable(dp.tp);
        for (Entry e : dp.log) {
            for (RecordBatch batch : e.batch().batches()) {
                dp.producers.update(batch);
            }
        }
        trace(dp.tp + " moves to broker " + to.id);
    }

    /**
     * The marker writer of broker {@code b}: each partition's marker to its leader of the moment, retried
     * while it has none and while {@code b} still coordinates the id in the marker's coordinator epoch.
     */
    private CompletableFuture<Void> sendMarkers(Broker b, int gen, String id, long pid, short epoch, int coordinatorEpoch,
                                                boolean commit, Set<TopicPartition> partitions, short version) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        Set<TopicPartition> remaining = new HashSet<>(partitions);
        if (remaining.isEmpty()) {
            after(hop(), () -> f.complete(null));
        }
        for (TopicPartition tp : partitions) {
            sendMarker(b, gen, id, pid, epoch, coordinatorEpoch, commit, version, tp, remaining, f);
        }
        return f;
    }

    private void sendMarker(Broker b, int gen, String id, long pid, short epoch, int coordinatorEpoch, boolean commit,
                            short version, TopicPartition tp, Set<TopicPartition> remaining, CompletableFuture<Void> f) {
        if (b.alive(gen) && !b.coordinator.coordinates(id, coordinatorEpoch)) {
            // TxnMarkerWriter sends (and retries) a marker only while its coordinator still coordinates
            // the id in that epoch; one already on its way still lands
            f.completeExceptionally(new org.apache.kafka.common.errors.NotCoordinatorException("deposed"));
            return;
        }
        after(hop(), () -> {
            if (!b.alive(gen) || f.isDone()) {
                return;
            }
            DataPartition dp = partition(tp);
            if (!brokers.get(dp.leader).up) {
                after(100, () -> sendMarker(b, gen, id, pid, epoch, coordinatorEpoch, commit, version, tp, remaining, f));
                return;
            }
            try {
                dp.producers.checkMarker(pid, epoch, coordinatorEpoch, version);
            } catch (RuntimeException refused) {
                trace(tp + " refuses the " + (commit ? "commit" : "abort") + " marker of " + id + " pid " + pid + " epoch "
                        + epoch + ": " + Errors.forException(refused));
                count("markers refused");
                f.completeExceptionally(refused); // the writer gives up, as Kafka's does on these errors
                return;
            }
            long offset = dp.nextOffset();
            MemoryRecords marker = MemoryRecords.withEndTransactionMarker(offset, now, dp.leaderEpoch, pid, epoch,
                    new EndTransactionMarker(commit ? ControlRecordType.COMMIT : ControlRecordType.ABORT, coordinatorEpoch));
            for (RecordBatch batch : marker.batches()) {
                dp.producers.update(batch);
            }
            dp.log.add(new Entry(offset, pid, epoch, true, commit, null, marker));
            trace(tp + "@" + offset + " " + (commit ? "COMMIT" : "ABORT") + " " + id + " pid " + pid + " epoch " + epoch
                    + " coordinator epoch " + coordinatorEpoch);
            remaining.remove(tp);
            if (remaining.isEmpty()) {
                after(hop(), () -> {
                    if (b.alive(gen)) {
                        f.complete(null);
                    }
                });
            }
        });
    }

    /**
     * A transactional Produce reaching {@code leader}: Kafka's leader verifies the producer's first
     * write to the partition with the coordinator (V1) or adds the partition (V2), then appends with the
     * verification guard; {@code reply} gets the partition's error.
     */
    private void produce(Broker leader, DataPartition dp, String id, long pid, short epoch, int seq, boolean v2,
                         String tag, Consumer<Errors> reply) {
        if (!leader.up || dp.leader != leader.id) {
            reply.accept(Errors.NOT_LEADER_OR_FOLLOWER);
            return;
        }
        ProducerStateTable table = dp.producers;
        VerificationGuard guard;
        if (!settings.verification() && !v2) {
            guard = null;
        } else {
            try {
                guard = table.startVerification(pid, epoch, v2);
            } catch (RuntimeException e) {
                reply.accept(Errors.forException(e));
                return;
            }
        }
        if (guard == null || guard == VerificationGuard.NONE) {
            reply.accept(append(dp, table, id, pid, epoch, seq, tag, guard));
            return;
        }
        TxnPartitionVerifier.Operation op = v2 ? TxnPartitionVerifier.Operation.ADD : TxnPartitionVerifier.Operation.VERIFY;
        Broker coordinator = brokers.get(state.get(partitionFor(id)).leader);
        int leaderGen = leader.generation;
        after(hop(), () -> {
            Function<Errors, Runnable> answer = error -> () -> {
                if (!leader.alive(leaderGen) || dp.leader != leader.id || dp.producers != table) {
                    reply.accept(Errors.NOT_LEADER_OR_FOLLOWER);
                    return;
                }
                Errors mapped = TxnPartitionVerifier.forProducer(error, op);
                reply.accept(mapped != Errors.NONE ? mapped : append(dp, table, id, pid, epoch, seq, tag, guard));
            };
            if (!coordinator.up) {
                after(REQUEST_TIMEOUT_MS, answer.apply(Errors.REQUEST_TIMED_OUT));
                return;
            }
            if (v2) {
                coordinator.coordinator.addPartitions(id, pid, epoch, Set.of(dp.tp), (short) 2)
                        .thenAccept(error -> after(hop(), answer.apply(error)));
            } else {
                Errors error = coordinator.coordinator.verifyPartitions(id, pid, epoch, Set.of(dp.tp)).get(dp.tp);
                after(hop(), answer.apply(error));
            }
        });
    }

    private Errors append(DataPartition dp, ProducerStateTable table, String id, long pid, short epoch, int seq,
                          String tag, VerificationGuard guard) {
        long offset = dp.nextOffset();
        MemoryRecords records = MemoryRecords.withTransactionalRecords(offset, Compression.NONE, pid, epoch, seq,
                dp.leaderEpoch, new SimpleRecord(now, tag.getBytes(StandardCharsets.UTF_8)));
        try {
            if (dp.offsets) {
                // the group coordinator's write of a TxnOffsetCommit: epoch checked, sequences not (always 0)
                table.checkCoordinatorAppend(records.batches(), guard);
            } else if (table.checkAppend(records.batches(), offset == 0, guard).isPresent()) {
                count("duplicate produce answered");
                return Errors.NONE;
            }
        } catch (RuntimeException refused) {
            trace(dp.tp + " refuses " + tag + " pid " + pid + " epoch " + epoch + " seq " + seq + ": "
                    + Errors.forException(refused));
            return Errors.forException(refused);
        }
        for (RecordBatch batch : records.batches()) {
            table.update(batch);
        }
        dp.log.add(new Entry(offset, pid, epoch, false, false, tag, records));
        trace(dp.tp + "@" + offset + " data " + tag + " (" + id + " pid " + pid + " epoch " + epoch + " seq " + seq + ")");
        return Errors.NONE;
    }

    // ------------------------------------------------------------------ producers

    /** One producer instance with a transactional id, as Kafka's transaction manager behaves. */
    private final class Client {
        final String id;
        final int instance;
        final boolean v2;
        boolean alive = true;
        long pid = RecordBatch.NO_PRODUCER_ID;
        short epoch = RecordBatch.NO_PRODUCER_EPOCH;
        final Map<Integer, Integer> sequences = new HashMap<>();
        int transactions;
        String tag;
        List<DataPartition> partitions = List.of();
        int next;
        int attempts;
        boolean unresolved;
        boolean done;
        long requests;

        Client(String id, int instance, boolean v2) {
            this.id = id;
            this.instance = instance;
            this.v2 = v2;
        }

        String name() {
            return id + "#" + instance;
        }

        void start() {
            trace(name() + " starts (" + (v2 ? "V2" : "V1") + ")");
            initProducerId(false);
        }

        /** Sends a request to the coordinator of the moment; {@code onReply} gets the answer, or null on a timeout. */
        <T> void toCoordinator(Function<TransactionCoordinator, CompletableFuture<T>> call, Consumer<T> onReply) {
            long request = ++requests;
            boolean[] answered = {false};
            Consumer<T> once = v -> {
                if (alive && !answered[0] && requests == request) {
                    answered[0] = true;
                    onReply.accept(v);
                }
            };
            Broker coordinator = brokers.get(state.get(partitionFor(id)).leader);
            int gen = coordinator.generation;
            after(hop(), () -> {
                if (coordinator.alive(gen)) {
                    call.apply(coordinator.coordinator).thenAccept(v -> {
                        if (random.nextInt(100) != 0) { // 1% of answers are lost
                            after(hop(), () -> once.accept(v));
                        }
                    });
                }
            });
            after(REQUEST_TIMEOUT_MS, () -> once.accept(null));
        }

        void retry(Runnable again) {
            after(20 + random.nextInt(80), () -> {
                if (alive) {
                    again.run();
                }
            });
        }

        boolean retriable(Errors e) {
            return e == null || e == Errors.NOT_COORDINATOR || e == Errors.COORDINATOR_NOT_AVAILABLE
                    || e == Errors.COORDINATOR_LOAD_IN_PROGRESS || e == Errors.CONCURRENT_TRANSACTIONS;
        }

        void fatal(String what, Errors e) {
            trace(name() + " fails fatally in " + what + ": " + e);
            count("producers failed fatally");
            count("fatal " + what + " " + e + (clients.get(id) == this ? "" : " (zombie)"));
            die();
        }

        /** The instance stops (fenced, failed or abandoned); what it had in flight may still land. */
        void die() {
            alive = false;
            if (tag != null && outcomes.get(tag) == Outcome.OPEN) {
                outcomes.put(tag, Outcome.UNKNOWN);
            }
            tag = null;
            if (clients.get(id) == this) {
                scheduleSuccessor(this, random.nextInt(4_000));
            }
        }

        void initProducerId(boolean bump) {
            long expectedPid = bump ? pid : RecordBatch.NO_PRODUCER_ID;
            short expectedEpoch = bump ? epoch : RecordBatch.NO_PRODUCER_EPOCH;
            toCoordinator(c -> c.initProducerId(id, TXN_TIMEOUT_MS, expectedPid, expectedEpoch).whenComplete((r, x) -> {
                if (r != null && r.error() == Errors.NONE) {
                    told(name() + "'s InitProducerId", r.producerId(), r.producerEpoch(), !bump);
                }
            }), r -> {
                Errors e = r == null ? null : r.error();
                if (e == Errors.NONE) {
                    setEpoch(r.producerId(), r.producerEpoch());
                    trace(name() + " has pid " + pid + " epoch " + epoch);
                    unresolved = false;
                    begin();
                } else if (retriable(e)) {
                    retry(() -> initProducerId(bump));
                } else {
                    fatal("InitProducerId", e);
                }
            });
        }

        void setEpoch(long newPid, short newEpoch) {
            if (newPid != pid || newEpoch != epoch) {
                sequences.clear();
            }
            pid = newPid;
            epoch = newEpoch;
        }

        void begin() {
            if (!alive) {
                return;
            }
            if (now >= settings.newTransactionsUntilMs()) {
                trace(name() + " is done");
                done = true;
                return;
            }
            if (random.nextInt(100) < 2) {
                trace(name() + " is abandoned between transactions");
                count("producers abandoned");
                die();
                return;
            }
            tag = name() + "/t" + (++transactions);
            outcomes.put(tag, Outcome.OPEN);
            List<DataPartition> chosen = new ArrayList<>(data.stream().filter(d -> !d.offsets).toList());
            java.util.Collections.shuffle(chosen, random);
            partitions = new ArrayList<>(chosen.subList(0, 1 + random.nextInt(Math.min(3, chosen.size()))));
            if (random.nextInt(3) == 0) {
                // sendOffsetsToTransaction: V1 adds the group's partition (AddOffsetsToTxn), V2's TxnOffsetCommit adds it
                partitions.add(data.stream().filter(d -> d.offsets).findFirst().orElseThrow());
            }
            next = 0;
            trace(name() + " begins " + tag + " on " + partitions.stream().map(p -> p.tp.toString()).toList());
            if (v2) {
                produceNext();
            } else {
                addPartitions();
            }
        }

        void addPartitions() {
            Set<TopicPartition> tps = new LinkedHashSet<>();
            partitions.forEach(p -> tps.add(p.tp));
            toCoordinator(c -> c.addPartitions(id, pid, epoch, tps), e -> {
                if (e == Errors.NONE) {
                    produceNext();
                } else if (retriable(e)) {
                    retry(this::addPartitions);
                } else {
                    fatal("AddPartitionsToTxn", e);
                }
            });
        }

        void produceNext() {
            if (!alive) {
                return;
            }
            if (random.nextInt(200) == 0) {
                trace(name() + " is abandoned in " + tag);
                count("producers abandoned");
                die();
                return;
            }
            if (next == partitions.size()) {
                end(random.nextInt(5) != 0);
                return;
            }
            attempts = 0;
            sendBatch();
        }

        void sendBatch() {
            DataPartition dp = partitions.get(next);
            int seq = dp.offsets ? 0 : sequences.getOrDefault(dp.tp.partition(), 0);
            long request = ++requests;
            boolean[] answered = {false};
            String batchTag = tag;
            Consumer<Errors> once = e -> {
                if (alive && !answered[0] && requests == request) {
                    answered[0] = true;
                    onProduced(dp, seq, e);
                }
            };
            Broker leader = brokers.get(dp.leader);
            attempts++;
            long pidNow = pid;
            short epochNow = epoch;
            after(hop(), () -> produce(leader, dp, id, pidNow, epochNow, seq, v2, batchTag, e -> {
                if (random.nextInt(100) != 0) {
                    after(hop(), () -> once.accept(e));
                }
            }));
            after(REQUEST_TIMEOUT_MS, () -> once.accept(null));
        }

        void onProduced(DataPartition dp, int seq, Errors e) {
            if (e == Errors.NONE) {
                if (!dp.offsets) {
                    sequences.put(dp.tp.partition(), seq + 1);
                }
                next++;
                produceNext();
                return;
            }
            boolean timeout = e == null;
            unresolved |= timeout;
            if ((timeout || e == Errors.NOT_LEADER_OR_FOLLOWER || e == Errors.NOT_ENOUGH_REPLICAS
                    || e == Errors.CONCURRENT_TRANSACTIONS) && attempts < 3) {
                retry(this::sendBatch);
                return;
            }
            if (e == Errors.PRODUCER_FENCED) {
                fatal("Produce", e);
                return;
            }
            // an abortable error (or the batch's delivery gave up): abort the transaction
            trace(name() + " aborts " + tag + " after " + (timeout ? "timeouts" : e) + " producing to " + dp.tp);
            count("aborts after a produce error");
            end(false);
        }

        void end(boolean commit) {
            trace(name() + " ends " + tag + " with " + (commit ? "commit" : "abort"));
            endTxn(commit);
        }

        void endTxn(boolean commit) {
            if (v2) {
                toCoordinator(c -> c.endTransaction(id, pid, epoch, commit, (short) 2).whenComplete((r, x) -> {
                    if (r != null && r.error() == Errors.NONE) {
                        told(name() + "'s EndTxn", r.producerId(), r.producerEpoch(), false);
                    }
                }), r -> {
                    Errors e = r == null ? null : r.error();
                    if (e == Errors.NONE) {
                        setEpoch(r.producerId(), r.producerEpoch());
                        ended(commit);
                    } else if (retriable(e)) {
                        retry(() -> endTxn(commit));
                    } else {
                        fatal("EndTxn", e);
                    }
                });
            } else {
                toCoordinator(c -> c.endTransaction(id, pid, epoch, commit), e -> {
                    if (e == Errors.NONE) {
                        ended(commit);
                    } else if (retriable(e)) {
                        retry(() -> endTxn(commit));
                    } else {
                        fatal("EndTxn", e);
                    }
                });
            }
        }

        void ended(boolean commit) {
            outcomes.put(tag, commit ? Outcome.COMMITTED : Outcome.ABORTED);
            count(commit ? "transactions committed" : "transactions aborted");
            trace(name() + " was told " + tag + " " + (commit ? "committed" : "aborted"));
            tag = null;
            if (unresolved && !v2) {
                // KIP-360: a batch whose fate is unknown: bump the epoch before the next transaction
                initProducerId(true);
            } else {
                unresolved = false;
                after(random.nextInt(20), this::begin);
            }
        }
    }

    /**
     * A producer id and epoch the coordinator answered (when it answered, whenever the client hears it):
     * InitProducerId of a new instance must hand out an epoch above every one handed out before for the
     * producer id (else an older instance is not fenced); EndTxn, and a KIP-360 bump retried by the
     * producer that asked for it (Kafka answers the retry with the epoch the first attempt gave), never
     * a lower one.
     */
    private void told(String who, long producerId, short epoch, boolean newInstance) {
        Short before = handedOut.get(producerId);
        if (before != null && (newInstance ? epoch <= before : epoch < before)) {
            violations.add(who + " got epoch " + epoch + " of producer " + producerId + " at " + now
                    + " ms, but epoch " + before + " was handed out before");
        }
        if (before == null || epoch > before) {
            handedOut.put(producerId, epoch);
        }
    }

    private void scheduleSuccessor(Client previous, long delayMs) {
        after(delayMs, () -> {
            if (clients.get(previous.id) != previous || now >= settings.newTransactionsUntilMs()) {
                return;
            }
            Client next = new Client(previous.id, previous.instance + 1, random.nextBoolean());
            clients.put(previous.id, next);
            next.start();
        });
    }

    // ------------------------------------------------------------------ the nemesis

    private List<Broker> up() {
        return brokers.stream().filter(b -> b.up).toList();
    }

    private Broker otherUp(int not) {
        List<Broker> candidates = up().stream().filter(b -> b.id != not).toList();
        return candidates.isEmpty() ? null : candidates.get(random.nextInt(candidates.size()));
    }

    private void nemesis() {
        if (now >= settings.faultsUntilMs()) {
            return;
        }
        int kind = random.nextInt(6);
        switch (kind) {
            case 0, 1 -> {
                StatePartition sp = state.get(random.nextInt(state.size()));
                Broker to = otherUp(sp.leader);
                if (to != null) {
                    count("coordinator failovers");
                    moveState(sp, to);
                }
            }
            case 2 -> {
                DataPartition dp = data.get(random.nextInt(data.size()));
                Broker to = otherUp(dp.leader);
                if (to != null) {
                    count("partition leader failovers");
                    moveData(dp, to);
                }
            }
            case 3 -> {
                if (up().size() == brokers.size()) {
                    crash(brokers.get(random.nextInt(brokers.size())));
                }
            }
            case 4 -> {
                List<Client> alive = clients.values().stream().filter(c -> c.alive).toList();
                if (!alive.isEmpty()) {
                    // a second instance of the id starts while the first still runs: the first is a zombie now
                    Client zombie = alive.get(random.nextInt(alive.size()));
                    Client next = new Client(zombie.id, zombie.instance + 1, random.nextBoolean());
                    trace(zombie.name() + " becomes a zombie");
                    count("zombies");
                    clients.put(zombie.id, next);
                    next.start();
                }
            }
            default -> {
                List<Client> alive = clients.values().stream().filter(c -> c.alive && c.tag != null).toList();
                if (!alive.isEmpty()) {
                    Client c = alive.get(random.nextInt(alive.size()));
                    trace(c.name() + " is abandoned in " + c.tag);
                    count("producers abandoned");
                    c.die();
                }
            }
        }
        after(200 + random.nextInt(1_300), this::nemesis);
    }

    private void crash(Broker b) {
        trace("broker " + b.id + " crashes");
        count("broker crashes");
        b.up = false;
        b.generation++;
        b.coordinator = null;
        for (StatePartition sp : state) {
            if (sp.leader == b.id) {
                moveState(sp, otherUp(b.id));
            }
        }
        for (DataPartition dp : data) {
            if (dp.leader == b.id) {
                moveData(dp, otherUp(b.id));
            }
        }
        after(500 + random.nextInt(2_500), () -> restart(b));
    }

    private void restart(Broker b) {
        if (b.up) {
            return;
        }
        trace("broker " + b.id + " restarts");
        b.up = true;
        b.coordinator = b.newCoordinator();
    }

    private void tick(Broker b) {
        if (b.up) {
            b.coordinator.retryCompletions();
            b.coordinator.abortTimedOutTransactions();
            if (random.nextInt(5) == 0) {
                b.coordinator.expireTransactionalIds();
            }
        }
        if (now < settings.endMs()) {
            after(200, () -> tick(b));
        }
    }

    // ------------------------------------------------------------------ the run

    Result run() {
        for (int i = 0; i < settings.brokers(); i++) {
            brokers.add(new Broker(i));
        }
        for (int p = 0; p < settings.statePartitions(); p++) {
            StatePartition sp = new StatePartition(p, p % settings.brokers());
            state.add(sp);
            Broker leader = brokers.get(sp.leader);
            leader.coordinator.becomeCoordinator(p, 0);
            leader.coordinator.completeLoad(p, 0, Map.of());
        }
        for (int p = 0; p < settings.dataPartitions(); p++) {
            data.add(new DataPartition(new TopicPartition(TOPIC, p), (p + 1) % settings.brokers(), false));
        }
        data.add(new DataPartition(new TopicPartition("__consumer_offsets", 0), settings.brokers() - 1, true));
        for (int i = 0; i < settings.transactionalIds(); i++) {
            Client c = new Client("txn-" + i, 0, random.nextBoolean());
            clients.put(c.id, c);
            after(random.nextInt(100), c::start);
        }
        brokers.forEach(b -> after(200, () -> tick(b)));
        after(500, this::nemesis);
        after(settings.faultsUntilMs(), () -> {
            trace("faults stop");
            brokers.stream().filter(b -> !b.up).forEach(this::restart);
        });
        while (!queue.isEmpty()) {
            Event e = queue.poll();
            now = e.at();
            if (now > settings.endMs()) {
                break;
            }
            try {
                e.run().run();
            } catch (RuntimeException | AssertionError failure) {
                violations.add("at " + now + " ms an event threw " + failure);
                break;
            }
        }
        check();
        return new Result(settings.seed(), violations, counts, List.copyOf(trace));
    }

    // ------------------------------------------------------------------ the checker

    private void check() {
        Map<String, Set<Boolean>> ended = new HashMap<>();
        for (DataPartition dp : data) {
            Map<Long, List<Entry>> open = new HashMap<>();
            for (Entry e : dp.log) {
                if (!e.marker()) {
                    List<Entry> span = open.computeIfAbsent(e.producerId(), k -> new ArrayList<>());
                    if (!span.isEmpty() && !span.get(0).tag().equals(e.tag())) {
                        violations.add(dp.tp + "@" + e.offset() + ": " + e.tag() + " written into the open transaction of "
                                + span.get(0).tag() + " (pid " + e.producerId() + ")");
                    }
                    span.add(e);
                    continue;
                }
                List<Entry> span = open.remove(e.producerId());
                if (span != null) {
                    for (Entry d : span) {
                        ended.computeIfAbsent(d.tag(), k -> new HashSet<>()).add(e.commit());
                    }
                }
            }
            open.forEach((pid, span) -> violations.add(dp.tp + "@" + span.get(0).offset() + ": " + span.get(0).tag()
                    + " (pid " + pid + ") hangs: its transaction was never ended on this partition"));
        }
        ended.forEach((tag, results) -> {
            Outcome told = outcomes.get(tag);
            if (results.size() > 1) {
                violations.add(tag + " is torn: committed on some partitions, aborted on others (producer was told "
                        + told + ")");
            } else if (told == Outcome.COMMITTED && !results.contains(true)) {
                violations.add(tag + " was acknowledged committed but its data was aborted");
            } else if (told == Outcome.ABORTED && !results.contains(false)) {
                violations.add(tag + " was acknowledged aborted but its data was committed");
            }
            count(results.contains(true) ? "transactions with committed data" : "transactions with aborted data");
        });
        for (Client c : clients.values()) {
            if (c.alive && !c.done) {
                violations.add(c.name() + " never got through: still " + (c.tag == null ? "starting" : "in " + c.tag)
                        + " when the run ended");
            }
            StatePartition sp = state.get(partitionFor(c.id));
            Optional<TxnMetadata> m = brokers.get(sp.leader).coordinator.describe(c.id);
            if (m.isPresent() && !(m.get().state() == TransactionState.EMPTY
                    || m.get().state() == TransactionState.COMPLETE_COMMIT || m.get().state() == TransactionState.COMPLETE_ABORT)) {
                violations.add(c.id + " is still " + m.get().state() + " at its coordinator after every timeout passed: "
                        + describe(m.get()));
            }
        }
    }
}
