package dev.varve.broker.share;

import dev.varve.broker.share.SharePartition.AckBatch;
import dev.varve.broker.share.SharePartition.Acquired;
import dev.varve.broker.share.SharePartition.LogBatch;
import dev.varve.broker.share.SharePartition.RecordState;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Random histories of one share-partition (seeded: fetches by several members, acknowledgements of every
 * type, lock expiry, members leaving, sessions closing, restarts from the persisted snapshot, a log that
 * grows and has control batches), with the guarantees of KIP-932 checked after every step against a model:
 * no record is held by two members at once, no acknowledged or archived record is ever delivered again,
 * a delivery count never exceeds the limit, the start offset never goes back, a restart keeps every
 * finished record finished and every delivery count, and in the end every record is delivered until it is
 * accepted, rejected or archived at the limit.
 */
class SharePartitionProperties {
    private static final int LIMIT = 3;
    private static final long LOCK_MS = 1_000;

    @Property(tries = 300)
    void historiesKeepTheGuarantees(@ForAll long seed) {
        new History(seed, 60 + new Random(seed).nextInt(150)).run(250);
    }

    @Property(tries = 100)
    void aSmallInFlightWindowStillDeliversEverything(@ForAll long seed) {
        History h = new History(seed, 300);
        h.maxInFlight = 7;
        h.run(400);
    }

    private static final class History {
        final Random random;
        final List<LogBatch> log = new ArrayList<>();
        long logEnd;
        int maxInFlight = 50;
        SharePartition sp;
        long now = 0;
        final int finalLogSize;
        /** offset -> member holding it (model). */
        final Map<Long, String> held = new HashMap<>();
        /** offset -> deliveries counted (model). */
        final Map<Long, Integer> deliveries = new HashMap<>();
        /** offsets accepted/rejected/gapped/archived: never to be delivered again. */
        final Set<Long> done = new HashSet<>();
        final Set<Long> control = new HashSet<>();
        long lastStart;

        History(long seed, int finalLogSize) {
            this.random = new Random(seed);
            this.finalLogSize = finalLogSize;
        }

        SharePartition.Config config() {
            return new SharePartition.Config(maxInFlight, LIMIT, LOCK_MS);
        }

        void run(int steps) {
            sp = new SharePartition(config(), 0);
            grow(20);
            for (int i = 0; i < steps; i++) {
                step();
                check();
            }
            drain();
        }

        void grow(int records) {
            while (records > 0 && logEnd < finalLogSize) {
                if (random.nextInt(8) == 0) {
                    log.add(new LogBatch(logEnd, logEnd, true));
                    control.add(logEnd);
                    logEnd++;
                    continue;
                }
                int n = 1 + random.nextInt(Math.min(records, 6));
                log.add(new LogBatch(logEnd, logEnd + n - 1, false));
                logEnd += n;
                records -= n;
            }
        }

        String member() {
            return "m" + random.nextInt(3);
        }

        void step() {
            switch (random.nextInt(10)) {
                case 0, 1, 2 -> fetch(member());
                case 3, 4, 5 -> acknowledge(member());
                case 6 -> {
                    now += random.nextInt((int) LOCK_MS * 2);
                    expire();
                }
                case 7 -> grow(1 + random.nextInt(10));
                case 8 -> {
                    String m = member();
                    boolean closed = random.nextBoolean();
                    sp.releaseMember(m, closed);
                    for (Long o : List.copyOf(held.keySet())) {
                        if (held.get(o).equals(m)) {
                            held.remove(o);
                            if (closed) {
                                deliveries.merge(o, -1, Integer::sum);
                            } else if (deliveries.get(o) >= LIMIT) {
                                done.add(o);
                            }
                        }
                    }
                }
                default -> restart();
            }
        }

