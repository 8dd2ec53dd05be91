//! Searches over one input (largest micro-batch, longest sequence that fit) and
//! the fix ladder: the optimisation steps users know from the seed articles,
//! in their order (DESIGN.md §1.2), each evaluated by the model.

use crate::error::PlanError;
use crate::estimate::{estimate, Estimate};
use crate::framework::Framework;
#[cfg(doc)]
use crate::framework::LayoutSupport;
use crate::model::{Mlp, Norm};
use crate::plan::{Checkpointing, Loss, Objective, OffloadDevice, Plan, Precision, Sharding};
use crate::query;
use crate::units::Bytes;
use crate::validate::{MAX_MICRO_BATCH, MAX_SEQ_LEN};
use serde::{Deserialize, Serialize};

fn fits(plan: &Plan) -> bool {
    estimate(plan).map(|e| e.fits).unwrap_or(false)
}

/// Largest `x` in `[lo, hi]` with `ok(x)`, assuming `ok` is monotone
/// (true up to some point, false after). `None` when `ok(lo)` fails.
pub(crate) fn largest(lo: u32, hi: u32, mut ok: impl FnMut(u32) -> bool) -> Option<u32> {
    if lo > hi || !ok(lo) {
        return None;
    }
    // Gallop up, then bisect: ~2·log2(answer) evaluations.
    let mut good = lo;
    let mut step = 1u32;
    let mut bad = loop {
        let next = good.saturating_add(step).min(hi);
        if next == good {
            return Some(good);
        }
        if ok(next) {
            good = next;
            if good == hi {
                return Some(hi);
            }
            step = step.saturating_mul(2);
        } else {
            break next;
        }
    };
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if ok(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some(good)
}

/// The largest micro-batch that fits, everything else unchanged.
pub fn max_micro_batch(plan: &Plan) -> Result<Option<u32>, PlanError> {
    estimate(plan)?;
    let mut p = plan.clone();
    Ok(largest(1, MAX_MICRO_BATCH as u32, |mb| {
        p.training.micro_batch = mb;
        fits(&p)
    }))
}

/// The longest sequence (a multiple of the context-parallel degree) that fits.
pub fn max_seq_len(plan: &Plan) -> Result<Option<u32>, PlanError> {
    estimate(plan)?;
    let cp = plan.parallel.cp.max(1);
    let mut p = plan.clone();
    Ok(largest(1, MAX_SEQ_LEN as u32 / cp, |k| {
        p.training.seq_len = k * cp;
        fits(&p)
    })
    .map(|k| k * cp))
}

/// Which input a sweep varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Axis {
    MicroBatch,
    SeqLen,
}

/// Peak `device_used` of the plan with `axis` set to each of `points`
/// (`None` where that value is invalid, e.g. not a multiple of `cp`).
pub fn sweep(plan: &Plan, axis: Axis, points: &[u32]) -> Vec<(u32, Option<Bytes>)> {
    let mut p = plan.clone();
    points
        .iter()
        .map(|&x| {
            match axis {
                Axis::MicroBatch => p.training.micro_batch = x,
                Axis::SeqLen => p.training.seq_len = x,
            }
            (x, estimate(&p).ok().map(|e| e.peak.device_used))
        })
        .collect()
}

/// Powers of two from 1 that bracket `around` (at least up to 2·around), capped.
pub fn log2_points(around: u32, cap: u32) -> Vec<u32> {
    let top = around.max(1).saturating_mul(4).min(cap).max(2);
    let mut v = Vec::new();
    let mut x = 1u32;
    while x <= top {
        v.push(x);
        match x.checked_mul(2) {
            Some(n) => x = n,
            None => break,
        }
    }
    v
}

/// One rung of the fix ladder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rung {
    /// Stable id (`mixed-precision`, `checkpointing`, `grad-accum`, `zero-1`…).
    pub id: String,
    /// The plan after this rung (cumulative: every rung above it applied too).
    pub plan: Plan,
    /// That plan as a URL query (one click applies it).
    pub query: String,
    /// Peak `device_used` after the rung.
    pub device_used: Bytes,
    /// Bytes saved relative to the rung before (or the plan as given).
    pub saving: Bytes,
    pub fits: bool,
    /// Approximate change in step time, percent (negative = faster).
    pub speed_cost_pct: i32,
}

fn rung(id: &str, plan: Plan, before: &Estimate, cost: i32) -> Option<(Rung, Estimate)> {
    let e = estimate(&plan).ok()?;
    rung_at(id, plan, e, before, cost)
}

/// [`rung`] for a plan already estimated to `e`.
fn rung_at(
    id: &str,
    plan: Plan,
    e: Estimate,
    before: &Estimate,
    cost: i32,
) -> Option<(Rung, Estimate)> {
    let saving = before.peak.device_used.saturating_sub(e.peak.device_used);
    if saving == Bytes::ZERO {
        return None;
    }
    Some((
        Rung {
            id: id.to_string(),
            query: query::encode(&plan),
            device_used: e.peak.device_used,
            saving,
            fits: e.fits,
            speed_cost_pct: cost,
            plan,
        },
        e,
    ))
}

/// Speed costs, percent of step time (approximate, for ranking rungs):
/// - mixed precision: tensor-core 16-bit matmuls run ≥ 2× fp32/TF32 (NVIDIA A100/H100 data sheets);
/// - full recomputation adds one forward, ≈ 1/3 of a step (Chen et al. 2016; Korthikanti et al. 2022 §5);
/// - smaller micro-batches with more accumulation: smaller matmuls, ≈ 10 %;
/// - ZeRO-1/2 communicate as much as DDP; ZeRO-3 1.5× (Rajbhandari et al. 2020 §7);
/// - tensor parallelism within a node: ≈ 15 % at t ≤ 8 (Narayanan et al. 2021, Fig. 13);
/// - context parallelism: the ring's key/value exchange overlapped with the
///   attention it feeds; Llama 3's 128K-token phase (TP 8, CP 16, PP 16) ran
///   at 380 TFLOP/s a GPU against 400 at 8K tokens without CP (Dubey et al.
///   2024, "The Llama 3 Herd of Models", Table 4): ≈ 5 %;
/// - CPU offload: PCIe transfers of states each step, ≈ 50–100 % (ZeRO-Offload, Ren et al. 2021);
///   of the checkpointed activations, one block input each way per block, copied on a side stream
///   beside the compute: ≈ 10 % (torchtune's `OffloadActivations` overlaps them with CUDA streams);
/// - torch.compile: fused element-wise kernels, measured −16 % step time on the H200 for
///   Llama-3.2-1B in bf16 and amp-bf16 (calibration/h200-2026-11-30, `step_s` after the first step).
/// - a QLoRA base's embeddings and norms left in 16 bits: the same matmuls (the 4-bit ones
///   compute in 16 bits either way), no fp32 stream to cast back before flash attention: 0 %;
/// - a 4-bit base double-quantized: one more int8 → fp32 lookup per 64-weight block when
///   a weight is dequantized ("Double Quantization … no performance degradation",
///   Dettmers et al. 2023, QLoRA §2/§4): 0 %;
/// - DDP's `gradient_as_bucket_view=True`: the same allreduce, minus the copies between
///   gradients and buckets ("also avoids the overhead of copying between gradients and
///   allreduce communication buckets", PyTorch `DistributedDataParallel` docs): 0 %;
/// - FSDP gradients reduced every micro-batch (`sync_each_batch`) instead of once per
///   accumulation: one reduce-scatter per micro-batch, as ZeRO-2 and torchtune always do,
///   mostly overlapped with backward: ≈ 5 %;
/// - ZeRO++'s hpZ turned off: backward gathers the parameters across nodes again — of
///   ZeRO-3's three volumes of M a step, the one it had moved within a node (Wang et al.
///   2023, "ZeRO++", §3.2) — which is what ZeRO-3 adds over ZeRO-2, so its cost: ≈ 15 %;
/// - fused kernels (Liger): "increase multi-GPU training throughput by 20 %" (Liger Kernel
///   README; Hsu et al. 2024, arXiv:2410.10989 §4), taken conservatively as −15 % step time.
/// - an adapter's frozen base loaded in 16 bits instead of fp32 (`torch_dtype=bfloat16`):
///   the same 16-bit matmuls autocast ran, without casting each weight first: 0 %.
/// - padded batches packed instead (or run through flash-attn's varlen path): no compute on
///   padding and no masked kernel, "up to 2x improvement in training throughput" (Hugging
///   Face blog, "Improving Hugging Face Training Efficiency Through Packing with Flash
///   Attention 2", 2024), taken conservatively as −10 % step time.
pub const COST_MIXED_PRECISION: i32 = -50;
pub const COST_BASE_16BIT: i32 = 0;
pub const COST_COMPILE: i32 = -15;
pub const COST_KBIT_16BIT: i32 = 0;
pub const COST_DOUBLE_QUANT: i32 = 0;
pub const COST_BUCKET_VIEW: i32 = 0;
pub const COST_FUSED_KERNELS: i32 = -15;
pub const COST_UNPADDED: i32 = -10;
pub const COST_CHECKPOINTING: i32 = 33;
pub const COST_GRAD_ACCUM: i32 = 10;
pub const COST_SYNC_EACH_BATCH: i32 = 5;
pub const COST_HPZ_OFF: i32 = COST_ZERO_3;
pub const COST_ZERO_1_2: i32 = 0;
pub const COST_ZERO_3: i32 = 15;
pub const COST_TP: i32 = 15;
pub const COST_CP: i32 = 5;
pub const COST_OFFLOAD_ACTIVATIONS: i32 = 10;
pub const COST_OFFLOAD_OPTIMIZER: i32 = 50;
pub const COST_OFFLOAD_PARAMS: i32 = 100;
/// - DPO's or KTO's reference log-probabilities precomputed (TRL's
///   `precompute_ref_log_probs`): one reference forward per example before
///   training instead of one in every step — over one epoch the same work: 0 %.
pub const COST_PRECOMPUTE_REF: i32 = 0;

