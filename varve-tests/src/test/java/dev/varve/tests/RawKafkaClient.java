package dev.varve.tests;

import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.requests.RequestHeader;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;

/**
 * One blocking connection speaking the Kafka protocol with kafka-clients' own request and response
 * classes, for what the Java clients do not let a test do directly: resend a batch with a chosen
 * producer id, epoch and sequence.
 */
final class RawKafkaClient implements AutoCloseable {
    /** Produce v12: the newest version that names topics (v13+ uses topic ids). */
    static final short PRODUCE_VERSION = 12;

    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private int correlationId;

    RawKafkaClient(String bootstrap) throws IOException {
        int colon = bootstrap.lastIndexOf(':');
        socket = new Socket(bootstrap.substring(0, colon), Integer.parseInt(bootstrap.substring(colon + 1)));
        socket.setSoTimeout(30_000);
        in = new DataInputStream(socket.getInputStream());
        out = new DataOutputStream(socket.getOutputStream());
    }

    @SuppressWarnings("unchecked")
    <R extends AbstractResponse> R send(AbstractRequest request) throws IOException {
        RequestHeader header = new RequestHeader(request.apiKey(), request.version(), "varve-tests-raw",
                ++correlationId);
        ByteBuffer frame = request.serializeWithHeader(header);
        out.writeInt(frame.remaining());
        out.write(frame.array(), frame.arrayOffset() + frame.position(), frame.remaining());
        out.flush();
        byte[] response = new byte[in.readInt()];
        in.readFully(response);
        return (R) AbstractResponse.parseResponse(ByteBuffer.wrap(response), header);
    }

    /** InitProducerId for an idempotent (non-transactional) producer. */
    InitProducerIdResponse initProducerId() throws IOException {
        return send(new InitProducerIdRequest.Builder(new InitProducerIdRequestData()
                .setTransactionalId(null).setTransactionTimeoutMs(60_000)
                .setProducerId(-1).setProducerEpoch((short) -1)).build((short) 4));
    }

    /** Produces {@code records} to one partition with acks=-1 and returns that partition's answer. */
    ProduceResponseData.PartitionProduceResponse produce(String topic, int partition, MemoryRecords records)
            throws IOException {
        ProduceRequestData data = new ProduceRequestData().setAcks((short) -1).setTimeoutMs(30_000);
        ProduceRequestData.TopicProduceData t = new ProduceRequestData.TopicProduceData().setName(topic);
        t.partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(partition).setRecords(records));
        data.topicData().add(t);
        ProduceResponse response = send(new ProduceRequest(data, PRODUCE_VERSION));
        return response.data().responses().iterator().next().partitionResponses().get(0);
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
