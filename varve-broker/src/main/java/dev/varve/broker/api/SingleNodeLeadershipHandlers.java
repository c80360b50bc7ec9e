package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry;
import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.ElectLeadersResponseData;
import org.apache.kafka.common.message.ListPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.ListPartitionReassignmentsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AlterPartitionReassignmentsRequest;
import org.apache.kafka.common.requests.AlterPartitionReassignmentsResponse;
import org.apache.kafka.common.requests.ElectLeadersRequest;
import org.apache.kafka.common.requests.ElectLeadersResponse;
import org.apache.kafka.common.requests.ListPartitionReassignmentsRequest;
import org.apache.kafka.common.requests.ListPartitionReassignmentsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * ElectLeaders, ListPartitionReassignments and AlterPartitionReassignments on a single node (no
 * metadata quorum), with the answers Kafka's controller gives a one-broker cluster: every partition has
 * one replica, this node, which leads it. An election is therefore never needed
 * (ELECTION_NOT_NEEDED, for preferred and unclean alike); no reassignment is ever in progress; a
 * reassignment to this node alone changes nothing and succeeds, one naming another broker gets
 * INVALID_REPLICA_ASSIGNMENT, and a cancellation NO_REASSIGNMENT_IN_PROGRESS. Unknown topics or
 * partitions get UNKNOWN_TOPIC_OR_PARTITION. In a cluster the controller decides these instead.
 */
public final class SingleNodeLeadershipHandlers {
    private SingleNodeLeadershipHandlers() {
    }

    private static boolean exists(BrokerContext broker, String topic, int partition) {
        Optional<TopicRegistry.TopicInfo> t = broker.topics().get(topic);
        return t.isPresent() && partition >= 0 && partition < t.get().partitions();
    }

    /** ElectLeaders: ELECTION_NOT_NEEDED for every existing partition named (none listed when none is named). */
    public static ApiHandler electLeaders(BrokerContext broker) {
        return new AllVersionsHandler(ApiKeys.ELECT_LEADERS) {
            @Override
            public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
                ElectLeadersRequestData data = ((ElectLeadersRequest) request).data();
                List<ElectLeadersResponseData.ReplicaElectionResult> results = new ArrayList<>();
                if (data.topicPartitions() == null) {
                    // every partition: as Kafka's controller, those needing no election (all of them here)
                    // are left out of the answer
                    for (TopicRegistry.TopicInfo t : broker.topics().all()) {
                        results.add(new ElectLeadersResponseData.ReplicaElectionResult().setTopic(t.name()));
                    }
                } else {
                    for (ElectLeadersRequestData.TopicPartitions tp : data.topicPartitions()) {
                        ElectLeadersResponseData.ReplicaElectionResult r = new ElectLeadersResponseData.ReplicaElectionResult().setTopic(tp.topic());
                        for (int p : tp.partitions()) {
                            r.partitionResult().add(result(p, exists(broker, tp.topic(), p) ? Errors.ELECTION_NOT_NEEDED
                                    : Errors.UNKNOWN_TOPIC_OR_PARTITION));
                        }
                        results.add(r);
                    }
                }
                return CompletableFuture.completedFuture(new ElectLeadersResponse(0, Errors.NONE.code(), results, request.version()));
            }

            private ElectLeadersResponseData.PartitionResult result(int partition, Errors error) {
                return new ElectLeadersResponseData.PartitionResult().setPartitionId(partition).setErrorCode(error.code())
                        .setErrorMessage(error == Errors.ELECTION_NOT_NEEDED
                                ? "the partition's only replica, this node, already leads it" : error.message());
            }
        };
    }

    /** ListPartitionReassignments: none is ever in progress. */
    public static ApiHandler listReassignments() {
        return new AllVersionsHandler(ApiKeys.LIST_PARTITION_REASSIGNMENTS) {
            @Override
            public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
                ListPartitionReassignmentsRequestData data = ((ListPartitionReassignmentsRequest) request).data();
                return CompletableFuture.completedFuture(new ListPartitionReassignmentsResponse(
                        new ListPartitionReassignmentsResponseData().setErrorCode(Errors.NONE.code()).setTopics(new ArrayList<>())));
            }
        };
    }

    /** AlterPartitionReassignments: to this node alone is a no-op; anything else is refused per partition. */
    public static ApiHandler alterReassignments(BrokerContext broker) {
        return new AllVersionsHandler(ApiKeys.ALTER_PARTITION_REASSIGNMENTS) {
            @Override
            public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
                AlterPartitionReassignmentsRequestData data = ((AlterPartitionReassignmentsRequest) request).data();
                AlterPartitionReassignmentsResponseData response = new AlterPartitionReassignmentsResponseData();
                for (AlterPartitionReassignmentsRequestData.ReassignableTopic t : data.topics()) {
                    AlterPartitionReassignmentsResponseData.ReassignableTopicResponse tr =
                            new AlterPartitionReassignmentsResponseData.ReassignableTopicResponse().setName(t.name());
                    for (AlterPartitionReassignmentsRequestData.ReassignablePartition p : t.partitions()) {
                        Errors error;
                        String message = null;
                        if (!exists(broker, t.name(), p.partitionIndex())) {
                            error = Errors.UNKNOWN_TOPIC_OR_PARTITION;
                        } else if (p.replicas() == null) {
                            error = Errors.NO_REASSIGNMENT_IN_PROGRESS;
                        } else if (p.replicas().equals(List.of(broker.nodeId()))) {
                            error = Errors.NONE; // already so: nothing to move
                        } else {
                            error = Errors.INVALID_REPLICA_ASSIGNMENT;
                            message = "a single node can only place a partition on itself (broker " + broker.nodeId()
                                    + "), not on " + p.replicas();
                        }
                        tr.partitions().add(new AlterPartitionReassignmentsResponseData.ReassignablePartitionResponse()
                                .setPartitionIndex(p.partitionIndex()).setErrorCode(error.code())
                                .setErrorMessage(message != null ? message : error == Errors.NONE ? null : error.message()));
                    }
                    response.responses().add(tr);
                }
                return CompletableFuture.completedFuture(new AlterPartitionReassignmentsResponse(response));
            }
        };
    }
}
