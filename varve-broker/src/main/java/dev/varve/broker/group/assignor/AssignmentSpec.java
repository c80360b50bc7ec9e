package dev.varve.broker.group.assignor;

import org.apache.kafka.common.Uuid;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The input of an assignment.
 *
 * @param members the group's members (their order does not matter)
 * @param topics  the subscribed topics that exist, by id; a member may subscribe to an id absent
 *                here, which is ignored
 */
public record AssignmentSpec(List<MemberSpec> members, Map<Uuid, TopicSpec> topics) {
    public AssignmentSpec {
        Objects.requireNonNull(members, "members");
        Objects.requireNonNull(topics, "topics");
    }
}
