package dev.varve.broker.api;

import dev.varve.broker.security.LocalAclStore;
import dev.varve.metadata.AclRequests;
import dev.varve.metadata.Acls;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.CreateAclsRequest;
import org.apache.kafka.common.requests.CreateAclsResponse;
import org.apache.kafka.common.requests.DeleteAclsRequest;
import org.apache.kafka.common.requests.DeleteAclsResponse;
import org.apache.kafka.common.requests.DescribeAclsRequest;
import org.apache.kafka.common.requests.DescribeAclsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The ACL APIs with an authorizer configured. DescribeAcls is answered from the ACLs this broker knows
 * (the metadata image of a cluster, {@link LocalAclStore} on a single node); on a single node
 * CreateAcls and DeleteAcls are decided and written by the store, while a cluster broker forwards them
 * to the controller. Who may call them (DESCRIBE or ALTER on the cluster) is checked before, by
 * {@link AuthorizingHandler}.
 */
public final class AclsHandler extends AllVersionsHandler {
    private final Supplier<Acls> acls;
    private final LocalAclStore store;

    /** DescribeAcls over {@code acls}. */
    public static AclsHandler describe(Supplier<Acls> acls) {
        return new AclsHandler(ApiKeys.DESCRIBE_ACLS, acls, null);
    }

    /** CreateAcls or DeleteAcls into a single node's {@code store}. */
    public static AclsHandler change(ApiKeys key, LocalAclStore store) {
        if (key != ApiKeys.CREATE_ACLS && key != ApiKeys.DELETE_ACLS) {
            throw new IllegalArgumentException(key + " does not change ACLs");
        }
        return new AclsHandler(key, store::acls, store);
    }

    private AclsHandler(ApiKeys key, Supplier<Acls> acls, LocalAclStore store) {
        super(key);
        this.acls = acls;
        this.store = store;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        AbstractResponse response;
        if (request instanceof DescribeAclsRequest describe) {
            response = new DescribeAclsResponse(AclRequests.describe(acls.get(), describe.data()), describe.version());
        } else if (request instanceof CreateAclsRequest create) {
            response = new CreateAclsResponse(store.create(create.data()));
        } else {
            response = new DeleteAclsResponse(store.delete(((DeleteAclsRequest) request).data()), request.version());
        }
        return CompletableFuture.completedFuture(response);
    }
}
