package dev.varve.broker.cluster;

import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.MetadataRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Who may fetch as follower 2 (registered at 10.9.0.2 with broker epoch 7): the CVE-2018-1288 class. */
class FollowerIdentityTest {
    private final MetadataImage image = MetadataImage.EMPTY.apply(7, List.of(new MetadataRecord.RegisterBroker(2,
            Uuid.randomUuid(), 7, List.of(new MetadataRecord.Endpoint("PLAINTEXT", "10.9.0.2", 9092)), null, false)));

    @Test
    void theFollowerItselfIsTaken() throws Exception {
        FollowerIdentity identity = new FollowerIdentity(true);
        assertThat(identity.check(image, 2, 7, InetAddress.getByName("10.9.0.2"), 0)).isEqualTo(Errors.NONE);
        assertThat(identity.check(image, 2, -1, InetAddress.getByName("10.9.0.2"), 0))
                .as("a version without a broker epoch").isEqualTo(Errors.NONE);
    }

    @Test
    void aClientOnAnotherAddressIsRefused() throws Exception {
        FollowerIdentity identity = new FollowerIdentity(true);
        assertThat(identity.check(image, 2, 7, InetAddress.getByName("10.9.0.254"), 0))
                .isEqualTo(Errors.CLUSTER_AUTHORIZATION_FAILED);
        assertThat(identity.check(image, 2, -1, InetAddress.getByName("127.0.0.1"), 0))
                .isEqualTo(Errors.CLUSTER_AUTHORIZATION_FAILED);
    }

    @Test
    void aWrongBrokerEpochOrAnUnknownBrokerIsRefused() throws Exception {
        FollowerIdentity identity = new FollowerIdentity(true);
        InetAddress follower = InetAddress.getByName("10.9.0.2");
        assertThat(identity.check(image, 2, 6, follower, 0)).as("an older process").isEqualTo(Errors.STALE_BROKER_EPOCH);
        assertThat(identity.check(image, 2, 8, follower, 0)).as("a guess").isEqualTo(Errors.STALE_BROKER_EPOCH);
        assertThat(identity.check(image, 3, -1, follower, 0)).isEqualTo(Errors.CLUSTER_AUTHORIZATION_FAILED);
    }

    @Test
    void theSourceCheckCanBeTurnedOffForNat() throws Exception {
        FollowerIdentity identity = new FollowerIdentity(false);
        assertThat(identity.check(image, 2, 7, InetAddress.getByName("192.168.1.5"), 0)).isEqualTo(Errors.NONE);
        assertThat(identity.check(image, 2, 6, InetAddress.getByName("192.168.1.5"), 0))
                .as("the epoch is still checked").isEqualTo(Errors.STALE_BROKER_EPOCH);
    }
}