        void expire() {
            // the model: every lock taken at least LOCK_MS ago is gone; we do not track lock times per offset,
            // so ask the partition which offsets it freed and check they were held
            Map<Long, String> before = new HashMap<>(held);
            sp.expireLocks(now);
            for (Map.Entry<Long, String> e : before.entrySet()) {
                long o = e.getKey();
                if (sp.stateOf(o) != RecordState.ACQUIRED) {
                    held.remove(o);
                    if (deliveries.get(o) >= LIMIT) {
                        done.add(o);
                        assertThat(sp.stateOf(o)).as("offset %d at the limit is archived", o).isNotEqualTo(RecordState.AVAILABLE);
                    }
                }
            }
        }

        void restart() {
            SharePartition.Snapshot s = sp.snapshot();
            SharePartition restored = SharePartition.restore(config(), s);
            for (long o = 0; o < sp.endOffset(); o++) {
                RecordState was = sp.stateOf(o);
                RecordState is = restored.stateOf(o);
                if (was != null && was.terminal()) {
                    assertThat(is == null ? null : is.terminal()).as("offset %d stays finished after a restart", o).isTrue();
                } else if (was != null && sp.deliveryCountOf(o) < LIMIT) {
                    assertThat(is).as("offset %d is available after a restart", o).isEqualTo(RecordState.AVAILABLE);
                    assertThat(restored.deliveryCountOf(o)).as("offset %d keeps its delivery count", o).isEqualTo(sp.deliveryCountOf(o));
                }
            }
            assertThat(restored.startOffset()).isGreaterThanOrEqualTo(sp.startOffset());
            // locks do not outlive the broker: what was held is available (or archived at the limit)
            for (Long o : held.keySet()) {
                if (deliveries.get(o) >= LIMIT) {
                    done.add(o);
                }
            }
            held.clear();
            sp = restored;
        }

        void fetch(String member) {
            long from = sp.nextFetchOffset();
            if (from < 0) {
                return;
            }
            List<LogBatch> read = new ArrayList<>();
            for (LogBatch b : log) {
                if (b.lastOffset() >= from && read.size() < 4) {
                    read.add(b);
                }
            }
            int max = 1 + random.nextInt(12);
            boolean strict = random.nextBoolean();
            List<Acquired> got = sp.acquire(member, read, max, strict, now);
            int count = 0;
            for (Acquired a : got) {
                for (long o = a.firstOffset(); o <= a.lastOffset(); o++) {
                    count++;
                    assertThat(held).as("offset %d is held already", o).doesNotContainKey(o);
                    assertThat(done).as("offset %d is finished and must never be delivered again", o).doesNotContain(o);
                    assertThat(control).as("control offset %d is never delivered", o).doesNotContain(o);
                    int n = deliveries.merge(o, 1, Integer::sum);
                    assertThat((int) a.deliveryCount()).as("delivery count of %d", o).isEqualTo(n).isLessThanOrEqualTo(LIMIT);
                    held.put(o, member);
                }
            }
            if (strict) {
                assertThat(count).isLessThanOrEqualTo(max);
            }
        }

