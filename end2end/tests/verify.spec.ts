import { test, expect, Page } from "@playwright/test";
import * as path from "path";
import * as fs from "fs";
import * as zlib from "zlib";

const hydrated = (info: { project: { name: string } }) => info.project.name === "hydrated";
const traces = path.resolve(__dirname, "../../../shared/fixtures/traces");

async function waitForHydration(page: Page, info: { project: { name: string } }) {
  if (hydrated(info)) {
    await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true", { timeout: 15_000 });
  }
}

/** Saves the example plan with micro-batch 16 (it does not fit 8 × H100) and returns its id. */
async function savePlan(page: Page, title: string) {
  const res = await page.request.post("/api/v1/plans", {
    headers: { "content-type": "application/json" },
    data: JSON.stringify({ title, plan: await examplePlan(page) }),
  });
  expect(res.status()).toBe(201);
  return (await res.json()).id as string;
}

let cachedPlan: any = null;
async function examplePlan(page: Page) {
  if (!cachedPlan) {
    // The planner's default plan with micro-batch 16, read back through the API's estimate.
    const p = JSON.parse(fs.readFileSync(path.resolve(__dirname, "../../cost-model/tests/fixtures/plan-v1.json"), "utf8"));
    p.training.micro_batch = 16;
    p.parallel.offload = "none";
    cachedPlan = p;
  }
  return cachedPlan;
}

/** Submits the verify form and returns the new verification the page lands on. */
async function submitVerification(page: Page, id: string) {
  await page.getByTestId("verify-submit").click();
  await expect(page).toHaveURL(new RegExp(`/p/${id}#trace-`));
  return page.getByTestId("verification").first();
}

test("upload an nvidia-smi CSV log: chart, verdict and findings", async ({ page }, info) => {
  const id = await savePlan(page, `verify-${info.project.name}-${Date.now()}`);
  await page.goto(`/p/${id}`);
  await waitForHydration(page, info);
  await expect(page.getByTestId("verify-panel")).toBeVisible();
  await expect(page.getByTestId("no-verifications")).toBeVisible();

  await page.getByTestId("verify-file").setInputFiles(path.join(traces, "smi_csv_04.txt"));
  if (hydrated(info)) {
    // Previewed in the browser before anything is sent.
    const preview = page.getByTestId("verify-preview");
    await expect(preview.getByTestId("trace-format")).toContainText("nvidia-smi-csv");
    await expect(preview.getByTestId("trace-chart").locator("svg")).toBeVisible();
    await expect(preview.getByTestId("trace-verdict")).toContainText("device_used");
  }
  const v = await submitVerification(page, id);
  await expect(v).toContainText("smi_csv_04.txt");
  await expect(v.getByTestId("trace-format")).toContainText("nvidia-smi-csv");
  await expect(v.getByTestId("trace-chart").locator("svg")).toBeVisible();
  await expect(v.getByTestId("trace-verdict")).toContainText(/over-estimated|under-estimated|held/);
  await expect(v.getByTestId("trace-gpus")).toContainText("24.49 GiB");
  // The log's cards are not the plan's: said before the verdict is trusted.
  const mismatch = v.locator('[data-kind="gpu-mismatch"]');
  await expect(mismatch).toContainText("GPUs 0, 1 are NVIDIA RTX A6000 with 49140 MiB");
  // Its link opens the same plan on the log's card, with the memory the log reports.
  await mismatch.getByTestId("finding-fix").click();
  await expect(page.getByTestId("gpu")).toHaveValue("a6000-48gb");
  await expect(page.getByTestId("capacity")).toHaveText("47.99 GiB");
});

test("upload a gzip-compressed log: the server reads the text inside", async ({ page }, info) => {
  const id = await savePlan(page, `gz-${info.project.name}-${Date.now()}`);
  await page.goto(`/p/${id}`);
  await waitForHydration(page, info);
  const gz = zlib.gzipSync(fs.readFileSync(path.join(traces, "smi_csv_04.txt")));
  await page.getByTestId("verify-file").setInputFiles({ name: "gpu.csv.gz", mimeType: "application/gzip", buffer: gz });
  if (hydrated(info)) {
    // Not previewed as text: left to the server.
    await expect(page.getByTestId("verify-note")).toContainText("gzip-compressed");
  }
  const v = await submitVerification(page, id);
  await expect(v).toContainText("gpu.csv.gz");
  await expect(v.getByTestId("trace-format")).toContainText("nvidia-smi-csv");
  await expect(v.getByTestId("trace-gpus")).toContainText("24.49 GiB");
});

