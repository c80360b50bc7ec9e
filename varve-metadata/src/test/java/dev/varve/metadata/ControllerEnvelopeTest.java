package dev.varve.metadata;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.message.AllocateProducerIdsRequestData;
import org.apache.kafka.common.message.AllocateProducerIdsResponseData;
import org.apache.kafka.common.message.AlterConfigsRequestData;
import org.apache.kafka.common.message.AlterConfigsResponseData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerHeartbeatResponseData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.BrokerRegistrationResponseData;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreatePartitionsResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.ElectLeadersResponseData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsResponseData;
import org.apache.kafka.common.message.ListPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.ListPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ControllerEnvelopeTest {
    private static final Uuid ID = new Uuid(0x1234_5678_9abcL, 0x0fed_cba9_8765L);

    static List<ApiKeys> supportedKeys() {
        return new ArrayList<>(ControllerEnvelope.SUPPORTED_KEYS);
    }

    @ParameterizedTest
    @MethodSource("supportedKeys")
    void aRequestIdTravelsWithEveryKey(ApiKeys key) {
        org.apache.kafka.common.Uuid id = org.apache.kafka.common.Uuid.randomUuid();
        ApiMessage request = sampleRequest(key);
        byte[] bytes = ControllerEnvelope.encodeRequest(key, key.latestVersion(), request, id);
        ControllerEnvelope.Request decoded = ControllerEnvelope.decodeRequest(bytes);
        assertThat(decoded.requestId()).isEqualTo(id);
        assertThat(decoded.hasRequestId()).isTrue();
        assertThat(decoded.data()).isEqualTo(request);
        assertThat(ControllerEnvelope.decodeRequest(ControllerEnvelope.encodeRequest(key, key.latestVersion(), request)).hasRequestId())
                .isFalse();
        // the id header cut short, or a zero id, is refused like any malformed request
        for (int length = 0; length < ControllerEnvelope.REQUEST_ID_BYTES + ControllerEnvelope.HEADER_BYTES; length++) {
            byte[] cut = Arrays.copyOf(bytes, length);
            assertThatThrownBy(() -> ControllerEnvelope.decodeRequest(cut)).isInstanceOf(InvalidRequestException.class);
        }
        byte[] zero = bytes.clone();
        Arrays.fill(zero, 2, 2 + 16, (byte) 0);
        assertThatThrownBy(() -> ControllerEnvelope.decodeRequest(zero)).isInstanceOf(InvalidRequestException.class);
    }

    @ParameterizedTest
    @MethodSource("supportedKeys")
    void everyKeyRoundTripsAtItsLatestVersion(ApiKeys key) {
        short version = key.latestVersion();
        ApiMessage request = sampleRequest(key);
        ControllerEnvelope.Request decoded = ControllerEnvelope.decodeRequest(ControllerEnvelope.encodeRequest(key, version, request));
        assertThat(decoded.key()).isEqualTo(key);
        assertThat(decoded.version()).isEqualTo(version);
        assertThat(decoded.data()).isEqualTo(request);

        ApiMessage response = sampleResponse(key);
        assertThat(ControllerEnvelope.decodeResponse(key, version, ControllerEnvelope.encodeResponse(key, version, response)))
                .isEqualTo(response);
    }

    @ParameterizedTest
    @MethodSource("supportedKeys")
    void everyVersionRoundTripsAnEmptyMessage(ApiKeys key) {
        for (short v = key.oldestVersion(); v <= key.latestVersion(); v++) {
            ApiMessage request = key.messageType.newRequest();
            assertThat(ControllerEnvelope.decodeRequest(ControllerEnvelope.encodeRequest(key, v, request)).data()).isEqualTo(request);
            ApiMessage response = key.messageType.newResponse();
            assertThat(ControllerEnvelope.decodeResponse(key, v, ControllerEnvelope.encodeResponse(key, v, response))).isEqualTo(response);
        }
    }

    @ParameterizedTest
    @MethodSource("supportedKeys")
    void everyTruncationIsAnInvalidRequest(ApiKeys key) {
        short version = key.latestVersion();
        byte[] request = ControllerEnvelope.encodeRequest(key, version, sampleRequest(key));
        for (int length = 0; length < request.length; length++) {
            byte[] cut = Arrays.copyOf(request, length);
            assertThatThrownBy(() -> ControllerEnvelope.decodeRequest(cut)).as("request cut to %d bytes", length)
                    .isInstanceOf(InvalidRequestException.class);
        }
        byte[] response = ControllerEnvelope.encodeResponse(key, version, sampleResponse(key));
        for (int length = 0; length < response.length; length++) {
            byte[] cut = Arrays.copyOf(response, length);
            assertThatThrownBy(() -> ControllerEnvelope.decodeResponse(key, version, cut)).as("response cut to %d bytes", length)
                    .isInstanceOf(InvalidRequestException.class);
        }
    }

    @ParameterizedTest
    @MethodSource("supportedKeys")
    void trailingBytesAreAnInvalidRequest(ApiKeys key) {
        short version = key.latestVersion();
        byte[] request = ControllerEnvelope.encodeRequest(key, version, sampleRequest(key));
        assertThatThrownBy(() -> ControllerEnvelope.decodeRequest(Arrays.copyOf(request, request.length + 1)))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("trailing");
        byte[] response = ControllerEnvelope.encodeResponse(key, version, sampleResponse(key));
        assertThatThrownBy(() -> ControllerEnvelope.decodeResponse(key, version, Arrays.copyOf(response, response.length + 3)))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("trailing");
    }

    @Test
    void onlyControllerCommandsAtKnownVersionsAreAccepted() {
        assertThatThrownBy(() -> ControllerEnvelope.decodeRequest(header(ApiKeys.PRODUCE.id, (short) 11, b -> { })))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("Produce");
        assertThatThrownBy(() -> ControllerEnvelope.decodeRequest(header((short) 9999, (short) 0, b -> { })))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("9999");
        assertThatThrownBy(() -> ControllerEnvelope.decodeRequest(header((short) -1, (short) 0, b -> { })))
                .isInstanceOf(InvalidRequestException.class);
        assertThatThrownBy(() -> ControllerEnvelope.decodeRequest(header(ApiKeys.ALTER_PARTITION.id, (short) 1, b -> { })))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("version 1");
        assertThatThrownBy(() -> ControllerEnvelope.decodeRequest(header(ApiKeys.ALTER_PARTITION.id, (short) 4, b -> { })))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("version 4");
        assertThatThrownBy(() -> ControllerEnvelope.decodeRequest(null)).isInstanceOf(InvalidRequestException.class);
        assertThatThrownBy(() -> ControllerEnvelope.encodeRequest(ApiKeys.PRODUCE, (short) 11, new ProduceRequestData()))
                .isInstanceOf(InvalidRequestException.class);
        assertThatThrownBy(() -> ControllerEnvelope.decodeResponse(ApiKeys.CREATE_TOPICS, (short) 99, new byte[0]))
                .isInstanceOf(InvalidRequestException.class);
        assertThatThrownBy(() -> ControllerEnvelope.encodeRequest(ApiKeys.CREATE_TOPICS, (short) 7, new DeleteTopicsRequestData()))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ControllerEnvelope.encodeResponse(ApiKeys.CREATE_TOPICS, (short) 7, new CreateTopicsRequestData()))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void countsAndLengthsBeyondTheBytesPresentAreInvalidRequests() {
        // CreateTopics v7 (flexible): a compact array of ~2^31 topics in a 5-byte body.
        assertInvalid(header(ApiKeys.CREATE_TOPICS.id, (short) 7, b -> b.writeUnsignedVarint(Integer.MAX_VALUE)));
        // BrokerRegistration v4: broker id, then a cluster id claiming 32,766 bytes.
        assertInvalid(header(ApiKeys.BROKER_REGISTRATION.id, (short) 4, b -> {
            b.writeInt(1);
            b.writeUnsignedVarint(Short.MAX_VALUE);
        }));
        // ... and one claiming more than a string may hold.
        assertInvalid(header(ApiKeys.BROKER_REGISTRATION.id, (short) 4, b -> {
            b.writeInt(1);
            b.writeUnsignedVarint(Integer.MAX_VALUE);
        }));
        // AlterConfigs v0 (not flexible): an int32 count of resources, huge and negative.
        assertInvalid(header(ApiKeys.ALTER_CONFIGS.id, (short) 0, b -> b.writeInt(Integer.MAX_VALUE)));
        assertInvalid(header(ApiKeys.ALTER_CONFIGS.id, (short) 0, b -> b.writeInt(-7)));
        // ElectLeaders v2: one topic whose partition list claims a billion entries.
        assertInvalid(header(ApiKeys.ELECT_LEADERS.id, (short) 2, b -> {
            b.writeByte((byte) 0);
            b.writeUnsignedVarint(2);
            b.writeUnsignedVarint(2);
            b.writeByte((byte) 't');
            b.writeUnsignedVarint(1_000_000_001);
        }));
        // AlterPartition v3: a tagged field claiming far more bytes than follow.
        assertInvalid(header(ApiKeys.ALTER_PARTITION.id, (short) 3, b -> {
            b.writeInt(1);
            b.writeLong(1);
            b.writeUnsignedVarint(1); // no topics
            b.writeUnsignedVarint(1); // one tagged field
            b.writeUnsignedVarint(7); // tag
            b.writeUnsignedVarint(Integer.MAX_VALUE); // size
        }));
    }

    @Property(tries = 2000)
    void arbitraryBodiesDecodeOrFailAsInvalidRequests(@ForAll("keysAndVersions") short[] keyAndVersion, @ForAll byte[] body) {
        byte[] bytes = header(keyAndVersion[0], keyAndVersion[1], b -> b.writeByteArray(body));
        try {
            ControllerEnvelope.decodeRequest(bytes);
        } catch (InvalidRequestException expected) {
            // the only acceptable failure
        }
    }

    @Property(tries = 2000)
    void corruptedRequestsDecodeOrFailAsInvalidRequests(@ForAll("keys") ApiKeys key, @ForAll long seed) {
        byte[] bytes = ControllerEnvelope.encodeRequest(key, key.latestVersion(), sampleRequest(key));
        java.util.Random random = new java.util.Random(seed);
        for (int i = 0; i < 1 + random.nextInt(4); i++) {
            int at = ControllerEnvelope.HEADER_BYTES + random.nextInt(bytes.length - ControllerEnvelope.HEADER_BYTES);
            bytes[at] = (byte) random.nextInt(256);
        }
        try {
            ControllerEnvelope.decodeRequest(bytes);
        } catch (InvalidRequestException expected) {
            // the only acceptable failure
        }
    }

    @Provide
    Arbitrary<ApiKeys> keys() {
        return Arbitraries.of(ControllerEnvelope.SUPPORTED_KEYS);
    }

    @Provide
    Arbitrary<short[]> keysAndVersions() {
        return keys().flatMap(k -> Arbitraries.shorts().between(k.oldestVersion(), k.latestVersion())
                .map(v -> new short[]{k.id, v}));
    }

    private static void assertInvalid(byte[] bytes) {
        assertThatThrownBy(() -> ControllerEnvelope.decodeRequest(bytes)).isInstanceOf(InvalidRequestException.class);
    }

    private static byte[] header(short key, short version, Consumer<ByteBufferAccessor> body) {
        ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
        ByteBufferAccessor out = new ByteBufferAccessor(buf);
        out.writeShort(key);
        out.writeShort(version);
        body.accept(out);
        return Arrays.copyOf(buf.array(), buf.position());
    }

    /** A request of {@code key} with every field of the latest version set to something other than its default. */
    static ApiMessage sampleRequest(ApiKeys key) {
        return switch (key) {
            case BROKER_REGISTRATION -> {
                BrokerRegistrationRequestData.ListenerCollection listeners = new BrokerRegistrationRequestData.ListenerCollection();
                listeners.add(new BrokerRegistrationRequestData.Listener().setName("PLAINTEXT").setHost("10.0.0.1").setPort(9092)
                        .setSecurityProtocol((short) 0));
                BrokerRegistrationRequestData.FeatureCollection features = new BrokerRegistrationRequestData.FeatureCollection();
                features.add(new BrokerRegistrationRequestData.Feature().setName("metadata.version").setMinSupportedVersion((short) 1)
                        .setMaxSupportedVersion((short) 27));
                yield new BrokerRegistrationRequestData().setBrokerId(3).setClusterId("cluster").setIncarnationId(ID)
                        .setListeners(listeners).setFeatures(features).setRack("r1").setLogDirs(List.of(ID)).setPreviousBrokerEpoch(41);
            }
            case BROKER_HEARTBEAT -> new BrokerHeartbeatRequestData().setBrokerId(3).setBrokerEpoch(41).setCurrentMetadataOffset(99)
                    .setWantFence(true).setWantShutDown(true).setOfflineLogDirs(List.of(ID)).setCordonedLogDirs(List.of(ID));
            case ALTER_PARTITION -> new AlterPartitionRequestData().setBrokerId(1).setBrokerEpoch(12).setTopics(List.of(
                    new AlterPartitionRequestData.TopicData().setTopicId(ID).setPartitions(List.of(
                            new AlterPartitionRequestData.PartitionData().setPartitionIndex(4).setLeaderEpoch(2).setPartitionEpoch(5)
                                    .setNewIsrWithEpochs(List.of(
                                            new AlterPartitionRequestData.BrokerState().setBrokerId(1).setBrokerEpoch(12),
                                            new AlterPartitionRequestData.BrokerState().setBrokerId(2).setBrokerEpoch(13)))))));
            case CREATE_TOPICS -> {
                CreateTopicsRequestData.CreatableTopicCollection topics = new CreateTopicsRequestData.CreatableTopicCollection();
                CreateTopicsRequestData.CreatableTopic t = new CreateTopicsRequestData.CreatableTopic().setName("orders")
                        .setNumPartitions(-1).setReplicationFactor((short) -1);
                t.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(0).setBrokerIds(List.of(1, 2)));
                t.configs().add(new CreateTopicsRequestData.CreatableTopicConfig().setName("retention.ms").setValue("1000"));
                t.configs().add(new CreateTopicsRequestData.CreatableTopicConfig().setName("segment.ms").setValue(null));
                topics.add(t);
                yield new CreateTopicsRequestData().setTopics(topics).setTimeoutMs(5000).setValidateOnly(true);
            }
            case DELETE_TOPICS -> new DeleteTopicsRequestData().setTimeoutMs(5000).setTopics(List.of(
                    new DeleteTopicsRequestData.DeleteTopicState().setName("orders"),
                    new DeleteTopicsRequestData.DeleteTopicState().setTopicId(ID)));
            case CREATE_PARTITIONS -> {
                CreatePartitionsRequestData.CreatePartitionsTopicCollection topics = new CreatePartitionsRequestData.CreatePartitionsTopicCollection();
                topics.add(new CreatePartitionsRequestData.CreatePartitionsTopic().setName("orders").setCount(3).setAssignments(List.of(
                        new CreatePartitionsRequestData.CreatePartitionsAssignment().setBrokerIds(List.of(2, 0)))));
                yield new CreatePartitionsRequestData().setTopics(topics).setTimeoutMs(5000).setValidateOnly(true);
            }
            case INCREMENTAL_ALTER_CONFIGS -> {
                IncrementalAlterConfigsRequestData.AlterConfigsResourceCollection resources =
                        new IncrementalAlterConfigsRequestData.AlterConfigsResourceCollection();
                IncrementalAlterConfigsRequestData.AlterConfigsResource r = new IncrementalAlterConfigsRequestData.AlterConfigsResource()
                        .setResourceType((byte) 2).setResourceName("orders");
                r.configs().add(new IncrementalAlterConfigsRequestData.AlterableConfig().setName("retention.ms").setConfigOperation((byte) 0)
                        .setValue("5"));
                r.configs().add(new IncrementalAlterConfigsRequestData.AlterableConfig().setName("segment.ms").setConfigOperation((byte) 1)
                        .setValue(null));
                resources.add(r);
                yield new IncrementalAlterConfigsRequestData().setResources(resources).setValidateOnly(true);
            }
            case ALTER_CONFIGS -> {
                AlterConfigsRequestData.AlterConfigsResourceCollection resources = new AlterConfigsRequestData.AlterConfigsResourceCollection();
                AlterConfigsRequestData.AlterConfigsResource r = new AlterConfigsRequestData.AlterConfigsResource()
                        .setResourceType((byte) 4).setResourceName("1");
                r.configs().add(new AlterConfigsRequestData.AlterableConfig().setName("log.retention.ms").setValue("7"));
                resources.add(r);
                yield new AlterConfigsRequestData().setResources(resources).setValidateOnly(true);
            }
            case ALLOCATE_PRODUCER_IDS -> new AllocateProducerIdsRequestData().setBrokerId(2).setBrokerEpoch(77);
            case ELECT_LEADERS -> {
                ElectLeadersRequestData.TopicPartitionsCollection tps = new ElectLeadersRequestData.TopicPartitionsCollection();
                tps.add(new ElectLeadersRequestData.TopicPartitions().setTopic("orders").setPartitions(List.of(0, 2)));
                yield new ElectLeadersRequestData().setElectionType((byte) 1).setTopicPartitions(tps).setTimeoutMs(5000);
            }
            case ALTER_PARTITION_REASSIGNMENTS -> new AlterPartitionReassignmentsRequestData().setTimeoutMs(5000)
                    .setAllowReplicationFactorChange(false).setTopics(List.of(
                            new AlterPartitionReassignmentsRequestData.ReassignableTopic().setName("orders").setPartitions(List.of(
                                    new AlterPartitionReassignmentsRequestData.ReassignablePartition().setPartitionIndex(0)
                                            .setReplicas(List.of(3, 1)),
                                    new AlterPartitionReassignmentsRequestData.ReassignablePartition().setPartitionIndex(1)
                                            .setReplicas(null)))));
            case LIST_PARTITION_REASSIGNMENTS -> new ListPartitionReassignmentsRequestData().setTimeoutMs(5000).setTopics(List.of(
                    new ListPartitionReassignmentsRequestData.ListPartitionReassignmentsTopics().setName("orders")
                            .setPartitionIndexes(List.of(0, 1))));
            case ALTER_USER_SCRAM_CREDENTIALS -> new org.apache.kafka.common.message.AlterUserScramCredentialsRequestData()
                    .setDeletions(List.of(new org.apache.kafka.common.message.AlterUserScramCredentialsRequestData.ScramCredentialDeletion()
                            .setName("alice").setMechanism((byte) 1)))
                    .setUpsertions(List.of(new org.apache.kafka.common.message.AlterUserScramCredentialsRequestData.ScramCredentialUpsertion()
                            .setName("bob").setMechanism((byte) 2).setIterations(8192).setSalt(new byte[]{1, 2, 3})
                            .setSaltedPassword(new byte[]{4, 5, 6, 7})));
            case ALTER_CLIENT_QUOTAS -> new org.apache.kafka.common.message.AlterClientQuotasRequestData().setValidateOnly(true)
                    .setEntries(List.of(new org.apache.kafka.common.message.AlterClientQuotasRequestData.EntryData()
                            .setEntity(List.of(new org.apache.kafka.common.message.AlterClientQuotasRequestData.EntityData()
                                    .setEntityType("user").setEntityName(null)))
                            .setOps(List.of(new org.apache.kafka.common.message.AlterClientQuotasRequestData.OpData()
                                    .setKey("producer_byte_rate").setValue(1024).setRemove(false)))));
            case CREATE_ACLS -> new org.apache.kafka.common.message.CreateAclsRequestData().setCreations(List.of(
                    new org.apache.kafka.common.message.CreateAclsRequestData.AclCreation().setResourceType((byte) 2)
                            .setResourceName("orders").setResourcePatternType((byte) 3).setPrincipal("User:alice")
                            .setHost("*").setOperation((byte) 3).setPermissionType((byte) 3)));
            case DELETE_ACLS -> new org.apache.kafka.common.message.DeleteAclsRequestData().setFilters(List.of(
                    new org.apache.kafka.common.message.DeleteAclsRequestData.DeleteAclsFilter().setResourceTypeFilter((byte) 2)
                            .setResourceNameFilter(null).setPatternTypeFilter((byte) 1).setPrincipalFilter("User:alice")
                            .setHostFilter(null).setOperation((byte) 1).setPermissionType((byte) 1)));
            case DESCRIBE_QUORUM -> new org.apache.kafka.common.message.DescribeQuorumRequestData().setTopics(List.of(
                    new org.apache.kafka.common.message.DescribeQuorumRequestData.TopicData().setTopicName("__cluster_metadata")
                            .setPartitions(List.of(new org.apache.kafka.common.message.DescribeQuorumRequestData.PartitionData()
                                    .setPartitionIndex(0)))));
            case ADD_RAFT_VOTER -> {
                org.apache.kafka.common.message.AddRaftVoterRequestData r = new org.apache.kafka.common.message.AddRaftVoterRequestData()
                        .setClusterId("c1").setTimeoutMs(30_000).setVoterId(4)
                        .setVoterDirectoryId(new org.apache.kafka.common.Uuid(4, 4)).setAckWhenCommitted(false);
                r.listeners().add(new org.apache.kafka.common.message.AddRaftVoterRequestData.Listener().setName("CONTROLLER")
                        .setHost("h4").setPort(9093));
                yield r;
            }
            case REMOVE_RAFT_VOTER -> new org.apache.kafka.common.message.RemoveRaftVoterRequestData().setClusterId("c1")
                    .setVoterId(2).setVoterDirectoryId(new org.apache.kafka.common.Uuid(2, 2));
            case UPDATE_FEATURES -> {
                org.apache.kafka.common.message.UpdateFeaturesRequestData r = new org.apache.kafka.common.message.UpdateFeaturesRequestData()
                        .setTimeoutMs(30_000).setValidateOnly(true);
                r.featureUpdates().add(new org.apache.kafka.common.message.UpdateFeaturesRequestData.FeatureUpdateKey()
                        .setFeature("transaction.version").setMaxVersionLevel((short) 1).setUpgradeType((byte) 2));
                yield r;
            }
            default -> throw new IllegalArgumentException(key.name);
        };
    }

    /** A response of {@code key} with every field of the latest version set to something other than its default. */
    static ApiMessage sampleResponse(ApiKeys key) {
        short error = Errors.NOT_CONTROLLER.code();
        return switch (key) {
            case BROKER_REGISTRATION -> new BrokerRegistrationResponseData().setThrottleTimeMs(1).setErrorCode(error).setBrokerEpoch(5);
            case BROKER_HEARTBEAT -> new BrokerHeartbeatResponseData().setThrottleTimeMs(1).setErrorCode(error).setIsCaughtUp(true)
                    .setIsFenced(false).setShouldShutDown(true);
            case ALTER_PARTITION -> new AlterPartitionResponseData().setErrorCode(error).setTopics(List.of(
                    new AlterPartitionResponseData.TopicData().setTopicId(ID).setPartitions(List.of(
                            new AlterPartitionResponseData.PartitionData().setPartitionIndex(1).setLeaderId(2).setLeaderEpoch(3)
                                    .setIsr(List.of(2, 0)).setPartitionEpoch(9)))));
            case CREATE_TOPICS -> {
                CreateTopicsResponseData r = new CreateTopicsResponseData().setThrottleTimeMs(1);
                CreateTopicsResponseData.CreatableTopicResult t = new CreateTopicsResponseData.CreatableTopicResult().setName("orders")
                        .setTopicId(ID).setErrorCode(error).setErrorMessage("no").setNumPartitions(3).setReplicationFactor((short) 2)
                        .setTopicConfigErrorCode((short) 1);
                t.configs().add(new CreateTopicsResponseData.CreatableTopicConfigs().setName("retention.ms").setValue("1")
                        .setReadOnly(true).setConfigSource((byte) 1).setIsSensitive(true));
                r.topics().add(t);
                yield r;
            }
            case DELETE_TOPICS -> {
                DeleteTopicsResponseData r = new DeleteTopicsResponseData().setThrottleTimeMs(1);
                r.responses().add(new DeleteTopicsResponseData.DeletableTopicResult().setName(null).setTopicId(ID).setErrorCode(error)
                        .setErrorMessage("no"));
                yield r;
            }
            case CREATE_PARTITIONS -> new CreatePartitionsResponseData().setThrottleTimeMs(1).setResults(List.of(
                    new CreatePartitionsResponseData.CreatePartitionsTopicResult().setName("orders").setErrorCode(error).setErrorMessage("no")));
            case INCREMENTAL_ALTER_CONFIGS -> new IncrementalAlterConfigsResponseData().setThrottleTimeMs(1).setResponses(List.of(
                    new IncrementalAlterConfigsResponseData.AlterConfigsResourceResponse().setErrorCode(error).setErrorMessage("no")
                            .setResourceType((byte) 2).setResourceName("orders")));
            case ALTER_CONFIGS -> new AlterConfigsResponseData().setThrottleTimeMs(1).setResponses(List.of(
                    new AlterConfigsResponseData.AlterConfigsResourceResponse().setErrorCode(error).setErrorMessage("no")
                            .setResourceType((byte) 4).setResourceName("1")));
            case ALLOCATE_PRODUCER_IDS -> new AllocateProducerIdsResponseData().setThrottleTimeMs(1).setErrorCode(error)
                    .setProducerIdStart(1000).setProducerIdLen(1000);
            case ELECT_LEADERS -> new ElectLeadersResponseData().setThrottleTimeMs(1).setErrorCode(error).setReplicaElectionResults(List.of(
                    new ElectLeadersResponseData.ReplicaElectionResult().setTopic("orders").setPartitionResult(List.of(
                            new ElectLeadersResponseData.PartitionResult().setPartitionId(2).setErrorCode(error).setErrorMessage("no")))));
            case ALTER_PARTITION_REASSIGNMENTS -> new AlterPartitionReassignmentsResponseData().setThrottleTimeMs(1)
                    .setAllowReplicationFactorChange(false).setErrorCode(error).setErrorMessage("no").setResponses(List.of(
                            new AlterPartitionReassignmentsResponseData.ReassignableTopicResponse().setName("orders").setPartitions(List.of(
                                    new AlterPartitionReassignmentsResponseData.ReassignablePartitionResponse().setPartitionIndex(1)
                                            .setErrorCode(error).setErrorMessage("no")))));
            case LIST_PARTITION_REASSIGNMENTS -> new ListPartitionReassignmentsResponseData().setThrottleTimeMs(1).setErrorCode(error)
                    .setErrorMessage("no").setTopics(List.of(new ListPartitionReassignmentsResponseData.OngoingTopicReassignment()
                            .setName("orders").setPartitions(List.of(new ListPartitionReassignmentsResponseData.OngoingPartitionReassignment()
                                    .setPartitionIndex(0).setReplicas(List.of(3, 1, 2)).setAddingReplicas(List.of(3))
                                    .setRemovingReplicas(List.of(2))))));
            case ALTER_USER_SCRAM_CREDENTIALS -> new org.apache.kafka.common.message.AlterUserScramCredentialsResponseData()
                    .setThrottleTimeMs(1).setResults(List.of(
                            new org.apache.kafka.common.message.AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResult()
                                    .setUser("bob").setErrorCode(error).setErrorMessage("no")));
            case ALTER_CLIENT_QUOTAS -> new org.apache.kafka.common.message.AlterClientQuotasResponseData().setThrottleTimeMs(1)
                    .setEntries(List.of(new org.apache.kafka.common.message.AlterClientQuotasResponseData.EntryData()
                            .setErrorCode(error).setErrorMessage("no").setEntity(List.of(
                                    new org.apache.kafka.common.message.AlterClientQuotasResponseData.EntityData()
                                            .setEntityType("client-id").setEntityName("app")))));
            case CREATE_ACLS -> new org.apache.kafka.common.message.CreateAclsResponseData().setThrottleTimeMs(1).setResults(List.of(
                    new org.apache.kafka.common.message.CreateAclsResponseData.AclCreationResult().setErrorCode(error)
                            .setErrorMessage("no")));
            case DELETE_ACLS -> new org.apache.kafka.common.message.DeleteAclsResponseData().setThrottleTimeMs(1).setFilterResults(List.of(
                    new org.apache.kafka.common.message.DeleteAclsResponseData.DeleteAclsFilterResult().setErrorCode(error)
                            .setMatchingAcls(List.of(new org.apache.kafka.common.message.DeleteAclsResponseData.DeleteAclsMatchingAcl()
                                    .setResourceType((byte) 2).setResourceName("orders").setPatternType((byte) 3)
                                    .setPrincipal("User:alice").setHost("*").setOperation((byte) 3).setPermissionType((byte) 3)))));
            case DESCRIBE_QUORUM -> {
                org.apache.kafka.common.message.DescribeQuorumResponseData.ListenerCollection listeners =
                        new org.apache.kafka.common.message.DescribeQuorumResponseData.ListenerCollection();
                listeners.add(new org.apache.kafka.common.message.DescribeQuorumResponseData.Listener().setName("CONTROLLER")
                        .setHost("h1").setPort(9093));
                org.apache.kafka.common.message.DescribeQuorumResponseData.NodeCollection nodes =
                        new org.apache.kafka.common.message.DescribeQuorumResponseData.NodeCollection();
                nodes.add(new org.apache.kafka.common.message.DescribeQuorumResponseData.Node().setNodeId(1).setListeners(listeners));
                yield new org.apache.kafka.common.message.DescribeQuorumResponseData().setErrorCode(error).setErrorMessage("no")
                        .setNodes(nodes).setTopics(List.of(new org.apache.kafka.common.message.DescribeQuorumResponseData.TopicData()
                                .setTopicName("__cluster_metadata").setPartitions(List.of(
                                        new org.apache.kafka.common.message.DescribeQuorumResponseData.PartitionData().setPartitionIndex(0)
                                                .setErrorCode(error).setErrorMessage("no").setLeaderId(1).setLeaderEpoch(3)
                                                .setHighWatermark(42).setCurrentVoters(List.of(
                                                        new org.apache.kafka.common.message.DescribeQuorumResponseData.ReplicaState()
                                                                .setReplicaId(1).setReplicaDirectoryId(org.apache.kafka.common.Uuid.randomUuid())
                                                                .setLogEndOffset(42).setLastFetchTimestamp(5).setLastCaughtUpTimestamp(4)))
                                                .setObservers(List.of())))));
            }
            case ADD_RAFT_VOTER -> new org.apache.kafka.common.message.AddRaftVoterResponseData().setThrottleTimeMs(1)
                    .setErrorCode(error).setErrorMessage("no");
            case REMOVE_RAFT_VOTER -> new org.apache.kafka.common.message.RemoveRaftVoterResponseData().setThrottleTimeMs(1)
                    .setErrorCode(error).setErrorMessage("no");
            case UPDATE_FEATURES -> new org.apache.kafka.common.message.UpdateFeaturesResponseData().setThrottleTimeMs(1)
                    .setErrorCode(Errors.INVALID_UPDATE_VERSION.code()).setErrorMessage("no");
            default -> throw new IllegalArgumentException(key.name);
        };
    }
}
