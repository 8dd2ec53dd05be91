// Headless-Chromium time of the layout search in the browser: a click on the
// planner's "Fastest layouts that fit" → the /layouts table in the DOM, by a
// client-side navigation: the route's WASM chunk is loaded (from the HTTP
// cache after the first run, which is not counted) and the search runs in it.
// Each run opens the planner afresh in one browser context.
// Usage: BASE_URL=http://127.0.0.1:3000 node bench/layouts.mjs [runs]
import { chromium } from "playwright-core";

const base = process.env.BASE_URL ?? "http://127.0.0.1:3000";
const runs = Number(process.argv[2] ?? 20);
// The criterion benches' plans (cost-model/benches/estimate.rs).
const plans = {
  "default-8xh100": "/",
  "llama-3.1-70b-8xh100-trainer": "/?model=llama-3.1-70b&gpus=8&mb=4&ga=8",
  "llama-3.1-70b-64xh100-megatron": "/?model=llama-3.1-70b&gpus=64&fw=megatron&mb=1&ga=16&seq=8192",
  "llama-3.1-70b-64xh100-megatron-128k": "/?model=llama-3.1-70b&gpus=64&fw=megatron&shard=zero1&mb=1&ga=16&seq=131072&ckpt=full",
};
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
const ctx = await browser.newContext();
const pct = (a, p) => a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))];
for (const [name, path] of Object.entries(plans)) {
  const times = [];
  let summary = "";
  for (let i = 0; i <= runs; i++) {
    const page = await ctx.newPage();
    await page.goto(base + path);
    await page.waitForSelector("body[data-hydrated]");
    // From the click's event (a real, trusted click) to the summary in the DOM.
    await page.evaluate(() => {
      window.addEventListener("click", () => (window.__t0 = performance.now()), { capture: true, once: true });
      new MutationObserver((_, obs) => {
        if (document.querySelector("[data-testid=layouts-summary]")) {
          window.__t1 = performance.now();
          obs.disconnect();
        }
      }).observe(document.body, { childList: true, subtree: true });
    });
    await page.click("[data-testid=find-layouts]");
    await page.waitForFunction(() => window.__t1 !== undefined);
    if (i > 0) times.push(await page.evaluate(() => window.__t1 - window.__t0));
    summary = await page.locator("[data-testid=layouts-summary]").textContent();
    await page.close();
  }
  console.log(`${name}: click → layouts table p50 ${pct(times, 0.5).toFixed(1)} ms, p95 ${pct(times, 0.95).toFixed(1)} ms (${runs} runs) — ${summary}`);
}
await browser.close();
