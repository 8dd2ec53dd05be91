//! Verification: upload or paste what the run printed; the browser previews
//! the parse (cost-model in WASM) before sending; the server stores the trace
//! with the saved plan; each stored verification shows the measured memory
//! against the plan, the verdict and the findings.

use crate::api::{format_utc, TraceView};
use crate::charts::trace_svg;
use crate::i18n::use_lang;
use cost_model::trace::findings::{report, Status, VerifyReport};
use cost_model::trace::{self, Format};
use cost_model::Plan;
use leptos::html;
use leptos::lazy;
use leptos::prelude::*;

/// Files larger than this are not read in the browser for the preview (the
/// server still parses them).
const PREVIEW_MAX_BYTES: f64 = 16.0 * 1024.0 * 1024.0;

fn mib(v: Option<f64>) -> String {
    v.map(|x| format!("{:.2} GiB", x / 1024.0))
        .unwrap_or_else(|| "—".into())
}

/// One parsed trace: chart, verdict, figures and findings.
#[component]
pub fn ReportView(report: VerifyReport, capacity_mib: f64) -> impl IntoView {
    let lang = use_lang();
    let predicted = report
        .verdict
        .as_ref()
        .filter(|v| v.counter == "device_used")
        .map(|v| (v.predicted_mib, v.band_low_mib, v.band_high_mib));
    // The capacity of the GPUs that ran (as the tool reported it), else the plan's.
    let capacity = report
        .gpus
        .iter()
        .filter_map(|g| g.total_mib)
        .reduce(f64::max)
        .unwrap_or(capacity_mib);
    let svg = {
        let l = lang.get_untracked();
        trace_svg(
            &report,
            predicted,
            Some(capacity),
            (l.t("time"), l.t("plan"), l.t("capacity")),
        )
    };
    let verdict = report.verdict.clone().map(|v| {
        let class = match v.overall {
            Status::Matches => "fits",
            _ => "oom",
        };
        let label = match v.overall {
            Status::Matches => "The plan held",
            Status::UnderEstimated => "Plan under-estimated",
            Status::OverEstimated => "Plan over-estimated",
        };
        view! {
            <p class=format!("verdict-line {class}") data-testid="trace-verdict">
                <strong>{move || lang.get().t(label).to_string()}</strong>
                ": "
                {v.summary.clone()}
            </p>
        }
    });
    let gpus = report.gpus.clone();
    // Per-GPU verdicts (device-level traces), by GPU index.
    // A pipelined plan's GPU is compared with its own stage's peak, and an
    // nn.DataParallel replica with the replicas', which the cell names.
    let l = lang.get_untracked();
    let per_gpu: Vec<(u32, String)> = report
        .verdict
        .iter()
        .filter(|v| v.counter == "device_used")
        .flat_map(|v| v.gpus.iter())
        .filter_map(|g| {
            let status = l.t(g.status.id());
            let stage = if g.replica {
                format!("{}: ", l.t("replica"))
            } else {
                g.stage
                    .map(|s| format!("{} {s}: ", l.t("stage")))
                    .unwrap_or_default()
            };
            g.gpu.map(|i| {
                (
                    i,
                    format!(
                        "{stage}{status} ({:+.2} GiB, {:+.1} %)",
                        g.diff_mib / 1024.0,
                        g.diff_pct
                    ),
                )
            })
        })
        .collect();
    let has_verdicts = !per_gpu.is_empty();
    let ooms = report.oom.clone();
    let allocator = report.allocator.clone();
    let findings = report.findings.clone();
    let warnings = report.warnings.clone();
    let notes = report.notes.clone();
    // The processes table, as far as it helps (a node of many ranks and
    // workers can list hundreds; the API's JSON lists them all).
    const PROCESSES_SHOWN: usize = 16;
    let mut processes: Vec<_> = report
        .processes
        .iter()
        .filter(|p| p.used_mib.is_some())
        .cloned()
        .collect();
    let more_processes = processes.len().saturating_sub(PROCESSES_SHOWN);
    processes.truncate(PROCESSES_SHOWN);
    view! {
        <div class="trace-report">
            <p class="meta" data-testid="trace-format">
                {report.format.id()}
                {format!(" · {} ", report.lines)}
                {move || lang.get().t(report.format.count_unit()).to_string()}
            </p>
            {verdict}
            {(!svg.is_empty() && !gpus.is_empty())
                .then(|| view! { <div class="chart" data-testid="trace-chart" inner_html=svg.clone()></div> })}
            {(!gpus.is_empty())
                .then(|| {
                    view! {
                        <div class="table-wrap">
                            <table class="plans-table" data-testid="trace-gpus">
                                <thead>
                                    <tr>
                                        <th>"GPU"</th>
                                        <th>{move || lang.get().t("Name")}</th>
                                        <th>{move || lang.get().t("Peak used")}</th>
                                        <th>{move || lang.get().t("Total")}</th>
                                        <th>{move || lang.get().t("Samples")}</th>
                                        {has_verdicts
                                            .then(|| view! { <th>{move || lang.get().t("Against the plan")}</th> })}
                                    </tr>
                                </thead>
                                <tbody>
                                    {gpus
                                        .iter()
                                        .map(|g| {
                                            view! {
                                                <tr>
                                                    <td>
                                                        {g.index}
                                                        {g.mig.clone().map(|m| format!(" ({m})"))}
                                                    </td>
                                                    <td>{g.name.clone().unwrap_or_default()}</td>
                                                    <td>{mib(g.peak_used_mib)}</td>
                                                    <td>{mib(g.total_mib)}</td>
                                                    <td>{g.samples}</td>
                                                    {has_verdicts
                                                        .then(|| {
                                                            let v = per_gpu
                                                                .iter()
                                                                .find(|(i, _)| *i == g.index && g.mig.is_none())
                                                                .map(|(_, s)| s.clone())
                                                                .unwrap_or_else(|| l.t("idle — not compared").to_string());
                                                            view! { <td data-testid="gpu-verdict">{v}</td> }
                                                        })}
                                                </tr>
                                            }
                                        })
                                        .collect_view()}
                                </tbody>
                            </table>
                        </div>
                    }
                })}
            {(!processes.is_empty())
                .then(|| {
                    view! {
                        <div class="table-wrap">
                            <table class="plans-table" data-testid="trace-processes">
                                <thead>
                                    <tr>
                                        <th>"GPU"</th>
                                        <th>"PID"</th>
                                        <th>{move || lang.get().t("Process")}</th>
                                        <th>{move || lang.get().t("Used")}</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {processes
                                        .iter()
                                        .map(|p| {
                                            view! {
                                                <tr>
                                                    <td>{p.gpu.map(|g| g.to_string()).unwrap_or_else(|| "?".into())}</td>
                                                    <td>{p.pid.map(|x| x.to_string()).unwrap_or_default()}</td>
                                                    <td>{p.name.clone()}</td>
                                                    <td>{mib(p.used_mib)}</td>
                                                </tr>
                                            }
                                        })
                                        .collect_view()}
                                </tbody>
                            </table>
                            {(more_processes > 0)
                                .then(|| {
                                    view! {
                                        <p class="meta">
                                            {format!("+{more_processes} ")}
                                            {move || lang.get().t("more processes").to_string()}
                                        </p>
                                    }
                                })}
                        </div>
                    }
                })}
            {allocator
                .map(|a| {
                    view! {
                        <p data-testid="trace-allocator">
                            {move || lang.get().t("PyTorch allocator peak: allocated").to_string()}
                            " "
                            {mib(a.peak_allocated_mib)}
                            ", "
                            {move || lang.get().t("reserved").to_string()}
                            " "
                            {mib(a.peak_reserved_mib)}
                            {(a.current_allocated_mib.is_some() || a.current_reserved_mib.is_some())
                                .then(|| {
                                    view! {
                                        " ("
                                        {move || lang.get().t("last reading: allocated").to_string()}
                                        " "
                                        {mib(a.current_allocated_mib)}
                                        ", "
                                        {move || lang.get().t("reserved").to_string()}
                                        " "
                                        {mib(a.current_reserved_mib)}
                                        ")"
                                    }
                                })}
                        </p>
                    }
                })}
            {(!notes.is_empty())
                .then(|| {
                    view! {
                        <ul class="trace-notes" data-testid="trace-notes">
                            {notes
                                .into_iter()
                                .map(|n| view! { <li>{format!("{}: {}", n.label, mib(Some(n.mib)))}</li> })
                                .collect_view()}
                        </ul>
                    }
                })}
            {ooms
                .into_iter()
                .map(|o| {
                    view! {
                        <p class="error" data-testid="trace-oom">
                            {format!(
                                "OOM (line {}): tried {} · capacity {} · free {} · allocated {} · reserved {}",
                                o.line,
                                mib(o.tried_to_allocate_mib),
                                mib(o.capacity_mib),
                                mib(o.free_mib),
                                mib(o.allocated_by_pytorch_mib),
                                mib(o.reserved_by_pytorch_mib),
                            )}
                        </p>
                    }
                })
                .collect_view()}
            {(!findings.is_empty())
                .then(|| {
                    view! {
                        <ul class="findings">
                            {findings
                                .into_iter()
                                .map(|f| {
                                    let label = match f.kind.as_str() {
                                        "gpu-mismatch" => "Open the plan on the log's GPU",
                                        "stages" => "Open the plan with these pipeline stages",
                                        _ => "Open the plan that fits",
                                    };
                                    let fix = f.fix_query.clone().map(|q| {
                                        view! {
                                            " "
                                            <a href=format!("/?{q}") data-testid="finding-fix">
                                                {move || lang.get().t(label)}
                                            </a>
                                        }
                                    });
                                    view! {
                                        <li data-testid="finding" data-kind=f.kind.clone()>
                                            <strong>{f.kind.clone()}</strong>
                                            {f.gpu.map(|g| format!(" (GPU {g})"))}
                                            ": "
                                            {f.detail.clone()}
                                            {fix}
                                        </li>
                                    }
                                })
                                .collect_view()}
                        </ul>
                    }
                })}
            {warnings
                .into_iter()
                .map(|w| view! { <p class="note">{w}</p> })
                .collect_view()}
        </div>
    }
}

