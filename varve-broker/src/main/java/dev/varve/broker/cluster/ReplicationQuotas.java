package dev.varve.broker.cluster;

import dev.varve.metadata.MetadataImage;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.utils.Time;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Replication throttles, as in Kafka: {@code leader.replication.throttled.rate} and
 * {@code follower.replication.throttled.rate} (bytes/s; broker configs, per broker id or cluster
 * default, set dynamically with IncrementalAlterConfigs) cap the replication traffic of the replicas
 * listed in the topic configs {@code leader.replication.throttled.replicas} and
 * {@code follower.replication.throttled.replicas} ({@code partition:broker,...} or {@code *}).
 * Kafka's reassignment tool sets both while it moves data, so a reassignment cannot saturate disks
 * and links. Replicas not listed are never throttled.
 *
 * <p>On the leader, a follower's fetch of a throttled partition returns no records while the leader
 * rate is exceeded; on the follower, throttled partitions are left out of its fetch requests while the
 * follower rate is exceeded. Rates are measured over the last {@value #WINDOWS} one-second windows.
 */
public final class ReplicationQuotas {
    public static final String LEADER_RATE = "leader.replication.throttled.rate";
    public static final String FOLLOWER_RATE = "follower.replication.throttled.rate";
    public static final String LEADER_REPLICAS = "leader.replication.throttled.replicas";
    public static final String FOLLOWER_REPLICAS = "follower.replication.throttled.replicas";
    static final int WINDOWS = 11;

    /** One direction's rate: bytes recorded in one-second windows. Thread-safe. */
    public static final class Quota {
        private final Time time;
        private final long[] bytes = new long[WINDOWS];
        private final long[] second = new long[WINDOWS];
        private volatile long rateBytesPerSec = Long.MAX_VALUE;

        Quota(Time time) {
            this.time = time;
        }

        void setRate(long bytesPerSec) {
            this.rateBytesPerSec = bytesPerSec;
        }

        public long rate() {
            return rateBytesPerSec;
        }

        public synchronized void record(long n) {
            long s = time.milliseconds() / 1000;
            int i = (int) (s % WINDOWS);
            if (second[i] != s) {
                second[i] = s;
                bytes[i] = 0;
            }
            bytes[i] += n;
        }

        /** Whether the bytes of the last windows, spread over them, exceed the rate. */
        public synchronized boolean exceeded() {
            long rate = rateBytesPerSec;
            if (rate == Long.MAX_VALUE) {
                return false;
            }
            long now = time.milliseconds() / 1000;
            long total = 0;
            long oldest = now;
            for (int i = 0; i < WINDOWS; i++) {
                if (now - second[i] < WINDOWS && bytes[i] > 0) {
                    total += bytes[i];
                    oldest = Math.min(oldest, second[i]);
                }
            }
            long seconds = Math.max(1, now - oldest + 1);
            return total / seconds > rate;
        }
    }

    private final int localId;
    private final Quota leader;
    private final Quota follower;
    private volatile Set<TopicPartition> leaderThrottled = Set.of();
    private volatile Set<TopicPartition> followerThrottled = Set.of();
    private volatile Set<String> leaderAll = Set.of();
    private volatile Set<String> followerAll = Set.of();

    public ReplicationQuotas(int localId, Time time) {
        this.localId = localId;
        this.leader = new Quota(time);
        this.follower = new Quota(time);
    }

    public Quota leader() {
        return leader;
    }

    public Quota follower() {
        return follower;
    }

    /** Whether a follower's fetch of {@code tp} from this leader is throttled and must wait now. */
    public boolean throttleLeader(TopicPartition tp) {
        return (leaderAll.contains(tp.topic()) || leaderThrottled.contains(tp)) && leader.exceeded();
    }

    public boolean isLeaderThrottled(TopicPartition tp) {
        return leaderAll.contains(tp.topic()) || leaderThrottled.contains(tp);
    }

    /** Whether this follower must leave {@code tp} out of its next fetch. */
    public boolean throttleFollower(TopicPartition tp) {
        return isFollowerThrottled(tp) && follower.exceeded();
    }

    public boolean isFollowerThrottled(TopicPartition tp) {
        return followerAll.contains(tp.topic()) || followerThrottled.contains(tp);
    }

    /** Reads the rates and throttled replica lists from a new metadata image. */
    public void update(MetadataImage image) {
        leader.setRate(rate(image, LEADER_RATE));
        follower.setRate(rate(image, FOLLOWER_RATE));
        Set<TopicPartition> l = new HashSet<>();
        Set<TopicPartition> f = new HashSet<>();
        Set<String> la = new HashSet<>();
        Set<String> fa = new HashSet<>();
        for (String topic : image.topicsByName().keySet()) {
            Map<String, String> cfg = image.configs(new ConfigResource(ConfigResource.Type.TOPIC, topic));
            parse(topic, cfg.get(LEADER_REPLICAS), l, la);
            parse(topic, cfg.get(FOLLOWER_REPLICAS), f, fa);
        }
        leaderThrottled = Set.copyOf(l);
        followerThrottled = Set.copyOf(f);
        leaderAll = Set.copyOf(la);
        followerAll = Set.copyOf(fa);
    }

    private void parse(String topic, String value, Set<TopicPartition> out, Set<String> all) {
        if (value == null || value.isBlank()) {
            return;
        }
        if (value.trim().equals("*")) {
            all.add(topic);
            return;
        }
        for (String entry : value.split(",")) {
            String[] pb = entry.trim().split(":");
            if (pb.length != 2) {
                continue;
            }
            try {
                if (Integer.parseInt(pb[1].trim()) == localId) {
                    out.add(new TopicPartition(topic, Integer.parseInt(pb[0].trim())));
                }
            } catch (NumberFormatException e) {
                // validated when set; ignore what cannot be read
            }
        }
    }

    private long rate(MetadataImage image, String key) {
        String v = image.configs(new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(localId))).get(key);
        if (v == null) {
            v = image.configs(MetadataImage.CLUSTER_DEFAULTS).get(key);
        }
        if (v == null) {
            return Long.MAX_VALUE;
        }
        try {
            long r = Long.parseLong(v.trim());
            return r <= 0 ? Long.MAX_VALUE : r;
        } catch (NumberFormatException e) {
            return Long.MAX_VALUE;
        }
    }
}
