package dev.varve.broker.group.assignor;

import org.apache.kafka.common.Uuid;

import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * One member as the assignors see it.
 *
 * @param memberId           the member id (unique in the group)
 * @param instanceId         {@code group.instance.id} of a static member, else null
 * @param rackId             the client's rack, else null (not used by the current assignors)
 * @param subscribedTopicIds the ids of the topics the member subscribes to (ids of topics that do
 *                           not exist are ignored); null means none
 * @param currentTarget      the member's previous target assignment, the input to stickiness;
 *                           may be empty; null means empty. Entries for unsubscribed or unknown
 *                           topics and out-of-range partitions are ignored.
 */
public record MemberSpec(String memberId, String instanceId, String rackId, Set<Uuid> subscribedTopicIds,
                         Map<Uuid, Set<Integer>> currentTarget) {
    public MemberSpec {
        Objects.requireNonNull(memberId, "memberId");
        if (subscribedTopicIds == null) {
            subscribedTopicIds = Set.of();
        }
        if (currentTarget == null) {
            currentTarget = Map.of();
        }
    }
}
