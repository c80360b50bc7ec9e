package dev.varve.broker.quota;

import dev.varve.broker.ManualTime;
import dev.varve.metadata.ClientQuotas;
import dev.varve.metadata.MetadataRecord;
import org.junit.jupiter.api.Test;

import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The rate a quota is judged on and the throttle it gives, on a manual clock: a client at its quota is
 * never throttled, a client above it is told to wait exactly long enough for its rate to fall back to the
 * quota, usage is counted per user or per client-id as the matching quota says.
 */
class ClientQuotaManagerTest {
    private static ClientQuotas quota(String user, String clientId, String key, double value) {
        TreeMap<String, String> entity = new TreeMap<>();
        if (user != null) {
            entity.put(ClientQuotas.USER, user.equals("*") ? null : user);
        }
        if (clientId != null) {
            entity.put(ClientQuotas.CLIENT_ID, clientId);
        }
        return ClientQuotas.EMPTY.apply(new MetadataRecord.ClientQuota(entity, key, value, false));
    }

    @Test
    void aClientWithinItsQuotaIsNeverThrottledAndOneAboveWaitsUntilItsRateIsTheQuota() {
        ManualTime time = new ManualTime(1_000_000);
        ClientQuotaManager m = new ClientQuotaManager(() -> quota("alice", null, ClientQuotas.PRODUCER_BYTE_RATE, 1000),
                time, 11, 1000);
        // 900 bytes per second for a minute, under the quota (Kafka's rate counts the sample just begun whole:
        // 11 samples of 900 over 10 s read 990/s)
        for (int s = 0; s < 60; s++) {
            assertThat(m.record(ClientQuotaManager.Type.PRODUCE, "alice", "app", 900)).as("second %d", s).isZero();
            time.sleep(1000);
        }
        // a burst of 20,000 bytes: the 10 s the live samples cover hold 9,000 + 20,000, a rate of 2,900/s,
        // so the client must wait (2900 - 1000) / 1000 * 10 s = 19 s for it to fall to 1,000/s
        assertThat(m.record(ClientQuotaManager.Type.PRODUCE, "alice", "app", 20_000)).isEqualTo(19_000);
        // bob has no quota at all
        assertThat(m.record(ClientQuotaManager.Type.PRODUCE, "bob", "app", 1_000_000)).isZero();
        // consumer bytes are another quota
        assertThat(m.record(ClientQuotaManager.Type.FETCH, "alice", "app", 1_000_000)).isZero();
    }

    @Test
    void aFirstBurstIsJudgedOverTheWholeWindowNotItsFirstMilliseconds() {
        ManualTime time = new ManualTime(0);
        ClientQuotaManager m = new ClientQuotaManager(() -> quota(null, "app", ClientQuotas.CONSUMER_BYTE_RATE, 1000), time, 11, 1000);
        assertThat(m.record(ClientQuotaManager.Type.FETCH, "anyone", "app", 10_000)).as("10,000 over 10 s is the quota").isZero();
        assertThat(m.record(ClientQuotaManager.Type.FETCH, "anyone", "app", 10_000)).isEqualTo(10_000);
        assertThat(m.maxFetchBytes("anyone", "app")).isEqualTo(10_000);
        assertThat(m.maxFetchBytes("anyone", "other")).isEqualTo(Integer.MAX_VALUE);
    }

    @Test
    void aUserQuotaIsSharedByTheUsersClientsAndADefaultQuotaCountsEachUserApart() {
        ManualTime time = new ManualTime(0);
        ClientQuotas both = quota("alice", null, ClientQuotas.PRODUCER_BYTE_RATE, 1000)
                .apply(new MetadataRecord.ClientQuota(new TreeMap<>(java.util.Collections.singletonMap(ClientQuotas.USER, null)),
                        ClientQuotas.PRODUCER_BYTE_RATE, 1000, false));
        ClientQuotaManager m = new ClientQuotaManager(() -> both, time, 11, 1000);
        assertThat(m.record(ClientQuotaManager.Type.PRODUCE, "alice", "one", 10_000)).isZero();
        assertThat(m.record(ClientQuotaManager.Type.PRODUCE, "alice", "two", 10_000)).as("alice's second client shares her quota")
                .isPositive();
        assertThat(m.record(ClientQuotaManager.Type.PRODUCE, "bob", "one", 10_000)).as("bob has his own, from the default").isZero();
        assertThat(m.tracked()).isEqualTo(2);
    }

    @Test
    void requestTimeIsBoundedToOneWindowOfThrottle() {
        ManualTime time = new ManualTime(0);
        ClientQuotaManager m = new ClientQuotaManager(() -> quota("alice", null, ClientQuotas.REQUEST_PERCENTAGE, 1), time, 11, 1000);
        // 100 percent-seconds (a whole thread for a second) against a 1% quota
        assertThat(m.record(ClientQuotaManager.Type.REQUEST, "alice", "app", 100)).isEqualTo(1000);
    }
}
