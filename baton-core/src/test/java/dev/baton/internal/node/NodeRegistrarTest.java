package dev.baton.internal.node;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.DbTest;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The node heartbeat as a service: registered, then one {@code runOnce()} per beat, on a real database. */
class NodeRegistrarTest extends DbTest {
    @Test
    void eachPassRecordsAHeartbeatAndAsksForTheNextOneIntervalAfterItsStart() throws Exception {
        // Every read of this ticker moves it 300 ms on: a pass (which reads it at its start and its end)
        // looks as if its statement took 300 ms.
        AtomicLong clock = new AtomicLong();
        long step = Duration.ofMillis(300).toNanos();
        Duration interval = Duration.ofSeconds(2);
        NodeRegistrar registrar = new NodeRegistrar(
                appPool, schema, "reg-1", interval, "app", "1.0", List.of("k"), null, () -> clock.getAndAdd(step));
        try {
            registrar.register();
            long registered = heartbeatMicros("reg-1");

            long answer = registrar.runOnce();

            assertThat(heartbeatMicros("reg-1")).isGreaterThan(registered);
            assertThat(answer).isEqualTo(interval.toNanos() - step);
            assertThat(count("SELECT count(*) FROM " + schema + ".node WHERE id = 'reg-1' AND state = 'active'"))
                    .isEqualTo(1);
        } finally {
            registrar.afterLastPass();
        }
    }

    private long heartbeatMicros(String id) throws Exception {
        return count("SELECT (extract(epoch FROM heartbeat_at) * 1000000)::bigint FROM " + schema + ".node WHERE id = '"
                + id + "'");
    }
}
