package dev.varve.broker.api;

import org.apache.kafka.common.protocol.Errors;

/**
 * PRODUCER_FENCED (error 90) for the clients that know it. KIP-588 split it from INVALID_PRODUCER_EPOCH
 * and bumped the coordinator's requests to announce it: InitProducerId v4, AddPartitionsToTxn v2,
 * AddOffsetsToTxn v2, EndTxn v2. Below those versions Kafka answers INVALID_PRODUCER_EPOCH instead,
 * which older clients treat as fatal fencing; an unknown code would leave them unable to tell what
 * happened (kafkajs 2.2.4 speaks EndTxn v1 and reports "Unknown error code 90").
 */
final class ProducerFencedError {
    static final short INIT_PRODUCER_ID = 4;
    static final short ADD_PARTITIONS_TO_TXN = 2;
    static final short ADD_OFFSETS_TO_TXN = 2;
    static final short END_TXN = 2;

    private ProducerFencedError() {
    }

    /**
     * {@code error}, or INVALID_PRODUCER_EPOCH when it is PRODUCER_FENCED and the request's
     * {@code version} is below {@code firstVersionWithProducerFenced}.
     */
    static Errors forVersion(Errors error, short version, short firstVersionWithProducerFenced) {
        return error == Errors.PRODUCER_FENCED && version < firstVersionWithProducerFenced
                ? Errors.INVALID_PRODUCER_EPOCH : error;
    }
}
