package dev.varve.broker.network;

import dev.varve.broker.api.ApiHandler;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.RequestHeader;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A request whose handling runs out of memory closes its connection and gives its memory back; nothing
 * else stops. A request whose effects come later (a transactional append waiting for the coordinator)
 * holds back the connection's next request until they are done.
 */
class ConnectionHandlerTest {
    private static ByteBuf apiVersionsFrame(int correlationId) {
        ByteBuffer request = new ApiVersionsRequest.Builder(new ApiVersionsRequestData()
                .setClientSoftwareName("t").setClientSoftwareVersion("1"), (short) 3, (short) 3).build()
                .serializeWithHeader(new RequestHeader(ApiKeys.API_VERSIONS, (short) 3, "t", correlationId));
        return Unpooled.buffer().writeInt(request.remaining()).writeBytes(request);
    }

    @Test
    void aRequestWhoseEffectsArePendingHoldsBackTheNextOneOfItsConnection() {
        List<Integer> started = new java.util.concurrent.CopyOnWriteArrayList<>();
        CompletableFuture<Void> firstApplied = new CompletableFuture<>();
        ApiHandler slowToApply = new ApiHandler() {
            @Override
            public ApiKeys apiKey() {
                return ApiKeys.API_VERSIONS;
            }

            @Override
            public short minVersion() {
                return 0;
            }

            @Override
            public short maxVersion() {
                return 3;
            }

            @Override
            public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
                return start(context, request).response();
            }

            @Override
            public Started start(RequestContext context, AbstractRequest request) {
                int id = context.header.correlationId();
                started.add(id);
                CompletableFuture<AbstractResponse> response = CompletableFuture.completedFuture(
                        new org.apache.kafka.common.requests.ApiVersionsResponse(
                                new org.apache.kafka.common.message.ApiVersionsResponseData()));
                return new Started(response, id == 1 ? firstApplied : null);
            }
        };
        RequestDispatcher dispatcher = new RequestDispatcher(List.of(slowToApply));
        RequestMemoryPool pool = new RequestMemoryPool(1 << 20);
        FrameDecoder frames = new FrameDecoder(1 << 20, pool);
        EmbeddedChannel channel = new EmbeddedChannel(frames,
                new ConnectionHandler(dispatcher, Runnable::run, dev.varve.broker.security.ListenerSecurity.plaintext("PLAINTEXT"), pool, frames)) {
            @Override
            protected java.net.SocketAddress localAddress0() { // a connection has socket addresses
                return new java.net.InetSocketAddress("127.0.0.1", 9092);
            }

            @Override
            protected java.net.SocketAddress remoteAddress0() {
                return new java.net.InetSocketAddress("127.0.0.1", 50000);
            }
        };
        assertThat(channel.isOpen()).isTrue();

        channel.writeInbound(apiVersionsFrame(1), apiVersionsFrame(2), apiVersionsFrame(3));
        channel.runPendingTasks();
        assertThat(started).as("requests handled while the first one's effects are pending").containsExactly(1);

        firstApplied.complete(null);
        channel.runPendingTasks();
        assertThat(started).as("requests handled once they are in place").containsExactly(1, 2, 3);
        int responses = 0;
        for (Object out; (out = channel.readOutbound()) != null; ) {
            io.netty.util.ReferenceCountUtil.release(out);
            responses++;
        }
        assertThat(responses).as("response parts written").isPositive();
        assertThat(channel.isOpen()).isTrue();
        channel.finishAndReleaseAll();
    }

    @Test
    void anOutOfMemoryErrorInAHandlerClosesOnlyItsConnectionAndReleasesItsReservation() {
        ApiHandler exhausting = new ApiHandler() {
            @Override
            public ApiKeys apiKey() {
                return ApiKeys.API_VERSIONS;
            }

            @Override
            public short minVersion() {
                return 0;
            }

            @Override
            public short maxVersion() {
                return 3;
            }

            @Override
            public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
                throw new OutOfMemoryError("Java heap space (test)");
            }
        };
        RequestDispatcher dispatcher = new RequestDispatcher(List.of(exhausting));
        RequestMemoryPool pool = new RequestMemoryPool(1 << 20);
        FrameDecoder frames = new FrameDecoder(1 << 20, pool);
        EmbeddedChannel channel = new EmbeddedChannel(frames,
                new ConnectionHandler(dispatcher, Runnable::run, dev.varve.broker.security.ListenerSecurity.plaintext("PLAINTEXT"), pool, frames));

        ByteBuffer request = new ApiVersionsRequest.Builder(new ApiVersionsRequestData()
                .setClientSoftwareName("t").setClientSoftwareVersion("1"), (short) 3, (short) 3).build()
                .serializeWithHeader(new RequestHeader(ApiKeys.API_VERSIONS, (short) 3, "t", 1));
        ByteBuf frame = Unpooled.buffer().writeInt(request.remaining()).writeBytes(request);
        channel.pipeline().fireChannelRead(frame); // (writeInbound would throw: the channel closes during it)
        channel.runPendingTasks();

        assertThat(channel.isOpen()).as("the connection whose request ran out of memory").isFalse();
        assertThat(pool.used()).as("bytes left reserved").isZero();
        channel.finishAndReleaseAll();
    }
}
