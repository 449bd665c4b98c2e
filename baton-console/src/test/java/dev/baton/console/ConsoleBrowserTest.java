package dev.baton.console;

import static dev.baton.console.Fixture.XSS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.JobState;
import dev.baton.NotificationMode;
import dev.baton.WorkerConfig;
import dev.baton.testkit.BatonPostgres;
import dev.baton.testkit.TestTimeouts;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.NoAlertPresentException;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * The console in a real browser: headless Chromium and its driver from Debian's packages ({@code .ci/run}
 * installs them). Loads each page against a populated schema with a running node, filters the job list, retries
 * failed jobs in bulk and watches them run, drains the node and watches it become DRAINING, and checks that
 * markup stored in jobs, nodes and leases runs no script. With {@code -Dbaton.console.screenshots=DIR} it saves
 * a screenshot of each page there ({@code docs/console/} holds the committed ones).
 *
 * <p>Skipped when {@code /usr/bin/chromedriver} is missing, unless {@code BATON_BROWSER_TESTS=required}
 * (CI's embedded mode), which turns a missing browser into a failure; {@code BATON_BROWSER_TESTS=skip} (CI's
 * other modes) skips them.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleBrowserTest {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
    static final String TOKEN = "browser-token-0123456789abcdef";

    static Fixture fixture;
    static HikariDataSource workerPool;
    static Baton worker;
    static ConsoleJetty jetty;
    static ChromeDriver driver;
    static Path screenshots;

    @BeforeAll
    static void start() throws Exception {
        String mode = System.getenv("BATON_BROWSER_TESTS");
        Assumptions.assumeFalse(
                "skip".equals(mode), "browser tests skipped: BATON_BROWSER_TESTS=skip (CI runs them in one mode)");
        boolean present = Files.isExecutable(CHROMEDRIVER) && Files.isExecutable(CHROMIUM);
        if (!present && "required".equals(mode)) {
            throw new AssertionError("BATON_BROWSER_TESTS=required, but " + CHROMIUM + " or " + CHROMEDRIVER
                    + " is missing: apt-get install chromium chromium-driver");
        }
        Assumptions.assumeTrue(
                present,
                "browser tests skipped: " + CHROMEDRIVER + " (Debian's chromium-driver) is not installed; "
                        + "set BATON_BROWSER_TESTS=required to make that a failure");
        String dir = System.getProperty("baton.console.screenshots");
        screenshots = dir == null || dir.isBlank() ? null : Files.createDirectories(Path.of(dir));
        fixture = Fixture.populate(PG);
        fixture.history(300);
        // A real node working the fixture's queues: retried jobs run on it, and the test drains it.
        workerPool = PG.newApplicationPool("console-worker", 4);
        worker = Baton.builder(workerPool)
                .schema(fixture.schema)
                .notifications(PG.pooled() ? NotificationMode.POLL : NotificationMode.AUTO)
                .nodeId("worker-1")
                .application("shop", "2.0")
                .nodeHeartbeat(Duration.ofSeconds(1))
                .worker(WorkerConfig.builder()
                        .queue("mail", 2)
                        .queue("reports", 2)
                        .build())
                .handle("mail.send", Map.class, (payload, ctx) -> {})
                .handle("report.build", Map.class, (payload, ctx) -> {})
                .build()
                .start();
        jetty = ConsoleJetty.start(
                new BatonConsoleServlet(fixture.tool, ConsoleSettings.withActions(ConsoleAccess.token(TOKEN))));
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900");
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(CHROMEDRIVER.toFile())
                .usingAnyFreePort()
                .build();
        driver = new ChromeDriver(service, options);
        driver.manage().window().setSize(new Dimension(1280, 900));
        driver.get(jetty.url("/?token=" + TOKEN));
    }

    @AfterAll
    static void stop() {
        if (driver != null) {
            driver.quit();
        }
        if (jetty != null) {
            jetty.close();
        }
        if (worker != null) {
            worker.close();
        }
        if (workerPool != null) {
            workerPool.close();
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    @Order(1)
    void loadsEachPage() {
        Map<String, String> pages = new java.util.LinkedHashMap<>();
        pages.put("overview", "/");
        pages.put("jobs", "/jobs");
        pages.put("job", "/jobs/" + fixture.failed.get(0));
        pages.put("schedules", "/schedules");
        pages.put("leases", "/leases");
        pages.put("lease", "/lease?name=report-leader");
        pages.put("expire-lease", "/lease/expire?name=orders-sweep&generation=2");
        pages.put("nodes", "/nodes");
        pages.put("controls", "/controls");
        Map<String, String> headings = Map.of(
                "overview", "Overview",
                "jobs", "Jobs",
                "job", "Job " + fixture.failed.get(0),
                "schedules", "Schedules",
                "leases", "Leases",
                "lease", "Lease report-leader",
                "expire-lease", "Expire lease orders-sweep, generation 2?",
                "nodes", "Nodes",
                "controls", "Controls");
        pages.forEach((name, path) -> {
            driver.get(jetty.url(path));
            assertThat(driver.findElement(By.tagName("h1")).getText()).as(path).startsWith(headings.get(name));
            // The stylesheet loaded (same origin, allowed by the Content-Security-Policy).
            assertThat(driver.findElement(By.cssSelector("header.top")).getCssValue("background-color"))
                    .as(path)
                    .isEqualTo("rgba(29, 35, 48, 1)");
            screenshot(name);
        });
    }

    @Test
    @Order(2)
    void filtersTheJobList() {
        driver.get(jetty.url("/jobs"));
        driver.findElement(By.cssSelector("input[name=state][value=failed]")).click();
        driver.findElement(By.name("queue")).sendKeys("reports");
        clickAndWaitForTheNextPage(driver.findElement(By.id("apply-filter")));
        List<WebElement> rows = driver.findElements(By.cssSelector("#jobs tbody tr"));
        assertThat(rows).isNotEmpty();
        for (WebElement row : rows) {
            List<WebElement> cells = row.findElements(By.tagName("td"));
            assertThat(cells.get(2).getText()).isEqualTo("reports");
            assertThat(cells.get(4).getText()).isEqualTo("failed");
        }
        assertThat(driver.getCurrentUrl()).contains("state=failed").contains("queue=reports");
        assertThat(driver.findElement(By.cssSelector("input[name=state][value=failed]"))
                        .isSelected())
                .isTrue();
        screenshot("jobs-filtered");
    }

    @Test
    @Order(3)
    void retriesSelectedFailedJobsAndTheyRun() {
        driver.get(jetty.url("/jobs?state=failed&queue=reports"));
        List<WebElement> boxes = driver.findElements(By.cssSelector("#jobs input[name=ids]"));
        List<Long> ids =
                boxes.stream().map(b -> Long.parseLong(b.getAttribute("value"))).toList();
        assertThat(ids).isNotEmpty();
        boxes.forEach(WebElement::click);
        clickAndWaitForTheNextPage(driver.findElement(By.id("retry-selected")));
        assertThat(driver.findElement(By.id("flash")).getText())
                .isEqualTo("retry " + ids.size() + " selected jobs: matched " + ids.size() + ", changed " + ids.size()
                        + ", left alone 0");
        assertThat(driver.findElements(By.cssSelector("#jobs tbody tr"))).isEmpty();
        // report.build is disabled by the fixture's control: lift it so the node may run them.
        fixture.admin.controls().enableKind("report.build", "test");
        await().atMost(TestTimeouts.scaled(Duration.ofSeconds(30))).untilAsserted(() -> {
            driver.navigate().refresh();
            for (long id : ids) {
                assertThat(fixture.admin.job(id).orElseThrow().state()).isEqualTo(JobState.SUCCEEDED);
            }
        });
        driver.get(jetty.url("/jobs/" + ids.get(0)));
        assertThat(driver.findElement(By.cssSelector("h1 .state")).getText()).isEqualTo("succeeded");
    }

    @Test
    @Order(4)
    void drainsTheNodeAndWatchesItBecomeDraining() {
        driver.get(jetty.url("/nodes"));
        WebElement row = driver.findElement(By.cssSelector("#nodes tr[data-node='worker-1']"));
        assertThat(row.findElement(By.cssSelector(".role")).getText()).isIn("ACTIVE", "CURRENT_OWNER");
        row.findElement(By.name("reason")).sendKeys("rolling out 2.1");
        row.findElement(By.name("operator")).sendKeys("alice");
        clickAndWaitForTheNextPage(row.findElement(By.cssSelector("button.node-action")));
        assertThat(driver.findElement(By.id("flash")).getText()).startsWith("drain node 'worker-1': done");
        await().atMost(TestTimeouts.scaled(Duration.ofSeconds(30))).untilAsserted(() -> {
            driver.navigate().refresh();
            assertThat(driver.findElement(By.cssSelector("#nodes tr[data-node='worker-1'] .role"))
                            .getText())
                    .isEqualTo("DRAINING");
        });
        assertThat(driver.findElement(By.cssSelector("#nodes tr[data-node='worker-1']"))
                        .getText())
                .contains("drain node by console:alice", "rolling out 2.1");
        screenshot("nodes-draining");
        driver.get(jetty.url("/controls"));
        assertThat(driver.findElement(By.id("audit")).getText()).contains("console:alice", "worker-1");
        screenshot("controls-after-drain");
    }

    @Test
    @Order(5)
    void markupInJobsNodesAndLeasesRunsNoScript() {
        for (String path : List.of(
                "/jobs/" + fixture.xssJob,
                "/jobs?queue=mail",
                "/nodes",
                "/",
                "/controls",
                "/lease?name=" + java.net.URLEncoder.encode(XSS, java.nio.charset.StandardCharsets.UTF_8))) {
            driver.get(jetty.url(path));
            try {
                String text = driver.switchTo().alert().getText();
                throw new AssertionError("an alert opened on " + path + ": " + text);
            } catch (NoAlertPresentException expected) {
                // No script ran.
            }
            assertThat(driver.findElement(By.tagName("main")).getText())
                    .as(path)
                    .contains(XSS);
        }
        driver.get(jetty.url("/jobs/" + fixture.xssJob));
        assertThat(driver.findElement(By.id("payload")).getText()).contains(XSS);
        assertThat(driver.findElement(By.id("kind")).getText()).isEqualTo(XSS);
        assertThat(driver.findElement(By.cssSelector(".error-entry .msg")).getText())
                .isEqualTo(XSS);
        assertThat(driver.findElements(By.tagName("script"))).isEmpty();
        screenshot("job-with-markup");
    }

    private static void screenshot(String name) {
        if (screenshots == null) {
            return;
        }
        File shot = driver.getScreenshotAs(OutputType.FILE);
        try {
            Files.copy(shot.toPath(), screenshots.resolve(name + ".png"), StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new IllegalStateException("could not save the screenshot of " + name, e);
        }
    }

    /**
     * Clicks a button that submits a form and returns once the browser shows the page it loads, so that what the
     * test reads next is of that page (seen in CI without this: a row of the old page went stale while its cells
     * were read, and the flash message was looked for before the new page had it).
     */
    private void clickAndWaitForTheNextPage(WebElement button) {
        WebElement old = driver.findElement(By.tagName("html"));
        button.click();
        await().atMost(TestTimeouts.scaled(Duration.ofSeconds(30))).until(() -> isStale(old));
    }

    /** True once {@code e} is no longer in the page shown (the browser loaded another). */
    private static boolean isStale(WebElement e) {
        try {
            e.isEnabled();
            return false;
        } catch (org.openqa.selenium.StaleElementReferenceException gone) {
            return true;
        }
    }
}
