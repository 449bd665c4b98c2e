package dev.baton.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class TestTimeoutsTest {

    private String saved;

    @BeforeEach
    void save() {
        saved = System.getProperty(TestTimeouts.SCALE_PROPERTY);
        System.clearProperty(TestTimeouts.SCALE_PROPERTY);
    }

    @AfterEach
    void restore() {
        if (saved == null) {
            System.clearProperty(TestTimeouts.SCALE_PROPERTY);
        } else {
            System.setProperty(TestTimeouts.SCALE_PROPERTY, saved);
        }
    }

    @Test
    void unsetMeansUnscaled() {
        assertThat(TestTimeouts.scale()).isEqualTo(1.0);
        assertThat(TestTimeouts.scaled(Duration.ofSeconds(5))).isEqualTo(Duration.ofSeconds(5));
    }

    @Test
    void multipliesByTheProperty() {
        System.setProperty(TestTimeouts.SCALE_PROPERTY, "2.5");
        assertThat(TestTimeouts.scaled(Duration.ofSeconds(2))).isEqualTo(Duration.ofSeconds(5));
        assertThat(TestTimeouts.scaled(Duration.ZERO)).isEqualTo(Duration.ZERO);
    }

    @Test
    void roundsUpToWholeMillis() {
        System.setProperty(TestTimeouts.SCALE_PROPERTY, "0.5");
        assertThat(TestTimeouts.scaled(Duration.ofMillis(3))).isEqualTo(Duration.ofMillis(2));
    }

    @Test
    void rejectsBadScaleNamingIt() {
        System.setProperty(TestTimeouts.SCALE_PROPERTY, "fast");
        assertThatThrownBy(TestTimeouts::scale)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'fast'");
        System.setProperty(TestTimeouts.SCALE_PROPERTY, "-1");
        assertThatThrownBy(TestTimeouts::scale)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'-1'");
    }

    @Test
    void rejectsNegativeTimeout() {
        assertThatThrownBy(() -> TestTimeouts.scaled(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PT-0.001S");
    }
}