/// Full recomputation of every k-th block only, where the framework has the
/// switch ([`LayoutSupport::checkpoint_every`]): a half or a quarter of the
/// blocks recomputed, for a half or a quarter of full recomputation's cost.
/// The layout search tries each; the fix ladder tries them largest k first
/// (the cheapest) before every block. 2 is torchtitan's default option
/// (`selective_ac_option = "2"` in its `[activation_checkpoint]` section:
/// "ac every positive int layer"); Megatron-LM's `--recompute-method block
/// --recompute-num-layers N` recomputes N blocks of each stage.
pub const CHECKPOINT_EVERY: [u32; 2] = [2, 4];

/// Context parallelism is offered only where each rank keeps at least this
/// many tokens of the sequence: the local length of Llama 3's CP layout
/// (131,072 tokens over CP 16; Dubey et al. 2024, Table 4). The ring's
/// exchange per step grows with the local length and the attention it
/// hides behind with its square, so shorter splits stop hiding it.
pub const MIN_CP_LOCAL_SEQ: u32 = 8192;

/// The context-parallel degrees past 1 a plan's sequence can take: powers of
/// two dividing `ranks` and the sequence (and an encoder–decoder's target),
/// each leaving a rank at least [`MIN_CP_LOCAL_SEQ`] tokens.
pub fn context_parallel_degrees(plan: &Plan, ranks: u32) -> Vec<u32> {
    let t = &plan.training;
    let mut out = Vec::new();
    let mut c = 2u32;
    while ranks.is_multiple_of(c)
        && t.seq_len.is_multiple_of(c)
        && t.seq_len / c >= MIN_CP_LOCAL_SEQ
        && t.target_len.is_none_or(|n| n.is_multiple_of(c))
    {
        out.push(c);
        c = match c.checked_mul(2) {
            Some(c) => c,
            None => break,
        };
    }
    out
}

/// `plan` at tensor- and context-parallel degrees `tp` and `cp`, its
/// accumulation grown to keep the global batch as the data-parallel ranks
/// shrink.
fn with_model_parallel(plan: &Plan, tp: u32, cp: u32) -> Plan {
    let mut p = plan.clone();
    p.parallel.tp = tp;
    p.parallel.cp = cp;
    p.accumulate_to(plan.global_batch());
    p
}

/// Headroom below this fraction of capacity counts as thin: the ladder is
/// offered even though the plan fits (fragmentation and the model's own
/// uncertainty, `BAND_ABOVE`, eat that much).
pub const THIN_HEADROOM: f64 = 0.10;

fn comfortable(e: &Estimate) -> bool {
    e.fits && e.headroom.as_f64() >= THIN_HEADROOM * e.capacity.as_f64()
}

/// The rungs taken so far and the plan they lead to.
struct Ladder {
    cur: Plan,
    est: Estimate,
    out: Vec<Rung>,
}

impl Ladder {
    /// Takes `plan` as the next rung when it saves memory; true once the
    /// headroom is comfortable (the ladder stops there).
    fn take(&mut self, id: &str, plan: Plan, cost: i32) -> bool {
        let Some((r, e)) = rung(id, plan, &self.est, cost) else {
            return false;
        };
        self.push(r, e)
    }

    /// Takes rung `r`, whose plan estimates to `e`; true once the headroom
    /// is comfortable.
    fn push(&mut self, r: Rung, e: Estimate) -> bool {
        self.cur = r.plan.clone();
        let done = comfortable(&e);
        self.est = e;
        self.out.push(r);
        done
    }

    /// [`Self::take`] of the current plan with `edit` applied.
    fn edit(&mut self, id: &str, cost: i32, edit: impl FnOnce(&mut Plan)) -> bool {
        let mut p = self.cur.clone();
        edit(&mut p);
        self.take(id, p, cost)
    }

    /// The checkpointed activations kept on the host, where the framework
    /// has the switch ([`LayoutSupport::offload_activations`]). True once the
    /// headroom is comfortable.
    fn offload_activations(&mut self) -> bool {
        !self.cur.training.activation_offload
            && self.cur.framework.layouts().offload_activations
            && self.edit("offload-activations", COST_OFFLOAD_ACTIVATIONS, |p| {
                p.training.activation_offload = true
            })
    }

    /// Of `plans`, each at one parallel degree, ascending, the first that is
    /// valid and fits — else, unless `must_fit`, the last valid one — taken
    /// as rung `{prefix}-{degree}`. True once the headroom is comfortable.
    fn degree(&mut self, prefix: &str, cost: i32, must_fit: bool, plans: Vec<(u32, Plan)>) -> bool {
        // Each valid plan estimated once: the estimate that says whether it
        // fits is the rung's.
        let mut valid: Vec<(u32, Plan, Option<Estimate>)> = plans
            .into_iter()
            .filter(|(_, p)| crate::validate::validate(p).is_ok())
            .map(|(d, p)| {
                let e = estimate(&p).ok();
                (d, p, e)
            })
            .collect();
        let fitting =
            |(_, _, e): &(u32, Plan, Option<Estimate>)| e.as_ref().is_some_and(|e| e.fits);
        let pick = match valid.iter().position(fitting) {
            Some(i) => i,
            None if must_fit || valid.is_empty() => return false,
            None => valid.len() - 1,
        };
        let (d, p, e) = valid.swap_remove(pick);
        match e.and_then(|e| rung_at(&format!("{prefix}-{d}"), p, e, &self.est, cost)) {
            Some((r, e)) => self.push(r, e),
            None => false,
        }
    }

    /// Context parallelism over the ranks left beside tensor and pipeline
    /// parallelism, where the framework has it and the sequence is long
    /// enough to split ([`context_parallel_degrees`]): the smallest degree
    /// that fits, else (unless `must_fit`) the largest. The global batch is
    /// kept. True once the headroom is comfortable.
    fn context_parallel(&mut self, must_fit: bool) -> bool {
        let par = &self.cur.parallel;
        if par.cp > 1 || !self.cur.framework.layouts().context_parallel {
            return false;
        }
        let ranks = par.num_gpus / (par.tp.max(1) * par.pp.max(1));
        let plans = context_parallel_degrees(&self.cur, ranks)
            .into_iter()
            .map(|c| (c, with_model_parallel(&self.cur, par.tp, c)))
            .collect();
        self.degree("cp", COST_CP, must_fit, plans)
    }

    /// Full recomputation of every k-th block only, where the framework has
    /// the switch ([`LayoutSupport::checkpoint_every`]): of
    /// [`CHECKPOINT_EVERY`], the largest k (the cheapest) fewer than
    /// the plan's own whose plan has comfortable headroom, taken as rung
    /// `checkpointing-every-{k}` at `COST_CHECKPOINTING / k`. True once taken
    /// (the headroom is comfortable then); false when no k is enough, and
    /// every block is left to [`Self::activation_rungs`].
    fn checkpoint_every_kth(&mut self) -> bool {
        let t = &self.cur.training;
        if !self.cur.framework.layouts().checkpoint_every {
            return false;
        }
        // A plan recomputing every k-th block already goes to fewer blocks
        // between; one recomputing all of them has nothing to gain here.
        let below = match t.checkpointing {
            Checkpointing::Full => t.checkpoint_every.max(1),
            _ => u32::MAX,
        };
        for &k in CHECKPOINT_EVERY.iter().rev() {
            if k >= below || k > self.cur.model.layers {
                continue;
            }
            let mut p = self.cur.clone();
            p.training.checkpointing = Checkpointing::Full;
            p.training.checkpoint_every = k;
            let id = format!("checkpointing-every-{k}");
            match rung(&id, p, &self.est, COST_CHECKPOINTING / k as i32) {
                Some((r, e)) if comfortable(&e) => return self.push(r, e),
                _ => {}
            }
        }
        false
    }

