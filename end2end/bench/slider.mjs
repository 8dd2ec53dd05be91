// Headless-Chromium timing of a micro-batch slider move: input event → DOM
// (verdict, table, chart) updated, and → the next frame painted.
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
  const dom = [], frame = [], paintAfterDom = [];
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
    await nextPaint();
    const t2 = performance.now();
    if (Number.isNaN(t1)) throw new Error(`iteration ${i}: DOM did not update`);
    dom.push(t1 - t0);
    frame.push(t2 - t0);
    paintAfterDom.push(t2 - t1);
  }
  return { dom, frame, paintAfterDom };
}, n);
const pct = (a, q) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };
const fmt = (a) => `p50 ${pct(a, 0.5).toFixed(2)} ms, p95 ${pct(a, 0.95).toFixed(2)} ms, max ${Math.max(...a).toFixed(2)} ms`;
console.log(`iterations: ${n}`);
console.log(`input → DOM updated (verdict, table, chart): ${fmt(result.dom)}`);
console.log(`input → painted (random phase in frame):     ${fmt(result.frame)}`);
console.log(`DOM updated → painted (≤ 16.7 ms = next frame): ${fmt(result.paintAfterDom)}`);
const late = result.paintAfterDom.filter((x) => x > 1000 / 60 + 2).length;
console.log(`updates painted later than the next frame: ${late} of ${n}`);
await browser.close();
