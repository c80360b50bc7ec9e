package dev.varve.metadata;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.message.CreateAclsRequestData;
import org.apache.kafka.common.message.CreateAclsResponseData;
import org.apache.kafka.common.message.DeleteAclsRequestData;
import org.apache.kafka.common.message.DeleteAclsResponseData;
import org.apache.kafka.common.message.DescribeAclsRequestData;
import org.apache.kafka.common.message.DescribeAclsResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.requests.CreateAclsRequest;
import org.apache.kafka.common.requests.DeleteAclsResponse;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * CreateAcls, DeleteAcls and DescribeAcls decided over an {@link Acls}: the records a change makes and
 * the answer in Kafka's message, for the controller of a cluster and for a single node alike.
 */
public final class AclRequests {
    private AclRequests() {
    }

    /** CreateAcls: one result per creation, in order; an invalid binding is INVALID_REQUEST, a present one is kept once. */
    public static ControllerResult<CreateAclsResponseData> create(Acls acls, CreateAclsRequestData req, Supplier<Uuid> ids) {
        List<AclBinding> bindings = new ArrayList<>();
        List<ApiError> unparsable = new ArrayList<>();
        for (CreateAclsRequestData.AclCreation c : req.creations()) {
            try {
                bindings.add(CreateAclsRequest.aclBinding(c));
                unparsable.add(null);
            } catch (RuntimeException e) {
                bindings.add(null);
                unparsable.add(new ApiError(Errors.INVALID_REQUEST, "Invalid ACL creation: " + e.getMessage()));
            }
        }
        List<AclBinding> valid = bindings.stream().filter(Objects::nonNull).toList();
        ControllerResult<List<InvalidRequestException>> decided = acls.create(valid, ids);
        CreateAclsResponseData response = new CreateAclsResponseData();
        int v = 0;
        for (int i = 0; i < bindings.size(); i++) {
            ApiError error = unparsable.get(i);
            if (error == null) {
                InvalidRequestException refused = decided.response().get(v++);
                error = refused == null ? ApiError.NONE : ApiError.fromThrowable(refused);
            }
            response.results().add(new CreateAclsResponseData.AclCreationResult()
                    .setErrorCode(error.error().code()).setErrorMessage(error.isSuccess() ? null : error.messageWithFallback()));
        }
        return new ControllerResult<>(decided.records(), response);
    }

    /** DeleteAcls: per filter, the ACLs it removed (a filter with an unknown element is INVALID_REQUEST). */
    public static ControllerResult<DeleteAclsResponseData> delete(Acls acls, DeleteAclsRequestData req) {
        List<AclBindingFilter> filters = new ArrayList<>();
        for (DeleteAclsRequestData.DeleteAclsFilter f : req.filters()) {
            filters.add(filter(f.resourceTypeFilter(), f.resourceNameFilter(), f.patternTypeFilter(), f.principalFilter(),
                    f.hostFilter(), f.operation(), f.permissionType()));
        }
        ControllerResult<List<List<AclBinding>>> decided = acls.delete(filters);
        DeleteAclsResponseData response = new DeleteAclsResponseData();
        for (int i = 0; i < filters.size(); i++) {
            DeleteAclsResponseData.DeleteAclsFilterResult result = new DeleteAclsResponseData.DeleteAclsFilterResult();
            if (filters.get(i).isUnknown()) {
                result.setErrorCode(Errors.INVALID_REQUEST.code()).setErrorMessage("The filter has an unknown element");
            } else {
                for (AclBinding b : decided.response().get(i)) {
                    result.matchingAcls().add(DeleteAclsResponse.matchingAcl(b, ApiError.NONE));
                }
            }
            response.filterResults().add(result);
        }
        return new ControllerResult<>(decided.records(), response);
    }

    /** DescribeAcls: the ACLs the filter matches, grouped by resource pattern. */
    public static DescribeAclsResponseData describe(Acls acls, DescribeAclsRequestData req) {
        AclBindingFilter filter = filter(req.resourceTypeFilter(), req.resourceNameFilter(), req.patternTypeFilter(),
                req.principalFilter(), req.hostFilter(), req.operation(), req.permissionType());
        DescribeAclsResponseData response = new DescribeAclsResponseData();
        if (filter.isUnknown()) {
            return response.setErrorCode(Errors.INVALID_REQUEST.code()).setErrorMessage("The filter has an unknown element");
        }
        for (Map.Entry<ResourcePattern, List<AccessControlEntry>> e : Acls.byPattern(acls.matching(filter)).entrySet()) {
            DescribeAclsResponseData.DescribeAclsResource resource = new DescribeAclsResponseData.DescribeAclsResource()
                    .setResourceType(e.getKey().resourceType().code()).setResourceName(e.getKey().name())
                    .setPatternType(e.getKey().patternType().code());
            for (AccessControlEntry ace : e.getValue()) {
                resource.acls().add(new DescribeAclsResponseData.AclDescription().setPrincipal(ace.principal())
                        .setHost(ace.host()).setOperation(ace.operation().code()).setPermissionType(ace.permissionType().code()));
            }
            response.resources().add(resource);
        }
        return response;
    }

    /** An ACL filter from the wire's codes. */
    public static AclBindingFilter filter(byte resourceType, String name, byte patternType, String principal, String host,
                                          byte operation, byte permission) {
        return new AclBindingFilter(
                new ResourcePatternFilter(ResourceType.fromCode(resourceType), name, PatternType.fromCode(patternType)),
                new AccessControlEntryFilter(principal, host, AclOperation.fromCode(operation),
                        AclPermissionType.fromCode(permission)));
    }
}