    /// The rungs that shrink the activations, each taken when it saves
    /// memory: recomputation of every k-th block where that is enough
    /// ([`Self::checkpoint_every_kth`]), else full activation checkpointing
    /// of every block, then a smaller micro-batch with more accumulation
    /// (the same global batch). True once the headroom is comfortable.
    fn activation_rungs(&mut self) -> bool {
        let t = &self.cur.training;
        let every_block = t.checkpointing == Checkpointing::Full && t.checkpoint_every <= 1;
        if !every_block
            && (self.checkpoint_every_kth()
                || self.edit("checkpointing", COST_CHECKPOINTING, |p| {
                    p.training.checkpointing = Checkpointing::Full;
                    p.training.checkpoint_every = 1;
                }))
        {
            return true;
        }
        self.cur.training.micro_batch > 1
            && self.edit("grad-accum", COST_GRAD_ACCUM, |p| {
                let global = p.global_batch();
                // Accumulating under FSDP, reduced every micro-batch (else the
                // unsharded gradients would cost more than the micro-batch saves).
                p.training.sync_each_batch |=
                    p.parallel.sharding.is_fsdp() && p.framework.fsdp_no_sync_accumulation();
                while p.training.micro_batch > 1 {
                    p.training.micro_batch /= 2;
                    p.accumulate_to(global);
                    if fits(p) {
                        break;
                    }
                }
            })
    }
}

/// How far a sharding shards the model states: 1 the optimizer's, 2 with the
/// gradients, 3 with the parameters (Rajbhandari et al. 2020, Fig. 1; FSDP's
/// SHARD_GRAD_OP is ZeRO-2's split, FULL_SHARD and HSDP within a group ZeRO-3's).
fn sharding_depth(s: Sharding) -> u8 {
    match s {
        Sharding::Zero1 => 1,
        Sharding::Zero2 | Sharding::FsdpGradOp => 2,
        Sharding::Zero3 | Sharding::FsdpFull | Sharding::Hsdp => 3,
        Sharding::None | Sharding::DataParallel | Sharding::Ddp => 0,
    }
}

/// The sharding rungs from `current`: each of the framework's `shardings`
/// that shards deeper, in order, within one family — FSDP's when the plan is
/// on FSDP and the framework has it, or the framework has no ZeRO
/// (torchtune, torchtitan, LitGPT, a loop of one's own); ZeRO's otherwise.
/// Megatron-LM's ZeRO-1 is its distributed optimizer
/// (`--use-distributed-optimizer`; it has no ZeRO-2/3).
fn sharding_rungs(
    framework: Framework,
    shardings: &[Sharding],
    current: Sharding,
) -> Vec<(Sharding, &'static str, i32)> {
    let has = |fsdp: bool| {
        shardings
            .iter()
            .any(|s| sharding_depth(*s) > 0 && s.is_fsdp() == fsdp)
    };
    let fsdp = (current.is_fsdp() && has(true)) || !has(false);
    shardings
        .iter()
        .filter(|s| sharding_depth(**s) > sharding_depth(current) && s.is_fsdp() == fsdp)
        .filter_map(|&s| {
            let (id, cost) = match s {
                Sharding::Zero1 if framework == Framework::Megatron => {
                    ("distributed-optimizer", COST_ZERO_1_2)
                }
                Sharding::Zero1 => ("zero-1", COST_ZERO_1_2),
                Sharding::Zero2 => ("zero-2", COST_ZERO_1_2),
                Sharding::Zero3 => ("zero-3", COST_ZERO_3),
                Sharding::FsdpGradOp => ("fsdp-grad-op", COST_ZERO_1_2),
                Sharding::FsdpFull => ("fsdp-full", COST_ZERO_3),
                // HSDP is not a rung: it shards less than FULL_SHARD over the
                // same ranks, to communicate less, not to save memory.
                _ => return None,
            };
            Some((s, id, cost))
        })
        .collect()
}

