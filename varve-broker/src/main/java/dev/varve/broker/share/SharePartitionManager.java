package dev.varve.broker.share;

import dev.varve.storage.LogSlice;
import dev.varve.storage.PartitionLog;
import dev.varve.storage.index.TransactionIndex;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.FileLogInputStream;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The share-partitions of this broker: creates each on first use (from its persisted state, else from
 * {@code share.auto.offset.reset}), reads the log and acquires records for a member, applies
 * acknowledgements, expires acquisition locks ({@link #expireLocks}, called periodically), gives back
 * the records of members that leave or close their session, and persists every change before the
 * caller answers.
 *
 * <p>Thread-safety: each share-partition is changed only under its holder's monitor (request threads,
 * the lock sweeper and membership events alike); its state write happens under the same monitor, so
 * the persisted order is the order of changes. Waiting fetches are woken only after that monitor is
 * given back (a woken fetch runs under its purgatory waiter's monitor and takes share-partition
 * monitors: waking while holding one could deadlock). The map of share-partitions is concurrent.
 */
public final class SharePartitionManager implements ShareStates {
    private static final Logger LOG = LoggerFactory.getLogger(SharePartitionManager.class);

    /** Broker-wide settings (Kafka's ShareGroupConfig). */
    public record Config(SharePartition.Config partition, int maxShareSessions) {
    }

    /** What one partition's fetch gives: the records to send (whole batches), the ranges acquired, or an error. */
    public record PartitionFetch(Errors error, FileRecords records, List<SharePartition.Acquired> acquired, int bytes) {
        static final PartitionFetch NOTHING = new PartitionFetch(Errors.NONE, null, List.of(), 0);

        static PartitionFetch error(Errors e) {
            return new PartitionFetch(e, null, List.of(), 0);
        }
    }

    private static final class Holder {
        final SharePartitionKey key;
        final TopicPartition tp;
        SharePartition partition; // null until initialized
        SharePartition.Snapshot written;
        int snapshotEpoch;
        volatile long nextLockExpiryMs = Long.MAX_VALUE;

        Holder(SharePartitionKey key, TopicPartition tp) {
            this.key = key;
            this.tp = tp;
        }
    }

    private final Config config;
    private final ShareStatePersister persister;
    private final ShareLogs logs;
    private final ShareGroupMembership membership;
    private final Time time;
    private final ShareSessions sessions;
    private volatile ShareGroupSettings settings = ShareGroupSettings.DEFAULTS;
    private final Map<SharePartitionKey, Holder> partitions = new ConcurrentHashMap<>();

    /**
     * Replays the persisted state (every share-partition comes back as it was written: acquired records
     * available again, delivery counts kept).
     */
    public SharePartitionManager(Config config, ShareStatePersister persister, ShareGroupMembership membership,
                                 ShareLogs logs, Time time) {
        this.config = config;
        this.persister = persister;
        this.logs = logs;
        this.membership = membership;
        this.time = time;
        this.sessions = new ShareSessions(config.maxShareSessions());
        for (Map.Entry<SharePartitionKey, SharePartition.Snapshot> e : persister.load().entrySet()) {
            String topic = logs.topicName(e.getKey().topicId());
            if (topic == null) {
                continue; // the topic is gone
            }
            Holder h = new Holder(e.getKey(), new TopicPartition(topic, e.getKey().partition()));
            h.partition = SharePartition.restore(config.partition(), e.getValue());
            h.written = e.getValue();
            partitions.put(e.getKey(), h);
        }
        membership.onMemberRemoved(this::memberRemoved);
    }

    public ShareGroupMembership membership() {
        return membership;
    }

    public ShareSessions sessions() {
        return sessions;
    }

    public Config config() {
        return config;
    }

    @Override
    public void setGroupSettings(ShareGroupSettings settings) {
        this.settings = settings;
    }

    /** The group's acquisition lock duration ({@code share.record.lock.duration.ms}), else the broker's. */
    public long lockDurationMs(String groupId) {
        long ms = settings.recordLockDurationMs(groupId);
        return ms > 0 ? ms : config.partition().lockDurationMs();
    }

    /**
     * Reads {@code tp} from where the share-partition delivers next and acquires for {@code member} what
     * is available there, up to {@code maxRecords}; the acquisition is persisted (delivery counts survive a
     * restart) before this returns.
     */
    public PartitionFetch fetch(String groupId, Uuid topicId, TopicPartition tp, String member, int maxBytes, boolean minOneBatch,
                                int maxRecords, boolean strictLimit) {
        Holder h = holder(groupId, topicId, tp);
        boolean readCommitted = settings.readCommitted(groupId);
        synchronized (h) {
            PartitionLog log = logs.log(tp);
            long now = time.milliseconds();
            if (!initialize(h, log, now)) {
                return PartitionFetch.error(Errors.UNKNOWN_SERVER_ERROR);
            }
            SharePartition sp = h.partition;
            SharePartition before = sp.copy();
            sp.expireLocks(now);
            sp.advanceLogStart(log.logStartOffset());
            long from = sp.nextFetchOffset();
            long bound = readCommitted ? log.lastStableOffset() : log.highWatermark();
            List<SharePartition.Acquired> acquired = List.of();
            LogSlice slice = null;
            List<FileLogInputStream.FileChannelRecordBatch> read = new ArrayList<>();
            if (from >= 0 && from < bound && maxRecords > 0 && (maxBytes > 0 || minOneBatch)) {
                slice = log.read(from, Math.max(0, maxBytes), bound, minOneBatch);
                if (!slice.isEmpty()) {
                    List<TransactionIndex.AbortedTxn> aborted = readCommitted ? log.abortedTransactions(from, bound) : List.of();
                    List<SharePartition.LogBatch> batches = new ArrayList<>();
                    for (FileLogInputStream.FileChannelRecordBatch b : slice.records().batches()) {
                        read.add(b);
                        boolean skip = b.isControlBatch() || (b.isTransactional() && isAborted(b, aborted));
                        batches.add(new SharePartition.LogBatch(b.baseOffset(), b.lastOffset(), skip));
                    }
                    acquired = sp.acquire(member, batches, maxRecords, strictLimit, now, lockDurationMs(groupId));
                }
            }
            Errors written = persist(h, before);
            if (written != Errors.NONE) {
                return PartitionFetch.error(written);
            }
            if (acquired.isEmpty()) {
                return PartitionFetch.NOTHING;
            }
            FileRecords records = trim(slice.records(), read, acquired);
            return new PartitionFetch(Errors.NONE, records, acquired, records.sizeInBytes());
        }
    }

    /** Whether there is anything a fetch of {@code tp} for the group could acquire now (without acquiring it). */
    public boolean acquirable(String groupId, Uuid topicId, TopicPartition tp) {
        Holder h = partitions.get(new SharePartitionKey(groupId, topicId, tp.partition()));
        PartitionLog log;
        try {
            log = logs.log(tp);
        } catch (RuntimeException e) {
            return true; // an error to answer
        }
        long bound = settings.readCommitted(groupId) ? log.lastStableOffset() : log.highWatermark();
        if (h == null) {
            return false; // not initialized yet: the next fetch sets it up
        }
        synchronized (h) {
            if (h.partition == null) {
                return false;
            }
            long from = h.partition.nextFetchOffset();
            return from >= 0 && from < bound;
        }
    }

    /** Applies a member's acknowledgements to one share-partition and persists them; the error to answer for it. */
    public Errors acknowledge(String groupId, Uuid topicId, TopicPartition tp, String member, List<SharePartition.AckBatch> batches) {
        Holder h = partitions.get(new SharePartitionKey(groupId, topicId, tp.partition()));
        if (h == null) {
            return Errors.INVALID_RECORD_STATE; // nothing was ever acquired here
        }
        Errors written;
        synchronized (h) {
            if (h.partition == null) {
                return Errors.INVALID_RECORD_STATE;
            }
            SharePartition before = h.partition.copy();
            Errors e = h.partition.acknowledge(member, batches, time.milliseconds(), lockDurationMs(groupId));
            if (e != Errors.NONE) {
                return e;
            }
            written = persist(h, before);
        }
        // outside the share partition's monitor: a woken fetch takes it (under its own waiter's monitor)
        if (written == Errors.NONE) {
            logs.wake(tp); // a release makes records available
        }
        return written;
    }

    /**
     * A member closed its share session normally (final epoch): what it still holds goes back without
     * counting as a delivery.
     */
    public void releaseSession(String groupId, String member) {
        sessions.remove(new ShareSessions.Key(groupId, member));
        release(groupId, member, true);
    }

    /** A member left or was fenced: its share session closes and its records go back (as at lock expiry). */
    public void memberRemoved(String groupId, String member) {
        sessions.remove(new ShareSessions.Key(groupId, member));
        release(groupId, member, false);
    }

    private void release(String groupId, String member, boolean notDelivered) {
        for (Holder h : partitions.values()) {
            if (!h.key.groupId().equals(groupId)) {
                continue;
            }
            boolean released;
            synchronized (h) {
                if (h.partition == null) {
                    continue;
                }
                SharePartition before = h.partition.copy();
                released = h.partition.releaseMember(member, notDelivered) > 0;
                if (released && persist(h, before) != Errors.NONE) {
                    LOG.warn("could not persist the release of {}'s records of {}", member, h.key);
                }
            }
            if (released) {
                logs.wake(h.tp);
            }
        }
    }

    /** Expires the acquisition locks due now (call it a few times a second); wakes the fetches that can take them. */
    public void expireLocks() {
        long now = time.milliseconds();
        for (Holder h : partitions.values()) {
            if (h.nextLockExpiryMs > now) {
                continue;
            }
            int expired;
            synchronized (h) {
                if (h.partition == null) {
                    continue;
                }
                SharePartition before = h.partition.copy();
                expired = h.partition.expireLocks(now);
                if (expired > 0 && persist(h, before) != Errors.NONE) {
                    LOG.warn("could not persist the lock expiry of {}", h.key);
                }
                h.nextLockExpiryMs = h.partition.nextLockExpiryMs();
            }
            if (expired > 0) {
                logs.wake(h.tp);
            }
        }
    }

    /** Forgets the share-partitions of a deleted topic, by name (their state records are tombstoned). */
    public void topicDeleted(String topic) {
        for (Holder h : List.copyOf(partitions.values())) {
            if (h.tp.topic().equals(topic)) {
                try {
                    forget(h);
                } catch (RuntimeException e) {
                    LOG.warn("could not forget the share state of deleted topic {}: {}", topic, e.toString());
                }
            }
        }
    }

    @Override
    public Map<SharePartitionKey, Long> startOffsets(String groupId) {
        Map<SharePartitionKey, Long> out = new HashMap<>();
        for (Holder h : partitions.values()) {
            if (h.key.groupId().equals(groupId)) {
                synchronized (h) {
                    if (h.partition != null) {
                        out.put(h.key, h.partition.startOffset());
                    }
                }
            }
        }
        return out;
    }

    @Override
    public Errors alterStartOffset(String groupId, Uuid topicId, int partition, long startOffset) {
        String topic = logs.topicName(topicId);
        if (topic == null) {
            return Errors.UNKNOWN_TOPIC_OR_PARTITION;
        }
        TopicPartition tp = new TopicPartition(topic, partition);
        PartitionLog log;
        try {
            log = logs.log(tp);
        } catch (RuntimeException e) {
            return Errors.forException(e);
        }
        Holder h = holder(groupId, topicId, tp);
        synchronized (h) {
            SharePartition.Config c = config.partition();
            SharePartition before = h.partition == null ? null : h.partition.copy();
            long start = Math.max(log.logStartOffset(), Math.min(startOffset, log.highWatermark()));
            if (h.partition == null) {
                h.partition = new SharePartition(c, start);
            } else {
                h.partition.resetTo(start);
            }
            h.nextLockExpiryMs = Long.MAX_VALUE;
            return persist(h, before);
        }
    }

    @Override
    public void deleteState(String groupId, Uuid topicId) {
        for (Holder h : List.copyOf(partitions.values())) {
            if (h.key.groupId().equals(groupId) && h.key.topicId().equals(topicId)) {
                forget(h);
            }
        }
    }

    @Override
    public void deleteState(String groupId) {
        sessions.removeGroup(groupId);
        for (Holder h : List.copyOf(partitions.values())) {
            if (h.key.groupId().equals(groupId)) {
                forget(h);
            }
        }
    }

    private void forget(Holder h) {
        synchronized (h) {
            persister.delete(h.key);
            partitions.remove(h.key, h);
            h.partition = null;
        }
    }

    private Holder holder(String groupId, Uuid topicId, TopicPartition tp) {
        SharePartitionKey key = new SharePartitionKey(groupId, topicId, tp.partition());
        return partitions.computeIfAbsent(key, k -> new Holder(k, tp));
    }

    /** Sets up a share-partition seen for the first time where share.auto.offset.reset says, and persists it. */
    private boolean initialize(Holder h, PartitionLog log, long now) {
        if (h.partition != null) {
            return true;
        }
        long start = startFor(settings.autoOffsetReset(h.key.groupId()), log, now);
        h.partition = new SharePartition(config.partition(), start);
        if (persist(h, null) != Errors.NONE) {
            h.partition = null;
            return false;
        }
        return true;
    }

    /** share.auto.offset.reset: latest (the high watermark), earliest (the log start) or by_duration:PnDTnHnM (the first offset since now - duration). */
    static long startFor(String reset, PartitionLog log, long now) {
        String r = reset == null ? "latest" : reset.trim().toLowerCase(java.util.Locale.ROOT);
        if (r.equals("earliest")) {
            return log.logStartOffset();
        }
        if (r.startsWith("by_duration:")) {
            try {
                long ts = now - java.time.Duration.parse(reset.trim().substring("by_duration:".length())).toMillis();
                return log.offsetForTimestamp(ts, log.highWatermark()).map(t -> t.offset).orElse(log.highWatermark());
            } catch (RuntimeException e) {
                LOG.warn("share.auto.offset.reset '{}' is not a duration: starting at the latest offset", reset);
            }
        }
        return log.highWatermark();
    }

    /**
     * Writes the share-partition's state if it changed; on failure puts back {@code before} (or drops an
     * uninitialized partition) and answers the error.
     */
    private Errors persist(Holder h, SharePartition before) {
        SharePartition.Snapshot now = h.partition.snapshot();
        h.nextLockExpiryMs = h.partition.nextLockExpiryMs();
        if (now.equals(h.written)) {
            return Errors.NONE;
        }
        try {
            persister.write(h.key, now);
            h.written = now;
            return Errors.NONE;
        } catch (RuntimeException e) {
            LOG.warn("writing the state of share-partition {} failed: {}", h.key, e.toString());
            if (before != null) {
                h.partition.restoreFrom(before);
                h.nextLockExpiryMs = h.partition.nextLockExpiryMs();
            }
            Errors error = Errors.forException(e);
            return error == Errors.UNKNOWN_SERVER_ERROR ? Errors.COORDINATOR_NOT_AVAILABLE : error;
        }
    }

    private static boolean isAborted(RecordBatch b, List<TransactionIndex.AbortedTxn> aborted) {
        for (TransactionIndex.AbortedTxn t : aborted) {
            if (t.producerId() == b.producerId() && t.firstOffset() <= b.baseOffset() && b.baseOffset() <= t.lastOffset()) {
                return true;
            }
        }
        return false;
    }

    /** The part of the read that holds the acquired offsets: from the first batch with one to the last. */
    private static FileRecords trim(FileRecords records, List<FileLogInputStream.FileChannelRecordBatch> read,
                                    List<SharePartition.Acquired> acquired) {
        long first = acquired.get(0).firstOffset();
        long last = acquired.get(acquired.size() - 1).lastOffset();
        FileLogInputStream.FileChannelRecordBatch from = null;
        FileLogInputStream.FileChannelRecordBatch to = null;
        for (FileLogInputStream.FileChannelRecordBatch b : read) {
            if (from == null && b.lastOffset() >= first) {
                from = b;
            }
            if (b.baseOffset() <= last) {
                to = b;
            }
        }
        if (from == null || to == null || read.isEmpty()) {
            return records;
        }
        int base = read.get(0).position();
        int startRel = from.position() - base;
        int size = to.position() + to.sizeInBytes() - from.position();
        if (startRel == 0 && size == records.sizeInBytes()) {
            return records;
        }
        try {
            return records.slice(startRel, size);
        } catch (RuntimeException e) {
            return records;
        }
    }
}
