package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.ClientQuota;
import org.apache.kafka.common.message.AlterClientQuotasRequestData;
import org.apache.kafka.common.message.AlterClientQuotasResponseData;
import org.apache.kafka.common.message.DescribeClientQuotasRequestData;
import org.apache.kafka.common.message.DescribeClientQuotasResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The cluster's client quotas (KIP-546), as the metadata holds them: per entity (user, client-id, or
 * both, each named or the default), quota values by key. Immutable; {@link #apply} returns a changed
 * copy. {@link #alter} decides AlterClientQuotas with the rules of Kafka's controller,
 * {@link #describe} answers DescribeClientQuotas, and {@link #resolve} finds the quota a client is held
 * to, with the precedence of Kafka's default quota callback.
 *
 * <p>IP entities ({@code connection_creation_rate}) and {@code controller_mutation_rate} are refused
 * with INVALID_REQUEST: the broker does not enforce them yet, and a quota it accepted would have to work.
 */
public final class ClientQuotas {
    public static final String USER = "user";
    public static final String CLIENT_ID = "client-id";
    public static final String IP = "ip";
    public static final String PRODUCER_BYTE_RATE = "producer_byte_rate";
    public static final String CONSUMER_BYTE_RATE = "consumer_byte_rate";
    public static final String REQUEST_PERCENTAGE = "request_percentage";
    /** The keys enforced, and whether each is a whole number (Kafka's LONG) or not (DOUBLE). */
    private static final Map<String, Boolean> KEYS = Map.of(PRODUCER_BYTE_RATE, true, CONSUMER_BYTE_RATE, true,
            REQUEST_PERCENTAGE, false);

    private static final Object ABSENT = new Object();

    public static final ClientQuotas EMPTY = new ClientQuotas(Collections.emptyMap());

    /** Entity (type to name, null for the default) to key to value. */
    private final Map<SortedMap<String, String>, Map<String, Double>> quotas;

    private ClientQuotas(Map<SortedMap<String, String>, Map<String, Double>> quotas) {
        this.quotas = quotas;
    }

    public boolean isEmpty() {
        return quotas.isEmpty();
    }

    /** The quotas of an entity (empty when it has none). */
    public Map<String, Double> of(SortedMap<String, String> entity) {
        return quotas.getOrDefault(entity, Map.of());
    }

    /** With a quota record applied; other records leave it as it is. */
    public ClientQuotas apply(MetadataRecord record) {
        if (!(record instanceof ClientQuota q)) {
            return this;
        }
        Map<SortedMap<String, String>, Map<String, Double>> next = new HashMap<>(quotas);
        Map<String, Double> values = new TreeMap<>(next.getOrDefault(q.entity(), Map.of()));
        if (q.remove()) {
            values.remove(q.key());
        } else {
            values.put(q.key(), q.value());
        }
        if (values.isEmpty()) {
            next.remove(q.entity());
        } else {
            next.put(q.entity(), Collections.unmodifiableMap(values));
        }
        return new ClientQuotas(Collections.unmodifiableMap(next));
    }

    /** The records that rebuild these quotas from {@link #EMPTY}. */
    public List<MetadataRecord> toRecords() {
        List<MetadataRecord> out = new ArrayList<>();
        quotas.forEach((entity, values) -> values.forEach((key, value) -> out.add(new ClientQuota(entity, key, value, false))));
        return out;
    }

    /** Decides AlterClientQuotas: per entry, in order, its error; the records change only valid entities. */
    public ControllerResult<AlterClientQuotasResponseData> alter(AlterClientQuotasRequestData request) {
        List<MetadataRecord> records = new ArrayList<>();
        AlterClientQuotasResponseData response = new AlterClientQuotasResponseData();
        Set<SortedMap<String, String>> seen = new HashSet<>();
        for (AlterClientQuotasRequestData.EntryData entry : request.entries()) {
            SortedMap<String, String> entity = new TreeMap<>();
            ApiError error = entity(entry.entity(), entity);
            if (error == null && !seen.add(entity)) {
                error = new ApiError(Errors.INVALID_REQUEST, "Ignoring duplicate entity " + entity);
            }
            List<MetadataRecord> changes = new ArrayList<>();
            Set<String> keys = new HashSet<>();
            for (AlterClientQuotasRequestData.OpData op : entry.ops()) {
                if (error != null) {
                    break;
                }
                if (!keys.add(op.key())) {
                    error = new ApiError(Errors.INVALID_REQUEST, "Duplicate quota key " + op.key()
                            + " not updating quota for this entity " + entity);
                } else if ((error = value(op.key(), op.value(), op.remove())) == null) {
                    Double current = of(entity).get(op.key());
                    if (op.remove() && current != null) {
                        changes.add(new ClientQuota(entity, op.key(), 0, true));
                    } else if (!op.remove() && !Objects.equals(current, op.value())) {
                        changes.add(new ClientQuota(entity, op.key(), op.value(), false));
                    }
                }
            }
            if (error == null) {
                records.addAll(changes);
            } else {
                changes.clear();
            }
            ApiError result = error == null ? ApiError.NONE : error;
            AlterClientQuotasResponseData.EntryData out = new AlterClientQuotasResponseData.EntryData()
                    .setErrorCode(result.error().code()).setErrorMessage(result.isSuccess() ? null : result.messageWithFallback());
            entry.entity().forEach(e -> out.entity().add(new AlterClientQuotasResponseData.EntityData()
                    .setEntityType(e.entityType()).setEntityName(e.entityName())));
            response.entries().add(out);
        }
        return new ControllerResult<>(request.validateOnly() ? List.of() : records, response);
    }

    /** Fills {@code out} from the request's entity; null when valid, else why not. */
    private static ApiError entity(List<AlterClientQuotasRequestData.EntityData> data, SortedMap<String, String> out) {
        if (data.isEmpty()) {
            return new ApiError(Errors.INVALID_REQUEST, "Invalid empty client quota entity");
        }
        for (AlterClientQuotasRequestData.EntityData e : data) {
            String type = e.entityType();
            if (out.containsKey(type)) {
                return new ApiError(Errors.INVALID_REQUEST, "Invalid client quota entity, duplicate entity entry " + type);
            }
            if (IP.equals(type)) {
                return new ApiError(Errors.INVALID_REQUEST, "IP quotas (connection_creation_rate) are not supported by Varve yet");
            }
            if (!USER.equals(type) && !CLIENT_ID.equals(type)) {
                return new ApiError(Errors.INVALID_REQUEST, "Unhandled client quota entity type: " + type);
            }
            if (e.entityName() != null && e.entityName().isEmpty()) {
                return new ApiError(Errors.INVALID_REQUEST, "Empty " + type + " not supported");
            }
            out.put(type, e.entityName());
        }
        return null;
    }

    /** Null when {@code key} may be set to {@code value} (or removed), else why not. */
    private static ApiError value(String key, double value, boolean remove) {
        Boolean whole = KEYS.get(key);
        if (whole == null) {
            return new ApiError(Errors.INVALID_REQUEST, "controller_mutation_rate".equals(key)
                    ? "controller_mutation_rate is not supported by Varve yet" : "Invalid configuration key " + key);
        }
        if (remove) {
            return null;
        }
        if (whole && Math.abs((long) (value + 1e-6) - value) > 1e-6) {
            return new ApiError(Errors.INVALID_REQUEST, "Configuration " + key + " must be a Long value");
        }
        if (Double.isNaN(value) || value <= 0) {
            return new ApiError(Errors.INVALID_REQUEST, "Configuration " + key + " must be a positive value (remove it for no quota)");
        }
        return null;
    }

    /** Answers DescribeClientQuotas: the entities the filter matches, with their quotas. */
    public DescribeClientQuotasResponseData describe(DescribeClientQuotasRequestData request) {
        DescribeClientQuotasResponseData response = new DescribeClientQuotasResponseData();
        Set<String> types = new HashSet<>();
        for (DescribeClientQuotasRequestData.ComponentData c : request.components()) {
            if (!types.add(c.entityType())) {
                return response.setErrorCode(Errors.INVALID_REQUEST.code())
                        .setErrorMessage("Duplicate entity type in filter: " + c.entityType()).setEntries(null);
            }
            if (c.matchType() < 0 || c.matchType() > 2) {
                return response.setErrorCode(Errors.INVALID_REQUEST.code())
                        .setErrorMessage("Unknown match type " + c.matchType()).setEntries(null);
            }
        }
        List<DescribeClientQuotasResponseData.EntryData> entries = new ArrayList<>();
        quotas.forEach((entity, values) -> {
            if (request.strict() && !entity.keySet().equals(types)) {
                return;
            }
            for (DescribeClientQuotasRequestData.ComponentData c : request.components()) {
                if (!entity.containsKey(c.entityType())) {
                    return;
                }
                String name = entity.get(c.entityType());
                boolean matches = switch (c.matchType()) {
                    case 0 -> name != null && name.equals(c.match()); // EXACT
                    case 1 -> name == null;                           // DEFAULT
                    default -> name != null;                          // SPECIFIED
                };
                if (!matches) {
                    return;
                }
            }
            DescribeClientQuotasResponseData.EntryData entry = new DescribeClientQuotasResponseData.EntryData();
            entity.forEach((type, name) -> entry.entity().add(new DescribeClientQuotasResponseData.EntityData()
                    .setEntityType(type).setEntityName(name)));
            values.forEach((key, value) -> entry.values().add(new DescribeClientQuotasResponseData.ValueData()
                    .setKey(key).setValue(value)));
            entries.add(entry);
        });
        return response.setEntries(entries);
    }

    /**
     * The quota of {@code key} a client is held to, and the entity whose usage counts against it, with
     * Kafka's precedence: user and client-id, user and default client-id, user, default user and
     * client-id, default user and default client-id, default user, client-id, default client-id. A user
     * quota is shared by all of the user's clients; a default quota still counts each user (or client-id)
     * apart. Null when none applies.
     */
    public Resolved resolve(String user, String clientId, String key) {
        if (quotas.isEmpty()) {
            return null;
        }
        Object absent = ABSENT;
        Object[][] order = {
            {user, clientId}, {user, null}, {user, absent}, {null, clientId}, {null, null}, {null, absent},
            {absent, clientId}, {absent, null},
        };
        for (Object[] level : order) {
            SortedMap<String, String> entity = new TreeMap<>();
            if (level[0] != absent) {
                entity.put(USER, (String) level[0]);
            }
            if (level[1] != absent) {
                entity.put(CLIENT_ID, (String) level[1]);
            }
            Double value = of(entity).get(key);
            if (value != null) {
                // usage is counted per user unless the quota is client-id only; per client-id unless user only
                return new Resolved(level[0] == absent ? "" : user, level[1] == absent ? "" : clientId, value);
            }
        }
        return null;
    }

    /** A quota in force: the user and client-id whose usage counts against it ("" for any), and its value. */
    public record Resolved(String user, String clientId, double quota) {
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ClientQuotas q && quotas.equals(q.quotas);
    }

    @Override
    public int hashCode() {
        return quotas.hashCode();
    }

    @Override
    public String toString() {
        return "ClientQuotas" + quotas;
    }
}
