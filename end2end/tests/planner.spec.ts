import { test, expect, Page } from "@playwright/test";
import * as fs from "fs";
import * as path from "path";

const hydrated = (info: { project: { name: string } }) => info.project.name === "hydrated";

/** Waits until the WASM bundle has hydrated the page. */
async function waitForHydration(page: Page) {
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true", { timeout: 15_000 });
}

test("server renders the planner with a verdict", async ({ page }) => {
  const res = await page.goto("/");
  expect(res?.status()).toBe(200);
  await expect(page.locator("h1")).toHaveText("memplan");
  await expect(page.getByTestId("plan-form")).toBeVisible();
  await expect(page.getByTestId("model")).toBeVisible();
  await expect(page.getByTestId("gpu")).toBeVisible();
  await expect(page.getByTestId("mb")).toBeVisible();
  await expect(page.getByTestId("seq")).toBeVisible();
  await expect(page.getByTestId("verdict")).toHaveText(/fit/i);
  await expect(page.getByTestId("device-used")).toHaveText(/GiB$/);
});

test("on a wide screen the verdict stays in view while the long form scrolls; a plan with room shows no empty ladder", async ({ page }) => {
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto("/");
  await expect(page.getByTestId("verdict")).toBeInViewport();
  // The default plan fits with more than the thin-headroom margin: no rungs.
  await expect(page.getByTestId("ladder")).toBeHidden();
  // Down the form, at the optimizer and further at the LoRA settings.
  await page.getByTestId("opt").scrollIntoViewIfNeeded();
  await expect(page.getByTestId("opt")).toBeInViewport();
  await expect(page.getByTestId("verdict")).toBeInViewport();
  await page.getByTestId("ckpt").scrollIntoViewIfNeeded();
  await expect(page.getByTestId("verdict")).toBeInViewport();
  // A plan that does not fit shows its ladder, in view beside the form too.
  await page.goto("/?model=llama-3.1-70b&gpus=1&shard=none");
  await expect(page.getByTestId("ladder")).toBeVisible();
  await page.getByTestId("opt").scrollIntoViewIfNeeded();
  await expect(page.getByTestId("verdict")).toBeInViewport();
});

test("a long hint shows two lines until its field is focused", async ({ page }) => {
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto("/");
  const hint = page.locator(".field", { has: page.getByTestId("prec") }).locator(".hint");
  const clamped = (await hint.boundingBox())!.height;
  // 0.78rem at 1.45 line height: two lines are about 36 px.
  expect(clamped).toBeLessThan(40);
  await page.getByTestId("prec").focus();
  await expect.poll(async () => (await hint.boundingBox())!.height).toBeGreaterThan(2 * clamped);
  await expect(hint).toContainText("ms-swift trains in the checkpoint's dtype");
});

