//! Plan validation: every check names the field at fault. Runs before any
//! arithmetic, so the estimate itself never sees a zero divisor.

use crate::error::PlanError;
use crate::model::Arch;
use crate::plan::{Finetune, Plan, Precision, PLAN_VERSION};

/// Upper bounds that keep every product far inside f64's exact range and
/// reject obvious typos ("micro_batch: 1e9") with a clear message.
pub const MAX_MICRO_BATCH: u64 = 1 << 20;
pub const MAX_SEQ_LEN: u64 = 1 << 24;
pub const MAX_GPUS: u64 = 1 << 20;
pub const MAX_LAYERS: u64 = 10_000;
pub const MAX_WIDTH: u64 = 1 << 20;
pub const MAX_VOCAB: u64 = 1 << 26;
pub const MAX_EXPERTS: u64 = 1 << 14;

fn positive(field: &'static str, v: u32, max: u64) -> Result<(), PlanError> {
    if v == 0 {
        return Err(PlanError::Zero { field });
    }
    if v as u64 > max {
        return Err(PlanError::TooLarge {
            field,
            value: v as u64,
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
    if m.encoder_layers as u64 > MAX_LAYERS {
        return Err(PlanError::TooLarge {
            field: "model.encoder_layers",
            value: m.encoder_layers as u64,
            max: MAX_LAYERS,
        });
    }
    positive("model.hidden", m.hidden, MAX_WIDTH)?;
    positive("model.heads", m.heads, MAX_WIDTH)?;
    positive("model.kv_heads", m.kv_heads, MAX_WIDTH)?;
    positive("model.head_dim", m.head_dim, MAX_WIDTH)?;
    positive("model.ffn", m.ffn, MAX_WIDTH)?;
    positive("model.vocab", m.vocab, MAX_VOCAB)?;
    positive("model.norms_per_layer", m.norms_per_layer.max(1), 8)?;
    divisible("model.heads", m.heads, "model.kv_heads", m.kv_heads)?;
    if m.experts as u64 > MAX_EXPERTS {
        return Err(PlanError::TooLarge {
            field: "model.experts",
            value: m.experts as u64,
            max: MAX_EXPERTS,
        });
    }
    if m.experts > 0 && (m.experts_per_token == 0 || m.experts_per_token > m.experts) {
        return Err(PlanError::Invalid {
            field: "model.experts_per_token",
            reason: format!("must be between 1 and experts ({})", m.experts),
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

    let p = &plan.parallel;
    positive("parallel.num_gpus", p.num_gpus, MAX_GPUS)?;
    positive("parallel.tp", p.tp, MAX_GPUS)?;
    positive("parallel.pp", p.pp, MAX_GPUS)?;
    positive("parallel.cp", p.cp, MAX_GPUS)?;
    positive("parallel.ep", p.ep, MAX_GPUS)?;
    positive("parallel.gpus_per_node", p.gpus_per_node, MAX_GPUS)?;
    positive("parallel.virtual_stages", p.virtual_stages, MAX_LAYERS)?;
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
}