/// The fix ladder for a plan: each rung applied on top of the ones before,
/// kept only when it saves memory. Offered when the plan does not fit or its
/// headroom is thin; stops after the first rung that leaves comfortable headroom.
pub fn fix_ladder(plan: &Plan) -> Result<Vec<Rung>, PlanError> {
    let est = estimate(plan)?;
    if comfortable(&est) {
        return Ok(Vec::new());
    }
    let mut l = Ladder {
        cur: plan.clone(),
        est,
        out: Vec::new(),
    };

    // 1. Mixed precision.
    if l.cur.training.precision == Precision::Fp32 {
        let amp = if l.cur.gpu.bf16_tflops > 0.0 {
            Precision::AmpBf16
        } else {
            Precision::AmpFp16
        };
        if l.edit("mixed-precision", COST_MIXED_PRECISION, |p| {
            p.training.precision = amp
        }) {
            return Ok(l.out);
        }
    }
    // 1'. An adapter's frozen base in 16 bits, once the run computes in 16 bits:
    // a frozen weight needs no fp32 copy (no update lands on it), and under
    // autocast every matmul casts an fp32 one to 16 bits anyway.
    if l.cur.training.finetune.base_bits() == Some(32)
        && l.cur.training.precision != Precision::Fp32
        && l.edit("base-16bit", COST_BASE_16BIT, |p| {
            p.training.finetune.set_base_bits(16)
        })
    {
        return Ok(l.out);
    }
    // 1a. A quantized base's fp32 upcast undone: the frozen embeddings, head and
    // norms back in 16 bits, as TRL's `peft_module_casting_to_bf16` and
    // axolotl's patched `prepare_model_for_kbit_training` leave them.
    if l.cur.training.kbit_fp32_prep
        && l.edit("kbit-16bit", COST_KBIT_16BIT, |p| {
            p.training.kbit_fp32_prep = false
        })
    {
        return Ok(l.out);
    }
    // 1a'. A bitsandbytes 4-bit base's block scales quantized too (QLoRA's
    // double quantization): 0.047 bytes per quantized weight.
    if l.cur.training.finetune.base_bits() == Some(4)
        && !l.cur.nf4_double_quantized()
        && l.edit("double-quant", COST_DOUBLE_QUANT, |p| {
            p.training.nf4_double_quant = true
        })
    {
        return Ok(l.out);
    }
    // 1a''. Padded batches packed (TRL's `padding_free`, transformers'
    // `DataCollatorWithFlattening`) or run through flash-attn's varlen path:
    // SDPA then gets no mask, so no block keeps one, nor grouped k/v
    // expanded to every head. Faster too.
    if l.cur.training.padded && l.edit("unpadded", COST_UNPADDED, |p| p.training.padded = false) {
        return Ok(l.out);
    }
    // 1a, preference objectives: the reference log-probabilities computed
    // once before training — a full fine-tune keeps no reference model (but
    // under FSDP), and DPO through the logits no reference logits.
    if matches!(l.cur.training.objective, Objective::Dpo | Objective::Kto)
        && !l.cur.training.precompute_ref
        && l.edit("precompute-ref", COST_PRECOMPUTE_REF, |p| {
            p.training.precompute_ref = true
        })
    {
        return Ok(l.out);
    }
    // 1b. torch.compile: faster and smaller, so before anything that costs speed.
    // Not for Megatron-LM, which does not compile its model (its kernels are
    // fused by hand: Transformer Engine, Apex, its own fusions).
    if !l.cur.training.compile
        && l.cur.framework != Framework::Megatron
        && l.edit("compile", COST_COMPILE, |p| p.training.compile = true)
    {
        return Ok(l.out);
    }
    // 1c. Fused kernels (Liger): the transformers models Liger patches (RMSNorm,
    // gated MLP) under the frameworks that run them; its fused linear +
    // cross-entropy never materialises the logits. Faster too.
    let transformers =
        l.cur.framework.runs_the_models_own_code() && l.cur.framework != Framework::Deepspeed;
    if transformers
        && l.cur.model.norm == Norm::RmsNorm
        && l.cur.model.mlp == Mlp::Gated
        && !(l.cur.training.fused_kernels
            && matches!(l.cur.training.loss, Loss::Fused | Loss::TiledLogprob))
        && l.edit("fused-kernels", COST_FUSED_KERNELS, |p| {
            p.training.fused_kernels = true;
            // TRL's own fused LM head stays: it refuses Liger's fused
            // cross-entropy and takes only its layer kernels.
            if p.training.loss != Loss::TiledLogprob {
                p.training.loss = Loss::Fused;
            }
        })
    {
        return Ok(l.out);
    }
    // 1d. DDP's buckets as the gradients' storage: a whole gradient copy less
    // at no cost, where the peak holds the buckets beside the gradients — at
    // the step, once compiling and fusing have shrunk the activations (tried
    // after them, so that clicking rung by rung meets it where the whole ladder
    // does). Megatron's buffers are views already.
    if l.cur.parallel.sharding == Sharding::Ddp
        && !l.cur.parallel.gradient_as_bucket_view
        && l.cur.framework != Framework::Megatron
        && l.edit("bucket-view", COST_BUCKET_VIEW, |p| {
            p.parallel.gradient_as_bucket_view = true
        })
    {
        return Ok(l.out);
    }
    // 1e. FSDP gradients reduced every micro-batch: the full unsharded
    // gradients a `no_sync` accumulation keeps are gone for a little
    // communication.
    if l.cur.accumulates_unsharded_grads()
        && l.edit("sync-each-batch", COST_SYNC_EACH_BATCH, |p| {
            p.training.sync_each_batch = true
        })
    {
        return Ok(l.out);
    }
    // 1f. ZeRO++'s secondary shard of the weights given up: backward
    // gathers across nodes again.
    if l.cur.parallel.hpz_partition_size > 1
        && l.edit("hpz-off", COST_HPZ_OFF, |p| {
            p.parallel.hpz_partition_size = 1
        })
    {
        return Ok(l.out);
    }
    // 2. Activation checkpointing — every k-th block where the framework
    // has the switch and that is enough, else every block; 3. a smaller
    // micro-batch.
    if l.activation_rungs() {
        return Ok(l.out);
    }
    // 4. Shard model states — ZeRO-1 → 2 → 3 or FSDP's SHARD_GRAD_OP → FULL_SHARD,
    // among the shardings the framework runs ([`Framework::layouts`]).
    let runs = l.cur.framework.layouts();
    if l.cur.parallel.dp() > 1 {
        for (s, id, cost) in
            sharding_rungs(l.cur.framework, runs.shardings, l.cur.parallel.sharding)
        {
            if l.edit(id, cost, |p| p.parallel.sharding = s) {
                return Ok(l.out);
            }
        }
    }
    // 5. Context parallelism where a degree alone makes the plan fit: cheaper
    // than tensor parallelism, and it splits what a long sequence fills.
    if l.context_parallel(true) {
        return Ok(l.out);
    }
    // 5'. Tensor parallelism within a node (with sequence parallelism where
    // its TP has it), where the framework has it for this kind of
    // fine-tuning ([`Framework::layouts`]): the smallest degree that fits,
    // else the largest there is.
    if l.cur.parallel.tp == 1 && runs.tensor_parallel_for(&l.cur) {
        let node = l.cur.parallel.gpus_per_node.min(l.cur.parallel.num_gpus);
        let plans = [2u32, 4, 8]
            .into_iter()
            .filter(|&t| t <= node && l.cur.model.heads.is_multiple_of(t))
            .map(|t| {
                let mut p = with_model_parallel(&l.cur, t, l.cur.parallel.cp);
                p.parallel.sequence_parallel = runs.sequence_parallel;
                (t, p)
            })
            .collect();
        if l.degree("tp", COST_TP, false, plans) {
            return Ok(l.out);
        }
    }
    // 5''. Context parallelism over the ranks tensor parallelism left.
    if l.context_parallel(false) {
        return Ok(l.out);
    }
    // 6. Offload to CPU: the checkpointed activations (where the framework
    // has the switch), the optimizer states, then the parameters.
    if l.offload_activations() {
        return Ok(l.out);
    }
    for (params, id, cost) in [
        (false, "offload-optimizer", COST_OFFLOAD_OPTIMIZER),
        (true, "offload-params", COST_OFFLOAD_PARAMS),
    ] {
        let have = l.cur.parallel.offload;
        if (params && have.params_offloaded()) || (!params && have.optimizer_offloaded()) {
            continue;
        }
        // Only the offloads the framework has a switch for
        // ([`Framework::layouts`]): Megatron-LM's is the optimizer's alone
        // (`--optimizer-cpu-offload`), FSDP's moves the parameters with it
        // (torchtune, torchtitan, fsdp_qlora, a loop of one's own), LitGPT's
        // scripts and Unsloth have none.
        if (params && !runs.offload_params) || (!params && !runs.offload_optimizer) {
            continue;
        }
        if l.edit(id, cost, |p| {
            if !have.optimizer_offloaded() {
                p.parallel.offload.optimizer = OffloadDevice::Cpu;
            }
            if params {
                p.parallel.offload.params = OffloadDevice::Cpu;
            }
            // Parameters are offloaded by the runtimes that fetch them layer
            // by layer: FSDP in any of its strategies keeps its own, anything
            // else moves to ZeRO-3 (crate::validate).
            if params && !p.parallel.sharding.shards_params() {
                p.parallel.sharding = Sharding::Zero3;
            }
        }) {
            return Ok(l.out);
        }
    }
    // 7. Once the states are sharded or on the host the activations may be
    // the peak: checkpointing, a smaller micro-batch and their offload, if
    // they saved nothing while the states were (a 70B full fine-tune on one
    // GPU: the weights and gradients held the peak until offloaded, then the
    // activations did).
    if !l.activation_rungs() {
        l.offload_activations();
    }
    Ok(l.out)
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)] // tests change one field at a time
mod tests {
    use super::*;
    use crate::gpu;
    use crate::plan::Sharding;

    fn oom_plan() -> Plan {
        let mut p = Plan::default();
        p.parallel.sharding = Sharding::Ddp;
        p.training.micro_batch = 8;
        p
    }

    #[test]
    fn max_micro_batch_is_the_boundary() {
        let p = Plan::default();
        let mb = max_micro_batch(&p)
            .unwrap()
            .expect("mb 1 fits the default plan");
        let mut q = p.clone();
        q.training.micro_batch = mb;
        assert!(estimate(&q).unwrap().fits);
        q.training.micro_batch = mb + 1;
        assert!(!estimate(&q).unwrap().fits);
    }

    #[test]
    fn max_seq_len_is_the_boundary_and_a_multiple_of_cp() {
        let mut p = Plan::default();
        p.parallel.cp = 2;
        let s = max_seq_len(&p).unwrap().unwrap();
        assert_eq!(s % 2, 0);
        let mut q = p.clone();
        q.training.seq_len = s;
        assert!(estimate(&q).unwrap().fits);
        q.training.seq_len = s + 2;
        assert!(!estimate(&q).unwrap().fits);
    }

    #[test]
    fn nothing_fits_gives_none() {
        let mut p = Plan::default();
        p.gpu = gpu::gpu("rtx3060-12gb").unwrap();
        p.parallel.num_gpus = 1;
        p.parallel.sharding = Sharding::None;
        assert_eq!(max_micro_batch(&p).unwrap(), None);
    }

    #[test]
    fn activations_are_shrunk_again_once_the_states_leave_the_gpu() {
        // Llama-3.1-70B trained in full on one H100: the weights, gradients
        // and states hold the peak, so checkpointing saves nothing at first;
        // once they are offloaded the activations are the peak and it does.
        let mut p = Plan::default();
        p.model = crate::presets::preset("llama-3.1-70b").unwrap().spec();
        p.parallel.num_gpus = 1;
        p.parallel.sharding = Sharding::None;
        p.training.checkpointing = Checkpointing::None;
        let ladder = fix_ladder(&p).unwrap();
        let ids: Vec<&str> = ladder.iter().map(|r| r.id.as_str()).collect();
        let off = ids
            .iter()
            .position(|i| *i == "offload-params")
            .expect("params offloaded");
        let ck = ids
            .iter()
            .position(|i| *i == "checkpointing")
            .expect("checkpointing offered");
        assert!(ck > off, "{ids:?}");
        let last = ladder.last().unwrap();
        assert!(last.fits, "{ids:?}");
        assert_eq!(last.plan.training.checkpointing, Checkpointing::Full);
        // Every rung still saves memory over the one before.
        for w in ladder.windows(2) {
            assert!(w[1].device_used < w[0].device_used, "{ids:?}");
        }
    }

    #[test]
    fn activation_offload_is_offered_where_the_framework_has_the_switch() {
        // Gemma-2-9B with LoRA at 4 × 32,768 tokens on one A100-40GB:
        // checkpointed, at micro-batch 1 it is still over the card.
        let mut p = Plan::default();
        p.model = crate::presets::preset("gemma-2-9b").unwrap().spec();
        p.gpu = gpu::gpu("a100-sxm4-40gb").unwrap();
        p.parallel.num_gpus = 1;
        p.parallel.sharding = Sharding::None;
        p.training.finetune = crate::plan::Finetune::Lora {
            rank: 16,
            targets: crate::plan::LoraTargets::ALL_LINEAR,
            base_bits: 16,
            dropout: false,
            variant: crate::plan::LoraVariant::Lora,
        };
        p.training.micro_batch = 4;
        p.training.seq_len = 32_768;
        let ids = |p: &Plan| -> Vec<String> {
            fix_ladder(p).unwrap().into_iter().map(|r| r.id).collect()
        };
        p.set_framework(Framework::Torchtune);
        let tune = fix_ladder(&p).unwrap();
        let names: Vec<&str> = tune.iter().map(|r| r.id.as_str()).collect();
        let off = tune
            .iter()
            .find(|r| r.id == "offload-activations")
            .expect("offered");
        assert!(off.plan.training.activation_offload, "{names:?}");
        assert!(tune.last().unwrap().fits, "{names:?}");
        // The Trainer has no such switch: not offered.
        p.set_framework(Framework::HfTrainer);
        assert!(!ids(&p).iter().any(|i| i == "offload-activations"));
    }

