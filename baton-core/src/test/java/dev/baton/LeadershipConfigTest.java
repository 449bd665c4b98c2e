package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** L15: configurations where L/2 ≤ 2R, or nonsense values, are refused with a clear message. */
class LeadershipConfigTest {

    @Test
    void defaultsAreValidAndDocumented() {
        LeadershipConfig c = LeadershipConfig.defaults();
        assertThat(c.leaseTtl()).isEqualTo(Duration.ofSeconds(11));
        assertThat(c.renewInterval()).isEqualTo(Duration.ofMillis(2500));
        assertThat(c.leaseTtl().dividedBy(2)).isGreaterThan(c.renewInterval().multipliedBy(2));
    }

    /**
     * Protection checked: the L/2 > 2R rule in LeadershipConfig's constructor. With it removed the
     * builder accepted L = 1 s, R = 250 ms and this test failed.
     */
    @Test
    void L15_halfLeaseNotAboveTwoRenewalsIsRefused() {
        assertThatThrownBy(() -> LeadershipConfig.builder()
                        .leaseTtl(Duration.ofSeconds(1))
                        .renewInterval(Duration.ofMillis(250))
                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("leaseTtl/2 (PT0.5S) must exceed 2 × renewInterval (PT0.5S); with leaseTtl PT1S use a "
                        + "renewInterval below PT0.25S, or a longer leaseTtl");
        assertThatThrownBy(() -> LeadershipConfig.builder()
                        .leaseTtl(Duration.ofSeconds(2))
                        .renewInterval(Duration.ofSeconds(3))
                        .build())
                .hasMessageContaining("must exceed 2 × renewInterval");
        assertThat(LeadershipConfig.builder()
                        .leaseTtl(Duration.ofSeconds(1))
                        .renewInterval(Duration.ofMillis(249))
                        .build()
                        .renewInterval())
                .isEqualTo(Duration.ofMillis(249));
    }

    @Test
    void L15_nonsenseValuesAreRefused() {
        assertThatThrownBy(
                        () -> LeadershipConfig.builder().leaseTtl(Duration.ZERO).build())
                .hasMessage("leaseTtl must be positive, but was PT0S");
        assertThatThrownBy(() -> LeadershipConfig.builder()
                        .renewInterval(Duration.ofSeconds(-1))
                        .build())
                .hasMessage("renewInterval must be positive, but was PT-1S");
        assertThatThrownBy(() ->
                        LeadershipConfig.builder().pollInterval(Duration.ZERO).build())
                .hasMessage("pollInterval must be positive, but was PT0S");
        assertThatThrownBy(() -> LeadershipConfig.builder()
                        .stopTimeout(Duration.ofMillis(-5))
                        .build())
                .hasMessage("stopTimeout must be zero or positive, but was PT-0.005S");
        assertThatThrownBy(() ->
                        LeadershipConfig.builder().leaseTtl(Duration.ofDays(3)).build())
                .hasMessageContaining("leaseTtl must be between");
        assertThatThrownBy(() -> LeadershipConfig.builder().leaseTtl(null)).isInstanceOf(NullPointerException.class);
    }
}
