package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.baton.internal.job.JobErrors;
import org.junit.jupiter.api.Test;

/** The cleaning and bounding of error records (J15), without a database. */
class JobErrorsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void nulAndUnpairedSurrogatesAreReplacedAndPairsKept() {
        String s = "a\u0000b\uD800c\uDC00d\uD83D\uDE00e\uDE00\uD83D";
        assertThat(JobErrors.clean(s, 1000)).isEqualTo("a\uFFFDb\uFFFDc\uFFFDd\uD83D\uDE00e\uFFFD\uFFFD");
    }

    @Test
    void longTextIsTrimmedWithoutSplittingAPair() {
        String s = "x".repeat(9) + "\uD83D\uDE00" + "y".repeat(100);
        String trimmed = JobErrors.clean(s, 10 + "\n... (trimmed)".length());
        assertThat(trimmed).isEqualTo("x".repeat(9) + "\n... (trimmed)");
        assertThat(JobErrors.clean("short", 100)).isEqualTo("short");
        assertThat(JobErrors.clean(null, 100)).isNull();
    }

    @Test
    void recordIsJsonThatPostgresqlCanStore() throws Exception {
        Throwable e = new IllegalStateException("bad \u0000 " + "m".repeat(20_000));
        JsonNode n = JSON.readTree(JobErrors.json(3, "node-\u0000", "cls", e.getMessage(), e));
        assertThat(n.get("attempt").asInt()).isEqualTo(3);
        assertThat(n.get("node").asText()).isEqualTo("node-\uFFFD");
        assertThat(n.get("message").asText())
                .doesNotContain("\u0000")
                .hasSizeLessThanOrEqualTo(JobErrors.MAX_MESSAGE_CHARS);
        assertThat(n.get("stack").asText()).contains("IllegalStateException").doesNotContain("\u0000");
        assertThat(JobErrors.unrecordable("why")).contains("unrecordable").contains("why");
    }
}
