// Headless-Chromium time of the layout search in the browser: a click on the
// planner's "Fastest layouts that fit" → the /layouts table in the DOM
// (client-side navigation; the search runs in the route's WASM chunk). The
// first click of each plan fetches the chunk and is not counted.
// Usage: BASE_URL=http://127.0.0.1:3000 node bench/layouts.mjs [runs]
import { chromium } from "playwright-core";

const base = process.env.BASE_URL ?? "http://127.0.0.1:3000";
const runs = Number(process.argv[2] ?? 20);
// The criterion benches' plans (cost-model/benches/estimate.rs).
const plans = {
  "default-8xh100": "/",
  "llama-3.1-70b-8xh100-trainer": "/?model=llama-3.1-70b&gpus=8&mb=4&ga=8",
  "llama-3.1-70b-64xh100-megatron": "/?model=llama-3.1-70b&gpus=64&fw=megatron&mb=1&ga=16&seq=8192",
};
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
const pct = (a, p) => a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))];
for (const [name, path] of Object.entries(plans)) {
  const page = await browser.newPage();
  await page.goto(base + path);
  await page.waitForSelector("body[data-hydrated]");
  const times = [];
  let summary = "";
  for (let i = 0; i <= runs; i++) {
    const ms = await page.evaluate(
      () =>
        new Promise((resolve) => {
          const t0 = performance.now();
          new MutationObserver((_, obs) => {
            if (document.querySelector("[data-testid=layouts-summary]")) {
              obs.disconnect();
              resolve(performance.now() - t0);
            }
          }).observe(document.body, { childList: true, subtree: true });
          document.querySelector("[data-testid=find-layouts]").click();
        }),
    );
    summary = await page.locator("[data-testid=layouts-summary]").textContent();
    if (i > 0) times.push(ms);
    await page.goBack();
    await page.waitForSelector("[data-testid=find-layouts]");
  }
  console.log(`${name}: click → layouts table p50 ${pct(times, 0.5).toFixed(1)} ms, p95 ${pct(times, 0.95).toFixed(1)} ms (${runs} runs) — ${summary}`);
  await page.close();
}
await browser.close();
