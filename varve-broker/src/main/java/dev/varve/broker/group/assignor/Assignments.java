package dev.varve.broker.group.assignor;

import org.apache.kafka.common.Uuid;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/** Small helpers over assignments ({@code member id -> topic id -> partitions}). */
public final class Assignments {
    private Assignments() {
    }

    /** The number of partitions in one member's assignment. */
    public static int partitionCount(Map<Uuid, Set<Integer>> assignment) {
        int n = 0;
        for (Set<Integer> partitions : assignment.values()) {
            n += partitions.size();
        }
        return n;
    }

    /** The number of partitions in a group's assignment. */
    public static long totalPartitions(Map<String, Map<Uuid, Set<Integer>>> assignment) {
        long n = 0;
        for (Map<Uuid, Set<Integer>> member : assignment.values()) {
            n += partitionCount(member);
        }
        return n;
    }

    /**
     * The number of partitions that had an owner in {@code before} and have a different one (or
     * none) in {@code after}: the partitions a member must give up to go from one to the other.
     */
    public static long moved(Map<String, Map<Uuid, Set<Integer>>> before,
                             Map<String, Map<Uuid, Set<Integer>>> after) {
        Map<Uuid, Map<Integer, String>> owners = owners(after);
        long moved = 0;
        for (Map.Entry<String, Map<Uuid, Set<Integer>>> member : before.entrySet()) {
            for (Map.Entry<Uuid, Set<Integer>> topic : member.getValue().entrySet()) {
                Map<Integer, String> now = owners.getOrDefault(topic.getKey(), Map.of());
                for (Integer p : topic.getValue()) {
                    if (!member.getKey().equals(now.get(p))) {
                        moved++;
                    }
                }
            }
        }
        return moved;
    }

    /** The owner of each partition: topic id -> partition -> member id. */
    public static Map<Uuid, Map<Integer, String>> owners(Map<String, Map<Uuid, Set<Integer>>> assignment) {
        Map<Uuid, Map<Integer, String>> owners = new HashMap<>();
        for (Map.Entry<String, Map<Uuid, Set<Integer>>> member : assignment.entrySet()) {
            for (Map.Entry<Uuid, Set<Integer>> topic : member.getValue().entrySet()) {
                Map<Integer, String> byPartition = owners.computeIfAbsent(topic.getKey(), k -> new HashMap<>());
                for (Integer p : topic.getValue()) {
                    byPartition.put(p, member.getKey());
                }
            }
        }
        return owners;
    }
}
