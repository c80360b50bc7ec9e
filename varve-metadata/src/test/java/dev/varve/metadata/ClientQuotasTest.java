package dev.varve.metadata;

import org.apache.kafka.common.message.AlterClientQuotasRequestData;
import org.apache.kafka.common.message.AlterClientQuotasRequestData.EntityData;
import org.apache.kafka.common.message.AlterClientQuotasRequestData.EntryData;
import org.apache.kafka.common.message.AlterClientQuotasRequestData.OpData;
import org.apache.kafka.common.message.DescribeClientQuotasRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Client quotas as the controller decides, describes and the broker resolves them (Kafka's rules). */
class ClientQuotasTest {
    private static EntryData entry(String[][] entity, OpData... ops) {
        List<EntityData> parts = new ArrayList<>();
        for (String[] e : entity) {
            parts.add(new EntityData().setEntityType(e[0]).setEntityName(e[1]));
        }
        return new EntryData().setEntity(parts).setOps(List.of(ops));
    }

    private static OpData set(String key, double value) {
        return new OpData().setKey(key).setValue(value);
    }

    private static ClientQuotas applied(ClientQuotas q, ControllerResult<?> r) {
        for (MetadataRecord record : r.records()) {
            q = q.apply(record);
        }
        return q;
    }

    private static ClientQuotas alter(ClientQuotas q, List<Errors> expected, EntryData... entries) {
        ControllerResult<org.apache.kafka.common.message.AlterClientQuotasResponseData> r =
                q.alter(new AlterClientQuotasRequestData().setEntries(List.of(entries)));
        assertThat(r.response().entries()).extracting(e -> Errors.forCode(e.errorCode())).containsExactlyElementsOf(expected);
        return applied(q, r);
    }

    @Test
    void alterationsFollowKafkasControllerRules() {
        ClientQuotas q = alter(ClientQuotas.EMPTY, List.of(Errors.NONE, Errors.NONE, Errors.INVALID_REQUEST, Errors.INVALID_REQUEST,
                        Errors.INVALID_REQUEST, Errors.INVALID_REQUEST, Errors.INVALID_REQUEST, Errors.INVALID_REQUEST),
                entry(new String[][]{{"user", "alice"}}, set("producer_byte_rate", 1024), set("request_percentage", 12.5)),
                entry(new String[][]{{"user", null}, {"client-id", "app"}}, set("consumer_byte_rate", 2048)),
                entry(new String[][]{{"user", "bob"}}, set("producer_byte_rate", 10.5)),        // not a whole number
                entry(new String[][]{{"user", "bob"}}, set("no_such_quota", 1)),
                entry(new String[][]{{"user", ""}}, set("producer_byte_rate", 1)),              // empty name
                entry(new String[][]{{"group", "g"}}, set("producer_byte_rate", 1)),            // unknown type
                entry(new String[][]{{"user", "carol"}}, set("producer_byte_rate", 1), set("producer_byte_rate", 2)),
                entry(new String[][]{{"user", "dave"}}, set("producer_byte_rate", -5)));
        assertThat(q.of(new java.util.TreeMap<>(java.util.Map.of("user", "alice"))))
                .containsEntry("producer_byte_rate", 1024.0).containsEntry("request_percentage", 12.5);
        assertThat(q.of(new java.util.TreeMap<>(java.util.Map.of("user", "bob")))).isEmpty();
        // a removal, and validate-only changes nothing
        ClientQuotas removed = alter(q, List.of(Errors.NONE),
                entry(new String[][]{{"user", "alice"}}, new OpData().setKey("request_percentage").setRemove(true)));
        assertThat(removed.of(new java.util.TreeMap<>(java.util.Map.of("user", "alice")))).containsOnlyKeys("producer_byte_rate");
        var validateOnly = q.alter(new AlterClientQuotasRequestData().setValidateOnly(true).setEntries(List.of(
                entry(new String[][]{{"user", "eve"}}, set("producer_byte_rate", 1)))));
        assertThat(validateOnly.records()).isEmpty();
        assertThat(MetadataImage.fromSnapshot(0, MetadataImage.EMPTY.apply(0, q.toRecords()).toRecords()).quotas()).isEqualTo(q);
    }

    @Test
    void quotasKafkaCannotBeEnforcedHereAreRefused() {
        alter(ClientQuotas.EMPTY, List.of(Errors.INVALID_REQUEST, Errors.INVALID_REQUEST),
                entry(new String[][]{{"ip", "10.0.0.1"}}, set("connection_creation_rate", 5)),
                entry(new String[][]{{"user", "alice"}}, set("controller_mutation_rate", 5)));
    }

    @Test
    void describeMatchesExactDefaultAndSpecifiedComponents() {
        ClientQuotas q = alter(ClientQuotas.EMPTY, List.of(Errors.NONE, Errors.NONE, Errors.NONE),
                entry(new String[][]{{"user", "alice"}}, set("producer_byte_rate", 1)),
                entry(new String[][]{{"user", null}}, set("producer_byte_rate", 2)),
                entry(new String[][]{{"user", "alice"}, {"client-id", "app"}}, set("producer_byte_rate", 3)));
        assertThat(describe(q, false, component("user", 0, "alice"))).isEqualTo(2);
        assertThat(describe(q, true, component("user", 0, "alice"))).isEqualTo(1);
        assertThat(describe(q, false, component("user", 1, null))).isEqualTo(1);
        assertThat(describe(q, false, component("user", 2, null))).isEqualTo(2);
        assertThat(describe(q, false, component("client-id", 2, null))).isEqualTo(1);
        assertThat(describe(q, false)).isEqualTo(3);
    }

    private static DescribeClientQuotasRequestData.ComponentData component(String type, int match, String name) {
        return new DescribeClientQuotasRequestData.ComponentData().setEntityType(type).setMatchType((byte) match).setMatch(name);
    }

    private static int describe(ClientQuotas q, boolean strict, DescribeClientQuotasRequestData.ComponentData... components) {
        var r = q.describe(new DescribeClientQuotasRequestData().setStrict(strict).setComponents(List.of(components)));
        assertThat(r.errorCode()).isZero();
        return r.entries().size();
    }

    @Test
    void resolutionFollowsKafkasPrecedence() {
        ClientQuotas q = ClientQuotas.EMPTY;
        assertThat(q.resolve("alice", "app", "producer_byte_rate")).isNull();
        q = alter(q, List.of(Errors.NONE), entry(new String[][]{{"client-id", null}}, set("producer_byte_rate", 8)));
        assertThat(q.resolve("alice", "app", "producer_byte_rate")).isEqualTo(new ClientQuotas.Resolved("", "app", 8));
        q = alter(q, List.of(Errors.NONE), entry(new String[][]{{"user", null}}, set("producer_byte_rate", 7)));
        assertThat(q.resolve("alice", "app", "producer_byte_rate")).isEqualTo(new ClientQuotas.Resolved("alice", "", 7));
        q = alter(q, List.of(Errors.NONE), entry(new String[][]{{"user", "alice"}}, set("producer_byte_rate", 3)));
        assertThat(q.resolve("alice", "app", "producer_byte_rate")).isEqualTo(new ClientQuotas.Resolved("alice", "", 3));
        assertThat(q.resolve("bob", "app", "producer_byte_rate")).isEqualTo(new ClientQuotas.Resolved("bob", "", 7));
        q = alter(q, List.of(Errors.NONE), entry(new String[][]{{"user", "alice"}, {"client-id", "app"}}, set("producer_byte_rate", 1)));
        assertThat(q.resolve("alice", "app", "producer_byte_rate")).isEqualTo(new ClientQuotas.Resolved("alice", "app", 1));
        assertThat(q.resolve("alice", "other", "producer_byte_rate")).isEqualTo(new ClientQuotas.Resolved("alice", "", 3));
        assertThat(q.resolve("alice", "app", "consumer_byte_rate")).isNull();
    }
}
