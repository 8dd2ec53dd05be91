// Headless-Chromium time to a live page: navigation start → `data-hydrated`
// on <body> (set once hydration has walked the server's DOM), for the planner
// and for a saved plan (a lazy route: its WASM chunk is fetched first).
// Usage: BASE_URL=http://127.0.0.1:3000 node bench/hydrate.mjs [runs]
import { chromium } from "playwright-core";
import { execFileSync } from "node:child_process";

const base = process.env.BASE_URL ?? "http://127.0.0.1:3000";
const runs = Number(process.argv[2] ?? 20);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
const save = await (
  await fetch(`${base}/api/v1/plans`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      title: "hydrate bench",
      plan: JSON.parse(execFileSync(process.env.MEMPLAN ?? "../target/release/memplan", ["estimate", "--print-example"])),
    }),
  })
).json();
const pages = { planner: "/?gpus=8&shard=zero2", saved: `/p/${save.id}` };
const pct = (a, p) => a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))];
for (const [name, path] of Object.entries(pages)) {
  const times = [];
  for (let i = 0; i < runs; i++) {
    // A fresh context each run: nothing cached, as a first visit.
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.addInitScript(() => {
      new MutationObserver((_, obs) => {
        if (document.body?.hasAttribute("data-hydrated")) {
          window.__hydratedAt = performance.now();
          obs.disconnect();
        }
      }).observe(document, { attributes: true, subtree: true, attributeFilter: ["data-hydrated"] });
    });
    await page.goto(base + path);
    await page.waitForSelector("body[data-hydrated]");
    times.push(await page.evaluate(() => window.__hydratedAt));
    await ctx.close();
  }
  console.log(`${name}: navigation → hydrated p50 ${pct(times, 0.5).toFixed(0)} ms, p95 ${pct(times, 0.95).toFixed(0)} ms (${runs} cold loads)`);
}
await browser.close();
