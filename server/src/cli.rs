//! Command-line interface (exact interface: other tools depend on it).

use clap::{Args, Parser, Subcommand};
use cost_model::{estimate, Plan};
use std::path::PathBuf;
use std::process::ExitCode;

/// `println!` that ends the command quietly when the reader of standard output
/// has gone (`memplan calibrate cases.csv | head`): `println!` panics there.
macro_rules! out {
    ($($arg:tt)*) => {
        emit(format_args!($($arg)*), true)
    };
}

/// Writes to standard output. A closed pipe ends the process with status 141,
/// as a Unix tool that SIGPIPE stopped would, and without a message; any other
/// write error is reported and ends it with status 2.
fn emit(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let written = o.write_fmt(args).and_then(|()| {
        if newline {
            o.write_all(b"\n")
        } else {
            o.flush()
        }
    });
    if let Err(e) = written {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("memplan: cannot write to standard output: {e}");
        std::process::exit(2);
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "memplan",
    version,
    about = "GPU memory planner for transformer training",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// Options of the default `serve` command.
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the web app and JSON API (the default).
    Serve(ServeArgs),
    /// Estimate per-GPU memory for a plan file.
    Estimate(EstimateArgs),
    /// Parse a GPU memory log and check it against a plan.
    Verify(VerifyArgs),
    /// Predict every case of a calibration CSV and report the errors.
    Calibrate(CalibrateArgs),
    /// Search the parallel layouts of a plan file's GPUs (sharding, TP, PP,
    /// checkpointing, offload, micro-batch) for the fastest that fit.
    Layouts(LayoutsArgs),
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "MEMPLAN_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: std::net::SocketAddr,
    /// Directory holding the built site (`pkg/` with the WASM, JS and CSS).
    /// Defaults to `LEPTOS_SITE_ROOT`, else `site/` beside the binary, else `target/site`.
    #[arg(long, env = "MEMPLAN_SITE_ROOT")]
    pub site_root: Option<PathBuf>,
    /// Where saved plans are kept: `postgres://user@host/db` for PostgreSQL,
    /// `sqlite:PATH` (or a path) for SQLite. Default: `sqlite:data/memplan.db`.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database: Option<String>,
}

#[derive(Args, Debug)]
pub struct EstimateArgs {
    /// Plan JSON file (see docs/plan-format.md).
    pub plan: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print a complete example plan to start from.
    #[arg(long)]
    pub print_example: bool,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Log file to parse, plain or gzip-compressed (nvidia-smi table/CSV/dmon/
    /// pmon/-q, nvitop, gpustat, rocm-smi, amd-smi, PyTorch OOM, memory_summary,
    /// memory_stats or list_gpu_processes, DeepSpeed, Megatron, HF Trainer,
    /// torchtitan, torchtune, a memory snapshot pickle, …: the formats
    /// `--format` names); `-` reads standard input.
    pub trace: PathBuf,
    /// Plan JSON to compare against (adds the verdict).
    #[arg(long)]
    pub plan: Option<PathBuf>,
    /// Print JSON instead of a summary.
    #[arg(long)]
    pub json: bool,
    /// Read the trace as this format instead of detecting it (an unknown name
    /// is refused with the list of known ones).
    #[arg(long)]
    pub format: Option<String>,
    /// Column names of a headerless `--query-gpu` CSV, comma-separated.
    #[arg(long)]
    pub columns: Option<String>,
}

#[derive(Args, Debug)]
pub struct LayoutsArgs {
    /// Plan JSON file (see docs/plan-format.md): its model, GPUs, framework
    /// and global batch are kept; its layout is searched.
    pub plan: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// How many layouts to list.
    #[arg(long, default_value_t = cost_model::layouts::LAYOUTS_SHOWN)]
    pub top: usize,
}

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Calibration cases CSV (schema: shared/calibration/SCHEMA.md).
    pub cases: PathBuf,
    #[arg(long)]
    pub json: bool,
    /// Print the plan built for one case and its estimate, phase by phase.
    #[arg(long, value_name = "ID")]
    pub explain: Option<String>,
}

/// Runs the subcommands that need no server.
pub fn run_offline(cmd: Command) -> ExitCode {
    match cmd {
        Command::Serve(_) => ExitCode::FAILURE,
        Command::Estimate(a) => estimate_cmd(a),
        Command::Verify(a) => verify_cmd(a),
        Command::Calibrate(a) => calibrate_cmd(a),
        Command::Layouts(a) => layouts_cmd(a),
    }
}

/// Prints `v` as pretty JSON; false (after saying why) when it cannot be.
fn print_json<T: serde::Serialize>(cmd: &str, v: &T) -> bool {
    match serde_json::to_string_pretty(v) {
        Ok(s) => {
            out!("{s}");
            true
        }
        Err(e) => {
            eprintln!("memplan {cmd}: {e}");
            false
        }
    }
}

/// Reads a plan file, or says why not (exit code 2).
fn read_plan(cmd: &str, path: &std::path::Path) -> Result<Plan, ExitCode> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        eprintln!("memplan {cmd}: cannot read {}: {e}", path.display());
        ExitCode::from(2)
    })?;
    bad_plan(cmd, path, Plan::from_json(&text))
}

