package dev.varve.broker.share;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ShareSessionsTest {
    private final TopicIdPartition a = new TopicIdPartition(Uuid.randomUuid(), 0, "a");
    private final TopicIdPartition b = new TopicIdPartition(Uuid.randomUuid(), 1, "b");

    @Test
    void epochsAdvanceAndPartitionsAreAddedAndForgotten() {
        ShareSessions s = new ShareSessions(10);
        ShareSessions.Key k = new ShareSessions.Key("g", "m");
        assertThat(s.open(k, List.of(a)).partitions()).containsExactly(a);
        assertThat(s.next(k, 1, List.of(b), List.of()).partitions()).containsExactly(a, b);
        assertThat(s.next(k, 1, List.of(), List.of()).error()).isEqualTo(Errors.INVALID_SHARE_SESSION_EPOCH);
        assertThat(s.acknowledge(k, 2)).isEqualTo(Errors.NONE);
        assertThat(s.next(k, 3, List.of(), List.of(a)).partitions()).containsExactly(b);
        assertThat(s.acknowledge(k, 0)).isEqualTo(Errors.INVALID_SHARE_SESSION_EPOCH);
        assertThat(s.acknowledge(k, -1)).isEqualTo(Errors.NONE);
        assertThat(s.remove(k)).isTrue();
        assertThat(s.next(k, 5, List.of(), List.of()).error()).isEqualTo(Errors.SHARE_SESSION_NOT_FOUND);
        assertThat(s.acknowledge(k, 5)).isEqualTo(Errors.SHARE_SESSION_NOT_FOUND);
    }

    @Test
    void theCacheHasALimitAndAMemberReopeningKeepsItsPlace() {
        ShareSessions s = new ShareSessions(2);
        assertThat(s.open(new ShareSessions.Key("g", "1"), List.of(a)).error()).isEqualTo(Errors.NONE);
        assertThat(s.open(new ShareSessions.Key("g", "2"), List.of(a)).error()).isEqualTo(Errors.NONE);
        assertThat(s.open(new ShareSessions.Key("g", "3"), List.of(a)).error()).isEqualTo(Errors.SHARE_SESSION_LIMIT_REACHED);
        assertThat(s.open(new ShareSessions.Key("g", "2"), List.of(b)).partitions()).containsExactly(b);
        s.removeGroup("g");
        assertThat(s.size()).isZero();
    }
}
