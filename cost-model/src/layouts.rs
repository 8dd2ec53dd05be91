//! The layout search (DESIGN.md §4's auto-planner): every parallel layout the
//! plan's framework runs on the plan's GPUs — data-parallel sharding, tensor
//! and pipeline parallelism, activation checkpointing, offload, and the
//! micro-batch / accumulation split of the same global batch — evaluated by
//! the model, the ones that fit ranked by their cost in step time.
//!
//! Context parallelism is in the space where the framework has it and the
//! sequence is long enough to split ([`crate::search::MIN_CP_LOCAL_SEQ`]
//! tokens a rank).
//!
//! What stays as the plan has it: the model, the GPUs (type, count, node
//! size), the framework, precision, optimizer, fine-tuning method, sequence
//! length, expert parallelism, and the global batch (micro-batch ×
//! accumulation × data-parallel ranks). A layout whose data-parallel degree
//! does not divide the global batch is not in the space.
//!
//! The micro-batches of one layout are searched, not each estimated: memory
//! never falls as the micro-batch grows (`tests/properties.rs`), so the
//! largest that fits is found by galloping and bisection over the divisors
//! of the per-replica batch, and every smaller one fits too.

use crate::error::PlanError;
use crate::estimate::{estimate, Estimate};
#[cfg(doc)]
use crate::framework::Framework;
use crate::plan::{Checkpointing, Offload, OffloadDevice, PipelineSchedule, Plan, Sharding};
use crate::query;
use crate::search::{
    context_parallel_degrees, CHECKPOINT_EVERY, COST_CHECKPOINTING, COST_CP, COST_GRAD_ACCUM,
    COST_HPZ_OFF, COST_OFFLOAD_ACTIVATIONS, COST_OFFLOAD_OPTIMIZER, COST_OFFLOAD_PARAMS,
    COST_SYNC_EACH_BATCH, COST_TP, COST_ZERO_3,
};
use crate::units::Bytes;
use serde::{Deserialize, Serialize};

/// Layouts a search returns by default, fastest first (the planner's table).
pub const LAYOUTS_SHOWN: usize = 8;

/// Tensor-parallel degrees tried: powers of two within a node, up to this
/// (Megatron-LM keeps TP inside the NVLink domain; Narayanan et al. 2021,
/// §3.3 "Takeaway #1": TP up to the GPUs per server, 8).
pub const MAX_TP: u32 = 8;

/// Virtual stages per GPU tried under the interleaved schedule (Narayanan et
/// al. 2021, §2.2.2: the bubble shrinks by this factor, the first stage's
/// in-flight activations grow by `1 + (p − 1)/(p·v)`), where the layers split
/// evenly over `pp × v` chunks (Megatron-LM's `--num-layers-per-virtual-
/// pipeline-stage`).
const VIRTUAL_STAGES: [u32; 2] = [2, 4];

/// Micro-batch candidates are the divisors of the per-replica batch found by
/// trial division up to this (and their cofactors): bounded work for any
/// batch.
const MAX_DIVISOR_TRIALS: u64 = 1 << 16;

/// One layout that fits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    /// The plan with this layout (everything else as given).
    pub plan: Plan,
    /// That plan as a URL query (one click opens it).
    pub query: String,
    /// Peak `device_used` on the worst rank.
    pub device_used: Bytes,
    pub headroom: Bytes,
    /// Approximate change in step time against the plan as given, percent
    /// (negative = faster): [`speed_cost`].
    pub speed_cost_pct: i32,
    /// This layout is the plan as given.
    #[serde(default)]
    pub is_plan: bool,
}

/// What a layout search looked at and what it found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutSearch {
    /// Layouts in the search space: each combination of sharding, tensor and
    /// pipeline degree, checkpointing and offload the framework runs, with
    /// each micro-batch that divides the per-replica batch.
    pub considered: u64,
    /// Estimates run to decide them.
    pub estimated: u64,
    /// Layouts of the space that fit, at the high edge of the model's band
    /// ([`fits_with_band`]).
    pub fitting: u64,
    /// The fastest layouts that fit, fastest first (then the larger
    /// micro-batch, then the more headroom).
    pub best: Vec<Layout>,
}

/// Step time that recomputing the attention core adds, percent: its forward
/// FLOPs are `4·b·s²·h` of a block's `24·b·s·h² + 4·b·s²·h`, and a training
/// step costs three forwards (Korthikanti et al. 2022, "Reducing Activation
/// Recomputation in Large Transformer Models", §4 and Appendix A; Narayanan
/// et al. 2021, §5.1), so `s / (3·(6h + s))`: 2.6 % for h = 4096 at 2,048
/// tokens. Per-op selective checkpointing (torchtitan) recomputes less (its
/// matmul and attention outputs are kept): taken the same, the safe side.
pub fn selective_recompute_pct(plan: &Plan) -> i32 {
    let s = plan.training.seq_len as f64;
    let h = plan.model.hidden.max(1) as f64;
    (100.0 * s / (3.0 * (6.0 * h + s))).round() as i32
}

