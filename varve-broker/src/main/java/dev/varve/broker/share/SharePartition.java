package dev.varve.broker.share;

import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The delivery state of one share-partition (a share group's view of one topic-partition, KIP-932): a
 * pure state machine, no threads, no clock of its own (every call that depends on time takes
 * {@code nowMs}); not thread-safe (its owner serializes calls).
 *
 * <pre>
 *   offsets:   ... start (SPSO)                                  end (SPEO) ...
 *                  |  in flight: AVAILABLE / ACQUIRED(member, lock) |  never delivered yet
 *                  |  absent = terminal (ACKNOWLEDGED / ARCHIVED,   |
 *                  |  or no record at that offset)                  |
 * </pre>
 *
 * Only non-terminal offsets are kept ({@code entries}); an offset in {@code [start, end)} without an
 * entry is done: acknowledged, archived, or a gap in the log (compacted away, a control or aborted
 * batch). {@code start} is always the first entry (or {@code end} when there is none), so it moves
 * forward over every contiguous run of terminal offsets and never back (except by an explicit
 * {@link #resetTo}, the admin's AlterShareGroupOffsets). New offsets are acquired only below
 * {@code start + maxInFlight} ({@code group.share.partition.max.record.locks}), Kafka's bound on
 * {@code SPEO - SPSO}, which also bounds the memory held here.
 *
 * <p>Transitions: AVAILABLE -acquire-> ACQUIRED (delivery count + 1, lock until now + lock duration);
 * ACQUIRED -ACCEPT/GAP/REJECT-> terminal; ACQUIRED -RELEASE, lock expiry, member gone-> AVAILABLE, or
 * ARCHIVED once the delivery count has reached the limit; ACQUIRED -RENEW-> ACQUIRED with a new lock;
 * ACQUIRED -released by a normal session close-> AVAILABLE with its delivery count given back (the
 * records were fetched but never handed to the application, Kafka's KAFKA-17541).
 */
public final class SharePartition {
    /** Kafka's record states, with the ids Kafka persists (ShareSnapshotValue.StateBatch.DeliveryState). */
    public enum RecordState {
        AVAILABLE((byte) 0), ACQUIRED((byte) 1), ACKNOWLEDGED((byte) 2), ARCHIVED((byte) 4);

        public final byte id;

        RecordState(byte id) {
            this.id = id;
        }

        public boolean terminal() {
            return this == ACKNOWLEDGED || this == ARCHIVED;
        }

        public static RecordState forId(byte id) {
            for (RecordState s : values()) {
                if (s.id == id) {
                    return s;
                }
            }
            throw new IllegalArgumentException("unknown delivery state " + id);
        }
    }

    /** Acknowledge types of ShareFetch/ShareAcknowledge (KIP-932; RENEW from v2, KIP-1222). */
    public static final byte GAP = 0, ACCEPT = 1, RELEASE = 2, REJECT = 3, RENEW = 4;

    /**
     * @param maxInFlight        group.share.partition.max.record.locks: SPEO - SPSO stays within it for new offsets
     * @param deliveryCountLimit group.share.delivery.count.limit: a record is archived after that many deliveries
     * @param lockDurationMs     group.share.record.lock.duration.ms
     */
    public record Config(int maxInFlight, int deliveryCountLimit, long lockDurationMs) {
        public Config {
            if (maxInFlight < 1 || deliveryCountLimit < 1 || deliveryCountLimit > Short.MAX_VALUE || lockDurationMs < 1) {
                throw new IllegalArgumentException("bad share-partition config " + maxInFlight + "/" + deliveryCountLimit
                        + "/" + lockDurationMs);
            }
        }
    }

    /**
     * A batch of the log as read: its offsets, and whether it is skipped (a control batch, or an aborted
     * transaction's batch under read_committed): skipped offsets are never delivered.
     */
    public record LogBatch(long firstOffset, long lastOffset, boolean skip) {
    }

    /** A range of offsets acquired by one fetch, with the delivery count they now have. */
    public record Acquired(long firstOffset, long lastOffset, short deliveryCount) {
    }

    /** One acknowledgement batch: {@code types} has one type for the whole range or one per offset. */
    public record AckBatch(long firstOffset, long lastOffset, byte[] types) {
    }

    /** A range of offsets in one persisted state (ACQUIRED is persisted as AVAILABLE: a lock does not outlive its broker). */
    public record StateBatch(long firstOffset, long lastOffset, RecordState state, short deliveryCount) {
    }

    /** The persisted form: the start offset and the ranges of [start, end) in order, without holes. */
    public record Snapshot(long startOffset, List<StateBatch> batches) {
        public Snapshot {
            batches = List.copyOf(batches);
        }

        /** The end offset the snapshot implies. */
        public long endOffset() {
            return batches.isEmpty() ? startOffset : Math.max(startOffset, batches.get(batches.size() - 1).lastOffset() + 1);
        }
    }

    private static final class Entry {
        RecordState state;
        short deliveryCount;
        String member;
        long lockExpiryMs;

        Entry(RecordState state, short deliveryCount) {
            this.state = state;
            this.deliveryCount = deliveryCount;
        }
    }

    private final Config config;
    private final TreeMap<Long, Entry> entries = new TreeMap<>();
    private long start;
    private long end;
    private int acquiredCount;

    public SharePartition(Config config, long startOffset) {
        if (startOffset < 0) {
            throw new IllegalArgumentException("start offset " + startOffset);
        }
        this.config = config;
        this.start = startOffset;
        this.end = startOffset;
    }

    /** A share-partition as {@code snapshot} left it: acquired records are available again, delivery counts kept. */
    public static SharePartition restore(Config config, Snapshot snapshot) {
        SharePartition sp = new SharePartition(config, Math.max(0, snapshot.startOffset()));
        sp.load(snapshot);
        return sp;
    }

    private void load(Snapshot snapshot) {
        entries.clear();
        acquiredCount = 0;
        end = start;
        // a snapshot holds at most max.record.locks open offsets; never materialize more than that window
        // (a corrupt or foreign snapshot must not make us allocate millions of entries)
        long cap = start + Math.max(config.maxInFlight(), 1);
        for (StateBatch b : snapshot.batches()) {
            if (b.lastOffset() < start || b.firstOffset() > b.lastOffset()) {
                continue;
            }
            long from = Math.max(b.firstOffset(), start);
            if (b.state().terminal()) {
                end = Math.max(end, b.lastOffset() + 1);
                continue;
            }
            long to = Math.min(b.lastOffset(), cap - 1);
            for (long o = from; o <= to; o++) {
                entries.put(o, new Entry(RecordState.AVAILABLE,
                        (short) Math.max(0, Math.min(b.deliveryCount(), config.deliveryCountLimit()))));
            }
            end = Math.max(end, to + 1);
            if (to < b.lastOffset()) {
                break; // the rest is read from the log again
            }
        }
        // a record restored at the limit is done
        entries.values().removeIf(e -> e.deliveryCount >= config.deliveryCountLimit());
        advanceStart();
    }

    public long startOffset() {
        return start;
    }

    public long endOffset() {
        return end;
    }

    /** Records currently acquired (locked) by some member. */
    public int acquiredCount() {
        return acquiredCount;
    }

    /** The open (AVAILABLE or ACQUIRED) offsets in flight. */
    public int inFlightCount() {
        return entries.size();
    }

    /** The state of {@code offset}: terminal below the start and in holes; null at or past the end (not yet delivered). */
    public RecordState stateOf(long offset) {
        if (offset >= end) {
            return null;
        }
        Entry e = entries.get(offset);
        return e == null ? RecordState.ACKNOWLEDGED : e.state;
    }

    public short deliveryCountOf(long offset) {
        Entry e = entries.get(offset);
        return e == null ? 0 : e.deliveryCount;
    }

    public String ownerOf(long offset) {
        Entry e = entries.get(offset);
        return e == null ? null : e.member;
    }

    /**
     * Where a read of the log for this partition starts: the first AVAILABLE offset, else the end; -1
     * when nothing could be acquired (nothing available and the in-flight window is full).
     */
    public long nextFetchOffset() {
        for (Map.Entry<Long, Entry> e : entries.entrySet()) {
            if (e.getValue().state == RecordState.AVAILABLE) {
                return e.getKey();
            }
        }
        return end < start + config.maxInFlight() ? end : -1;
    }

    /**
     * Acquires for {@code member} the AVAILABLE offsets of {@code batches} (in offset order) and the new
     * ones past the end, up to {@code maxRecords}: with {@code strictLimit} exactly (ShareAcquireMode
     * record_limit), otherwise stopping only at a batch boundary once the limit is reached (batch_optimized,
     * Kafka's default: whole batches, possibly more than asked).
     */
    public List<Acquired> acquire(String member, List<LogBatch> batches, int maxRecords, boolean strictLimit, long nowMs) {
        return acquire(member, batches, maxRecords, strictLimit, nowMs, config.lockDurationMs());
    }

    /** As {@link #acquire(String, List, int, boolean, long)}, the locks lasting {@code lockDurationMs} (the group's). */
    public List<Acquired> acquire(String member, List<LogBatch> batches, int maxRecords, boolean strictLimit, long nowMs,
                                  long lockDurationMs) {
        if (lockDurationMs < 1) {
            throw new IllegalArgumentException("lock duration " + lockDurationMs);
        }
        List<Acquired> out = new ArrayList<>();
        int count = 0;
        long windowEnd = start + config.maxInFlight();
        outer:
        for (LogBatch b : batches) {
            if (b.lastOffset() < start || b.firstOffset() > b.lastOffset()) {
                continue;
            }
            if (count >= maxRecords) {
                break;
            }
            if (b.skip()) {
                // never delivered: past the end it becomes a hole (done); inside the window nothing changes
                if (b.lastOffset() >= end) {
                    end = Math.max(end, Math.min(b.lastOffset() + 1, windowEnd));
                }
                continue;
            }
            for (long o = Math.max(b.firstOffset(), start); o <= b.lastOffset(); o++) {
                if (strictLimit && count >= maxRecords) {
                    break outer;
                }
                Entry e;
                if (o < end) {
                    e = entries.get(o);
                    if (e == null || e.state != RecordState.AVAILABLE) {
                        continue;
                    }
                } else {
                    if (o >= windowEnd) {
                        break outer; // the in-flight window is full
                    }
                    e = new Entry(RecordState.AVAILABLE, (short) 0);
                    entries.put(o, e);
                    end = o + 1; // offsets skipped between the old end and o are holes: done
                }
                e.state = RecordState.ACQUIRED;
                e.deliveryCount++;
                e.member = member;
                e.lockExpiryMs = nowMs + lockDurationMs;
                acquiredCount++;
                count++;
                Acquired last = out.isEmpty() ? null : out.get(out.size() - 1);
                if (last != null && last.lastOffset() == o - 1 && last.deliveryCount() == e.deliveryCount) {
                    out.set(out.size() - 1, new Acquired(last.firstOffset(), o, e.deliveryCount));
                } else {
                    out.add(new Acquired(o, o, e.deliveryCount));
                }
            }
        }
        advanceStart();
        return out;
    }

    /**
     * Checks acknowledgement batches as Kafka checks them before touching any state: each with
     * first <= last, ascending and not overlapping, one type or one per offset, each type known
     * (RENEW only when {@code renewAllowed}). INVALID_REQUEST otherwise.
     */
    public static Errors validate(List<AckBatch> batches, boolean renewAllowed) {
        long previousLast = -1;
        for (AckBatch b : batches) {
            if (b.firstOffset() < 0 || b.firstOffset() > b.lastOffset() || b.firstOffset() <= previousLast) {
                return Errors.INVALID_REQUEST;
            }
            previousLast = b.lastOffset();
            long size = b.lastOffset() - b.firstOffset() + 1;
            if (b.types() == null || b.types().length == 0 || (b.types().length != 1 && b.types().length != size)) {
                return Errors.INVALID_REQUEST;
            }
            for (byte t : b.types()) {
                if (t < GAP || t > (renewAllowed ? RENEW : REJECT)) {
                    return Errors.INVALID_REQUEST;
                }
            }
        }
        return Errors.NONE;
    }

    /**
     * Applies {@code member}'s acknowledgements, all or nothing: every offset named must be ACQUIRED by
     * {@code member} (INVALID_RECORD_STATE otherwise, nothing changes). The batches must have passed
     * {@link #validate}.
     */
    public Errors acknowledge(String member, List<AckBatch> batches, long nowMs) {
        return acknowledge(member, batches, nowMs, config.lockDurationMs());
    }

    /** As {@link #acknowledge(String, List, long)}; a RENEW extends the lock by {@code lockDurationMs} (the group's). */
    public Errors acknowledge(String member, List<AckBatch> batches, long nowMs, long lockDurationMs) {
        for (AckBatch b : batches) {
            // more offsets than are in flight cannot all be acquired: refuse before walking them
            if (b.firstOffset() < start || b.lastOffset() >= end || b.lastOffset() - b.firstOffset() >= entries.size()) {
                return Errors.INVALID_RECORD_STATE;
            }
            for (long o = b.firstOffset(); o <= b.lastOffset(); o++) {
                Entry e = entries.get(o);
                if (e == null || e.state != RecordState.ACQUIRED || !member.equals(e.member)) {
                    return Errors.INVALID_RECORD_STATE;
                }
            }
        }
        for (AckBatch b : batches) {
            for (long o = b.firstOffset(); o <= b.lastOffset(); o++) {
                byte type = b.types().length == 1 ? b.types()[0] : b.types()[(int) (o - b.firstOffset())];
                Entry e = entries.get(o);
                switch (type) {
                    case GAP, ACCEPT, REJECT -> finish(o);
                    case RELEASE -> release(o, e);
                    case RENEW -> e.lockExpiryMs = nowMs + lockDurationMs;
                    default -> throw new IllegalArgumentException("acknowledge type " + type);
                }
            }
        }
        advanceStart();
        return Errors.NONE;
    }

    /**
     * Gives back every record {@code member} holds: AVAILABLE again. With {@code notDelivered} (a session
     * closed normally: the records were fetched, never handed to the application) the delivery is not
     * counted; otherwise (member fenced or gone) as at lock expiry: archived once at the limit.
     *
     * @return how many records were released
     */
    public int releaseMember(String member, boolean notDelivered) {
        if (acquiredCount == 0) {
            return 0;
        }
        int n = 0;
        Iterator<Map.Entry<Long, Entry>> it = entries.entrySet().iterator();
        List<Long> archived = new ArrayList<>();
        while (it.hasNext()) {
            Map.Entry<Long, Entry> me = it.next();
            Entry e = me.getValue();
            if (e.state == RecordState.ACQUIRED && member.equals(e.member)) {
                n++;
                if (notDelivered) {
                    e.deliveryCount = (short) Math.max(0, e.deliveryCount - 1);
                    e.state = RecordState.AVAILABLE;
                    e.member = null;
                    acquiredCount--;
                } else if (e.deliveryCount >= config.deliveryCountLimit()) {
                    archived.add(me.getKey());
                } else {
                    e.state = RecordState.AVAILABLE;
                    e.member = null;
                    acquiredCount--;
                }
            }
        }
        archived.forEach(this::finish);
        advanceStart();
        return n;
    }

    /** The earliest lock expiry of an acquired record, or Long.MAX_VALUE with none. */
    public long nextLockExpiryMs() {
        if (acquiredCount == 0) {
            return Long.MAX_VALUE;
        }
        long min = Long.MAX_VALUE;
        for (Entry e : entries.values()) {
            if (e.state == RecordState.ACQUIRED) {
                min = Math.min(min, e.lockExpiryMs);
            }
        }
        return min;
    }

    /**
     * Expires acquisition locks due at {@code nowMs}: the records become AVAILABLE, or ARCHIVED at the
     * delivery-count limit.
     *
     * @return how many locks expired
     */
    public int expireLocks(long nowMs) {
        if (acquiredCount == 0) {
            return 0;
        }
        List<Long> due = new ArrayList<>();
        for (Map.Entry<Long, Entry> me : entries.entrySet()) {
            Entry e = me.getValue();
            if (e.state == RecordState.ACQUIRED && e.lockExpiryMs <= nowMs) {
                due.add(me.getKey());
            }
        }
        for (long o : due) {
            release(o, entries.get(o));
        }
        advanceStart();
        return due.size();
    }

    /**
     * Records gone from the log (retention, DeleteRecords): the start moves to the log start.
     */
    public void advanceLogStart(long logStartOffset) {
        if (logStartOffset <= start) {
            return;
        }
        while (!entries.isEmpty() && entries.firstKey() < logStartOffset) {
            Entry e = entries.pollFirstEntry().getValue();
            if (e.state == RecordState.ACQUIRED) {
                acquiredCount--;
            }
        }
        end = Math.max(end, logStartOffset);
        start = entries.isEmpty() ? end : entries.firstKey();
        if (start < logStartOffset) {
            start = logStartOffset;
        }
    }

    /** The admin moves the start (AlterShareGroupOffsets, a group with no member): everything in flight is forgotten. */
    public void resetTo(long startOffset) {
        entries.clear();
        acquiredCount = 0;
        start = Math.max(0, startOffset);
        end = start;
    }

    /** The persisted form of the current state (see {@link Snapshot}). */
    public Snapshot snapshot() {
        List<StateBatch> out = new ArrayList<>();
        long next = start;
        for (Map.Entry<Long, Entry> me : entries.entrySet()) {
            long o = me.getKey();
            Entry e = me.getValue();
            if (o > next) {
                add(out, next, o - 1, RecordState.ACKNOWLEDGED, (short) 0);
            }
            add(out, o, o, RecordState.AVAILABLE, e.deliveryCount);
            next = o + 1;
        }
        if (end > next) {
            add(out, next, end - 1, RecordState.ACKNOWLEDGED, (short) 0);
        }
        return new Snapshot(start, out);
    }

    private static void add(List<StateBatch> out, long first, long last, RecordState state, short count) {
        StateBatch prev = out.isEmpty() ? null : out.get(out.size() - 1);
        if (prev != null && prev.lastOffset() == first - 1 && prev.state() == state && prev.deliveryCount() == count) {
            out.set(out.size() - 1, new StateBatch(prev.firstOffset(), last, state, count));
        } else {
            out.add(new StateBatch(first, last, state, count));
        }
    }

    /** An independent copy of this partition's state (to put back with {@link #restoreFrom} if a write fails). */
    public SharePartition copy() {
        SharePartition c = new SharePartition(config, start);
        c.end = end;
        c.acquiredCount = acquiredCount;
        entries.forEach((o, e) -> {
            Entry x = new Entry(e.state, e.deliveryCount);
            x.member = e.member;
            x.lockExpiryMs = e.lockExpiryMs;
            c.entries.put(o, x);
        });
        return c;
    }

    /** Takes the state of {@code other} (a {@link #copy} made before a change whose write failed). */
    public void restoreFrom(SharePartition other) {
        SharePartition c = other.copy();
        entries.clear();
        entries.putAll(c.entries);
        start = c.start;
        end = c.end;
        acquiredCount = c.acquiredCount;
    }

    private void release(long offset, Entry e) {
        if (e.deliveryCount >= config.deliveryCountLimit()) {
            finish(offset);
            return;
        }
        e.state = RecordState.AVAILABLE;
        e.member = null;
        acquiredCount--;
    }

    /** ACQUIRED to a terminal state: the entry goes. */
    private void finish(long offset) {
        Entry e = entries.remove(offset);
        if (e != null && e.state == RecordState.ACQUIRED) {
            acquiredCount--;
        }
    }

    private void advanceStart() {
        start = entries.isEmpty() ? end : entries.firstKey();
    }
}
