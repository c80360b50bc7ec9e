package dev.varve.tests;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One stock Java consumer in a group ({@code subscribe()}, classic protocol), polling on its own
 * thread the way an application does: every batch is checked against the {@link RecordFixture},
 * recorded, and its offsets committed with {@code commitSync} before the next poll, so the only
 * records another member may see again are those of a failed commit or of a batch deliberately
 * {@linkplain #abandonNextBatch() abandoned}. The KafkaConsumer is touched by that thread only.
 */
final class GroupMember implements AutoCloseable {
    /** A record as consumed: partition and offset. */
    record Position(int partition, long offset) {
    }

    private static final long STOP_TIMEOUT_MS = 30_000;

    final String name;
    private final RecordFixture fixture;
    private final Thread thread;
    private final KafkaConsumer<byte[], byte[]> consumer;

    /** Everything this member consumed, in order. */
    final ConcurrentLinkedQueue<Position> consumed = new ConcurrentLinkedQueue<>();
    /** Consumed, but the commit that followed failed (a rebalance overtook it): another member may read them again. */
    final Set<Position> failedCommits = ConcurrentHashMap.newKeySet();
    /** The batch consumed and deliberately not committed before leaving: another member must read them again. */
    final Set<Position> abandoned = ConcurrentHashMap.newKeySet();
    /** Each assignment callback's partitions, in order (for the cooperative protocol these are increments). */
    final ConcurrentLinkedQueue<Set<TopicPartition>> assignedEvents = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<Set<TopicPartition>> revokedEvents = new ConcurrentLinkedQueue<>();
    final AtomicInteger commitFailures = new AtomicInteger();

    private volatile Set<TopicPartition> assignment = Set.of();
    private volatile int generation = -1;
    private volatile String memberId = "";
    private volatile Throwable failure;
    private volatile boolean stopRequested;
    private volatile boolean abandonRequested;
    private volatile CloseOptions.GroupMembershipOperation onClose = CloseOptions.GroupMembershipOperation.DEFAULT;
    private volatile boolean finished;

    private GroupMember(String name, RecordFixture fixture, KafkaConsumer<byte[], byte[]> consumer) {
        this.name = name;
        this.fixture = fixture;
        this.consumer = consumer;
        this.thread = new Thread(this::run, "member-" + name);
        this.thread.setDaemon(true);
    }

    /** The consumer settings of the group tests: short session and heartbeat, no auto-commit, client.id = name. */
    static Properties config(String bootstrap, String group, String name, Map<String, Object> overrides) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        if (!"consumer".equals(String.valueOf(overrides.get(ConsumerConfig.GROUP_PROTOCOL_CONFIG)))) {
            // the classic protocol's client-side timing; the consumer protocol's is the broker's (KIP-848)
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6_000);
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1_000);
        }
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 20_000);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20);
        p.put(ConsumerConfig.CHECK_CRCS_CONFIG, true);
        p.putAll(overrides);
        return p;
    }

    /** Creates the consumer, subscribes to the fixture's topic and starts polling. */
    static GroupMember start(String bootstrap, String group, String name, RecordFixture fixture,
                             Map<String, Object> overrides) {
        GroupMember m = new GroupMember(name, fixture,
                new KafkaConsumer<>(config(bootstrap, group, name, overrides)));
        m.thread.start();
        return m;
    }

    private void run() {
        try {
            consumer.subscribe(List.of(fixture.topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    revokedEvents.add(Set.copyOf(partitions));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    assignedEvents.add(Set.copyOf(partitions));
                }
            });
            while (!stopRequested) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                assignment = Set.copyOf(consumer.assignment());
                generation = consumer.groupMetadata().generationId();
                memberId = consumer.groupMetadata().memberId();
                if (records.isEmpty()) {
                    continue;
                }
                List<Position> batch = new ArrayList<>();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    fixture.verify(r);
                    Position p = new Position(r.partition(), r.offset());
                    batch.add(p);
                    consumed.add(p);
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                if (abandonRequested) {
                    abandoned.addAll(batch);
                    break;
                }
                try {
                    consumer.commitSync(offsets, Duration.ofSeconds(30));
                } catch (RebalanceInProgressException | CommitFailedException e) {
                    // The group moved on: the new owner starts from the last successful commit.
                    failedCommits.addAll(batch);
                    commitFailures.incrementAndGet();
                }
            }
        } catch (Throwable t) {
            failure = t;
        } finally {
            try {
                consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)).withGroupMembershipOperation(onClose));
            } catch (Throwable t) {
                if (failure == null) {
                    failure = t;
                }
            }
            finished = true;
        }
    }

    /** Consume one more non-empty batch, do not commit it, and close (leaving the group). */
    void abandonNextBatch() {
        abandonRequested = true;
    }

    /** The partitions assigned after the last poll. */
    Set<TopicPartition> assignment() {
        return assignment;
    }

    int generation() {
        return generation;
    }

    String memberId() {
        return memberId;
    }

    Throwable failure() {
        return failure;
    }

    boolean finished() {
        return finished;
    }

    /**
     * Stops polling and closes the consumer. {@code DEFAULT}: a dynamic member sends LeaveGroup, a static
     * one does not; {@code REMAIN_IN_GROUP}: no LeaveGroup, as if the process died; {@code LEAVE_GROUP}:
     * LeaveGroup also for a static member.
     */
    void stop(CloseOptions.GroupMembershipOperation operation) throws InterruptedException {
        onClose = operation;
        stopRequested = true;
        join();
    }

    /** Waits for the polling thread to end (after {@link #abandonNextBatch()} or {@link #stop}). */
    void join() throws InterruptedException {
        thread.join(STOP_TIMEOUT_MS);
        if (thread.isAlive()) {
            throw new AssertionError(name + " did not stop within " + STOP_TIMEOUT_MS + " ms");
        }
    }

    /** Throws what the polling thread failed with, if anything. */
    void assertHealthy() {
        Throwable t = failure;
        if (t != null) {
            throw new AssertionError(name + " failed: " + t, t);
        }
    }

    @Override
    public void close() throws InterruptedException {
        if (thread.isAlive()) {
            stop(CloseOptions.GroupMembershipOperation.DEFAULT);
        }
    }

    static Set<TopicPartition> union(Collection<GroupMember> members) {
        Set<TopicPartition> all = new HashSet<>();
        for (GroupMember m : members) {
            all.addAll(m.assignment());
        }
        return all;
    }
}