/// `r`, or — its error said against the plan file — exit code 2.
fn bad_plan<T, E: std::fmt::Display>(
    cmd: &str,
    path: &std::path::Path,
    r: Result<T, E>,
) -> Result<T, ExitCode> {
    r.map_err(|e| {
        eprintln!("memplan {cmd}: {}: {e}", path.display());
        ExitCode::from(2)
    })
}

/// A plan's first line: model (and its vision encoder), GPUs and framework.
fn headline(plan: &Plan) -> String {
    let vision = match plan.model.vision_params {
        0 => String::new(),
        n => format!(" (with a {:.2} B vision encoder, frozen)", n as f64 / 1e9),
    };
    format!(
        "{}{vision} on {} × {} ({})",
        plan.model.name,
        plan.parallel.num_gpus,
        plan.gpu.name,
        plan.framework.label()
    )
}

fn layouts_cmd(a: LayoutsArgs) -> ExitCode {
    let plan = match read_plan("layouts", &a.plan) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let searched = cost_model::layouts::search_layouts(&plan, a.top.max(1));
    let found = match bad_plan("layouts", &a.plan, searched) {
        Ok(f) => f,
        Err(code) => return code,
    };
    if a.json {
        if !print_json("layouts", &found) {
            return ExitCode::FAILURE;
        }
    } else {
        out!(
            "{}: {} layouts considered, {} fit ({} estimates){}",
            headline(&plan),
            found.considered,
            found.fitting,
            found.estimated,
            if (found.best.len() as u64) < found.fitting && !found.best.is_empty() {
                format!(
                    "; {} shown: the others are no faster and leave less room",
                    found.best.len()
                )
            } else {
                String::new()
            }
        );
        out!(
            "  {:>9}  {:<24} {:>12} {:>12}  layout",
            "step time",
            "micro-batch × accum",
            "device_used",
            "headroom"
        );
        for l in &found.best {
            out!(
                "  {:>+8}%  {:<24} {:>12} {:>12}  {}",
                l.speed_cost_pct,
                format!(
                    "{} × {}",
                    l.plan.training.micro_batch, l.plan.training.grad_accum
                ),
                l.device_used.to_string(),
                l.headroom.to_string(),
                cost_model::layouts::describe(&l.plan)
            );
        }
    }
    if found.best.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn estimate_cmd(a: EstimateArgs) -> ExitCode {
    if a.print_example {
        return if print_json("estimate", &Plan::default()) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let Some(path) = a.plan else {
        eprintln!("memplan estimate: give a PLAN.json (or --print-example)");
        return ExitCode::from(2);
    };
    let plan = match read_plan("estimate", &path) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let rep = match bad_plan("estimate", &path, cost_model::report::report(&plan)) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let (est, max_mb, max_seq, ladder) = (
        &rep.estimate,
        rep.max_micro_batch,
        rep.max_seq_len,
        &rep.fix_ladder,
    );
    if a.json {
        if !print_json("estimate", &rep) {
            return ExitCode::FAILURE;
        }
    } else {
        out!("{}", headline(&plan));
        out!(
            "peak per GPU: {} device_used, {} reserved, {} allocated — stage {}, phase {}",
            est.peak.device_used,
            est.peak.reserved,
            est.peak.allocated,
            est.worst_stage,
            est.peak_phase.id()
        );
        for (c, b) in est.peak_breakdown.entries() {
            out!("  {:<18} {:>12}", c.id(), b.to_string());
        }
        if est.host_offload.get() > 0 || est.nvme_offload.get() > 0 {
            out!(
                "offload needs per GPU: {} host RAM, {} NVMe",
                est.host_offload,
                est.nvme_offload
            );
        }
        if est.fits {
            out!("fits: {} headroom of {}", est.headroom, est.capacity);
        } else {
            out!("does NOT fit: {} over {}", est.shortfall, est.capacity);
        }
        let show = |v: Option<u32>| v.map(|x| x.to_string()).unwrap_or_else(|| "none".into());
        out!(
            "largest micro-batch that fits: {}; longest sequence: {}",
            show(max_mb),
            show(max_seq)
        );
        if est.framework_upcasts {
            out!("note: {}", cost_model::plan::UPCAST_CAVEAT);
        }
        for r in ladder {
            out!(
                "  fix: {:<18} -> {} (saves {}, step time {:+}%){}",
                r.id,
                r.device_used,
                r.saving,
                r.speed_cost_pct,
                if r.fits { " fits" } else { "" }
            );
        }
    }
    if est.fits {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn calibrate_cmd(a: CalibrateArgs) -> ExitCode {
    let text = match std::fs::read(&a.cases) {
        Ok(bytes) => {
            let (text, encoding) = cost_model::calibrate::decode_case_file(&bytes);
            if let Some(enc) = encoding {
                eprintln!(
                    "memplan calibrate: {}: not UTF-8; read as {enc}",
                    a.cases.display()
                );
            }
            text
        }
        Err(e) => {
            eprintln!("memplan calibrate: cannot read {}: {e}", a.cases.display());
            return ExitCode::from(2);
        }
    };
    if let Some(id) = &a.explain {
        return match cost_model::calibrate::case_plan(&text, id) {
            Ok(plan) => explain(&plan),
            Err(e) => {
                eprintln!("memplan calibrate: {e}");
                ExitCode::from(2)
            }
        };
    }
    let report = match cost_model::calibrate::calibrate(&text) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("memplan calibrate: {}: {e}", a.cases.display());
            return ExitCode::from(2);
        }
    };
    // On standard error: the JSON on standard output keeps its shape.
    for w in &report.warnings {
        eprintln!("memplan calibrate: warning: {w}");
    }
    if a.json {
        if !print_json("calibrate", &report) {
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    emit(
        format_args!("{}", cost_model::calibrate::markdown(&report)),
        false,
    );
    ExitCode::SUCCESS
}

/// Prints a plan and its estimate for every stage and phase.
fn explain(plan: &Plan) -> ExitCode {
    out!("{}", serde_json::to_string(plan).unwrap_or_default());
    let est = match estimate(plan) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("memplan: {e}");
            return ExitCode::from(2);
        }
    };
    out!("params {} trainable {}", est.params, est.trainable_params);
    for st in &est.stages {
        for ph in &st.phases {
            let parts: Vec<String> = ph
                .breakdown
                .entries()
                .iter()
                .filter(|(_, b)| b.get() > 0)
                .map(|(c, b)| format!("{}={:.2}", c.id(), b.gib()))
                .collect();
            out!(
                "stage {} {:<8} alloc {:>7.2} res {:>7.2} used {:>7.2} GiB | {}",
                st.stage,
                ph.phase.id(),
                ph.counters.allocated.gib(),
                ph.counters.reserved.gib(),
                ph.counters.device_used.gib(),
                parts.join(" ")
            );
        }
    }
    ExitCode::SUCCESS
}

fn verify_cmd(a: VerifyArgs) -> ExitCode {
    use cost_model::trace::{self, findings, Format, ParseOptions};
    let format = match a.format.as_deref() {
        None | Some("auto") => None,
        Some(f) => match Format::from_id(f) {
            Some(f) => Some(f),
            None => {
                eprintln!(
                    "memplan verify: unknown --format `{f}`; known formats: {}",
                    Format::known_list()
                );
                return ExitCode::from(2);
            }
        },
    };
    let opts = ParseOptions {
        format,
        csv_columns: a
            .columns
            .as_deref()
            .map(|c| c.split(',').map(|s| s.trim().to_string()).collect()),
    };
    let plan = match &a.plan {
        None => None,
        Some(p) => match std::fs::read_to_string(p)
            .map_err(|e| e.to_string())
            .and_then(|t| Plan::from_json(&t).map_err(|e| e.to_string()))
        {
            Ok(plan) => Some(plan),
            Err(e) => {
                eprintln!("memplan verify: plan {}: {e}", p.display());
                return ExitCode::from(2);
            }
        },
    };
    // Plain text or gzip (`nvidia-smi … | gzip > gpu.csv.gz`).
    let input: std::io::Result<Box<dyn std::io::BufRead>> = if a.trace.as_os_str() == "-" {
        app::store::trace_text(std::io::stdin().lock())
    } else {
        std::fs::File::open(&a.trace)
            .and_then(|f| app::store::trace_text(std::io::BufReader::with_capacity(1 << 20, f)))
    };
    let parsed = match input {
        Ok(r) => trace::parse_reader(r, &opts),
        Err(e) => {
            eprintln!("memplan verify: cannot read {}: {e}", a.trace.display());
            return ExitCode::from(2);
        }
    };
    let t = match parsed {
        Ok(t) => t,
        Err(e) => {
            eprintln!("memplan verify: {}: {e}", a.trace.display());
            return ExitCode::from(2);
        }
    };
    let rep = findings::report(&t, plan.as_ref());
    if a.json {
        if !print_json("verify", &rep) {
            return ExitCode::FAILURE;
        }
    } else {
        out!(
            "{} ({} {})",
            rep.format.id(),
            rep.lines,
            rep.format.count_unit()
        );
        let f = |v: Option<f64>| {
            v.map(|x| format!("{x:.0} MiB"))
                .unwrap_or_else(|| "—".into())
        };
        for g in &rep.gpus {
            out!(
                "  GPU {}{} {}: peak {} of {} ({} samples)",
                g.index,
                g.mig
                    .as_deref()
                    .map(|m| format!(" [{m}]"))
                    .unwrap_or_default(),
                g.name.as_deref().unwrap_or(""),
                f(g.peak_used_mib),
                f(g.total_mib),
                g.samples
            );
        }
        // The processes table, as far as it helps (a node of many ranks and
        // workers can list hundreds).
        const PROCESSES_LISTED: usize = 16;
        for p in rep.processes.iter().take(PROCESSES_LISTED) {
            out!(
                "  process {} on {}: {} {}",
                p.pid.map(|x| x.to_string()).unwrap_or_else(|| "?".into()),
                p.gpu
                    .map(|g| format!("GPU {g}"))
                    .unwrap_or_else(|| "an unnamed GPU".into()),
                f(p.used_mib),
                p.name
            );
        }
        if rep.processes.len() > PROCESSES_LISTED {
            out!(
                "  … and {} more processes (--json lists them all)",
                rep.processes.len() - PROCESSES_LISTED
            );
        }
        if let Some(al) = &rep.allocator {
            out!(
                "  PyTorch allocator: peak allocated {}, peak reserved {}",
                f(al.peak_allocated_mib),
                f(al.peak_reserved_mib)
            );
            if al.current_allocated_mib.is_some() || al.current_reserved_mib.is_some() {
                out!(
                    "  PyTorch allocator, last reading: allocated {}, reserved {}",
                    f(al.current_allocated_mib),
                    f(al.current_reserved_mib)
                );
            }
        }
        for n in &rep.notes {
            out!("  {}: {}", n.label, f(Some(n.mib)));
        }
        for o in &rep.oom {
            out!(
                "  OOM at line {}: tried {} (capacity {}, free {}, allocated {}, reserved {})",
                o.line,
                f(o.tried_to_allocate_mib),
                f(o.capacity_mib),
                f(o.free_mib),
                f(o.allocated_by_pytorch_mib),
                f(o.reserved_by_pytorch_mib)
            );
        }
        for w in &t.warnings {
            out!("  note: {w}");
        }
        for x in &rep.findings {
            out!("  finding [{}]: {}", x.kind, x.detail);
        }
        match &rep.verdict {
            Some(v) => {
                // Each GPU (or rank) compared, against its own stage's peak
                // under a pipelined plan, before the overall line.
                for g in &v.gpus {
                    out!(
                        "  {}: {}: {} measured {:.0} MiB vs {:.0} MiB predicted ({:+.1} %)",
                        g.place(),
                        g.status.id(),
                        v.counter,
                        g.measured_mib,
                        g.predicted_mib,
                        g.diff_pct
                    );
                }
                let status = match v.overall {
                    findings::Status::Matches => "the plan held",
                    findings::Status::UnderEstimated => "plan under-estimated",
                    findings::Status::OverEstimated => "plan over-estimated",
                };
                out!("verdict: {status}: {}", v.summary)
            }
            None if plan.is_some() => {
                out!("verdict: nothing in this trace to compare with the plan")
            }
            None => {}
        }
    }
    match rep.verdict.map(|v| v.overall) {
        Some(findings::Status::UnderEstimated) => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    }
}
