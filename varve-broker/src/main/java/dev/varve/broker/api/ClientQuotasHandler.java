package dev.varve.broker.api;

import dev.varve.broker.security.LocalQuotaStore;
import dev.varve.metadata.ClientQuotas;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AlterClientQuotasRequest;
import org.apache.kafka.common.requests.AlterClientQuotasResponse;
import org.apache.kafka.common.requests.DescribeClientQuotasRequest;
import org.apache.kafka.common.requests.DescribeClientQuotasResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * DescribeClientQuotas (KIP-546), answered from the quotas this broker knows (the metadata image of a
 * cluster, {@link LocalQuotaStore} on a single node). On a single node also AlterClientQuotas, decided
 * and written by the store; a cluster broker forwards that one to the controller.
 */
public final class ClientQuotasHandler extends AllVersionsHandler {
    private final Supplier<ClientQuotas> quotas;
    private final LocalQuotaStore store;

    public static ClientQuotasHandler describe(Supplier<ClientQuotas> quotas) {
        return new ClientQuotasHandler(ApiKeys.DESCRIBE_CLIENT_QUOTAS, quotas, null);
    }

    public static ClientQuotasHandler alter(LocalQuotaStore store) {
        return new ClientQuotasHandler(ApiKeys.ALTER_CLIENT_QUOTAS, store::quotas, store);
    }

    private ClientQuotasHandler(ApiKeys key, Supplier<ClientQuotas> quotas, LocalQuotaStore store) {
        super(key);
        this.quotas = quotas;
        this.store = store;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        if (request instanceof DescribeClientQuotasRequest describe) {
            return CompletableFuture.completedFuture(new DescribeClientQuotasResponse(quotas.get().describe(describe.data())));
        }
        return CompletableFuture.completedFuture(new AlterClientQuotasResponse(
                store.alter(((AlterClientQuotasRequest) request).data())));
    }
}
