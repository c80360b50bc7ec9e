package dev.varve.broker.api;

import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * DescribeAcls, CreateAcls and DeleteAcls on a broker without an authorizer: Kafka answers them with
 * SECURITY_DISABLED ("No Authorizer is configured."), which the Admin client and kafka-acls.sh turn
 * into {@link SecurityDisabledException}; so does Varve.
 */
public final class AclsDisabledHandler extends AllVersionsHandler {
    /** The APIs this answers. */
    public static final List<ApiKeys> KEYS = List.of(ApiKeys.DESCRIBE_ACLS, ApiKeys.CREATE_ACLS, ApiKeys.DELETE_ACLS);

    public AclsDisabledHandler(ApiKeys key) {
        super(key);
        if (!KEYS.contains(key)) {
            throw new IllegalArgumentException(key + " is not an ACL API");
        }
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        return CompletableFuture.completedFuture(request.getErrorResponse(0, new SecurityDisabledException("No Authorizer is configured.")));
    }
}
