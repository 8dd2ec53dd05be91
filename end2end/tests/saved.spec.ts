import { test, expect, Page } from "@playwright/test";

const hydrated = (info: { project: { name: string } }) => info.project.name === "hydrated";

async function waitForHydration(page: Page, info: { project: { name: string } }) {
  if (hydrated(info)) {
    await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true", { timeout: 15_000 });
  }
}

/** Opens the save panel, fills it and saves; returns the new plan's id. */
async function save(page: Page, title: string, notes: string) {
  await page.getByTestId("save-open").click();
  await page.getByTestId("save-title").fill(title);
  await page.getByTestId("save-notes").fill(notes);
  await page.getByTestId("save-author").fill("e2e");
  await page.getByTestId("save-submit").click();
  await expect(page).toHaveURL(/\/p\/[A-Za-z0-9_-]{12}$/);
  await expect(page.getByTestId("saved-title")).toHaveText(title);
  return new URL(page.url()).pathname.slice(3);
}

test("plan → save → open the link → fork → the team page lists both", async ({ page, context }, info) => {
  const cspErrors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") cspErrors.push(m.text());
  });
  const tag = `journey-${info.project.name}-${Date.now()}`;
  await page.goto("/?mb=2&gpus=4");
  await waitForHydration(page, info);

  // Save: notes that look like a script stay text.
  const evil = "<script>window.__pwned = 1</script> try mb=2";
  const first = await save(page, `${tag} first`, evil);
  await expect(page.getByTestId("saved-notes")).toHaveText(evil);
  await expect(page.getByTestId("saved-author")).toHaveText("e2e");
  await expect(page.getByTestId("device-used")).toHaveText(/GiB$/);
  expect(await page.evaluate(() => (window as any).__pwned)).toBeUndefined();

  // The link opens in a new page exactly as saved.
  const other = await context.newPage();
  const res = await other.goto(`/p/${first}`);
  expect(res?.status()).toBe(200);
  await expect(other.getByTestId("saved-title")).toHaveText(`${tag} first`);
  await expect(other.getByTestId("plan-summary")).toContainText("Micro-batch");
  await expect(other.getByTestId("plan-summary")).toContainText("2");
  await waitForHydration(other, info);

  // Fork into the planner: the plan and its origin come along.
  await other.getByTestId("fork-link").click();
  await expect(other).toHaveURL(new RegExp(`fork=${first}`));
  await expect(other.getByTestId("forked-from")).toContainText(first);
  await expect(other.getByTestId("gpus")).toHaveValue("4");
  if (hydrated(info)) {
    await waitForHydration(other, info);
    await other.getByTestId("mb").fill("3");
    await expect(other.getByTestId("mb-value")).toHaveText("3");
  }
  const second = await save(other, `${tag} fork`, "");
  await expect(other.getByTestId("saved-forked-from")).toContainText(first);
  const want = hydrated(info) ? "3" : "2";
  const api = await (await other.request.get(`/api/v1/plans/${second}`)).json();
  expect(String(api.plan.training.micro_batch)).toBe(want);
  expect(api.forked_from).toBe(first);

  // The team page lists both, newest first.
  await page.goto(`/plans?query=${tag}`);
  const rows = page.getByTestId("plan-row");
  await expect(rows).toHaveCount(2);
  await expect(rows.nth(0)).toContainText(`${tag} fork`);
  await expect(rows.nth(1)).toContainText(`${tag} first`);
  await expect(rows.nth(0)).toContainText(/fits|does not fit/);
  await rows.nth(1).getByRole("link").click();
  await expect(page).toHaveURL(new RegExp(`/p/${first}$`));

  expect(cspErrors.filter((e) => /Content Security Policy|Refused/i.test(e))).toEqual([]);
});

test("an unknown plan id is a 404 page", async ({ page }) => {
  const res = await page.goto("/p/AAAAAAAAAAAA");
  expect(res?.status()).toBe(404);
  await expect(page.getByTestId("plan-not-found")).toBeVisible();
});

test("the team page searches and says when nothing matches", async ({ page }, info) => {
  await page.goto("/plans");
  await waitForHydration(page, info);
  await page.getByTestId("plans-query").fill("no-such-plan-anywhere-42");
  await page.getByTestId("plans-search").click();
  await expect(page).toHaveURL(/query=no-such-plan-anywhere-42/);
  await expect(page.getByTestId("plans-empty")).toBeVisible();
});

test("the planner does not load the saved-plan and team pages' code; a link to them does", async ({ page }, info) => {
  const chunks: string[] = [];
  page.on("request", (r) => {
    const m = /\/pkg\/(split_[a-z_]+?)_\d+\.wasm$/.exec(new URL(r.url()).pathname);
    if (m) chunks.push(m[1]);
  });
  await page.goto("/?mb=2");
  await waitForHydration(page, info);
  await expect(page.getByTestId("verdict")).toBeVisible();
  expect(chunks).toEqual([]);
  await page.getByTestId("nav-plans").click();
  await expect(page).toHaveURL(/\/plans$/);
  await expect(page.getByTestId("plans-query")).toBeVisible();
  if (hydrated(info)) {
    // A client-side navigation: the team page's chunk comes with it, and the page stays live.
    expect(chunks).toEqual(["split___plans_route_view"]);
    await page.getByTestId("nav-planner").click();
    await expect(page.getByTestId("verdict")).toBeVisible();
  }
});

test("a save the server refuses comes back to the planner with the reason, the plan kept", async ({ page }, info) => {
  await page.goto("/?mb=2&gpus=4");
  await waitForHydration(page, info);
  await page.getByTestId("save-open").click();
  // `required` lets spaces through; the server does not.
  await page.getByTestId("save-title").fill("   ");
  await page.getByTestId("save-submit").click();
  await expect(page.getByTestId("save-error")).toContainText("title: must not be empty");
  const url = new URL(page.url());
  expect(url.pathname).toBe("/");
  expect(url.searchParams.get("mb")).toBe("2");
  expect(url.searchParams.get("gpus")).toBe("4");
  await waitForHydration(page, info);
  await expect(page.getByTestId("save-panel")).toHaveAttribute("open", "");
  // The reason does not block the next try.
  await page.getByTestId("save-title").fill(`retry-${info.project.name}-${Date.now()}`);
  await page.getByTestId("save-submit").click();
  await expect(page).toHaveURL(/\/p\/[A-Za-z0-9_-]{12}$/);
});
