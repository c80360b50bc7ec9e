package dev.varve.metadata.quorum;

import dev.varve.metadata.MetadataRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The announcement's wire form: round trip, and every malformed form refused before anything is allocated. */
class ControllerAnnouncementTest {
    private static final MetadataRecord.ControllerRegistration FOUR = new MetadataRecord.ControllerRegistration(4,
            new Uuid(7, 8), new MetadataRecord.Endpoint("CONTROLLER", "controller4.example.com", 9093));

    @Test
    void roundTrips() {
        byte[] bytes = ControllerAnnouncement.request(FOUR);
        assertThat(ControllerAnnouncement.isAnnouncement(bytes)).isTrue();
        assertThat(MetadataFetch.isFetch(bytes)).isFalse();
        assertThat(ControllerAnnouncement.parse(bytes)).isEqualTo(FOUR);
    }

    @Test
    void malformedAnnouncementsAreInvalidRequests() {
        byte[] bytes = ControllerAnnouncement.request(FOUR);
        for (int length = 0; length < bytes.length; length++) {
            byte[] cut = Arrays.copyOf(bytes, length);
            assertThatThrownBy(() -> ControllerAnnouncement.parse(cut)).as("cut to %d bytes", length)
                    .isInstanceOf(InvalidRequestException.class);
        }
        byte[] longer = Arrays.copyOf(bytes, bytes.length + 1);
        assertThatThrownBy(() -> ControllerAnnouncement.parse(longer)).isInstanceOf(InvalidRequestException.class);
        // a text length beyond the bytes present, or negative
        for (short claimed : new short[]{Short.MAX_VALUE, -1, 2000}) {
            byte[] lying = bytes.clone();
            ByteBuffer.wrap(lying).putShort(2 + 4 + 16, claimed);
            assertThatThrownBy(() -> ControllerAnnouncement.parse(lying)).isInstanceOf(InvalidRequestException.class);
        }
        // a negative node id or an out-of-range port is not a registration
        byte[] negative = bytes.clone();
        ByteBuffer.wrap(negative).putInt(2, -5);
        assertThatThrownBy(() -> ControllerAnnouncement.parse(negative)).isInstanceOf(InvalidRequestException.class);
        byte[] port = bytes.clone();
        ByteBuffer.wrap(port).putInt(port.length - 4, 70_000);
        assertThatThrownBy(() -> ControllerAnnouncement.parse(port)).isInstanceOf(InvalidRequestException.class);
    }
}
