// Headless-Chromium timing of a micro-batch slider move: input event → DOM
// (verdict, table, chart) updated, and the duration of the frame that paints it
// (requestAnimationFrame timestamps; > 16.7 ms at 60 Hz is a dropped frame).
// Usage: BASE_URL=http://127.0.0.1:3000 node bench/slider.mjs [iterations]
import { chromium } from "playwright-core";

const base = process.env.BASE_URL ?? "http://127.0.0.1:3000";
const n = Number(process.argv[2] ?? 200);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
await page.goto(`${base}/?gpus=8&shard=zero2`);
await page.waitForSelector("body[data-hydrated]");
const result = await page.evaluate(async (n) => {
  const input = document.querySelector('[data-testid="mb"]');
  const verdict = document.querySelector('[data-testid="device-used"]');
  const table = document.querySelector('[data-testid="breakdown"]');
  const chart = document.querySelector('[data-testid="chart-breakdown"]');
  const dom = [], frame = [], toFrame = [];
  const rafTs = () => new Promise((r) => requestAnimationFrame((ts) => r(ts)));
  const nextPaint = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  // One MutationObserver per target; the DOM counts as updated when all three
  // (verdict, table, chart) have mutated after the input event.
  const targets = [verdict, table, chart];
  for (let i = 0; i < n; i++) {
    await nextPaint();
    // Input events arrive at any point of a frame: dispatch at a random phase.
    await new Promise((r) => setTimeout(r, Math.random() * 16));
    const v = 1 + (i % 16);
    let pending = new Set(targets);
    let done;
    const updated = new Promise((r) => (done = r));
    const observers = targets.map((t) => {
      const o = new MutationObserver(() => {
        pending.delete(t);
        if (pending.size === 0) done(performance.now());
      });
      o.observe(t, { subtree: true, childList: true, characterData: true, attributes: true });
      return o;
    });
    const t0 = performance.now();
    input.value = String(v === Number(input.value) ? v + 1 : v);
    input.dispatchEvent(new Event("input", { bubbles: true }));
    const t1 = await Promise.race([updated, new Promise((r) => setTimeout(() => r(NaN), 1000))]);
    observers.forEach((o) => o.disconnect());
    // The frame that renders the update starts at the first rAF after the DOM
    // changed and ends at the next one: its duration is how long the update
    // took to reach the screen; > 16.7 ms means a dropped frame.
    const frameStart = await rafTs();
    const frameEnd = await rafTs();
    if (Number.isNaN(t1)) throw new Error(`iteration ${i}: DOM did not update`);
    dom.push(t1 - t0);
    frame.push(frameEnd - frameStart);
    toFrame.push(frameStart - t0);
  }
  return { dom, frame, toFrame };
}, n);
// The cost model itself in WASM: the page's own module, timed inside the browser.
const wasm = await page.evaluate(async () => {
  const mod = await import("/pkg/memplan.js");
  return { estimate: mod.bench_estimate(20000), searches: mod.bench_searches(2000) };
});
const pct = (a, q) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };
const fmt = (a) => `p50 ${pct(a, 0.5).toFixed(2)} ms, p95 ${pct(a, 0.95).toFixed(2)} ms, max ${Math.max(...a).toFixed(2)} ms`;
console.log(`iterations: ${n}`);
console.log(`input → DOM updated (verdict, table, chart): ${fmt(result.dom)}`);
console.log(`input → start of the frame that renders it:    ${fmt(result.toFrame)}`);
console.log(`duration of that frame (≤ 16.7 ms = not dropped): ${fmt(result.frame)}`);
console.log(`one estimate in WASM: ${wasm.estimate.toFixed(2)} µs; max micro-batch + max sequence searches: ${wasm.searches.toFixed(2)} µs`);
const late = result.frame.filter((x) => x > 1000 / 60 + 1).length;
console.log(`dropped frames: ${late} of ${n}`);
await browser.close();