test("upload a PyTorch memory snapshot: the peaks replayed from its history", async ({ page }, info) => {
  const id = await savePlan(page, `snap-${info.project.name}-${Date.now()}`);
  await page.goto(`/p/${id}`);
  await waitForHydration(page, info);
  const pickle = fs.readFileSync(path.resolve(__dirname, "../../cost-model/tests/fixtures/snapshots/train.pickle"));
  await page.getByTestId("verify-file").setInputFiles({ name: "dump_snapshot.pickle", mimeType: "application/octet-stream", buffer: pickle });
  if (hydrated(info)) {
    // Read as the bytes it is and previewed in the browser, as the server reads it.
    const preview = page.getByTestId("verify-preview");
    await expect(preview.getByTestId("trace-format")).toContainText("pytorch-memory-snapshot · 279 history entries");
    await expect(preview.getByTestId("trace-allocator")).toContainText("1.57 GiB");
  }
  const v = await submitVerification(page, id);
  await expect(v).toContainText("dump_snapshot.pickle");
  await expect(v.getByTestId("trace-format")).toContainText("pytorch-memory-snapshot · 279 history entries");
  await expect(v.getByTestId("trace-allocator")).toContainText("1.14 GiB");
  await expect(v.getByTestId("trace-allocator")).toContainText("1.57 GiB");
  await expect(v.getByTestId("trace-verdict")).toBeVisible();
});

test("upload a Jupyter notebook as saved: what its cells printed is the log", async ({ page }, info) => {
  const id = await savePlan(page, `nb-${info.project.name}-${Date.now()}`);
  await page.goto(`/p/${id}`);
  await waitForHydration(page, info);
  const table = fs.readFileSync(path.join(traces, "smi_table_07.txt"), "utf8");
  const nb = {
    cells: [
      { cell_type: "markdown", metadata: {}, source: ["# Llama pretraining\n"] },
      {
        cell_type: "code", execution_count: 2, metadata: {}, source: ["!nvidia-smi"],
        outputs: [{ output_type: "stream", name: "stdout", text: table.split(/(?<=\n)/) }],
      },
    ],
    metadata: {}, nbformat: 4, nbformat_minor: 5,
  };
  const buffer = Buffer.from(JSON.stringify(nb, null, 1));
  await page.getByTestId("verify-file").setInputFiles({ name: "run.ipynb", mimeType: "application/x-ipynb+json", buffer });
  if (hydrated(info)) {
    const preview = page.getByTestId("verify-preview");
    await expect(preview.getByTestId("trace-format")).toContainText("nvidia-smi-table");
    await expect(preview).toContainText("Jupyter notebook");
  }
  const v = await submitVerification(page, id);
  await expect(v).toContainText("run.ipynb");
  await expect(v.getByTestId("trace-format")).toContainText("nvidia-smi-table");
  await expect(v.getByTestId("trace-gpus")).toContainText("78.52 GiB");
  await expect(v).toContainText("the outputs of its 1 code cell(s) read as one log");
});

test("paste an OOM message: the diagnosis and the plan change that fits", async ({ page }, info) => {
  const id = await savePlan(page, `oom-${info.project.name}-${Date.now()}`);
  // The preview's parsers are a WASM chunk of their own, fetched with the first preview, not with the page.
  const chunks: string[] = [];
  page.on("request", (r) => {
    if (/\/pkg\/split_preview_report_.*\.wasm$/.test(new URL(r.url()).pathname)) chunks.push(r.url());
  });
  await page.goto(`/p/${id}`);
  await waitForHydration(page, info);
  expect(chunks).toEqual([]);
  await page.getByTestId("verify-text").fill(fs.readFileSync(path.join(traces, "oom_11.txt"), "utf8"));
  if (hydrated(info)) {
    await expect(page.getByTestId("verify-preview").locator('[data-kind="oom"]')).toContainText("tried to allocate");
    expect(chunks.length).toBe(1);
  }
  const v = await submitVerification(page, id);
  await expect(v.getByTestId("trace-oom")).toContainText("OOM");
  const oom = v.locator('[data-kind="oom"]');
  await expect(oom).toContainText("tried to allocate");
  const fix = oom.getByTestId("finding-fix");
  await expect(fix).toHaveAttribute("href", /^\/\?/);
  await fix.click();
  await expect(page.getByTestId("verdict")).toHaveText("Fits");
});

test("a paste that is no log is refused with the known formats", async ({ page }, info) => {
  const id = await savePlan(page, `bad-${info.project.name}-${Date.now()}`);
  await page.goto(`/p/${id}`);
  await waitForHydration(page, info);
  await page.getByTestId("verify-text").fill("hello\nthis is not a log\n");
  if (hydrated(info)) {
    await expect(page.getByTestId("verify-preview-error")).toContainText("known formats");
  }
  await page.getByTestId("verify-submit").click();
  await expect(page.getByTestId("verify-error")).toContainText("known formats");
});

