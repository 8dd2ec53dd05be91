// Regenerates docs/screenshot-*.png from a running server.
// Usage: BASE_URL=http://127.0.0.1:3000 node bench/screenshots.mjs [NAME…] (all when none is named)
// The Chinese one needs a CJK font (Debian's fonts-noto-cjk): without it Chromium draws boxes.
import { chromium } from "playwright-core";

const base = process.env.BASE_URL ?? "http://127.0.0.1:3000";
const out = new URL("../../docs/", import.meta.url).pathname;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
const shots = [
  { name: "screenshot-desktop.png", url: "/?shard=ddp&mb=4", viewport: { width: 1366, height: 1000 }, scheme: "light" },
  { name: "screenshot-desktop-zh-dark.png", url: "/?lang=zh&pp=4&gpus=32&model=llama-3.1-70b&ckpt=full&shard=zero1", viewport: { width: 1366, height: 1000 }, scheme: "dark" },
  { name: "screenshot-layouts.png", url: "/layouts?model=llama-3.1-70b&gpus=64&fw=megatron&mb=1&ga=16&seq=8192", viewport: { width: 1366, height: 640 }, scheme: "light" },
  { name: "screenshot-phone.png", url: "/?model=qwen2.5-7b&ft=qlora&rank=16&gpus=1&shard=none&gpu=rtx4090-24gb", viewport: { width: 390, height: 1400 }, scheme: "light" },
];
const only = process.argv.slice(2);
for (const s of shots.filter((s) => only.length === 0 || only.includes(s.name))) {
  const page = await browser.newPage({ viewport: s.viewport, colorScheme: s.scheme });
  await page.goto(base + s.url);
  await page.waitForSelector("body[data-hydrated]");
  await page.screenshot({ path: out + s.name });
  await page.close();
  console.log("wrote docs/" + s.name);
}
await browser.close();
