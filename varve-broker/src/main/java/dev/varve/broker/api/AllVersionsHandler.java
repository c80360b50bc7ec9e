package dev.varve.broker.api;

import org.apache.kafka.common.protocol.ApiKeys;

/** A handler whose version range is the whole range kafka-clients knows for its API. */
abstract class AllVersionsHandler implements ApiHandler {
    private final ApiKeys key;

    AllVersionsHandler(ApiKeys key) {
        this.key = key;
    }

    @Override
    public final ApiKeys apiKey() {
        return key;
    }

    @Override
    public final short minVersion() {
        return key.oldestVersion();
    }

    @Override
    public final short maxVersion() {
        return key.latestVersion();
    }

    /** The client's address as Kafka reports it in group descriptions ("/127.0.0.1"). */
    static String clientHost(org.apache.kafka.common.requests.RequestContext context) {
        return context.clientAddress == null ? "" : context.clientAddress.toString();
    }
}