test("no label or hint runs out of its column or out of the form card", async ({ page }) => {
  // A QLoRA plan shows the longest unbreakable names: prepare_model_for_kbit_training,
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
  for (const width of [1400, 900, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.goto("/?model=llama-3.1-8b&ft=qlora&bits=4");
    const overflows = await page.evaluate(() => {
      const form = document.querySelector('[data-testid="plan-form"]')!.getBoundingClientRect();
      const bad: string[] = [];
      for (const field of Array.from(document.querySelectorAll(".plan-form .field"))) {
        const label = field.querySelector("label");
        const input = field.querySelector(".input, select, input");
        const hint = field.querySelector(".hint");
        const name = label?.textContent?.trim() ?? "?";
        if (label && input) {
          const l = label.getBoundingClientRect();
          const i = input.getBoundingClientRect();
          // The label's box ends before its control starts (or sits above it
          // in a one-column layout), and nothing inside spills past the box.
          if (label.scrollWidth > label.clientWidth + 1 || (l.bottom > i.top + 1 && l.right > i.left + 1)) {
            bad.push(`label of ${name}`);
          }
        }
        // A hint is clamped to two lines, never cut off at its right edge.
        if (hint && hint.scrollWidth > hint.clientWidth + 1) bad.push(`hint of ${name} cut off`);
        for (const el of [label, hint]) {
          if (el && el.getBoundingClientRect().right > form.right + 1) bad.push(`${el.className || "label"} of ${name} past the card`);
        }
      }
      return bad;
    });
    expect(overflows, `at ${width} px`).toEqual([]);
  }
});

test("the planner, a saved plan and the team page load without a console error or a failed request", async ({ page }, info) => {
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page: ${e.message}`));
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
  });
  page.on("requestfailed", (r) => {
    // With JavaScript off the browser drops the pages' script and WASM preloads
    // (or the next navigation aborts them): nothing uses them.
    if (!hydrated(info) && new URL(r.url()).pathname.startsWith("/pkg/")) return;
    // The icon is fetched apart from the page's load, so the next `goto` can
    // cancel it (seen once in CI without JavaScript): a cancelled request is
    // not a failed one. The icon's own status is checked below, and a missing
    // or failing resource shows as a ≥ 400 response above.
    if (r.failure()?.errorText === "net::ERR_ABORTED" && new URL(r.url()).pathname === "/favicon.svg") return;
    problems.push(`failed ${r.url()}: ${r.failure()?.errorText}`);
  });
  const plan = JSON.parse(fs.readFileSync(path.resolve(__dirname, "../../cost-model/tests/fixtures/plan-v1.json"), "utf8"));
  const res = await page.request.post("/api/v1/plans", {
    headers: { "content-type": "application/json" },
    data: JSON.stringify({ title: `clean-${info.project.name}-${Date.now()}`, plan }),
  });
  expect(res.status()).toBe(201);
  for (const url of ["/?mb=2", "/plans", `/p/${(await res.json()).id}`]) {
    await page.goto(url);
    if (hydrated(info)) await waitForHydration(page);
    await expect(page.locator("h1")).toHaveText("memplan");
  }
  // The browser asks for the icon the page names.
  await expect(page.locator('link[rel="icon"]')).toHaveAttribute("href", "/favicon.svg");
  expect((await page.request.get("/favicon.svg")).status()).toBe(200);
  expect(problems).toEqual([]);
});

test("a URL with plan parameters renders that plan", async ({ page }) => {
  await page.goto("/?model=llama-2-7b&mb=2&seq=1024&gpu=a100-sxm4-40gb&gpus=1&shard=none");
  await expect(page.getByTestId("model")).toHaveValue("llama-2-7b");
  await expect(page.getByTestId("gpu")).toHaveValue("a100-sxm4-40gb");
  await expect(page.getByTestId("capacity")).toHaveText("40.00 GiB");
  // Full fine-tuning of a 7B model with AdamW cannot fit one 40 GB GPU.
  await expect(page.getByTestId("verdict")).toHaveText("Does not fit");
});

test("without JavaScript the form submits with GET and the server recomputes", async ({ page }, info) => {
  test.skip(hydrated(info), "JS-off behaviour");
  await page.goto("/");
  const before = await page.getByTestId("device-used").textContent();
  await page.getByTestId("mb").fill("8");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/mb=8/);
  await expect(page.getByTestId("device-used")).not.toHaveText(before ?? "");
});

test("hydrated: changing an input recomputes in the browser without a network request", async ({ page }, info) => {
  test.skip(!hydrated(info), "needs the WASM bundle");
  await page.goto("/");
  await waitForHydration(page);
  const requests: string[] = [];
  page.on("request", (r) => {
    // The tab's icon is fetched when the browser gets to it, not by the page.
    if (new URL(r.url()).pathname !== "/favicon.svg") requests.push(r.url());
  });
  const before = await page.getByTestId("device-used").textContent();
  const table = await page.getByTestId("breakdown").textContent();
  const chart = await page.getByTestId("chart-breakdown").innerHTML();
  await page.getByTestId("mb").fill("8");
  await expect(page.getByTestId("mb-value")).toHaveText("8");
  await expect(page.getByTestId("device-used")).not.toHaveText(before ?? "");
  await expect(page.getByTestId("breakdown")).not.toHaveText(table ?? "");
  expect(await page.getByTestId("chart-breakdown").innerHTML()).not.toBe(chart);
  // The URL follows the plan (history replaced, not pushed).
  await expect(page).toHaveURL(/mb=8/);
  expect(requests).toEqual([]);
});

test("unknown pages are a real 404", async ({ page }) => {
  const res = await page.goto("/no-such-page");
  expect(res?.status()).toBe(404);
});

test("an invalid combination is explained, not clamped", async ({ page }) => {
  await page.goto("/?tp=3");
  await expect(page.getByTestId("plan-error")).toHaveText("model.heads (32) is not divisible by parallel.tp (3)");
  // Both controls the error names are marked, with the message under each;
  // the rest are not.
  for (const key of ["heads", "tp"]) {
    await expect(page.getByTestId(`error-${key}`)).toHaveText("model.heads (32) is not divisible by parallel.tp (3)");
    // Its label turns the error colour.
    const label = page.locator(".field", { has: page.getByTestId(key) }).locator("label");
    expect(await label.evaluate((l) => getComputedStyle(l).color)).toBe("rgb(179, 38, 30)");
  }
  await expect(page.locator(".field .error")).toHaveCount(2);
  // No chart to draw: no empty boxes either.
  await expect(page.getByTestId("chart-breakdown")).toBeHidden();
  await expect(page.getByText("Memory per GPU")).toBeHidden();
  await expect(page.locator(".results section.charts")).toBeHidden();
  // Parameters offloaded where nothing fetches them back: refused by field, not estimated without weights.
  await page.goto("/?shard=zero2&off_par=cpu");
  await expect(page.getByTestId("plan-error")).toContainText("parallel.offload.params: parameter offload needs ZeRO-3 or FSDP");
  await expect(page.getByTestId("error-off_par")).toContainText("parameter offload needs ZeRO-3 or FSDP");
  await expect(page.getByTestId("verdict")).toHaveCount(0);
  // In Chinese the message is too, field names as the plan JSON spells them.
  await page.goto("/?tp=3&lang=zh");
  await expect(page.getByTestId("plan-error")).toHaveText("model.heads（32）不能被 parallel.tp（3）整除");
  await expect(page.getByTestId("error-tp")).toHaveText("model.heads（32）不能被 parallel.tp（3）整除");
});

test("hydrated: the fix ladder's first rung makes a non-fitting plan fit when the model says so", async ({ page }, info) => {
  test.skip(!hydrated(info), "needs the WASM bundle");
  await page.goto("/?shard=ddp&mb=8");
  await waitForHydration(page);
  await expect(page.getByTestId("verdict")).toHaveText("Does not fit");
  const rungs = page.locator('[data-testid^="rung-"]');
  expect(await rungs.count()).toBeGreaterThan(0);
  // Each click applies the first rung and the ladder is computed again (a rung
  // can become worth it once others moved the peak): a bounded number of clicks.
  for (let i = 0; i < 10; i++) {
    await page.getByTestId("rung-0").click();
    if ((await page.getByTestId("verdict").textContent()) === "Fits") break;
  }
  await expect(page.getByTestId("verdict")).toHaveText("Fits");
  // The rungs applied are in the URL: compile first, fused kernels, DDP's bucket
  // views (free once the step holds the peak), then checkpointing.
  await expect(page).toHaveURL(/compile=1/);
  await expect(page).toHaveURL(/fkern=1/);
  await expect(page).toHaveURL(/loss=fused/);
  await expect(page).toHaveURL(/bucket_view=1/);
  await expect(page).toHaveURL(/ckpt=full/);
});

test("no-js: a fix-ladder rung is a link to the changed plan", async ({ page }, info) => {
  test.skip(hydrated(info), "JS-off behaviour");
  await page.goto("/?shard=ddp&mb=8");
  await expect(page.getByTestId("verdict")).toHaveText("Does not fit");
  // Each rung says what it saves and how its step time changes: compile's is
  // shorter (a minus), checkpointing's longer (a plus) — not a "speed" whose
  // sign reads backwards.
  await expect(page.getByTestId("ladder")).toContainText(/torch\.compile → [\d.]+ GiB \(saves [\d.]+ GiB, step time -\d+ %\)/);
  await expect(page.getByTestId("ladder")).toContainText(/step time \+\d+ %/);
  await expect(page.getByTestId("ladder")).not.toContainText("speed");
  // The first rung is torch.compile (faster and smaller), then Liger's fused
  // kernels (faster too), then DDP's bucket views (free), then checkpointing.
  await page.getByTestId("rung-0").click();
  await expect(page).toHaveURL(/compile=1/);
  await page.getByTestId("rung-0").click();
  await expect(page).toHaveURL(/fkern=1/);
  await page.getByTestId("rung-0").click();
  await expect(page).toHaveURL(/bucket_view=1/);
  await page.getByTestId("rung-0").click();
  await expect(page).toHaveURL(/ckpt=full/);
});

test("Megatron's fix ladder offers its distributed optimizer; fp8 needs float8 tensor cores", async ({ page }) => {
  // Llama-3.1-8B on 8 × H100 under Megatron without the distributed optimizer.
  await page.goto("/?fw=megatron&shard=ddp&prec=bf16&seq=8192&mb=1");
  await expect(page.getByTestId("verdict")).toHaveText("Does not fit");
  const ladder = page.getByTestId("ladder");
  await expect(ladder).toContainText("Distributed optimizer");
  await expect(ladder).not.toContainText("ZeRO-3");
  await expect(ladder).not.toContainText("torch.compile");
  // An A100 has no float8 tensor cores: explained on the field, not estimated.
  await page.goto("/?prec=fp8&gpu=a100-sxm4-80gb");
  await expect(page.getByTestId("plan-error")).toContainText("training.precision: fp8 needs float8 tensor cores");
});

/** Opens `url`, a plan that does not fit, and returns its fix ladder. */
async function ladderOf(page: Page, url: string) {
  await page.goto(url);
  await expect(page.getByTestId("verdict")).toHaveText("Does not fit");
  return page.getByTestId("ladder");
}

test("a long sequence's fix ladder splits it over ranks where the framework can (context parallelism)", async ({ page }) => {
  // Llama-3.1-8B at 128K tokens on 8 × H100 under torchtitan, checkpointed and fully sharded.
  const plan = "/?model=llama-3.1-8b&gpus=8&mb=1&ga=1&seq=131072&fw=torchtitan&shard=fsdp-full&ckpt=full";
  await expect(await ladderOf(page, plan)).toContainText("Context parallel 2");
  // The Trainer has no context parallelism: no such rung.
  await expect(await ladderOf(page, plan.replace("torchtitan", "hf-trainer"))).not.toContainText("Context parallel");
});

test("the fix ladder recomputes one block in k where the framework can and that is enough", async ({ page }, info) => {
  // Llama-3.1-8B on 8 × H100 under torchtitan, fully sharded, micro-batch 5 of 2,048 tokens, no recomputation:
  // recomputing every 4th block is enough, and cheaper than every block.
  const plan = "/?model=llama-3.1-8b&gpus=8&mb=5&ga=1&seq=2048&fw=torchtitan&shard=fsdp-full&ckpt=none";
  const ladder = await ladderOf(page, plan);
  if (hydrated(info)) await waitForHydration(page);
  await expect(ladder).toContainText("Activation checkpointing · applied to one block in 4");
  // The rung applies it (with the rungs above it): the plan fits, recomputing every 4th block.
  await ladder.getByRole("link", { name: /applied to one block in 4/ }).click();
  await expect(page.getByTestId("verdict")).toHaveText("Fits");
  await expect(page).toHaveURL(/ckpt=full/);
  await expect(page).toHaveURL(/ckpt_every=4/);
  // The Trainer has no such switch: every block.
  const trainer = await ladderOf(page, plan.replace("torchtitan", "hf-trainer"));
  await expect(trainer).toContainText("Activation checkpointing");
  await expect(trainer).not.toContainText("applied to one block in");
});

test("the runtime and architecture controls travel in the URL and change the plan, with or without JavaScript", async ({ page }, info) => {
  const plan = "/?model=llama-3.2-1b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=plain-pytorch&prec=bf16&mb=4&seq=2048";
  await page.goto(plan);
  if (hydrated(info)) await waitForHydration(page);
  const before = await deviceUsedGiB(page);
  // Another process holding 4 GiB of the same GPU.
  await page.getByTestId("other-mib").fill("4096");
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/other_mib=4096/);
  await expect.poll(() => deviceUsedGiB(page)).toBeGreaterThan(before + 3.9);
  // The architecture applies to a preset too, which then reads as custom dimensions.
  await page.getByTestId("arch").selectOption("encoder");
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/arch=encoder/);
  await expect(page.getByTestId("arch")).toHaveValue("encoder");
  await expect(page.getByTestId("model")).toHaveValue("custom");
});

test("charts are server-rendered SVG", async ({ page }) => {
  await page.goto("/?pp=4&gpus=8");
  for (const id of ["chart-breakdown", "chart-batch", "chart-seq"]) {
    await expect(page.getByTestId(id).locator("svg")).toHaveCount(1);
  }
  await expect(page.getByTestId("chart-breakdown")).toContainText("stage 4");
  await expect(page.getByTestId("chart-breakdown")).toContainText("capacity");
});

test("hydrated: the browser draws the same chart as the server, and redraws on change", async ({ page }, info) => {
  test.skip(!hydrated(info), "needs the WASM bundle");
  const url = "/?pp=2&gpus=8&mb=2";
  const ssr = await (await page.request.get(url)).text();
  await page.goto(url);
  await waitForHydration(page);
  const same = await page.evaluate((html) => {
    const doc = new DOMParser().parseFromString(html, "text/html");
    const server = doc.querySelector('[data-testid="chart-breakdown"]')!.innerHTML;
    const live = document.querySelector('[data-testid="chart-breakdown"]')!.innerHTML;
    return server === live;
  }, ssr);
  expect(same).toBe(true);
  const before = await page.getByTestId("chart-breakdown").innerHTML();
  await page.getByTestId("mb").fill("6");
  await expect(page.getByTestId("mb-value")).toHaveText("6");
  expect(await page.getByTestId("chart-breakdown").innerHTML()).not.toBe(before);
});

test("Chinese with lang=zh, in the server HTML and after hydration", async ({ page }, info) => {
  await page.goto("/?lang=zh&shard=ddp&mb=8");
  await expect(page.locator("html")).toHaveAttribute("lang", "zh-CN");
  await expect(page.getByTestId("verdict")).toHaveText("放不下（显存不足）");
  await expect(page.getByTestId("plan-form")).toContainText("梯度检查点");
  await expect(page.getByTestId("plan-form")).toContainText("混合精度");
  if (hydrated(info)) {
    await waitForHydration(page);
    await page.getByTestId("lang-en").click();
    await expect(page.getByTestId("verdict")).toHaveText("Does not fit");
    await expect(page).toHaveURL(/lang=en/);
  }
});

test("hydrated: a pasted config.json replaces the model, and bad JSON names the key", async ({ page }, info) => {
  test.skip(!hydrated(info), "needs the WASM bundle");
  await page.goto("/?gpus=1&shard=none&gpu=a100-sxm4-80gb");
  await waitForHydration(page);
  await page.locator("details.config-paste summary").click();
  await page.getByTestId("config-json").fill('{"model_type":"llama","hidden_size":2048}');
  await expect(page.getByTestId("config-error")).toContainText("num_hidden_layers");
  await page.getByTestId("config-json").fill(
    '{"model_type":"qwen2","hidden_size":896,"intermediate_size":4864,"num_attention_heads":14,"num_hidden_layers":24,"num_key_value_heads":2,"vocab_size":151936,"tie_word_embeddings":true}',
  );
  await expect(page.getByTestId("config-ok")).toContainText("0.494 B parameters");
  await expect(page.getByTestId("layers")).toHaveValue("24");
  await expect(page).toHaveURL(/hidden=896/);
  await expect(page.getByTestId("dropout")).not.toBeChecked();
  // The config's dropout sets the blocks' switch: GPT-2's shape with
  // resid_pdrop 0.0 (its learned positions alone would say 0.1), then 0.1.
  const gpt2 = (p: string) =>
    `{"model_type":"gpt2","n_embd":768,"n_layer":12,"n_head":12,"n_positions":1024,"vocab_size":50257,"resid_pdrop":${p}}`;
  await page.getByTestId("config-json").fill(gpt2("0.0"));
  await expect(page.getByTestId("config-ok")).toContainText("0.124 B parameters");
  await expect(page.getByTestId("dropout")).not.toBeChecked();
  await expect(page).toHaveURL(/dropout=0/);
  await page.getByTestId("config-json").fill(gpt2("0.1"));
  await expect(page.getByTestId("dropout")).toBeChecked();
  await expect(page).not.toHaveURL(/dropout=/);
  // Qwen2.5-VL-7B as its hub repository ships it: the language model's keys at
  // the top, the vision tower counted from vision_config.
  const before = await page.getByTestId("device-used").textContent();
  await page.getByTestId("config-json").fill(
    '{"model_type":"qwen2_5_vl","hidden_size":3584,"intermediate_size":18944,"num_attention_heads":28,"num_hidden_layers":28,"num_key_value_heads":4,"vocab_size":152064,"tie_word_embeddings":false,"vision_config":{"depth":32,"hidden_size":1280,"intermediate_size":3420,"num_heads":16,"in_chans":3,"out_hidden_size":3584,"patch_size":14,"spatial_merge_size":2,"temporal_patch_size":2}}',
  );
  await expect(page.getByTestId("config-ok")).toContainText("8.292 B parameters (0.677 B of them the vision encoder");
  await expect(page.getByTestId("vision")).toHaveValue("676550144");
  await expect(page).toHaveURL(/vision=676550144/);
  await expect(page.getByTestId("device-used")).not.toHaveText(before ?? "");
  // BLOOM has no SDPA path in transformers: its attention runs eager.
  await expect(page.getByTestId("attn")).not.toHaveValue("eager");
  await page.getByTestId("config-json").fill('{"model_type":"bloom","hidden_size":1024,"n_layer":24,"n_head":16,"vocab_size":250880}');
  await expect(page.getByTestId("config-ok")).toContainText("eager attention");
  await expect(page.getByTestId("attn")).toHaveValue("eager");
});

test("hydrated: the counter switch and copy link", async ({ page, context }, info) => {
  test.skip(!hydrated(info), "needs the WASM bundle");
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  await page.goto("/?mb=2");
  await waitForHydration(page);
  const used = await page.getByTestId("device-used").textContent();
  await page.getByTestId("counter").selectOption("allocated");
  await expect(page.getByTestId("device-used")).not.toHaveText(used ?? "");
  await page.getByTestId("copy-link").click();
  await expect(page.getByTestId("copy-link")).toHaveText("Link copied");
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  expect(copied).toContain("mb=2");
});

test("custom dimensions from the URL, editable in the form", async ({ page }) => {
  await page.goto("/?model=custom&layers=7&hidden=1000&heads=10&kv_heads=10&head_dim=100&ffn=4000&vocab=32000");
  await expect(page.getByTestId("model")).toHaveValue("custom");
  await expect(page.getByTestId("layers")).toHaveValue("7");
  await expect(page.getByTestId("verdict")).toHaveText("Fits");
  await expect(page.getByTestId("vision")).toHaveValue("0");
  // A vision encoder's weights, and a value that is not a count, named.
  await page.goto("/?model=custom&layers=7&hidden=1000&heads=10&kv_heads=10&head_dim=100&ffn=4000&vocab=32000&vision=400000000");
  await expect(page.getByTestId("vision")).toHaveValue("400000000");
  // A multimodal preset brings its encoder.
  await page.goto("/?model=qwen2.5-vl-7b");
  await expect(page.getByTestId("vision")).toHaveValue("676550144");
  await page.goto("/?model=custom&layers=7&hidden=1000&heads=10&kv_heads=10&head_dim=100&ffn=4000&vocab=32000&vision=lots");
  await expect(page.locator("body")).toContainText("`lots` is not a whole number of parameters");
});

/**
 * Types `value` into the number box `testId`: hydrated the URL follows at
 * once, without JavaScript the form is applied; either way the URL must then
 * match `url`.
 */
async function editNumber(page: Page, info: { project: { name: string } }, testId: string, value: string, url: RegExp) {
  if (hydrated(info)) await waitForHydration(page);
  await page.getByTestId(testId).fill(value);
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(url);
}

test("an MoE preset shows its shared experts and dense blocks, and editing them recomputes", async ({ page }, info) => {
  await page.goto("/?model=deepseek-moe-16b&gpu=h100-sxm-80gb&gpus=1&shard=none&mb=1&seq=1024");
  await expect(page.getByTestId("model")).toHaveValue("deepseek-moe-16b");
  await expect(page.getByTestId("experts")).toHaveValue("64");
  await expect(page.getByTestId("shared")).toHaveValue("2");
  await expect(page.getByTestId("dense")).toHaveValue("1");
  await expect(page.getByTestId("dense-ffn")).toHaveValue("10944");
  const withDense = await deviceUsedGiB(page);
  // Experts in the first block too: 66 expert MLPs (3 · 2048 · 1408 each)
  // instead of one 10944-wide MLP, some 0.5 B more parameters to train.
  await editNumber(page, info, "dense", "0", /dense=0/);
  await expect(page.getByTestId("dense")).toHaveValue("0");
  await expect.poll(() => deviceUsedGiB(page)).toBeGreaterThan(withDense);
});

test("latent attention: DeepSeek-V2-Lite shows its latent widths, and turning them off recomputes", async ({ page }, info) => {
  await page.goto("/?model=deepseek-v2-lite&gpu=h100-sxm-80gb&gpus=1&shard=none&mb=1&seq=1024");
  await expect(page.getByTestId("model")).toHaveValue("deepseek-v2-lite");
  await expect(page.getByTestId("head-dim")).toHaveValue("192");
  await expect(page.getByTestId("kv-rank")).toHaveValue("512");
  await expect(page.getByTestId("q-rank")).toHaveValue("0");
  await expect(page.getByTestId("rope-dim")).toHaveValue("64");
  await expect(page.getByTestId("v-dim")).toHaveValue("128");
  const latent = await deviceUsedGiB(page);
  // Ordinary attention of the same heads: q, k and v projections 192 wide a
  // head instead of the 512-wide latent, more parameters to train.
  await editNumber(page, info, "kv-rank", "0", /kv_rank=0/);
  await expect.poll(() => deviceUsedGiB(page)).toBeGreaterThan(latent);
});

test("hydrated: searching the presets picks a model", async ({ page }, info) => {
  test.skip(!hydrated(info), "needs the WASM bundle");
  await page.goto("/");
  await waitForHydration(page);
  await page.getByTestId("model-search").fill("Mistral-7B-v0.1");
  await expect(page.getByTestId("model")).toHaveValue("mistral-7b");
  await expect(page).toHaveURL(/model=mistral-7b/);
});

/** The verdict's device_used figure, in GiB (NaN until it renders). */
async function deviceUsedGiB(page: Page): Promise<number> {
  return parseFloat((await page.getByTestId("device-used").textContent()) ?? "NaN");
}

/** The band's allocated figure, in GiB (NaN until it renders). */
async function allocatedGiB(page: Page): Promise<number> {
  const band = (await page.getByTestId("band").textContent()) ?? "";
  return parseFloat(band.match(/allocated ([\d.]+) GiB/)?.[1] ?? "NaN");
}

/**
 * Sets a checkbox of the plan at `plan`: hydrated by clicking it (the URL must
 * then carry `param`), without JavaScript by loading the plan with `param`.
 */
async function setCheckbox(page: Page, info: { project: { name: string } }, plan: string, testId: string, on: boolean, param: string) {
  const box = page.getByTestId(testId);
  if (hydrated(info)) {
    await waitForHydration(page);
    if (on) await box.check();
    else await box.uncheck();
    await expect(page).toHaveURL(new RegExp(param));
  } else {
    await page.goto(`${plan}&${param}`);
    if (on) await expect(box).toBeChecked();
    else await expect(box).not.toBeChecked();
  }
}

/**
 * Chooses `value` in select `testId` (its URL key) of the plan at `plan`:
 * hydrated by selecting it (the URL must then carry `testId=value`), without
 * JavaScript by loading the plan with it.
 */
async function chooseOption(page: Page, info: { project: { name: string } }, plan: string, testId: string, value: string) {
  const param = `${testId}=${value}`;
  if (hydrated(info)) {
    await waitForHydration(page);
    await page.getByTestId(testId).selectOption(value);
    await expect(page).toHaveURL(new RegExp(param.replace(/\./g, "\\.")));
  } else {
    await page.goto(`${plan}&${param}`);
    await expect(page.getByTestId(testId)).toHaveValue(value);
  }
}

/**
 * Loads `plan`, checks that checkbox `testId` starts the other way, sets it to
 * `on` ({@link setCheckbox}) and checks that the breakdown row `row` changed.
 * Returns device_used before the change and a reader of it after.
 */
async function flipChangesRow(page: Page, info: { project: { name: string } }, plan: string, testId: string, on: boolean, param: string, row: string) {
  await page.goto(plan);
  const used = () => deviceUsedGiB(page);
  const rowBefore = await page.getByTestId(row).textContent();
  const usedBefore = await used();
  if (on) await expect(page.getByTestId(testId)).not.toBeChecked();
  else await expect(page.getByTestId(testId)).toBeChecked();
  await setCheckbox(page, info, plan, testId, on, param);
  await expect(page.getByTestId(row)).not.toHaveText(rowBefore ?? "");
  return { usedBefore, used };
}

test("bf16 optimizer states: the checkbox and the URL key agree, and Adam's moments take half the bytes", async ({ page }, info) => {
  // Llama-3.2-1B under torchtitan on one GPU, fp32 weights: AdamW's two fp32
  // moments are 8 bytes a parameter, 4 in bf16 — 1.24e9 × 4 B = 4.6 GiB less.
  const plan = "/?model=llama-3.2-1b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=torchtitan&prec=amp-bf16&mb=1&seq=2048";
  const { usedBefore, used } = await flipChangesRow(page, info, plan, "opt16", true, "opt16=1", "row-optimizer");
  await expect.poll(used).toBeLessThan(usedBefore - 4.0);
});

test("torch.compile: the checkbox and the URL key agree, and compiling keeps fewer activations", async ({ page }, info) => {
  const plan = "/?model=llama-3.2-1b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=plain-pytorch&prec=bf16&mb=4&seq=2048";
  const { usedBefore, used } = await flipChangesRow(page, info, plan, "compile", true, "compile=1", "row-activations");
  await expect.poll(used).toBeLessThan(usedBefore);
});

test("padded batches: the checkbox and the URL key agree, and SDPA's mask and expanded k/v add activations", async ({ page }, info) => {
  // Qwen2.5-0.5B under the Trainer, 8 × 1024: padding makes SDPA keep a
  // 16 MiB mask and 24 MiB of expanded k/v in each of its 24 blocks.
  const plan = "/?model=qwen2.5-0.5b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=hf-trainer&prec=amp-bf16&mb=8&seq=1024";
  const { usedBefore, used } = await flipChangesRow(page, info, plan, "pad", true, "pad=1", "row-activations");
  await expect.poll(used).toBeGreaterThan(usedBefore + 0.5);
});

test("block dropout: a GPT-2 plan starts with it on, turning it off keeps fewer activations, and a new preset re-seeds it", async ({ page }, info) => {
  // GPT-2's config.json trains with resid_pdrop 0.1: three 1-byte masks a
  // block (and eager attention's dropped-out scores) that Llama-style
  // models, which ship 0.0, do not keep.
  const plan = "/?model=gpt2&gpu=a100-sxm4-80gb&gpus=1&shard=none&fw=hf-trainer&prec=amp-bf16&mb=8&seq=1024";
  const { usedBefore, used } = await flipChangesRow(page, info, plan, "dropout", false, "dropout=0", "row-activations");
  await expect.poll(used).toBeLessThan(usedBefore);
  for (const [model, on] of [["bert-base", true], ["llama-3.2-1b", false]] as const) {
    await page.getByTestId("model").selectOption(model);
    if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
    await expect(page.getByTestId("model")).toHaveValue(model);
    if (on) await expect(page.getByTestId("dropout")).toBeChecked();
    else await expect(page.getByTestId("dropout")).not.toBeChecked();
  }
});

test("DDP bucket views: the checkbox and the URL key agree, and a step-bound peak loses one gradient copy", async ({ page }, info) => {
  // Llama-3.1-8B amp-bf16 under DDP with short sequences peaks at the step,
  // where the buckets sit beside the whole fp32 gradient.
  const plan = "/?shard=ddp&mb=1&seq=512";
  await page.goto(plan);
  const used = () => deviceUsedGiB(page);
  const copies = await used();
  await expect(page.getByTestId("bucket-view")).not.toBeChecked();
  await expect(page.getByTestId("ladder")).toContainText("gradient_as_bucket_view");
  await setCheckbox(page, info, plan, "bucket-view", true, "bucket_view=1");
  await expect.poll(used).toBeLessThan(copies - 10);
});

test("nn.DataParallel: the verdict is GPU 0's and names the replicas' peak, with or without JavaScript", async ({ page }, info) => {
  // Llama-3.2-1B amp-bf16 on 4 GPUs, checkpointed: under ZeRO-2 no replicas.
  const plan = "/?model=llama-3.2-1b&gpus=4&mb=1&seq=512&ckpt=full&prec=amp-bf16";
  await page.goto(plan);
  await expect(page.getByTestId("replica-peak")).toHaveCount(0);
  await chooseOption(page, info, plan, "shard", "data-parallel");
  const line = page.getByTestId("replica-peak");
  await expect(line).toContainText(/nn\.DataParallel's replicas\): [\d.]+ GiB device_used/);
  await expect(page.locator(".verdict .figure")).toContainText("GPU 0 (nn.DataParallel's output device)");
  // GPU 0 holds the optimizer states and the reduced gradients; a replica neither.
  const replica = parseFloat(((await line.textContent()) ?? "").match(/([\d.]+) GiB device_used/)?.[1] ?? "NaN");
  expect(replica).toBeLessThan(0.8 * (await deviceUsedGiB(page)));
});

test("QLoRA under PEFT: prepare_model_for_kbit_training is on by the framework, and turning it off travels in the URL", async ({ page }, info) => {
  const base =
    "/?model=llama-3.1-8b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=peft&prec=amp-bf16&mb=1&seq=2048&ft=qlora&targets=all-linear&rank=16&bits=4";
  // The preparation checkpoints the model too (use_gradient_checkpointing=True).
  await page.goto(base);
  await expect(page.getByTestId("ckpt")).toHaveValue("full");
  // Checkpointing kept on both ways, so that only the fp32 casts differ.
  const plan = `${base}&ckpt=full`;
  // On by default; off is not the framework's default, so the link must say
  // so; the embeddings, head and norms back in 16 bits change the weights.
  const { usedBefore, used } = await flipChangesRow(page, info, plan, "kbit32", false, "kbit32=0", "row-weights");
  await expect.poll(used).toBeLessThan(usedBefore);
});

test("LoRA variant and output head: the controls and the URL keys agree, and the breakdown follows", async ({ page }, info) => {
  const plan =
    "/?model=llama-3.2-3b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=plain-pytorch&prec=bf16&mb=4&seq=2048&ft=lora&targets=q%2Bv&rank=32";
  await page.goto(plan);
  const acts = await page.getByTestId("row-activations").textContent();
  const logits = await page.getByTestId("row-logits").textContent();
  await expect(page.getByTestId("lora-var")).toHaveValue("lora");
  await expect(page.getByTestId("head")).toHaveValue("lm");
  // A plain loop gets PEFT's default lora_dropout=0.
  await expect(page.getByTestId("lora-dropout")).not.toBeChecked();
  if (hydrated(info)) {
    await waitForHydration(page);
    await page.getByTestId("lora-var").selectOption("dora");
    await expect(page).toHaveURL(/lora_var=dora/);
  } else {
    await page.goto(plan + "&lora_var=dora");
    await expect(page.getByTestId("lora-var")).toHaveValue("dora");
  }
  // DoRA's magnitude keeps the base and LoRA outputs of q and v.
  await expect(page.getByTestId("row-activations")).not.toHaveText(acts ?? "");
  if (hydrated(info)) {
    await page.getByTestId("head").selectOption("classifier");
    await expect(page).toHaveURL(/head=classifier/);
  } else {
    await page.goto(plan + "&lora_var=dora&head=classifier");
    await expect(page.getByTestId("head")).toHaveValue("classifier");
  }
  // No vocab logits under a classification head.
  await expect(page.getByTestId("row-logits")).not.toHaveText(logits ?? "");
});

test("other PEFT methods: the method select, the trainable count and the URL keys agree, and the breakdown follows", async ({ page }, info) => {
  const plan =
    "/?model=llama-3.2-3b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=plain-pytorch&prec=bf16&mb=4&seq=768" +
    "&ft=adapter&trainable=194536000&targets=all-linear";
  await page.goto(plan);
  await expect(page.getByTestId("ft")).toHaveValue("adapter");
  await expect(page.getByTestId("adapter")).toHaveValue("generic");
  await expect(page.getByTestId("trainable")).toHaveValue("194536000");
  const acts = await page.getByTestId("row-activations").textContent();
  const weights = await page.getByTestId("row-weights").textContent();
  if (hydrated(info)) {
    await waitForHydration(page);
    await page.getByTestId("adapter").selectOption("osf-reconstruct");
    await expect(page).toHaveURL(/adapter=osf-reconstruct/);
  } else {
    await page.goto(plan + "&adapter=osf-reconstruct");
    await expect(page.getByTestId("adapter")).toHaveValue("osf-reconstruct");
  }
  // PEFT 0.18–0.20's OSF keeps each rebuilt weight and stores the frozen high-rank factors.
  await expect(page.getByTestId("row-activations")).not.toHaveText(acts ?? "");
  await expect(page.getByTestId("row-weights")).not.toHaveText(weights ?? "");
});

test("an encoder–decoder's target length shrinks the decoder's share, with or without JavaScript", async ({ page }, info) => {
  const plan = "/?model=t5-large&gpu=a100-sxm4-40gb&gpus=1&shard=none&mb=8&seq=512";
  await page.goto(plan);
  if (hydrated(info)) await waitForHydration(page);
  const before = await page.getByTestId("device-used").textContent();
  await expect(page.getByTestId("tgt")).toHaveValue("");
  await page.getByTestId("tgt").fill("16");
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/tgt=16/);
  await expect(page.getByTestId("device-used")).not.toHaveText(before ?? "");
  // Another kind of model drops it rather than refusing the plan.
  await page.goto(plan + "&tgt=16");
  if (hydrated(info)) await waitForHydration(page);
  await page.getByTestId("model").selectOption("llama-3.2-1b");
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByTestId("model")).toHaveValue("llama-3.2-1b");
  await expect(page.getByTestId("tgt")).toHaveValue("");
  // Hydrated, the URL follows the plan; without JavaScript the form sent the
  // old value along, which the server ignored.
  if (hydrated(info)) await expect(page).not.toHaveURL(/tgt=/);
  await expect(page.getByTestId("verdict")).toHaveText(/fit/i);
});

test("frozen layers and GaLore change the estimate, with or without JavaScript", async ({ page }, info) => {
  const plan = "/?model=llama-2-7b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=plain-pytorch&prec=bf16&mb=1&seq=1024";
  await page.goto(plan);
  if (hydrated(info)) await waitForHydration(page);
  const apply = async () => {
    if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  };
  const full = await page.getByTestId("device-used").textContent();
  await page.getByTestId("frozen").fill("16");
  await apply();
  await expect(page).toHaveURL(/frozen=16/);
  await expect(page.getByTestId("device-used")).not.toHaveText(full ?? "");
  const frozen = await page.getByTestId("device-used").textContent();
  await page.getByTestId("opt").selectOption("galore");
  await apply();
  await expect(page).toHaveURL(/opt=galore/);
  await expect(page.getByTestId("device-used")).not.toHaveText(frozen ?? "");
});

test("LLaMA-Adapter fills in its trainable count, which follows the method but not an entered count, with or without JavaScript", async ({ page }, info) => {
  const plan = "/?model=llama-2-7b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=plain-pytorch&prec=bf16&mb=1&seq=1024&ft=adapter";
  await page.goto(plan);
  if (hydrated(info)) await waitForHydration(page);
  const apply = async () => {
    if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  };
  await page.getByTestId("adapter").selectOption("llama-adapter");
  await apply();
  // LitGPT's count: 30 blocks × (10 prefix tokens × 4096 + 32 gates).
  await expect(page.getByTestId("trainable")).toHaveValue("1229760");
  // Hydrated, the URL follows the plan; without JavaScript it is what the form
  // sent (the empty count), which the server read as the method's own.
  if (hydrated(info)) await expect(page).toHaveURL(/trainable=1229760/);
  await page.getByTestId("adapter").selectOption("llama-adapter-v2");
  await apply();
  await expect(page.getByTestId("trainable")).toHaveValue("4279744");
  // An entered count stays when the method changes.
  await page.getByTestId("trainable").fill("5000000");
  await apply();
  await expect(page).toHaveURL(/trainable=5000000/);
  await page.getByTestId("adapter").selectOption("ia3");
  await apply();
  await expect(page).toHaveURL(/adapter=ia3/);
  await expect(page.getByTestId("trainable")).toHaveValue("5000000");
});

test("double-quantized NF4: the checkbox and the URL key agree, and the 4-bit base's weights shrink", async ({ page }, info) => {
  const plan =
    "/?model=llama-2-7b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=litgpt&prec=bf16&mb=1&seq=1024&ft=qlora&rank=8&bits=4";
  await page.goto(plan);
  const weights = await page.getByTestId("row-weights").textContent();
  await expect(page.getByTestId("dq")).not.toBeChecked();
  await setCheckbox(page, info, plan, "dq", true, "dq=1");
  // 0.047 bytes less per quantized weight: about 0.29 GiB on Llama-2-7B.
  await expect(page.getByTestId("row-weights")).not.toHaveText(weights ?? "");
});

test("reducing every micro-batch: the checkbox and the URL key agree, and FSDP under the Trainer drops the unsharded gradients", async ({ page }, info) => {
  // Llama-3.1-8B amp-bf16 on 8 × H100 with FSDP, accumulating 4 micro-batches:
  // under no_sync each rank keeps the full bf16 gradients (15 GiB; 7 GiB more
  // at the peak than reducing every micro-batch).
  const plan = "/?shard=fsdp-full&ga=4&ckpt=full&seq=2048";
  const { usedBefore, used } = await flipChangesRow(page, info, plan, "sync-each", true, "sync_each=1", "row-gradients");
  await expect.poll(used).toBeLessThan(usedBefore - 5);
});

test("bitsandbytes ≥ 0.43.2: the planner starts on a current release, and an older one keeps every 4-bit matmul's input", async ({ page }, info) => {
  // LitGPT's bf16-true QLoRA on Llama-2-7B: bitsandbytes 0.43.2 and later keep
  // no input of a frozen 4-bit matmul, and every framework's current release
  // runs one; before (LitGPT ≤ 0.5.4 pinned 0.42.0) each input was saved.
  const plan =
    "/?model=llama-2-7b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=litgpt&prec=bf16&mb=4&seq=2048&ft=qlora&rank=8&bits=4";
  const { usedBefore, used } = await flipChangesRow(page, info, plan, "bnb432", false, "bnb432=0", "row-activations");
  await expect.poll(used).toBeGreaterThan(usedBefore);
});

test("embeddings back in bf16 (TRL ≤ 0.21): the checkbox and the URL key agree, and a prepared base's embedding weighs half", async ({ page }, info) => {
  // PEFT's QLoRA recipe on Llama-3.2-1B under bf16 autocast: the preparation
  // leaves the tied 128,256 × 2,048 embedding fp32; TRL up to 0.21 put it back
  // in bf16, and the head's matmul then needs no 16-bit copy of it (0.98 GiB).
  const plan =
    "/?model=llama-3.2-1b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=peft&prec=amp-bf16&mb=4&seq=2048&ft=qlora&rank=16&bits=4&targets=all-linear";
  const { usedBefore, used } = await flipChangesRow(page, info, plan, "emb16", true, "emb16=1", "row-weights");
  await expect.poll(used).toBeLessThan(usedBefore - 0.8);
});

test("16-bit adapters: the checkbox and the URL key agree, and the adapters' states weigh half", async ({ page }, info) => {
  // QLoRA r64 on every linear of Llama-3.1-8B: 168 M adapter parameters, whose
  // AdamW states go from fp32 (8 bytes) to bf16 (4 bytes), 0.6 GiB less.
  const plan =
    "/?model=llama-3.1-8b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=peft&prec=amp-bf16&mb=1&seq=1024&ft=qlora&rank=64&bits=4&targets=all-linear";
  const { usedBefore, used } = await flipChangesRow(page, info, plan, "ad16", true, "ad16=1", "row-optimizer");
  await expect.poll(used).toBeLessThan(usedBefore - 0.5);
});

test("PyTorch release: the select and the URL key agree, and the releases that kept more keep more", async ({ page }, info) => {
  // BERT-large in fp32 with eager attention, 4 × 512: up to 1.10 softmax kept
  // its input, one more fp32 tensor of 16 · 512² scores in each of 24 blocks
  // (1.5 GiB).
  const bert = "/?model=bert-large&gpu=v100-sxm2-32gb&gpus=1&shard=none&fw=hf-trainer&prec=fp32&mb=4&seq=512&attn=eager";
  // Llama-3.2-1B in bf16, 4 × 2048: 1.13–2.1 kept mean's input, the fp32
  // square in each of 32 RMSNorms (1 GiB).
  const llama = "/?model=llama-3.2-1b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=plain-pytorch&prec=bf16&mb=4&seq=2048";
  for (const [plan, release, more] of [[bert, "1.10-older", 1.4], [llama, "1.13-2.1", 0.9]] as const) {
    await page.goto(plan);
    await expect(page.getByTestId("torch")).toHaveValue("current");
    const acts = await page.getByTestId("row-activations").textContent();
    const before = await deviceUsedGiB(page);
    if (hydrated(info)) {
      await waitForHydration(page);
      await page.getByTestId("torch").selectOption(release);
      await expect(page).toHaveURL(new RegExp(`torch=${release}`));
    } else {
      await page.goto(`${plan}&torch=${release}`);
      await expect(page.getByTestId("torch")).toHaveValue(release);
    }
    await expect(page.getByTestId("row-activations")).not.toHaveText(acts ?? "");
    await expect.poll(() => deviceUsedGiB(page)).toBeGreaterThan(before + more);
  }
});

test("transformers release: the select and the URL key agree, and 4.46–4.48's shifted copy raises the Trainer's allocated peak", async ({ page }, info) => {
  // Llama-3.1-8B LoRA under the Trainer, 2 × 4096, checkpointed: inside the
  // loss 4.46–4.48 also copy the shifted fp32 logits, 14 bytes per logit
  // against the 12 of backward's start, 2 × 8192 × 128,256 B = 1.96 GiB more
  // allocated. The reserve does not grow: backward's start already held 14
  // bytes a logit of segments (the dropped 16-bit output's beside its 12).
  const plan =
    "/?model=llama-3.1-8b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=hf-trainer&prec=bf16&mb=2&seq=4096&ckpt=full&ft=lora&targets=all-linear&rank=16";
  const allocated = () => allocatedGiB(page);
  await page.goto(plan);
  await expect(page.getByTestId("tf")).toHaveValue("current");
  const before = await allocated();
  const used = await deviceUsedGiB(page);
  expect(before).toBeGreaterThan(20);
  if (hydrated(info)) {
    await waitForHydration(page);
    await page.getByTestId("tf").selectOption("4.46-4.48");
    await expect(page).toHaveURL(/tf=4\.46-4\.48/);
  } else {
    await page.goto(`${plan}&tf=4.46-4.48`);
    await expect(page.getByTestId("tf")).toHaveValue("4.46-4.48");
  }
  await expect.poll(allocated).toBeGreaterThan(before + 1.5);
  expect(await deviceUsedGiB(page)).toBeCloseTo(used, 1);
});

test("torchtune release: 0.2's recipes copy the shifted fp32 logits and keep them through backward, raising the peak; 0.1–0.2 seed the standard loss", async ({ page }, info) => {
  // Llama-3.1-8B LoRA under torchtune's single-device recipe, 2 × 4096,
  // checkpointed, the standard loss (0.2 had no chunked one): the shifted
  // fp32 copy the recipe keeps is 2 × 4096 × 128,256 × 4 B = 3.91 GiB more
  // at backward's start.
  const plan =
    "/?model=llama-3.1-8b&gpu=h200-sxm-141gb&gpus=1&shard=none&fw=torchtune&prec=bf16&mb=2&seq=4096&ckpt=full&loss=standard&ft=lora&targets=all-linear&rank=16";
  const allocated = () => allocatedGiB(page);
  await page.goto(plan);
  await expect(page.getByTestId("ttr")).toHaveValue("current");
  const before = await allocated();
  expect(before).toBeGreaterThan(20);
  await chooseOption(page, info, plan, "ttr", "0.2");
  await expect.poll(allocated).toBeGreaterThan(before + 3.5);
  // Left at the profile's chunked loss, which 0.1–0.2 did not have, the
  // choice re-seeds the standard one: hydrated and through the form.
  await page.goto(plan.replace("&loss=standard", ""));
  if (hydrated(info)) await waitForHydration(page);
  await expect(page.getByTestId("loss")).toHaveValue("chunked-free");
  await page.getByTestId("ttr").selectOption("0.1");
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/ttr=0\.1/);
  await expect(page.getByTestId("loss")).toHaveValue("standard");
  // (The form sends every field; the hydrated URL only what differs.)
  if (hydrated(info)) expect(page.url()).not.toContain("loss=");
});

test("torchtitan release: up to 0.2.1 grouped k and v are repeated for attention, raising the peak without checkpointing", async ({ page }, info) => {
  // Llama-3.1-8B under torchtitan on 8 H200s, FSDP, 1 × 8192 without
  // checkpointing: repeated k and v keep 2 × 2 × (4096 − 1024) bytes more a
  // token in each of 32 blocks: 3.0 GiB.
  const plan =
    "/?model=llama-3.1-8b&gpu=h200-sxm-141gb&gpus=8&shard=fsdp-full&fw=torchtitan&prec=amp-bf16&mb=1&seq=8192&ckpt=none";
  const allocated = () => allocatedGiB(page);
  await page.goto(plan);
  await expect(page.getByTestId("ttn")).toHaveValue("current");
  const before = await allocated();
  expect(before).toBeGreaterThan(40);
  await chooseOption(page, info, plan, "ttn", "0.2.1-older");
  await expect.poll(allocated).toBeGreaterThan(before + 2.5);
});

test("TRL release: DPO under 0.19–0.28 drops the policy's logits once its log-probabilities are taken, lowering a pure-bf16 peak", async ({ page }, info) => {
  // Llama-3.2-1B, a DPO full fine-tune under TRL in pure bf16, 4 pairs ×
  // 2048, checkpointed, one GPU: 0.29–1.13's count holds both outputs and
  // the entropy's copy (26.27 GiB allocated); read as 0.19–0.28, 21.37 —
  // 0.24.0's code, replayed through the caching allocator, peaked at 21.38.
  const plan =
    "/?model=llama-3.2-1b&gpus=1&shard=none&fw=trl&prec=bf16&mb=4&seq=2048&ckpt=full&obj=dpo&loss=standard";
  const allocated = () => allocatedGiB(page);
  await page.goto(plan);
  await expect(page.getByTestId("trl")).toHaveValue("current");
  const before = await allocated();
  await chooseOption(page, info, plan, "trl", "0.19-0.28");
  await expect.poll(allocated).toBeLessThan(before - 3);
});

test("TRL release: DPO under 0.9–0.11 holds the policy's logits and the chosen half's NLL through the reference's pass, raising an AMP peak", async ({ page }, info) => {
  // Llama-3.2-1B, DPO with LoRA under TRL, the Trainer's AMP (fp32 logits),
  // 2 pairs × 2048, checkpointed, one GPU: the current release peaks at
  // backward's four fp32 logits-sized tensors (18.76 GiB allocated); 0.9–0.11
  // hold the logits, their log-softmax and the NLL's half through the
  // reference's logits and log-softmax, four and a half (20.72 GiB).
  const plan =
    "/?model=llama-3.2-1b&gpus=1&shard=none&fw=trl&prec=amp-bf16&mb=2&seq=2048&ckpt=full&obj=dpo&loss=standard&ft=lora&targets=all-linear&rank=16";
  const allocated = () => allocatedGiB(page);
  await page.goto(plan);
  await expect(page.getByTestId("trl")).toHaveValue("current");
  const before = await allocated();
  await chooseOption(page, info, plan, "trl", "0.9-0.11");
  await expect.poll(allocated).toBeGreaterThan(before + 1.5);
});

test("ZeRO++ hpZ: each GPU keeps a secondary shard of the weights over its node, and outside ZeRO-3 it is refused, with or without JavaScript", async ({ page }, info) => {
  // Llama-3.1-70B in bf16 under DeepSpeed ZeRO-3 on 64 GPUs: hpZ over a node
  // of 8 adds 2 bytes × 70.6e9 / 8 = 16.4 GiB of secondary shard to every GPU.
  const plan = "/?model=llama-3.1-70b&gpus=64&shard=zero3&fw=deepspeed&prec=bf16&mb=1&seq=2048&ckpt=full";
  await page.goto(plan);
  await expect(page.getByTestId("hpz")).toHaveValue("1");
  const before = await allocatedGiB(page);
  await editNumber(page, info, "hpz", "8", /hpz=8/);
  await expect.poll(() => allocatedGiB(page)).toBeGreaterThan(before + 16);
  await expect.poll(() => allocatedGiB(page)).toBeLessThan(before + 17);
  // Not a ZeRO-3 run: the control is marked with the reason.
  await page.goto("/?model=llama-3.1-70b&gpus=64&shard=zero2&fw=deepspeed&prec=bf16&hpz=8");
  await expect(page.getByTestId("plan-error")).toContainText("parallel.hpz_partition_size: ZeRO++'s hpZ partitions ZeRO-3's parameters");
  await expect(page.getByTestId("error-hpz")).toContainText("use zero3, or 1 to turn hpZ off");
});

test("choosing QLoRA brings its 4-bit base, with or without JavaScript", async ({ page }, info) => {
  // Without JavaScript the form sends the 16 bits it showed beside the new
  // method; `ft_prev` tells the server the method changed, so QLoRA's stand.
  await page.goto("/?model=llama-3.1-8b&gpus=1&shard=none&ft=lora&targets=all-linear&rank=16");
  if (hydrated(info)) await waitForHydration(page);
  await expect(page.getByTestId("bits")).toHaveValue("16");
  await page.getByTestId("ft").selectOption("qlora");
  // Hydrated the URL carries the new plan; without JavaScript it is the
  // submitted form, whose `ft_prev` makes the server read QLoRA's bits.
  if (hydrated(info)) await expect(page).toHaveURL(/bits=4/);
  else {
    await page.getByRole("button", { name: "Apply" }).click();
    await expect(page).toHaveURL(/ft_prev=lora/);
  }
  await expect(page.getByTestId("bits")).toHaveValue("4");
});

test("choosing Unsloth seeds its offloaded checkpointing, fused kernels and fused loss, with or without JavaScript", async ({ page }, info) => {
  const plan = "/?model=llama-3.1-8b&gpus=1&shard=none&mb=2&seq=4096&ft=lora&targets=all-linear&rank=16";
  await page.goto(plan);
  if (hydrated(info)) await waitForHydration(page);
  const used = () => deviceUsedGiB(page);
  const trainerUsed = await used();
  await expect(page.getByTestId("act-off")).not.toBeChecked();
  await expect(page.getByTestId("loss")).toHaveValue("standard");
  await page.getByTestId("fw").selectOption("unsloth");
  // Without JavaScript the form sends the Trainer's seeded values along;
  // `fw_prev` tells the server the framework changed, so Unsloth's stand.
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/fw=unsloth/);
  await expect(page.getByTestId("ckpt")).toHaveValue("full");
  await expect(page.getByTestId("act-off")).toBeChecked();
  await expect(page.getByTestId("fkern")).toBeChecked();
  await expect(page.getByTestId("loss")).toHaveValue("fused");
  await expect.poll(used).toBeLessThan(trainerUsed - 5);
  // Back to the Trainer: its own defaults again.
  await page.getByTestId("fw").selectOption("hf-trainer");
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByTestId("act-off")).not.toBeChecked();
  await expect(page.getByTestId("loss")).toHaveValue("standard");
  await expect.poll(used).toBeCloseTo(trainerUsed, 1);
});

test("choosing TRL seeds its own fused LM head (1.15 on), which keeps no logits, as its chunked NLL (1.7–1.14) does not either, with or without JavaScript", async ({ page }, info) => {
  // Llama-3.1-8B LoRA, 4 × 2048 on one GPU: the Trainer's loss keeps the
  // 16-bit logits and their fp32 copies (about 8 GiB at 128,256 entries);
  // TRL's tiles of 4,096 positions × 32,768 entries never hold them.
  const plan = "/?model=llama-3.1-8b&gpus=1&shard=none&mb=4&seq=2048&ft=lora&rank=16&ckpt=full";
  await page.goto(plan);
  if (hydrated(info)) await waitForHydration(page);
  const used = () => deviceUsedGiB(page);
  const trainerUsed = await used();
  await expect(page.getByTestId("loss")).toHaveValue("standard");
  await page.getByTestId("fw").selectOption("trl");
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/fw=trl/);
  await expect(page.getByTestId("loss")).toHaveValue("tiled-logprob");
  await expect.poll(used).toBeLessThan(trainerUsed - 4);
  // An older TRL took the model's logits: the Trainer's loss, in the URL.
  await page.getByTestId("loss").selectOption("standard");
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/loss=standard/);
  await expect.poll(used).toBeCloseTo(trainerUsed, 1);
  // TRL 1.7 to 1.14's SFT default, its chunked NLL (256 positions at a time,
  // checkpointed): no logits either.
  await page.getByTestId("loss").selectOption("chunked-nll");
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/loss=chunked-nll/);
  await expect.poll(used).toBeLessThan(trainerUsed - 4);
});

test("ORPO under TRL takes the model's logits (its loss follows the objective), and TRL's log-prob kernel (1.14 on) travels in the URL, with or without JavaScript", async ({ page }, info) => {
  // Llama-3.1-8B LoRA, 2 pairs × 2048 on one GPU under the Trainer's AMP:
  // TRL's SFT computes its loss in its fused head, its ORPO trainer from the
  // fp32 logits (4 × 2048 × 128,256 × 4 B = 3.9 GiB a tensor, three in
  // backward), and four and a half without the kernel (TRL ≤ 1.13).
  await page.goto("/?fw=trl&model=llama-3.1-8b&gpus=1&shard=none&prec=amp-bf16&mb=2&seq=2048&ft=lora&rank=16");
  if (hydrated(info)) await waitForHydration(page);
  const used = () => deviceUsedGiB(page);
  const sftUsed = await used();
  await expect(page.getByTestId("loss")).toHaveValue("tiled-logprob");
  await expect(page.getByTestId("lpk")).toBeChecked();
  await page.getByTestId("obj").selectOption("orpo");
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/obj=orpo/);
  await expect(page.getByTestId("loss")).toHaveValue("standard");
  await expect.poll(used).toBeGreaterThan(sftUsed + 12);
  const kernelUsed = await used();
  await page.getByTestId("lpk").uncheck();
  if (!hydrated(info)) await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/lpk=0/);
  await expect.poll(used).toBeGreaterThan(kernelUsed + 4);
});

test("a DPO full fine-tune is offered precomputed reference log-probs first, and the setting travels in the URL, with or without JavaScript", async ({ page }, info) => {
  // Llama-3.1-8B's DPO full fine-tune under TRL on one H100 does not fit:
  // its frozen reference model (16 GB in bf16) is the first thing to go, at
  // no cost in speed.
  await page.goto("/?fw=trl&gpus=1&shard=none&prec=bf16&obj=dpo&mb=1&seq=2048");
  if (hydrated(info)) await waitForHydration(page);
  await expect(page.getByTestId("verdict")).toHaveText("Does not fit");
  await expect(page.getByTestId("pre-ref")).not.toBeChecked();
  await expect(page.getByTestId("rung-0")).toContainText("Precompute the reference log-probs");
  const used = () => deviceUsedGiB(page);
  const before = await used();
  await page.getByTestId("rung-0").click();
  await expect(page).toHaveURL(/pre_ref=1/);
  await expect(page.getByTestId("pre-ref")).toBeChecked();
  await expect.poll(used).toBeLessThan(before - 14);
});

test("a GPU's memory can be changed (a MIG slice) or entered for a GPU not in the list, and it travels in the URL, with or without JavaScript", async ({ page }, info) => {
  await page.goto("/?gpus=1&shard=none");
  await expect(page.getByTestId("gpu")).toHaveValue("h100-sxm-80gb");
  await expect(page.getByTestId("gpu-mib")).toHaveValue("81559");
  await expect(page.getByTestId("capacity")).toHaveText("79.65 GiB");
  if (hydrated(info)) {
    await waitForHydration(page);
    // An H100 cut in half: the same card, 40 GiB.
    await page.getByTestId("gpu-mib").fill("40960");
    await expect(page).toHaveURL(/gpu_mib=40960/);
    await expect(page.getByTestId("capacity")).toHaveText("40.00 GiB");
    // Another GPU from the list brings its own memory back.
    await page.getByTestId("gpu").selectOption("a100-sxm4-80gb");
    await expect(page.getByTestId("gpu-mib")).toHaveValue("81920");
    await expect(page).not.toHaveURL(/gpu_mib/);
    // A card of one's own starts from the current figures.
    await page.getByTestId("gpu").selectOption("custom");
    await page.getByTestId("gpu-mib").fill("24576");
    await expect(page).toHaveURL(/gpu=custom.*gpu_mib=24576|gpu_mib=24576.*gpu=custom/);
    await expect(page.getByTestId("capacity")).toHaveText("24.00 GiB");
  } else {
    // The form sends the memory beside the GPU select.
    await page.getByTestId("gpu-mib").fill("40960");
    await page.getByRole("button", { name: "Apply" }).click();
    await expect(page).toHaveURL(/gpu_mib=40960/);
    await expect(page.getByTestId("capacity")).toHaveText("40.00 GiB");
    // A changed GPU select brings its own memory, not the one the form showed.
    await page.getByTestId("gpu").selectOption("a100-sxm4-80gb");
    await page.getByRole("button", { name: "Apply" }).click();
    await expect(page.getByTestId("gpu-mib")).toHaveValue("81920");
    // A card of one's own, and its name, survive another submission.
    await page.goto("/?gpus=1&shard=none&gpu=custom&gpu_mib=24576&gpu_name=My%20card");
    await expect(page.getByTestId("gpu")).toHaveValue("custom");
    await page.getByTestId("mb").fill("2");
    await page.getByRole("button", { name: "Apply" }).click();
    await expect(page).toHaveURL(/mb=2/);
    await expect(page).toHaveURL(/gpu_name=My(%20|\+)card/);
    await expect(page.getByTestId("capacity")).toHaveText("24.00 GiB");
  }
});

test("a pure bf16 full fine-tune under the Trainer's FSDP says Accelerate keeps its weights in fp32; AMP says nothing", async ({ page }, info) => {
  await page.goto("/?fw=hf-trainer&shard=fsdp-full&prec=bf16");
  if (hydrated(info)) await waitForHydration(page);
  const caveat = page.getByTestId("caveat");
  await expect(caveat).toHaveCount(1);
  await expect(caveat).toContainText("--bf16");
  await expect(caveat).toContainText("choose AMP");
  if (hydrated(info)) {
    // Recomputed in the browser: choosing AMP (what the run stores) clears it.
    await page.getByTestId("prec").selectOption("amp-bf16");
    await expect(caveat).toHaveCount(0);
    await page.getByTestId("prec").selectOption("bf16");
    await expect(caveat).toHaveCount(1);
  }
  // Not for DeepSpeed, whose engine keeps the module in 16 bits.
  await page.goto("/?fw=hf-trainer&shard=zero2&prec=bf16");
  await expect(page.getByTestId("verdict")).toBeVisible();
  await expect(caveat).toHaveCount(0);
});
