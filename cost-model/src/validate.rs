//! Plan validation: every check names the field at fault. Runs before any
//! arithmetic, so the estimate itself never sees a zero divisor.

use crate::error::PlanError;
use crate::model::Arch;
use crate::plan::{Finetune, Plan, Precision, Sharding, PLAN_VERSION};

/// The most memory a GPU may have: 1 PiB in MiB, thousands of times the
/// largest accelerator made (AMD MI355X, 288 GB).
pub const MAX_GPU_MIB: u64 = 1 << 30;

/// Upper bounds that keep every product far inside f64's exact range and
/// reject obvious typos ("micro_batch: 1e9") with a clear message.
pub const MAX_MICRO_BATCH: u64 = 1 << 20;
pub const MAX_SEQ_LEN: u64 = 1 << 24;
pub const MAX_GPUS: u64 = 1 << 20;
pub const MAX_LAYERS: u64 = 10_000;
pub const MAX_WIDTH: u64 = 1 << 20;
pub const MAX_VOCAB: u64 = 1 << 26;
pub const MAX_EXPERTS: u64 = 1 << 14;
/// A vision encoder's parameters: the largest published (InternViT-6B) is
/// 5.9e9; 1.1e12 leaves every sum of weights far from overflowing.
pub const MAX_VISION_PARAMS: u64 = 1 << 40;
/// The most parameters a model may have: 2^52 (4.5 · 10^15, some ten
/// thousand times the largest trained models), where every count is still
/// an exact f64 and the u64 sums cannot overflow.
pub const MAX_PARAMS: f64 = 4_503_599_627_370_496.0;

fn positive(field: &'static str, v: impl Into<u64>, max: u64) -> Result<(), PlanError> {
    let v = v.into();
    if v == 0 {
        return Err(PlanError::Zero { field });
    }
    at_most(field, v, max)
}

/// `v` (0 allowed) is no more than `max`.
fn at_most(field: &'static str, v: impl Into<u64>, max: u64) -> Result<(), PlanError> {
    let v = v.into();
    if v > max {
        return Err(PlanError::TooLarge {
            field,
            value: v,
            max,
        });
    }
    Ok(())
}

fn divisible(
    field: &'static str,
    v: u32,
    by_field: &'static str,
    by: u32,
) -> Result<(), PlanError> {
    if by == 0 || !v.is_multiple_of(by) {
        return Err(PlanError::NotDivisible {
            field,
            value: v as u64,
            by_field,
            by: by as u64,
        });
    }
    Ok(())
}

