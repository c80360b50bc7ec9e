package dev.varve.broker.network;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.TooLongFrameException;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * Splits a connection's bytes into size-prefixed frames, copying each into a heap buffer of its own
 * (which the parsed request points into). The size is checked against {@code socket.request.max.bytes}
 * and reserved in the {@link RequestMemoryPool} as soon as its 4 bytes arrive, before any of the
 * frame is kept: when the pool is full the connection stops reading (nothing more is taken from the
 * socket, so the client is slowed by TCP) until memory is given back, as Kafka mutes a channel.
 * Not thread-safe: one per connection, on its event loop.
 */
final class FrameDecoder extends ByteToMessageDecoder {
    /** A frame and the pool bytes reserved for it (given back once its request is answered). */
    record Frame(ByteBuffer bytes, long reserved) {
    }

    private final int maxFrameBytes;
    /** The limit until the connection is authenticated ({@code sasl.server.max.receive.size}); 0 when none. */
    private volatile int unauthenticatedMaxBytes;
    private final RequestMemoryPool pool;
    /** The size of the frame whose bytes are being gathered, reserved in the pool; -1 when none. */
    private int reservedFor = -1;
    private boolean waitingForMemory;

    FrameDecoder(int maxFrameBytes, RequestMemoryPool pool) {
        this.maxFrameBytes = maxFrameBytes;
        this.pool = pool;
    }

    /** Frames above {@code maxBytes} close the connection until {@link #authenticated()}. */
    void limitUntilAuthenticated(int maxBytes) {
        this.unauthenticatedMaxBytes = maxBytes;
    }

    /** The connection is authenticated: {@code socket.request.max.bytes} alone limits frames from now on. */
    void authenticated() {
        this.unauthenticatedMaxBytes = 0;
    }

    /** Whether the connection must not read: its next frame waits for pool memory. */
    boolean waitingForMemory() {
        return waitingForMemory;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (waitingForMemory || in.readableBytes() < 4) {
            return;
        }
        int size = in.getInt(in.readerIndex());
        if (size < 0) {
            throw new CorruptedFrameException("negative frame size " + size);
        }
        int preAuth = unauthenticatedMaxBytes;
        if (preAuth > 0 && size > preAuth) {
            // before authentication nobody may make the broker hold more than this (Kafka's limit too)
            throw new TooLongFrameException("frame of " + size + " bytes before authentication is larger than "
                    + "sasl.server.max.receive.size (" + preAuth + ")");
        }
        if (size > maxFrameBytes) {
            throw new TooLongFrameException("frame of " + size + " bytes is larger than socket.request.max.bytes ("
                    + maxFrameBytes + ")");
        }
        if (reservedFor < 0) {
            long free = pool.free();
            if (!pool.tryReserve(size)) {
                waitingForMemory = true;
                ctx.channel().config().setAutoRead(false);
                pool.whenReleased(() -> ctx.executor().execute(() -> resume(ctx)), free);
                return;
            }
            reservedFor = size;
        }
        if (in.readableBytes() < 4 + size) {
            return;
        }
        in.skipBytes(4);
        ByteBuffer copy = ByteBuffer.allocate(size);
        in.readBytes(copy);
        copy.flip();
        reservedFor = -1;
        out.add(new Frame(copy, size));
    }

    /** Fired down the pipeline once a connection that waited for memory may read again. */
    static final Object MEMORY_AVAILABLE = new Object();

    /**
     * Memory was given back: try the waiting frame again (its bytes may all be here already, so no
     * new bytes would come to trigger it); if it got its memory, tell the connection it may read.
     */
    private void resume(ChannelHandlerContext ctx) {
        if (!waitingForMemory || !ctx.channel().isActive()) {
            return;
        }
        waitingForMemory = false;
        channelRead(ctx, Unpooled.EMPTY_BUFFER);
        if (!waitingForMemory) {
            ctx.fireUserEventTriggered(MEMORY_AVAILABLE);
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        try {
            super.channelRead(ctx, msg);
        } catch (Exception e) {
            ctx.fireExceptionCaught(e);
        }
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        if (reservedFor >= 0) {
            pool.release(reservedFor); // the connection closed part-way through a frame
            reservedFor = -1;
        }
    }
}