test("paste the Trainer's memory metrics: the figures it states are shown", async ({ page }, info) => {
  const id = await savePlan(page, `hf-${info.project.name}-${Date.now()}`);
  await page.goto(`/p/${id}`);
  await waitForHydration(page, info);
  await page.getByTestId("verify-text").fill(fs.readFileSync(path.join(traces, "hf_trainer_mem_01.txt"), "utf8"));
  if (hydrated(info)) {
    await expect(page.getByTestId("verify-preview").getByTestId("trace-notes")).toContainText("train_mem_gpu_alloc_delta");
  }
  const v = await submitVerification(page, id);
  await expect(v.getByTestId("trace-format")).toContainText("hf-trainer-metrics");
  const notes = v.getByTestId("trace-notes");
  await expect(notes).toContainText("train_mem_gpu_peaked_delta");
  // init + train alloc + train peaked deltas: 230 + 693 + 7 MiB.
  await expect(notes).toContainText(/train peak allocated[^\n]*: 0\.91 GiB/);
});

test("paste an nvidia-smi table: the processes it lists are shown", async ({ page }, info) => {
  const id = await savePlan(page, `procs-${info.project.name}-${Date.now()}`);
  await page.goto(`/p/${id}`);
  await waitForHydration(page, info);
  await page.getByTestId("verify-text").fill(fs.readFileSync(path.join(traces, "smi_table_03.txt"), "utf8"));
  if (hydrated(info)) {
    await expect(page.getByTestId("verify-preview").getByTestId("trace-processes")).toContainText("tritonserver");
  }
  const v = await submitVerification(page, id);
  const procs = v.getByTestId("trace-processes");
  await expect(procs).toContainText("tritonserver");
  await expect(procs).toContainText("17500");
  // 4162 MiB
  await expect(procs).toContainText("4.06 GiB");
});

test("a pipelined plan's verification compares each GPU with its own stage", async ({ page }, info) => {
  // Two pipeline stages over the node's eight GPUs (Megatron-LM, 1F1B): GPUs
  // 0–3 run the first stage, 4–7 the second, each with a peak of its own.
  const plan = JSON.parse(JSON.stringify(await examplePlan(page)));
  plan.framework = "megatron";
  plan.parallel.sharding = "ddp";
  plan.parallel.pp = 2;
  plan.training.micro_batch = 1;
  plan.training.grad_accum = 8;
  const res = await page.request.post("/api/v1/plans", {
    headers: { "content-type": "application/json" },
    data: JSON.stringify({ title: `pp-${info.project.name}-${Date.now()}`, plan }),
  });
  expect(res.status()).toBe(201);
  const id = (await res.json()).id as string;
  await page.goto(`/p/${id}`);
  await waitForHydration(page, info);
  // A Megatron-DeepSpeed run's table: GPUs 0–3 near 72–79 GiB, 4–7 near 58.
  await page.getByTestId("verify-text").fill(fs.readFileSync(path.join(traces, "smi_table_07.txt"), "utf8"));
  const v = await submitVerification(page, id);
  const cells = v.getByTestId("gpu-verdict");
  await expect(cells).toHaveCount(8);
  for (let i = 0; i < 8; i++) {
    await expect(cells.nth(i)).toContainText(`stage ${i < 4 ? 0 : 1}: `);
  }
  await expect(v.getByTestId("trace-verdict")).toContainText("(pipeline stage ");
});

test("on a phone a verification's notes wrap: the page does not scroll sideways", async ({ page }, info) => {
  const id = await savePlan(page, `phone-${info.project.name}-${Date.now()}`);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`/p/${id}`);
  await waitForHydration(page, info);
  // A headerless logging query: its note quotes the 13-field list unbroken.
  await page.getByTestId("verify-text").fill(fs.readFileSync(path.join(traces, "smi_csv_07.txt"), "utf8"));
  const v = await submitVerification(page, id);
  await expect(v).toContainText("pci.bus_id,driver_version");
  const [scroll, client] = await page.evaluate(() => [
    document.documentElement.scrollWidth,
    document.documentElement.clientWidth,
  ]);
  expect(scroll).toBeLessThanOrEqual(client);
});

test("a log in runs of alike GPUs under a plan without a pipeline is read as stages, with the plan in that many", async ({ page }, info) => {
  const id = await savePlan(page, `stages-${info.project.name}-${Date.now()}`);
  await page.goto(`/p/${id}`);
  await waitForHydration(page, info);
  await page.getByTestId("verify-text").fill(fs.readFileSync(path.join(traces, "smi_table_07.txt"), "utf8"));
  const v = await submitVerification(page, id);
  const stages = v.locator('[data-kind="stages"]');
  await expect(stages).toContainText("2 runs of 4 (GPUs 0–3 at 72.25–78.52 GiB, GPUs 4–7 at 58.34–58.43 GiB)");
  await stages.getByTestId("finding-fix").click();
  await expect(page.getByTestId("pp")).toHaveValue("2");
});
