package dev.varve.broker.network;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.TooLongFrameException;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Frames are reserved in the request memory pool from their size prefix on; a full pool stops reading. */
class FrameDecoderTest {
    private static ByteBuf header(int size) {
        return Unpooled.buffer(4).writeInt(size);
    }

    private static ByteBuf bytes(int n, int value) {
        ByteBuf b = Unpooled.buffer(n);
        for (int i = 0; i < n; i++) {
            b.writeByte(value);
        }
        return b;
    }

    @Test
    void aFrameThatDoesNotFitWaitsWithoutReadingUntilMemoryIsGivenBack() {
        RequestMemoryPool pool = new RequestMemoryPool(100);
        FrameDecoder first = new FrameDecoder(1000, pool);
        FrameDecoder second = new FrameDecoder(1000, pool);
        EmbeddedChannel a = new EmbeddedChannel(first);
        EmbeddedChannel b = new EmbeddedChannel(second);

        a.writeInbound(header(60), bytes(10, 1)); // reserved from its size on, before its bytes are here
        assertThat(pool.used()).isEqualTo(60);
        assertThat((Object) a.readInbound()).isNull();

        b.writeInbound(header(50), bytes(50, 2)); // all its bytes arrived, but 40 are free
        assertThat((Object) b.readInbound()).isNull();
        assertThat(second.waitingForMemory()).isTrue();
        assertThat(b.config().isAutoRead()).isFalse();
        assertThat(pool.used()).isEqualTo(60);

        a.writeInbound(bytes(50, 1));
        FrameDecoder.Frame fa = a.readInbound();
        assertThat(fa.bytes().remaining()).isEqualTo(60);
        assertThat(fa.reserved()).isEqualTo(60);

        pool.release(fa.reserved()); // a's request was answered
        b.runPendingTasks();
        FrameDecoder.Frame fb = b.readInbound();
        assertThat(fb).as("the waiting frame, decoded from what was buffered").isNotNull();
        assertThat(fb.bytes().remaining()).isEqualTo(50);
        assertThat(fb.bytes().get(0)).isEqualTo((byte) 2);
        assertThat(second.waitingForMemory()).isFalse();
        assertThat(pool.used()).isEqualTo(50);
        a.finishAndReleaseAll();
        b.finishAndReleaseAll();
    }

    @Test
    void aConnectionClosedPartWayThroughAFrameGivesItsReservationBack() {
        RequestMemoryPool pool = new RequestMemoryPool(100);
        EmbeddedChannel c = new EmbeddedChannel(new FrameDecoder(1000, pool));
        c.writeInbound(header(80), bytes(5, 0));
        assertThat(pool.used()).isEqualTo(80);
        c.close();
        assertThat(pool.used()).isZero();
    }

    @Test
    void sizesOutsideTheLimitsAreRefusedBeforeAnythingIsReserved() {
        RequestMemoryPool pool = new RequestMemoryPool(10_000);
        EmbeddedChannel big = new EmbeddedChannel(new FrameDecoder(1000, pool));
        assertThatThrownBy(() -> big.writeInbound(header(Integer.MAX_VALUE))).isInstanceOf(TooLongFrameException.class);
        EmbeddedChannel negative = new EmbeddedChannel(new FrameDecoder(1000, pool));
        assertThatThrownBy(() -> negative.writeInbound(header(-5))).isInstanceOf(CorruptedFrameException.class);
        assertThat(pool.used()).isZero();
    }

    @Test
    void aDecodeThatFindsThePoolFullIsRefusedAndLeavesNothingReserved() {
        // a Metadata v12 frame of 20,000 topic ids decodes to about 1.5 MB; the pool has 512 KiB
        RequestMemoryPool pool = new RequestMemoryPool(512 * 1024);
        org.apache.kafka.common.requests.AbstractRequest.parseRequest(org.apache.kafka.common.protocol.ApiKeys.METADATA,
                (short) 12, new org.apache.kafka.common.protocol.ByteBufferAccessor(ByteBuffer.wrap(new byte[]{1, 0, 0, 0})));
        ByteBuffer body = ByteBuffer.allocate(18 * 20_000 + 16);
        org.apache.kafka.common.utils.internals.ByteUtils.writeUnsignedVarint(20_001, body);
        for (int i = 0; i < 20_000; i++) {
            body.putLong(i + 1).putLong(i + 1).put((byte) 0).put((byte) 0);
        }
        body.put((byte) 0).put((byte) 0).put((byte) 0);
        body.flip();
        DecodeBudget budget = new DecodeBudget(body, body.remaining(), pool, "metadata");
        assertThatThrownBy(() -> parse(budget))
                .isInstanceOf(DecodeBudget.Exceeded.class).hasMessageContaining("queued.max.request.bytes");
        assertThat(budget.reserved()).isLessThanOrEqualTo(512 * 1024);
        pool.release(budget.reserved());
        assertThat(pool.used()).isZero();
    }

    private static void parse(DecodeBudget budget) {
        org.apache.kafka.common.requests.AbstractRequest.parseRequest(
                org.apache.kafka.common.protocol.ApiKeys.METADATA, (short) 12, budget);
        budget.check();
    }
}
