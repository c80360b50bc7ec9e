package dev.varve.broker.cluster;

import org.apache.kafka.common.network.ChannelBuilder;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.network.PlaintextChannelBuilder;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.utils.internals.LogContext;

import java.util.Map;

/**
 * How this broker's connections to other brokers are made (replica fetches, transaction markers,
 * AddPartitionsToTxn verification): a Kafka {@link ChannelBuilder} for the inter-broker listener's
 * protocol, configured with that listener's settings. Each connection gets its own and closes it.
 */
@FunctionalInterface
public interface InterBrokerTransport {
    /** Plaintext connections (the inter-broker listener is PLAINTEXT). */
    InterBrokerTransport PLAINTEXT = logContext -> {
        PlaintextChannelBuilder channels = new PlaintextChannelBuilder(ListenerName.forSecurityProtocol(SecurityProtocol.PLAINTEXT));
        channels.configure(Map.of());
        return channels;
    };

    ChannelBuilder channelBuilder(LogContext logContext);
}