/// Pipeline bubble, percent of step time: `(p − 1) / (m·v)` for `p` stages,
/// `m` micro-batches a step and `v` virtual stages per GPU (Narayanan et al.
/// 2021, §2.2.1 and §2.2.2: 1F1B and the interleaved schedule).
pub fn pipeline_bubble_pct(plan: &Plan) -> i32 {
    let p = &plan.parallel;
    if p.pp <= 1 {
        return 0;
    }
    let m = if p.pp_microbatches > 0 {
        p.pp_microbatches
    } else {
        plan.training.grad_accum.max(1)
    };
    let v = match p.pp_schedule {
        PipelineSchedule::Interleaved => p.virtual_stages.max(1),
        PipelineSchedule::OneFOneB => 1,
    } as f64;
    (100.0 * (p.pp - 1) as f64 / (m as f64 * v)).round() as i32
}

/// Approximate step time of a plan's layout, percent above plain data
/// parallelism without recomputation or offload at `plain_micro_batch`: the
/// fix ladder's speed costs ([`crate::search`]) summed, the pipeline bubble
/// ([`pipeline_bubble_pct`]) and selective recomputation
/// ([`selective_recompute_pct`]) computed. For ranking layouts, not a
/// throughput prediction.
pub fn speed_cost(plan: &Plan, plain_micro_batch: u32) -> i32 {
    let t = &plan.training;
    let p = &plan.parallel;
    let every = t.checkpoint_every.max(1) as i32;
    let mut c = match t.checkpointing {
        Checkpointing::None => 0,
        Checkpointing::Full => COST_CHECKPOINTING / every,
        Checkpointing::Selective | Checkpointing::OpSelective => {
            selective_recompute_pct(plan) / every
        }
    };
    if t.activation_offload {
        c += COST_OFFLOAD_ACTIVATIONS;
    }
    if matches!(
        p.sharding,
        Sharding::Zero3 | Sharding::FsdpFull | Sharding::Hsdp
    ) {
        c += COST_ZERO_3;
    }
    // ZeRO++'s hpZ keeps backward's gathers within a node: what turning it
    // off costs ([`crate::search::COST_HPZ_OFF`]) it saves.
    if p.hpz_group().is_some() {
        c -= COST_HPZ_OFF;
    }
    if p.tp > 1 {
        c += COST_TP;
    }
    if p.cp > 1 {
        c += COST_CP;
    }
    c += pipeline_bubble_pct(plan);
    if p.offload.optimizer_offloaded() {
        c += COST_OFFLOAD_OPTIMIZER;
    }
    if p.offload.params_offloaded() {
        c += COST_OFFLOAD_PARAMS;
    }
    if t.sync_each_batch && t.grad_accum > 1 && p.sharding.is_fsdp() {
        c += COST_SYNC_EACH_BATCH;
    }
    if t.micro_batch < plain_micro_batch {
        c += COST_GRAD_ACCUM;
    }
    c
}

/// A layout's settings as words, each an English label and the number that
/// goes after it (`("TP", Some(8))`): what the planner translates and the CLI
/// joins ([`describe`]). Settings at their plain value (no TP, one stage,
/// nothing recomputed or offloaded) are left out.
pub fn layout_parts(plan: &Plan) -> Vec<(&'static str, Option<u32>)> {
    let p = &plan.parallel;
    let t = &plan.training;
    let mut v = Vec::new();
    v.push((
        match p.sharding {
            Sharding::None => "one GPU",
            Sharding::DataParallel => "nn.DataParallel",
            Sharding::Ddp => "DDP",
            Sharding::Zero1 if plan.framework == crate::framework::Framework::Megatron => {
                "Megatron distributed optimizer"
            }
            Sharding::Zero1 => "ZeRO-1",
            Sharding::Zero2 => "ZeRO-2",
            Sharding::Zero3 => "ZeRO-3",
            Sharding::FsdpFull => "FSDP full shard",
            Sharding::FsdpGradOp => "FSDP shard grad op",
            Sharding::Hsdp => "HSDP (hybrid)",
        },
        None,
    ));
    if let Some(hpz) = p.hpz_group() {
        v.push(("ZeRO++ hpZ over", Some(hpz)));
    }
    if p.tp > 1 {
        v.push(("TP", Some(p.tp)));
    }
    if p.pp > 1 {
        v.push(("PP", Some(p.pp)));
        if p.pp_schedule == PipelineSchedule::Interleaved && p.virtual_stages > 1 {
            v.push(("interleaved, virtual stages", Some(p.virtual_stages)));
        }
    }
    if p.cp > 1 {
        v.push(("CP", Some(p.cp)));
    }
    match t.checkpointing {
        Checkpointing::None => {}
        Checkpointing::Full => v.push(("full recomputation", None)),
        Checkpointing::Selective => v.push(("selective recomputation", None)),
        Checkpointing::OpSelective => v.push(("per-op selective recomputation", None)),
    }
    if t.checkpointing != Checkpointing::None && t.checkpoint_every > 1 {
        v.push(("applied to one block in", Some(t.checkpoint_every)));
    }
    if t.activation_offload {
        v.push(("activations on CPU", None));
    }
    if p.offload.params_offloaded() {
        v.push(("parameters and optimizer on CPU", None));
    } else if p.offload.optimizer_offloaded() {
        v.push(("optimizer on CPU", None));
    }
    if t.sync_each_batch && t.grad_accum > 1 && p.sharding.is_fsdp() {
        v.push(("gradients reduced every micro-batch", None));
    }
    v
}

