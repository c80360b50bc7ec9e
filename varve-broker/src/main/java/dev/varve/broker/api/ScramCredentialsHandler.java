package dev.varve.broker.api;

import dev.varve.broker.security.LocalScramStore;
import dev.varve.metadata.ScramCredentials;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AlterUserScramCredentialsRequest;
import org.apache.kafka.common.requests.AlterUserScramCredentialsResponse;
import org.apache.kafka.common.requests.DescribeUserScramCredentialsRequest;
import org.apache.kafka.common.requests.DescribeUserScramCredentialsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * DescribeUserScramCredentials (KIP-554), answered from the credentials this broker knows (the
 * metadata image in a cluster, {@link LocalScramStore} on a single node): mechanisms and iteration
 * counts, never keys. On a single node also AlterUserScramCredentials, decided and written by the
 * store; a cluster broker forwards that one to the controller.
 */
public final class ScramCredentialsHandler extends AllVersionsHandler {
    private final Supplier<ScramCredentials> credentials;
    private final LocalScramStore store;

    /** DescribeUserScramCredentials from {@code credentials}. */
    public static ScramCredentialsHandler describe(Supplier<ScramCredentials> credentials) {
        return new ScramCredentialsHandler(ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, credentials, null);
    }

    /** AlterUserScramCredentials into a single node's {@code store}. */
    public static ScramCredentialsHandler alter(LocalScramStore store) {
        return new ScramCredentialsHandler(ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, store::credentials, store);
    }

    private ScramCredentialsHandler(ApiKeys key, Supplier<ScramCredentials> credentials, LocalScramStore store) {
        super(key);
        this.credentials = credentials;
        this.store = store;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        if (request instanceof DescribeUserScramCredentialsRequest describe) {
            return CompletableFuture.completedFuture(
                    new DescribeUserScramCredentialsResponse(credentials.get().describe(describe.data())));
        }
        AlterUserScramCredentialsRequest alter = (AlterUserScramCredentialsRequest) request;
        return CompletableFuture.completedFuture(new AlterUserScramCredentialsResponse(store.alter(alter.data())));
    }
}
