package dev.varve.broker.network;

import dev.varve.broker.BrokerConfig;
import dev.varve.broker.security.ListenerSecurity;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.stream.ChunkedWriteHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * The Kafka protocol listener: Netty with epoll when available (sendfile for fetched records), NIO
 * otherwise. Each connection's pipeline is a size-prefixed {@link FrameDecoder} — the 4-byte size is
 * checked against {@code socket.request.max.bytes} and reserved in the listeners' shared
 * {@link RequestMemoryPool} ({@code queued.max.request.bytes}) before anything is kept — and a
 * {@link ConnectionHandler}.
 */
public final class KafkaServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KafkaServer.class);

    private final EventLoopGroup acceptors;
    private final EventLoopGroup workers;
    /** The network threads' idle time (NetworkProcessorAvgIdlePercent). */
    private final dev.varve.broker.metrics.ThreadsIdle networkIdle = new dev.varve.broker.metrics.ThreadsIdle("varve-network");
    private final List<Channel> serverChannels = new ArrayList<>();
    private final List<InetSocketAddress> boundAddresses = new ArrayList<>();

    public KafkaServer(BrokerConfig config, ListenerSecurity security, RequestDispatcher dispatcher, Executor requestThreads)
            throws InterruptedException {
        boolean epoll = Epoll.isAvailable();
        IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        Class<? extends ServerChannel> channelType = epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        acceptors = new MultiThreadIoEventLoopGroup(1, io);
        workers = new MultiThreadIoEventLoopGroup(config.numNetworkThreads(), networkIdle.factory(), io);
        int maxFrame = config.socketRequestMaxBytes();
        RequestMemoryPool pool = new RequestMemoryPool(config.queuedMaxRequestBytes());
        ConnectionLimits limits = new ConnectionLimits(config.intValue(BrokerConfig.MAX_CONNECTIONS),
                config.intValue(BrokerConfig.MAX_CONNECTIONS_PER_IP), config.connectionLimitOverrides(),
                config.listenerLimits(false), config.intValue(BrokerConfig.MAX_CONNECTION_CREATION_RATE),
                config.listenerLimits(true), config.intValue(BrokerConfig.QUOTA_WINDOW_NUM),
                1000L * config.intValue(BrokerConfig.QUOTA_WINDOW_SIZE_SECONDS));
        // as Kafka: the inter-broker listener is exempt from max.connections (replication must not starve);
        // a single node has no inter-broker traffic, so there every listener is limited
        String exempt = config.clustered() ? security.interBrokerListener() : null;

        LOG.info("request memory pool (queued.max.request.bytes): {} bytes", pool.capacity());
        try {
            for (BrokerConfig.Endpoint endpoint : config.clientListeners()) {
                ListenerSecurity.Listener listener = security.listener(endpoint.listenerName());
                boolean counted = !listener.name().value().equals(exempt);
                String name = endpoint.listenerName();
                ServerBootstrap bootstrap = new ServerBootstrap()
                        .group(acceptors, workers)
                        .channel(channelType)
                        .option(ChannelOption.SO_BACKLOG, 1024)
                        .option(ChannelOption.SO_REUSEADDR, true)
                        .childOption(ChannelOption.TCP_NODELAY, true)
                        .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(256 * 1024, 4 * 1024 * 1024))
                        .childHandler(new ChannelInitializer<SocketChannel>() {
                            @Override
                            protected void initChannel(SocketChannel ch) {
                                long delay = limits.creationDelay(name, counted, System.currentTimeMillis());
                                if (delay <= 0) {
                                    admit(ch, false);
                                    return;
                                }
                                // max.connection.creation.rate: as behind Kafka's paused acceptor, this connection is
                                // taken up only once the rate allows (nothing of it is read meanwhile)
                                ch.config().setAutoRead(false);
                                ch.eventLoop().schedule(() -> {
                                    if (ch.isActive()) {
                                        admit(ch, true);
                                    }
                                }, delay, TimeUnit.MILLISECONDS);
                            }

                            /** Applies the connection limits; {@code late}: the channel was already active (handlers added now). */
                            private void admit(SocketChannel ch, boolean late) {
                                java.net.InetAddress address = ch.remoteAddress().getAddress();
                                Runnable serveLater = () -> ch.eventLoop().execute(() -> {
                                    if (ch.isActive()) {
                                        serve(ch);
                                        ch.pipeline().fireChannelActive(); // its handlers were not there when it became active
                                        ch.config().setAutoRead(true);
                                    } else {
                                        limits.closed(address, name, counted);
                                    }
                                });
                                switch (limits.admit(address, name, counted, serveLater)) {
                                    case REFUSE -> ch.close();
                                    case WAIT -> {
                                        // as a Kafka broker at max.connections: connected, but nothing read until there is room
                                        ch.config().setAutoRead(false);
                                        ch.closeFuture().addListener(f -> limits.gaveUp(address, serveLater));
                                    }
                                    case SERVE -> {
                                        serve(ch);
                                        if (late) {
                                            ch.pipeline().fireChannelActive();
                                            ch.config().setAutoRead(true);
                                        }
                                    }
                                }
                            }

                            private void serve(SocketChannel ch) {
                                java.net.InetAddress address = ch.remoteAddress().getAddress();
                                ch.closeFuture().addListener(f -> limits.closed(address, name, counted));
                                FrameDecoder frames = new FrameDecoder(maxFrame, pool);
                                if (listener.tls()) {
                                    // Kafka's SslFactory makes the engine (stores, protocols, client auth); Netty runs it
                                    ch.pipeline().addLast("tls", new SslHandler(listener.newEngine(
                                            ch.remoteAddress().getHostString(), ch.remoteAddress().getPort())));
                                    // fetched records are read from their files a chunk at a time as the socket drains
                                    ch.pipeline().addLast("chunks", new ChunkedWriteHandler());
                                }
                                ch.pipeline()
                                        .addLast("frames", frames)
                                        .addLast("requests", new ConnectionHandler(dispatcher, requestThreads, listener,
                                                pool, frames));
                            }
                        });
                Channel channel = bootstrap.bind(endpoint.host(), endpoint.port()).sync().channel();
                serverChannels.add(channel);
                boundAddresses.add((InetSocketAddress) channel.localAddress());
                LOG.info("listening on {} ({}, {}, {})", channel.localAddress(), endpoint.listenerName(), listener.protocol(),
                        epoll ? "epoll" : "nio");
            }
        } catch (InterruptedException | RuntimeException e) {
            close();
            throw e;
        }
    }

    /** The addresses actually bound (port 0 in the config picks a free port). */
    public List<InetSocketAddress> boundAddresses() {
        return boundAddresses;
    }

    /** Stops accepting connections; open connections stay until {@link #close()}. */
    public void stopAccepting() {
        for (Channel c : serverChannels) {
            c.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }

    @Override
    public void close() {
        stopAccepting();
        acceptors.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        workers.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }

    /** How idle the network threads are. */
    public dev.varve.broker.metrics.ThreadsIdle networkIdle() {
        return networkIdle;
    }
}