/// Every label [`layout_parts`] gives, for the planner's translation table.
pub const LAYOUT_LABELS: [&str; 23] = [
    "one GPU",
    "nn.DataParallel",
    "DDP",
    "Megatron distributed optimizer",
    "ZeRO-1",
    "ZeRO-2",
    "ZeRO-3",
    "FSDP full shard",
    "FSDP shard grad op",
    "HSDP (hybrid)",
    "ZeRO++ hpZ over",
    "interleaved, virtual stages",
    "full recomputation",
    "selective recomputation",
    "per-op selective recomputation",
    "applied to one block in",
    "activations on CPU",
    "parameters and optimizer on CPU",
    "optimizer on CPU",
    "gradients reduced every micro-batch",
    "TP",
    "PP",
    "CP",
];

/// [`layout_parts`] as one line: `ZeRO-3 · TP 8 · full recomputation`.
pub fn describe(plan: &Plan) -> String {
    describe_in(plan, |label| label)
}

/// [`describe`] with each label put through `translate` (the planner's
/// language).
pub fn describe_in<'a>(plan: &Plan, translate: impl Fn(&'static str) -> &'a str) -> String {
    layout_parts(plan)
        .into_iter()
        .map(|(label, n)| match n {
            Some(n) => format!("{} {n}", translate(label)),
            None => translate(label).to_string(),
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// Divisors of `n` up to `cap`, ascending ([`MAX_DIVISOR_TRIALS`]).
fn divisors(n: u64, cap: u64) -> Vec<u32> {
    let mut out = Vec::new();
    let mut i = 1u64;
    while i * i <= n && i <= MAX_DIVISOR_TRIALS {
        if n.is_multiple_of(i) {
            for d in [i, n / i] {
                if d <= cap && d <= u32::MAX as u64 {
                    out.push(d as u32);
                }
            }
        }
        i += 1;
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// `v` with `extra` added when it is not there already.
fn with<T: PartialEq + Copy>(mut v: Vec<T>, extra: T) -> Vec<T> {
    if !v.contains(&extra) {
        v.push(extra);
    }
    v
}

/// Calls `f` with each layout of `plan`'s space (module docs) — the plan with
/// that layout, its micro-batch not yet set — with the micro-batches that
/// divide its per-replica batch and that batch.
fn for_each_layout(plan: &Plan, mut f: impl FnMut(&mut Plan, &[u32], u64)) {
    let support = plan.framework.layouts();
    let par = &plan.parallel;
    let gpus = par.num_gpus.max(1);
    let global = plan.global_batch();
    let node = par.gpus_per_node.max(1).min(gpus);

    // Context degrees: the plan's, and where the framework splits sequences
    // those long enough to split over the GPUs.
    let mut cps = vec![1u32];
    if support.context_parallel {
        cps.extend(context_parallel_degrees(plan, gpus));
    }
    let cps = with(cps, par.cp.max(1));
    // Tensor degrees: powers of two within a node dividing the GPU count.
    let mut tps = vec![1u32];
    if support.tensor_parallel_for(plan) {
        let mut t = 2u32;
        while t <= node.min(MAX_TP) && gpus.is_multiple_of(t) {
            tps.push(t);
            t *= 2;
        }
    }
    let tps = with(tps, par.tp.max(1));
    // Recomputation and offload, the same for every parallel split: each
    // checkpointing policy with each state offload, and the checkpointed
    // activations on the host where the framework has the switch.
    let mut checkpointing = vec![Checkpointing::None, Checkpointing::Full];
    if support.selective_recompute {
        checkpointing.push(Checkpointing::Selective);
    }
    let checkpointing = with(checkpointing, plan.training.checkpointing);
    let cpu = OffloadDevice::Cpu;
    let mut offloads = vec![Offload::NONE];
    if support.offload_optimizer {
        offloads.push(Offload {
            optimizer: cpu,
            params: OffloadDevice::None,
        });
    }
    if support.offload_params {
        offloads.push(Offload {
            optimizer: cpu,
            params: cpu,
        });
    }
    let offloads = with(offloads, par.offload);
    // Each policy on every block (the plan's own at its own k), and full
    // recomputation of every k-th block only where the framework has it.
    let t = &plan.training;
    let mut policies: Vec<(Checkpointing, u32)> = checkpointing
        .iter()
        .map(|&c| {
            (
                c,
                if c == t.checkpointing {
                    t.checkpoint_every.max(1)
                } else {
                    1
                },
            )
        })
        .collect();
    if support.checkpoint_every {
        for k in CHECKPOINT_EVERY {
            if k <= plan.model.layers {
                policies = with(policies, (Checkpointing::Full, k));
            }
        }
    }
    let mut memory = Vec::new();
    for &(ckpt, every) in &policies {
        for &offload in &offloads {
            memory.push((ckpt, every, offload, false));
            let all_blocks = ckpt == Checkpointing::Full && every == 1;
            if (all_blocks && support.offload_activations)
                || (ckpt == t.checkpointing
                    && every == t.checkpoint_every.max(1)
                    && t.activation_offload)
            {
                memory.push((ckpt, every, offload, true));
            }
        }
    }

    let mut mb_cache: Vec<(u64, Vec<u32>)> = Vec::new();
    for (&cp, &tp) in cps.iter().flat_map(|c| tps.iter().map(move |t| (c, t))) {
        if !gpus.is_multiple_of(tp.saturating_mul(cp)) {
            continue;
        }
        let as_planned = tp == par.tp.max(1) && cp == par.cp.max(1);
        let rest = gpus / (tp * cp);
        let pps = if support.pipeline_parallel {
            divisors(rest as u64, plan.model.layers.max(1) as u64)
        } else {
            vec![1]
        };
        for pp in with(pps, par.pp.max(1)) {
            if !rest.is_multiple_of(pp) {
                continue;
            }
            let dp = rest / pp;
            if !global.is_multiple_of(dp as u64) {
                continue;
            }
            let per_replica = global / dp as u64;
            let mbs = match mb_cache.iter().find(|(n, _)| *n == per_replica) {
                Some((_, v)) => v.clone(),
                None => {
                    let v = divisors(per_replica, crate::validate::MAX_MICRO_BATCH);
                    mb_cache.push((per_replica, v.clone()));
                    v
                }
            };
            if mbs.is_empty() {
                continue;
            }
            // Shardings: over the data-parallel ranks; with one replica the
            // plain runtime, and the parameter-sharding ones only to offload.
            let shardings: Vec<Sharding> = if dp > 1 {
                support.shardings.to_vec()
            } else {
                let plain = if gpus > 1 {
                    Sharding::Ddp
                } else {
                    Sharding::None
                };
                let mut v = vec![plain];
                if support.offload_params {
                    v.extend(support.shardings.iter().filter(|s| s.shards_params()));
                }
                v
            };
            let shardings = if as_planned && pp == par.pp.max(1) {
                with(shardings, par.sharding)
            } else {
                shardings
            };
            // Pipeline schedules: 1F1B, and interleaved where the layers split.
            let mut schedules = vec![(PipelineSchedule::OneFOneB, 1u32)];
            if pp > 1 && support.pipeline_parallel {
                for v in VIRTUAL_STAGES {
                    if plan.model.layers.is_multiple_of(pp * v) {
                        schedules.push((PipelineSchedule::Interleaved, v));
                    }
                }
            }
            if pp == par.pp.max(1) {
                schedules = with(schedules, (par.pp_schedule, par.virtual_stages.max(1)));
            }
            let mut p = plan.clone();
            p.parallel.tp = tp;
            p.parallel.cp = cp;
            p.parallel.sequence_parallel = if tp == par.tp.max(1) {
                par.sequence_parallel
            } else {
                tp > 1 && support.sequence_parallel
            };
            p.parallel.pp = pp;
            p.parallel.pp_microbatches = 0;
            for &(schedule, virtual_stages) in &schedules {
                p.parallel.pp_schedule = schedule;
                p.parallel.virtual_stages = virtual_stages;
                for &sharding in &shardings {
                    p.parallel.sharding = sharding;
                    // ZeRO++'s hpZ group as planned where it applies: ZeRO-3
                    // over data-parallel ranks it divides.
                    let hpz = par.hpz_partition_size.max(1);
                    p.parallel.hpz_partition_size =
                        if sharding == Sharding::Zero3 && dp.is_multiple_of(hpz) {
                            hpz
                        } else {
                            1
                        };
                    for &(ckpt, every, offload, act) in &memory {
                        p.parallel.offload = offload;
                        p.training.checkpoint_every = every;
                        p.training.checkpointing = ckpt;
                        p.training.activation_offload = act;
                        p.training.sync_each_batch = plan.training.sync_each_batch;
                        f(&mut p, &mbs, per_replica);
                    }
                }
            }
        }
    }
}

/// The layout search over `plan`'s framework, GPUs and global batch
/// (module docs): the `shown` fastest layouts that fit, and how many were
/// considered, estimated and found to fit. The plan itself must be valid.
pub fn search_layouts(plan: &Plan, shown: usize) -> Result<LayoutSearch, PlanError> {
    let base = estimate(plan)?;
    let own_cost = speed_cost(plan, plan.training.micro_batch);
    let mut out = LayoutSearch::default();
    let mut found: Vec<Layout> = Vec::new();
    for_each_layout(plan, |p, mbs, per_replica| {
        if let Some(l) = search_one(plan, own_cost, p, mbs, per_replica, &mut out) {
            found.push(l);
        }
    });
    out.best = pareto(found, shown, base.capacity);
    Ok(out)
}

/// A slower layout is shown only when it frees at least this share of the
/// card more than every faster one shown (a display rule: offloading the
/// optimizer of a run sharded over thousands of ranks frees a few MiB).
pub const LAYOUT_MIN_SAVING: f64 = 0.01;

/// The layouts no other beats on both speed and memory, fastest first, at
/// most `shown`: each one after the first is slower than those above it and
/// leaves more memory free ([`LAYOUT_MIN_SAVING`] of `capacity` more). Among
/// equally fast ones the plan's own layout, then the larger micro-batch, then
/// the fewer GPUs a model replica spans, then the lower peak goes first.
fn pareto(mut found: Vec<Layout>, shown: usize, capacity: Bytes) -> Vec<Layout> {
    let span = |l: &Layout| l.plan.parallel.tp as u64 * l.plan.parallel.pp as u64;
    found.sort_by(|a, b| {
        a.speed_cost_pct
            .cmp(&b.speed_cost_pct)
            .then(b.is_plan.cmp(&a.is_plan))
            .then(
                b.plan
                    .training
                    .micro_batch
                    .cmp(&a.plan.training.micro_batch),
            )
            .then(span(a).cmp(&span(b)))
            .then(a.device_used.cmp(&b.device_used))
    });
    let step = (capacity.as_f64() * LAYOUT_MIN_SAVING) as u64;
    let mut lowest: Option<u64> = None;
    let mut out = Vec::new();
    for l in found {
        if out.len() >= shown {
            break;
        }
        let used = l.device_used.get();
        if lowest.is_none_or(|low| used.saturating_add(step) <= low) {
            lowest = Some(used);
            out.push(l);
        }
    }
    out
}

/// A layout fits when its peak fits at the high edge of the model's
/// uncertainty band ([`crate::estimate::BAND_ABOVE`], from the calibration
/// residuals): a search that ranks layouts by speed would otherwise put first
/// the ones that fill the card to its last MiB.
fn fits_with_band(e: &Estimate) -> bool {
    e.fits && e.band_high <= e.capacity
}

/// Sets `p`'s micro-batch to `mb` and its accumulation to the rest of the
/// per-replica batch. Accumulating under FSDP where the framework keeps the
/// unsharded gradients between micro-batches, they are reduced every
/// micro-batch instead, as the fix ladder's smaller micro-batch does.
fn set_micro_batch(p: &mut Plan, mb: u32, per_replica: u64, sync_each_batch: bool) {
    p.training.micro_batch = mb;
    p.training.grad_accum = (per_replica / mb as u64).min(u32::MAX as u64) as u32;
    p.training.sync_each_batch = sync_each_batch
        || (p.training.grad_accum > 1
            && p.parallel.sharding.is_fsdp()
            && p.framework.fsdp_no_sync_accumulation());
}

/// One layout (`p`, its micro-batch unset): counts its micro-batches as
/// considered, finds the largest that fits ([`crate::search::largest`]),
/// and returns the cheapest of those that fit with its estimate; `own_cost`
/// is the plan's own [`speed_cost`].
fn search_one(
    plan: &Plan,
    own_cost: i32,
    p: &mut Plan,
    mbs: &[u32],
    per_replica: u64,
    out: &mut LayoutSearch,
) -> Option<Layout> {
    let plain_mb = plan.training.micro_batch;
    let sync = p.training.sync_each_batch;
    let mut fits_at = |p: &mut Plan, i: usize| -> Option<bool> {
        set_micro_batch(p, mbs[i], per_replica, sync);
        out.estimated += 1;
        estimate(p).ok().map(|e| fits_with_band(&e))
    };
    // An invalid layout (heads not divisible by TP, a schedule the layers
    // do not split into) is not in the space.
    if !fits_at(p, 0)? {
        out.considered += mbs.len() as u64;
        return None;
    }
    let last = (mbs.len() - 1) as u32;
    let good = crate::search::largest(0, last, |i| i == 0 || fits_at(p, i as usize) == Some(true))
        .unwrap_or(0) as usize;
    out.considered += mbs.len() as u64;
    out.fitting += good as u64 + 1;
    // The cheapest micro-batch of those that fit (the pipeline's bubble
    // shrinks with more of them; elsewhere the largest).
    let pick = (0..=good)
        .rev()
        .min_by_key(|&i| {
            set_micro_batch(p, mbs[i], per_replica, sync);
            speed_cost(p, plain_mb)
        })
        .unwrap_or(good);
    set_micro_batch(p, mbs[pick], per_replica, sync);
    out.estimated += 1;
    let e = estimate(p).ok()?;
    Some(Layout {
        query: query::encode(p),
        device_used: e.peak.device_used,
        headroom: e.headroom,
        speed_cost_pct: speed_cost(p, plain_mb) - own_cost,
        is_plan: p == plan,
        plan: p.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Framework;
    use crate::query::decode_str;

    fn plan(q: &str) -> Plan {
        decode_str(q).unwrap()
    }

    /// Every layout shown fits at the band's high edge, keeps the global
    /// batch and everything outside the layout, and opens as itself.
    fn check_layouts(p: &Plan, r: &LayoutSearch, shown: usize) {
        assert!(r.fitting <= r.considered, "{r:?}");
        assert!(r.best.len() <= shown);
        for l in &r.best {
            let e = estimate(&l.plan).unwrap();
            assert!(fits_with_band(&e), "{:?}", l.query);
            assert_eq!(e.peak.device_used, l.device_used);
            assert_eq!(l.plan.global_batch(), p.global_batch(), "{}", l.query);
            assert_eq!(l.plan.model, p.model);
            assert_eq!(l.plan.gpu, p.gpu);
            assert_eq!(l.plan.parallel.num_gpus, p.parallel.num_gpus);
            assert_eq!(l.plan.training.seq_len, p.training.seq_len);
            assert_eq!(l.plan.training.precision, p.training.precision);
            assert_eq!(decode_str(&l.query).unwrap(), l.plan);
        }
        // Fastest first; each slower one frees at least the minimum saving.
        let step = (p.gpu.capacity_mib as f64 * 1048576.0 * LAYOUT_MIN_SAVING) as u64;
        for w in r.best.windows(2) {
            assert!(w[0].speed_cost_pct <= w[1].speed_cost_pct, "{r:?}");
            assert!(w[1].device_used.get() + step <= w[0].device_used.get());
        }
    }

    #[test]
    fn a_plan_that_fits_is_matched_or_beaten() {
        for q in [
            "",
            "?gpus=8&shard=zero2",
            "?model=llama-3.2-1b&gpus=4&mb=8&ga=2&shard=fsdp-full&fw=torchtune",
        ] {
            let p = plan(q);
            let e = estimate(&p).unwrap();
            assert!(fits_with_band(&e), "{q}");
            let r = search_layouts(&p, LAYOUTS_SHOWN).unwrap();
            check_layouts(&p, &r, LAYOUTS_SHOWN);
            // The plan's own layout is in the space: the fastest layout found
            // is at least as fast, and the plan is found as itself.
            assert!(r.best[0].speed_cost_pct <= 0, "{q}: {:?}", r.best[0]);
            // Fitting, it is first unless another layout is faster.
            assert!(r.best[0].is_plan || r.best[0].speed_cost_pct < 0, "{q}");
            let all = search_layouts(&p, usize::MAX).unwrap();
            assert!(all.best.iter().filter(|l| l.is_plan).count() <= 1);
            for l in r.best.iter().filter(|l| l.is_plan) {
                assert_eq!(l.plan, p);
                assert_eq!(l.speed_cost_pct, 0);
            }
        }
    }

    #[test]
    fn zero_plus_plus_keeps_its_hpz_group_where_it_applies() {
        // DeepSpeed ZeRO-3 with hpZ over a node, Llama-3.1-70B on 32 GPUs:
        // the search keeps the group on ZeRO-3 layouts whose data-parallel
        // ranks it divides, drops it elsewhere (every layout stays valid),
        // and counts the plan's own as faster than ZeRO-3 without it.
        let p = plan("?model=llama-3.1-70b&gpus=32&fw=deepspeed&prec=bf16&shard=zero3&hpz=8&mb=1&ga=4&ckpt=full");
        assert!(estimate(&p).unwrap().fits);
        let r = search_layouts(&p, 100).unwrap();
        check_layouts(&p, &r, 100);
        assert!(r.best.iter().any(|l| l.is_plan), "{:?}", r.best);
        for l in &r.best {
            let par = &l.plan.parallel;
            if par.sharding != Sharding::Zero3 {
                assert_eq!(par.hpz_partition_size, 1, "{}", l.query);
            }
        }
        // Every candidate the search walks: the other shardings without hpZ,
        // some of them valid.
        let (mut others, mut zero3_hpz) = (0, 0);
        for_each_layout(&p, |q, _, _| {
            if q.parallel.sharding == Sharding::Zero3 {
                zero3_hpz += usize::from(q.parallel.hpz_partition_size == 8);
            } else {
                assert_eq!(q.parallel.hpz_partition_size, 1);
                others += usize::from(crate::validate::validate(q).is_ok());
            }
        });
        assert!(others > 0 && zero3_hpz > 0, "{others} {zero3_hpz}");
        let mut plain = p.clone();
        plain.parallel.hpz_partition_size = 1;
        assert_eq!(speed_cost(&p, 1), speed_cost(&plain, 1) - COST_HPZ_OFF);
        assert!(
            describe(&p).contains("ZeRO++ hpZ over 8"),
            "{}",
            describe(&p)
        );
    }

    #[test]
    fn a_plan_that_does_not_fit_gets_layouts_that_do() {
        // Llama-3.1-70B, full fine-tune, 8 × H100 under the Trainer: the
        // states alone are 16 bytes a parameter over 8 ranks, 140 GB each.
        let p = plan("?model=llama-3.1-70b&gpus=8&mb=4&ga=8");
        assert!(!estimate(&p).unwrap().fits);
        let r = search_layouts(&p, LAYOUTS_SHOWN).unwrap();
        check_layouts(&p, &r, LAYOUTS_SHOWN);
        assert!(!r.best.is_empty());
        // Only offloading the states gets it there, at ZeRO-3.
        for l in &r.best {
            assert!(l.plan.parallel.offload.optimizer_offloaded(), "{}", l.query);
            assert!(l.plan.parallel.sharding.shards_params(), "{}", l.query);
            assert!(l.speed_cost_pct > 0);
        }
    }

    #[test]
    fn only_what_the_framework_runs() {
        // The Trainer: no tensor or pipeline parallelism.
        let p = plan("?model=llama-3.1-70b&gpus=16&mb=1&ga=4");
        let r = search_layouts(&p, 100).unwrap();
        assert!(r.fitting > 0);
        assert!(r
            .best
            .iter()
            .all(|l| l.plan.parallel.tp == 1 && l.plan.parallel.pp == 1));
        // Megatron-LM: TP and PP, no ZeRO-2/3 or parameter offload.
        let p = plan("?model=llama-3.1-70b&gpus=64&fw=megatron&mb=1&ga=16&seq=8192");
        let r = search_layouts(&p, 100).unwrap();
        check_layouts(&p, &r, 100);
        assert!(r.best.iter().any(|l| l.plan.parallel.tp > 1));
        assert!(r.best.iter().any(|l| l.plan.parallel.pp > 1));
        for l in &r.best {
            let par = &l.plan.parallel;
            assert!(matches!(par.sharding, Sharding::Ddp | Sharding::Zero1));
            assert!(!par.offload.params_offloaded());
            assert!(par.tp <= MAX_TP && par.tp <= par.gpus_per_node);
            assert!(l.plan.model.heads.is_multiple_of(par.tp));
        }
        // torchtune: TP in its full fine-tune, without sequence parallelism;
        // none in its LoRA recipes.
        let q = "?model=llama-3.1-70b&gpus=16&mb=1&ga=4&fw=torchtune&shard=fsdp-full";
        let r = search_layouts(&plan(q), usize::MAX).unwrap();
        let tp: Vec<&Layout> = r.best.iter().filter(|l| l.plan.parallel.tp > 1).collect();
        assert!(!tp.is_empty(), "{r:?}");
        assert!(tp.iter().all(|l| !l.plan.parallel.sequence_parallel));
        let r = search_layouts(&plan(&format!("{q}&ft=lora&rank=16")), usize::MAX).unwrap();
        assert!(r.fitting > 0);
        assert!(r.best.iter().all(|l| l.plan.parallel.tp == 1), "{r:?}");
        // Unsloth on one GPU: no sharding, no state offload.
        let p = plan("?model=llama-3.1-8b&fw=unsloth&ft=qlora&gpus=1");
        assert_eq!(p.framework, Framework::Unsloth);
        let r = search_layouts(&p, 100).unwrap();
        check_layouts(&p, &r, 100);
        for l in &r.best {
            assert_eq!(l.plan.parallel.sharding, Sharding::None);
            assert_eq!(l.plan.parallel.offload, Offload::NONE);
        }
    }

    #[test]
    fn long_sequences_get_context_parallel_layouts() {
        // Llama-3.1-8B at 128K tokens on 8 × H100 under torchtitan: context
        // parallelism splits the sequence; the Trainer has none.
        let q = "?model=llama-3.1-8b&gpus=8&mb=1&ga=1&seq=131072&fw=torchtitan&shard=fsdp-full";
        let p = plan(q);
        let r = search_layouts(&p, 100).unwrap();
        check_layouts(&p, &r, 100);
        let cp: Vec<&Layout> = r.best.iter().filter(|l| l.plan.parallel.cp > 1).collect();
        assert!(!cp.is_empty(), "{r:?}");
        for l in cp {
            let par = &l.plan.parallel;
            assert!(l.plan.training.seq_len / par.cp >= crate::search::MIN_CP_LOCAL_SEQ);
            assert!(describe(&l.plan).contains(&format!("CP {}", par.cp)));
        }
        let p = plan(&q.replace("torchtitan", "hf-trainer"));
        let r = search_layouts(&p, 100).unwrap();
        assert!(r.best.iter().all(|l| l.plan.parallel.cp == 1));
        // A short sequence is not split: each rank would keep under
        // MIN_CP_LOCAL_SEQ tokens.
        let p = plan("?model=llama-3.1-70b&gpus=64&fw=megatron&mb=1&ga=16&seq=8192");
        let mut cps = Vec::new();
        for_each_layout(&p, |t, _, _| cps.push(t.parallel.cp));
        assert!(cps.iter().all(|&c| c == 1));
        // A plan on CP keeps its degree among those searched.
        let p = plan("?model=llama-3.1-70b&gpus=64&fw=megatron&mb=1&ga=16&seq=8192&cp=2");
        let mut cps = Vec::new();
        for_each_layout(&p, |t, _, _| cps.push(t.parallel.cp));
        assert!(cps.contains(&2) && cps.contains(&1));
    }

    #[test]
    fn every_kth_block_recomputed_where_the_framework_has_it() {
        let every = |q: &str| {
            let mut ks = Vec::new();
            for_each_layout(&plan(q), |t, _, _| {
                if t.training.checkpoint_every > 1 {
                    assert_eq!(t.training.checkpointing, Checkpointing::Full);
                    assert!(!t.training.activation_offload);
                }
                ks.push(t.training.checkpoint_every)
            });
            ks.sort_unstable();
            ks.dedup();
            ks
        };
        assert_eq!(
            every("?model=llama-3.1-8b&gpus=8&fw=torchtitan&shard=fsdp-full"),
            [1, 2, 4]
        );
        assert_eq!(
            every("?model=llama-3.1-8b&gpus=8&fw=megatron&shard=zero1"),
            [1, 2, 4]
        );
        assert_eq!(every("?model=llama-3.1-8b&gpus=8"), [1]);
        // The plan's own k is kept under the Trainer too.
        assert_eq!(
            every("?model=llama-3.1-8b&gpus=8&ckpt=full&ckpt_every=3"),
            [1, 3]
        );
        // Half the blocks recomputed cost half of full recomputation.
        let p = plan("?model=llama-3.1-8b&gpus=8&fw=torchtitan&ckpt=full&ckpt_every=2");
        assert_eq!(
            speed_cost(&p, p.training.micro_batch),
            COST_CHECKPOINTING / 2
        );
        assert!(describe(&p).ends_with("full recomputation · applied to one block in 2"));
    }

    /// The micro-batch search agrees with estimating every micro-batch of
    /// every layout.
    #[test]
    fn micro_batch_search_matches_brute_force() {
        for q in [
            "?model=llama-3.1-8b&gpus=8&mb=4&ga=8&seq=4096",
            "?model=llama-3.1-70b&gpus=16&fw=megatron&mb=1&ga=8&seq=4096",
            "?model=llama-3.1-8b&gpus=8&fw=torchtitan&mb=1&ga=2&seq=65536",
        ] {
            let p = plan(q);
            let r = search_layouts(&p, usize::MAX).unwrap();
            // Brute force over the same space: every micro-batch of every
            // layout estimated.
            let mut brute = 0u64;
            let mut considered = 0u64;
            for_each_layout(&p, |t, mbs, per_replica| {
                let sync = t.training.sync_each_batch;
                let mut valid = false;
                for &mb in mbs {
                    set_micro_batch(t, mb, per_replica, sync);
                    if let Ok(e) = estimate(t) {
                        valid = true;
                        brute += fits_with_band(&e) as u64;
                    }
                }
                if valid {
                    considered += mbs.len() as u64;
                }
            });
            assert_eq!(r.considered, considered, "{q}");
            assert_eq!(r.fitting, brute, "{q}");
            assert!(r.estimated < considered, "{q}: the search estimates fewer");
        }
    }

    #[test]
    fn nothing_fits_and_absurd_inputs_end_cleanly() {
        // 405B on one 12 GB card: nothing in the space fits.
        let p = plan("?model=llama-3.1-405b&gpu=rtx3060-12gb&gpus=1");
        let r = search_layouts(&p, LAYOUTS_SHOWN).unwrap();
        assert!(r.considered > 0);
        assert_eq!(r.fitting, 0);
        assert!(r.best.is_empty());
        // A million GPUs, a batch of millions: bounded work, no overflow.
        for q in [
            "?model=llama-3.1-405b&gpus=1048576&fw=megatron",
            "?model=llama-3.1-8b&gpus=65536&mb=1024&ga=1000&seq=16",
            "?model=llama-3.1-405b&gpus=1048576&fw=megatron&seq=1048576",
        ] {
            let p = plan(q);
            let r = search_layouts(&p, LAYOUTS_SHOWN).unwrap();
            check_layouts(&p, &r, LAYOUTS_SHOWN);
            // (A million tokens on a million GPUs: eight CP degrees, 6,186.)
            assert!(r.estimated < 10_000, "{q}: {}", r.estimated);
        }
        // An invalid plan is refused with its field, as the estimate does.
        let mut p = Plan::default();
        p.parallel.num_gpus = 0;
        assert!(search_layouts(&p, LAYOUTS_SHOWN).is_err());
    }

    #[test]
    fn layouts_read_as_their_settings() {
        let p = plan(
            "?gpus=64&fw=megatron&tp=8&pp=4&pp_sched=interleaved&vstages=2&ckpt=full&shard=zero1",
        );
        assert_eq!(
            describe(&p),
            "Megatron distributed optimizer · TP 8 · PP 4 · interleaved, virtual stages 2 · full recomputation"
        );
        let p = plan("?gpus=8&shard=zero3&off_opt=cpu&off_par=cpu");
        assert_eq!(describe(&p), "ZeRO-3 · parameters and optimizer on CPU");
        assert_eq!(describe(&plan("?gpus=1&shard=none")), "one GPU");
        // Every word a layout can have is in the translation list.
        let mut read = 0;
        for fw in ["megatron", "hf-trainer"] {
            for shard in [
                "none",
                "data-parallel",
                "ddp",
                "zero1",
                "zero2",
                "zero3",
                "fsdp-full",
                "fsdp-grad-op",
                "hsdp",
            ] {
                for ckpt in ["none", "full", "selective", "op-selective"] {
                    for off in ["", "&off_opt=cpu", "&off_opt=cpu&off_par=cpu"] {
                        let q = format!(
                            "?gpus=64&fw={fw}&shard={shard}&ckpt={ckpt}{off}&tp=2&pp=2&cp=2\
                             &pp_sched=interleaved&vstages=2&ckpt_every=2&act_off=true&ga=2&sync_each=true"
                        );
                        let Ok(p) = decode_str(&q) else { continue };
                        read += 1;
                        for (label, _) in layout_parts(&p) {
                            assert!(LAYOUT_LABELS.contains(&label), "{label}");
                        }
                    }
                }
            }
        }
        assert_eq!(read, 2 * 9 * 4 * 3);
    }

    #[test]
    fn costs_follow_their_sources() {
        let mut p = plan("?model=llama-3.1-8b&seq=2048");
        // Korthikanti et al.: s / (3·(6h + s)) = 2048 / (3 · 26,624) = 2.6 %.
        assert_eq!(selective_recompute_pct(&p), 3);
        p.training.seq_len = 32768;
        assert_eq!(selective_recompute_pct(&p), 19);
        // Narayanan et al.: (p − 1)/(m·v).
        p.parallel.num_gpus = 8;
        p.parallel.pp = 4;
        p.training.grad_accum = 12;
        assert_eq!(pipeline_bubble_pct(&p), 25);
        p.parallel.pp_schedule = PipelineSchedule::Interleaved;
        p.parallel.virtual_stages = 2;
        assert_eq!(pipeline_bubble_pct(&p), 13);
        p.parallel.pp_schedule = PipelineSchedule::OneFOneB;
        assert_eq!(pipeline_bubble_pct(&p), 25);
    }
}