/// The upload preview: `body` parsed and compared with `plan`, or why it
/// could not be. A function of its own WASM chunk (`#[lazy]`, built by
/// `cargo leptos build --split`): the trace parsers and the findings are
/// fetched with the first preview, not with every page (docs/BENCHMARKS.md,
/// "WASM bundle"). On the server it is a plain call.
#[lazy]
fn preview_report(
    body: Vec<u8>,
    format: String,
    columns: String,
    plan: Plan,
) -> Result<VerifyReport, String> {
    let opts = crate::api::trace_options(&format, &columns).map_err(|e| e.to_string())?;
    trace::parse_reader(&body[..], &opts)
        .map(|t| report(&t, Some(&plan)))
        .map_err(|e| e.to_string())
}

/// The upload panel and the list of stored verifications of a saved plan.
#[component]
pub fn VerifyPanel(
    plan_id: String,
    plan: Plan,
    error: Option<String>,
    /// The stored verifications, read with the plan (one request, one query).
    traces: Vec<TraceView>,
) -> impl IntoView {
    let lang = use_lang();
    let text = RwSignal::new(String::new());
    // The chosen file's bytes (a memory snapshot is binary; a text file is
    // read as its bytes too, UTF-16 and all, as the server reads it).
    let file_body = RwSignal::new(None::<Vec<u8>>);
    let note = RwSignal::new(None::<String>);
    let format = RwSignal::new("auto".to_string());
    let columns = RwSignal::new(String::new());
    let capacity = plan.gpu.capacity_mib as f64;
    let preview_plan = plan.clone();
    // Effects run in the browser only (the server renders the panel before
    // anything is pasted); the parsers load with the first preview. A result
    // lands only if no later input has started a newer parse meanwhile.
    let preview = RwSignal::new(None::<Result<VerifyReport, String>>);
    let generation = StoredValue::new(0u64);
    Effect::new(move |_| {
        let body = file_body.get().unwrap_or_else(|| text.get().into_bytes());
        let (format, columns, plan) = (format.get(), columns.get(), preview_plan.clone());
        generation.update_value(|g| *g += 1);
        let this = generation.get_value();
        // Nothing to parse: no chunk to fetch.
        if body.iter().all(u8::is_ascii_whitespace) {
            preview.set(None);
            return;
        }
        leptos::task::spawn_local(async move {
            let r = preview_report(body, format, columns, plan).await;
            // The page may have gone meanwhile: then nothing is set.
            if generation.try_get_value() == Some(this) {
                preview.try_set(Some(r));
            }
        });
    });
    let file_input = NodeRef::<html::Input>::new();
    let action = format!("/p/{plan_id}/traces");
    view! {
        <section class="verify" id="verify" data-testid="verify-panel">
            <h2>{move || lang.get().t("Verify against the real run")}</h2>
            <p class="hint">
                {move || {
                    lang.get()
                        .t(
                            "Upload or paste what the run printed, plain or gzip-compressed: nvidia-smi (table, --query-gpu CSV, dmon, pmon, -q, -q -x), nvitop, gpustat, rocm-smi, amd-smi, Ascend npu-smi, DCGM (dcgm-exporter, dcgmi dmon); a PyTorch OOM message, memory_summary(), memory_stats() or list_gpu_processes(), your script's max_memory_allocated print or the Transformers docs' GPU memory occupied; the memory lines of DeepSpeed, Megatron, the Trainer, torchtitan, torchtune, axolotl, LLaMA-Factory, ms-swift, XTuner (mmengine), verl, Composer, Unsloth or LitGPT; a W&B run's system metrics or Lightning's DeviceStatsMonitor as CSV; a PyTorch memory snapshot (the pickle torch.cuda.memory._dump_snapshot() writes).",
                        )
                }}
            </p>
            {error.map(|e| view! { <p class="error" data-testid="verify-error">{e}</p> })}
            <form
                method="post"
                enctype="multipart/form-data"
                action=action
                class="verify-form"
                on:dragover=|ev| ev.prevent_default()
                on:drop=move |ev| on_drop(ev, file_input, file_body, note)
            >
                <label>
                    {move || lang.get().t("Log file")}
                    <input
                        type="file"
                        name="trace"
                        node_ref=file_input
                        data-testid="verify-file"
                        on:change=move |_| read_file(file_input, file_body, note)
                    />
                </label>
                <label>
                    {move || lang.get().t("or paste it here (drop a file anywhere on this form)")}
                    <textarea
                        name="text"
                        rows="8"
                        spellcheck="false"
                        data-testid="verify-text"
                        on:input=move |ev| text.set(event_target_value(&ev))
                    ></textarea>
                </label>
                <div class="verify-options">
                    <label>
                        {move || lang.get().t("Format")}
                        <select
                            name="format"
                            data-testid="verify-format"
                            on:change=move |ev| format.set(event_target_value(&ev))
                        >
                            <option value="auto">{move || lang.get().t("detect")}</option>
                            {Format::ALL
                                .iter()
                                .map(|f| view! { <option value=f.id()>{f.id()}</option> })
                                .collect_view()}
                        </select>
                    </label>
                    <label>
                        {move || lang.get().t("CSV columns (headerless logs only)")}
                        <input
                            name="columns"
                            placeholder="timestamp,index,memory.used,memory.total"
                            on:input=move |ev| columns.set(event_target_value(&ev))
                        />
                    </label>
                </div>
                <button type="submit" class="button" data-testid="verify-submit">
                    {move || lang.get().t("Attach to this plan")}
                </button>
            </form>
            {move || note.get().map(|n| view! { <p class="note" data-testid="verify-note">{n}</p> })}
            {move || {
                preview
                    .get()
                    .map(|r| match r {
                        Ok(rep) => {
                            view! {
                                <div class="preview" data-testid="verify-preview">
                                    <h3>{move || lang.get().t("Preview (not saved yet)")}</h3>
                                    <ReportView report=rep capacity_mib=capacity />
                                </div>
                            }
                                .into_any()
                        }
                        Err(e) => {
                            view! {
                                <p class="error" data-testid="verify-preview-error">
                                    {e}
                                </p>
                            }
                                .into_any()
                        }
                    })
            }}
            <Verifications list=traces capacity_mib=capacity />
        </section>
    }
}

