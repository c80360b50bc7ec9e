package dev.varve.metadata;

import org.apache.kafka.common.errors.InvalidReplicationFactorException;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Chooses the replicas of new partitions: spread over brokers and racks, leaders (first replicas)
 * balanced. Deterministic: the same inputs give the same assignment, so the decision can be made once
 * by the controller and simply recorded.
 *
 * <p>Per partition, greedily:
 * <ol>
 *   <li>the leader is the usable broker with the fewest leaders, then the fewest replicas, ties
 *       broken by a rotation over a rack-interleaved broker order (so consecutive partitions start on
 *       different racks);</li>
 *   <li>each further replica is the broker whose rack holds the fewest replicas of this partition so
 *       far (so a partition spans {@code min(RF, racks)} racks), then the fewest replicas overall, then
 *       the most leaders (brokers with fewer still need room for leaders to come), then the same
 *       rotation.</li>
 * </ol>
 * With no racks, or racks of equal size, leader counts end within one of each other and replica
 * counts within one (two when RF exceeds the number of racks). Counts start from the load already in the image, so successive topics keep brokers balanced
 * (Kafka's {@code StripedReplicaPlacer} stripes randomly instead and ignores existing load). Brokers
 * without a rack share one unnamed rack.
 *
 * <p>Instances are single-use and not thread-safe.
 */
public final class ReplicaPlacement {
    /** A broker new replicas may be put on (registered, unfenced, not shutting down). */
    public record UsableBroker(int id, String rack) {
        public UsableBroker {
            rack = rack == null ? "" : rack;
        }
    }

    private final List<UsableBroker> order;
    private final Map<Integer, Integer> replicaLoad = new HashMap<>();
    private final Map<Integer, Integer> leaderLoad = new HashMap<>();
    private int rotation;

    /**
     * @param brokers          where replicas may go (any order; the order used is by rack then id, interleaved)
     * @param replicaLoad      replicas already on each broker (missing = 0)
     * @param leaderLoad       partitions each broker already leads or is preferred leader of (missing = 0)
     */
    public ReplicaPlacement(List<UsableBroker> brokers, Map<Integer, Integer> replicaLoad, Map<Integer, Integer> leaderLoad) {
        this.order = interleaveByRack(brokers);
        this.replicaLoad.putAll(replicaLoad);
        this.leaderLoad.putAll(leaderLoad);
    }

    /** A placement over the image's eligible brokers, starting from the replica and preferred-leader load in it. */
    public static ReplicaPlacement forImage(MetadataImage image) {
        List<UsableBroker> usable = new ArrayList<>();
        for (BrokerRegistration b : image.brokers().values()) {
            if (b.isEligible()) {
                usable.add(new UsableBroker(b.id(), b.rack()));
            }
        }
        Map<Integer, Integer> replicas = new HashMap<>();
        Map<Integer, Integer> leaders = new HashMap<>();
        for (TopicImage t : image.topicsById().values()) {
            for (PartitionState p : t.partitions()) {
                for (int r : p.replicas()) {
                    replicas.merge(r, 1, Integer::sum);
                }
                if (!p.replicas().isEmpty()) {
                    leaders.merge(p.replicas().get(0), 1, Integer::sum);
                }
            }
        }
        return new ReplicaPlacement(usable, replicas, leaders);
    }

    public int usableBrokers() {
        return order.size();
    }

    /**
     * Places {@code partitions} new partitions with {@code replicationFactor} replicas each.
     *
     * @return one replica list per partition; the first replica is the preferred leader
     * @throws InvalidReplicationFactorException when {@code replicationFactor} is below 1 or above the usable brokers
     */
    public List<List<Integer>> place(int partitions, int replicationFactor) {
        if (replicationFactor < 1) {
            throw new InvalidReplicationFactorException("Replication factor must be larger than 0, not " + replicationFactor + ".");
        }
        if (replicationFactor > order.size()) {
            throw new InvalidReplicationFactorException("Unable to replicate the partition " + replicationFactor
                    + " time(s): The target replication factor of " + replicationFactor + " cannot be reached because only "
                    + order.size() + " broker(s) are registered.");
        }
        List<List<Integer>> out = new ArrayList<>(partitions);
        for (int p = 0; p < partitions; p++) {
            out.add(placeOne(replicationFactor));
            rotation++;
        }
        return out;
    }

    private List<Integer> placeOne(int rf) {
        int n = order.size();
        List<Integer> chosen = new ArrayList<>(rf);
        Map<String, Integer> racksUsed = new HashMap<>();
        UsableBroker leader = null;
        int leaderKeyPos = 0;
        for (int i = 0; i < n; i++) {
            UsableBroker b = order.get(i);
            if (leader == null || compareLeader(b, i, leader, leaderKeyPos) < 0) {
                leader = b;
                leaderKeyPos = i;
            }
        }
        take(Objects.requireNonNull(leader), chosen, racksUsed);
        leaderLoad.merge(leader.id(), 1, Integer::sum);
        for (int k = 1; k < rf; k++) {
            UsableBroker best = null;
            int bestPos = 0;
            for (int i = 0; i < n; i++) {
                UsableBroker b = order.get(i);
                if (chosen.contains(b.id())) {
                    continue;
                }
                if (best == null || compareFollower(b, i, best, bestPos, racksUsed, k) < 0) {
                    best = b;
                    bestPos = i;
                }
            }
            take(Objects.requireNonNull(best), chosen, racksUsed);
        }
        return List.copyOf(chosen);
    }

    private void take(UsableBroker b, List<Integer> chosen, Map<String, Integer> racksUsed) {
        chosen.add(b.id());
        racksUsed.merge(b.rack(), 1, Integer::sum);
        replicaLoad.merge(b.id(), 1, Integer::sum);
    }

    private int compareLeader(UsableBroker a, int posA, UsableBroker b, int posB) {
        int c = Integer.compare(leaderLoad.getOrDefault(a.id(), 0), leaderLoad.getOrDefault(b.id(), 0));
        if (c != 0) {
            return c;
        }
        c = Integer.compare(replicaLoad.getOrDefault(a.id(), 0), replicaLoad.getOrDefault(b.id(), 0));
        return c != 0 ? c : Integer.compare(rotated(posA, 0), rotated(posB, 0));
    }

    private int compareFollower(UsableBroker a, int posA, UsableBroker b, int posB, Map<String, Integer> racksUsed, int k) {
        int c = Integer.compare(racksUsed.getOrDefault(a.rack(), 0), racksUsed.getOrDefault(b.rack(), 0));
        if (c != 0) {
            return c;
        }
        c = Integer.compare(replicaLoad.getOrDefault(a.id(), 0), replicaLoad.getOrDefault(b.id(), 0));
        if (c != 0) {
            return c;
        }
        // prefer brokers that already lead more: the others still need room for the leaders to come
        c = Integer.compare(leaderLoad.getOrDefault(b.id(), 0), leaderLoad.getOrDefault(a.id(), 0));
        return c != 0 ? c : Integer.compare(rotated(posA, k), rotated(posB, k));
    }

    private int rotated(int pos, int k) {
        return Math.floorMod(pos - rotation - k, order.size());
    }

    /** Brokers ordered rack by rack in turn: a1 b1 c1 a2 b2 c2 ... (racks by name, brokers by id). */
    private static List<UsableBroker> interleaveByRack(List<UsableBroker> brokers) {
        Map<String, List<UsableBroker>> byRack = new TreeMap<>();
        Map<Integer, UsableBroker> unique = new LinkedHashMap<>();
        for (UsableBroker b : brokers) {
            unique.put(b.id(), b);
        }
        for (UsableBroker b : unique.values()) {
            byRack.computeIfAbsent(b.rack(), r -> new ArrayList<>()).add(b);
        }
        byRack.values().forEach(l -> l.sort(Comparator.comparingInt(UsableBroker::id)));
        List<UsableBroker> out = new ArrayList<>(unique.size());
        for (int i = 0; out.size() < unique.size(); i++) {
            for (List<UsableBroker> rack : byRack.values()) {
                if (i < rack.size()) {
                    out.add(rack.get(i));
                }
            }
        }
        return out;
    }
}