        void acknowledge(String member) {
            List<Long> mine = held.entrySet().stream().filter(e -> e.getValue().equals(member)).map(Map.Entry::getKey)
                    .sorted().toList();
            boolean lie = random.nextInt(6) == 0;
            if (mine.isEmpty() && !lie) {
                return;
            }
            if (lie) {
                // someone else's or unknown offsets: refused whole, nothing changes
                long o = random.nextInt((int) Math.max(1, logEnd + 5));
                if (member.equals(held.get(o))) {
                    return;
                }
                SharePartition.Snapshot before = sp.snapshot();
                Errors e = sp.acknowledge(member, List.of(new AckBatch(o, o, new byte[]{SharePartition.ACCEPT})), now);
                assertThat(e).isEqualTo(Errors.INVALID_RECORD_STATE);
                assertThat(sp.snapshot()).isEqualTo(before);
                return;
            }
            List<AckBatch> batches = new ArrayList<>();
            int i = 0;
            while (i < mine.size()) {
                if (random.nextInt(3) == 0) {
                    i++;
                    continue;
                }
                int j = i;
                while (j + 1 < mine.size() && mine.get(j + 1) == mine.get(j) + 1 && random.nextInt(4) != 0) {
                    j++;
                }
                byte[] types;
                if (random.nextBoolean()) {
                    types = new byte[]{type()};
                } else {
                    types = new byte[j - i + 1];
                    for (int k = 0; k < types.length; k++) {
                        types[k] = type();
                    }
                }
                batches.add(new AckBatch(mine.get(i), mine.get(j), types));
                i = j + 1;
            }
            if (batches.isEmpty()) {
                return;
            }
            assertThat(SharePartition.validate(batches, true)).isEqualTo(Errors.NONE);
            assertThat(sp.acknowledge(member, batches, now)).isEqualTo(Errors.NONE);
            for (AckBatch b : batches) {
                for (long o = b.firstOffset(); o <= b.lastOffset(); o++) {
                    byte t = b.types().length == 1 ? b.types()[0] : b.types()[(int) (o - b.firstOffset())];
                    switch (t) {
                        case SharePartition.RELEASE -> {
                            held.remove(o);
                            if (deliveries.get(o) >= LIMIT) {
                                done.add(o);
                            }
                        }
                        case SharePartition.RENEW -> {
                        }
                        default -> {
                            held.remove(o);
                            done.add(o);
                        }
                    }
                }
            }
        }

        byte type() {
            return (byte) switch (random.nextInt(8)) {
                case 0, 1, 2, 3 -> SharePartition.ACCEPT;
                case 4, 5 -> SharePartition.RELEASE;
                case 6 -> SharePartition.REJECT;
                default -> SharePartition.RENEW;
            };
        }

        void check() {
            assertThat(sp.startOffset()).as("the start offset never goes back").isGreaterThanOrEqualTo(lastStart);
            lastStart = sp.startOffset();
            assertThat(sp.endOffset() - sp.startOffset()).isLessThanOrEqualTo(maxInFlight + 6L);
            for (Map.Entry<Long, String> e : held.entrySet()) {
                assertThat(sp.stateOf(e.getKey())).as("offset %d held", e.getKey()).isEqualTo(RecordState.ACQUIRED);
                assertThat(sp.ownerOf(e.getKey())).isEqualTo(e.getValue());
            }
            for (long o : done) {
                RecordState s = sp.stateOf(o);
                assertThat(s == null || s.terminal()).as("offset %d finished", o).isTrue();
                assertThat(s).isNotNull();
            }
            assertThat(sp.acquiredCount()).isEqualTo(held.size());
        }

        /** Every lock expires, one member takes and accepts everything left: each record ends accepted or archived. */
        void drain() {
            grow(Integer.MAX_VALUE);
            for (int round = 0; round < 10_000; round++) {
                now += LOCK_MS;
                expire();
                held.clear();
                long from = sp.nextFetchOffset();
                if (from < 0 || from >= logEnd) {
                    break;
                }
                fetchAndAcceptAll("drain");
            }
            assertThat(sp.startOffset()).as("everything delivered until finished").isEqualTo(logEnd);
        }

        void fetchAndAcceptAll(String member) {
            long from = sp.nextFetchOffset();
            fetch(member);
            List<Long> mine = held.entrySet().stream().filter(e -> e.getValue().equals(member)).map(Map.Entry::getKey)
                    .sorted().toList();
            for (long o : mine) {
                assertThat(sp.acknowledge(member, List.of(new AckBatch(o, o, new byte[]{SharePartition.ACCEPT})), now))
                        .isEqualTo(Errors.NONE);
                held.remove(o);
                done.add(o);
            }
            if (mine.isEmpty() && sp.nextFetchOffset() == from) {
                fail("nothing acquired at " + sp.nextFetchOffset() + " though records are there");
            }
        }
    }
}
