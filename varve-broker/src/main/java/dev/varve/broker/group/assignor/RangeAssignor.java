package dev.varve.broker.group.assignor;

import org.apache.kafka.common.Uuid;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The server-side "range" assignor, as Apache Kafka 4.x's: per topic, its subscribers in a fixed
 * order each get one contiguous range of partitions; with {@code n} subscribers and {@code P}
 * partitions the first {@code P % n} get {@code P / n + 1} partitions and the others {@code P / n}.
 *
 * <p>The order puts static members first, by {@code group.instance.id}, then the others by member
 * id (ties, which valid groups do not have, by member id). So two topics with the same
 * subscribers and the same partition count are co-partitioned: each member gets the same
 * partition numbers of both, which is what joins need.
 *
 * <p>Like Kafka 4.x's (KAFKA-16944 rewrote the earlier sticky variant, which could not keep both
 * stickiness and co-partitioning), the assignment does not look at the previous target: it is a
 * pure function of the subscriptions, the partition counts and the member order. Its stickiness comes from that order: static members keep their ranges across
 * restarts (new member ids) as long as the membership and the topics do not change.
 */
public final class RangeAssignor implements ServerAssignor {
    public static final String NAME = "range";
    static final RangeAssignor INSTANCE = new RangeAssignor();

    /** Static members first by instance id, then dynamic members by member id. */
    static final Comparator<MemberSpec> ORDER = (a, b) -> {
        String ia = a.instanceId();
        String ib = b.instanceId();
        if (ia != null && ib != null) {
            int c = ia.compareTo(ib);
            return c != 0 ? c : a.memberId().compareTo(b.memberId());
        }
        if (ia != null) {
            return -1;
        }
        if (ib != null) {
            return 1;
        }
        return a.memberId().compareTo(b.memberId());
    };

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Map<String, Map<Uuid, Set<Integer>>> assign(AssignmentSpec spec) {
        GroupModel model = new GroupModel(spec, ORDER);
        int members = model.memberCount;
        List<Map<Uuid, Set<Integer>>> maps = new ArrayList<>(Collections.nCopies(members, null));
        for (int t = 0; t < model.topicCount(); t++) {
            int[] subs = model.subscribers[t];
            int n = subs.length;
            int p = model.partitions[t];
            int quota = p / n;
            int extra = p % n;
            int next = 0;
            for (int k = 0; k < n && next < p; k++) {
                int end = next + quota + (k < extra ? 1 : 0);
                int m = subs[k];
                if (maps.get(m) == null) {
                    maps.set(m, new HashMap<>());
                }
                maps.get(m).put(model.topicIds[t], IntSets.range(next, end));
                next = end;
            }
        }
        Map<String, Map<Uuid, Set<Integer>>> result = new HashMap<>(members * 4 / 3 + 1);
        for (int m = 0; m < members; m++) {
            result.put(model.members.get(m).memberId(),
                maps.get(m) == null ? Map.of() : Collections.unmodifiableMap(maps.get(m)));
        }
        return Collections.unmodifiableMap(result);
    }
}
