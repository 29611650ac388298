// Loads joule's dashboard and an HTML report in headless Chromium (Debian's, driven by
// playwright-core), fails on any console error or page error, checks what the pages show,
// clicks through a run's details and a two-run comparison, and keeps screenshots.
// Usage: node check_pages.js DASHBOARD_URL REPORT_FILE OUT_DIR EXPERIMENT
"use strict";
const path = require("path");
const { chromium } = require(path.join(__dirname, "../../tools/peers/node_modules/playwright-core"));

const [url, reportFile, outDir, experiment] = process.argv.slice(2);
const problems = [];

function watch(page, what) {
  page.on("console", (m) => { if (m.type() === "error") problems.push(`${what}: console error: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`${what}: page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`${what}: request failed: ${r.url()}`));
}

function expect(cond, msg) { if (!cond) problems.push(msg); }

(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
                                          args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    watch(page, "dashboard");
    await page.goto(url, { waitUntil: "networkidle" });
    await page.waitForSelector("#runs tbody tr.run", { timeout: 15000 });
    const expText = await page.textContent("#experiments");
    expect(expText.includes(experiment), `dashboard: experiment ${experiment} not listed: ${expText}`);
    // The live view re-renders the table every 2 s: stop it, and click through locators (they
    // find their element again if a refresh already in flight replaces it).
    await page.uncheck("#live");
    const rows = page.locator("#runs tbody tr.run");
    const count = await rows.count();
    expect(count >= 2, `dashboard: ${count} runs listed`);
    // One run's details.
    await rows.nth(0).click();
    await page.waitForSelector("#detail h2", { timeout: 10000 });
    const detail = await page.textContent("#detail");
    expect(detail.includes("Metrics"), "dashboard: no metrics in a run's details");
    expect(detail.includes("Per-layer time"), "dashboard: no per-layer table in a profiled run's details");
    // Two runs side by side.
    const boxes = page.locator("#runs tbody tr.run input[type=checkbox]");
    await boxes.nth(0).check();
    await boxes.nth(1).check();
    await page.click("#compare");
    await page.waitForFunction(() => document.querySelector("#detail h2").textContent.includes("against run"),
                               null, { timeout: 10000 });
    const cmp = await page.textContent("#detail");
    expect(cmp.includes("Per-layer differences"), "dashboard: no per-layer differences in the comparison");
    // The status filter.
    await page.selectOption("#f-status", "failed");
    await page.waitForFunction(() => document.querySelectorAll("#runs tbody tr.run").length === 0, null,
                               { timeout: 10000 });
    await page.selectOption("#f-status", "");
    await page.waitForSelector("#runs tbody tr.run", { timeout: 10000 });
    await page.screenshot({ path: path.join(outDir, "dashboard.png"), fullPage: true });

    const rep = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    watch(rep, "report");
    await rep.goto("file://" + path.resolve(reportFile), { waitUntil: "load" });
    const h1 = await rep.textContent("h1");
    expect(h1.includes(experiment), `report: title ${h1}`);
    const svgs = await rep.$$("svg");
    expect(svgs.length >= 3, `report: ${svgs.length} charts`);
    // Sorting a column by clicking its header leaves the table's rows intact.
    const before = await rep.$$eval("table.sortable tbody tr", (t) => t.length);
    await rep.click("table.sortable th:nth-child(2)");
    const after = await rep.$$eval("table.sortable tbody tr", (t) => t.length);
    expect(before === after && before > 0, `report: ${before} rows before sorting, ${after} after`);
    // No text drawn outside its chart.
    const clipped = await rep.$$eval("svg", (ss) => ss.flatMap((s) => {
      const box = s.getBoundingClientRect();
      return Array.from(s.querySelectorAll("text")).filter((t) => {
        const b = t.getBoundingClientRect();
        return b.width > 0 && (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 ||
                               b.bottom > box.bottom + 1);
      }).map((t) => t.textContent);
    }));
    expect(clipped.length === 0, `report: text outside its chart: ${clipped.slice(0, 5).join(" | ")}`);
    await rep.screenshot({ path: path.join(outDir, "report.png"), fullPage: true });
  } finally {
    await browser.close();
  }
  if (problems.length) {
    for (const p of problems) console.error(p);
    process.exit(1);
  }
  console.log(`dashboard and report: no console errors; screenshots in ${outDir}`);
})().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
