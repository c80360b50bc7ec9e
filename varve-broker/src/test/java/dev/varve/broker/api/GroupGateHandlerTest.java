package dev.varve.broker.api;

import org.apache.kafka.common.message.ConsumerGroupDescribeRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ShareGroupHeartbeatRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ConsumerGroupDescribeRequest;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatRequest;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.ShareGroupHeartbeatRequest;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * In a cluster, the KIP-848 and KIP-932 group requests reach the coordinator logic only for groups whose
 * {@code __consumer_offsets} partition this broker leads and has loaded: elsewhere NOT_COORDINATOR, during
 * the load COORDINATOR_LOAD_IN_PROGRESS (so a member heartbeating its new coordinator early retries
 * instead of being told it is unknown and giving its partitions up).
 */
class GroupGateHandlerTest {
    private static final class Counting implements ApiHandler {
        final ApiKeys key;
        final AtomicInteger calls = new AtomicInteger();

        Counting(ApiKeys key) {
            this.key = key;
        }

        @Override
        public ApiKeys apiKey() {
            return key;
        }

        @Override
        public short minVersion() {
            return key.oldestVersion();
        }

        @Override
        public short maxVersion() {
            return key.latestVersion();
        }

        @Override
        public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
            calls.incrementAndGet();
            return CompletableFuture.completedFuture(null);
        }
    }

    @Test
    void groupHeartbeatsAndDescribesWaitForTheirCoordinator() throws Exception {
        List<AbstractRequest> requests = List.of(
                new ConsumerGroupHeartbeatRequest.Builder(new ConsumerGroupHeartbeatRequestData().setGroupId("loading")
                        .setMemberId("m").setMemberEpoch(3)).build(),
                new ConsumerGroupDescribeRequest.Builder(new ConsumerGroupDescribeRequestData()
                        .setGroupIds(List.of("mine", "loading"))).build(),
                new ShareGroupHeartbeatRequest.Builder(new ShareGroupHeartbeatRequestData().setGroupId("loading")
                        .setMemberId("m").setMemberEpoch(1)).build());
        for (AbstractRequest r : requests) {
            assertThat(GroupGateHandler.gates(r.apiKey())).as("%s is gated", r.apiKey()).isTrue();
            Counting inner = new Counting(r.apiKey());
            GroupGateHandler gate = new GroupGateHandler(inner,
                    groupId -> groupId.equals("loading") ? Errors.COORDINATOR_LOAD_IN_PROGRESS : Errors.NONE);
            AbstractResponse response = gate.handle(null, r).get();
            assertThat(response.errorCounts()).as("%s", r.apiKey()).containsKey(Errors.COORDINATOR_LOAD_IN_PROGRESS);
            assertThat(inner.calls).as("%s did not reach the coordinator", r.apiKey()).hasValue(0);
        }
    }
}
