package dev.baton.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.awt.Color;
import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report's charts: every bar and legend entry tells its system apart. */
class CompareReportTest {
    @Test
    void everySystemOfARunHasAColourOfItsOwnAndKeepsItsFamilysHue() {
        // Before: colours went by family, so db-scheduler at 32 and at 256 threads were drawn in one green
        // (docs/benchmarks/round-two/shared-256-dbs of 2026-12-05). With the family lookup alone (no per-system
        // shade) this test fails on the four db-scheduler systems.
        List<String> systems = List.of(
                CompareReport.BATON,
                CompareReport.CEILING,
                CompareReport.CEILING_BEST,
                "db-scheduler (fetch-candidates, 32 threads)",
                "db-scheduler (lock-and-fetch, 32 threads)",
                "db-scheduler (fetch-candidates, 256 threads)",
                "db-scheduler (lock-and-fetch, 256 threads)",
                "JobRunr",
                "Quartz");
        Map<String, Color> colors = CompareReport.colors(systems);

        assertThat(colors).containsOnlyKeys(systems);
        assertThat(new HashSet<>(colors.values())).hasSize(systems.size());
        assertThat(colors.get("db-scheduler (fetch-candidates, 32 threads)"))
                .as("the first db-scheduler system of a run gets the family's first green")
                .isEqualTo(new Color(0x2ca02c));
        assertThat(CompareReport.colors(List.of("Quartz", CompareReport.BATON)))
                .as("a system's colour depends on its family and its place in it, not on the others")
                .containsEntry(CompareReport.BATON, colors.get(CompareReport.BATON))
                .containsEntry("Quartz", colors.get("Quartz"));
    }

    @Test
    void aLegendTooWideForOneRowIsLaidOutOnePerLineBelowATallerChart(@TempDir Path dir) throws Exception {
        // The 2026-12-05 chart's legend was cut off at "db-scheduler (lock-and-fetch, 25": its five names need
        // about 1,110 px in one row of a 900 px chart. With the horizontal layout kept for every legend, the wide
        // chart stays 480 px tall and this test fails.
        assertThat(chartHeight(dir.resolve("narrow"), List.of(CompareReport.BATON, CompareReport.CEILING)))
                .isEqualTo(480);
        assertThat(chartHeight(
                        dir.resolve("wide"),
                        List.of(
                                CompareReport.BATON,
                                CompareReport.CEILING,
                                CompareReport.CEILING_BEST,
                                "db-scheduler (lock-and-fetch, 32 threads)",
                                "db-scheduler (lock-and-fetch, 256 threads)")))
                .isEqualTo(480 + 4 * 20);
    }

    /** Writes the report of a run with one throughput point per system and reads its chart's height. */
    private static int chartHeight(Path dir, List<String> systems) throws Exception {
        CompareResults r = new CompareResults();
        for (String s : systems) {
            r.throughput.add(new CompareResults.Throughput(s, 1, 1, 100, 1000, 1, 100, 100, false, 10, 1, 0));
        }
        Compare c = Compare.parse(new String[] {"--quick", "--write-report", dir.toString()});
        CompareReport.write(r, c, "");
        BufferedImage png = ImageIO.read(dir.resolve("compare-throughput.png").toFile());
        assertThat(png.getWidth()).isEqualTo(900);
        return png.getHeight();
    }
}