    #[test]
    fn megatrons_ladder_offers_what_megatron_has() {
        // Llama-3.1-8B on 8 GPUs under Megatron without the distributed
        // optimizer: no torch.compile, no ZeRO-2/3 — the distributed optimizer.
        let mut p = oom_plan();
        p.set_framework(Framework::Megatron);
        p.model = crate::presets::preset("llama-3.1-8b").unwrap().spec();
        p.training.precision = Precision::Bf16;
        p.training.seq_len = 8192;
        p.training.micro_batch = 1;
        p.parallel.num_gpus = 8;
        p.parallel.sharding = Sharding::Ddp;
        assert!(!estimate(&p).unwrap().fits);
        let ids: Vec<String> = fix_ladder(&p).unwrap().into_iter().map(|r| r.id).collect();
        assert!(ids.iter().any(|i| i == "distributed-optimizer"), "{ids:?}");
        for absent in ["compile", "zero-2", "zero-3", "fused-kernels"] {
            assert!(!ids.iter().any(|i| i == absent), "{absent} in {ids:?}");
        }
        // The same plan under DeepSpeed gets its ZeRO stages.
        p.set_framework(Framework::Deepspeed);
        let ids: Vec<String> = fix_ladder(&p).unwrap().into_iter().map(|r| r.id).collect();
        assert!(ids.iter().any(|i| i.starts_with("zero-")), "{ids:?}");
    }

    #[test]
    fn parameter_offload_stays_with_fsdp_and_is_not_offered_to_megatron() {
        // Llama-3.1-405B trained in full over 16 GPUs with HSDP: the ladder
        // ends offloading the parameters, with FSDP's own CPU offload, not by
        // switching the run to DeepSpeed.
        let mut p = oom_plan();
        p.set_framework(Framework::HfTrainer);
        p.model = crate::presets::preset("llama-3.1-405b").unwrap().spec();
        p.training.precision = Precision::Bf16;
        p.training.micro_batch = 1;
        p.parallel.num_gpus = 16;
        p.parallel.sharding = Sharding::Hsdp;
        let ladder = fix_ladder(&p).unwrap();
        let rung = ladder.iter().find(|r| r.id == "offload-params");
        let rung = rung
            .unwrap_or_else(|| panic!("{:?}", ladder.iter().map(|r| &r.id).collect::<Vec<_>>()));
        assert_eq!(rung.plan.parallel.sharding, Sharding::Hsdp);
        assert!(crate::validate::validate(&rung.plan).is_ok());
        // Megatron-LM offloads its optimizer only.
        p.set_framework(Framework::Megatron);
        p.parallel.sharding = Sharding::Ddp;
        let ids: Vec<String> = fix_ladder(&p).unwrap().into_iter().map(|r| r.id).collect();
        assert!(!ids.iter().any(|i| i == "offload-params"), "{ids:?}");
    }

    #[test]
    fn ladder_saves_memory_at_every_rung_and_ends_fitting() {
        let p = oom_plan();
        assert!(!estimate(&p).unwrap().fits);
        let ladder = fix_ladder(&p).unwrap();
        assert!(!ladder.is_empty());
        let mut last = estimate(&p).unwrap().peak.device_used;
        for r in &ladder {
            assert!(r.device_used < last, "{} saves nothing", r.id);
            assert_eq!(r.saving, last.saturating_sub(r.device_used));
            assert_eq!(query::decode_str(&r.query).unwrap(), r.plan);
            last = r.device_used;
        }
        assert!(ladder.last().unwrap().fits);
        let last = estimate(&ladder.last().unwrap().plan).unwrap();
        assert!(last.headroom.as_f64() >= THIN_HEADROOM * last.capacity.as_f64());
        // The order users know: checkpointing comes before sharding.
        let pos = |id: &str| ladder.iter().position(|r| r.id == id);
        if let (Some(c), Some(z)) = (pos("checkpointing"), pos("zero-3")) {
            assert!(c < z);
        }
        // torch.compile is faster and smaller: offered before checkpointing.
        let compile = ladder
            .iter()
            .find(|r| r.id == "compile")
            .expect("a compile rung");
        assert!(compile.speed_cost_pct < 0 && compile.plan.training.compile);
        if let Some(c) = pos("checkpointing") {
            assert!(pos("compile").unwrap() < c);
        }
    }

    #[test]
    fn sweeps_are_monotone_and_cover_the_current_value() {
        let p = Plan::default();
        let pts = log2_points(p.training.seq_len, 1 << 20);
        assert!(pts.contains(&4096) && pts.len() >= 13);
        let s = sweep(&p, Axis::SeqLen, &pts);
        for w in s.windows(2) {
            assert!(w[1].1.unwrap() >= w[0].1.unwrap());
        }
        assert_eq!(log2_points(0, 64), vec![1, 2, 4]);
        assert_eq!(log2_points(u32::MAX, u32::MAX).len(), 32);
    }

    #[test]
    fn thin_headroom_offers_the_ladder() {
        // Find a micro-batch/sequence that fits with under 10 % headroom.
        let mut p = Plan::default();
        p.training.seq_len = max_seq_len(&p).unwrap().unwrap();
        let e = estimate(&p).unwrap();
        assert!(e.fits && e.headroom.as_f64() < THIN_HEADROOM * e.capacity.as_f64());
        assert!(!fix_ladder(&p).unwrap().is_empty());
    }

    #[test]
    fn a_prepared_qlora_base_is_offered_its_16_bit_embeddings_first() {
        // Llama-3-8B QLoRA under PEFT's profile on one 16 GB card, batch 4 × 4096.
        let mut p = Plan::default();
        p.set_framework(Framework::Peft);
        p.gpu = crate::gpu::gpu("v100-sxm2-16gb").unwrap();
        p.parallel.num_gpus = 1;
        p.parallel.sharding = Sharding::None;
        p.training.micro_batch = 4;
        p.training.finetune = crate::plan::Finetune::Lora {
            rank: 16,
            targets: crate::plan::LoraTargets::ALL_LINEAR,
            base_bits: 4,
            dropout: true,
            variant: crate::plan::LoraVariant::Lora,
        };
        assert!(p.training.kbit_fp32_prep);
        let ladder = fix_ladder(&p).unwrap();
        let first = &ladder[0];
        assert_eq!(first.id, "kbit-16bit");
        assert!(!first.plan.training.kbit_fp32_prep);
        assert_eq!(first.speed_cost_pct, COST_KBIT_16BIT);
        // At least the embeddings' and the head's extra 2 bytes per parameter.
        let vh = (p.model.vocab as u64) * (p.model.hidden as u64);
        assert!(first.saving.get() >= 2 * 2 * vh, "{:?}", first.saving);
        // Not offered without a quantized base.
        let mut q = oom_plan();
        q.training.kbit_fp32_prep = true;
        assert!(fix_ladder(&q).unwrap().iter().all(|r| r.id != "kbit-16bit"));
    }

    /// LoRA (r 8, q and v) over Llama-2-7B with a `base_bits` base under `fw`
    /// on one RTX 4090.
    fn lora_7b_on_a_4090(
        fw: Framework,
        prec: Precision,
        base_bits: u32,
        mb: u32,
        seq: u32,
    ) -> Plan {
        let mut p = Plan::default();
        p.parallel.num_gpus = 1;
        p.set_framework(fw);
        p.model = crate::presets::preset("llama-2-7b").unwrap().spec();
        p.gpu = crate::gpu::gpu("rtx4090-24gb").unwrap();
        p.parallel.sharding = Sharding::None;
        p.training.precision = prec;
        p.training.micro_batch = mb;
        p.training.seq_len = seq;
        p.training.finetune = crate::plan::Finetune::Lora {
            rank: 8,
            targets: crate::plan::LoraTargets::QV,
            base_bits,
            dropout: true,
            variant: crate::plan::LoraVariant::Lora,
        };
        p
    }

