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

/** A request whose handling runs out of memory closes its connection and gives its memory back; nothing else stops. */
class ConnectionHandlerTest {
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
                new ConnectionHandler(dispatcher, Runnable::run, new ListenerName("PLAINTEXT"), pool, frames));

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
