import { test, expect, Page } from "@playwright/test";

const hydrated = (info: { project: { name: string } }) => info.project.name === "hydrated";

/** Waits until the WASM bundle has hydrated the page (hydrated project only). */
async function waitForHydration(page: Page, info: { project: { name: string } }) {
  if (hydrated(info)) {
    await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true", { timeout: 15_000 });
  }
}

test("from a plan that does not fit, the layout search leads to one that does", async ({ page }, info) => {
  // Llama-3.1-70B trained in full on 8 × H100 under the Trainer: 16 bytes of
  // states a parameter over 8 ranks do not fit; ZeRO-3 with the optimizer on
  // the host does.
  const documents: string[] = [];
  const chunks: string[] = [];
  page.on("request", (r) => {
    const url = new URL(r.url());
    if (r.resourceType() === "document") documents.push(url.pathname);
    const m = /\/pkg\/(split_[a-z_]+?)_\d+\.wasm$/.exec(url.pathname);
    if (m) chunks.push(m[1]);
  });
  await page.goto("/?model=llama-3.1-70b&gpus=8&mb=4&ga=8");
  await waitForHydration(page, info);
  await expect(page.getByTestId("verdict")).toHaveText("Does not fit");
  // The planner does not load the search's code.
  expect(chunks).toEqual([]);
  await page.getByTestId("find-layouts").click();
  await expect(page).toHaveURL(/\/layouts\?.*model=llama-3\.1-70b/);
  await expect(page.getByTestId("layouts-summary")).toContainText("layouts considered");
  await expect(page.getByTestId("layouts-summary")).toContainText("global batch 256 × 4096 tokens");
  const first = page.getByTestId("layout-0");
  await expect(first).toContainText("ZeRO-3");
  await expect(first).toContainText("optimizer on CPU");
  if (hydrated(info)) {
    // Computed in the browser: the route's chunk came, no page was fetched.
    expect(chunks).toEqual(["split___layouts_route_view"]);
    expect(documents).toEqual(["/"]);
  }
  await first.click();
  await expect(page).toHaveURL(/\/\?.*shard=zero3/);
  await waitForHydration(page, info);
  await expect(page.getByTestId("verdict")).toHaveText("Fits");
  await expect(page.getByTestId("mb-value")).toHaveText("4");
});

test("the layout search's table: fastest first, each slower layout with more room", async ({ page }, info) => {
  await page.goto("/layouts?model=llama-3.1-70b&gpus=64&fw=megatron&mb=1&ga=16&seq=8192");
  await waitForHydration(page, info);
  const rows = page.getByTestId("layouts-table").locator("tbody tr");
  const n = await rows.count();
  expect(n).toBeGreaterThan(2);
  let lastSpeed = -Infinity;
  let lastPeak = Infinity;
  for (let i = 0; i < n; i++) {
    const cells = rows.nth(i).locator("td");
    const speed = parseFloat((await cells.nth(0).textContent())!.replace(/[^\d.+-]/g, ""));
    const peak = parseFloat((await cells.nth(3).textContent())!);
    expect(speed).toBeGreaterThanOrEqual(lastSpeed);
    expect(peak).toBeLessThan(lastPeak);
    lastSpeed = speed;
    lastPeak = peak;
  }
  // The summary's count of layouts that fit is the table's rows, or says how
  // many of them the table shows.
  const summary = (await page.getByTestId("layouts-summary").textContent())!;
  const fit = parseInt(summary.match(/(\d+) fit/)![1]);
  expect(fit).toBeGreaterThanOrEqual(n);
  if (fit > n) expect(summary).toContain(`${fit} fit (${n} shown: the others are no faster and leave less room)`);
  // Megatron-LM's layouts: tensor and pipeline parallel, no ZeRO-3.
  await expect(page.getByTestId("layouts-table")).toContainText("TP 8");
  await expect(page.getByTestId("layouts-table")).toContainText("PP ");
  await expect(page.getByTestId("layouts-table")).not.toContainText("ZeRO-3");
  await page.getByTestId("layouts-back").click();
  await expect(page).toHaveURL(/\/\?.*fw=megatron/);
  await expect(page.getByTestId("verdict")).toBeVisible();
});

test("a plan that fits is the first row when nothing is faster, marked as the plan", async ({ page }, info) => {
  await page.goto("/layouts?gpus=8&shard=zero2");
  await waitForHydration(page, info);
  const first = page.getByTestId("layouts-table").locator("tbody tr").first();
  await expect(first.getByTestId("layout-current")).toHaveText("your plan");
  await expect(first.getByTestId("layout-0")).toHaveText("ZeRO-2");
  await expect(first.locator("td.speed")).toHaveText("+0 %");
  await expect(page.getByTestId("layout-current")).toHaveCount(1);
});

test("a plan nothing fits says so, in the page's language; a broken plan names its field", async ({ page }, info) => {
  await page.goto("/layouts?model=llama-3.1-405b&gpu=rtx3060-12gb&gpus=1&shard=none&lang=zh");
  await waitForHydration(page, info);
  await expect(page.getByTestId("layouts-none")).toContainText("没有能放下的方案");
  await expect(page.getByTestId("layouts-summary")).toContainText("种方案已考察");
  await expect(page.getByTestId("layouts-back")).toHaveAttribute("href", /lang=zh/);
  const res = await page.goto("/layouts?tp=3");
  expect(res?.status()).toBe(200);
  await expect(page.getByTestId("layouts-error")).toHaveText("model.heads (32) is not divisible by parallel.tp (3)");
});

test("hydrated: leaving the planner right after a change keeps the new page's URL", async ({ page }, info) => {
  test.skip(!hydrated(info), "needs the WASM bundle");
  await page.goto("/?gpus=8");
  await waitForHydration(page, info);
  // The planner writes the plan into the URL at most every 120 ms; a link
  // followed within that time must not get the planner's URL written over it.
  await page.getByTestId("mb").fill("2");
  await page.getByTestId("find-layouts").click();
  await expect(page.getByTestId("layouts-summary")).toBeVisible();
  await page.waitForTimeout(400);
  expect(new URL(page.url()).pathname).toBe("/layouts");
  expect(new URL(page.url()).searchParams.get("mb")).toBe("2");
  await page.goBack();
  await expect(page.getByTestId("mb-value")).toHaveText("2");
});

test("on a phone no page scrolls sideways: wide tables scroll in their own box", async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  for (const url of [
    "/layouts?model=llama-3.1-70b&gpus=64&fw=megatron&mb=1&ga=16&seq=8192",
    "/?model=llama-3.1-70b&gpus=16&fw=megatron&shard=ddp&tp=4&pp=4&ga=8",
    "/plans",
  ]) {
    await page.goto(url);
    const [scroll, client] = await page.evaluate(() => [
      document.documentElement.scrollWidth,
      document.documentElement.clientWidth,
    ]);
    expect(scroll, url).toBeLessThanOrEqual(client);
  }
});
