package dev.varve.broker.share;

/**
 * What the share-group data path asks of share-group membership (the group coordinator's side, which
 * implements it): whether a member is current, and who leaves.
 */
public interface ShareGroupMembership {
    /** NONE when memberId is a current member of share group groupId; else the error to answer (e.g. UNKNOWN_MEMBER_ID). */
    org.apache.kafka.common.protocol.Errors checkMember(String groupId, String memberId);

    /** listener.accept(groupId, memberId) when a member leaves or is fenced: its acquired records go back. */
    void onMemberRemoved(java.util.function.BiConsumer<String, String> listener);

}
