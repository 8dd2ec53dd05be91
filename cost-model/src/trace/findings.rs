//! What a trace says beyond its figures (leaks, imbalance, foreign processes,
//! fragmentation, OOMs), and the verdict of a plan against it, comparing like
//! with like: device-level figures (nvidia-smi, gpustat, rocm-smi) against the
//! plan's `device_used`, PyTorch allocator figures against `allocated` /
//! `reserved`.

use super::{Format, Trace};
use crate::calibrate::{gpu_named, gpu_words};
use crate::estimate::{Counters, Estimate};
use crate::units::Bytes;
use crate::Plan;
use serde::{Deserialize, Serialize};

const MIB: f64 = 1024.0 * 1024.0;

/// Samples needed before a trend is judged.
const LEAK_MIN_SAMPLES: usize = 12;
/// Warm-up left out of the trend: the first fifth of the samples (model load,
/// first steps, allocator growth).
const LEAK_WARMUP_FRACTION: f64 = 0.2;
/// Growth over the steady state that counts as a leak: at least this share of
/// the GPU's capacity (or of the peak when capacity is unknown)…
const LEAK_MIN_SHARE: f64 = 0.03;
/// …and at least this many MiB.
const LEAK_MIN_MIB: f64 = 256.0;
/// The trend must explain most of the variation (R² of the linear fit).
const LEAK_MIN_R2: f64 = 0.6;
/// One GPU is "far above" the others when its peak exceeds their median by
/// this factor and by `IMBALANCE_MIN_MIB` (`nn.DataParallel` gathers outputs
/// on GPU 0; pipeline stage 1 holds the most activations).
const IMBALANCE_FACTOR: f64 = 1.2;
const IMBALANCE_MIN_MIB: f64 = 2048.0;
/// GPUs below this share of capacity are idle (not part of the run).
const IDLE_SHARE: f64 = 0.05;
/// A process on a GPU the log does not name, holding less than this share of
/// the largest such process, is not one of the run's ranks (ranks of one run
/// hold alike amounts; a display server or an idle notebook holds its CUDA
/// context, a few hundred MiB): it is left out of the verdict.
const RUN_PROCESS_SHARE: f64 = 0.25;
/// Another process holding at least this much beside the run is reported.
const FOREIGN_MIN_MIB: f64 = 100.0;
/// Reserved above allocated by this factor and `FRAGMENTATION_MIN_MIB` =
/// caching-allocator fragmentation (PyTorch docs, "Memory management":
/// `expandable_segments:True` reduces it).
const FRAGMENTATION_FACTOR: f64 = 1.25;
const FRAGMENTATION_MIN_MIB: f64 = 1024.0;
/// A log's GPU whose `memory.total` differs from the plan's capacity by more
/// than this share is another card (or a MIG slice): 40 against 80 GB, 24
/// against 48. Within it the same card reads differently by driver and ECC
/// setting (nvidia-smi's A100-40GB 40960 or 40536 MiB, T4 15360 or 15109).
const GPU_CAPACITY_MISMATCH_SHARE: f64 = 0.03;

/// One observation, with its evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// `leak`, `imbalance`, `foreign-process`, `fragmentation`, `oom`,
    /// `gpu-mismatch`, `stages`.
    pub kind: String,
    pub gpu: Option<u32>,
    pub detail: String,
    /// Planner link: the change that would have fitted (`oom`), or the plan on
    /// the log's card (`gpu-mismatch`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fix_query: Option<String>,
}

fn gib(mib: f64) -> String {
    format!("{:.2} GiB", mib / 1024.0)
}