    #[test]
    fn an_fp32_base_is_offered_16_bits_once_the_run_computes_in_16_bits() {
        // LoRA over a Llama-2-7B loaded in fp32 under fp16 autocast, batch
        // 8 × 512 on a 24 GB card: the frozen base is 25 GiB alone.
        let p = lora_7b_on_a_4090(Framework::HfTrainer, Precision::AmpFp16, 32, 8, 512);
        let ladder = fix_ladder(&p).unwrap();
        assert_eq!(
            ladder[0].id,
            "base-16bit",
            "{:?}",
            ladder.iter().map(|r| &r.id).collect::<Vec<_>>()
        );
        let rung = &ladder[0];
        assert_eq!(rung.plan.training.finetune.base_bits(), Some(16));
        assert_eq!(rung.speed_cost_pct, COST_BASE_16BIT);
        // Half the base's 6.7 B weights' bytes at least, and their autocast casts.
        assert!(
            rung.saving.as_f64() > 2.0 * 6.5e9,
            "{}",
            rung.saving.as_f64()
        );
        // Not offered to a full fine-tune, a 16-bit base, or an fp32 run (mixed
        // precision comes first, then this).
        let offered = |q: &Plan| fix_ladder(q).unwrap().iter().any(|r| r.id == "base-16bit");
        let mut full = p.clone();
        full.training.finetune = crate::plan::Finetune::Full;
        assert!(!offered(&full));
        let mut b16 = p.clone();
        b16.training.finetune.set_base_bits(16);
        assert!(!offered(&b16));
        let mut fp32 = p.clone();
        fp32.training.precision = Precision::Fp32;
        let ids: Vec<String> = fix_ladder(&fp32)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids[0], "mixed-precision", "{ids:?}");
        if ids.len() > 1 {
            assert_eq!(ids[1], "base-16bit", "{ids:?}");
        }
    }

    #[test]
    fn a_4_bit_base_is_offered_double_quantization_at_no_speed_cost() {
        // Llama-2-7B QLoRA under LitGPT on a 6 GB card, so it does not fit.
        let mut p = lora_7b_on_a_4090(Framework::Litgpt, Precision::Bf16, 4, 1, 1024);
        p.gpu.capacity_mib = 6 * 1024;
        let ladder = fix_ladder(&p).unwrap();
        let rung = ladder
            .iter()
            .find(|r| r.id == "double-quant")
            .expect("offered");
        assert!(rung.plan.training.nf4_double_quant);
        assert_eq!(rung.speed_cost_pct, COST_DOUBLE_QUANT);
        // 4/64 − 1/64 − 4/16384 bytes per quantized weight — the blocks'
        // 6.476 B and LitGPT's quantized LM head's 0.131 B — plus the
        // allocator's reserve over them (a frozen base trained without
        // recomputation on one GPU).
        let per_weight = 4.0 / 64.0 - 1.0 / 64.0 - 4.0 / 16384.0;
        let quantized = 32.0 * (4.0 * 4096.0 * 4096.0 + 3.0 * 4096.0 * 11008.0) + 32000.0 * 4096.0;
        let ratio = rung.saving.as_f64() / (per_weight * quantized);
        assert!(
            (ratio - 1.0 - crate::estimate::ALLOCATOR_RESERVE_FRACTION_FROZEN_NO_RECOMPUTE).abs()
                < 0.005,
            "{ratio}"
        );
        // Not offered when it is on already, nor for torchtune (always on), nor a 16-bit base.
        let offered = |q: &Plan| {
            fix_ladder(q)
                .unwrap()
                .iter()
                .any(|r| r.id == "double-quant")
        };
        let mut on = p.clone();
        on.training.nf4_double_quant = true;
        assert!(!offered(&on));
        let mut tt = p.clone();
        tt.set_framework(Framework::Torchtune);
        assert!(!offered(&tt));
        let mut b16 = p.clone();
        b16.training.finetune.set_base_bits(16);
        assert!(!offered(&b16));
    }

    #[test]
    fn ddp_is_offered_bucket_views_for_a_gradient_copy_before_any_slower_rung() {
        // The default model under DDP on 8 GPUs with short sequences: the peak
        // is at the step, where the buckets sit beside the whole gradient, so
        // a free rung keeps the gradients in the buckets, saving one copy.
        // (With long sequences the peak comes before the gradients and the
        // view saves nothing there — measured so on the H200, set 5.)
        let mut p = oom_plan();
        p.training.micro_batch = 1;
        p.training.seq_len = 256;
        assert!(!estimate(&p).unwrap().fits);
        assert_eq!(p.parallel.sharding, Sharding::Ddp);
        let ladder = fix_ladder(&p).unwrap();
        let first = ladder
            .iter()
            .find(|r| r.id == "bucket-view")
            .expect("a bucket-view rung");
        // After the rungs that are faster (compile, fused kernels), before any
        // that costs speed.
        let ids: Vec<&str> = ladder.iter().map(|r| r.id.as_str()).collect();
        let at = ids.iter().position(|i| *i == "bucket-view").unwrap();
        assert!(
            ids[..at]
                .iter()
                .all(|i| ["compile", "fused-kernels"].contains(i)),
            "{ids:?}"
        );
        assert!(first.plan.parallel.gradient_as_bucket_view);
        assert_eq!(first.speed_cost_pct, COST_BUCKET_VIEW);
        // At most the bucket copy (fp32 gradients under amp); the peak may move
        // to the forward, where the gradients now already live in the buckets.
        let e = estimate(&p).unwrap();
        let grads = e.trainable_params as f64 * 4.0;
        let saved = first.saving.get() as f64;
        assert!(
            saved > 0.25 * grads && saved <= grads,
            "saved {saved} B, gradients {grads} B"
        );
        // Not offered again once on, nor without DDP.
        assert!(fix_ladder(&first.plan)
            .unwrap()
            .iter()
            .all(|r| r.id != "bucket-view"));
        let mut q = p.clone();
        q.parallel.sharding = Sharding::Zero1;
        assert!(fix_ladder(&q)
            .unwrap()
            .iter()
            .all(|r| r.id != "bucket-view"));
    }

    #[test]
    fn zero_plus_plus_is_offered_without_its_secondary_shard() {
        // Llama-3.1-70B in bf16 under DeepSpeed ZeRO-3 on 24 H100s,
        // checkpointed: hpZ over a node adds 17.6 GB to each, too much; the
        // rung that turns it off saves that and is taken before anything
        // that costs more.
        let mut p = Plan {
            model: crate::presets::preset("llama-3.1-70b").unwrap().spec(),
            ..Plan::default()
        };
        p.set_framework(Framework::Deepspeed);
        p.training.precision = crate::plan::Precision::Bf16;
        p.training.checkpointing = crate::plan::Checkpointing::Full;
        p.training.micro_batch = 1;
        p.training.seq_len = 2048;
        p.parallel.num_gpus = 24;
        p.parallel.sharding = Sharding::Zero3;
        assert!(estimate(&p).unwrap().fits);
        p.parallel.hpz_partition_size = 8;
        let over = estimate(&p).unwrap();
        assert!(!over.fits, "{:?}", over.peak);
        let ladder = fix_ladder(&p).unwrap();
        let rung = ladder
            .iter()
            .find(|r| r.id == "hpz-off")
            .expect("an hpz-off rung");
        assert_eq!(rung.plan.parallel.hpz_partition_size, 1);
        assert_eq!(rung.speed_cost_pct, COST_HPZ_OFF);
        assert!(rung.fits);
        let secondary = over.params as f64 * 2.0 / 8.0;
        let saved = rung.saving.get() as f64;
        // The shard, and the allocator's share of it on nvidia-smi's count.
        assert!(
            saved >= secondary && saved < 1.1 * secondary,
            "{saved} vs {secondary}"
        );
        let ids: Vec<&str> = ladder.iter().map(|r| r.id.as_str()).collect();
        let at = ids.iter().position(|i| *i == "hpz-off").unwrap();
        assert!(
            ladder[..at]
                .iter()
                .all(|r| r.speed_cost_pct <= COST_HPZ_OFF),
            "{ids:?}"
        );
        // Not offered without hpZ.
        assert!(fix_ladder(&rung.plan)
            .unwrap()
            .iter()
            .all(|r| r.id != "hpz-off"));
    }

    #[test]
    fn transformers_runs_are_offered_fused_kernels_before_checkpointing() {
        let mut p = oom_plan();
        p.set_framework(Framework::HfTrainer);
        let ladder = fix_ladder(&p).unwrap();
        let pos = |id: &str| ladder.iter().position(|r| r.id == id);
        let fused = pos("fused-kernels").expect("a fused-kernels rung");
        let rung = &ladder[fused];
        assert!(rung.plan.training.fused_kernels && rung.plan.training.loss == Loss::Fused);
        assert!(rung.speed_cost_pct < 0);
        if let Some(c) = pos("checkpointing") {
            assert!(fused < c);
        }
        // Under TRL (1.15 on) every rung keeps TRL's own fused LM head, which
        // refuses Liger's cross-entropy: the rung would add only Liger's layer
        // kernels, which save nothing once compiled, so it is not offered.
        p.set_framework(Framework::Trl);
        p.training.checkpointing = crate::plan::Checkpointing::None;
        let ladder = fix_ladder(&p).unwrap();
        assert!(ladder.iter().any(|r| r.id == "checkpointing"));
        assert!(ladder
            .iter()
            .all(|r| r.plan.training.loss == Loss::TiledLogprob));

        // LitGPT does not run Liger's patched transformers models.
        p.set_framework(Framework::Litgpt);
        assert!(fix_ladder(&p)
            .unwrap()
            .iter()
            .all(|r| r.id != "fused-kernels"));
    }

    #[test]
    fn padded_batches_are_offered_packing_before_checkpointing() {
        // Llama-3.1-8B LoRA under the Trainer on one H100 at 4 × 8192, padded:
        // SDPA's mask (4 · 8192² · 2 B a block, 16 GiB over 32 blocks) and the
        // expanded k/v do not fit; packing drops both, first of the rungs
        // that cost no speed (compiling would leave the mask to be
        // recomputed, so it comes after).
        let mut p = Plan::default();
        p.set_framework(Framework::HfTrainer);
        p.parallel.num_gpus = 1;
        p.parallel.sharding = Sharding::None;
        p.training.micro_batch = 4;
        p.training.seq_len = 8192;
        p.training.padded = true;
        p.training.finetune = crate::plan::Finetune::Lora {
            rank: 16,
            targets: crate::plan::LoraTargets::QV,
            base_bits: 16,
            dropout: false,
            variant: crate::plan::LoraVariant::Lora,
        };
        assert!(!estimate(&p).unwrap().fits);
        let ladder = fix_ladder(&p).unwrap();
        assert_eq!(
            ladder[0].id,
            "unpadded",
            "{:?}",
            ladder.iter().map(|r| &r.id).collect::<Vec<_>>()
        );
        assert!(!ladder[0].plan.training.padded);
        assert_eq!(ladder[0].speed_cost_pct, COST_UNPADDED);
        let mask = 32.0 * 4.0 * 8192.0 * 8192.0 * 2.0;
        assert!(
            ladder[0].saving.get() as f64 > mask,
            "{}",
            ladder[0].saving.get()
        );
        // Not offered when the batches are not padded.
        assert!(fix_ladder(&ladder[0].plan)
            .unwrap()
            .iter()
            .all(|r| r.id != "unpadded"));
    }

    #[test]
    fn dpo_full_fine_tunes_are_offered_precomputed_reference_log_probs() {
        // Llama-3.1-8B's DPO full fine-tune under TRL on one H100: the frozen
        // reference model (16 GB in bf16) is the first thing to go, at no
        // cost in speed.
        let mut p = Plan::default();
        p.set_framework(Framework::Trl);
        p.parallel.num_gpus = 1;
        p.parallel.sharding = Sharding::None;
        p.training.precision = Precision::Bf16;
        p.training.objective = Objective::Dpo;
        p.training.micro_batch = 1;
        p.training.seq_len = 2048;
        assert!(!estimate(&p).unwrap().fits);
        let ladder = fix_ladder(&p).unwrap();
        assert_eq!(
            ladder[0].id,
            "precompute-ref",
            "{:?}",
            ladder.iter().map(|r| &r.id).collect::<Vec<_>>()
        );
        assert!(ladder[0].plan.training.precompute_ref);
        assert_eq!(ladder[0].speed_cost_pct, COST_PRECOMPUTE_REF);
        let reference = p.model.params() as f64 * 2.0;
        assert!(
            ladder[0].saving.get() as f64 >= reference,
            "{}",
            ladder[0].saving.get()
        );
        // Not offered to supervised fine-tuning.
        p.training.objective = Objective::Sft;
        assert!(fix_ladder(&p)
            .unwrap()
            .iter()
            .all(|r| r.id != "precompute-ref"));
    }

    #[test]
    fn fsdp_accumulation_is_offered_a_reduction_every_micro_batch() {
        // Llama-3.1-8B amp-bf16 under the Trainer on 8 × RTX 4090 with FSDP,
        // accumulating 8 micro-batches: the unsharded bf16 gradients (15 GiB)
        // do not fit beside the states; reducing every micro-batch drops them.
        let mut p = Plan::default();
        p.gpu = crate::gpu::gpu("rtx4090-24gb").unwrap();
        p.parallel.sharding = Sharding::FsdpFull;
        p.training.checkpointing = Checkpointing::Full;
        p.training.grad_accum = 8;
        p.training.seq_len = 1024;
        assert!(!estimate(&p).unwrap().fits);
        let ladder = fix_ladder(&p).unwrap();
        let rung = ladder
            .iter()
            .find(|r| r.id == "sync-each-batch")
            .expect("a sync-each-batch rung");
        assert!(rung.plan.training.sync_each_batch);
        assert_eq!(rung.speed_cost_pct, COST_SYNC_EACH_BATCH);
        let trainable = estimate(&p).unwrap().trainable_params as f64;
        let saved = rung.saving.get() as f64;
        // The unsharded bf16 gradients less the fp32 shards and the unit
        // gradients a reduced run waits on: more than a third of them.
        assert!(
            saved > 2.0 * trainable / 3.0 && saved < 2.0 * trainable,
            "saved {saved} B of {} B",
            2.0 * trainable
        );
        // Not offered once on, nor under a loop that reduces every micro-batch.
        assert!(fix_ladder(&rung.plan)
            .unwrap()
            .iter()
            .all(|r| r.id != "sync-each-batch"));
        let mut tt = p.clone();
        tt.set_framework(Framework::Torchtune);
        assert!(fix_ladder(&tt)
            .unwrap()
            .iter()
            .all(|r| r.id != "sync-each-batch"));
        // The accumulation rung reduces every micro-batch when it starts
        // accumulating under FSDP.
        let mut q = p.clone();
        q.training.grad_accum = 1;
        q.training.micro_batch = 16;
        let ga = fix_ladder(&q)
            .unwrap()
            .into_iter()
            .find(|r| r.id == "grad-accum")
            .expect("a grad-accum rung");
        assert!(ga.plan.training.grad_accum > 1 && ga.plan.training.sync_each_batch);
    }

    #[test]
    fn ladder_is_empty_when_it_fits() {
        assert!(fix_ladder(&Plan::default()).unwrap().is_empty());
    }

    /// A rung is a switch the framework has: no tensor parallelism under the
    /// Trainer, no optimizer-only offload under FSDP-based torchtune (its
    /// `fsdp_cpu_offload` moves the parameters too), no parameter offload
    /// under Megatron-LM, no offload at all under Unsloth.
    #[test]
    fn rungs_are_switches_the_framework_has() {
        let ids = |q: &str| -> Vec<String> {
            let p = crate::query::decode_str(q).unwrap();
            fix_ladder(&p).unwrap().into_iter().map(|r| r.id).collect()
        };
        let trainer = ids("?model=llama-3.1-70b&gpus=8&mb=4&ga=8");
        assert!(!trainer.iter().any(|r| r.starts_with("tp-")), "{trainer:?}");
        assert!(
            trainer.iter().any(|r| r == "offload-optimizer"),
            "{trainer:?}"
        );
        let megatron = ids("?model=llama-3.1-70b&gpus=8&mb=4&ga=8&fw=megatron");
        assert!(
            megatron.iter().any(|r| r.starts_with("tp-")),
            "{megatron:?}"
        );
        assert!(
            !megatron.iter().any(|r| r == "offload-params"),
            "{megatron:?}"
        );
        let torchtune = ids("?model=llama-3.1-70b&gpus=8&mb=4&ga=8&fw=torchtune&shard=fsdp-full");
        assert!(
            !torchtune.iter().any(|r| r == "offload-optimizer"),
            "{torchtune:?}"
        );
        assert!(
            torchtune.iter().any(|r| r == "offload-params"),
            "{torchtune:?}"
        );
        let unsloth = ids("?model=llama-3.1-70b&gpus=1&shard=none&fw=unsloth");
        assert!(
            !unsloth
                .iter()
                .any(|r| r.starts_with("offload-o") || r.starts_with("offload-p")),
            "{unsloth:?}"
        );
    }

    /// torchtune's full fine-tune has tensor parallelism (`tensor_parallel_dim`)
    /// without sequence parallelism; its LoRA recipes have none.
    #[test]
    fn torchtunes_tensor_parallel_rung_is_its_full_fine_tunes_without_sp() {
        let ladder = |q: &str| {
            let p = crate::query::decode_str(q).unwrap();
            fix_ladder(&p).unwrap()
        };
        let full = ladder("?model=llama-3.1-70b&gpus=8&mb=4&ga=8&fw=torchtune&shard=fsdp-full");
        let tp = full
            .iter()
            .find(|r| r.id.starts_with("tp-"))
            .unwrap_or_else(|| panic!("{:?}", full.iter().map(|r| &r.id).collect::<Vec<_>>()));
        assert!(!tp.plan.parallel.sequence_parallel);
        assert_eq!(tp.plan.global_batch(), 8 * 4 * 8);
        let lora = ladder(
            "?model=llama-3.1-70b&gpus=8&mb=4&ga=8&fw=torchtune&shard=fsdp-full&ft=lora&rank=16",
        );
        assert!(!lora.iter().any(|r| r.id.starts_with("tp-")));
        // Megatron-LM's comes with its sequence parallelism.
        let megatron = ladder("?model=llama-3.1-70b&gpus=8&mb=4&ga=8&fw=megatron");
        let tp = megatron.iter().find(|r| r.id.starts_with("tp-")).unwrap();
        assert!(tp.plan.parallel.sequence_parallel);
    }

    #[test]
    fn context_parallel_degrees_leave_a_rank_enough_tokens() {
        let at =
            |q: &str, ranks| context_parallel_degrees(&crate::query::decode_str(q).unwrap(), ranks);
        assert_eq!(at("?seq=131072", 8), [2, 4, 8]);
        assert_eq!(at("?seq=131072", 64), [2, 4, 8, 16]);
        assert_eq!(at("?seq=131072", 6), [2]);
        assert_eq!(at("?seq=16384", 8), [2]);
        assert!(at("?seq=8192", 8).is_empty());
        assert!(at("?seq=131072", 1).is_empty());
        // 12,288 tokens a rank at CP 2, 6,144 at CP 4.
        assert_eq!(at("?seq=24576", 8), [2]);
        assert!(
            at("?seq=4294967295", 1 << 20).is_empty(),
            "odd: no even split"
        );
    }

    #[test]
    fn long_sequences_get_a_context_parallel_rung() {
        let ids =
            |q: &str| -> Vec<Rung> { fix_ladder(&crate::query::decode_str(q).unwrap()).unwrap() };
        // Llama-3.1-8B at 128K on 8 × H100 under torchtitan: checkpointed and
        // sharded it is still too big; CP 2 splits the sequence and fits.
        let q = "?model=llama-3.1-8b&gpus=8&mb=1&ga=1&seq=131072&fw=torchtitan&shard=fsdp-full&ckpt=full";
        let ladder = ids(q);
        let cp = ladder
            .iter()
            .position(|r| r.id.starts_with("cp-"))
            .expect("a CP rung");
        assert!(
            ladder[cp].fits,
            "{:?}",
            ladder.iter().map(|r| &r.id).collect::<Vec<_>>()
        );
        assert!(ladder[cp].saving.get() > 0);
        assert_eq!(ladder[cp].speed_cost_pct, COST_CP);
        // Before tensor parallelism (cheaper), the global batch kept.
        assert!(ladder[..cp].iter().all(|r| !r.id.starts_with("tp-")));
        let p = crate::query::decode_str(q).unwrap();
        for r in &ladder {
            assert_eq!(r.plan.global_batch(), p.global_batch(), "{}", r.id);
        }
        // The Trainer has no CP, and a 4K sequence is not split.
        assert!(!ids(&q.replace("torchtitan", "hf-trainer"))
            .iter()
            .any(|r| r.id.starts_with("cp-")));
        assert!(!ids(&q.replace("131072", "4096").replace("mb=1", "mb=64"))
            .iter()
            .any(|r| r.id.starts_with("cp-")));
        // Llama-3.1-70B at 128K on 64 GPUs under Megatron-LM: no CP degree
        // alone fits, so TP 8 first, then CP over the ranks it left (Llama 3
        // trained at 128K with TP 8 and CP 16 beside PP 16).
        let ladder = ids(
            "?model=llama-3.1-70b&gpus=64&mb=1&ga=1&seq=131072&fw=megatron&shard=zero1&ckpt=full",
        );
        let names: Vec<&str> = ladder.iter().map(|r| r.id.as_str()).collect();
        let tp = names.iter().position(|n| *n == "tp-8").expect("tp-8");
        let cp = names.iter().position(|n| n.starts_with("cp-")).expect("cp");
        assert!(tp < cp, "{names:?}");
        let par = &ladder[cp].plan.parallel;
        assert_eq!(par.tp * par.cp * par.dp(), 64);
    }

    #[test]
    fn every_kth_block_recomputed_first_where_that_is_enough() {
        let ladder = |q: &str| fix_ladder(&crate::query::decode_str(q).unwrap()).unwrap();
        // Llama-3.1-8B on 8 × H100 under torchtitan, sharded, no recomputation:
        // some micro-batch is over the card without it and comfortable with
        // every 4th or 2nd block recomputed.
        let q = |mb: u32| {
            format!("?model=llama-3.1-8b&gpus=8&mb={mb}&ga=1&seq=2048&fw=torchtitan&shard=fsdp-full&ckpt=none")
        };
        let mut seen = Vec::new();
        for mb in 1..=16 {
            let l = ladder(&q(mb));
            let Some(i) = l
                .iter()
                .position(|r| r.id.starts_with("checkpointing-every-"))
            else {
                continue;
            };
            let k: u32 = l[i].id["checkpointing-every-".len()..].parse().unwrap();
            let t = &l[i].plan.training;
            assert_eq!(
                (t.checkpointing, t.checkpoint_every),
                (Checkpointing::Full, k)
            );
            assert_eq!(l[i].speed_cost_pct, COST_CHECKPOINTING / k as i32);
            let e = estimate(&l[i].plan).unwrap();
            assert!(comfortable(&e), "mb {mb}: every {k} taken without room");
            // The ladder stops there, and every block was not needed.
            assert_eq!(i, l.len() - 1);
            assert!(!l.iter().any(|r| r.id == "checkpointing"));
            // The cheaper k (4) is taken whenever it is enough, on the plan
            // the rungs before it left.
            if k == 2 {
                let mut p = match i {
                    0 => crate::query::decode_str(&q(mb)).unwrap(),
                    _ => l[i - 1].plan.clone(),
                };
                p.training.checkpointing = Checkpointing::Full;
                p.training.checkpoint_every = 4;
                assert!(!comfortable(&estimate(&p).unwrap()), "mb {mb}");
            }
            // The Trainer has no such switch: every block.
            let trainer = ladder(&q(mb).replace("torchtitan", "hf-trainer"));
            assert!(!trainer
                .iter()
                .any(|r| r.id.starts_with("checkpointing-every-")));
            seen.push(k);
        }
        assert!(seen.contains(&4) && seen.contains(&2), "{seen:?}");
        // A plan already recomputing every 4th block and still over the card
        // goes to every 2nd or every block — never to every 4th again — and
        // the full rung recomputes every block.
        let mut hit = false;
        for mb in 1..=32 {
            let l = ladder(&q(mb).replace("ckpt=none", "ckpt=full&ckpt_every=4"));
            for r in l.iter().filter(|r| r.id.starts_with("checkpointing")) {
                assert_ne!(r.id, "checkpointing-every-4");
                if r.id == "checkpointing" {
                    assert_eq!(r.plan.training.checkpoint_every, 1);
                    hit = true;
                }
            }
        }
        assert!(hit, "no plan went to every block");
    }

    #[test]
    fn sharding_rungs_are_the_frameworks_own() {
        let shard = |q: &str| -> Vec<String> {
            let p = crate::query::decode_str(q).unwrap();
            fix_ladder(&p)
                .unwrap()
                .into_iter()
                .map(|r| r.id)
                .filter(|id| {
                    id.starts_with("zero-")
                        || id.starts_with("fsdp-")
                        || id == "distributed-optimizer"
                })
                .collect()
        };
        let plan = "?model=llama-3.1-70b&gpus=8&mb=4&ga=8&shard=ddp";
        // The Trainer family: DeepSpeed's ZeRO from DDP.
        assert_eq!(shard(plan), ["zero-1", "zero-2", "zero-3"]);
        // No ZeRO in torchtune (FSDP2 `fully_shard`), torchtitan or a loop of
        // one's own: FSDP's rungs.
        assert_eq!(shard(&format!("{plan}&fw=torchtune")), ["fsdp-full"]);
        assert_eq!(shard(&format!("{plan}&fw=torchtitan")), ["fsdp-full"]);
        assert_eq!(
            shard(&format!("{plan}&fw=plain-pytorch")),
            ["fsdp-grad-op", "fsdp-full"]
        );
        assert_eq!(
            shard(&format!("{plan}&fw=megatron")),
            ["distributed-optimizer"]
        );
        // On FSDP already, FSDP's deeper strategy, not ZeRO.
        assert_eq!(
            shard("?model=llama-3.1-70b&gpus=8&mb=4&ga=8&shard=fsdp-grad-op"),
            ["fsdp-full"]
        );
        // One GPU: nothing to shard over.
        assert!(shard("?model=llama-3.1-70b&gpus=1&shard=none").is_empty());
    }
}