#[component]
fn Verifications(list: Vec<TraceView>, capacity_mib: f64) -> impl IntoView {
    let lang = use_lang();
    if list.is_empty() {
        return view! {
            <p class="note" data-testid="no-verifications">
                {move || lang.get().t("No verification attached yet.")}
            </p>
        }
        .into_any();
    }
    view! {
        <h3>{move || lang.get().t("Verifications")}</h3>
        {list
            .into_iter()
            .map(|t| {
                view! {
                    <article class="verification" id=format!("trace-{}", t.id) data-testid="verification">
                        <p class="meta">
                            {if t.filename.is_empty() { "pasted text".to_string() } else { t.filename.clone() }}
                            {format!(" · {} · {:.1} KiB", format_utc(t.created_at_ms), t.raw_bytes as f64 / 1024.0)}
                        </p>
                        <ReportView report=t.report capacity_mib />
                    </article>
                }
            })
            .collect_view()}
    }
        .into_any()
}

#[cfg(feature = "hydrate")]
fn read_into(file: web_sys::File, into: RwSignal<Option<Vec<u8>>>, note: RwSignal<Option<String>>) {
    if file.size() > PREVIEW_MAX_BYTES {
        into.set(None);
        note.set(Some(format!(
            "{}: {:.0} MiB — too large to preview here; the server parses it when attached",
            file.name(),
            file.size() / 1048576.0
        )));
        return;
    }
    if file.name().to_ascii_lowercase().ends_with(".gz") {
        into.set(None);
        note.set(Some(format!(
            "{}: gzip-compressed — the server decompresses and parses it when attached",
            file.name()
        )));
        return;
    }
    note.set(None);
    let promise = file.array_buffer();
    wasm_bindgen_futures::spawn_local(async move {
        if let Ok(v) = wasm_bindgen_futures::JsFuture::from(promise).await {
            into.set(Some(js_sys::Uint8Array::new(&v).to_vec()));
        }
    });
}

