package dev.varve.broker.network;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.stream.ChunkedInput;
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
 * {@link SharedFileRegion}s, which the epoll transport sends with sendfile(2). On a TLS connection
 * (which encrypts in user space) file slices are read into buffers instead, one chunk at a time as the
 * socket takes them ({@link FileSlice}), as Kafka's {@code SslTransportLayer} does: a response's
 * records are never all in memory at once.
 */
public final class NettySendChannel implements TransferableChannel {
    private final List<Object> parts = new ArrayList<>();
    private final boolean tls;
    private long size;

    private NettySendChannel(boolean tls) {
        this.tls = tls;
    }

    /** The parts of {@code send}, in order, ready for {@code ChannelHandlerContext.write}. */
    public static List<Object> partsOf(Send send) throws IOException {
        return partsOf(send, false);
    }

    /**
     * As {@link #partsOf(Send)}; with {@code tls}, file slices become {@link FileSlice}s, read a chunk
     * at a time as the connection drains (its pipeline has a {@code ChunkedWriteHandler}).
     */
    public static List<Object> partsOf(Send send, boolean tls) throws IOException {
        NettySendChannel channel = new NettySendChannel(tls);
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
    public long transferFrom(FileChannel fileChannel, long position, long count) throws IOException {
        if (count > 0 && tls) {
            parts.add(new FileSlice(fileChannel, position, count));
            size += count;
        } else if (count > 0) {
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

    /**
     * A region of a segment file read in chunks of {@link #CHUNK} bytes into direct buffers, for a
     * connection that cannot use sendfile. Closing it leaves the file open: the log owns it.
     */
    static final class FileSlice implements ChunkedInput<ByteBuf> {
        static final int CHUNK = 64 * 1024;
        private final FileChannel channel;
        private final long start;
        private final long end;
        private long position;

        FileSlice(FileChannel channel, long position, long count) {
            this.channel = channel;
            this.start = position;
            this.position = position;
            this.end = position + count;
        }

        @Override
        public boolean isEndOfInput() {
            return position >= end;
        }

        @Override
        public void close() {
            // the log owns the channel
        }

        @Deprecated
        @Override
        public ByteBuf readChunk(ChannelHandlerContext ctx) throws IOException {
            return readChunk(ctx.alloc());
        }

        @Override
        public ByteBuf readChunk(ByteBufAllocator allocator) throws IOException {
            if (position >= end) {
                return null;
            }
            ByteBuf buf = allocator.directBuffer((int) Math.min(CHUNK, end - position));
            try {
                while (buf.isWritable()) {
                    int n = buf.writeBytes(channel, position, buf.writableBytes());
                    if (n < 0) {
                        throw new java.io.EOFException("the segment file ended " + (end - position) + " bytes before the slice");
                    }
                    position += n;
                }
                return buf;
            } catch (IOException | RuntimeException e) {
                buf.release();
                throw e;
            }
        }

        @Override
        public long length() {
            return end - start;
        }

        @Override
        public long progress() {
            return position - start;
        }
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