/// Least-squares slope and R² of `(x, y)`.
fn trend(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = pts.len() as f64;
    if n < 3.0 {
        return None;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = if syy > 0.0 {
        sxy * sxy / (sxx * syy)
    } else {
        0.0
    };
    Some((slope, r2))
}

/// The chip a GPU name names: its first word with a digit once the vendor
/// and brand words are dropped ([`gpu_words`]) — `a100` for
/// "NVIDIA A100-SXM4-80GB" and "NVIDIA A100 80GB PCIe", `4090` for "NVIDIA
/// GeForce RTX 4090", `mi300x` for "AMD Instinct MI300X" — and whether that
/// word may be cut short (nvidia-smi's table ends a long name with `...`).
/// Variants of one chip (SXM or PCIe, 40 or 80 GB) hold the same; their
/// capacities tell them apart.
fn gpu_chip(name: &str) -> Option<(String, bool)> {
    let name = name.trim();
    let cut = name.ends_with("...") || name.ends_with('…');
    let mut words = gpu_words(name);
    let i = words
        .iter()
        .position(|w| w.chars().any(|c| c.is_ascii_digit()))?;
    let last = i + 1 == words.len();
    Some((words.swap_remove(i), cut && last))
}

/// Whether a log's GPU name names the plan's chip ([`gpu_chip`]); a name
/// without one says nothing against it.
fn same_chip(log_name: &str, plan_name: &str) -> bool {
    match (gpu_chip(log_name), gpu_chip(plan_name)) {
        (Some((log, cut)), Some((plan, _))) => log == plan || (cut && plan.starts_with(&log)),
        _ => true,
    }
}

/// The log's GPUs that are not the plan's card: another chip (where the
/// plan's GPU is a catalogue entry, whose name is nvidia-smi's:
/// [`same_chip`]) or another capacity ([`GPU_CAPACITY_MISMATCH_SHARE`]). One finding per kind of card,
/// naming its GPUs: the verdict then compares a plan with another card's run.
fn gpu_mismatches(t: &Trace, plan: &Plan) -> Vec<Finding> {
    let catalogue = crate::gpu::gpu(&plan.gpu.id).is_some_and(|g| g.name == plan.gpu.name);
    let cap = plan.gpu.capacity_mib as f64;
    // (name, total) of each kind of card, with its GPU indices.
    let mut kinds: Vec<(Option<&str>, Option<f64>, Vec<u32>)> = Vec::new();
    for g in t.gpus.iter().filter(|g| g.mig.is_none()) {
        let name = g
            .name
            .as_deref()
            .filter(|n| catalogue && !same_chip(n, &plan.gpu.name));
        let total = g
            .total_mib
            .filter(|m| cap > 0.0 && (m - cap).abs() > GPU_CAPACITY_MISMATCH_SHARE * cap);
        if name.is_none() && total.is_none() {
            continue;
        }
        match kinds.iter_mut().find(|k| k.0 == name && k.1 == total) {
            Some(k) => k.2.push(g.index),
            None => kinds.push((name, total, vec![g.index])),
        }
    }
    kinds
        .into_iter()
        .filter_map(|(name, total, gpus)| {
            let card = match (name, total) {
                (Some(n), Some(m)) => format!("{n} with {m:.0} MiB"),
                (Some(n), None) => n.to_string(),
                (None, Some(m)) => format!("a card with {m:.0} MiB"),
                (None, None) => return None,
            };
            // The plan on the log's card: its catalogue entry where the name
            // says which, with the memory the log reports.
            let mut on_card = plan.clone();
            let first = t.gpus.iter().find(|g| g.index == gpus[0]);
            let mib = total.or_else(|| first.and_then(|g| g.total_mib));
            let log_name = name.or_else(|| first.and_then(|g| g.name.as_deref()));
            on_card.gpu = gpu_named(log_name.unwrap_or(""), mib.map(|m| m / 1024.0));
            if let Some(m) = mib {
                on_card.gpu.capacity_mib = m.round() as u64;
            }
            let fix_query = crate::validate::validate(&on_card)
                .is_ok()
                .then(|| crate::query::encode(&on_card));
            let list = gpus
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let which = if gpus.len() == 1 {
                format!("GPU {list} is")
            } else {
                format!("GPUs {list} are")
            };
            Some(Finding {
                kind: "gpu-mismatch".into(),
                gpu: (gpus.len() == 1).then(|| gpus[0]),
                detail: format!(
                    "the log's {which} {card}, the plan's {} with {} MiB: the comparison is \
                     with another card's run; set the plan's GPU (or its memory) to match",
                    plan.gpu.name, plan.gpu.capacity_mib
                ),
                fix_query,
            })
        })
        .collect()
}

/// The log's whole GPUs (no MIG slice) that ran: each with its peak, those
/// below `IDLE_SHARE` of their capacity left out.
/// `nn.DataParallel`'s GPU 0 in a log: the first GPU the verdict compares —
/// the first busy one, or the first with a reading when every GPU is idle.
fn output_gpu(t: &Trace) -> Option<u32> {
    let first = |v: Vec<(u32, f64)>| v.iter().map(|b| b.0).min();
    first(busy_gpus(t)).or_else(|| {
        let read = t
            .gpus
            .iter()
            .filter(|g| g.mig.is_none() && g.peak_used_mib.is_some());
        read.map(|g| g.index).min()
    })
}

fn busy_gpus(t: &Trace) -> Vec<(u32, f64)> {
    t.gpus
        .iter()
        .filter(|g| g.mig.is_none())
        .filter_map(|g| {
            let p = g.peak_used_mib?;
            let idle = g.total_mib.is_some_and(|c| p < IDLE_SHARE * c);
            (!idle).then_some((g.index, p))
        })
        .collect()
}

/// Groups of a log's GPUs whose peaks are apart by at least this share of
/// the highest group's (and `IMBALANCE_MIN_MIB`) read as pipeline stages.
const STAGE_GROUPS_MIN_SHARE: f64 = 0.15;

/// A log whose GPUs, by index, fall into equal runs of alike peaks with the
/// runs far apart, under a plan that pipelines in another number of stages
/// (or not at all): pipeline stages hold different activations (1F1B keeps
/// more micro-batches in flight on the first, the logits on the last) and
/// their ranks run the pipeline outermost ([`RankLayout`]), so consecutive
/// GPUs of a node share a stage. Runs of at least two GPUs, so that one GPU
/// alone is `imbalance`'s; the fewest runs whose every run is tighter than
/// half the smallest step between neighbouring runs. The plan with that many
/// stages is the link, where it is valid.
fn stage_groups(t: &Trace, plan: &Plan) -> Option<Finding> {
    let mut gpus = busy_gpus(t);
    gpus.sort_by_key(|g| g.0);
    let n = gpus.len();
    // Consecutive indices only (a log of GPUs 0–7, not 0, 2, 5).
    if n < 4 || gpus.windows(2).any(|w| w[1].0 != w[0].0 + 1) {
        return None;
    }
    let (k, runs) = (2..=n / 2).filter(|k| n.is_multiple_of(*k)).find_map(|k| {
        let runs: Vec<(f64, f64)> = gpus
            .chunks(n / k)
            .map(|c| {
                let lo = c.iter().map(|g| g.1).fold(f64::INFINITY, f64::min);
                let hi = c.iter().map(|g| g.1).fold(0.0, f64::max);
                (lo, hi)
            })
            .collect();
        let mid = |r: &(f64, f64)| (r.0 + r.1) / 2.0;
        let step = runs
            .windows(2)
            .map(|w| (mid(&w[1]) - mid(&w[0])).abs())
            .fold(f64::INFINITY, f64::min);
        let spread = runs.iter().map(|r| r.1 - r.0).fold(0.0, f64::max);
        let (low, high) = runs.iter().fold((f64::INFINITY, 0.0_f64), |a, r| {
            (a.0.min(mid(r)), a.1.max(mid(r)))
        });
        let apart = high - low >= (STAGE_GROUPS_MIN_SHARE * high).max(IMBALANCE_MIN_MIB);
        (apart && spread < step / 2.0).then_some((k as u32, runs))
    })?;
    if plan.parallel.pp == k {
        return None;
    }
    let per = n / k as usize;
    let list = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (a, b) = (gpus[i * per].0, gpus[i * per + per - 1].0);
            format!(
                "GPUs {a}–{b} at {:.2}–{:.2} GiB",
                r.0 / 1024.0,
                r.1 / 1024.0
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut staged = plan.clone();
    staged.parallel.pp = k;
    let fix_query = crate::validate::validate(&staged)
        .is_ok()
        .then(|| crate::query::encode(&staged));
    Some(Finding {
        kind: "stages".into(),
        gpu: None,
        detail: format!(
            "the log's GPUs peak in {k} runs of {per} ({list}), as pipeline stages do; the plan has {}: \
             with {k} stages each GPU is compared with its own stage's peak",
            match plan.parallel.pp {
                1 => "no pipeline".to_string(),
                p => format!("{p} stages"),
            }
        ),
        fix_query,
    })
}

/// Findings of a trace (with a plan: the OOM fix, and a log from another card).
pub fn findings(t: &Trace, plan: Option<&Plan>) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(p) = plan {
        out.extend(gpu_mismatches(t, p));
        out.extend(stage_groups(t, p));
    }
    let timed = matches!(
        t.format,
        Format::NvidiaSmiCsv | Format::NvidiaSmiTable | Format::Gpustat
    );
    // Leak: still growing across the steady state.
    for g in &t.gpus {
        let pts: Vec<(f64, f64)> = g.series.points.iter().map(|p| (p.t, p.used_mib)).collect();
        if pts.len() < LEAK_MIN_SAMPLES {
            continue;
        }
        let steady = &pts[(pts.len() as f64 * LEAK_WARMUP_FRACTION) as usize..];
        let Some((slope, r2)) = trend(steady) else {
            continue;
        };
        let span = steady.last().map(|p| p.0).unwrap_or(0.0) - steady[0].0;
        let growth = slope * span;
        let base = g.total_mib.or(g.peak_used_mib).unwrap_or(0.0);
        if growth > (LEAK_MIN_SHARE * base).max(LEAK_MIN_MIB) && r2 >= LEAK_MIN_R2 {
            let per = if timed && span > 0.0 {
                format!("{:.1} MiB per minute", slope * 60.0)
            } else {
                format!(
                    "{:.1} MiB per sample",
                    slope * g.series.stride.max(1) as f64
                )
            };
            out.push(Finding {
                kind: "leak".into(),
                gpu: Some(g.index),
                detail: format!(
                    "memory still growing after warm-up: +{} over the steady state ({per}, R² {r2:.2}); \
                     look for tensors kept across steps (losses appended without .item(), caches)",
                    gib(growth)
                ),
                fix_query: None,
            });
        }
    }
    // Imbalance: one GPU far above the others — unless the plan pipelines,
    // when its stages differ by design and each GPU meets its own stage's
    // peak in the verdict.
    let pipelined = plan.and_then(RankLayout::of).is_some();
    let busy = busy_gpus(t);
    // Nor GPU 0 above the rest under a plan that runs `nn.DataParallel`:
    // the verdict compares it and the replicas each with their own peak.
    let data_parallel = plan.is_some_and(|p| p.parallel.has_data_parallel_replicas());
    let output = output_gpu(t);
    if busy.len() >= 2 && !pipelined {
        let mut v: Vec<f64> = busy.iter().map(|b| b.1).collect();
        v.sort_by(f64::total_cmp);
        let median = v[v.len() / 2];
        let others_median = v[(v.len() - 1) / 2];
        if let Some(&(gpu, top)) = busy.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
            let m = if top == median { others_median } else { median };
            let expected = data_parallel && Some(gpu) == output;
            if top > m * IMBALANCE_FACTOR && top - m > IMBALANCE_MIN_MIB && !expected {
                out.push(Finding {
                    kind: "imbalance".into(),
                    gpu: Some(gpu),
                    detail: format!(
                        "GPU {gpu} peaks at {} while the others' median is {} (+{:.0} %): \
                         nn.DataParallel gathering outputs on GPU 0, or the first pipeline stage",
                        gib(top),
                        gib(m),
                        100.0 * (top / m.max(1.0) - 1.0)
                    ),
                    fix_query: None,
                });
            }
        }
    }
    // Foreign processes: beside the largest process on a GPU.
    let mut gpus: Vec<u32> = t.processes.iter().filter_map(|p| p.gpu).collect();
    gpus.sort_unstable();
    gpus.dedup();
    for gpu in gpus {
        let mut on: Vec<_> = t.processes.iter().filter(|p| p.gpu == Some(gpu)).collect();
        on.sort_by(|a, b| {
            b.used_mib
                .unwrap_or(0.0)
                .total_cmp(&a.used_mib.unwrap_or(0.0))
        });
        let Some(main) = on.first() else { continue };
        let others: Vec<_> = on[1..]
            .iter()
            .filter(|p| p.used_mib.unwrap_or(0.0) >= FOREIGN_MIN_MIB && p.name != main.name)
            .collect();
        if others.is_empty() {
            continue;
        }
        let held: f64 = others.iter().filter_map(|p| p.used_mib).sum();
        let list = others
            .iter()
            .map(|p| {
                format!(
                    "{} (pid {}) {}",
                    p.name,
                    p.pid.map(|x| x.to_string()).unwrap_or_else(|| "?".into()),
                    gib(p.used_mib.unwrap_or(0.0))
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        out.push(Finding {
            kind: "foreign-process".into(),
            gpu: Some(gpu),
            detail: format!(
                "besides {} ({}), other processes hold {} on GPU {gpu}: {list}",
                main.name,
                gib(main.used_mib.unwrap_or(0.0)),
                gib(held)
            ),
            fix_query: None,
        });
    }
    // Fragmentation: reserved far above allocated.
    let mut pairs: Vec<(Option<u32>, f64, f64, &str)> = Vec::new();
    if let Some(a) = &t.allocator {
        if let (Some(al), Some(re)) = (a.peak_allocated_mib, a.peak_reserved_mib) {
            pairs.push((None, al, re, "peak"));
        }
    }
    for o in &t.oom {
        if let (Some(al), Some(re)) = (o.allocated_by_pytorch_mib, o.reserved_by_pytorch_mib) {
            pairs.push((o.gpu, al, re, "at the OOM"));
        }
    }
    for (gpu, al, re, when) in pairs {
        if re > al * FRAGMENTATION_FACTOR && re - al > FRAGMENTATION_MIN_MIB {
            out.push(Finding {
                kind: "fragmentation".into(),
                gpu,
                detail: format!(
                    "the caching allocator reserved {} but only {} was allocated ({when}): {} cached but unused; \
                     set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                    gib(re),
                    gib(al),
                    gib(re - al)
                ),
                fix_query: None,
            });
        }
    }
    // OOM: what was asked, what was held, and (with a plan) what would fit.
    let fix = plan.and_then(|p| {
        crate::search::fix_ladder(p)
            .ok()
            .and_then(|l| l.into_iter().find(|r| r.fits))
    });
    for o in &t.oom {
        let mut d = match o.tried_to_allocate_mib {
            Some(x) => format!("tried to allocate {}", gib(x)),
            None => "out of memory (the message states no sizes)".to_string(),
        };
        if let Some(c) = o.capacity_mib {
            d.push_str(&format!(" on a {} GPU", gib(c)));
        }
        if let Some(f) = o.free_mib {
            d.push_str(&format!(" with {} free", gib(f)));
        }
        if let Some(a) = o.allocated_by_pytorch_mib {
            d.push_str(&format!("; PyTorch had allocated {}", gib(a)));
        }
        if let Some(r) = o.reserved_by_pytorch_mib {
            d.push_str(&format!(" and reserved {}", gib(r)));
        }
        if let Some(r) = &fix {
            d.push_str(&format!(
                "; the plan fits after the fix-ladder rung `{}` ({} peak)",
                r.id,
                gib(r.device_used.as_f64() / MIB)
            ));
        }
        out.push(Finding {
            kind: "oom".into(),
            gpu: o.gpu,
            detail: format!("line {}: {d}", o.line),
            fix_query: fix.as_ref().map(|r| r.query.clone()),
        });
    }
    out
}

/// How a measurement compares with the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Within the plan's uncertainty band.
    Matches,
    /// Measured above the band: the plan promised too little.
    UnderEstimated,
    /// Measured below the band.
    OverEstimated,
}

impl Status {
    /// The name the JSON gives it (`matches`, `under-estimated`,
    /// `over-estimated`).
    pub fn id(self) -> &'static str {
        match self {
            Status::Matches => "matches",
            Status::UnderEstimated => "under-estimated",
            Status::OverEstimated => "over-estimated",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuVerdict {
    pub gpu: Option<u32>,
    /// The plan's pipeline stage this GPU runs, where the plan pipelines and
    /// the log says which rank the GPU is ([`RankLayout`]): `predicted_mib`
    /// is then that stage's peak, not the worst stage's.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stage: Option<u32>,
    /// One of `nn.DataParallel`'s replicas, where the plan runs it: a GPU of
    /// the log other than its first busy one (GPU 0, the output device),
    /// compared with the replicas' peak ([`Estimate::replica_peak`]).
    #[serde(skip_serializing_if = "crate::plan::is_false", default)]
    pub replica: bool,
    pub measured_mib: f64,
    pub predicted_mib: f64,
    pub status: Status,
    /// measured − predicted.
    pub diff_mib: f64,
    pub diff_pct: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The plan's counter compared: `device_used`, `allocated` or `reserved`.
    pub counter: String,
    pub predicted_mib: f64,
    pub band_low_mib: f64,
    pub band_high_mib: f64,
    pub gpus: Vec<GpuVerdict>,
    /// Worst status over the GPUs compared (under-estimated beats over-estimated).
    pub overall: Status,
    pub summary: String,
    /// GPUs left out (idle, not part of the run).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub skipped_gpus: Vec<u32>,
}

impl GpuVerdict {
    /// Which GPU this is, in words: "GPU 4 (pipeline stage 1)", "GPU 4", or
    /// "the run" where the log names none.
    pub fn place(&self) -> String {
        match (self.gpu, self.stage) {
            (Some(g), _) if self.replica => format!("GPU {g} (an nn.DataParallel replica)"),
            (Some(g), Some(st)) => format!("GPU {g} (pipeline stage {st})"),
            (Some(g), None) => format!("GPU {g}"),
            _ => "the run".into(),
        }
    }
}

fn judge(gpu: Option<u32>, measured: f64, predicted: f64, low: f64, high: f64) -> GpuVerdict {
    let status = if measured > high {
        Status::UnderEstimated
    } else if measured < low {
        Status::OverEstimated
    } else {
        Status::Matches
    };
    GpuVerdict {
        gpu,
        stage: None,
        replica: false,
        measured_mib: measured,
        predicted_mib: predicted,
        status,
        diff_mib: measured - predicted,
        diff_pct: 100.0 * (measured - predicted) / predicted.max(1.0),
    }
}

/// Which pipeline stage runs which rank of a pipelined plan, so that each
/// GPU of a log is compared with its own stage's peak: under 1F1B the first
/// stage holds the most micro-batches' activations and the last the logits,
/// so stages of one run differ by many GiB and the worst stage's peak would
/// call every other stage's GPU over-estimated. Ranks are laid out with the
/// pipeline outermost — Megatron-Core's default order `tp-cp-ep-dp-pp`
/// (megatron-core 0.12.0 `parallel_state.initialize_model_parallel`),
/// torchtitan's meshes `["pp", "dp_replicate", "dp_shard", "cp", "tp"]` and
/// `["pp", "dp", "cp", "tp"]` (0.3.0 `distributed/parallel_dims.py`),
/// DeepSpeed's `PipeDataParallelTopology(axes=['pipe', 'data'])` (0.16.4
/// `runtime/pipe/topology.py`) — so stage =
/// rank ÷ (GPUs ÷ PP). A log's global rank (a torchrun `[rankN]:` prefix,
/// Megatron's `[Rank N]`) places any GPU; a GPU's index on its node places it
/// only when the whole run is one node (its index is then its rank:
/// torchrun's `LOCAL_RANK` picks `cuda:LOCAL_RANK`). A multi-node log's GPU
/// indices do not say which node, so those GPUs keep the worst stage's peak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankLayout {
    ranks: u32,
    per_stage: u32,
    one_node: bool,
}

impl RankLayout {
    /// The layout of a plan that pipelines (`None` for one stage).
    pub fn of(plan: &Plan) -> Option<Self> {
        let p = &plan.parallel;
        (p.pp > 1 && p.num_gpus >= p.pp).then(|| RankLayout {
            ranks: p.num_gpus,
            per_stage: p.num_gpus / p.pp,
            one_node: p.num_gpus <= p.gpus_per_node,
        })
    }

    /// The stage of a log's GPU: `index` is a global rank when `global`, else
    /// a GPU index on a node.
    pub fn stage(&self, index: u32, global: bool) -> Option<u32> {
        (index < self.ranks && (global || self.one_node)).then(|| index / self.per_stage)
    }
}

/// The plan's verdict against the trace (`None` when the trace has nothing
/// comparable), every GPU against the worst stage's peak.
pub fn verdict(t: &Trace, est: &Estimate) -> Option<Verdict> {
    verdict_staged(t, est, None)
}

/// [`verdict`], each GPU the layout places in a pipeline stage against that
/// stage's peak.
pub fn verdict_staged(t: &Trace, est: &Estimate, layout: Option<RankLayout>) -> Option<Verdict> {
    // A GPU's stage, where the layout places it, and the counter's peak there.
    let staged = |index: Option<u32>, global: bool, counter: fn(&Counters) -> Bytes| {
        let stage = layout.zip(index).and_then(|(l, i)| l.stage(i, global))?;
        let s = est.stages.get(stage as usize)?;
        Some((stage, counter(&s.peak).as_f64() / MIB))
    };
    let band = |x: f64| {
        let pred = est.peak.device_used.as_f64() / MIB;
        let scale = if pred > 0.0 { x / pred } else { 1.0 };
        (
            est.band_low.as_f64() / MIB * scale,
            est.band_high.as_f64() / MIB * scale,
        )
    };
    // One GPU (or rank) against its stage's peak where the layout places it,
    // else against the worst stage's `predicted`.
    let judge_at = |index: Option<u32>,
                    global: bool,
                    measured: f64,
                    predicted: f64,
                    counter: fn(&Counters) -> Bytes| {
        match staged(index, global, counter) {
            Some((stage, p)) => {
                let (low, high) = band(p);
                GpuVerdict {
                    stage: Some(stage),
                    ..judge(index, measured, p, low, high)
                }
            }
            None => {
                let (low, high) = band(predicted);
                judge(index, measured, predicted, low, high)
            }
        }
    };
    // Under `nn.DataParallel` (the estimate has the replicas' peak), a GPU
    // other than `output` — GPU 0, the log's first busy GPU — against the
    // replicas' peak; `None` for GPU 0 and any other plan.
    let as_replica = |index: u32, output: Option<u32>, measured: f64| {
        let r = est.replica_peak.as_ref()?;
        (Some(index) != output).then(|| {
            let p = r.device_used.as_f64() / MIB;
            let (low, high) = band(p);
            GpuVerdict {
                replica: true,
                ..judge(Some(index), measured, p, low, high)
            }
        })
    };
    let device_used: fn(&Counters) -> Bytes = |c| c.device_used;
    let reserved: fn(&Counters) -> Bytes = |c| c.reserved;
    let (counter, basis, predicted, mut gpus, skipped) = if t.format.is_device_level()
        && t.gpus.iter().any(|g| g.peak_used_mib.is_some())
    {
        let predicted = est.peak.device_used.as_f64() / MIB;
        let mut gpus = Vec::new();
        let mut skipped = Vec::new();
        let is_idle = |g: &super::GpuTrace| match (g.peak_used_mib, g.total_mib) {
            (Some(m), Some(c)) => m < IDLE_SHARE * c,
            _ => false,
        };
        // Idle GPUs beside busy ones are not part of the run; if all are idle, compare all.
        let any_busy = t.gpus.iter().any(|g| g.mig.is_none() && !is_idle(g));
        let output = output_gpu(t);
        for g in t.gpus.iter().filter(|g| g.mig.is_none()) {
            let Some(m) = g.peak_used_mib else { continue };
            let idle = any_busy && is_idle(g);
            if idle {
                skipped.push(g.index);
                continue;
            }
            gpus.push(
                as_replica(g.index, output, m)
                    .unwrap_or_else(|| judge_at(Some(g.index), false, m, predicted, device_used)),
            );
        }
        ("device_used", "", predicted, gpus, skipped)
    } else if let Some(a) = &t.allocator {
        if let Some(r) = a.peak_reserved_mib {
            let predicted = est.peak.reserved.as_f64() / MIB;
            let (low, high) = band(predicted);
            let mut gpus = vec![];
            for rk in &a.ranks {
                if let Some(m) = rk.peak_reserved_mib {
                    gpus.push(judge_at(Some(rk.rank), true, m, predicted, reserved));
                }
            }
            // No rank printed its own reserved peak: the log's.
            if gpus.is_empty() {
                gpus.push(judge(None, r, predicted, low, high));
            }
            ("reserved", "", predicted, gpus, vec![])
        } else if let Some(al) = a.peak_allocated_mib {
            let predicted = est.peak.allocated.as_f64() / MIB;
            let (low, high) = band(predicted);
            (
                "allocated",
                "",
                predicted,
                vec![judge(None, al, predicted, low, high)],
                vec![],
            )
        } else {
            return None;
        }
    } else if t.oom.is_empty() && t.processes.iter().any(|p| p.used_mib.is_some()) {
        // Per-process figures only (`--query-compute-apps`, a processes
        // table without its GPU rows): what the processes on a GPU hold is
        // what nvidia-smi counts as used there, less the driver's few MiB.
        // A process on a GPU the log does not name is compared alone.
        let predicted = est.peak.device_used.as_f64() / MIB;
        let (low, high) = band(predicted);
        let mut per_gpu: Vec<(u32, f64)> = Vec::new();
        let mut gpus = Vec::new();
        let largest_unplaced = t
            .processes
            .iter()
            .filter(|p| p.gpu.is_none())
            .filter_map(|p| p.used_mib)
            .fold(0.0, f64::max);
        for p in &t.processes {
            let Some(m) = p.used_mib else { continue };
            match p.gpu {
                Some(g) => match per_gpu.iter_mut().find(|(i, _)| *i == g) {
                    Some((_, sum)) => *sum += m,
                    None => per_gpu.push((g, m)),
                },
                None if m >= RUN_PROCESS_SHARE * largest_unplaced => {
                    gpus.push(judge(None, m, predicted, low, high))
                }
                None => {}
            }
        }
        let output = per_gpu.iter().map(|(g, _)| *g).min();
        for (g, m) in per_gpu {
            gpus.push(
                as_replica(g, output, m)
                    .unwrap_or_else(|| judge_at(Some(g), false, m, predicted, device_used)),
            );
        }
        (
            "device_used",
            " (summed over each GPU's processes)",
            predicted,
            gpus,
            vec![],
        )
    } else {
        return None;
    };
    if gpus.is_empty() {
        return None;
    }
    gpus.sort_by_key(|g| g.gpu);
    let overall = if gpus.iter().any(|g| g.status == Status::UnderEstimated) {
        Status::UnderEstimated
    } else if gpus.iter().any(|g| g.status == Status::OverEstimated) {
        Status::OverEstimated
    } else {
        Status::Matches
    };
    let worst = gpus
        .iter()
        .max_by(|a, b| a.diff_mib.abs().total_cmp(&b.diff_mib.abs()))
        .cloned();
    let (low, high) = band(predicted);
    let by_stage = gpus.iter().any(|g| g.stage.is_some());
    let replicas = gpus.iter().any(|g| g.replica);
    let summary = match (overall, worst) {
        (Status::Matches, _) if by_stage => format!(
            "measured {counter}{basis} within its pipeline stage's predicted band on every GPU compared"
        ),
        (Status::Matches, _) if replicas => format!(
            "measured {counter}{basis} within the predicted band on every GPU compared \
             (GPU 0 against its peak, nn.DataParallel's replicas against theirs)"
        ),
        (Status::Matches, _) => format!(
            "measured {counter}{basis} within the predicted band {}–{} on every GPU compared",
            gib(low),
            gib(high)
        ),
        (_, Some(w)) => format!(
            "{}{basis} measured {} vs {} predicted ({:+.2} GiB, {:+.1} %) on {}",
            counter,
            gib(w.measured_mib),
            gib(w.predicted_mib),
            w.diff_mib / 1024.0,
            w.diff_pct,
            w.place()
        ),
        (_, None) => String::new(),
    };
    Some(Verdict {
        counter: counter.into(),
        predicted_mib: predicted,
        band_low_mib: low,
        band_high_mib: high,
        gpus,
        overall,
        summary,
        skipped_gpus: skipped,
    })
}

/// The `memplan verify --json` report (the shape issue 6 fixes; fields may
/// be added, never renamed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VerifyReport {
    pub format: Format,
    pub gpus: Vec<GpuReport>,
    /// The OOM messages, as parsed (the figures the message states; `null` otherwise).
    pub oom: Vec<super::OomEvent>,
    pub allocator: Option<super::AllocatorStats>,
    pub findings: Vec<Finding>,
    pub verdict: Option<Verdict>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub processes: Vec<super::ProcessUse>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub warnings: Vec<String>,
    /// Figures the trace states that are not a GPU's used memory nor an
    /// allocator peak (the Trainer's deltas, a report's starting point,
    /// Megatron's own prediction), shown as they were labelled.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub notes: Vec<ReportNote>,
    pub lines: u64,
}

/// One of [`VerifyReport::notes`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportNote {
    pub label: String,
    pub mib: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuReport {
    pub index: u32,
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mig: Option<String>,
    pub total_mib: Option<f64>,
    pub peak_used_mib: Option<f64>,
    pub samples: u64,
    /// `[t_seconds, used_mib]` points (bounded; peaks kept).
    pub series: Vec<[f64; 2]>,
}

/// Builds the report of a trace, with the plan's verdict when one is given.
pub fn report(t: &Trace, plan: Option<&Plan>) -> VerifyReport {
    let est = plan.and_then(|p| crate::estimate(p).ok());
    VerifyReport {
        format: t.format,
        gpus: t
            .gpus
            .iter()
            .map(|g| GpuReport {
                index: g.index,
                name: g.name.clone(),
                mig: g.mig.clone(),
                total_mib: g.total_mib,
                peak_used_mib: g.peak_used_mib,
                samples: g.samples,
                series: g
                    .series
                    .points
                    .iter()
                    .map(|p| [(p.t * 1000.0).round() / 1000.0, p.used_mib])
                    .collect(),
            })
            .collect(),
        oom: t.oom.clone(),
        allocator: t.allocator.clone(),
        findings: findings(t, plan),
        verdict: est
            .as_ref()
            .and_then(|e| verdict_staged(t, e, plan.and_then(RankLayout::of))),
        processes: t.processes.clone(),
        warnings: t.warnings.clone(),
        notes: t
            .notes
            .iter()
            .map(|(label, mib)| ReportNote {
                label: label.clone(),
                mib: *mib,
            })
            .collect(),
        lines: t.lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_names_are_compared_by_their_chip() {
        let chip = |n: &str| gpu_chip(n).map(|c| c.0);
        assert_eq!(chip("NVIDIA A100-SXM4-80GB").as_deref(), Some("a100"));
        assert_eq!(chip("NVIDIA A100 80GB PCIe").as_deref(), Some("a100"));
        assert_eq!(chip("Tesla V100-SXM2-16GB").as_deref(), Some("v100"));
        assert_eq!(chip("NVIDIA GeForce RTX 4090").as_deref(), Some("4090"));
        assert_eq!(chip("AMD Instinct MI300X").as_deref(), Some("mi300x"));
        assert_eq!(chip("NVIDIA Graphics Device"), None);
        assert!(same_chip("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"));
        assert!(same_chip("A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB"));
        assert!(same_chip("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"));
        assert!(!same_chip("NVIDIA A800 80GB PCIe", "NVIDIA A100 80GB PCIe"));
        assert!(!same_chip("NVIDIA L40", "NVIDIA L40S"));
        assert!(!same_chip(
            "NVIDIA RTX 6000 Ada Generation",
            "NVIDIA RTX A6000"
        ));
        assert!(!same_chip("NVIDIA A10", "NVIDIA A100-SXM4-80GB"));
        // nvidia-smi's table cuts long names: a cut word is a prefix.
        assert!(same_chip(
            "NVIDIA GeForce RTX 30...",
            "NVIDIA GeForce RTX 3090"
        ));
        assert!(same_chip("NVIDIA A800 80G...", "NVIDIA A800 80GB PCIe"));
        assert!(!same_chip("NVIDIA A800 80G...", "NVIDIA H100 80GB HBM3"));
        // A name without a chip says nothing against the plan's.
        assert!(same_chip("NVIDIA Graphics Device", "NVIDIA H100 80GB HBM3"));
    }
}
