package dev.varve.broker;

import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.ApiVersionsResponse;
import org.apache.kafka.common.requests.RequestHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every API a single node advertises in ApiVersions (with every group protocol on), at every version it
 * advertises, sent on the wire with every field at its default: the broker answers it (a Produce with
 * acks=0 excepted), the answer parses with Kafka's classes at that version, and no part of it is
 * UNKNOWN_SERVER_ERROR (a handler that threw) or UNSUPPORTED_VERSION (a version advertised but not
 * served). Semantic errors (INVALID_REQUEST, GROUP_ID_NOT_FOUND...) are the right answers to empty
 * requests. The API-specific wire tests (GroupApisWireTest, CoreApisWireTest, AdminApisWireTest...)
 * check the meaningful requests.
 */
class AdvertisedApisTest {
    @TempDir
    File dir;

    @Test
    void everyAdvertisedApiIsAnsweredAtEveryAdvertisedVersion() throws Exception {
        try (Broker broker = Broker.start(BrokerConfig.from(Map.of("listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(), "group.coordinator.rebalance.protocols", "classic,consumer,share")))) {
            InetSocketAddress address = broker.boundAddresses().get(0);
            List<String> failures = new ArrayList<>();
            int sent = 0;
            ApiVersionsResponseData versions;
            try (RawKafkaClient c = new RawKafkaClient(address)) {
                ApiVersionsResponse r = c.send(new ApiVersionsRequest.Builder(new ApiVersionsRequestData()
                        .setClientSoftwareName("t").setClientSoftwareVersion("1"), (short) 3, (short) 3), (short) 3);
                versions = r.data();
            }
            assertThat(versions.apiKeys()).as("advertised APIs").hasSizeGreaterThan(40);
            int correlation = 0;
            for (ApiVersionsResponseData.ApiVersion v : versions.apiKeys()) {
                ApiKeys key = ApiKeys.forId(v.apiKey());
                for (short version = v.minVersion(); version <= v.maxVersion(); version++) {
                    try (Socket socket = new Socket(address.getAddress(), address.getPort())) {
                        socket.setSoTimeout(15_000);
                        DataInputStream in = new DataInputStream(socket.getInputStream());
                        DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                        ApiMessage body = key.messageType.newRequest();
                        if (key == ApiKeys.PRODUCE) {
                            ((org.apache.kafka.common.message.ProduceRequestData) body).setAcks((short) 1);
                        }
                        RequestHeader header = new RequestHeader(key, version, "advertised", ++correlation);
                        ObjectSerializationCache cache = new ObjectSerializationCache();
                        int hs = header.data().size(cache, header.headerVersion());
                        int bs;
                        try {
                            bs = body.size(cache, version);
                        } catch (RuntimeException e) {
                            failures.add(key + " v" + version + ": the default request does not encode: " + e);
                            continue;
                        }
                        // a request Kafka's own request class refuses (DescribeAcls with an UNKNOWN filter) makes Kafka
                        // close the connection: that is the expected answer to it
                        boolean kafkaRefuses = false;
                        try {
                            ByteBuffer b = ByteBuffer.allocate(bs);
                            body.write(new ByteBufferAccessor(b), new ObjectSerializationCache(), version);
                            b.flip();
                            org.apache.kafka.common.requests.AbstractRequest.parseRequest(key, version, new ByteBufferAccessor(b));
                        } catch (RuntimeException e) {
                            kafkaRefuses = true;
                        }
                        ByteBuffer buf = ByteBuffer.allocate(4 + hs + bs).putInt(hs + bs);
                        header.data().write(new ByteBufferAccessor(buf), cache, header.headerVersion());
                        body.write(new ByteBufferAccessor(buf), cache, version);
                        out.write(buf.array());
                        out.flush();
                        sent++;
                        byte[] frame;
                        try {
                            frame = new byte[in.readInt()];
                            in.readFully(frame);
                        } catch (java.io.EOFException | java.net.SocketException e) {
                            if (!kafkaRefuses) {
                                failures.add(key + " v" + version + ": the connection was closed instead of answered");
                            }
                            continue;
                        }
                        AbstractResponse response;
                        try {
                            response = AbstractResponse.parseResponse(ByteBuffer.wrap(frame), header);
                        } catch (RuntimeException e) {
                            failures.add(key + " v" + version + ": the answer does not parse: " + e);
                            continue;
                        }
                        Map<Errors, Integer> errors = response.errorCounts();
                        for (Errors bad : List.of(Errors.UNKNOWN_SERVER_ERROR, Errors.UNSUPPORTED_VERSION)) {
                            if (errors.containsKey(bad)) {
                                failures.add(key + " v" + version + ": " + bad + " in " + response);
                            }
                        }
                    }
                }
            }
            System.out.println("AdvertisedApisTest: " + versions.apiKeys().size() + " APIs, " + sent + " (API, version) pairs answered");
            assertThat(failures).as("answers to the default request of every advertised API and version").isEmpty();
        }
    }
}
