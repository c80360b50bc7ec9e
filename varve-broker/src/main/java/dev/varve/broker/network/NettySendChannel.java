package dev.varve.broker.network;

import io.netty.buffer.Unpooled;
import io.netty.channel.DefaultFileRegion;
import org.apache.kafka.common.network.Send;
import org.apache.kafka.common.network.TransferableChannel;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns a Kafka {@link Send} into Netty messages without copying record bytes: header and body
 * buffers become wrapped {@code ByteBuf}s, and file slices (fetched records) become
 * {@link SharedFileRegion}s, which the epoll transport sends with sendfile(2).
 */
public final class NettySendChannel implements TransferableChannel {
    private final List<Object> parts = new ArrayList<>();
    private long size;

    /** The parts of {@code send}, in order, ready for {@code ChannelHandlerContext.write}. */
    public static List<Object> partsOf(Send send) throws IOException {
        NettySendChannel channel = new NettySendChannel();
        while (!send.completed()) {
            send.writeTo(channel);
        }
        return channel.parts;
    }

    @Override
    public boolean hasPendingWrites() {
        return false;
    }

    @Override
    public long transferFrom(FileChannel fileChannel, long position, long count) {
        if (count > 0) {
            parts.add(new SharedFileRegion(fileChannel, position, count));
            size += count;
        }
        return count;
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) {
        long written = 0;
        for (int i = offset; i < offset + length; i++) {
            written += write(srcs[i]);
        }
        return written;
    }

    @Override
    public long write(ByteBuffer[] srcs) {
        return write(srcs, 0, srcs.length);
    }

    @Override
    public int write(ByteBuffer src) {
        int n = src.remaining();
        if (n > 0) {
            // The Send owns its buffers and never reuses them, so they can be wrapped as they are.
            parts.add(Unpooled.wrappedBuffer(src.slice()));
            src.position(src.limit());
            size += n;
        }
        return n;
    }

    @Override
    public boolean isOpen() {
        return true;
    }

    @Override
    public void close() {
    }

    long size() {
        return size;
    }

    /** A region of a segment file shared with the log: releasing it must not close the channel. */
    static final class SharedFileRegion extends DefaultFileRegion {
        SharedFileRegion(FileChannel channel, long position, long count) {
            super(channel, position, count);
        }

        @Override
        protected void deallocate() {
            // The log owns the channel; it closes it when the segment is deleted or closed.
        }
    }
}
