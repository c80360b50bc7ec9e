package dev.varve.broker.network;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import dev.varve.broker.security.ListenerSecurity;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.network.Send;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One client connection: requests are handled one at a time and in order, each after the appends
 * of the one before are done (so a producer's pipelined batches are appended in the order sent,
 * even when one waits for the transaction coordinator), responses leave in request order, and reading
 * stops — back-pressure through TCP — while too many responses are pending or the socket cannot
 * take more bytes.
 *
 * <p>Frames arrive from the {@link FrameDecoder}: size-checked (nothing is allocated for a frame
 * above {@code socket.request.max.bytes}), reserved in the {@link RequestMemoryPool} and copied once
 * into a heap buffer, which the parsed request (and its records) points into until the response is
 * built; its reservation, and its decoding's, are given back then. Reading also stops while the
 * decoder waits for pool memory.
 *
 * <p>An error while handling a request (OutOfMemoryError included) closes only its connection.
 */
final class ConnectionHandler extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionHandler.class);
    /** Responses pending before the connection stops reading (Kafka clients pipeline at most 5). */
    static final int MAX_PENDING = 32;

    private final RequestDispatcher dispatcher;
    private final RequestMemoryPool pool;
    private final FrameDecoder decoder;
    private final SerialExecutor requests;
    private final ListenerSecurity.Listener listener;
    private final ArrayDeque<CompletableFuture<Send>> pending = new ArrayDeque<>();
    /** When each pending request went through each phase (same order as {@link #pending}), for Kafka's request metrics. */
    private final ArrayDeque<Stamps> stamps = new ArrayDeque<>();

    /** A request's phase times (System.nanoTime), as Kafka's RequestChannel records them. */
    private static final class Stamps {
        final long received = System.nanoTime();
        volatile long started;
        volatile long handled;
        volatile long ready;
        volatile org.apache.kafka.common.protocol.ApiKeys key;
        volatile boolean follower;
    }
    /** Read by the connection's request tasks: a SASL exchange or a TLS handshake names its principal. */
    private volatile RequestDispatcher.Connection connection;
    /** The exchange a SASL listener's connection must complete before anything else; null for the others. */
    private final SaslAuthenticator sasl;
    private volatile javax.net.ssl.SSLSession tlsSession;
    private boolean closing;

    ConnectionHandler(RequestDispatcher dispatcher, Executor requestThreads, ListenerSecurity.Listener listener,
                      RequestMemoryPool pool, FrameDecoder decoder) {
        this.dispatcher = dispatcher;
        this.pool = pool;
        this.decoder = decoder;
        this.requests = new SerialExecutor(requestThreads);
        this.listener = listener;
        this.sasl = listener.sasl() == null ? null : new SaslAuthenticator(listener);
        if (sasl != null) {
            decoder.limitUntilAuthenticated(listener.sasl().maxReceiveBytes());
        }
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        if (!dispatcher.accepting()) {
            closing = true;
            ctx.close(); // not serving yet: the client tries another broker or again later
            return;
        }
        InetSocketAddress local = (InetSocketAddress) ctx.channel().localAddress();
        InetSocketAddress remote = (InetSocketAddress) ctx.channel().remoteAddress();
        // A TLS connection's principal is known once its handshake is done, before any request can be read.
        KafkaPrincipal principal = listener.tls() ? KafkaPrincipal.ANONYMOUS : listener.plaintextPrincipal(remote.getAddress());
        connection = new RequestDispatcher.Connection(local.getHostString() + ":" + local.getPort() + "-"
                + remote.getHostString() + ":" + remote.getPort(), remote, listener.name(), listener.protocol(), principal);
        super.channelActive(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        FrameDecoder.Frame frame = (FrameDecoder.Frame) msg;
        if (closing) {
            pool.release(frame.reserved());
            return;
        }
        ByteBuffer copy = frame.bytes();
        CompletableFuture<Send> slot = new CompletableFuture<>();
        Stamps stamp = new Stamps();
        pending.add(slot);
        stamps.add(stamp);
        if (pending.size() >= MAX_PENDING) {
            ctx.channel().config().setAutoRead(false);
        }
        requests.submit(() -> {
            stamp.started = System.nanoTime();
            CompletableFuture<Send> response;
            java.util.concurrent.CompletionStage<?> applied = null;
            try {
                boolean renewing = sasl != null && sasl.beginsReauthentication(copy);
                if (sasl != null && !renewing && sasl.expired(System.nanoTime())) {
                    // as Kafka: a session past connections.max.reauth.ms that was not renewed ends here
                    throw new org.apache.kafka.common.errors.InvalidRequestException(
                            "the SASL session expired (connections.max.reauth.ms) without re-authentication");
                }
                if (sasl != null && (renewing || !sasl.complete())) {
                    response = sasl.handle(dispatcher, connection, copy, pool, java.util.Optional.ofNullable(tlsSession));
                    if (sasl.complete()) {
                        connection = connection.withPrincipal(sasl.principal());
                        decoder.authenticated();
                    }
                } else {
                    RequestDispatcher.Dispatched dispatched = dispatcher.dispatch(connection, copy, pool);
                    stamp.key = dispatched.key();
                    stamp.follower = dispatched.follower();
                    response = dispatched.response();
                    applied = dispatched.applied();
                }
            } catch (OutOfMemoryError e) {
                // what this request held is garbage now; the broker goes on, this connection closes
                LOG.error("closing connection {}: out of memory handling its request", connection.id());
                response = CompletableFuture.failedFuture(e);
            } catch (RuntimeException | LinkageError | StackOverflowError e) {
                // also errors: the connection's response slot must complete (closing it), or its
                // later requests would wait forever behind this one
                response = CompletableFuture.failedFuture(e);
            }
            stamp.handled = System.nanoTime();
            response.whenComplete((send, error) -> pool.release(frame.reserved()));
            response.whenComplete((send, error) -> stamp.ready = System.nanoTime());
            response.whenComplete((send, error) -> ctx.executor().execute(() -> {
                if (error != null) {
                    slot.completeExceptionally(error);
                } else {
                    slot.complete(send);
                }
                writeCompleted(ctx);
            }));
            return applied; // the next request of this connection is handled once this one's appends are done
        });
    }

    private static long ms(long nanos) {
        return Math.max(0, nanos / 1_000_000);
    }

    /** Writes every completed response at the head of the queue, in order. Runs on the event loop. */
    private void writeCompleted(ChannelHandlerContext ctx) {
        boolean wrote = false;
        while (!pending.isEmpty() && pending.peek().isDone() && !closing) {
            CompletableFuture<Send> head = pending.poll();
            Stamps stamp = stamps.poll();
            long dequeued = System.nanoTime();
            Send send;
            try {
                send = head.join();
            } catch (RuntimeException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                LOG.info("closing connection {}: {}", connection.id(), cause.getMessage());
                closing = true;
                ctx.flush();
                ctx.close();
                return;
            }
            if (send == null) {
                continue; // e.g. a produce with acks=0
            }
            try {
                // TLS encrypts in user space: file slices are read in chunks (no sendfile), as Kafka does
                List<Object> parts = NettySendChannel.partsOf(send, listener.tls());
                io.netty.channel.ChannelFuture written = null;
                for (Object part : parts) {
                    written = ctx.write(part);
                }
                dev.varve.broker.metrics.RequestMetrics metrics = dispatcher.metrics();
                if (metrics != null && stamp != null && stamp.key != null && written != null) {
                    written.addListener(f -> metrics.completed(stamp.key, stamp.follower, new dev.varve.broker.metrics.RequestMetrics.Timing(
                            ms(stamp.started - stamp.received), ms(stamp.handled - stamp.started), ms(stamp.ready - stamp.handled),
                            ms(dequeued - stamp.ready), ms(System.nanoTime() - dequeued))));
                }
                wrote = true;
                if (sasl != null && sasl.failed()) {
                    // the answer saying why goes out, then the connection closes (as Kafka)
                    closing = true;
                    ctx.writeAndFlush(io.netty.buffer.Unpooled.EMPTY_BUFFER).addListener(io.netty.channel.ChannelFutureListener.CLOSE);
                    return;
                }
            } catch (IOException e) {
                LOG.warn("cannot build a response on {}", connection.id(), e);
                closing = true;
                ctx.close();
                return;
            }
        }
        if (wrote) {
            ctx.flush();
        }
        maybeResumeReading(ctx);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object event) throws Exception {
        if (event == FrameDecoder.MEMORY_AVAILABLE) {
            maybeResumeReading(ctx);
            return;
        }
        if (event instanceof SslHandshakeCompletionEvent handshake) {
            if (handshake.isSuccess()) {
                SslHandler tls = ctx.pipeline().get(SslHandler.class);
                tlsSession = tls.engine().getSession();
                try {
                    if (sasl == null) { // on SASL_SSL the SASL exchange names the principal
                        connection = connection.withPrincipal(listener.tlsPrincipal(tlsSession, connection.remote().getAddress()));
                    }
                } catch (RuntimeException e) {
                    // e.g. a principal mapping rule that does not match: Kafka refuses the connection too
                    LOG.info("closing connection {}: no principal for its certificate: {}", connection.id(), e.getMessage());
                    closing = true;
                    ctx.close();
                }
            } else {
                // as Kafka logs it (unless exceptionCaught did); the SslHandler closes the connection
                if (!closing) {
                    LOG.info("Failed authentication with {} (SSL handshake failed: {})", ctx.channel().remoteAddress(),
                            handshake.cause() == null ? "?" : handshake.cause().getMessage());
                }
                closing = true;
            }
            return;
        }
        super.userEventTriggered(ctx, event);
    }

    private void maybeResumeReading(ChannelHandlerContext ctx) {
        if (!closing && pending.size() < MAX_PENDING && ctx.channel().isWritable() && !decoder.waitingForMemory()) {
            ctx.channel().config().setAutoRead(true);
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
        if (!ctx.channel().isWritable()) {
            ctx.channel().config().setAutoRead(false); // a slow reader: stop taking its requests
        } else {
            maybeResumeReading(ctx);
        }
        super.channelWritabilityChanged(ctx);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Throwable root = cause instanceof io.netty.handler.codec.DecoderException && cause.getCause() != null ? cause.getCause() : cause;
        if (root instanceof javax.net.ssl.SSLException) {
            // a failed handshake (no or untrusted certificate, plaintext on a TLS port): the client's fault, logged as Kafka does
            if (!closing) {
                LOG.info("Failed authentication with {} (SSL handshake failed: {})", ctx.channel().remoteAddress(), root.getMessage());
            }
        } else if (cause instanceof TooLongFrameException || cause instanceof io.netty.handler.codec.CorruptedFrameException) {
            LOG.info("closing connection {}: {}", connection == null ? ctx.channel() : connection.id(), cause.getMessage());
        } else if (cause instanceof IOException) {
            LOG.debug("connection {} failed: {}", ctx.channel(), cause.toString());
        } else {
            LOG.warn("closing connection {} after an unexpected error", ctx.channel(), cause);
        }
        closing = true;
        ctx.close();
    }
}