#[cfg(feature = "hydrate")]
fn read_file(
    input: NodeRef<html::Input>,
    into: RwSignal<Option<Vec<u8>>>,
    note: RwSignal<Option<String>>,
) {
    match input.get().and_then(|i| i.files()).and_then(|f| f.get(0)) {
        Some(file) => read_into(file, into, note),
        None => into.set(None),
    }
}

#[cfg(feature = "hydrate")]
fn on_drop(
    ev: web_sys::DragEvent,
    input: NodeRef<html::Input>,
    into: RwSignal<Option<Vec<u8>>>,
    note: RwSignal<Option<String>>,
) {
    let Some(files) = ev.data_transfer().and_then(|d| d.files()) else {
        return;
    };
    if files.length() == 0 {
        return;
    }
    ev.prevent_default();
    if let Some(i) = input.get() {
        i.set_files(Some(&files));
    }
    if let Some(file) = files.get(0) {
        read_into(file, into, note);
    }
}

#[cfg(not(feature = "hydrate"))]
fn read_file(
    _input: NodeRef<html::Input>,
    _into: RwSignal<Option<Vec<u8>>>,
    _note: RwSignal<Option<String>>,
) {
    let _ = PREVIEW_MAX_BYTES;
}

#[cfg(not(feature = "hydrate"))]
fn on_drop(
    _ev: leptos::ev::DragEvent,
    _input: NodeRef<html::Input>,
    _into: RwSignal<Option<Vec<u8>>>,
    _note: RwSignal<Option<String>>,
) {
}
