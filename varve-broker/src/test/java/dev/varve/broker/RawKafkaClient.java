package dev.varve.broker;

import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestHeader;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;

/**
 * A blocking one-request-at-a-time Kafka protocol client for tests: sends a request at an exact
 * version and parses the response with Kafka's classes, so every advertised version can be tried.
 */
final class RawKafkaClient implements AutoCloseable {
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private int correlationId;

    RawKafkaClient(InetSocketAddress address) throws IOException {
        socket = new Socket(address.getAddress(), address.getPort());
        socket.setSoTimeout(10_000);
        in = new DataInputStream(socket.getInputStream());
        out = new DataOutputStream(socket.getOutputStream());
    }

    @SuppressWarnings("unchecked")
    <R extends AbstractResponse> R send(AbstractRequest.Builder<?> builder, short version) throws IOException {
        AbstractRequest request = builder.build(version);
        ApiKeys key = request.apiKey();
        RequestHeader header = new RequestHeader(key, version, "raw-test", ++correlationId);
        ByteBuffer body = request.serializeWithHeader(header);
        out.writeInt(body.remaining());
        out.write(body.array(), body.arrayOffset() + body.position(), body.remaining());
        out.flush();
        int size = in.readInt();
        byte[] frame = new byte[size];
        in.readFully(frame);
        return (R) AbstractResponse.parseResponse(ByteBuffer.wrap(frame), header);
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
