// The web page measured signed in, with Lighthouse 12's user flows in headless Chromium (the
// signed-out page is measured with the lighthouse CLI; see docs/measurements.md, "The web page").
//
//   node benchmarks/web_lighthouse.mjs http://127.0.0.1:8731 OUT_DIR
//
// against `citewell serve --demo` on a demo home. Lighthouse and puppeteer-core are read from
// LIGHTHOUSE_PREFIX (default /tmp/lh: `npm install --prefix /tmp/lh lighthouse@12`), Chromium from
// CHROME_PATH. Steps: sign in as the demo's first identity (one click), then
//   1. a navigation: the page loaded signed in (the token kept in the tab), the Ask view;
//   2. two questions asked, the second a follow-up, then a snapshot of the conversation view;
//   3. a navigation again: the page reloaded with that conversation resumed.
// Writes OUT_DIR/flow.json (every step's report), OUT_DIR/summary.json (each step's scores and
// its cumulative layout shift) OUT_DIR/conversation-reloaded.png
// and OUT_DIR/conversation.png (the conversation at 1280 px wide, reloaded, then with a third question).
import { createRequire } from "node:module";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [base, out] = process.argv.slice(2);
if (!base || !out) {
  console.error("usage: node benchmarks/web_lighthouse.mjs BASE_URL OUT_DIR");
  process.exit(2);
}
const prefix = process.env.LIGHTHOUSE_PREFIX || "/tmp/lh";
const require = createRequire(join(prefix, "package.json"));
const { startFlow } = await import(pathToFileURL(require.resolve("lighthouse")).href);
const puppeteer = (await import(pathToFileURL(require.resolve("puppeteer-core")).href)).default;

const QUESTIONS = ["How many days of annual leave do I get?", "can I carry any over?"];

async function ask(page, question) {
  await page.waitForSelector("#question", { visible: true });
  await page.click("#question", { clickCount: 3 });
  await page.type("#question", question);
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => {
    const answer = document.getElementById("answer");
    return answer && !answer.hidden && !document.getElementById("ask-status").textContent;
  }, { timeout: 120000 });
}

mkdirSync(out, { recursive: true });
const browser = await puppeteer.launch({
  executablePath: process.env.CHROME_PATH, headless: true, args: ["--headless=new", "--no-sandbox"],
});
try {
  const page = await browser.newPage();
  await page.goto(`${base}/`);
  await page.waitForSelector("#demo-list button.identity", { visible: true });
  await page.click("#demo-list button.identity");
  await page.waitForSelector("#whoami", { visible: true });

  const flow = await startFlow(page, { name: "citewell signed in", flags: { disableStorageReset: true } });
  await flow.navigate(`${base}/`, { name: "signed in: the Ask view loaded" });
  await page.waitForSelector("#whoami", { visible: true });
  for (const question of QUESTIONS) await ask(page, question);
  await flow.snapshot({ name: "signed in: a conversation of two questions" });
  await flow.navigate(`${base}/`, { name: "signed in: reloaded, the conversation resumed" });
  await page.waitForSelector("#thread .turn", { visible: true });

  const result = await flow.createFlowResult();
  writeFileSync(join(out, "flow.json"), JSON.stringify(result));
  const summary = result.steps.map(({ name, lhr }) => ({
    name,
    scores: Object.fromEntries(Object.entries(lhr.categories).map(([key, c]) => [key, c.score])),
    cls: lhr.audits["cumulative-layout-shift"]?.numericValue ?? null,
    failing: Object.values(lhr.audits).filter((a) => a.score === 0 && a.scoreDisplayMode === "binary").map((a) => a.id),
  }));
  writeFileSync(join(out, "summary.json"), JSON.stringify(summary, null, 2));
  console.log(JSON.stringify(summary, null, 2));

  // The conversation at desktop width: as the reload left it, then with one more question asked.
  await page.setViewport({ width: 1280, height: 900 });
  await page.goto(`${base}/`);
  await page.waitForSelector("#thread .turn", { visible: true });
  await page.waitForFunction(() => !document.getElementById("ask-status").classList.contains("busy"));
  await new Promise((resolve) => setTimeout(resolve, 500));
  await page.screenshot({ path: join(out, "conversation-reloaded.png"), fullPage: true });
  await ask(page, "what about part-time staff?");
  await new Promise((resolve) => setTimeout(resolve, 500));
  await page.screenshot({ path: join(out, "conversation.png"), fullPage: true });
} finally {
  await browser.close();
}
