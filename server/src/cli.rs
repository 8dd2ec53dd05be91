//! Command-line interface (exact interface: other tools depend on it).

use clap::{Args, Parser, Subcommand};
use cost_model::{estimate, Plan};
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Log file to parse (nvidia-smi, PyTorch OOM, memory_summary, …).
    pub trace: PathBuf,
    /// Plan JSON to compare against.
    #[arg(long)]
    pub plan: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
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
        Command::Verify(_) => not_yet("verify"),
        Command::Calibrate(a) => calibrate_cmd(a),
    }
}

fn not_yet(name: &str) -> ExitCode {
    eprintln!("memplan {name}: not yet implemented");
    ExitCode::from(2)
}

fn estimate_cmd(a: EstimateArgs) -> ExitCode {
    if a.print_example {
        match serde_json::to_string_pretty(&Plan::default()) {
            Ok(s) => {
                println!("{s}");
                return ExitCode::SUCCESS;
            }
            Err(e) => {
                eprintln!("memplan estimate: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let Some(path) = a.plan else {
        eprintln!("memplan estimate: give a PLAN.json (or --print-example)");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("memplan estimate: cannot read {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let plan = match Plan::from_json(&text) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("memplan estimate: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let rep = match cost_model::report::report(&plan) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("memplan estimate: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let (est, max_mb, max_seq, ladder) = (
        &rep.estimate,
        rep.max_micro_batch,
        rep.max_seq_len,
        &rep.fix_ladder,
    );
    if a.json {
        match serde_json::to_string_pretty(&rep) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("memplan estimate: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        println!(
            "{} on {} × {} ({})",
            plan.model.name,
            plan.parallel.num_gpus,
            plan.gpu.name,
            plan.framework.label()
        );
        println!(
            "peak per GPU: {} device_used, {} reserved, {} allocated — stage {}, phase {}",
            est.peak.device_used,
            est.peak.reserved,
            est.peak.allocated,
            est.worst_stage,
            est.peak_phase.id()
        );
        for (c, b) in est.peak_breakdown.entries() {
            println!("  {:<18} {:>12}", c.id(), b.to_string());
        }
        if est.fits {
            println!("fits: {} headroom of {}", est.headroom, est.capacity);
        } else {
            println!("does NOT fit: {} over {}", est.shortfall, est.capacity);
        }
        let show = |v: Option<u32>| v.map(|x| x.to_string()).unwrap_or_else(|| "none".into());
        println!(
            "largest micro-batch that fits: {}; longest sequence: {}",
            show(max_mb),
            show(max_seq)
        );
        for r in ladder {
            println!(
                "  fix: {:<18} -> {} (saves {}, speed {:+}%){}",
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
    let text = match std::fs::read_to_string(&a.cases) {
        Ok(t) => t,
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
    if a.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("memplan calibrate: {e}");
                return ExitCode::FAILURE;
            }
        }
        return ExitCode::SUCCESS;
    }
    print!("{}", cost_model::calibrate::markdown(&report));
    ExitCode::SUCCESS
}

/// Prints a plan and its estimate for every stage and phase.
fn explain(plan: &Plan) -> ExitCode {
    println!("{}", serde_json::to_string(plan).unwrap_or_default());
    let est = match estimate(plan) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("memplan: {e}");
            return ExitCode::from(2);
        }
    };
    println!("params {} trainable {}", est.params, est.trainable_params);
    for st in &est.stages {
        for ph in &st.phases {
            let parts: Vec<String> = ph
                .breakdown
                .entries()
                .iter()
                .filter(|(_, b)| b.get() > 0)
                .map(|(c, b)| format!("{}={:.2}", c.id(), b.gib()))
                .collect();
            println!(
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