/// Checks that the plan describes a run that can exist.
pub fn validate(plan: &Plan) -> Result<(), PlanError> {
    if plan.version > PLAN_VERSION {
        return Err(PlanError::UnsupportedVersion {
            found: plan.version,
            supported: PLAN_VERSION,
        });
    }
    let m = &plan.model;
    positive("model.layers", m.layers, MAX_LAYERS)?;
    at_most("model.encoder_layers", m.encoder_layers, MAX_LAYERS)?;
    positive("model.hidden", m.hidden, MAX_WIDTH)?;
    positive("model.heads", m.heads, MAX_WIDTH)?;
    positive("model.kv_heads", m.kv_heads, MAX_WIDTH)?;
    positive("model.head_dim", m.head_dim, MAX_WIDTH)?;
    positive("model.ffn", m.ffn, MAX_WIDTH)?;
    positive("model.vocab", m.vocab, MAX_VOCAB)?;
    positive("model.norms_per_layer", m.norms_per_layer.max(1), 8)?;
    divisible("model.heads", m.heads, "model.kv_heads", m.kv_heads)?;
    at_most("model.experts", m.experts, MAX_EXPERTS)?;
    at_most("model.vision_params", m.vision_params, MAX_VISION_PARAMS)?;
    if m.experts > 0 && (m.experts_per_token == 0 || m.experts_per_token > m.experts) {
        return Err(PlanError::Invalid {
            field: "model.experts_per_token",
            reason: format!("must be between 1 and experts ({})", m.experts),
        });
    }
    at_most("model.shared_experts", m.shared_experts, MAX_EXPERTS)?;
    if m.shared_experts > 0 && m.experts == 0 {
        return Err(PlanError::Invalid {
            field: "model.shared_experts",
            reason: "only an MoE model (experts > 0) has shared experts beside its routed ones"
                .into(),
        });
    }
    if m.dense_layers > 0 {
        if m.experts == 0 {
            return Err(PlanError::Invalid {
                field: "model.dense_layers",
                reason: "only an MoE model (experts > 0) has dense blocks among its expert \
                         blocks; a dense model's MLP width is ffn"
                    .into(),
            });
        }
        if m.arch != Arch::Decoder {
            return Err(PlanError::Invalid {
                field: "model.dense_layers",
                reason: "dense blocks among expert blocks are modelled for decoder models only"
                    .into(),
            });
        }
        if m.dense_layers >= m.layers {
            return Err(PlanError::Invalid {
                field: "model.dense_layers",
                reason: format!(
                    "must be below layers ({}): with every block dense the model is a dense \
                     one (experts 0, ffn the dense width)",
                    m.layers
                ),
            });
        }
        positive("model.dense_ffn", m.dense_ffn, MAX_WIDTH)?;
    }
    if let Some(a) = m.mla {
        positive("model.mla.kv_rank", a.kv_rank, MAX_WIDTH)?;
        positive("model.mla.v_dim", a.v_dim, MAX_WIDTH)?;
        at_most("model.mla.q_rank", a.q_rank, MAX_WIDTH)?;
        if a.rope_dim > m.head_dim {
            return Err(PlanError::Invalid {
                field: "model.mla.rope_dim",
                reason: format!(
                    "the rotary part of a head ({}) cannot exceed head_dim ({}), q's and k's \
                     width per head (qk_nope_head_dim + qk_rope_head_dim)",
                    a.rope_dim, m.head_dim
                ),
            });
        }
        if m.kv_heads != m.heads {
            return Err(PlanError::Invalid {
                field: "model.kv_heads",
                reason: format!(
                    "latent attention expands k and v to every head: kv_heads must equal heads ({})",
                    m.heads
                ),
            });
        }
    }
    // Every block's MLP matrices (all experts') at the widest MLP bound the
    // parameter count; past MAX_PARAMS the u64 sums could overflow.
    let widest = m.ffn.max(m.dense_ffn) as f64;
    let mlps = (m.experts as f64 + m.shared_experts as f64).max(1.0) + 1.0;
    let bound = (m.total_layers() as f64 + 1.0)
        * (mlps * 3.0 * widest * m.hidden as f64
            + 4.0 * m.hidden as f64 * (m.heads as f64 * m.head_dim as f64 + m.hidden as f64))
        + 2.0 * m.vocab as f64 * m.hidden as f64
        + m.mla.map_or(0.0, |a| {
            (m.total_layers() as f64 + 1.0)
                * (a.q_rank as f64 + a.kv_rank as f64)
                * (m.hidden as f64 + m.heads as f64 * (m.head_dim as f64 + a.v_dim as f64))
        });
    if bound > MAX_PARAMS {
        return Err(PlanError::Invalid {
            field: if m.experts > 0 {
                "model.experts"
            } else {
                "model.layers"
            },
            reason: format!(
                "these dimensions make some {bound:.2e} parameters, more than the {MAX_PARAMS:.1e} \
                 this planner represents; check layers, hidden, ffn and experts"
            ),
        });
    }

    let t = &plan.training;
    positive("training.micro_batch", t.micro_batch, MAX_MICRO_BATCH)?;
    positive("training.seq_len", t.seq_len, MAX_SEQ_LEN)?;
    if let Some(target) = t.target_len {
        positive("training.target_len", target, MAX_SEQ_LEN)?;
        if m.arch != Arch::EncoderDecoder {
            return Err(PlanError::Invalid {
                field: "training.target_len",
                reason: "only an encoder–decoder model has a decoder (target) length of its own; \
                         leave it out and set seq_len"
                    .into(),
            });
        }
    }
    if t.frozen_layers > 0 {
        if !matches!(t.finetune, Finetune::Full) {
            return Err(PlanError::Invalid {
                field: "training.frozen_layers",
                reason:
                    "frozen layers belong to full fine-tuning; adapters already freeze the base"
                        .into(),
            });
        }
        if t.frozen_layers > m.total_layers() {
            return Err(PlanError::Invalid {
                field: "training.frozen_layers",
                reason: format!(
                    "{} frozen layers, but the model has {} blocks",
                    t.frozen_layers,
                    m.total_layers()
                ),
            });
        }
    }
    if let Some(rank) = t.galore_rank {
        positive("training.galore_rank", rank, MAX_WIDTH)?;
    }
    positive("training.grad_accum", t.grad_accum, 1 << 20)?;
    positive("training.checkpoint_every", t.checkpoint_every, MAX_LAYERS)?;
    if t.finetune.virtual_tokens() as u64 > MAX_SEQ_LEN {
        return Err(PlanError::TooLarge {
            field: "training.finetune.virtual_tokens",
            value: t.finetune.virtual_tokens() as u64,
            max: MAX_SEQ_LEN,
        });
    }
    if let Finetune::Lora { rank, .. } = t.finetune {
        positive("training.finetune.rank", rank, MAX_WIDTH)?;
    }
    if let Some(base_bits) = t.finetune.base_bits() {
        if !matches!(base_bits, 4 | 8 | 16 | 32) {
            return Err(PlanError::Invalid {
                field: "training.finetune.base_bits",
                reason: format!("{base_bits} is not one of 4, 8, 16, 32"),
            });
        }
    }

    // A GPU's memory: entered in the planner (a MIG slice, a card not in
    // the catalogue) or in a plan file, it must be there and be a GPU's.
    positive("gpu.capacity_mib", plan.gpu.capacity_mib, MAX_GPU_MIB)?;

    let p = &plan.parallel;
    positive("parallel.num_gpus", p.num_gpus, MAX_GPUS)?;
    positive("parallel.tp", p.tp, MAX_GPUS)?;
    positive("parallel.pp", p.pp, MAX_GPUS)?;
    positive("parallel.cp", p.cp, MAX_GPUS)?;
    positive("parallel.ep", p.ep, MAX_GPUS)?;
    positive("parallel.gpus_per_node", p.gpus_per_node, MAX_GPUS)?;
    positive("parallel.virtual_stages", p.virtual_stages, MAX_LAYERS)?;
    positive(
        "parallel.hpz_partition_size",
        p.hpz_partition_size,
        MAX_GPUS,
    )?;
    // ZeRO++'s hpZ is a stage-3 partitioning (deepspeed `zero_hpz_partition_size`,
    // read by `zero.Init` and stage 3 only), its group a divisor of the
    // data-parallel ranks (`groups._create_zero_param_parallel_group`
    // splits the world into groups of that size).
    if p.hpz_partition_size > 1 {
        if p.sharding != Sharding::Zero3 {
            return Err(PlanError::Invalid {
                field: "parallel.hpz_partition_size",
                reason: format!(
                    "ZeRO++'s hpZ partitions ZeRO-3's parameters; sharding {} has no such partition \
                     (use zero3, or 1 to turn hpZ off)",
                    crate::query::enum_id(&p.sharding)
                ),
            });
        }
        let dp = p.num_gpus as u64 / (p.tp as u64 * p.pp as u64 * p.cp as u64).max(1);
        if dp > 0 && !dp.is_multiple_of(p.hpz_partition_size as u64) {
            return Err(PlanError::Invalid {
                field: "parallel.hpz_partition_size",
                reason: format!(
                    "the hpZ group ({}) must divide the data-parallel ranks ({dp} = num_gpus / \
                     (tp × pp × cp))",
                    p.hpz_partition_size
                ),
            });
        }
    }
    divisible("model.heads", m.heads, "parallel.tp", p.tp)?;
    if !m.kv_heads.is_multiple_of(p.tp) && !p.tp.is_multiple_of(m.kv_heads) {
        return Err(PlanError::Invalid {
            field: "parallel.tp",
            reason: format!(
                "kv_heads ({}) can be neither split over nor replicated across tp ({})",
                m.kv_heads, p.tp
            ),
        });
    }
    // Only the runtimes that fetch each unit's parameters before use can keep
    // them on the host: DeepSpeed reads `offload_param` at stage 3 alone
    // ("Valid only with stage 3", deepspeed 0.19.8 `runtime/zero/config.py`;
    // `engine.py` builds ZeRO-1/2 without it) and FSDP's `CPUOffload`
    // comes with its sharding; DDP and a single GPU have no such mechanism.
    if p.offload.params_offloaded() && !p.sharding.shards_params() {
        return Err(PlanError::Invalid {
            field: "parallel.offload.params",
            reason: format!(
                "parameter offload needs ZeRO-3 or FSDP, which fetch parameters layer by layer; \
                 sharding {} keeps them all on the GPU (zero3 and fsdp-full also run on one GPU)",
                crate::query::enum_id(&p.sharding)
            ),
        });
    }
    let stages = p.pp as u64 * p.virtual_stages as u64;
    if stages > m.layers as u64 {
        return Err(PlanError::Invalid {
            field: "parallel.pp",
            reason: format!(
                "pp × virtual_stages ({stages}) is larger than the model's layers ({})",
                m.layers
            ),
        });
    }
    let mp = p.tp as u64 * p.pp as u64 * p.cp as u64;
    if !(p.num_gpus as u64).is_multiple_of(mp) {
        return Err(PlanError::NotDivisible {
            field: "parallel.num_gpus",
            value: p.num_gpus as u64,
            by_field: "tp × pp × cp",
            by: mp,
        });
    }
    divisible("training.seq_len", t.seq_len, "parallel.cp", p.cp)?;
    if let Some(target) = t.target_len {
        divisible("training.target_len", target, "parallel.cp", p.cp)?;
    }
    if m.experts > 0 {
        divisible("model.experts", m.experts, "parallel.ep", p.ep)?;
    } else if p.ep > 1 {
        return Err(PlanError::Invalid {
            field: "parallel.ep",
            reason: "expert parallelism needs a mixture-of-experts model".into(),
        });
    }
    // float8 matmuls need float8 tensor cores (NVIDIA compute capability 8.9
    // and up — Ada, Hopper, Blackwell — or AMD MI300): Transformer Engine
    // refuses older GPUs ("Device compute capability 8.9 or higher required
    // for FP8 execution.", transformer_engine 2.20.2
    // `pytorch/quantization.py`) and torchao's float8 matmul asserts
    // `is_sm_at_least_89`. A GPU whose throughput is not known (a custom
    // one) is not judged.
    let g = &plan.gpu;
    if t.precision == Precision::Fp8
        && g.fp8_tflops <= 0.0
        && (g.bf16_tflops > 0.0 || g.fp16_tflops > 0.0)
    {
        return Err(PlanError::Invalid {
            field: "training.precision",
            reason: format!(
                "fp8 needs float8 tensor cores (Ada, Hopper, Blackwell, MI300); the {} has none — \
                 use bf16 (or fp16) mixed precision on it",
                g.name
            ),
        });
    }
    // Sequence parallelism without TP is allowed and changes nothing: it is a
    // framework default (torchtitan's) that applies once TP is on, and
    // Megatron-LM itself switches it off at `tensor_model_parallel_size == 1`
    // with a warning rather than refusing the run.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::gpu;

    #[test]
    fn a_gpu_without_memory_or_with_absurd_memory_is_refused_by_name() {
        let mut p = Plan::default();
        p.gpu.capacity_mib = 0;
        assert_eq!(validate(&p).unwrap_err().field(), "gpu.capacity_mib");
        p.gpu.capacity_mib = MAX_GPU_MIB + 1;
        let e = validate(&p).unwrap_err();
        assert_eq!(e.field(), "gpu.capacity_mib");
        assert!(e.to_string().contains("1073741824"), "{e}");
        p.gpu.capacity_mib = 20 * 1024; // an H100 cut in four (MIG 1g.20gb)
        assert_eq!(validate(&p), Ok(()));
    }

    #[test]
    fn fp8_needs_float8_tensor_cores() {
        let mut p = Plan::default();
        p.training.precision = Precision::Fp8;
        p.gpu = gpu("h100-sxm-80gb").unwrap();
        assert_eq!(validate(&p), Ok(()));
        p.gpu = gpu("rtx4090-24gb").unwrap();
        assert_eq!(validate(&p), Ok(()));
        p.gpu = gpu("a100-sxm4-80gb").unwrap();
        let e = validate(&p).unwrap_err();
        assert_eq!(e.field(), "training.precision");
        assert!(e.to_string().contains("A100"), "{e}");
        // bf16 on the same GPU is fine; a GPU of unknown throughput is not judged.
        p.training.precision = Precision::AmpBf16;
        assert_eq!(validate(&p), Ok(()));
        p.training.precision = Precision::Fp8;
        p.gpu.bf16_tflops = 0.0;
        p.gpu.fp16_tflops = 0.0;
        assert_eq!(validate(&p), Ok(()));
    }

    #[test]
    fn only_an_encoder_decoder_has_a_target_length() {
        let mut p = Plan::default(); // Llama-3-8B, a decoder
        p.training.target_len = Some(128);
        let e = validate(&p).unwrap_err();
        assert_eq!(e.field(), "training.target_len");
        assert!(e.to_string().contains("encoder–decoder"), "{e}");
        p.model = crate::presets::preset("t5-base").unwrap().spec();
        assert_eq!(validate(&p), Ok(()));
        p.training.target_len = Some(0);
        assert_eq!(validate(&p).unwrap_err().field(), "training.target_len");
        p.training.target_len = Some(u32::MAX);
        assert_eq!(validate(&p).unwrap_err().field(), "training.target_len");
        p.training.target_len = Some(127);
        p.parallel.cp = 2;
        p.parallel.num_gpus = 8;
        p.training.seq_len = 512;
        assert_eq!(validate(&p).unwrap_err().field(), "training.target_len");
    }

    #[test]
    fn shared_experts_and_dense_blocks_belong_to_an_moe_decoder() {
        let field = |p: &Plan| validate(p).unwrap_err().field();
        let mut p = Plan::default(); // Llama-3-8B, dense
        p.model.shared_experts = 2;
        assert_eq!(field(&p), "model.shared_experts");
        p.model.shared_experts = 0;
        p.model.dense_layers = 1;
        p.model.dense_ffn = 14336;
        let e = validate(&p).unwrap_err();
        assert_eq!(e.field(), "model.dense_layers");
        assert!(e.to_string().contains("only an MoE model"), "{e}");
        p.model = crate::presets::preset("deepseek-moe-16b").unwrap().spec();
        assert_eq!(validate(&p), Ok(()));
        p.model.dense_ffn = 0;
        assert_eq!(field(&p), "model.dense_ffn");
        p.model.dense_ffn = 10944;
        p.model.dense_layers = 28;
        let e = validate(&p).unwrap_err();
        assert_eq!(e.field(), "model.dense_layers");
        assert!(e.to_string().contains("below layers (28)"), "{e}");
        p.model.dense_layers = 1;
        p.model.shared_experts = u32::MAX;
        assert_eq!(field(&p), "model.shared_experts");
    }

    #[test]
    fn a_model_too_large_to_count_is_refused_by_name() {
        // Within every per-field bound, but 10,000 blocks of 16,384 experts
        // 2^20 wide would overflow the u64 parameter sums.
        let mut p = Plan::default();
        p.model.layers = 10_000;
        p.model.hidden = 1 << 20;
        p.model.ffn = 1 << 20;
        p.model.experts = 1 << 14;
        p.model.experts_per_token = 1;
        let e = validate(&p).unwrap_err();
        assert_eq!(e.field(), "model.experts");
        assert!(e.to_string().contains("more than the"), "{e}");
        // The largest preset passes.
        p.model = crate::presets::preset("llama-3.1-405b").unwrap().spec();
        assert_eq!(validate(&p), Ok(()));
    }
}
