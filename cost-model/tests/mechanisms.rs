//! Mechanisms read off the H200 per-phase measurements
//! (calibration/h200-2026-11-30, `alloc_after_*` fields): each test pins one
//! term to the bytes it was measured to add, so that breaking the term fails here.
#![allow(clippy::field_reassign_with_default)] // one field at a time reads best here

mod common;
use common::{backward_reserve_share as share, lora16_all, phase, phase_counters};

use cost_model::estimate::{
    estimate, Breakdown, Phase, ALLOCATOR_RESERVE_FRACTION,
    ALLOCATOR_RESERVE_FRACTION_FROZEN_NO_RECOMPUTE,
};
use cost_model::framework::Framework;
use cost_model::model::{Mla, Mlp, Norm};
use cost_model::plan::{
    AdapterMethod, Attention, Checkpointing, Finetune, LoraTargets, LoraVariant, Optimizer,
    OptimizerImpl, Plan, Precision, PytorchRelease, Sharding, TorchtitanRelease,
};
use cost_model::presets::{by_hub_id, preset};

/// One GPU, a plain PyTorch loop over a transformers model, as measured.
fn plan(model: &str, precision: Precision, mb: u32, seq: u32) -> Plan {
    let mut p = Plan::default();
    p.model = preset(model).unwrap().spec();
    p.set_framework(Framework::PlainPytorch);
    p.training.fp32_upcasts = true; // a transformers model
    p.training.precision = precision;
    p.training.micro_batch = mb;
    p.training.seq_len = seq;
    p.training.checkpointing = Checkpointing::None;
    p.training.dropout = false;
    p.parallel.num_gpus = 1;
    p.parallel.sharding = Sharding::None;
    p
}

const GIB: f64 = (1u64 << 30) as f64;

/// The allocated-counter row `id` of the H200 run `run` (calibration/<run>.csv),
/// as the calibration reader plans it.
fn measured_row(run: &str, id: &str) -> Plan {
    let path = format!("{}/../calibration/{run}.csv", env!("CARGO_MANIFEST_DIR"));
    let csv = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    cost_model::calibrate::case_plan(&csv, &format!("{run}-{id}-alloc")).unwrap()
}

fn allocated_gib(p: &Plan) -> f64 {
    estimate(p).unwrap().peak.allocated.get() as f64 / GIB
}

fn mib(b: cost_model::units::Bytes) -> f64 {
    b.get() as f64 / (1u64 << 20) as f64
}

#[test]
fn foreach_adamw_makes_one_temporary_in_the_states_dtype() {
    // Llama-3.1-8B in pure bf16 stepped at weights + grads + states + 2 B/param;
    // the amp run died inside `_foreach_sqrt` with fp32 states.
    let mut p = plan("llama-3.1-8b", Precision::Bf16, 1, 2048);
    let params = estimate(&p).unwrap().params as f64;
    let tmp = |p: &Plan| {
        (phase(&estimate(p).unwrap(), Phase::Step).temporaries.get() - common::cublas_workspaces(p))
            as f64
    };
    assert_eq!(tmp(&p), params * 2.0);
    p.training.precision = Precision::AmpBf16;
    assert_eq!(tmp(&p), params * 4.0);
    p.training.optimizer_impl = OptimizerImpl::Fused;
    assert_eq!(tmp(&p), 0.0);
    // SGD with momentum updates its buffers in place.
    p.training.optimizer_impl = OptimizerImpl::Foreach;
    p.training.optimizer = Optimizer::SgdMomentum;
    assert_eq!(tmp(&p), 0.0);
}

#[test]
fn sdpa_falls_back_to_the_math_kernel_for_fp32_grouped_query_attention() {
    // Qwen2.5-0.5B (14 heads, 2 kv heads) in fp32 used the same bytes with SDPA as eager.
    let acts = |model: &str, attn: Attention| {
        let mut p = plan(model, Precision::Fp32, 8, 1024);
        p.training.attention = attn;
        phase(&estimate(&p).unwrap(), Phase::Forward).activations
    };
    assert_eq!(
        acts("qwen2.5-0.5b", Attention::Flash),
        acts("qwen2.5-0.5b", Attention::Eager)
    );
    // GPT-2 has no grouped kv heads: the memory-efficient kernel takes fp32.
    assert!(acts("gpt2", Attention::Flash) < acts("gpt2", Attention::Eager));
    // In bf16 the flash kernel runs.
    let mut p = plan("qwen2.5-0.5b", Precision::Bf16, 8, 1024);
    let flash = phase(&estimate(&p).unwrap(), Phase::Forward).activations;
    p.training.attention = Attention::Eager;
    assert!(flash < phase(&estimate(&p).unwrap(), Phase::Forward).activations);
}

#[test]
fn autocast_keeps_a_cast_per_projection_and_fp32_normalised_tensors() {
    // Llama-3.2-1B amp-bf16 kept 10·hidden bytes per token per block more than
    // pure bf16 (measured 2593 MiB at 4 × 2048 tokens, 16 blocks; 10h = 2560 MiB).
    let acts = |prec| {
        phase(
            &estimate(&plan("llama-3.2-1b", prec, 4, 2048)).unwrap(),
            Phase::Forward,
        )
        .activations
    };
    let diff = mib(acts(Precision::AmpBf16)) - mib(acts(Precision::Bf16));
    assert_eq!(
        diff,
        10.0 * 2048.0 * 4.0 * 2048.0 * 16.0 / (1u64 << 20) as f64
    );
    // Fused q/k/v (Phi-3's qkv_proj) keep one cast.
    let fused = |prec| {
        let mut p = plan("llama-3.2-1b", prec, 4, 2048);
        p.model.fused_projections = true;
        phase(&estimate(&p).unwrap(), Phase::Forward).activations
    };
    assert!(fused(Precision::AmpBf16) < acts(Precision::AmpBf16));
    // With grouped k/v that SDPA groups itself (no mask), v stays a view of
    // the fused output, which is kept too (replayed: Phi-4-mini, 24 heads
    // over 8, −2.6 % without): hq + hkv = 2048 + 512 bf16 values per token.
    assert_eq!(
        mib(fused(Precision::Bf16)) - mib(acts(Precision::Bf16)),
        2.0 * (2048.0 + 512.0) * 4.0 * 2048.0 * 16.0 / (1u64 << 20) as f64
    );
    // Under a mask `repeat_kv` copies v: nothing more kept.
    let masked = |fused: bool| {
        let mut p = plan("llama-3.2-1b", Precision::Bf16, 4, 2048);
        p.model.fused_projections = fused;
        p.training.padded = true;
        phase(&estimate(&p).unwrap(), Phase::Forward).activations
    };
    assert_eq!(masked(true), masked(false));
    // With multi-head attention (Phi-3-mini) the fused qkv output stays alive
    // through its v view beside the rotated q and k (Phi-3-mini bf16 measured
    // −7.3 % without this, −2.5 % with it): (hq + hkv) = 2048 + 2048 bf16
    // values per token per block.
    let mha = |fused: bool| {
        let mut p = plan("llama-3.2-1b", Precision::Bf16, 4, 2048);
        p.model.kv_heads = p.model.heads;
        p.model.fused_projections = fused;
        mib(phase(&estimate(&p).unwrap(), Phase::Forward).activations)
    };
    assert_eq!(
        mha(true) - mha(false),
        2.0 * 4096.0 * 4.0 * 2048.0 * 16.0 / (1u64 << 20) as f64
    );
}

#[test]
fn measured_pure_bf16_llama_block_and_loss() {
    // Llama-3.2-1B, bf16, 4 × 2048 tokens: 19758 MiB held after forward
    // (blocks + final norm + 2 B logits held by the loop + 4 B log-softmax);
    // the loss's own forward moment held the fp32 upcast beside them (4008
    // MiB, dropped as the loss returns); the loss backward added two fp32
    // logits-sized gradients (8016 MiB) to what forward left.
    let e = estimate(&plan("llama-3.2-1b", Precision::Bf16, 4, 2048)).unwrap();
    let fwd = phase(&e, Phase::Forward);
    let held_after_forward = mib(fwd.activations) + mib(fwd.logits) - 4008.0;
    assert!(
        (held_after_forward - 19758.0).abs() / 19758.0 < 0.02,
        "{held_after_forward} MiB"
    );
    // The backward peak is the loss backward, with no block's working set on top.
    let bwd = phase(&e, Phase::Backward);
    let p = plan("llama-3.2-1b", Precision::Bf16, 4, 2048);
    assert_eq!(bwd.temporaries.get(), common::cublas_workspaces(&p));
    assert_eq!(mib(bwd.logits) - mib(fwd.logits), 4008.0);
}

#[test]
fn python_gelu_keeps_three_more_tensors() {
    // HF GPT-2 fp32 kept 115 bytes per token per hidden unit per block: 12
    // bytes per MLP-inner element over a fused GELU. Under fp16 autocast as
    // many (the fp32 tanh branch, and pow's fp32 cast of its input in place of
    // the fp16 input: the H200's GPT-2 amp-fp16 rows, allocated −4.7 % without
    // the cast, −0.1 % with it); in pure 16-bit, half.
    let acts = |prec, gelu_new| {
        let mut p = plan("gpt2", prec, 16, 1024);
        p.model.gelu_new = gelu_new;
        mib(phase(&estimate(&p).unwrap(), Phase::Forward).activations)
    };
    let per_inner_byte = 3072.0 * 16.0 * 1024.0 * 12.0 / (1u64 << 20) as f64;
    for (prec, bytes) in [
        (Precision::Fp32, 12.0),
        (Precision::AmpFp16, 12.0),
        (Precision::Bf16, 6.0),
    ] {
        let extra = acts(prec, true) - acts(prec, false);
        assert!(
            (extra - bytes * per_inner_byte).abs() < 1e-6,
            "{prec:?}: {extra} MiB"
        );
    }
    // LitGPT's GPT-2 calls the fused kernel.
    let mut p = plan("gpt2", Precision::Fp32, 16, 1024);
    p.set_framework(Framework::Litgpt);
    let a = phase(&estimate(&p).unwrap(), Phase::Forward).activations;
    p.model.gelu_new = false;
    assert_eq!(a, phase(&estimate(&p).unwrap(), Phase::Forward).activations);
}

#[test]
fn hub_ids_name_presets() {
    let id = |s: &str| by_hub_id(s).map(|p| p.id);
    assert_eq!(id("openai-community/gpt2-xl"), Some("gpt2-xl"));
    assert_eq!(id("gpt2"), Some("gpt2"));
    assert_eq!(id("meta-llama/Llama-2-7b-hf"), Some("llama-2-7b"));
    assert_eq!(id("microsoft/phi-1_5"), Some("phi-1.5"));
    assert_eq!(id("microsoft/Phi-3-mini-4k-instruct"), Some("phi-3-mini"));
    assert_eq!(id("google/flan-t5-xl"), Some("flan-t5-xl"));
    assert_eq!(id("google/t5-v1_1-large"), Some("flan-t5-large"));
    assert_eq!(id("bigscience/T0_3B"), Some("flan-t5-xl"));
    assert_eq!(id("bigscience/T0pp"), Some("flan-t5-xxl"));
    assert_eq!(id("bigscience/mt0-xxl"), Some("mt5-xxl"));
    assert_eq!(id("facebook/bart-large-cnn"), Some("bart-large"));
    assert_eq!(id("t5-large"), Some("t5-large"));
    assert_eq!(id("someone/gpt2xl"), None);
    assert_eq!(id(""), None);
}

#[test]
fn config_import_reads_the_implementation_flags() {
    use cost_model::hf_config::from_config_json;
    let gpt2 = r#"{"model_type":"gpt2","n_embd":768,"n_layer":12,"n_head":12,
        "n_positions":1024,"vocab_size":50257,"activation_function":"gelu_new"}"#;
    let m = from_config_json(gpt2, "gpt2").unwrap();
    assert!(m.fused_projections && m.gelu_new);
    let relu = gpt2.replace("gelu_new", "relu");
    assert!(!from_config_json(&relu, "x").unwrap().gelu_new);
    let phi3 = r#"{"model_type":"phi3","hidden_size":3072,"intermediate_size":8192,
        "num_hidden_layers":32,"num_attention_heads":32,"vocab_size":32064}"#;
    let m = from_config_json(phi3, "phi3").unwrap();
    assert!(m.fused_projections && !m.gelu_new);
    let llama = phi3.replace("phi3", "llama");
    assert!(!from_config_json(&llama, "x").unwrap().fused_projections);
}

#[test]
fn torch_compile_fuses_norms_and_a_loss_computed_in_forward() {
    // Llama-3.2-1B bf16, 4 × 2048 tokens, compiled: 12390 MiB held after forward
    // (blocks without the norms' fp32 copies + the 2 B logits the loop holds),
    // and no fp32 logits tensor in forward.
    let mut p = plan("llama-3.2-1b", Precision::Bf16, 4, 2048);
    p.training.compile = true;
    let e = estimate(&p).unwrap();
    let fwd = phase(&e, Phase::Forward);
    let bytes_per_logit = 4.0 * 2048.0 * 128256.0 / (1u64 << 20) as f64;
    let held = mib(fwd.activations) + mib(fwd.logits) - 4.0 * bytes_per_logit;
    // With the SiLU output recomputed and k/v repeated under the mask built
    // while compiling (saved_tensors.py --compile, pinned below): within 2 %.
    assert!((held / 12390.0 - 1.0).abs() < 0.02, "{held} MiB");
    // Eager keeps more.
    p.training.compile = false;
    let eager = phase(&estimate(&p).unwrap(), Phase::Forward);
    assert!(eager.activations > fwd.activations && eager.logits > fwd.logits);
    // A loss outside the compiled model (a hand-written model) stays eager.
    p.training.fp32_upcasts = false;
    let loss_eager = phase(&estimate(&p).unwrap(), Phase::Forward).logits;
    p.training.compile = true;
    let compiled = phase(&estimate(&p).unwrap(), Phase::Forward).logits;
    // Only the final norm's saved input differs (8192 tokens × 2048 × ≤ 4 B).
    assert!(
        mib(loss_eager) - mib(compiled) <= 64.0,
        "{loss_eager:?} {compiled:?}"
    );
}

#[test]
fn a_compiled_transformers_block_keeps_what_its_saved_tensors_add_up_to() {
    // calibration/saved_tensors.py --compile (inductor, torch 2.15,
    // transformers 5.24; the small bf16 Llama, 16 heads over 4 kv heads): the
    // compiled block keeps 32.57·hidden per token (eager 43.07): the SiLU
    // output is recomputed from the gate output (−5.5), and transformers
    // builds the causal mask while tracing, so SDPA is handed k/v repeated to
    // every head (+3); with checkpointing only the block input (2.00).
    let mut p = plan("llama-3.2-1b", Precision::Bf16, 2, 64);
    p.model = small("llama-3.2-1b");
    p.training.compile = true;
    let got = per_token_block(&p);
    assert!((got - 32.57).abs() < 0.12, "compiled {got:.2}");
    p.training.compile = false;
    let eager = per_token_block(&p);
    assert!((eager - 43.07).abs() < 0.12, "eager {eager:.2}");
}

#[test]
fn gemma2_soft_capping_and_sandwich_norms_keep_their_tensors() {
    // Gemma-2-2B bf16, eager, 2 × 2048 tokens: 60.56 GiB measured; without the
    // tanh outputs and the post-norms the model said 51.1 GiB.
    let mut p = plan("gemma-2-2b", Precision::Bf16, 2, 2048);
    p.training.attention = Attention::Eager;
    let gib = |p: &Plan| estimate(p).unwrap().peak.allocated.get() as f64 / (1u64 << 30) as f64;
    let full = gib(&p);
    assert!((full - 60.56).abs() / 60.56 < 0.05, "{full} GiB");
    let mut plain = p.clone();
    plain.model.softcap = false;
    plain.model.norms_per_layer = 2;
    // tanh of 2·8·2048² scores in 26 blocks (3.25 GiB) and of 4096 × 256000
    // logits (1.95 GiB), plus two post-norms per block.
    assert!(full - gib(&plain) > 5.2, "{} vs {}", full, gib(&plain));
    let cfg = r#"{"model_type":"gemma2","hidden_size":2304,"intermediate_size":9216,
        "num_hidden_layers":26,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,
        "vocab_size":256000,"attn_logit_softcapping":50.0,"final_logit_softcapping":30.0}"#;
    let m = cost_model::hf_config::from_config_json(cfg, "g").unwrap();
    assert!(m.softcap && m.norms_per_layer == 4);
    let off = cfg.replace("50.0", "null").replace("30.0", "null");
    assert!(
        !cost_model::hf_config::from_config_json(&off, "g")
            .unwrap()
            .softcap
    );
}

#[test]
fn loops_that_keep_the_logits_pay_for_them() {
    // Adapters over frozen norms: the final norm keeps the same under every
    // framework (a trained scale keeps its normalised tensor in the dtype the
    // framework's norm multiplies in).
    let logits = |fw: Framework, upcasts: bool| {
        let mut p = plan("llama-3.2-1b", Precision::Bf16, 4, 2048);
        p.set_framework(fw);
        p.training.finetune = lora16_all();
        p.training.fp32_upcasts = upcasts;
        p.training.loss = cost_model::plan::Loss::Standard;
        mib(phase(&estimate(&p).unwrap(), Phase::Forward).logits)
    };
    let bf16_logits = 4.0 * 2048.0 * 128256.0 * 2.0 / (1u64 << 20) as f64;
    // `outputs = model(**batch)` around a transformers model keeps them …
    let held = logits(Framework::PlainPytorch, true) - logits(Framework::HfTrainer, true);
    assert!((held - bf16_logits).abs() < 1.0, "{held}");
    // … so does LitGPT's loop; a hand-written loss function returning only the loss does not.
    let lit = logits(Framework::Litgpt, false) - logits(Framework::PlainPytorch, false);
    assert!((lit - bf16_logits).abs() < 1.0, "{lit}");
}

/// Activation bytes per token per block per hidden unit, as the saved-tensor
/// probe (calibration/saved_tensors.py) reports them.
fn per_token_block(p: &Plan) -> f64 {
    let e = estimate(p).unwrap();
    let acts = phase(&e, Phase::Forward).activations.get() as f64;
    let t = (p.training.micro_batch * p.training.seq_len) as f64;
    acts / (t * p.model.layers as f64 * p.model.hidden as f64)
}

/// Forward-phase activation bytes of one block (all blocks alike).
fn block_bytes(p: &Plan) -> f64 {
    let e = estimate(p).unwrap();
    phase(&e, Phase::Forward).activations.get() as f64 / p.model.layers as f64
}

/// Splits a block's bytes at one sequence of 64 and of 128 tokens into a
/// per-token part (in units of `hidden` bytes) and a token-independent part
/// (bytes), as the saved-tensor probe reports them.
fn per_token_and_constant(block: impl Fn(u32) -> f64, hidden: f64) -> (f64, f64) {
    let per_token = (block(128) - block(64)) / 64.0 / hidden;
    (per_token, block(64) - 64.0 * per_token * hidden)
}

/// A LitGPT fine-tune in bf16-true on one GPU, as its finetune scripts run.
fn litgpt(hub_id: &str, finetune: Finetune) -> Plan {
    let mut p = Plan::default();
    p.model = by_hub_id(hub_id).unwrap().spec();
    p.set_framework(Framework::Litgpt);
    p.training.precision = Precision::Bf16;
    p.training.micro_batch = 1;
    p.training.seq_len = 1024;
    p.training.checkpointing = Checkpointing::None;
    p.training.dropout = false;
    p.training.finetune = finetune;
    p.parallel.num_gpus = 1;
    p.parallel.sharding = Sharding::None;
    p
}

fn lora_all() -> Finetune {
    Finetune::Lora {
        rank: 8,
        targets: LoraTargets::ALL_LINEAR,
        base_bits: 16,
        dropout: true,
        variant: LoraVariant::Lora,
    }
}

fn lora_qv() -> Finetune {
    Finetune::Lora {
        rank: 8,
        targets: LoraTargets {
            q: true,
            v: true,
            ..LoraTargets::default()
        },
        base_bits: 16,
        dropout: true,
        variant: LoraVariant::Lora,
    }
}

#[test]
fn litgpt_blocks_keep_what_their_saved_tensors_add_up_to() {
    // Counted with calibration/saved_tensors.py (litgpt 0.5.13, torch 2.15, CPU,
    // SDPA replaced by a function saving what CUDA flash attention saves). CPU
    // dropout masks are 2 bytes, CUDA's 1, so 1·hidden is taken off per
    // dropped-out copy of the block input.
    let cases = [
        ("meta-llama/Llama-2-7b-hf", lora_qv(), 44.35 - 1.0),
        ("microsoft/phi-1_5", lora_qv(), 30.21 - 1.0),
        // GPT-NeoX in LitGPT: parallel attention and MLP, a norm each.
        ("stabilityai/stablelm-base-alpha-3b", lora_qv(), 30.17 - 1.0),
        (
            "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T",
            Finetune::Full,
            50.13,
        ),
        // Grouped-query attention, LoRA on q+v and on every linear (five
        // dropout copies: 7.5·hidden of CPU masks off), full fine-tunes.
        ("meta-llama/Llama-3.1-8B", lora_qv(), 43.68 - 1.0),
        ("meta-llama/Llama-3.1-8B", lora_all(), 67.12 - 7.5),
        ("mistralai/Mistral-7B-v0.1", lora_all(), 67.12 - 7.5),
        ("microsoft/phi-1_5", Finetune::Full, 32.06),
        ("meta-llama/Llama-3.1-8B", Finetune::Full, 56.10),
        (
            "meta-llama/Llama-2-7b-hf",
            Finetune::Adapter {
                trainable_params: 4_280_000,
                base_bits: 16,
                method: AdapterMethod::LlamaAdapterV2,
                virtual_tokens: 0,
                targets: LoraTargets::QV,
            },
            67.31,
        ),
    ];
    for (id, ft, counted) in cases {
        let got = per_token_block(&litgpt(id, ft));
        assert!(
            (got - counted).abs() < 0.6,
            "{id}: model {got:.2}·hidden bytes per token per block, counted {counted:.2}"
        );
    }
}

#[test]
fn litgpt_lora_on_qkv_is_one_adapter_over_the_fused_input() {
    // One dropout copy (+ mask) of the block input however many of q, k, v are
    // adapted, and `zero_pad` keeps the adapter output unless all three are.
    let h = 4096.0;
    let with = |q: bool, k: bool, v: bool| {
        per_token_block(&litgpt(
            "meta-llama/Llama-2-7b-hf",
            Finetune::Lora {
                rank: 8,
                targets: LoraTargets {
                    q,
                    k,
                    v,
                    ..LoraTargets::default()
                },
                base_bits: 16,
                dropout: true,
                variant: LoraVariant::Lora,
            },
        ))
    };
    let q = with(true, false, false);
    let qv = with(true, false, true);
    let qkv = with(true, true, true);
    // q+v over q: v's 2-byte output in zero_pad and its rank-8 A output.
    assert!((qv - q - (2.0 + 2.0 * 8.0 / h)).abs() < 1e-6, "{q} {qv}");
    // All three: no zero_pad, so less than q+v despite a third adapter.
    assert!(qkv < qv, "{qv} {qkv}");
    // The same plan under PEFT keeps one dropout copy per adapted matrix.
    let mut p = litgpt("meta-llama/Llama-2-7b-hf", lora_qv());
    let grouped = per_token_block(&p);
    p.set_framework(Framework::Peft);
    p.training.fp32_upcasts = false;
    p.training.precision = Precision::Bf16;
    assert!(per_token_block(&p) != grouped);
}

#[test]
fn a_parallel_block_with_one_norm_keeps_its_output_once() {
    // Phi-1.5 feeds one LayerNorm output to attention and MLP: the full
    // fine-tune keeps the norm input and that output once each.
    let mut p = litgpt("microsoft/phi-1_5", Finetune::Full);
    let one = per_token_block(&p);
    p.model.norms_per_layer = 2;
    let parallel = per_token_block(&p);
    p.model.parallel_residual = false;
    let sequential = per_token_block(&p);
    // A second norm over the same input (GPT-NeoX): its output for the MLP's
    // first matmul; over the attention's output: its bf16 input too.
    assert!((parallel - one - 2.0).abs() < 1e-6, "{one} {parallel}");
    assert!((sequential - one - 4.0).abs() < 1e-6, "{one} {sequential}");
}

#[test]
fn llama_adapter_blocks_below_the_start_layer_keep_nothing() {
    let adapter = |method| Finetune::Adapter {
        trainable_params: 1_230_000,
        base_bits: 16,
        method,
        virtual_tokens: 0,
        targets: LoraTargets::QV,
    };
    let p = |m| litgpt("meta-llama/Llama-2-7b-hf", adapter(m));
    let acts = |m| {
        phase(&estimate(&p(m)).unwrap(), Phase::Forward)
            .activations
            .get() as f64
    };
    let generic = acts(AdapterMethod::Generic);
    let v1 = acts(AdapterMethod::LlamaAdapter);
    // 30 of 32 blocks keep activations, each with the 2-byte prefix output.
    let per_block = generic / 32.0;
    let prefix = 2.0 * 4096.0 * 1024.0;
    assert!(
        (v1 - 30.0 * (per_block + prefix)).abs() < 1.0,
        "{generic} {v1}"
    );
    // v2 trains something in every block.
    assert!(acts(AdapterMethod::LlamaAdapterV2) > generic);
}

#[test]
fn prompt_tuning_runs_its_virtual_tokens_through_every_block() {
    // PEFT prepends the virtual-token embeddings: 768 tokens + 200 virtual
    // ones cost what 968 tokens cost (peft_metamathqa_benchmark-158 went from
    // −13.3 % to +1.9 % with them).
    let mut p = plan("llama-3.2-3b", Precision::Bf16, 4, 768);
    p.training.finetune = Finetune::Adapter {
        trainable_params: 614_400,
        base_bits: 16,
        method: AdapterMethod::Generic,
        virtual_tokens: 200,
        targets: LoraTargets::QV,
    };
    let prompt = estimate(&p).unwrap().peak;
    p.training.finetune = Finetune::Adapter {
        trainable_params: 614_400,
        base_bits: 16,
        method: AdapterMethod::Generic,
        virtual_tokens: 0,
        targets: LoraTargets::QV,
    };
    p.training.seq_len = 968;
    assert_eq!(prompt, estimate(&p).unwrap().peak);
}

#[test]
fn litgpt_fsdp_fine_tunes_keep_the_loaded_full_weights() {
    // lit-gpt's FSDP LoRA rows peak at full 16-bit weights + shard +
    // activations in every batch size; pretraining loads no checkpoint.
    let mut p = litgpt("meta-llama/Llama-2-7b-hf", lora_qv());
    p.parallel.num_gpus = 2;
    p.parallel.sharding = Sharding::FsdpFull;
    let e = estimate(&p).unwrap();
    let fwd = phase(&e, Phase::Forward);
    let full = e.params as f64 * 2.0;
    let shard = full / 2.0;
    // (the adapters' few million bytes aside)
    assert!(
        (fwd.weights.get() as f64 / (full + shard) - 1.0).abs() < 1e-3,
        "{}",
        fwd.weights.get()
    );
    p.training.finetune = Finetune::Full;
    let e = estimate(&p).unwrap();
    assert!((phase(&e, Phase::Forward).weights.get() as f64 / shard - 1.0).abs() < 1e-3);
}

/// Llama-2-7B in fp32 under Accelerate's ZeRO-3 with parameters and
/// optimizer offloaded to the CPU, one GPU (PEFT's RAFT example set-up).
fn zero3_offload_fp32() -> Plan {
    use cost_model::plan::OffloadDevice;
    let mut p = plan("llama-2-7b", Precision::Fp32, 8, 64);
    p.set_framework(Framework::HfAccelerate);
    p.parallel.sharding = Sharding::Zero3;
    p.parallel.offload.params = OffloadDevice::Cpu;
    p.parallel.offload.optimizer = OffloadDevice::Cpu;
    p
}

#[test]
fn zero3_keeps_its_live_parameters_gathered_even_on_one_gpu() {
    // At the turn from forward to backward the last block and those within
    // half of stage3_max_reuse_distance (1e9) are still gathered — capped by
    // stage3_max_live_parameters (1e9) — offloaded or not.
    let mut p = zero3_offload_fp32();
    let e = estimate(&p).unwrap();
    assert_eq!(phase(&e, Phase::Load).weights.get(), 0);
    // Less the IPG bucket, pinned by the next test, and the copy of the head's
    // partition its fetch makes at the end of forward (framework_sources.rs).
    let ipg = 5e8 * 4.0;
    let head = |vocab: f64| vocab * 4096.0 * 4.0;
    let comm = phase(&e, Phase::Forward).comm_buffers.get() as f64 - ipg - head(32_000.0);
    let m = &p.model;
    let block = (m.attention_params() + m.mlp_params() + 2 * m.norm_params()) as f64;
    assert!(
        (comm / ((block + 0.5e9) * 4.0) - 1.0).abs() < 1e-9,
        "{comm}"
    );
    // An embedding larger than that is gathered whole (BLOOM's 250880 × 4096).
    p.model.vocab = 250_880;
    let comm = phase(&estimate(&p).unwrap(), Phase::Forward)
        .comm_buffers
        .get() as f64
        - ipg
        - head(250_880.0);
    assert!(
        (comm / (250_880.0 * 4096.0 * 4.0) - 1.0).abs() < 1e-9,
        "{comm}"
    );
}

#[test]
fn zero3_allocates_its_ipg_bucket_when_the_optimizer_is_built() {
    // stage3.py: `torch.empty(reduce_bucket_size, dtype=<trainable dtype>)` on
    // the GPU with contiguous_gradients (default on), one GPU and offload
    // included, from optimizer construction to the end of the run.
    let mut p = zero3_offload_fp32();
    p.training.finetune = lora_qv();
    let e = estimate(&p).unwrap();
    // Accelerate's plugin leaves reduce_bucket_size at DeepSpeed's 5e8.
    for ph in [Phase::Init, Phase::Step] {
        assert_eq!(phase(&e, ph).comm_buffers.get(), 2_000_000_000, "{ph:?}");
    }
    assert_eq!(phase(&e, Phase::Load).comm_buffers.get(), 0);
    // The Trainer fills its "auto" with hidden².
    p.set_framework(Framework::HfTrainer);
    p.training.finetune = lora_qv();
    p.training.precision = Precision::Fp32;
    let e = estimate(&p).unwrap();
    assert_eq!(
        phase(&e, Phase::Init).comm_buffers.get(),
        4096 * 4096 * 4,
        "Trainer"
    );
    // FSDP has no such bucket.
    p.parallel.sharding = Sharding::FsdpFull;
    let e = estimate(&p).unwrap();
    assert_eq!(phase(&e, Phase::Init).comm_buffers.get(), 0);
}

#[test]
fn ia3_keeps_the_scaled_outputs_and_the_cast_feed_forward_input() {
    // PEFT IA³ over a bf16 base with fp32 vectors: k and v keep their bf16
    // outputs, the down projection keeps its fp32-cast input.
    let mut p = plan("llama-3.2-3b", Precision::Bf16, 4, 768);
    p.training.fp32_upcasts = false; // PEFT's benchmark script, plain loop
    let acts = |method| {
        let mut p = p.clone();
        p.training.finetune = Finetune::Adapter {
            trainable_params: 286_720,
            base_bits: 16,
            method,
            virtual_tokens: 0,
            targets: LoraTargets::QV,
        };
        phase(&estimate(&p).unwrap(), Phase::Forward)
            .activations
            .get() as f64
    };
    let m = &p.model;
    let tokens = 4.0 * 768.0;
    let hkv = (m.kv_heads * m.head_dim) as f64;
    let per_layer = tokens * (2.0 * 2.0 * hkv + 4.0 * m.ffn as f64);
    let extra = acts(AdapterMethod::Ia3) - acts(AdapterMethod::Generic);
    assert!(
        (extra / (m.layers as f64 * per_layer) - 1.0).abs() < 1e-9,
        "{extra}"
    );
}

/// The small configs saved_tensors.py --transformers builds: hidden 1024, MLP
/// 2816, 16 heads of 64 with 4 kv heads, vocabulary 1000, untied.
fn small(preset_id: &str) -> cost_model::model::ModelSpec {
    let mut m = preset(preset_id).unwrap().spec();
    (m.hidden, m.ffn, m.heads, m.kv_heads, m.head_dim) = (1024, 2816, 16, 4, 64);
    (m.vocab, m.layers, m.tied_embeddings) = (1000, 3, false);
    m
}

/// A block's modelled bytes per token (hidden units) and MB against the
/// saved-tensor probe's count: within 0.1·hidden per token and 0.05 MB.
fn assert_counted(what: impl std::fmt::Debug, model: (f64, f64), counted: (f64, f64)) {
    assert!(
        (model.0 - counted.0).abs() < 0.1,
        "{what:?}: {:.2} per token, counted {}",
        model.0,
        counted.0
    );
    assert!(
        (model.1 - counted.1).abs() < 0.05,
        "{what:?}: {:.2} MB per block, counted {}",
        model.1,
        counted.1
    );
}

/// The small bf16 Llama under PEFT with an adapter method (`seq` tokens).
fn small_adapter(method: AdapterMethod, targets: LoraTargets, trainable: u64, seq: u32) -> Plan {
    let mut p = plan("llama-3.2-1b", Precision::Bf16, 1, seq);
    p.model = small("llama-3.2-1b");
    p.set_framework(Framework::Peft);
    p.training.finetune = Finetune::Adapter {
        trainable_params: trainable,
        base_bits: 16,
        method,
        virtual_tokens: 0,
        targets,
    };
    p
}

#[test]
fn transformers_blocks_keep_what_their_saved_tensors_add_up_to() {
    // calibration/saved_tensors.py --transformers (transformers 5.24, torch
    // 2.15): small Llama-shaped configs, full fine-tune in pure bf16.
    let mut m = small("llama-3.2-1b");
    let mut p = plan("llama-3.2-1b", Precision::Bf16, 2, 64);
    let mut count = |m: &cost_model::model::ModelSpec, counted: f64| {
        p.model = m.clone();
        let got = per_token_block(&p);
        // (MoE routing indices and scores add a few bytes per token)
        assert!(
            (got - counted).abs() < 0.12,
            "model {got:.2}, counted {counted:.2}"
        );
    };
    count(&m, 43.07); // Llama, Qwen2, Mistral with 4 kv heads
    m.kv_heads = 16;
    count(&m, 46.07);
    m.fused_projections = true; // Phi-3: v a view of the fused qkv output
    count(&m, 50.07);
    // GPT-NeoX: LayerNorm, plain GELU MLP, parallel attention and MLP whose
    // two norms read one input.
    (m.ffn, m.mlp, m.norm) = (4096, Mlp::Plain, Norm::LayerNorm);
    m.parallel_residual = true;
    count(&m, 34.07);
    // Falcon-7B-shaped: multi-query, one norm. transformers 5.24 indexed v
    // out of the fused output (a copy: 24.32, the fused tensor not kept);
    // 5.25 `split`s it out as a view, which SDPA keeps with its one head
    // unrepeated — the whole fused output stays (counted under 5.25: 26.44).
    m.kv_heads = 1;
    m.norms_per_layer = 1;
    count(&m, 26.44);
    // Mixtral: 8 experts, top 2; the trained router keeps its input and the
    // routing weights' gradient each expert's output.
    count(&small("mixtral-8x7b"), 73.18);
    // Gemma-2 in eager attention: soft-capped scores, sandwich norms whose
    // fp32 normalised tensors are kept (`output * (1.0 + weight.float())`).
    let mut g = small("gemma-2-2b");
    (g.heads, g.head_dim, g.tied_embeddings) = (8, 128, true);
    p.model = g;
    p.training.attention = Attention::Eager;
    let got = per_token_block(&p);
    assert!(
        (got - 70.14).abs() < 0.2,
        "gemma-2: model {got:.2}, counted 70.14"
    );
}

#[test]
fn a_model_that_always_masks_repeats_its_grouped_kv() {
    // Falcon's new decoder (transformers 5.24 and 5.25) builds its causal
    // mask on every forward (`allow_is_causal_skip=False`), so SDPA always
    // gets one and grouped k/v reach it repeated to every head. Counted with
    // allocator_replay.py's SDPA stand-ins on the meta device (saved-tensor
    // hooks, 3 blocks less 2, transformers 5.25): a Falcon-40B-shaped block
    // 1024 wide, 16 heads over 2 k/v groups, MLP 4096, 2 × 64 tokens, bf16,
    // keeps 30.20 bytes per token per hidden unit (k and v 2 each, the
    // converted mask 0.125) and 53.45 under LoRA r16 on every linear.
    let mut m = small("falcon-40b");
    (m.ffn, m.kv_heads) = (4096, 2);
    let mut p = plan("falcon-40b", Precision::Bf16, 2, 64);
    p.model = m.clone();
    let full = per_token_block(&p);
    assert!((full - 30.20).abs() < 0.1, "full {full:.2}, counted 30.20");
    p.set_framework(Framework::Peft);
    p.training.finetune = Finetune::Lora {
        rank: 16,
        targets: LoraTargets::ALL_LINEAR,
        base_bits: 16,
        dropout: true,
        variant: LoraVariant::Lora,
    };
    let lora = per_token_block(&p);
    assert!((lora - 53.45).abs() < 0.1, "LoRA {lora:.2}, counted 53.45");
    // One k/v head is not copied: `repeat_kv` of a single head is a view
    // (stride 0 over the heads), so the block keeps its one head, not 16 —
    // and, v being a view of the fused output, that output (counted: 28.58
    // in a full fine-tune).
    let mut p = plan("falcon-40b", Precision::Bf16, 2, 64);
    p.model = m;
    p.model.kv_heads = 1;
    let mqa = per_token_block(&p);
    assert!(
        (mqa - 28.58).abs() < 0.1,
        "one k/v head {mqa:.2}, counted 28.58"
    );
}

#[test]
fn peft_lora_adapters_keep_their_own_fp32_inputs() {
    // calibration/saved_tensors.py --transformers, PEFT LoRA over the small
    // bf16 Llama (fp32 adapters). With dropout each adapter keeps its fp32
    // dropped-out copy and a mask (CPU masks over fp32 are 4 bytes, CUDA's 1:
    // 3 bytes per masked element off); without, its own fp32 cast of the input.
    let m = small("llama-3.2-1b");
    let mut p = plan("llama-3.2-1b", Precision::Bf16, 2, 64);
    p.model = m;
    p.set_framework(Framework::Peft);
    let qv = LoraTargets {
        q: true,
        v: true,
        ..LoraTargets::default()
    };
    // Dropped-out inputs per block (in hidden units): q, v; or q, k, v, o,
    // gate, up and down (2.75).
    for (targets, rank, dropout, counted) in [
        (qv, 8, true, 45.63 - 3.0 * 2.0),
        (qv, 8, false, 37.63),
        (LoraTargets::ALL_LINEAR, 16, true, 100.01 - 3.0 * 8.75),
        (LoraTargets::ALL_LINEAR, 16, false, 65.01),
    ] {
        p.training.finetune = Finetune::Lora {
            rank,
            targets,
            base_bits: 16,
            dropout,
            variant: LoraVariant::Lora,
        };
        let got = per_token_block(&p);
        assert!(
            (got - counted).abs() < 0.05,
            "{targets:?} dropout {dropout}: model {got:.2}, counted {counted:.2}"
        );
    }
}

#[test]
fn dora_and_lora_fa_keep_what_their_saved_tensors_add_up_to() {
    // calibration/saved_tensors.py --peft (PEFT 0.21.2, transformers 5.24, torch
    // 2.15): a Llama-3.2-3B-shaped bf16 block, fp32 adapters, r 32 on q and v.
    // DoRA's magnitude keeps the 16-bit base output and the fp32 LoRA output of
    // q and v; LoRA-FA's frozen A keeps no input (only dropout's mask: 4 bytes
    // per fp32 element on the CPU, CUDA's 1).
    let mut p = plan("llama-3.2-3b", Precision::Bf16, 1, 64);
    p.set_framework(Framework::Peft);
    let qv = LoraTargets {
        q: true,
        v: true,
        ..LoraTargets::default()
    };
    let cpu_masks = 2.0 * 3.0; // two adapters over the hidden-wide input
    for (variant, dropout, counted) in [
        (LoraVariant::Lora, false, 37.45),
        (LoraVariant::Lora, true, 45.45 - cpu_masks),
        (LoraVariant::Dora, false, 45.45),
        (LoraVariant::LoraFa, false, 29.45),
        (LoraVariant::LoraFa, true, 37.45 - cpu_masks),
    ] {
        p.training.finetune = Finetune::Lora {
            rank: 32,
            targets: qv,
            base_bits: 16,
            dropout,
            variant,
        };
        let got = per_token_block(&p);
        assert!(
            (got - counted).abs() < 0.05,
            "{variant:?} dropout {dropout}: model {got:.2}, counted {counted:.2}"
        );
    }
    // DoRA with dropout recomputes the base output in fp32 from the
    // dropped-out input (kept, with the LoRA output) against an fp32 copy of
    // the weight, kept too: counted 56.12·hidden per token and 50.38 MB per
    // block (q 3072², v 3072·1024, 4 bytes each).
    let block = |seq: u32| {
        let mut d = p.clone();
        d.training.seq_len = seq;
        d.training.finetune = Finetune::Lora {
            rank: 32,
            targets: qv,
            base_bits: 16,
            dropout: true,
            variant: LoraVariant::Dora,
        };
        block_bytes(&d)
    };
    let (per_token, constant) = per_token_and_constant(block, 3072.0);
    assert!(
        (per_token - (56.12 - cpu_masks)).abs() < 0.05,
        "{per_token:.2}"
    );
    assert!(
        (constant / 1e6 - 50.38).abs() < 0.1,
        "{:.2} MB",
        constant / 1e6
    );
    // LoRA-FA trains B only; DoRA adds a magnitude per adapted output.
    let mut trainable = |variant| {
        p.training.finetune = Finetune::Lora {
            rank: 32,
            targets: qv,
            base_bits: 16,
            dropout: false,
            variant,
        };
        estimate(&p).unwrap().trainable_params
    };
    let (h, kv, layers) = (3072u64, 1024u64, 28u64);
    assert_eq!(trainable(LoraVariant::Lora), layers * 32 * (h + h + h + kv));
    assert_eq!(trainable(LoraVariant::LoraFa), layers * 32 * (h + kv));
    assert_eq!(
        trainable(LoraVariant::Dora),
        layers * (32 * (h + h + h + kv) + h + kv)
    );
}

#[test]
fn python_layer_norm_keeps_the_centred_and_normalised_tensors() {
    // calibration/saved_tensors.py --scratch: LLMs-from-scratch's LayerNorm
    // keeps 2 tensors beyond its input when its scale trains (1 when frozen);
    // F.layer_norm keeps only per-row statistics beside the input.
    let acts = |python_norm: bool, ft: Finetune| {
        let mut p = plan("gpt2", Precision::Bf16, 8, 1024);
        p.set_framework(Framework::PlainPytorch);
        p.model.python_norm = python_norm;
        p.training.finetune = ft;
        phase(&estimate(&p).unwrap(), Phase::Forward)
            .activations
            .get() as f64
    };
    let tokens = 8.0 * 1024.0;
    // Two norms per block, 2 bytes per element (the final norm is counted
    // with the logits).
    let per_norm = |kept: f64| kept * 2.0 * 768.0 * tokens * 2.0 * 12.0;
    let full = acts(true, Finetune::Full) - acts(false, Finetune::Full);
    assert!(
        (full - per_norm(2.0)).abs() < 1.0,
        "{full} vs {}",
        per_norm(2.0)
    );
    let lora = Finetune::Lora {
        rank: 8,
        targets: LoraTargets::ALL_LINEAR,
        base_bits: 16,
        dropout: false,
        variant: LoraVariant::Lora,
    };
    let frozen = acts(true, lora) - acts(false, lora);
    assert!(
        (frozen - per_norm(1.0)).abs() < 1.0,
        "{frozen} vs {}",
        per_norm(1.0)
    );
}

#[test]
fn ln_tuning_and_boft_keep_what_their_saved_tensors_add_up_to() {
    // calibration/saved_tensors.py --peft on the Llama-3.2-3B-shaped bf16 block:
    // a frozen base keeps 29.33·hidden per token; LN tuning's trained norm
    // weights keep their 16-bit normalised inputs (+2 per norm); BOFT on q and v
    // keeps their shared input and their outputs (+4.67) and, token-independent,
    // three 3072² bf16 matrices per adapted layer (113.59 MB per block).
    let block = |method: AdapterMethod, seq: u32| {
        let mut p = plan("llama-3.2-3b", Precision::Bf16, 1, seq);
        p.set_framework(Framework::Peft);
        p.training.finetune = Finetune::Adapter {
            trainable_params: 1_000_000,
            base_bits: 16,
            method,
            virtual_tokens: 0,
            targets: LoraTargets::QV,
        };
        block_bytes(&p)
    };
    for (method, per_token_counted, per_block_mb) in [
        (AdapterMethod::Generic, 29.37, 0.0),
        (AdapterMethod::LnTuning, 33.37, 0.0),
        (AdapterMethod::Boft, 34.03, 113.59),
    ] {
        let (per_token, constant) = per_token_and_constant(|seq| block(method, seq), 3072.0);
        assert!(
            (per_token - per_token_counted).abs() < 0.1,
            "{method:?}: {per_token:.2} per token, counted {per_token_counted}"
        );
        assert!(
            (constant / 1e6 - per_block_mb).abs() < 0.5,
            "{method:?}: {:.2} MB per block, counted {per_block_mb}",
            constant / 1e6
        );
    }
}

#[test]
fn zeroed_gradients_stay_through_the_next_step() {
    // PyTorch < 2.0's `zero_grad()` zeroed the gradients in place: they are
    // allocated through every forward and backward, as during accumulation.
    let grads_in_forward = |set_to_none: bool, accum: u32| {
        let mut p = plan("bert-large", Precision::Fp32, 4, 512);
        p.training.grad_accum = accum;
        p.training.zero_grad_set_to_none = set_to_none;
        let e = estimate(&p).unwrap();
        phase(&e, Phase::Forward).gradients.get()
    };
    // fp32 gradients of BERT-large's 335 M parameters (1.25 GiB).
    let all = grads_in_forward(true, 4);
    assert!((all as f64 / 4.0 / 335e6 - 1.0).abs() < 0.01, "{all}");
    assert_eq!(grads_in_forward(true, 1), 0);
    assert_eq!(grads_in_forward(false, 1), all);
    assert_eq!(decode_grad_none("grad_none=0"), Some(false));
}

fn decode_grad_none(q: &str) -> Option<bool> {
    cost_model::query::decode_str(q)
        .ok()
        .map(|p| p.training.zero_grad_set_to_none)
}

#[test]
fn fused_kernels_keep_the_norm_input_and_recompute_the_silu() {
    // Liger Kernel 0.8.5: `LigerRMSNorm` saves (X, W, RSTD) — the 16-bit input
    // and an fp32 rstd per row — where transformers' RMSNorm keeps an fp32
    // copy of its input and, when its weight trains, a 16-bit cast of the
    // normalised tensor; `LigerSiLUMulFunction` saves (a, b) and recomputes
    // SiLU(a) in backward. Llama-3.2-1B (hidden 2048, MLP 8192) in bf16.
    let per_block = |fused: bool, ft: Finetune| {
        let mut p = plan("llama-3.2-1b", Precision::Bf16, 2, 1024);
        p.training.fused_kernels = fused;
        p.training.finetune = ft;
        per_token_block(&p)
    };
    let (h, f) = (2048.0, 8192.0);
    // Full fine-tune: per norm 4 + 2 bytes → 2; the SiLU output (2 bytes per
    // MLP element) is not kept.
    let saved = per_block(false, Finetune::Full) - per_block(true, Finetune::Full);
    let want = (2.0 * (4.0 + 2.0 - 2.0) * h + 2.0 * f) / h;
    assert!((saved - want).abs() < 0.01, "{saved:.3} vs {want:.3}");
    // LoRA (frozen norms): per norm 4 → 2.
    let lora = lora_qv();
    let saved = per_block(false, lora) - per_block(true, lora);
    let want = (2.0 * (4.0 - 2.0) * h + 2.0 * f) / h;
    assert!((saved - want).abs() < 0.01, "{saved:.3} vs {want:.3}");
}

#[test]
fn per_matrix_peft_methods_keep_input_casts_and_weight_sized_deltas() {
    // calibration/saved_tensors.py --methods (PEFT 0.21.2, the small bf16 Llama:
    // hidden 1024, 16 heads / 4 kv heads, MLP 2816; q and v adapted): C3A,
    // DeLoRA, GraLoRA, VeRA, OFT, … keep an fp32 cast of each adapted input
    // (37.57·hidden per token against 29.59 frozen); LoHa, LoKr, FourierFT keep
    // that and one fp32 q- and v-sized update per block (5.24 MB).
    let block = |method: AdapterMethod, targets: LoraTargets, seq: u32| {
        block_bytes(&small_adapter(method, targets, 100_000, seq))
    };
    let split = |method, targets| {
        let (per_token, constant) =
            per_token_and_constant(|seq| block(method, targets, seq), 1024.0);
        (per_token, constant / 1e6)
    };
    let qv = LoraTargets::QV;
    for (method, per_token_counted, mb_counted) in [
        (AdapterMethod::Generic, 29.59, 0.0),
        (AdapterMethod::CastInputs, 37.57, 0.0),
        (AdapterMethod::DeltaWeight, 37.57, 5.24),
    ] {
        let (per_token, mb) = split(method, qv);
        assert_counted(method, (per_token, mb), (per_token_counted, mb_counted));
    }
    // HRA, r = 8 reflections on q and v (8 · (1024 + 1024) parameters per
    // block): 37.57 per token and 86.11 MB per block, counted.
    let hra = |seq: u32| block_bytes(&small_adapter(AdapterMethod::Hra, qv, 3 * 8 * 2048, seq));
    let (per_token, constant) = per_token_and_constant(hra, 1024.0);
    assert!((per_token - 37.57).abs() < 0.1, "HRA {per_token:.2}");
    // (the counted 86.11 MB also holds the per-column norms and vectors)
    assert!(
        (constant / 1e6 / 86.11 - 1.0).abs() < 0.02,
        "HRA {constant}"
    );
    // SHiRA, r 32 on q and v (32 · (1024 + 1024) + 32 · (1024 + 256) trained
    // values a block): the shared 16-bit input, the rebuilt q and v weights
    // and the sparse update, counted 31.57 per token and 4.75 MB per block.
    let per_block = 32 * (1024 + 1024) + 32 * (1024 + 256);
    let shira =
        |seq: u32| block_bytes(&small_adapter(AdapterMethod::Shira, qv, 3 * per_block, seq));
    let (per_token, constant) = per_token_and_constant(shira, 1024.0);
    assert_counted("SHiRA", (per_token, constant / 1e6), (31.57, 4.75));
    // Prefix tuning, 20 virtual tokens: the sequence does not grow, SDPA's
    // grouped k/v are expanded (29.59 + 3), counted 32.57 (with an SDPA that
    // keeps no mask; the model adds the converted mask SDPA's kernel keeps,
    // bf16 over every query and key, taken out here).
    let prefix = |seq: u32| {
        let mut p = small_adapter(AdapterMethod::PrefixTuning, qv, 20 * 2 * 3 * 256, seq);
        if let Finetune::Adapter { virtual_tokens, .. } = &mut p.training.finetune {
            *virtual_tokens = 20;
        }
        block_bytes(&p) - 2.0 * (seq as f64).powi(2)
    };
    let (per_token, constant) = per_token_and_constant(prefix, 1024.0);
    assert!(
        (per_token - 32.57).abs() < 0.1,
        "prefix tuning {per_token:.2}"
    );
    assert!(constant.abs() < 0.1e6, "prefix tuning {constant}");
    // The targets decide the sizes: adapting every linear keeps more.
    let all = split(AdapterMethod::DeltaWeight, LoraTargets::ALL_LINEAR);
    let (per_token, mb) = split(AdapterMethod::DeltaWeight, qv);
    assert!(all.0 > per_token && all.1 > mb);
}

#[test]
fn grouped_experts_run_in_fp32_under_autocast() {
    // transformers 5 computes MoE experts with `grouped_mm`, which autocast
    // does not cover: under AMP the routed inputs are cast to the fp32
    // weights, the experts' intermediates are fp32 and their weights are
    // never cast to bf16. H200, Mixtral-shaped (8 layers, hidden 1024, 8
    // experts of 3584, top 2), amp-bf16, 4 × 2048: 22.447 GiB allocated.
    let got = allocated_gib(&measured_row("h200-2026-11-30", "moe-ampbf16-b4-s2048"));
    assert!((got / 22.447 - 1.0).abs() < 0.01, "{got:.3} GiB");
    // (Before the term: 19.91 GiB, −11.3 %. The pure-bf16 run of the same
    // model, which the term leaves alone, is −0.5 %: docs/ACCURACY.md.)
}

#[test]
fn a_sliding_window_reached_makes_sdpa_expand_grouped_kv() {
    // transformers keeps an explicit mask once the sequence reaches the window
    // (Mistral-7B v0.1: 4096), and SDPA is then given k/v repeated to every
    // head: 2 × 2 bytes × (32 − 8) × 128 more per token per block in bf16,
    // and keeps the mask it converts to bf16, 2 bytes per key per token.
    let per_block = |seq: u32| {
        let p = plan("mistral-7b", Precision::Bf16, 1, seq);
        assert_eq!(p.model.sliding_window, 4096);
        per_token_block(&p) * p.model.hidden as f64
    };
    let extra = per_block(4096) - per_block(4095);
    let expected = 2.0 * 2.0 * 24.0 * 128.0 + 2.0 * 4096.0;
    assert!((extra - expected).abs() < 1.0, "{extra}");
    // H200, Mistral-7B v0.1 LoRA q+v, 2 × 4096 tokens: 65.996 GiB allocated.
    let got = allocated_gib(&measured_row(
        "h200-2026-11-30",
        "mistral7b-lora8qv-b2-s4096",
    ));
    assert!(
        (got / 65.996 - 1.0).abs() < 0.03,
        "{got:.3} GiB (was −7.3 %, then −2.7 % without the mask)"
    );
}

#[test]
fn osf_keeps_what_peft_osf_saves_and_stores() {
    // calibration/saved_tensors.py --osf: PEFT's OSF on every linear of the
    // small bf16 Llama (hidden 1024, 16 heads / 4 kv heads, MLP 2816, three
    // blocks), the bottom 32 singular directions of each matrix trained
    // (581 856 parameters per block).
    let osf = |method: AdapterMethod, seq: u32| {
        small_adapter(method, LoraTargets::ALL_LINEAR, 3 * 581_856, seq)
    };
    let split = |method| {
        let (per_token, constant) =
            per_token_and_constant(|seq| block_bytes(&osf(method, seq)), 1024.0);
        (per_token, constant / 1e6)
    };
    // The frozen high-rank factors stored beside the base weights, per block:
    // the weights grow by them (bf16), over a plain frozen base.
    let weights = |method| {
        let e = estimate(&osf(method, 64)).unwrap();
        phase(&e, Phase::Init).weights.get() as f64
    };
    // Less the trained triplets: fp32 under PEFT's autocast_adapter_dtype,
    // except for the rebuilding OSF, whose adapters must be the base's bf16.
    let trained = 3.0 * 581_856.0;
    let base = weights(AdapterMethod::Generic) - trained * 4.0;
    for (method, per_token_counted, mb_counted, buffers_counted) in [
        // PEFT 0.20.0: every forward rebuilds each weight (kept, 22.54 MB per
        // block, with U_low·S_low) and F.linear keeps the 16-bit inputs;
        // U_high, S_high, V_high stored.
        (AdapterMethod::OsfReconstruct, 39.07, 23.13, 16_069_920.0),
        // PEFT 0.21.2 (`--osf fp32`: PEFT's fp32 adapters): a rank-64
        // factored update over fp32 casts of the inputs; the initial triplets
        // and the non-square high factors stored.
        (AdapterMethod::Osf, 66.32, 4.65, 9_421_024.0),
    ] {
        let (per_token, mb) = split(method);
        assert_counted(method, (per_token, mb), (per_token_counted, mb_counted));
        let adapter_bytes = if method == AdapterMethod::OsfReconstruct {
            2.0
        } else {
            4.0
        };
        let stored = (weights(method) - trained * adapter_bytes - base) / 3.0 / 2.0;
        assert!(
            (stored / buffers_counted - 1.0).abs() < 1e-3,
            "{method:?}: {stored} buffer elements per block, counted {buffers_counted}"
        );
    }
}

// ----- the fourth and fifth H200 sets (calibration/h200-2026-11-30, set 4 and set 5) -----

/// The plan's peak allocated bytes over its phases.
fn peak_alloc(p: &Plan) -> f64 {
    let e = estimate(p).unwrap();
    e.stages[0]
        .phases
        .iter()
        .map(|ph| ph.counters.allocated.get() as f64)
        .fold(0.0, f64::max)
}

#[test]
fn ddp_buckets_exist_on_one_rank_and_bucket_views_hold_the_gradients_from_the_start() {
    // DDP on one rank peaked 4.60 GiB (the fp32 gradients of 1.24 B
    // parameters) above the loop without DDP, with and without
    // gradient_as_bucket_view (the peak comes before the gradients).
    let base = plan("llama-3.2-1b", Precision::AmpBf16, 4, 2048);
    let grads_gib = estimate(&base).unwrap().trainable_params as f64 * 4.0 / GIB;
    let mut ddp = base.clone();
    ddp.parallel.sharding = Sharding::Ddp;
    let added = (peak_alloc(&ddp) - peak_alloc(&base)) / GIB;
    assert!(
        (added - grads_gib).abs() < 0.01,
        "DDP added {added} GiB, gradients {grads_gib} GiB"
    );
    assert!(
        (added - 4.60).abs() < 0.05,
        "measured +4.60 GiB, modelled {added}"
    );
    let mut view = ddp.clone();
    view.parallel.gradient_as_bucket_view = true;
    let e = estimate(&view).unwrap();
    // The buckets are the gradients: counted as gradients from the forward on,
    // no second copy in the communication buffers.
    let fwd = phase(&e, Phase::Forward);
    assert!((fwd.gradients.get() as f64 / GIB - grads_gib).abs() < 0.01);
    assert_eq!(fwd.comm_buffers.get(), 0);
    assert!((peak_alloc(&view) - peak_alloc(&ddp)).abs() / GIB < 0.01);
}

#[test]
fn fsdp_gradients_freed_between_steps_stay_reserved_on_their_stream() {
    // FSDP2 on one rank (set 4): Llama-3.2-1B amp-bf16 reserved 7.73 GiB
    // over its allocated peak, the loop without FSDP 2.59 GiB; the
    // difference is the 4.60 GiB of fp32 sharded gradients, which FSDP
    // allocates on its reduce-scatter stream.
    let base = plan("llama-3.2-1b", Precision::AmpBf16, 4, 2048);
    let grads_gib = estimate(&base).unwrap().trainable_params as f64 * 4.0 / GIB;
    let gap = |p: &Plan| {
        let e = estimate(p).unwrap();
        (e.peak.reserved.get() as f64 - e.peak.allocated.get() as f64) / GIB
    };
    // A breakdown whose allocator reserve is the flat fraction alone.
    let fraction_only = |b: Breakdown| {
        (b.allocator_reserve.get() as f64 - b.allocated().get() as f64 * ALLOCATOR_RESERVE_FRACTION)
            .abs()
            < 1e6
    };
    let mut fsdp = base.clone();
    fsdp.parallel.sharding = Sharding::FsdpFull;
    let e = estimate(&fsdp).unwrap();
    assert_eq!(e.peak_phase, Phase::Backward);
    let cached = gap(&fsdp) - e.peak.allocated.get() as f64 / GIB * ALLOCATOR_RESERVE_FRACTION;
    assert!(
        (cached - grads_gib).abs() < 0.01,
        "cached {cached} GiB on the side stream, gradients {grads_gib} GiB"
    );
    let measured_reserved = 49.182;
    let err = (e.peak.reserved.get() as f64 / GIB - measured_reserved) / measured_reserved;
    assert!(err.abs() < 0.03, "reserved off by {:.1} %", 100.0 * err);
    // Before the first backward there is no such pool.
    for ph in [Phase::Load, Phase::Init] {
        assert!(fraction_only(phase(&e, ph)));
    }
    // While the step holds the gradients, they are allocated, not cached.
    assert!(fraction_only(phase(&e, Phase::Step)));
    // Sharded over 8 ranks, an eighth of them.
    let mut eight = fsdp.clone();
    eight.parallel.num_gpus = 8;
    let e8 = estimate(&eight).unwrap();
    let cached8 = gap(&eight) - e8.peak.allocated.get() as f64 / GIB * ALLOCATOR_RESERVE_FRACTION;
    assert!((cached8 - grads_gib / 8.0).abs() < 0.01, "cached {cached8}");
    // Gradients kept across steps (accumulation) are allocated throughout,
    // offloaded ones live on the host, DDP allocates on the default stream:
    // nothing stays cached apart.
    let flat = |p: &Plan| fraction_only(estimate(p).unwrap().peak_breakdown);
    let mut accum = fsdp.clone();
    accum.training.grad_accum = 4;
    assert!(flat(&accum));
    let mut offload = eight.clone();
    offload.parallel.offload.params = cost_model::plan::OffloadDevice::Cpu;
    offload.parallel.offload.optimizer = cost_model::plan::OffloadDevice::Cpu;
    assert!(flat(&offload));
    let mut ddp = base.clone();
    ddp.parallel.sharding = Sharding::Ddp;
    assert!(flat(&ddp));
    assert!(flat(&base));
}

#[test]
fn peak_allocated_is_the_most_any_phase_allocates() {
    // Gemma-2-27B, FSDP full-shard over 8 ranks, batch 7 × 35: the forward
    // and the start of backward sit beside the reduce-scatter stream's cached
    // gradients; the end of backward allocates the most, with those blocks
    // holding the new gradients. max_memory_allocated reports the backward's
    // allocation (found by the batch-monotonicity property), and the
    // backward's reserve still counts the pool its start reserved: the
    // caching allocator returns nothing within a step (found by the
    // frozen-layers property: DeepSeek-V3, FSDP, 59 → 60 frozen blocks).
    let mut p = Plan {
        model: preset("gemma-2-27b").unwrap().spec(),
        ..Plan::default()
    };
    p.training.precision = Precision::Bf16;
    p.training.micro_batch = 7;
    p.training.seq_len = 35;
    p.training.compile = true;
    p.training.fp32_upcasts = false;
    p.model.softcap = true;
    p.model.gelu_new = false;
    p.model.fused_projections = false;
    p.training.attention = Attention::Eager;
    p.parallel.sharding = Sharding::FsdpFull;
    let e = estimate(&p).unwrap();
    let fwd = phase(&e, Phase::Forward);
    let bwd = phase(&e, Phase::Backward);
    assert!(bwd.allocated() > fwd.allocated());
    assert_eq!(e.peak.allocated, bwd.allocated());
    // The end of backward holds every gradient: nothing of the side pool is
    // idle then, yet the backward reserves at least the pool beside the forward.
    let pool = fwd.reserved().get() - fwd.allocated().get();
    assert!(bwd.gradients.get() > 0);
    assert!(bwd.reserved() >= fwd.reserved());
    assert!(bwd.allocator_reserve.get() > pool - bwd.gradients.get().min(pool));
    assert_eq!(e.peak_phase, Phase::Backward);
    assert_eq!(e.peak.device_used, bwd.device_used());
}

#[test]
fn freezing_the_last_trainable_block_never_raises_the_reserve() {
    // DeepSeek-V3 under FSDP full-shard, fp16 autocast, Adafactor: with 59
    // of 61 blocks frozen the backward allocated the most at its end (all
    // gradients, no idle side-stream pool) and its reserve was read there;
    // with 60 frozen, at its start (the pool idle beside the activations).
    // Read at the most allocating point alone, freezing one more block
    // raised max_memory_reserved by 0.58 GB (CI, proptest).
    let mut p = Plan {
        model: preset("deepseek-v3").unwrap().spec(),
        ..Plan::default()
    };
    p.training.optimizer = cost_model::plan::Optimizer::Adafactor;
    p.training.precision = Precision::AmpFp16;
    p.parallel.sharding = Sharding::FsdpFull;
    p.training.frozen_layers = 59;
    let base = estimate(&p).unwrap().peak;
    p.training.frozen_layers = 60;
    let more = estimate(&p).unwrap().peak;
    assert!(more.allocated < base.allocated);
    assert!(more.reserved < base.reserved, "{more:?} vs {base:?}");
    assert!(more.device_used < base.device_used);
}

#[test]
fn accelerates_autocast_returns_fp32_logits_the_loop_holds() {
    // Accelerator(mixed_precision="bf16") peaked 1.96 GiB (2 B per logit)
    // above the same loop under plain autocast; not under DeepSpeed, whose
    // mixed precision is its own.
    let plain = plan("llama-3.2-1b", Precision::AmpBf16, 4, 2048);
    let mut acc = plain.clone();
    acc.framework = Framework::HfAccelerate;
    let logits = 4.0 * 2048.0 * 128_256.0;
    let added = peak_alloc(&acc) - peak_alloc(&plain);
    assert!((added - 2.0 * logits).abs() < 1e6, "added {added} B");
    assert!((added / GIB - 1.96).abs() < 0.02);
    // Pure bf16 (no autocast): the held logits stay 16-bit.
    let mut pure = plain.clone();
    pure.training.precision = Precision::Bf16;
    let mut pure_acc = pure.clone();
    pure_acc.framework = Framework::HfAccelerate;
    assert_eq!(peak_alloc(&pure_acc), peak_alloc(&pure));
}

/// The measured QLoRA runs of set 5: Mistral-7B, NF4 base, LoRA r16 on q and
/// v with dropout, batch 2 × 2048, with or without PEFT's k-bit preparation.
fn qlora_mistral_qv(precision: Precision, prep: bool) -> Plan {
    let mut p = plan("mistral-7b", precision, 2, 2048);
    p.training.finetune = Finetune::Lora {
        rank: 16,
        targets: LoraTargets::QV,
        base_bits: 4,
        dropout: true,
        variant: LoraVariant::Lora,
    };
    p.training.kbit_fp32_prep = prep;
    p
}

#[test]
fn a_kbit_prepared_base_without_autocast_runs_its_blocks_in_fp32() {
    // QLoRA Mistral-7B r16 q+v, batch 2 × 2048, after
    // prepare_model_for_kbit_training: 73.3 GiB allocated after the forward in
    // pure bf16 against 35.9 GiB under bf16 autocast (fp32 norm and embedding
    // weights carry the residual stream, and Linear4bit casts its output back
    // to the input's dtype).
    let qlora = |precision: Precision, prep: bool| {
        let p = qlora_mistral_qv(precision, prep);
        phase(&estimate(&p).unwrap(), Phase::Forward)
            .activations
            .get() as f64
            / GIB
    };
    let (pure, amp) = (
        qlora(Precision::Bf16, true),
        qlora(Precision::AmpBf16, true),
    );
    // Under autocast the MLP's intermediates are fp32 too (the linears hand
    // fp32 back), the attention's 16-bit: less than twice, not half.
    assert!(
        pure > 1.8 * amp && pure < 2.5 * amp,
        "pure bf16 {pure} GiB, autocast {amp} GiB"
    );
    // Measured 67–69 GiB of activations; the model counts bitsandbytes' saved
    // input (older bitsandbytes kept it) and over-predicts, not under.
    assert!((67.0..90.0).contains(&pure), "{pure} GiB");
    // Without the preparation the stream stays 16-bit.
    assert!(qlora(Precision::Bf16, false) < 0.5 * pure);
}

/// QLoRA r16 on every linear of `model` over an NF4 base, batch 4 × 2048.
fn qlora_all_linear(model: &str, precision: Precision, dropout: bool) -> Plan {
    let mut p = plan(model, precision, 4, 2048);
    p.training.finetune = Finetune::Lora {
        rank: 16,
        targets: LoraTargets::ALL_LINEAR,
        base_bits: 4,
        dropout,
        variant: LoraVariant::Lora,
    };
    p
}

#[test]
fn trl_puts_a_prepared_bases_embeddings_back_in_16_bits() {
    // TRL ≤ 0.21's `peft_module_casting_to_bf16` after the preparation:
    // Llama-3.2-1B's tied 128,256 × 2,048 embedding at 2 bytes instead of 4,
    // and no 16-bit cast of it for the head's matmul — 2 + 2 bytes a weight
    // (replayed: 1.01 GiB less allocated than fully prepared).
    let qlora = |model: &str, emb16: bool| {
        let mut p = qlora_all_linear(model, Precision::AmpBf16, true);
        p.training.checkpointing = Checkpointing::Full;
        p.training.kbit_fp32_prep = true;
        p.training.kbit_embeddings_16bit = emb16;
        p
    };
    let saved = (peak_alloc(&qlora("llama-3.2-1b", false))
        - peak_alloc(&qlora("llama-3.2-1b", true)))
        / GIB;
    let expected = 128_256.0 * 2048.0 * 4.0 / GIB;
    assert!(
        (saved - expected).abs() < 0.05,
        "saved {saved} GiB, {expected} expected"
    );
    // Without the preparation it means nothing, nor without autocast.
    let mut unprepared = qlora("llama-3.2-1b", true);
    unprepared.training.kbit_fp32_prep = false;
    let mut unprepared_off = unprepared.clone();
    unprepared_off.training.kbit_embeddings_16bit = false;
    assert_eq!(peak_alloc(&unprepared), peak_alloc(&unprepared_off));
    let mut pure = qlora("llama-3.2-1b", true);
    pure.training.precision = Precision::Bf16;
    let mut pure_off = pure.clone();
    pure_off.training.kbit_embeddings_16bit = false;
    assert_eq!(peak_alloc(&pure), peak_alloc(&pure_off));
    // Gemma's norms scale in fp32 and cast back to their input's dtype: with
    // the embeddings back in 16 bits the stream stays 16-bit, and the blocks
    // keep what they keep unprepared (replayed without checkpointing: the
    // same 26.564 GiB for Gemma-3-1B).
    let blocks = |prep: bool, emb16: bool| {
        let mut p = qlora("gemma-3-1b", emb16);
        p.training.kbit_fp32_prep = prep;
        p.training.checkpointing = Checkpointing::None;
        phase(&estimate(&p).unwrap(), Phase::Forward)
            .activations
            .get()
    };
    assert_eq!(blocks(true, true), blocks(false, false));
    assert!(blocks(true, false) as f64 > 1.2 * blocks(true, true) as f64);
    // Llama's norms multiply their fp32 weight into the input's dtype: the
    // stream is fp32 either way.
    let llama = |emb16: bool| {
        let mut p = qlora("llama-3.2-1b", emb16);
        p.training.checkpointing = Checkpointing::None;
        phase(&estimate(&p).unwrap(), Phase::Forward)
            .activations
            .get()
    };
    assert_eq!(llama(true), llama(false));
}

#[test]
fn adapters_kept_in_16_bits_weigh_half_and_keep_no_fp32_input_cast() {
    // QLoRA Llama-3.1-8B r16 on every linear, bf16 autocast: PEFT's fp32
    // adapters (4 + 4 + 8 bytes a parameter with AdamW) against 16-bit ones
    // (2 + 2 + 4), and without autocast the fp32 cast of each adapter's input.
    let qlora = |precision: Precision, ad16: bool| {
        let mut p = qlora_all_linear("llama-3.1-8b", precision, false);
        p.training.checkpointing = Checkpointing::None;
        p.training.adapters_16bit = ad16;
        p
    };
    let e = |p: &Plan| estimate(p).unwrap();
    let (fp32, bf16) = (
        e(&qlora(Precision::AmpBf16, false)),
        e(&qlora(Precision::AmpBf16, true)),
    );
    let trainable = fp32.trainable_params as f64;
    let step = |r: &cost_model::estimate::Estimate| {
        let b = phase(r, Phase::Step);
        (b.weights.get() + b.gradients.get() + b.optimizer.get()) as f64
    };
    let saved = step(&fp32) - step(&bf16);
    assert!(
        (saved / trainable - 8.0).abs() < 0.2,
        "{} bytes a trainable parameter",
        saved / trainable
    );
    // Pure bf16: PEFT's fp32 adapters cast their 16-bit input, 16-bit ones do not.
    let acts = |ad16: bool| {
        phase(&e(&qlora(Precision::Bf16, ad16)), Phase::Forward)
            .activations
            .get()
    };
    assert!(acts(true) < acts(false));
    // In fp32 there is no 16-bit dtype to keep them in.
    assert_eq!(
        peak_alloc(&qlora(Precision::Fp32, true)),
        peak_alloc(&qlora(Precision::Fp32, false))
    );
}

#[test]
fn bitsandbytes_0_43_2_keeps_no_input_of_a_frozen_4bit_matrix() {
    // The same run with bitsandbytes 0.50.2 stated: the model without the
    // saved 4-bit matmul inputs meets the measured 75.16 GiB allocated peak
    // (it was 88.2 GiB, +17 %, counting them as 0.41 kept them).
    let with = |precision: Precision, new_bnb: bool| {
        let mut p = qlora_mistral_qv(precision, true);
        p.training.bnb_0_43_2 = new_bnb;
        p
    };
    let peak = peak_alloc(&with(Precision::Bf16, true)) / GIB;
    assert!(
        (peak - 75.16).abs() / 75.16 < 0.03,
        "modelled {peak} GiB, measured 75.16"
    );
    assert!(peak_alloc(&with(Precision::Bf16, false)) / GIB > peak + 10.0);
    // Under autocast too (the measured run held fp32 outputs of the
    // linears, not their inputs: `quantized_outputs_in_fp32`): 36.93 GiB
    // measured; the older release's count keeps the inputs besides.
    let amp = peak_alloc(&with(Precision::AmpBf16, true)) / GIB;
    assert!(
        (amp - 36.93).abs() / 36.93 < 0.02,
        "modelled {amp} GiB, measured 36.93"
    );
    assert!(peak_alloc(&with(Precision::AmpBf16, false)) / GIB > amp + 1.0);
    // An 8-bit base keeps its input in every release (`MatMul8bitLt` saves
    // A); before 0.45.0 also an int8 copy of it per matmul (`CAt`): q, k, v
    // and o read 4096 wide, gate and up 4096, down 14336 — one byte each, per
    // token (2 × 2048) and block (32), all kept at the backward's start.
    let eight = |new_bnb: bool| {
        let mut p = with(Precision::Bf16, new_bnb);
        if let Finetune::Lora { base_bits, .. } = &mut p.training.finetune {
            *base_bits = 8;
        }
        peak_alloc(&p)
    };
    let copies = (6.0 * 4096.0 + 14336.0) * 4096.0 * 32.0;
    assert!(
        (eight(false) - eight(true) - copies).abs() < 1.0,
        "{} over the recent release",
        eight(false) - eight(true)
    );
    // torchao's NF4 (torchtune) saves only the weight, whatever is stated.
    let torchtune = |new_bnb: bool| {
        let mut p = with(Precision::Bf16, new_bnb);
        p.framework = Framework::Torchtune;
        p
    };
    assert_eq!(peak_alloc(&torchtune(false)), peak_alloc(&torchtune(true)));
    assert!(!torchtune(false).four_bit_matmul_keeps_input());
    assert!(!with(Precision::Bf16, true).four_bit_matmul_keeps_input());
    assert!(with(Precision::Bf16, false).four_bit_matmul_keeps_input());
}

#[test]
fn a_recomputed_eager_block_meets_two_score_sized_gradients() {
    // QLoRA Mistral-7B r16 q+v, pure bf16 after prepare_model_for_kbit_training
    // (an fp32 stream, so SDPA runs its math kernel), batch 2 × 2048 with full
    // checkpointing: peaked 11.37 GiB allocated. The recomputed block's
    // backward holds dP and dS, each 2 × 32 × 2048² fp32 = 1 GiB, and its
    // MLP's gradients ([`recomputed_mlp_grads`]). The run's bitsandbytes
    // (0.50.2) keeps no input of a frozen 4-bit matrix without autocast, and
    // its base was double-quantized, as the case file states.
    let mut p = qlora_mistral_qv(Precision::Bf16, true);
    p.training.checkpointing = Checkpointing::Full;
    p.training.bnb_0_43_2 = true;
    p.training.nf4_double_quant = true;
    let peak = peak_alloc(&p) / GIB;
    assert!(
        (peak - 11.37).abs() / 11.37 < 0.03,
        "modelled {peak} GiB, measured 11.37"
    );
    // Without checkpointing the block's own saved tensors stand for its
    // gradients: no extra score-sized pair (the no-checkpointing peak is the
    // forward's end, over-predicted as documented).
    p.training.checkpointing = Checkpointing::None;
    let e = estimate(&p).unwrap();
    let fwd = phase(&e, Phase::Forward).allocated().get() as f64;
    assert!((peak_alloc(&p) - fwd).abs() / fwd < 0.05);
}

/// A T5 or BART fine-tune feeds its decoder the labels, not the source: the
/// decoder blocks and the LM head run the target length, the encoder the
/// source, and the cross-attention's keys and values the source again
/// (`TrainingSpec::target_len`).
#[test]
fn an_encoder_decoder_runs_its_decoder_at_the_target_length() {
    let t5 = |seq: u32, target: Option<u32>| {
        let mut p = plan("t5-large", Precision::AmpBf16, 8, seq);
        p.training.target_len = target;
        estimate(&p).unwrap()
    };
    let forward = |e: &cost_model::Estimate| phase(e, Phase::Forward);
    // A target as long as the source is the same plan as none.
    assert_eq!(t5(512, Some(512)).peak, t5(512, None).peak);
    let (long, short) = (t5(512, None), t5(512, Some(128)));
    // The head reads a quarter of the positions.
    let ratio = forward(&short).logits.get() as f64 / forward(&long).logits.get() as f64;
    assert!((ratio - 0.25).abs() < 1e-3, "{ratio}");
    // Blocks: fewer than with every block at 512 tokens, more than with every
    // block at 128 (the encoder still runs 512).
    let act = |e: &cost_model::Estimate| forward(e).activations.get();
    let all_short = t5(128, None);
    assert!(act(&short) < act(&long), "{} {}", act(&short), act(&long));
    assert!(
        act(&short) > act(&all_short),
        "{} {}",
        act(&short),
        act(&all_short)
    );
    // The source still sets the encoder and the cross-attention's k and v: a
    // longer source with the target held costs more.
    assert!(act(&t5(576, Some(128))) > act(&short));
}

/// One encoder block and one decoder block of an encoder–decoder preset
/// reshaped to the CPU probes' size (hidden 512, 8 heads of 64, MLP 1024,
/// vocabulary 1000; `calibration/saved_tensors.py --t5` and `--padded`),
/// batch 2, as the model keeps them at the end of the forward: bytes of 3
/// blocks of a stack less 2.
fn seq2seq_probe_blocks(
    model: &str,
    precision: Precision,
    attention: Attention,
    padded: bool,
    source: u32,
    target: u32,
) -> (i64, i64) {
    let at = |encoder: u32, decoder: u32| {
        let mut p = plan(model, precision, 2, source);
        let m = &mut p.model;
        (m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn, m.vocab) = (512, 8, 8, 64, 1024, 1000);
        (m.encoder_layers, m.layers) = (encoder, decoder);
        p.set_framework(Framework::HfTrainer);
        p.training.checkpointing = Checkpointing::None;
        p.training.dropout = false;
        p.training.attention = attention;
        p.training.target_len = Some(target);
        p.training.padded = padded;
        phase(&estimate(&p).unwrap(), Phase::Forward)
            .activations
            .get() as i64
    };
    let base = at(2, 2);
    (at(3, 2) - base, at(2, 3) - base)
}

/// [`seq2seq_probe_blocks`]' encoder and decoder blocks within 2 KiB of the
/// CPU's count (the model leaves out the norms' per-row statistics).
fn assert_blocks_counted(case: &str, (enc, dec): (i64, i64), (encoder, decoder): (i64, i64)) {
    for (what, got, counted) in [("encoder", enc, encoder), ("decoder", dec, decoder)] {
        assert!(
            (got - counted).abs() <= 2_048,
            "{case} {what} block: {got} B, counted {counted} B"
        );
    }
}

#[test]
fn t5_blocks_keep_sdpas_position_bias_mask_and_their_norms_16_bit_input() {
    // calibration/saved_tensors.py --t5 (transformers 5.24, torch 2.15), SDPA
    // replaced by a function that saves what CUDA's memory-efficient kernel
    // saves; bytes per encoder / decoder block. Under SDPA every attention
    // call keeps its float mask (the relative position bias): with padding
    // B·heads·S² for the encoder, heads·T² for the causal decoder, B·heads·T·S
    // for the cross-attention; without, one row for the encoder and none per
    // block for the cross-attention. In bf16 each T5LayerNorm keeps its
    // 16-bit input beside the fp32 copy. The model leaves out only the norms'
    // per-row statistics (a few hundred bytes a block).
    for (precision, padded, source, target, encoder, decoder) in [
        (Precision::Fp32, true, 64, 16, 6_558_720, 2_501_248),
        (Precision::Fp32, true, 128, 16, 13_641_728, 3_091_072),
        (Precision::Fp32, true, 64, 32, 6_558_720, 4_495_104),
        (Precision::Fp32, false, 64, 16, 6_427_648, 2_435_712),
        (Precision::Fp32, false, 128, 16, 13_117_440, 2_960_000),
        (Precision::Fp32, false, 64, 32, 6_427_648, 4_364_032),
        (Precision::Bf16, true, 64, 16, 3_806_208, 1_448_576),
        (Precision::Bf16, true, 128, 16, 7_874_560, 1_743_488),
        (Precision::Bf16, true, 64, 32, 3_806_208, 2_643_712),
        (Precision::Bf16, false, 64, 16, 3_740_672, 1_415_808),
    ] {
        let got = seq2seq_probe_blocks(
            "flan-t5-small",
            precision,
            Attention::Flash,
            padded,
            source,
            target,
        );
        let case = format!("{precision:?} padded {padded} {source}/{target}");
        assert_blocks_counted(&case, got, (encoder, decoder));
    }
    // Eager attention (transformers 4's only T5 attention, which upcast the
    // softmax as the model does): in fp32 the same count without a mask.
    for (source, target, encoder, decoder) in [
        (64, 16, 6_554_624, 2_507_136),
        (128, 16, 13_633_536, 3_096_960),
    ] {
        let got = seq2seq_probe_blocks(
            "flan-t5-small",
            Precision::Fp32,
            Attention::Eager,
            true,
            source,
            target,
        );
        assert_blocks_counted(&format!("eager {source}"), got, (encoder, decoder));
    }
}

#[test]
fn bart_blocks_keep_the_padding_mask_of_their_encoder_and_cross_attention() {
    // calibration/saved_tensors.py --padded (transformers 5.24, torch 2.15, the
    // CPU's own SDPA): BART (hidden 512, 8 heads, MLP 1024, no dropout),
    // batch 2, source 64 and target 16 tokens, bytes one encoder block and one
    // decoder block keep. Padding adds the converted mask to the encoder's
    // self-attention (B·S·S) and the decoder's cross-attention (B·T·S); the
    // causal decoder self-attention gets none.
    let blocks = |precision, padded| {
        seq2seq_probe_blocks("bart-base", precision, Attention::Flash, padded, 64, 16)
    };
    for (precision, padded, encoder, decoder) in [
        (Precision::Fp32, false, 3_151_872, 1_575_680),
        (Precision::Fp32, true, 3_184_640, 1_583_872),
        (Precision::Bf16, false, 1_577_984, 788_864),
        (Precision::Bf16, true, 1_594_368, 792_960),
    ] {
        let case = format!("{precision:?} padded {padded}");
        assert_blocks_counted(&case, blocks(precision, padded), (encoder, decoder));
    }
}

#[test]
fn padded_rows_make_sdpa_keep_its_mask_and_expanded_kv_in_every_block() {
    // Padding in the batch makes transformers hand SDPA a boolean mask: SDPA
    // converts it per call to a float mask over every row (B × S × S in the
    // query's dtype) that the memory-efficient kernel keeps, and grouped k/v
    // are expanded to every head. Qwen2.5-0.5B (24 blocks, 14 heads, 2 kv
    // heads of 64) at 8 × 1024 under autocast: per block 8·1024²·2 B of mask
    // and 2·(14 − 2)·64·8·1024·2 B of k and v.
    let run = |padded: bool, compile: bool, attention: Attention| {
        let mut p = plan("qwen2.5-0.5b", Precision::AmpBf16, 8, 1024);
        p.set_framework(Framework::HfTrainer);
        p.training.checkpointing = Checkpointing::None;
        p.training.padded = padded;
        p.training.compile = compile;
        p.training.attention = attention;
        phase(&estimate(&p).unwrap(), Phase::Forward)
            .activations
            .get() as i64
    };
    let per_block = 8 * 1024 * 1024 * 2 + 2 * (14 - 2) * 64 * 8 * 1024 * 2;
    let sdpa = |padded| run(padded, false, Attention::Flash);
    assert_eq!(sdpa(true) - sdpa(false), 24 * per_block);
    // Counted on the CPU (calibration/saved_tensors.py --padded, the CPU's own
    // SDPA): a bf16 Llama block of hidden 512, 8 heads over 2 kv heads, batch
    // 2 × 64, keeps 212,992 B more with padding.
    let small = |padded: bool| {
        let mut p = plan("llama-3.2-1b", Precision::Bf16, 2, 64);
        let m = &mut p.model;
        (m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn, m.vocab) = (512, 8, 2, 64, 1024, 1000);
        p.set_framework(Framework::HfTrainer);
        p.training.checkpointing = Checkpointing::None;
        p.training.padded = padded;
        block_bytes(&p)
    };
    assert_eq!(small(true) - small(false), 212_992.0);
    // Compiled, k/v are expanded anyway (the mask is traced) and the
    // conversion is recomputed: padding adds nothing.
    let compiled = |padded| run(padded, true, Attention::Flash);
    assert_eq!(compiled(true), compiled(false));
    // Eager attention adds the mask to scores it keeps anyway.
    let eager = |padded| run(padded, false, Attention::Eager);
    assert_eq!(eager(true), eager(false));
    // torchtune pads without an attention mask (its collate masks the labels).
    let torchtune = |padded: bool| {
        let mut p = plan("qwen2.5-0.5b", Precision::Bf16, 8, 1024);
        p.set_framework(Framework::Torchtune);
        p.training.padded = padded;
        estimate(&p).unwrap().peak.allocated
    };
    assert_eq!(torchtune(true), torchtune(false));
}

#[test]
fn a_paged_optimizer_keeps_the_states_of_tensors_under_1e5_elements_on_the_device() {
    // bitsandbytes pages a state only from 10⁵ elements. Measured on the H200
    // (calibration/h200-2026-11-30, allocated after the step less after load,
    // less the 64 MiB of cuBLAS workspaces every LoRA run there shows):
    // Llama-3.1-8B QLoRA r64 on every linear under paged AdamW kept 32 MiB —
    // k's and v's B (1024 × 64 = 65,536 elements) in 32 layers, two fp32
    // states each; everything else (≥ 262,144 elements) paged.
    let lora = |rank: u32, targets: LoraTargets| Finetune::Lora {
        rank,
        targets,
        base_bits: 4,
        dropout: true,
        variant: LoraVariant::Lora,
    };
    let states = |optimizer: Optimizer, ft: Finetune| {
        let mut p = plan("llama-3.1-8b", Precision::Bf16, 1, 512);
        p.training.optimizer = optimizer;
        p.training.finetune = ft;
        phase(&estimate(&p).unwrap(), Phase::Step).optimizer.get() as f64
    };
    let r64 = states(Optimizer::PagedAdamw, lora(64, LoraTargets::ALL_LINEAR));
    assert_eq!(r64, (32 * 2 * 1024 * 64 * 2 * 4) as f64, "{r64}");
    // r 8 on q and v: every A (8 × 4096) and B (4096 or 1024 × 8) is small,
    // so all of it stays — as much as an unpaged AdamW keeps.
    let qv = lora(8, LoraTargets::QV);
    assert_eq!(
        states(Optimizer::PagedAdamw, qv),
        states(Optimizer::Adamw, qv)
    );
    // A full fine-tune's states are paged (its norms left in the count).
    assert_eq!(states(Optimizer::PagedAdamw, Finetune::Full), 0.0);
}

#[test]
fn cublas_workspaces_sit_in_the_allocator_from_the_first_forward() {
    // Two handles (the forward's thread and autograd's) of 32 MiB on a Hopper,
    // 8.125 MiB elsewhere (PyTorch CublasHandlePool.cpp); measured on the H200:
    // 64 MiB beyond the states every LoRA run made by its first step.
    let mut p = plan("llama-3.2-1b", Precision::Bf16, 1, 512);
    let tmp = |p: &Plan, ph: Phase| phase(&estimate(p).unwrap(), ph).temporaries.get();
    assert!(p.gpu.is_hopper());
    assert_eq!(tmp(&p, Phase::Load), 0);
    assert_eq!(tmp(&p, Phase::Forward), 64 << 20);
    p.gpu = cost_model::gpu::gpu("a100-sxm4-80gb").unwrap();
    assert!(!p.gpu.is_hopper());
    assert_eq!(
        tmp(&p, Phase::Forward),
        (2.0 * 8.125 * (1u64 << 20) as f64) as u64
    );
    for (id, hopper) in [
        ("h100-sxm-80gb", true),
        ("h800-80gb", true),
        ("gh200-96gb", true),
        ("rtx4090-24gb", false),
        ("a100-sxm4-40gb", false),
    ] {
        assert_eq!(
            cost_model::gpu::gpu(id).unwrap().is_hopper(),
            hopper,
            "{id}"
        );
    }
    // Custom names, in any case; an H20's name ends in it.
    let named = |name: &str| cost_model::gpu::GpuSpec {
        name: name.into(),
        ..cost_model::gpu::gpu("h100-sxm-80gb").unwrap()
    };
    assert!(named("nvidia h200 nvl").is_hopper());
    assert!(named("NVIDIA H20").is_hopper());
    assert!(!named("NVIDIA A40").is_hopper());
    assert!(!named("NVIDIA H20X").is_hopper());
}

#[test]
fn shard_grad_op_holds_its_shard_at_rest_and_the_whole_model_gathered_in_between() {
    // FSDP SHARD_GRAD_OP over 8 ranks, Llama-3.1-8B under bf16 autocast:
    // between steps each rank holds its fp32 shard as under FULL_SHARD; from
    // forward to backward every unit stays gathered in bf16 beside it. It
    // was counted as the whole fp32 model on every rank plus 7/8 of it
    // gathered again (found by "more ranks never cost a rank memory": 16
    // ranks held more than 8).
    let mut p = Plan {
        model: preset("llama-3.1-8b").unwrap().spec(),
        ..Plan::default()
    };
    p.set_framework(Framework::PlainPytorch);
    p.training.precision = Precision::AmpBf16;
    p.training.checkpointing = Checkpointing::Full;
    p.parallel.num_gpus = 8;
    let params = p.model.params() as f64;
    let run = |sharding: Sharding, gpus: u32| {
        let mut q = p.clone();
        q.parallel.sharding = sharding;
        q.parallel.num_gpus = gpus;
        estimate(&q).unwrap()
    };
    let grad_op = run(Sharding::FsdpGradOp, 8);
    let full = run(Sharding::FsdpFull, 8);
    for ph in [Phase::Init, Phase::Forward, Phase::Step] {
        let w = phase(&grad_op, ph).weights.get() as f64;
        assert!((w - params * 4.0 / 8.0).abs() < 1e6, "{ph:?}: {w}");
        assert_eq!(phase(&grad_op, ph).weights, phase(&full, ph).weights);
    }
    let gathered = phase(&grad_op, Phase::Forward).comm_buffers.get() as f64;
    assert!((gathered - params * 2.0).abs() < 1e6, "{gathered}");
    assert_eq!(phase(&grad_op, Phase::Step).comm_buffers.get(), 0);
    // Between FULL_SHARD and plain DDP, and never more on more ranks.
    let ddp = run(Sharding::Ddp, 8);
    assert!(full.peak.allocated < grad_op.peak.allocated);
    assert!(grad_op.peak.allocated < ddp.peak.allocated);
    assert!(run(Sharding::FsdpGradOp, 16).peak.allocated < grad_op.peak.allocated);
}

#[test]
fn megatrons_gradients_stay_on_the_gpu_when_its_optimizer_is_offloaded() {
    // Megatron's main_grad buffer lives on the GPU for the run; its CPU
    // optimizer copies the gradients to pinned host memory before the step.
    // Offloading the optimizer removes its states from the GPU and nothing
    // else: the gradients were dropped with them, then reappeared in the
    // backward at another size (Llama-3.2-1B over 5 ranks: 62 MB more
    // allocated with offload than without).
    let mut p = Plan {
        model: preset("llama-3.2-1b").unwrap().spec(),
        ..Plan::default()
    };
    p.set_framework(Framework::Megatron);
    p.training.precision = Precision::Fp32;
    p.training.optimizer = Optimizer::Sgd;
    p.parallel.num_gpus = 5;
    for sharding in [Sharding::Zero1, Sharding::Zero2] {
        p.parallel.sharding = sharding;
        p.parallel.offload.optimizer = cost_model::plan::OffloadDevice::None;
        let on_gpu = estimate(&p).unwrap();
        p.parallel.offload.optimizer = cost_model::plan::OffloadDevice::Cpu;
        let offloaded = estimate(&p).unwrap();
        for ph in [Phase::Init, Phase::Forward, Phase::Backward, Phase::Step] {
            assert_eq!(
                phase(&offloaded, ph).gradients,
                phase(&on_gpu, ph).gradients,
                "{sharding:?} {ph:?}"
            );
        }
        assert!(
            offloaded.peak.allocated <= on_gpu.peak.allocated,
            "{sharding:?}"
        );
    }
}

#[test]
fn a_sharded_4bit_base_is_gathered_packed_and_keeps_its_scales_on_every_rank() {
    // Llama-2-70B QLoRA through the Trainer (bitsandbytes NF4, double
    // quantized, the blocks' linears only). FSDP and ZeRO-3 shard and
    // gather what the parameter stores — the packed codes, half a byte a
    // weight — while bitsandbytes keeps each matrix's `quant_state` on its
    // `Linear4bit` module, whole on every rank and on the GPU under CPU
    // offload (0.43.1 `nn/modules.py`). The blocks were gathered as 16-bit
    // weights (SHARD_GRAD_OP: 128 GiB gathered on each of two ranks) and the
    // scales were divided among the ranks with the codes.
    let model = preset("llama-2-70b").unwrap().spec();
    let mut p = Plan {
        model: model.clone(),
        ..Plan::default()
    };
    p.set_framework(Framework::HfTrainer);
    p.training.precision = Precision::Bf16;
    p.training.checkpointing = Checkpointing::Full;
    p.training.nf4_double_quant = true;
    p.training.finetune = Finetune::Lora {
        rank: 8,
        targets: LoraTargets::ALL_LINEAR,
        base_bits: 4,
        dropout: false,
        variant: LoraVariant::Lora,
    };
    p.parallel.sharding = Sharding::FsdpFull;
    let matrices = model.block_matrix_params() as f64;
    let scales = matrices * (1.0 / 64.0 + 4.0 / (64.0 * 256.0));
    let run = |fw: Framework, sharding: Sharding, gpus: u32, offload: bool| {
        let mut q = p.clone();
        q.framework = fw;
        q.parallel.sharding = sharding;
        q.parallel.num_gpus = gpus;
        if offload {
            q.parallel.offload.params = cost_model::plan::OffloadDevice::Cpu;
            q.parallel.offload.optimizer = cost_model::plan::OffloadDevice::Cpu;
        }
        estimate(&q).unwrap()
    };
    let weights = |e: &cost_model::estimate::Estimate| phase(e, Phase::Init).weights.get() as f64;
    // weights(n) = sharded / n + replicated, read off two world sizes.
    let per_rank = |fw: Framework| {
        let w2 = weights(&run(fw, Sharding::FsdpFull, 2, false));
        let w4 = weights(&run(fw, Sharding::FsdpFull, 4, false));
        let sharded = 4.0 * (w2 - w4);
        (sharded, w2 - sharded / 2.0)
    };
    let (sharded, replicated) = per_rank(Framework::HfTrainer);
    assert!(
        (replicated - scales).abs() < 1e6,
        "{replicated} vs {scales}"
    );
    assert!(sharded > matrices * 0.5, "{sharded}");
    let offloaded = run(Framework::HfTrainer, Sharding::FsdpFull, 2, true);
    assert!(
        (weights(&offloaded) - scales).abs() < 1e6,
        "{}",
        weights(&offloaded)
    );
    // torchao's NF4 (torchtune) shards its scales with the codes.
    let (_, torchao_replicated) = per_rank(Framework::Torchtune);
    assert!(torchao_replicated.abs() < 1e6, "{torchao_replicated}");

    // FULL_SHARD: two blocks in flight, packed, beside the root unit
    // (embedding, final norm, 16-bit head) in bf16.
    let edges = (model.embedding_params() + model.head_params() + model.norm_params()) as f64;
    let packed_block = (model.attention_params() + model.mlp_params()) as f64 * 0.5
        + 2.0 * model.norm_params() as f64 * 2.0;
    let full = run(Framework::HfTrainer, Sharding::FsdpFull, 2, false);
    let gathered = phase(&full, Phase::Forward).comm_buffers.get() as f64;
    assert!(
        (gathered - (2.0 * packed_block + edges * 2.0)).abs() < 1e6,
        "{gathered}"
    );
    // SHARD_GRAD_OP: the whole model gathered, packed.
    let grad_op = run(Framework::HfTrainer, Sharding::FsdpGradOp, 2, false);
    let gathered = phase(&grad_op, Phase::Forward).comm_buffers.get() as f64;
    let whole = model.layers as f64 * packed_block + edges * 2.0;
    assert!((gathered - whole).abs() < 1e6, "{gathered} vs {whole}");
    assert!(gathered < 40.0 * GIB, "{}", gathered / GIB);
}

#[test]
fn a_frozen_fp32_head_is_cast_again_for_every_chunk_it_is_called_on() {
    // LitGPT's LoRA fine-tune of StableLM-3B with fp32 weights under bf16
    // autocast (its LoRA tutorial): the LM head runs on 128-position chunks
    // and, frozen, is cast to bf16 afresh for each (autocast caches the casts
    // of weights that require grad only), each cast saved by its matmul for
    // the input gradient. At 1024 tokens the head is called 8 times, at 1025
    // 9; the ninth cast is one more head in bf16.
    let mut p = litgpt("stabilityai/stablelm-base-alpha-3b", lora_qv());
    p.training.precision = Precision::AmpBf16;
    p.training.finetune.set_base_bits(32);
    p.training.loss = cost_model::plan::Loss::ChunkedKeep;
    let head = (p.model.vocab as f64) * (p.model.hidden as f64) * 2.0;
    let temporaries = |q: &Plan, seq: u32| {
        let mut q = q.clone();
        q.training.seq_len = seq;
        phase(&estimate(&q).unwrap(), Phase::Forward)
            .temporaries
            .get() as f64
    };
    let step = temporaries(&p, 1025) - temporaries(&p, 1024);
    assert!((step - head).abs() < 1e6, "{step} vs {head}");
    // Within a chunk nothing is cast again.
    assert!((temporaries(&p, 1000) - temporaries(&p, 1024)).abs() < 1e6);
    // A head that trains is cast once, into autocast's cache.
    let mut full = p.clone();
    full.training.finetune = Finetune::Full;
    assert!((temporaries(&full, 1025) - temporaries(&full, 1024)).abs() < 1e6);
    // Without autocast there is no cast at all.
    let mut pure = p.clone();
    pure.training.precision = Precision::Bf16;
    assert!((temporaries(&pure, 1025) - temporaries(&pure, 1024)).abs() < 1e6);
}

#[test]
fn checkpointed_blocks_keep_no_cast_of_their_frozen_fp32_weights() {
    // LoRA over a Llama-2-7B loaded in fp32 (transformers' default dtype)
    // under fp16 autocast. Autocast caches the casts of weights that
    // require grad only, so a frozen weight's cast lives as long as a matmul
    // saves it: every block's without checkpointing, none of a checkpointed
    // block's (its forward saves nothing). The head, outside the blocks,
    // keeps its cast either way. Counted against the same plan over a
    // 16-bit base, which casts no frozen weight at all.
    let mut p = plan("llama-2-7b", Precision::AmpFp16, 4, 512);
    p.training.finetune = lora_qv();
    let with_base = |q: &Plan, bits: u32| {
        let mut q = q.clone();
        q.training.finetune.set_base_bits(bits);
        phase(&estimate(&q).unwrap(), Phase::Forward)
            .temporaries
            .get() as f64
    };
    let m = &p.model;
    let head = m.vocab as f64 * m.hidden as f64 * 2.0;
    let blocks = m.block_matrix_params() as f64 * 2.0;
    let casts = |q: &Plan| with_base(q, 32) - with_base(q, 16);
    assert!((casts(&p) - (blocks + head)).abs() < 1e6, "{}", casts(&p));
    p.training.checkpointing = Checkpointing::Full;
    assert!((casts(&p) - head).abs() < 1e6, "{}", casts(&p));
    // Checkpointing every other block keeps the others' casts.
    p.training.checkpoint_every = 2;
    assert!(
        (casts(&p) - (blocks / 2.0 + head)).abs() < 1e6,
        "{}",
        casts(&p)
    );
    // Trainable fp32 weights sit in autocast's cache until the forward ends,
    // checkpointed or not.
    let mut full = plan("llama-3.2-1b", Precision::AmpBf16, 1, 512);
    let fwd = |q: &Plan| phase(&estimate(q).unwrap(), Phase::Forward).temporaries;
    let eager = fwd(&full);
    full.training.checkpointing = Checkpointing::Full;
    assert_eq!(fwd(&full), eager);
}

/// The eager Llama `calibration/cpu_allocator.py scores` runs on the CPU allocator: 4
/// blocks, hidden 256, 16 heads of 16 (no grouping), MLP 512, vocabulary 256.
fn score_probe_plan(precision: Precision, seq: u32) -> Plan {
    let mut p = plan("llama-3.2-1b", precision, 1, seq);
    let m = &mut p.model;
    (m.hidden, m.ffn, m.heads, m.kv_heads, m.head_dim) = (256, 512, 16, 16, 16);
    (m.vocab, m.layers, m.tied_embeddings) = (256, 4, false);
    p.training.attention = Attention::Eager;
    p
}

/// The probe's peak allocated bytes under a checkpointing policy.
fn score_probe(precision: Precision, ckpt: Checkpointing, seq: u32) -> f64 {
    let mut p = score_probe_plan(precision, seq);
    p.training.checkpointing = ckpt;
    estimate(&p).unwrap().peak.allocated.get() as f64
}

#[test]
fn eager_attention_backward_holds_three_score_sized_tensors_at_the_softmax() {
    // Bytes per attention score the backward peak grows by with the sequence
    // (16 heads, 16,384 → 32,768 tokens: the hidden-sized tensors add well
    // under 0.1 byte per score there). Counted on the CPU allocator
    // (calibration/cpu_allocator.py scores, transformers' eager Llama): at the
    // softmax's backward a block holds P, dP and dS in softmax's fp32 — the
    // 16-bit cast of P went with the value matmul's backward — on top of the
    // four blocks' kept probabilities without checkpointing (fp32: 4 bytes
    // each; bf16: the fp32 softmax output and its 16-bit cast, 6), and
    // nothing else score-sized when the scores are recomputed, whether the
    // whole block is (full) or only the attention core (selective).
    let scores = |s: f64| 16.0 * s * s;
    for (precision, ckpt, counted) in [
        (Precision::Fp32, Checkpointing::None, 4.0 * 4.0 + 8.0),
        (Precision::Fp32, Checkpointing::Full, 12.0),
        (Precision::Fp32, Checkpointing::Selective, 12.0),
        (Precision::Fp32, Checkpointing::OpSelective, 12.0),
        (Precision::Bf16, Checkpointing::None, 4.0 * 6.0 + 6.0),
        (Precision::Bf16, Checkpointing::Full, 12.0),
        (Precision::Bf16, Checkpointing::Selective, 12.0),
        (Precision::Bf16, Checkpointing::OpSelective, 12.0),
    ] {
        let grew = score_probe(precision, ckpt, 32768) - score_probe(precision, ckpt, 16384);
        let per_score = grew / (scores(32768.0) - scores(16384.0));
        assert!(
            (per_score - counted).abs() < 0.15,
            "{precision:?} {ckpt:?}: {per_score:.3} bytes per score, counted {counted}"
        );
    }
    // So a selectively checkpointed plan never holds less than a fully
    // checkpointed one, which keeps strictly less.
    for precision in [Precision::Fp32, Precision::Bf16] {
        for seq in [512, 4096, 32768] {
            let full = score_probe(precision, Checkpointing::Full, seq);
            assert!(score_probe(precision, Checkpointing::Selective, seq) >= full);
            assert!(score_probe(precision, Checkpointing::OpSelective, seq) >= full);
            assert!(score_probe(precision, Checkpointing::None, seq) >= full);
        }
    }
}

#[test]
fn attention_dropout_keeps_its_mask_and_output_instead_of_the_cast() {
    // Bytes per attention score the four blocks keep through the forward,
    // from the growth 16,384 → 32,768 tokens. With dropout each block keeps
    // the softmax output, the boolean mask (`native_dropout` saves only
    // that) and the dropped-out tensor the value matmul saves — in a 16-bit
    // run with an fp32 softmax that 16-bit tensor replaces the probabilities'
    // cast rather than adding to it: 4 + 1 + 2.
    let kept = |precision: Precision, upcast: bool, dropout: bool, seq: u32| {
        let mut p = score_probe_plan(precision, seq);
        p.training.fp32_upcasts = upcast;
        p.training.dropout = dropout;
        phase(&estimate(&p).unwrap(), Phase::Forward)
            .activations
            .get() as f64
    };
    let scores = 16.0 * (32768f64.powi(2) - 16384f64.powi(2));
    for (precision, upcast, without, with) in [
        (Precision::Fp32, true, 4.0, 4.0 + 1.0 + 4.0),
        (Precision::Bf16, true, 4.0 + 2.0, 4.0 + 1.0 + 2.0),
        (Precision::AmpBf16, true, 4.0 + 2.0, 4.0 + 1.0 + 2.0),
        (Precision::Bf16, false, 2.0, 2.0 + 1.0 + 2.0),
    ] {
        for (dropout, counted) in [(false, without), (true, with)] {
            let per_score = (kept(precision, upcast, dropout, 32768)
                - kept(precision, upcast, dropout, 16384))
                / scores
                / 4.0;
            assert!(
                (per_score - counted).abs() < 0.05,
                "{precision:?} upcast {upcast} dropout {dropout}: {per_score:.3}, counted {counted}"
            );
        }
    }
}

#[test]
fn bert_blocks_and_masked_lm_loss_keep_what_the_cpu_allocator_counted() {
    // calibration/cpu_allocator.py bert / loss (transformers 5.24, torch 2.15):
    // BertForMaskedLM blocks (hidden 1024, MLP 4096), 4 × 512 tokens in fp32,
    // bytes a block keeps per token per hidden unit — the growth from 2 to 4
    // blocks — and the MLM loss's bytes per logit at the backward peak.
    let mut p = plan("bert-large", Precision::Fp32, 4, 512);
    let per_block = |p: &mut Plan, attention: Attention, dropout: bool| {
        p.training.attention = attention;
        p.training.dropout = dropout;
        let mut kept = |layers: u32| {
            p.model.layers = layers;
            phase(&estimate(p).unwrap(), Phase::Forward)
                .activations
                .get() as f64
        };
        (kept(4) - kept(2)) / 2.0 / (4.0 * 512.0 * 1024.0)
    };
    for (attention, dropout, counted) in [
        (Attention::Flash, false, 64.08),
        // Two hidden dropouts a block: the CPU kept each mask in fp32 (72.08),
        // CUDA's `native_dropout` keeps a bool.
        (Attention::Flash, true, 72.08 - 2.0 * 3.0),
        (Attention::Eager, false, 96.02),
    ] {
        let got = per_block(&mut p, attention, dropout);
        assert!(
            (got - counted).abs() < 0.1,
            "{attention:?} dropout {dropout}: {got:.2} per token and hidden unit, counted {counted}"
        );
    }
    // The loss: the logits the output holds, log-softmax's output, its
    // gradient and the input's gradient — 4 + 4 + 4 + 4 in fp32; under
    // autocast the held logits are 16-bit: 2 + 4 + 4 + 4 (the CPU's autocast
    // counted 14.72 with the one small block's 0.7). The model's figure holds
    // the head transform's hidden-sized tensors too: `dense`'s input and
    // output, GELU's output (the LayerNorm's input) and the LayerNorm's output
    // (the decoder's input) — 4 + 4 + 4 + 4 bytes a token and hidden unit in
    // fp32, 2 + 2 + 4 + 2 under autocast (its LayerNorm reads an fp32 cast);
    // the CPU's `working` probe kept them (20.03 bytes a token and hidden unit
    // as backward starts, checkpointed, with the embedding LayerNorm's input).
    // Under fp16 autocast CUDA's log-softmax reads the fp16 scores into fp32
    // and hands back an fp16 gradient (`half_to_float`): 2 + 4 + 4 + 2,
    // replayed and measured alike (calibration/allocator_replay.py, BERT-large
    // amp-fp16 at 32 × 512: 26.038 GiB allocated).
    for (precision, counted, head) in [
        (Precision::Fp32, 16.0, 16.0),
        (Precision::AmpBf16, 14.0, 10.0),
        (Precision::AmpFp16, 12.0, 10.0),
    ] {
        let mut p = plan("bert-large", precision, 4, 512);
        p.training.dropout = false;
        let logits = phase(&estimate(&p).unwrap(), Phase::Backward).logits.get() as f64;
        let per_logit = logits / (4.0 * 512.0 * 30522.0);
        let head = head * 1024.0 / 30522.0;
        assert!(
            (per_logit - counted - head).abs() < 0.01,
            "{precision:?}: {per_logit:.2} bytes per logit, counted {counted}"
        );
    }
    // A causal LM upcasts its logits itself (`ForCausalLMLoss` calls
    // `.float()`), so fp16 and bf16 autocast keep the same loss.
    let loss = |precision| {
        let p = plan("gpt2", precision, 4, 512);
        phase(&estimate(&p).unwrap(), Phase::Backward).logits
    };
    assert_eq!(loss(Precision::AmpFp16), loss(Precision::AmpBf16));
}

/// The 4-block probe of `calibration/cpu_allocator.py working`: hidden 512,
/// 8 heads of 64, vocabulary 256, batch 1 × 8,192.
fn working_probe_plan(model: &str, precision: Precision, ffn: u32, kv_heads: u32) -> Plan {
    let mut p = plan(model, precision, 1, 8192);
    let m = &mut p.model;
    (m.hidden, m.ffn, m.heads, m.head_dim, m.layers, m.vocab) = (512, ffn, 8, 64, 4, 256);
    m.kv_heads = kv_heads;
    m.max_positions = 16384;
    p
}

/// Peak allocated bytes per token per hidden unit, from the growth 8,192 →
/// 16,384 tokens of a [`working_probe_plan`].
fn working_probe_slope(p: &Plan) -> f64 {
    let at = |p: &Plan| estimate(p).unwrap().peak.allocated.get() as f64;
    let mut long = p.clone();
    long.training.seq_len = 16384;
    (at(&long) - at(p)) / 8192.0 / 512.0
}

#[test]
fn a_recomputed_blocks_mlp_backward_adds_its_gradients_to_the_block() {
    // calibration/cpu_allocator.py working (transformers 5.24, torch 2.15):
    // 4 blocks of hidden 512, bf16, batch 1, fully checkpointed; bytes per
    // token per hidden unit at the backward peak, from the growth 8,192 →
    // 16,384 tokens. The peak is in the top block's MLP backward: the
    // recomputed block, the gradient of the down projection's input and of
    // both SwiGLU factors (one GELU input gradient for BERT), and
    // hidden-sized gradients.
    let peak_per_token = |bert: bool, ffn: u32| {
        let (model, kv_heads) = if bert {
            ("bert-base", 8)
        } else {
            ("llama-3.2-1b", 2)
        };
        let mut p = working_probe_plan(model, Precision::Bf16, ffn, kv_heads);
        p.model.tied_embeddings = bert;
        p.training.checkpointing = Checkpointing::Full;
        working_probe_slope(&p)
    };
    for (bert, ffn, counted) in [
        (false, 1408, 65.59),
        (false, 1792, 74.59),
        (false, 2816, 97.47),
        (true, 2048, 49.09),
    ] {
        let got = peak_per_token(bert, ffn);
        assert!(
            (got / counted - 1.0).abs() < 0.03,
            "bert {bert} MLP {ffn}: {got:.2} bytes per token per hidden unit, counted {counted}"
        );
    }
    // What BERT keeps as backward starts, checkpointed: the four blocks'
    // inputs (8), the embedding LayerNorm's input (2), the masked-LM head's
    // transform (dense input and output, GELU output, LayerNorm output: 8)
    // and the loss over 256 scores a token (20.03 counted; 14 before the
    // stacks' ends were counted).
    let mut p = working_probe_plan("bert-base", Precision::Bf16, 2048, 8);
    p.model.tied_embeddings = true;
    p.training.checkpointing = Checkpointing::Full;
    let kept = |p: &Plan| {
        let f = phase(&estimate(p).unwrap(), Phase::Forward);
        (f.activations.get() + f.logits.get()) as f64
    };
    let mut long = p.clone();
    long.training.seq_len = 16384;
    let got = (kept(&long) - kept(&p)) / 8192.0 / 512.0;
    assert!(
        (got / 20.03 - 1.0).abs() < 0.01,
        "{got:.2} kept, counted 20.03"
    );
}

#[test]
fn a_kept_blocks_backward_holds_its_gradients_not_a_second_copy_of_the_block() {
    // calibration/cpu_allocator.py working (transformers 5.24, torch 2.15):
    // the Llama probe of the test above without checkpointing; bytes per
    // token per hidden unit at the backward peak, 8,192 → 16,384 tokens. The
    // peak is the final RMSNorm's backward (`PowBackward0`: its fp32 input
    // and four fp32 gradients, 20 over what the blocks keep); the top block's
    // MLP backward holds two MLP-wide gradients over them, never a second
    // copy of the block (the model had put a whole block there: 215.3, 245.3
    // and 325.3 where 197.8, 221.8 and 285.8 were counted).
    let probe = |ffn: u32, precision: Precision, kv_heads: u32| {
        working_probe_plan("llama-3.2-1b", precision, ffn, kv_heads)
    };
    let slope = working_probe_slope;
    // In fp32 (8 kv heads, so that CUDA's SDPA would not fall back to the
    // math kernel) the MLP's fp32 gradients are the peak (`MulBackward0`).
    for (ffn, precision, kv, counted) in [
        (1408, Precision::Bf16, 2, 197.81),
        (1792, Precision::Bf16, 2, 221.81),
        (2816, Precision::Bf16, 2, 285.81),
        (1792, Precision::Fp32, 8, 419.31),
    ] {
        let got = slope(&probe(ffn, precision, kv));
        assert!(
            (got / counted - 1.0).abs() < 0.03,
            "MLP {ffn} {precision:?}: {got:.2} bytes per token per hidden unit, counted {counted}"
        );
    }
    // LoRA rank 16 on every linear (PEFT's "all-linear", no dropout): the
    // final norm's backward again, over the adapters' kept inputs.
    let mut p = probe(1792, Precision::Bf16, 2);
    p.training.finetune = Finetune::Lora {
        rank: 16,
        targets: LoraTargets::ALL_LINEAR,
        base_bits: 16,
        dropout: false,
        variant: LoraVariant::Lora,
    };
    let got = slope(&p);
    assert!(
        (got / 313.30 - 1.0).abs() < 0.03,
        "LoRA: {got:.2} bytes per token per hidden unit, counted 313.30"
    );
    // With the norms fused (Liger) and the loss fused, the top block's MLP
    // backward is the moment: its two MLP-wide gradients and the one flowing
    // into the block over the kept activations, in bf16.
    let mut p = probe(2816, Precision::Bf16, 2);
    p.training.fused_kernels = true;
    p.training.loss = cost_model::plan::Loss::Fused;
    let e = estimate(&p).unwrap();
    let backward = phase(&e, Phase::Backward);
    let tokens = 8192.0;
    let grads = 2.0 * (2.0 * 2816.0 + 512.0) * tokens;
    let over = backward.temporaries.get() as f64 - common::cublas_workspaces(&p) as f64;
    assert_eq!(
        over, grads,
        "the block's backward over its kept activations"
    );
}

/// An adapter trained without recomputation frees the forward's kept tensors
/// in the reverse of the order it made them and makes nothing
/// parameter-shaped, so the allocator reserves 2 % over its allocated peak,
/// not the 7 % of a full fine-tune or a checkpointed adapter. Measured on the
/// H200: Llama-3.1-8B LoRA on every linear at 4 × 2048 allocated 110.74 GiB
/// and reserved 112.19 (1.3 %); four more adapter runs 1.6–4.3 %.
#[test]
fn an_adapter_without_recomputation_reserves_the_allocators_smaller_share() {
    let base = || {
        let mut p = plan("llama-3.1-8b", Precision::Bf16, 4, 2048);
        p.training.finetune = lora16_all();
        p
    };
    let frozen = ALLOCATOR_RESERVE_FRACTION_FROZEN_NO_RECOMPUTE;
    assert!((share(&base()) - frozen).abs() < 1e-6, "{}", share(&base()));
    let mut ddp = base();
    ddp.parallel.num_gpus = 2;
    ddp.parallel.sharding = Sharding::Ddp;
    assert!((share(&ddp) - frozen).abs() < 1e-6, "DDP: {}", share(&ddp));
    let mut ckpt = base();
    ckpt.training.checkpointing = Checkpointing::Full;
    let mut full = base();
    full.training.finetune = Finetune::Full;
    let mut offload = base();
    offload.training.activation_offload = true;
    let mut zero3 = base();
    zero3.parallel.num_gpus = 2;
    zero3.parallel.sharding = Sharding::Zero3;
    let mut fsdp = zero3.clone();
    fsdp.parallel.sharding = Sharding::FsdpFull;
    let mut stages = base();
    stages.parallel.num_gpus = 2;
    stages.parallel.pp = 2;
    for (what, p) in [
        ("checkpointing", ckpt),
        ("a full fine-tune", full),
        ("activation offload", offload),
        ("ZeRO-3", zero3),
        ("FSDP", fsdp),
        ("two pipeline stages", stages),
    ] {
        assert!(
            share(&p) >= ALLOCATOR_RESERVE_FRACTION - 1e-6,
            "{what}: {}",
            share(&p)
        );
    }
}

/// The first step's optimizer states strand the loss's segments of a
/// checkpointed full fine-tune: replayed through the caching allocator's
/// rules (calibration/allocator_replay.py) and measured on the H200 alike,
/// Qwen2.5-7B in bf16 at 2 × 4096 held 73.5 GiB allocated and 87.8 reserved —
/// its first step's peak and three fp32 logits tensors of 4.6 GiB mapped
/// again for the second step's loss.
#[test]
fn the_first_steps_states_strand_a_checkpointed_full_finetunes_loss_segments() {
    let counters = phase_counters;
    // The first step's peak reserved: its forward or backward without the
    // states, with the allocator's share, or its optimizer step.
    let reserved_over_first_step = |p: &Plan| {
        let states = phase(&estimate(p).unwrap(), Phase::Step).optimizer.as_f64();
        let alloc = |ph| counters(p, ph).allocated.as_f64();
        let share = 1.0 + ALLOCATOR_RESERVE_FRACTION;
        let first_step = ((alloc(Phase::Forward) - states) * share)
            .max((alloc(Phase::Backward) - states) * share)
            .max(alloc(Phase::Step));
        counters(p, Phase::Backward).reserved.as_f64() - first_step
    };
    let mut p = plan("qwen2.5-7b", Precision::Bf16, 2, 4096);
    p.training.checkpointing = Checkpointing::Full;
    let logits = 2.0 * 4096.0 * 152064.0 * 4.0;
    // 28 GiB of states against 4.6 GiB tensors: all three segments.
    assert!((reserved_over_first_step(&p) - 3.0 * logits).abs() <= 1.0);
    let reserved = estimate(&p).unwrap().peak.reserved.as_f64() / GIB;
    assert!((reserved - 87.793).abs() / 87.793 < 0.04, "{reserved}");
    // Llama-3.2-1B at 32,768 tokens: 4.6 GiB of states fall in one 15.7 GiB
    // segment (replayed 77.1 GiB reserved, one segment over its first step).
    let mut p = plan("llama-3.2-1b", Precision::Bf16, 1, 32768);
    p.training.checkpointing = Checkpointing::Full;
    let logits = 32768.0 * 128256.0 * 4.0;
    assert!((reserved_over_first_step(&p) - logits).abs() <= 1.0);
    // Nothing is stranded where the states stay out of the loss's segments or
    // no logits-sized tensor is made: the reserve is the allocator's share.
    let base = || {
        let mut p = plan("qwen2.5-7b", Precision::Bf16, 2, 4096);
        p.training.checkpointing = Checkpointing::Full;
        p
    };
    let mut lora = base();
    lora.training.finetune = lora_all();
    let mut kept = base();
    kept.training.checkpointing = Checkpointing::None;
    let mut chunked = base();
    chunked.training.loss = cost_model::plan::Loss::ChunkedFree;
    let mut expandable = base();
    expandable.runtime.expandable_segments = true;
    for (what, p) in [("no checkpointing", kept), ("chunked loss", chunked)] {
        assert!(
            (share(&p) - ALLOCATOR_RESERVE_FRACTION).abs() < 1e-6,
            "{what}: {}",
            share(&p)
        );
    }
    assert!(share(&expandable) < 0.021, "{}", share(&expandable));
    // An adapter's states stay out of them (under 1 MiB a tensor): nothing
    // stranded, only its blocks' idle segments
    // (`a_checkpointed_adapter_reserves_what_its_blocks_forward_left`),
    // far under one logits tensor.
    let c = counters(&lora, Phase::Backward);
    let over_share =
        c.reserved.as_f64() - c.allocated.as_f64() * (1.0 + ALLOCATOR_RESERVE_FRACTION);
    assert!(
        over_share < 0.25 * logits,
        "LoRA: {over_share} B over the share"
    );
}

/// A checkpointed full fine-tune whose loss never holds the logits whole
/// (TRL's chunked NLL, its fused head, a fused cross-entropy) strands no
/// loss segment, but its first step's optimizer states take the segments its
/// blocks' transients freed, and the next step's blocks map theirs again:
/// replayed through the caching allocator's rules
/// (calibration/allocator_replay.py --trl-chunked-nll, trl 1.14.2's loss
/// copied), Llama-3.2-1B in bf16 at 8 × 2048 reserved 13.570 GiB over an
/// 11.577 GiB allocated peak (the model read 12.43 before version 43, now
/// 13.27), SmolLM2-360M 5.133 over 3.948 (4.23, now 4.58).
#[test]
fn a_checkpointed_full_finetune_without_logits_reserves_its_blocks_segments_again() {
    use cost_model::plan::Loss;
    let base = |loss| {
        let mut p = plan("llama-3.2-1b", Precision::Bf16, 8, 2048);
        p.set_framework(Framework::Trl);
        p.training.fp32_upcasts = true;
        p.training.checkpointing = Checkpointing::Full;
        p.training.loss = loss;
        p
    };
    let reserved = |p: &Plan| estimate(p).unwrap().peak.reserved.as_f64() / GIB;
    let over = |p: &Plan| {
        let e = estimate(p).unwrap();
        (e.peak.reserved.as_f64() - e.peak.allocated.as_f64()) / GIB
    };
    let got = reserved(&base(Loss::ChunkedNll));
    assert!((got - 13.570).abs() / 13.570 < 0.04, "{got}");
    for loss in [Loss::ChunkedNll, Loss::TiledLogprob, Loss::Fused] {
        let p = base(loss);
        assert!(over(&p) > 1.2, "{loss:?}: {} GiB over allocated", over(&p));
        // Not where the states stay out of those segments: an adapter's are
        // small-pool tensors, ZeRO-3 makes them from its own buffers,
        // expandable segments map pages.
        let mut lora = p.clone();
        lora.training.finetune = lora_all();
        let mut zero3 = p.clone();
        zero3.parallel.num_gpus = 2;
        zero3.parallel.sharding = Sharding::Zero3;
        let mut expandable = p.clone();
        expandable.runtime.expandable_segments = true;
        for (what, q) in [
            ("LoRA", lora),
            ("ZeRO-3", zero3),
            ("expandable", expandable),
        ] {
            let e = estimate(&q).unwrap();
            let share = e.peak.reserved.as_f64() / e.peak.allocated.as_f64() - 1.0;
            assert!(share < 0.1, "{loss:?}, {what}: {share}");
        }
        // Without recomputation only the allocator's share: no block's
        // transients were freed for the states.
        let mut kept = p.clone();
        kept.training.checkpointing = Checkpointing::None;
        let ratio = |q: &Plan| {
            let e = estimate(q).unwrap();
            e.peak.reserved.as_f64() / e.peak.allocated.as_f64() - 1.0
        };
        assert!(ratio(&kept) < 0.1, "{loss:?}: {}", ratio(&kept));
        assert!(ratio(&p) > 0.12, "{loss:?}: {}", ratio(&p));
    }
}

/// `p` (Llama-3.1-8B at 4 × 2048, without recomputation) checkpointed, and
/// one block's activations: what the checkpointed forward does not keep, per
/// block, and the input it does.
fn checkpointed_8b_and_its_block(p: &Plan) -> (Plan, f64) {
    let mut ck = p.clone();
    ck.training.checkpointing = Checkpointing::Full;
    let input = 4.0 * 2048.0 * 4096.0 * p.training.precision.activation_bytes();
    let block = (common::forward_activations(p) - common::forward_activations(&ck)) / 32.0 + input;
    (ck, block)
}

/// A checkpointed forward makes each block's tensors and frees them as it
/// goes; the segments they leave (split by the checkpoints kept in them) fit
/// none of the loss's logits-sized tensors, which get segments of their own,
/// and a frozen base makes nothing parameter-shaped to fill them: from the
/// end of the forward through the head's backward they sit idle, about what
/// a recomputed block makes again (replayed, calibration/allocator_replay.py:
/// 0.4–2.2 times it over sixteen families, median 0.9). Llama-3.1-8B with
/// LoRA on every linear, bf16, 4 × 2048, checkpointed: the reserve at the
/// loss is that block's activations, above the allocator's 7 % share; not
/// for a full fine-tune (its gradients and states fill such segments), not
/// with expandable segments, not on a pipeline stage without the loss.
#[test]
fn a_checkpointed_adapter_reserves_what_its_blocks_forward_left() {
    let base = || {
        let mut p = plan("llama-3.1-8b", Precision::Bf16, 4, 2048);
        p.training.finetune = lora_all();
        p
    };
    let (p, block) = checkpointed_8b_and_its_block(&base());
    let bwd = phase_counters(&p, Phase::Backward);
    let (allocated, reserved) = (bwd.allocated.as_f64(), bwd.reserved.as_f64());
    assert!(
        block > allocated * ALLOCATOR_RESERVE_FRACTION,
        "{block} B a block"
    );
    let mib = (1u64 << 20) as f64;
    assert!(
        (reserved - allocated - block).abs() < 2.0 * mib,
        "reserve {} MiB, block {} MiB",
        (reserved - allocated) / mib,
        block / mib
    );
    // Without the term: the allocator's share. A chunked loss's pieces fit
    // the idle segments; expandable segments map pages.
    let mut chunked = p.clone();
    chunked.training.loss = cost_model::plan::Loss::ChunkedFree;
    assert!(
        (share(&chunked) - ALLOCATOR_RESERVE_FRACTION).abs() < 1e-6,
        "{}",
        share(&chunked)
    );
    let mut expandable = p.clone();
    expandable.runtime.expandable_segments = true;
    assert!(share(&expandable) < 0.021, "{}", share(&expandable));
}

/// The Trainer drops the model's output before backward (`compute_loss`
/// returns the loss alone), but the allocator keeps the 16-bit logits'
/// segment, which the loss's fp32 gradients cannot use: the reserve at the
/// loss's backward is the idle blocks' and the logits' own (replayed:
/// Llama-3.1-8B LoRA 4 × 2048 checkpointed, +1.957 GiB; the H200's Trainer
/// run reserved 34.11 GiB over 29.36). Not where the logits are fp32 (the
/// gradients fit them) or under FSDP and ZeRO (start-up's freed segments
/// hold them).
#[test]
fn a_dropped_output_leaves_its_logits_segment_reserved() {
    let trainer = |precision: Precision| {
        let mut p = plan("llama-3.1-8b", precision, 4, 2048);
        p.set_framework(Framework::HfTrainer);
        p.training.finetune = lora_all();
        p
    };
    let mib = (1u64 << 20) as f64;
    // What a checkpointed block leaves idle, as in the test above.
    let reserve_over_block = |p: &Plan| {
        let (ck, block) = checkpointed_8b_and_its_block(p);
        let bwd = phase_counters(&ck, Phase::Backward);
        bwd.reserved.as_f64() - bwd.allocated.as_f64() - block
    };
    let logits = 4.0 * 2048.0 * 128256.0 * 2.0;
    let bf16 = reserve_over_block(&trainer(Precision::Bf16));
    assert!(
        (bf16 - logits).abs() < 2.0 * mib,
        "{} MiB over the block",
        bf16 / mib
    );
    // fp32 logits: the loss's gradients fit their segment.
    let fp32 = reserve_over_block(&trainer(Precision::Fp32));
    assert!(
        fp32.abs() < 0.1 * logits,
        "{} MiB over the block",
        fp32 / mib
    );
    // The plain loop holds them: allocated, not idle.
    let mut held = trainer(Precision::Bf16);
    held.set_framework(Framework::PlainPytorch);
    held.training.finetune = lora_all();
    let held = reserve_over_block(&held);
    assert!(
        held.abs() < 0.1 * logits,
        "{} MiB over the block",
        held / mib
    );
    // Under FSDP the logits are carved from start-up's segments.
    let mut fsdp = trainer(Precision::Bf16);
    fsdp.parallel.num_gpus = 2;
    fsdp.parallel.sharding = cost_model::plan::Sharding::FsdpFull;
    fsdp.training.checkpointing = Checkpointing::Full;
    let with_fsdp = phase_counters(&fsdp, Phase::Backward);
    let mut unsharded = fsdp.clone();
    unsharded.parallel.sharding = cost_model::plan::Sharding::Ddp;
    let with_ddp = phase_counters(&unsharded, Phase::Backward);
    let over = |c: cost_model::estimate::Counters| c.reserved.as_f64() - c.allocated.as_f64();
    assert!(
        over(with_ddp) - over(with_fsdp) > logits * 0.9,
        "{} {}",
        over(with_ddp) / mib,
        over(with_fsdp) / mib
    );
    // ZeRO-2 flattens only the adapters over a frozen base: nothing at
    // start-up the logits fit, the segment stays as under DDP.
    let mut zero2 = fsdp.clone();
    zero2.parallel.sharding = cost_model::plan::Sharding::Zero2;
    let with_zero2 = phase_counters(&zero2, Phase::Backward);
    assert!(
        over(with_zero2) - over(with_fsdp) > logits * 0.9,
        "{} {}",
        over(with_zero2) / mib,
        over(with_fsdp) / mib
    );
}

/// A loop that keeps the model's output (`out = model(...)`, dropped when the
/// next iteration rebinds it or, in calibration/measure.py, after the step)
/// holds its 16-bit logits beside the optimizer's step: Qwen2.5-7B in bf16,
/// 2 × 4096, checkpointed, peaked in its first step at weights, gradients,
/// states, AdamW's temporaries and 2.3 GiB of logits — 73.5 GiB, measured on
/// the H200 and replayed (calibration/allocator_replay.py) alike.
#[test]
fn a_loop_that_keeps_the_output_holds_its_logits_through_the_step() {
    let mut p = plan("qwen2.5-7b", Precision::Bf16, 2, 4096);
    p.training.checkpointing = Checkpointing::Full;
    let e = estimate(&p).unwrap();
    assert_eq!(
        phase(&e, Phase::Step).logits.as_f64(),
        (2.0f64 * 4096.0 * 152064.0 * 2.0).round()
    );
    let allocated = e.peak.allocated.as_f64() / GIB;
    assert!((allocated - 73.497).abs() / 73.497 < 0.005, "{allocated}");
    // The Trainer's `compute_loss` returns the loss alone.
    p.set_framework(Framework::HfTrainer);
    p.training.checkpointing = Checkpointing::Full;
    assert_eq!(phase(&estimate(&p).unwrap(), Phase::Step).logits.get(), 0);
}

/// `p` changed by `change` keeps the same forward activations under its
/// PyTorch release as under the current one.
fn release_keeps_nothing_more(p: &Plan, change: fn(&mut Plan)) {
    let mut old = p.clone();
    change(&mut old);
    let mut new = old.clone();
    new.training.pytorch = PytorchRelease::Current;
    assert_eq!(
        common::forward_activations(&old),
        common::forward_activations(&new),
        "{:?}",
        old.training.pytorch
    );
}

/// PyTorch 1.10 and earlier kept softmax's and log-softmax's input beside
/// their output (`SoftmaxBackward0::self_`, `LogSoftmaxBackward0::self_` in
/// the torch 1.10.2 wheel's generated `Functions.h`; gone in 1.11.0). An
/// eager block keeps one more score-sized tensor in the softmax's dtype —
/// the 0.375 GiB per sample the Trainer guide's V100 BERT-large runs held
/// over a replay on a newer PyTorch — and the standard loss keeps its upcast
/// logits into backward; with checkpointing only the recomputed block has it.
#[test]
fn pytorch_1_10_softmax_keeps_its_input() {
    let gib = |p: &Plan, f: fn(&cost_model::estimate::Breakdown) -> u64, ph: Phase| {
        f(&common::phase(&estimate(p).unwrap(), ph)) as f64 / GIB
    };
    let acts = |b: &cost_model::estimate::Breakdown| b.activations.get();
    let logits = |b: &cost_model::estimate::Breakdown| b.logits.get();
    for (precision, bytes) in [(Precision::Fp32, 4.0), (Precision::AmpFp16, 4.0)] {
        let mut p = plan("bert-large", precision, 4, 512);
        p.training.attention = Attention::Eager;
        p.training.dropout = true;
        let before = gib(&p, acts, Phase::Forward);
        p.training.pytorch = PytorchRelease::V1_10OrOlder;
        let after = gib(&p, acts, Phase::Forward);
        // 24 blocks × 4 × 16 × 512² scores.
        let want = 24.0 * 4.0 * 16.0 * 512.0 * 512.0 * bytes / GIB;
        assert!(
            ((after - before) - want).abs() < 1e-6,
            "{precision:?}: {:.4} GiB more, want {want:.4}",
            after - before
        );
        // Nothing more kept by flash attention (no scores) or once checkpointed
        // (the blocks' inputs are all that forward keeps).
        release_keeps_nothing_more(&p, |q| q.training.attention = Attention::Flash);
        release_keeps_nothing_more(&p, |q| q.training.checkpointing = Checkpointing::Full);
    }
    // A causal LM's loss: the fp32 copy of its 16-bit logits stays into
    // backward (4 bytes a logit), where PyTorch ≥ 1.11 drops it as the loss
    // returns.
    let mut p = plan("gpt2", Precision::Bf16, 4, 1024);
    let before = gib(&p, logits, Phase::Backward);
    p.training.pytorch = PytorchRelease::V1_10OrOlder;
    let after = gib(&p, logits, Phase::Backward);
    let want = 4.0 * 1024.0 * 50257.0 * 4.0 / GIB;
    assert!(
        ((after - before) - want).abs() < 0.01,
        "loss: {:.3} GiB more, want {want:.3}",
        after - before
    );
}

/// PyTorch 1.13 to 2.1 kept `mean`'s input (`MeanBackward1::self_` in the
/// 1.13.1, 2.0.1 and 2.1.2 wheels; `self_sym_numel` from 2.2.2): an RMSNorm
/// written as tensor ops keeps the fp32 square of its input, 4 bytes a hidden
/// element per norm (saved-tensor hooks on torch 2.1.2: `LlamaRMSNorm` over
/// bf16 keeps 8 bytes an element, on 2.15 4). Fused norms, LayerNorms and a
/// compiled model keep nothing more; neither do other releases.
#[test]
fn pytorch_2_1_mean_keeps_the_rmsnorms_square() {
    let acts = |p: &Plan| common::forward_activations(p) / GIB;
    let mut p = plan("llama-3.2-1b", Precision::Bf16, 4, 2048);
    let current = acts(&p);
    p.training.pytorch = PytorchRelease::V1_13To2_1;
    // Two norms in each of 16 blocks, 4 × 2048 tokens of 2048 elements.
    let want = 2.0 * 16.0 * 4.0 * 2048.0 * 2048.0 * 4.0 / GIB;
    assert!(
        ((acts(&p) - current) - want).abs() < 1e-6,
        "{:.4} GiB more, want {want:.4}",
        acts(&p) - current
    );
    for release in [PytorchRelease::V1_11To1_12, PytorchRelease::V1_10OrOlder] {
        let mut other = p.clone();
        other.training.pytorch = release;
        assert_eq!(acts(&other), current, "{release:?}");
    }
    release_keeps_nothing_more(&p, |q| q.training.compile = true);
    release_keeps_nothing_more(&p, |q| q.training.fused_kernels = true);
    release_keeps_nothing_more(&p, |q| q.model.norm = Norm::LayerNorm);
    assert_eq!(PytorchRelease::of(2, 1), PytorchRelease::V1_13To2_1);
    assert_eq!(PytorchRelease::of(1, 13), PytorchRelease::V1_13To2_1);
    assert_eq!(PytorchRelease::of(2, 2), PytorchRelease::Current);
    assert_eq!(PytorchRelease::of(1, 12), PytorchRelease::V1_11To1_12);
    assert_eq!(PytorchRelease::of(1, 10), PytorchRelease::V1_10OrOlder);
}

// ----- the 2026-12-04 H200 run (calibration/h200-2026-12-04, sets 7 and 8) -----

/// Each row of `run`'s file: its predicted allocated peak within `tol`
/// (relative) of its measured GiB.
fn rows_within(run: &str, rows: &[(&str, f64)], tol: f64) {
    for &(id, measured) in rows {
        let got = allocated_gib(&measured_row(run, id));
        assert!(
            (got / measured - 1.0).abs() < tol,
            "{id}: {got:.3} GiB, measured {measured}"
        );
    }
}

/// Compiled and checkpointed, a transformers model whose LM head is tied to
/// its embedding peaks inside the blocks' backward with the loss's two
/// logit-sized buffers and the held logits still alive (the allocator's
/// history at the peak, peak-*.txt: three 4008 MiB buffers of 4 × 4096 ×
/// 128,256); with an untied head it peaks at the head's backward, the three
/// beside the new head gradient. Measured allocated: 23.284, 37.866 and
/// 21.860 GiB (before the term: −14.8, −10.5 and −2.6 %).
#[test]
fn a_compiled_tied_head_keeps_the_loss_logits_through_the_blocks_backward() {
    rows_within(
        "h200-2026-12-04",
        &[
            ("l1b-bf16-compile-ckpt-b4-s4096", 23.284),
            ("l3b-bf16-compile-ckpt-b4-s4096", 37.866),
            ("l1bu-bf16-compile-ckpt-b4-s4096", 21.860),
        ],
        0.02,
    );
    // Where each peaks: tied, at a block's backward (gradients made) with
    // 6 bytes a logit still alive; untied, at the head's backward (its
    // gradient alone made) with the same 6 bytes; eager, the blocks' moments
    // hold no logits, so the tied run peaks at the loss's backward.
    let logits = 4.0 * 4096.0 * 128_256.0;
    let backward = |p: &Plan| phase(&estimate(p).unwrap(), Phase::Backward);
    let tied = measured_row("h200-2026-12-04", "l1b-bf16-compile-ckpt-b4-s4096");
    let b = backward(&tied);
    assert!(b.logits.get() as f64 >= 6.0 * logits, "{b:?}");
    assert!(b.gradients.get() as f64 > 128_256.0 * 2048.0 * 2.0, "{b:?}");
    let untied = measured_row("h200-2026-12-04", "l1bu-bf16-compile-ckpt-b4-s4096");
    let b = backward(&untied);
    assert!(b.logits.get() as f64 >= 6.0 * logits, "{b:?}");
    assert_eq!(b.gradients.get(), 128_256 * 2048 * 2, "{b:?}");
    let mut eager = tied.clone();
    eager.training.compile = false;
    assert_eq!(backward(&eager).gradients.get(), 0);
}

/// FSDP2 shards and gathers on one rank too (`fully_shard` copies each unit
/// out of its all-gather into new unsharded parameters), where FSDP1 runs
/// `NO_SHARD`: on the H200 the one-rank FSDP2 runs held their root unit's
/// bf16 copy (Llama-3.2-1B's embedding 0.49 GiB, -3B's 0.73, Llama-3.1-8B's
/// embedding and head 1.96) and, without resharding after forward, every
/// block's (1.24 B parameters: +1.81 GiB). Before the term −1.2, −1.1,
/// −5.7 and −5.3 %.
#[test]
fn fsdp2_gathers_its_units_on_one_rank() {
    rows_within(
        "h200-2026-12-04",
        &[
            ("fsdp2-l8b-lora16all-ckpt-b4-s2048", 33.271),
            ("fsdp2nors-l1b-ampbf16-b4-s2048", 43.268),
        ],
        0.03,
    );
    // FSDP1 (the Trainer's, Accelerate's) runs NO_SHARD on one rank: nothing gathered.
    let p = measured_row("h200-2026-12-04", "fsdp2nors-l1b-ampbf16-b4-s2048");
    let comm = |p: &Plan| {
        phase(&estimate(p).unwrap(), Phase::Forward)
            .comm_buffers
            .get()
    };
    assert!(
        comm(&p) as f64 >= 1_235_814_400.0 * 2.0,
        "the stage gathered in bf16"
    );
    let mut fsdp1 = p.clone();
    fsdp1.set_framework(Framework::HfTrainer);
    fsdp1.parallel.sharding = Sharding::FsdpGradOp;
    assert_eq!(comm(&fsdp1), 0);
}

// ----- DeepSpeed on the H200 (calibration/h200-2026-12-04-deepspeed, set 10) -----

const DS_RUN: &str = "h200-2026-12-04-deepspeed";

/// 40 of Llama-2-70B's blocks with LoRA r8 on every linear, 8 × 2048 tokens,
/// full checkpointing, ZeRO-3 on one rank with Accelerate's plugin config and
/// `bf16`, written as the Trainer's `bf16=True` is (amp-bf16).
const DS_70B_BLOCKS: &str = "ds3-l70b40-lora8all-ckpt-b8-s2048";

/// DeepSpeed runs its own 16-bit model without `torch.autocast` (and
/// Accelerate turns native AMP off under it), so a ZeRO run written amp-bf16
/// is estimated as written bf16. The 70B blocks' recomputed forward kept
/// PEFT's fp32 cast of each adapter's input (the down projection's: 1792
/// MiB, 4 bytes an element), which autocast would have made a 16-bit cast.
/// Allocated 91.60 GiB measured: −4.55 % before this session's three
/// DeepSpeed terms, −1.5 % with them.
#[test]
fn deepspeed_runs_its_16_bit_model_without_autocast() {
    let p = measured_row(DS_RUN, DS_70B_BLOCKS);
    assert_eq!(p.training.precision, Precision::AmpBf16);
    let mut pure = p.clone();
    pure.training.precision = Precision::Bf16;
    assert_eq!(estimate(&p).unwrap().peak, estimate(&pure).unwrap().peak);
    // Without ZeRO, autocast runs: amp-bf16 and bf16 differ.
    let (mut plain, mut plain_pure) = (p.clone(), pure.clone());
    plain.parallel.sharding = Sharding::None;
    plain_pure.parallel.sharding = Sharding::None;
    assert_ne!(
        estimate(&plain).unwrap().peak,
        estimate(&plain_pure).unwrap().peak
    );
    rows_within(DS_RUN, &[(DS_70B_BLOCKS, 91.599)], 0.02);
}

/// ZeRO-3's IPG bucket holds `reduce_bucket_size` values of the engine's
/// communication dtype, not the trainable parameters': after
/// `deepspeed.initialize` the 70B blocks' run held 67,730 MiB — the bf16 base
/// and fp32 adapters (66,478), 5e8 bf16 values (954), the adapters' master
/// and gradient partition — and BLOOMZ-7B1 in fp32 (its parameters on the
/// host) 1,907 MiB, 5e8 fp32 values. With the bucket in the adapters' fp32
/// the first would have been 68,978 (+1.8 %).
#[test]
fn zero3_buckets_are_in_the_communication_dtype() {
    let init = |id: &str| phase(&estimate(&measured_row(DS_RUN, id)).unwrap(), Phase::Init);
    let blocks = init(DS_70B_BLOCKS);
    assert_eq!(blocks.comm_buffers.get(), 1_000_000_000);
    let after_initialize = (1u64 << 20) as f64 * 67_730.0;
    let got = blocks.allocated().get() as f64;
    assert!(
        (got / after_initialize - 1.0).abs() < 0.01,
        "{:.0} MiB after initialize, measured 67,730",
        got / (1u64 << 20) as f64
    );
    let bloomz = init("ds3off-bloomz7b1-fp32-lora8qkv-b8-s64");
    assert_eq!(bloomz.comm_buffers.get(), 2_000_000_000);
}

/// ZeRO-3 replaces `torch.nn.functional.linear` with its own autograd
/// function, which saves its input whatever trains: a frozen 16-bit base's
/// q/k/v and gate/up inputs (the norms' outputs) and its down projection's
/// (the MLP product) stay alive, as in the 70B blocks' peak (2 × 256 + 896
/// MiB a block). Without recomputation every block keeps them; a 4-bit base
/// multiplies in bitsandbytes and keeps nothing more.
#[test]
fn zero3s_linear_keeps_a_frozen_bases_input() {
    let mut p = plan("llama-3.1-8b", Precision::Bf16, 4, 2048);
    p.training.finetune = lora16_all();
    p.parallel.sharding = Sharding::Zero2;
    let acts = |p: &Plan| {
        phase(&estimate(p).unwrap(), Phase::Forward)
            .activations
            .get() as f64
    };
    let mut z3 = p.clone();
    z3.parallel.sharding = Sharding::Zero3;
    let (h, f, layers, tokens) = (4096.0, 14336.0, 32.0, 4.0 * 2048.0);
    let kept = layers * tokens * 2.0 * (h + h + f);
    assert!(
        (acts(&z3) - acts(&p) - kept).abs() < 1.0,
        "{} more, expected {kept}",
        acts(&z3) - acts(&p)
    );
    let (mut q2, mut q3) = (p.clone(), z3.clone());
    for q in [&mut q2, &mut q3] {
        if let Finetune::Lora { base_bits, .. } = &mut q.training.finetune {
            *base_bits = 4;
        }
    }
    assert_eq!(acts(&q3), acts(&q2));
}

/// ZeRO-3 fetches parameters on a stream of its own, and the caching
/// allocator serves each stream from its own blocks: what the forward's
/// fetches reserved (with parameters on the CPU, the head's partition copied
/// in beside its gather) stays reserved beside the backward's logits and
/// gradients on the default stream. BLOOMZ-7B1 in fp32 with LoRA, its
/// parameters and optimizer on the CPU (public peft_readme_raft-145's
/// configuration): 8,354 MiB of segments on the fetch stream beside 7,864 on
/// the default stream at the reserved peak; reserved 15.86 GiB and nvidia-smi
/// 17.20 GiB measured, −7.3 and −10.1 % before the pool.
#[test]
fn zero3s_fetch_stream_keeps_its_reserve() {
    let p = measured_row(DS_RUN, "ds3off-bloomz7b1-fp32-lora8qkv-b8-s64");
    let e = estimate(&p).unwrap();
    let gib = |b: cost_model::units::Bytes| b.get() as f64 / GIB;
    let (reserved, used) = (gib(e.peak.reserved), gib(e.peak.device_used));
    assert!(
        (reserved / 15.855 - 1.0).abs() < 0.05,
        "reserved {reserved:.3} GiB"
    );
    assert!(
        (used / 17.198 - 1.0).abs() < 0.03,
        "nvidia-smi {used:.3} GiB"
    );
    // In backward, beside fewer fetched parameters, the pool's rest is reserved.
    let (forward, backward) = (phase(&e, Phase::Forward), phase(&e, Phase::Backward));
    assert!(
        backward.allocator_reserve.get()
            >= forward.comm_buffers.get() - backward.comm_buffers.get(),
        "{backward:?}"
    );
}

/// DeepSpeed's ZeRO-1/2 optimizer leaves segments cached as it is built: the
/// parameters' own tensors once they are flattened on the GPU (0.19 on), the
/// 16-bit clone of the partition made for the fp32 master (0.18.3 on, with
/// the master on the host). Llama-3.2-3B fully fine-tuned under ZeRO-2 with
/// its optimizer on the host, checkpointed, 4 × 4096 (the H200 run,
/// calibration/h200-2026-12-04-deepspeed): the loss's 8,016 MiB fp32
/// tensors outgrow every such segment and map their own beside them, so the
/// backward reserves the start-up segments on top — the parameters' 6,128
/// MiB more under 0.19 than under 0.18.3, where the clone's 6,128 MiB still
/// is; under 0.18.2 nothing is cached and the allocator's usual share
/// stands. The reduction stream's fp64 copy of the largest gradient (the
/// embedding's 394 M elements, 3,006 MiB) comes with `overlap_comm`, which the Trainer's
/// documented configs set and ms-swift's do not.
#[test]
fn zero2s_start_up_segments_stay_reserved_by_release() {
    use cost_model::plan::DeepspeedRelease;
    let base = measured_row("h200-2026-12-04-deepspeed", "ds2off-l3b-bf16-ckpt-b4-s4096");
    let at = |release: DeepspeedRelease, fw: Option<Framework>| {
        let mut p = base.clone();
        p.parallel.deepspeed = release;
        if let Some(fw) = fw {
            let training = p.training.clone();
            p.set_framework(fw);
            p.training = training;
        }
        phase_counters(&p, Phase::Backward)
    };
    let mib = (1u64 << 20) as f64;
    let params = preset("llama-3.2-3b").unwrap().spec().params() as f64 * 2.0;
    let current = at(DeepspeedRelease::Current, None);
    let v18_3 = at(DeepspeedRelease::V0_18_3To0_18, None);
    let v18_2 = at(DeepspeedRelease::V0_18_2OrOlder, None);
    let gap = current.reserved.as_f64() - v18_3.reserved.as_f64();
    assert!(
        (gap - params).abs() < 2.0 * mib,
        "0.19 over 0.18.3: {} MiB, the parameters {} MiB",
        gap / mib,
        params / mib
    );
    assert_eq!(current.allocated, v18_2.allocated);
    let clone = v18_3.reserved.as_f64() - v18_2.reserved.as_f64();
    // The clone (as many bytes as the parameters on one rank) and the
    // dropped 16-bit logits (4,008 MiB) beside the loss's tensors, over the
    // allocator's share of the rest.
    let logits = 4.0 * 4096.0 * 128256.0 * 2.0;
    assert!(
        clone > 0.75 * params && clone < params + logits,
        "0.18.3 over 0.18.2: {} MiB",
        clone / mib
    );
    // Without `overlap_comm` the copies are made in the default stream's
    // freed blocks.
    let swift = at(DeepspeedRelease::Current, Some(Framework::MsSwift));
    let copies = 128256.0 * 3072.0 * 8.0; // the fp64 norm copy
    let pool = current.reserved.as_f64() - swift.reserved.as_f64();
    assert!(
        (pool - copies).abs() < 2.0 * mib,
        "the reduction stream's pool {} MiB",
        pool / mib
    );
}

/// ZeRO-3 with everything on the host (the H200's Llama-3.2-3B full
/// fine-tune, calibration/h200-2026-12-04-deepspeed): its reduce stream keeps,
/// for the gradients in backward order, the fp64 norm chunk and the GPU copy
/// of the host buffer — a 25 M-element MLP matrix's (192 + 48 MiB), then the
/// tied embedding's, finished last (1,907 MiB for its first 250 M elements,
/// 752 for the copy): 2,899 MiB, 2,902 measured; and the logits the Trainer's
/// loop drops (4,008 MiB) keep their segment, `zero.Init` having left too
/// little at start-up to carve them from — not with the parameters on the
/// GPU; the pool not without `overlap_comm` (ms-swift's configs).
#[test]
fn zero3_on_the_host_reserves_its_reduce_stream_and_the_dropped_logits() {
    let base = measured_row("h200-2026-12-04-deepspeed", "ds3off-l3b-bf16-ckpt-b4-s4096");
    let over = |p: &Plan| {
        let c = phase_counters(p, Phase::Backward);
        c.reserved.as_f64() - c.allocated.as_f64()
    };
    let mib = (1u64 << 20) as f64;
    let (h, ffn, vocab) = (3072.0, 8192.0, 128256.0);
    let pool = (8.0 + 2.0) * h * ffn + 8.0 * 2.5e8 + 2.0 * vocab * h;
    assert!((pool / mib - 2898.9).abs() < 0.1, "{}", pool / mib);
    let logits = 4.0 * 4096.0 * vocab * 2.0;
    let trainer = over(&base);
    assert!(
        trainer >= pool + logits - mib,
        "{} MiB over the allocated",
        trainer / mib
    );
    let mut swift = base.clone();
    let training = swift.training.clone();
    swift.set_framework(Framework::MsSwift);
    swift.training = training;
    let without_pool = over(&swift);
    assert!(
        (trainer - without_pool - pool).abs() < 2.0 * mib,
        "{} MiB",
        (trainer - without_pool) / mib
    );
    // The parameters on the GPU: start-up's segments hold the logits; the
    // allocator's share of the rest over the pool.
    let mut params_on_gpu = base.clone();
    params_on_gpu.parallel.offload.params = cost_model::plan::OffloadDevice::None;
    let share = over(&params_on_gpu) - pool;
    assert!(share < 0.75 * logits, "{} MiB", share / mib);
}

#[test]
fn llama4_runs_every_expert_under_transformers_only() {
    // transformers' `Llama4TextMoe` runs all 16 of Scout's experts on every
    // token (replayed: −20.7 % counted as top-1); torchtitan's MoE runs the
    // chosen one (grouped GEMMs).
    let acts = |fw: Framework| {
        let mut p = plan("llama-4-scout-17b-16e", Precision::Bf16, 1, 2048);
        p.set_framework(fw);
        p.training.checkpointing = Checkpointing::None;
        phase(&estimate(&p).unwrap(), Phase::Forward)
            .activations
            .get() as f64
    };
    let (dense, sparse) = (acts(Framework::PlainPytorch), acts(Framework::Torchtitan));
    assert!(
        dense > 3.0 * sparse,
        "{dense} under transformers, {sparse} under torchtitan"
    );
    let mut m = preset("llama-4-scout-17b-16e").unwrap().spec();
    assert!(m.dense_experts);
    m.dense_experts = false;
    let mut p = plan("llama-4-scout-17b-16e", Precision::Bf16, 1, 2048);
    p.model = m;
    let top1 = phase(&estimate(&p).unwrap(), Phase::Forward)
        .activations
        .get() as f64;
    assert!(dense > 3.0 * top1, "{dense} dense, {top1} top-1");
}

/// Peak allocated bytes per token per hidden unit that `model` as a
/// two-label classifier adds from 8 × 2048 to 16 × 2048 tokens, PEFT LoRA r16
/// (dropout 0.05) on `targets`, fully checkpointed.
fn classifier_lora_slope(model: &str, precision: Precision, targets: LoraTargets) -> f64 {
    classifier_lora_growth(model, precision, targets, Checkpointing::Full, 8)
}

/// The same from `mb` to 2·`mb` sequences of 2048 tokens, under `ckpt`.
fn classifier_lora_growth(
    model: &str,
    precision: Precision,
    targets: LoraTargets,
    ckpt: Checkpointing,
    mb: u32,
) -> f64 {
    growth_per_token(&classifier_lora_plan(model, precision, targets, ckpt, mb))
}

/// `model` as a two-label classifier under PEFT LoRA r16 (dropout 0.05) on
/// `targets`, `mb` sequences of 2048 tokens, under `ckpt`.
fn classifier_lora_plan(
    model: &str,
    precision: Precision,
    targets: LoraTargets,
    ckpt: Checkpointing,
    mb: u32,
) -> Plan {
    let mut p = plan(model, precision, mb, 2048);
    p.model.head = cost_model::model::ModelHead::Classifier;
    p.set_framework(Framework::Peft);
    p.training.checkpointing = ckpt;
    p.training.finetune = Finetune::Lora {
        rank: 16,
        targets,
        base_bits: if precision == Precision::Bf16 { 16 } else { 32 },
        dropout: true,
        variant: LoraVariant::Lora,
    };
    p
}

/// Peak allocated bytes per token per hidden unit that `p` adds when its
/// micro-batch doubles.
fn growth_per_token(p: &Plan) -> f64 {
    let at = |p: &Plan| estimate(p).unwrap().peak.allocated.get() as f64;
    let mut big = p.clone();
    big.training.micro_batch = 2 * p.training.micro_batch;
    let tokens = p.training.micro_batch as f64 * p.training.seq_len as f64;
    (at(&big) - at(p)) / (tokens * p.model.hidden as f64)
}

#[test]
fn an_adapted_mlp_ends_the_forward_of_a_classifier() {
    // calibration/allocator_replay.py --classifiers: Llama-3.2-1B as a
    // classifier, PEFT LoRA r16 on every linear, bf16, no checkpointing; the
    // allocated peak at 4 and 8 × 2048 tokens (24.860 and 47.228 GiB): every
    // block's saved tensors and, on top, the last block's down adapter in
    // flight (the product, its fp32 cast, the base output, `lora_B`'s output
    // and the scaled one, the norm's output and the residual) — no logits
    // above it. 1431.6 bytes per token per hidden unit; 1416.5 without the
    // adapter's moment (its row −0.95 %).
    let got = classifier_lora_growth(
        "llama-3.2-1b",
        Precision::Bf16,
        LoraTargets::ALL_LINEAR,
        Checkpointing::None,
        4,
    );
    assert!(
        (got / 1431.6 - 1.0).abs() < 0.005,
        "{got:.1} bytes per token per hidden unit, replayed 1431.6"
    );
}

#[test]
fn a_recomputed_adapted_mlp_peaks_inside_its_blocks_forward() {
    // calibration/allocator_replay.py --classifiers (torch 2.15, transformers
    // 5.25, peft 0.21.2): sequence classifiers, so no logits outgrow a
    // block; the allocated peak at 8 and 16 × 2048 tokens. With the MLP
    // adapted, the peak is inside the top block's recompute, not its
    // backward: for Llama-3.2-1B at the down adapter (the MLP product, PEFT's
    // fp32 cast of it — under autocast also the fp32 dropout output — the
    // base output, the norm's output and the residual beside the block's
    // saved tensors), 157.29 and 181.18 bytes per token per hidden unit (bf16;
    // bf16 autocast over fp32 weights), where the block and its MLP
    // backward's gradients give 139.3 in bf16 (the autocast row at
    // 8 × 2048: −9.9 % allocated); for Phi-3-mini at its fused gate_up
    // adapter (the 2·MLP-wide base output, `lora_B`'s fp32 output and the
    // scaled one), 168.44, where the down adapter's moment gives 154.5. With
    // q and v alone, the MLP backward: three MLP-wide gradients beside the
    // block, its frozen down projection having kept nothing (105.13).
    let qv = LoraTargets {
        q: true,
        v: true,
        ..LoraTargets::default()
    };
    for (model, precision, targets, counted) in [
        (
            "llama-3.2-1b",
            Precision::Bf16,
            LoraTargets::ALL_LINEAR,
            157.29,
        ),
        (
            "llama-3.2-1b",
            Precision::AmpBf16,
            LoraTargets::ALL_LINEAR,
            181.18,
        ),
        (
            "phi-3-mini",
            Precision::Bf16,
            LoraTargets::ALL_LINEAR,
            168.44,
        ),
        ("llama-3.2-1b", Precision::Bf16, qv, 105.13),
    ] {
        let got = classifier_lora_slope(model, precision, targets);
        assert!(
            (got / counted - 1.0).abs() < 0.03,
            "{model} {precision:?}: {got:.2} bytes per token per hidden unit, replayed {counted}"
        );
    }
}

#[test]
fn a_recomputed_blocks_mlp_and_attention_backward_are_two_moments() {
    // calibration/allocator_replay.py --classifiers: Gemma-2B as a two-label
    // classifier under eager attention, PEFT LoRA r16 on q and v, bf16, full
    // checkpointing, at 8 and 16 × 2048 tokens (11.255 and 17.758 GiB
    // allocated): the peak is the top block's MLP backward — the recomputed
    // block with its MLP's three gradients, no score gradient alive; the
    // attention's backward comes once the MLP's saved tensors are released.
    // 208.1 bytes per token per hidden unit; counting the MLP's gradients and
    // the scores' together gave 13 % more at 8 × 2048.
    let mut p = classifier_lora_plan(
        "gemma-2b",
        Precision::Bf16,
        LoraTargets::QV,
        Checkpointing::Full,
        8,
    );
    p.training.attention = Attention::Eager;
    let slope = growth_per_token(&p);
    assert!(
        (slope / 208.1 - 1.0).abs() < 0.03,
        "{slope:.1} bytes per token per hidden unit"
    );
    // SDPA's math kernel (fp32 activations with grouped k/v): the measured
    // QLoRA Mistral-7B (H200, set 5; 11.367 GiB allocated) held one fp32
    // score tensor more at its backward's peak than its replay shows.
    let row = measured_row("h200-2026-11-30", "qlora-mistral7b-r16qv-ckpt-b2-s2048");
    let got = allocated_gib(&row);
    assert!((got / 11.367 - 1.0).abs() < 0.03, "{got:.3} GiB");
}

/// One block's forward activations per token per hidden unit (the
/// difference between the model with one block more and as it is).
fn per_token_one_block(p: &Plan) -> f64 {
    let acts = |layers: u32| {
        let mut q = p.clone();
        q.model.layers = layers;
        phase(&estimate(&q).unwrap(), Phase::Forward)
            .activations
            .get() as f64
    };
    let l = p.model.layers;
    let tokens = (p.training.micro_batch * p.training.seq_len) as f64;
    (acts(l + 1) - acts(l)) / (tokens * p.model.hidden as f64)
}

/// A bf16 full fine-tune of Llama-3.1-8B, one sequence of 1,024 tokens, over
/// `tp` tensor-parallel ranks and nothing else.
fn tp_block_plan(fw: Framework, tp: u32, sp: bool, ckpt: Checkpointing) -> Plan {
    let mut p = Plan::default();
    p.model = by_hub_id("meta-llama/Llama-3.1-8B").unwrap().spec();
    p.set_framework(fw);
    p.training.precision = Precision::Bf16;
    p.training.micro_batch = 1;
    p.training.seq_len = 1024;
    p.training.checkpointing = ckpt;
    p.training.dropout = false;
    p.training.finetune = Finetune::Full;
    p.parallel.num_gpus = tp;
    p.parallel.tp = tp;
    p.parallel.sequence_parallel = sp;
    p.parallel.sharding = Sharding::None;
    p
}

#[test]
fn sequence_parallel_blocks_keep_the_gathered_input_under_dtensor_tp_and_the_shard_under_megatron()
{
    // calibration/saved_tensors.py --tp (torch 2.15, a fake process group, a
    // torchtitan Llama block, bf16): the block keeps 56.07·hidden bytes per
    // token unsplit and 30.04, 17.02, 10.51 under TP 2, 4, 8 with sequence
    // parallelism — the unsplit count over t plus 2.00, 3.00, 3.50: the
    // gathered 16-bit inputs of attention and the MLP (4·hidden) stay whole.
    // Megatron-LM keeps the local shard (Korthikanti et al.: every tensor
    // of the block split by t).
    let counted = [(2, 30.04, 56.07), (4, 17.02, 56.07), (8, 10.51, 56.07)];
    for fw in [
        Framework::Torchtitan,
        Framework::PlainPytorch,
        Framework::Megatron,
    ] {
        let plan = |tp: u32| tp_block_plan(fw, tp, tp > 1, Checkpointing::None);
        let whole = per_token_one_block(&plan(1));
        for (tp, split, unsplit) in counted {
            let excess = per_token_one_block(&plan(tp)) - whole / tp as f64;
            let want = if fw == Framework::Megatron {
                0.0
            } else {
                split - unsplit / tp as f64
            };
            assert!(
                (excess - want).abs() < 0.1,
                "{fw:?} TP {tp}: {excess:.2}·hidden per token beyond the split block, counted {want:.2}"
            );
        }
    }
}

#[test]
fn torchtitans_lm_head_keeps_the_gathered_final_norm_output_under_sequence_parallelism() {
    // calibration/saved_tensors.py --tp: torchtitan's final norm and LM head
    // keep 10.00·hidden bytes per token unsplit and 4.00 under TP 4 with
    // sequence parallelism: the head's 16-bit input (2.00) whole, the rest
    // split. Its loss-parallel logits are split by t, so what the last stage's
    // forward holds of the logits and loss exceeds a quarter of the unsplit
    // by the head input's other three quarters.
    let logits = |tp: u32| {
        let mut p = tp_block_plan(Framework::Torchtitan, tp, tp > 1, Checkpointing::None);
        p.model.vocab = 8192;
        phase(&estimate(&p).unwrap(), Phase::Forward).logits.get() as f64
    };
    let tokens_hidden = 1024.0 * 4096.0;
    let excess = (logits(4) - logits(1) / 4.0) / tokens_hidden;
    assert!(
        (excess - 2.0 * 0.75).abs() < 0.01,
        "{excess:.3}·hidden per token beyond a quarter of the unsplit head, counted 1.50"
    );
}

#[test]
fn torchtitans_per_op_checkpointing_keeps_row_parallel_partial_sums_whole_and_their_reduce_scatter()
{
    // calibration/saved_tensors.py --tp: torchtitan 0.3.0's per-op policy over
    // its TP plan keeps a block of hidden 1024, 16 heads over 8, MLP 3584 at
    // 14.04·hidden bytes per token unsplit, 6.54 under TP 4, 6.04 under TP 4
    // with sequence parallelism — with separate q, k and v projections, as
    // 0.1 to 0.2.2 build them. The CPU's SDPA is not on the save list;
    // CUDA's flash kernel's output (2·hidden over t) is, and is added here.
    let counted = [
        (1, false, 14.04 + 2.0),
        (4, false, 6.54 + 0.5),
        (4, true, 6.04 + 0.5),
    ];
    // 0.3.0's one fused wqkv (`FusedQKVLinear`, colwise under TP) is the
    // first matmul, kept whole: 15.04 unsplit, 6.29 under TP 4 with sequence
    // parallelism (`--tp`, "0.3.0 fused qkv").
    let fused = [(1, false, 15.04 + 2.0), (4, true, 6.29 + 0.5)];
    let runs = counted
        .iter()
        .map(|&c| (TorchtitanRelease::V0_2_2, c))
        .chain(fused.iter().map(|&c| (TorchtitanRelease::Current, c)));
    for (release, (tp, sp, want)) in runs {
        let mut p = tp_block_plan(Framework::Torchtitan, tp, sp, Checkpointing::OpSelective);
        p.training.torchtitan = release;
        p.model.hidden = 1024;
        p.model.heads = 16;
        p.model.kv_heads = 8;
        p.model.head_dim = 64;
        p.model.ffn = 3584;
        let got = per_token_one_block(&p);
        assert!(
            (got - want).abs() < 0.1,
            "{release:?} TP {tp} SP {sp}: model {got:.2}·hidden bytes per token per block, counted {want:.2}"
        );
    }
}

/// A bf16 full fine-tune of Qwen3-30B-A3B's shape (128 experts of FFN 768,
/// no shared expert) under `fw`, one sequence of 512 tokens on one GPU,
/// `k` experts per token.
fn moe_block_plan(fw: Framework, k: u32, ckpt: Checkpointing) -> Plan {
    let mut p = tp_block_plan(fw, 1, false, ckpt);
    p.model = preset("qwen3-30b-a3b").unwrap().spec();
    p.model.experts_per_token = k;
    p.training.seq_len = 512;
    p
}

#[test]
fn moe_layers_keep_what_their_framework_scores_routed_tokens_on() {
    // calibration/saved_tensors.py --moe (torchtitan 0.3.0's Qwen3 MoE layer
    // on the CPU, hidden 256, FFN 768 = 3·hidden, bf16): each routed token
    // kept 30.11·hidden bytes without checkpointing — the experts' 8·FFN,
    // the routed input (2) and the fp32 copy scaled by its score (4), with
    // two int64 indices (0.06). transformers keeps the 16-bit expert output
    // instead: 2 where torchtitan keeps 4.
    let per_routed = |fw: Framework| {
        let block = |k: u32| {
            let mut p = moe_block_plan(fw, k, Checkpointing::None);
            p.model.ffn = 3 * p.model.hidden;
            per_token_one_block(&p)
        };
        (block(8) - block(4)) / 4.0
    };
    let titan = per_routed(Framework::Torchtitan);
    assert!((titan - 30.11).abs() < 0.2, "torchtitan: {titan:.3}");
    // torchtitan 0.3's router gate runs under fp32 autocast: it keeps an
    // fp32 copy of its input (4·hidden bytes a token) where 0.2.2's kept the
    // 16-bit input (2), once per token, not per routed one.
    let gate = |release: TorchtitanRelease| {
        let mut p = moe_block_plan(Framework::Torchtitan, 8, Checkpointing::None);
        p.training.torchtitan = release;
        per_token_one_block(&p)
    };
    let fp32_copy = gate(TorchtitanRelease::Current) - gate(TorchtitanRelease::V0_2_2);
    assert!((fp32_copy - 2.0).abs() < 1e-9, "{fp32_copy}");
    for fw in [Framework::HfTrainer, Framework::PlainPytorch] {
        let hf = per_routed(fw);
        assert!((hf - 28.0).abs() < 0.01, "{fw:?}: {hf:.3}");
    }
    // Megatron-Core weights the experts' fused SwiGLU by the probabilities
    // (`weighted_bias_swiglu_impl`, `per_token_scale`: megatron-core 0.16.1),
    // so a routed token keeps its input (2), the fc1 output (2 × 2·FFN) and
    // the weighted fc2 input (2·FFN), and no expert output: 2 + 6·3.
    let megatron = per_routed(Framework::Megatron);
    assert!((megatron - 20.0).abs() < 0.01, "Megatron-LM: {megatron:.3}");
}

#[test]
fn torchtitans_per_op_checkpointing_recomputes_the_routed_experts_and_keeps_the_routing() {
    // calibration/saved_tensors.py --moe: under torchtitan's per-op policy
    // its MoE layers keep their input, the router gate's output and the
    // top-k (2.97·hidden bytes per token for Qwen3's 64 experts, top 8, at
    // hidden 256), and with shared experts their up projection's output too
    // (6.33 for DeepSeek-V3's two shared experts of 256): `_grouped_mm` is
    // not on the save list, so no routed expert's output is kept.
    let op = |k: u32, ffn: u32, shared: u32| {
        let mut p = moe_block_plan(Framework::Torchtitan, k, Checkpointing::OpSelective);
        p.model.ffn = ffn;
        p.model.shared_experts = shared;
        per_token_one_block(&p)
    };
    let h = 2048.0;
    let base = op(8, 768, 0);
    let separate = {
        let mut p = moe_block_plan(Framework::Torchtitan, 8, Checkpointing::OpSelective);
        p.model.ffn = 768;
        p.training.torchtitan = TorchtitanRelease::V0_2_2;
        per_token_one_block(&p)
    };
    // Neither the experts' width nor their number per token keeps more than
    // the top-k's fp32 score and int64 index.
    assert!((op(8, 3 * 768, 0) - base).abs() < 1e-9, "{base}");
    assert!((op(4, 768, 0) - (base - 4.0 * 12.0 / h)).abs() < 1e-9);
    // Two shared experts of 768 are one MLP of 1,536: its up projection's
    // output is kept (the router's gate is the fifth matmul, kept; the
    // shared gate, up and down the sixth to eighth).
    assert!((op(8, 768, 2) - (base + 2.0 * 1536.0 / h)).abs() < 1e-9);
    // What stays: the block input (2), 0.3's fused qkv output (4,096 + 2 ×
    // 512 wide), the attention output (4,096), the router's fp32 scores over
    // 128 experts and the top 8 — and of 0.2.2's separate projections q and
    // v (4,096 + 512), the first and third matmuls.
    let want = 2.0 + (2.0 * (4096.0 + 1024.0 + 4096.0) + 4.0 * 128.0 + 12.0 * 8.0) / h;
    assert!((base - want).abs() < 1e-9, "{base} vs {want}");
    let want = 2.0 + (2.0 * (4096.0 + 512.0 + 4096.0) + 4.0 * 128.0 + 12.0 * 8.0) / h;
    assert!((separate - want).abs() < 1e-9, "{separate} vs {want}");
}

#[test]
fn torchtitans_per_op_checkpointing_counts_latent_attentions_matmuls() {
    // calibration/saved_tensors.py --mla: torchtitan 0.3.0's DeepSeek-V3
    // `debugmodel` blocks (hidden 256, 16 heads of 192 (64 rotary), values
    // 128, a 512-wide kv latent, 8 experts of 256, top 3, two shared) under
    // its per-op policy keep 110.33·hidden bytes per token without a q
    // latent and 65.77 with one of 384 (the CPU's attention adds the same
    // to both). The matmuls alternate through wq (or wq_a, wq_b), wkv_a,
    // wkv_b and wo: without a q latent wq and wkv_b are kept and the router
    // is the fifth matmul; with one wq_a, wkv_a and wo, and the router is
    // dropped — 44.56 apart, where keeping q and v as separate projections
    // kept the same for both.
    let op = |q_rank: u32| {
        let mut p = moe_block_plan(Framework::Torchtitan, 3, Checkpointing::OpSelective);
        let m = &mut p.model;
        (m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn) = (256, 16, 16, 192, 256);
        (m.experts, m.shared_experts, m.qk_norm) = (8, 2, false);
        m.mla = Some(Mla {
            q_rank,
            kv_rank: 512,
            rope_dim: 64,
            v_dim: 128,
        });
        per_token_one_block(&p)
    };
    let apart = op(0) - op(384);
    // The router's scores: fp32 as CUDA's autocast makes them (8 × 4 bytes),
    // bf16 on the CPU: 16 bytes a token more than counted.
    let want = 44.56 + 16.0 / 256.0;
    assert!((apart - want).abs() < 0.01, "{apart:.3} vs {want:.3}");
}

#[test]
fn torchtitans_rmsnorm_is_cudas_fused_kernel_keeping_only_its_input() {
    // calibration/saved_tensors.py --tp counted torchtitan's Llama block
    // (hidden 1024, 16 heads over 8, MLP 3584, bf16) at 56.07·hidden bytes a
    // token without checkpointing, its two `nn.RMSNorm`s taking the CPU's
    // composite path: an fp32 copy of the input and the fp32 normalised
    // tensor, 8 bytes an element each. On CUDA `F.rms_norm` is one
    // `aten._fused_rms_norm` (torch 2.15 traced on a fake CUDA tensor; the
    // kernel is in torch 2.9's libtorch_cuda, not 2.8's), which keeps the
    // 16-bit input and a per-row fp32 rstd: 2·(8 − 2) less, 44.07. The
    // count repeated k and v to every head (0.1's and 0.2's `repeat_kv`);
    // 0.3.0 hands SDPA `enable_gqa` instead, keeping them at their 512-wide
    // heads, 2·2·(1024 − 512) bytes less: 42.07.
    let mut p = tp_block_plan(Framework::Torchtitan, 1, false, Checkpointing::None);
    let m = &mut p.model;
    (m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn) = (1024, 16, 8, 64, 3584);
    let block = per_token_one_block(&p);
    assert!((block - 42.07).abs() < 0.05, "{block:.3}");
    // Up to 0.2.1 torchtitan repeated them (`repeat_kv`), as counted: 44.07;
    // 0.2.2 already passed `enable_gqa`.
    for (release, want) in [
        (TorchtitanRelease::V0_2_1OrOlder, 44.07),
        (TorchtitanRelease::V0_2_2, 42.07),
    ] {
        let mut q = p.clone();
        q.training.torchtitan = release;
        let got = per_token_one_block(&q);
        assert!((got - want).abs() < 0.05, "{release:?}: {got:.3}");
    }
    // Under FSDP's mixed precision (bf16 parameters for compute, torchtitan's
    // default) the residual stream and the norms' inputs are bf16 too.
    p.training.precision = Precision::AmpBf16;
    p.parallel.num_gpus = 8;
    p.parallel.sharding = Sharding::FsdpFull;
    let amp = per_token_one_block(&p);
    assert!(
        (amp - block).abs() < 0.01,
        "{amp:.3} against {block:.3} in bf16"
    );
}

/// The optimizer's largest holding over the plan's phases, in bytes per
/// trainable parameter.
fn optimizer_bytes_per_trainable(p: &Plan) -> f64 {
    let e = estimate(p).unwrap();
    let most = e.stages[0]
        .phases
        .iter()
        .map(|ph| ph.breakdown.optimizer.0)
        .max();
    most.unwrap() as f64 / e.trainable_params as f64
}

#[test]
fn torchaos_4bit_adamw_keeps_half_a_byte_and_a_block_scale_per_moment() {
    // torchao 0.18.0 `AdamW4bit`: each moment is n/2 bytes of codes and n/128
    // fp32 scales (`OptimState4bit.zeros`), 1.0625 bytes per parameter for
    // the two — against bitsandbytes' 8-bit 2 and AdamW's 4 in pure bf16.
    let plan = |opt: Optimizer| {
        let mut p = tp_block_plan(Framework::PlainPytorch, 1, false, Checkpointing::Full);
        p.training.optimizer = opt;
        p
    };
    let states = |opt: Optimizer| optimizer_bytes_per_trainable(&plan(opt));
    let four = states(Optimizer::Adamw4bit);
    assert!((four - 1.0625).abs() < 1e-3, "{four}");
    assert!((states(Optimizer::Adamw8bit) - 2.0).abs() < 1e-3);
    assert!((states(Optimizer::Adamw) - 4.0).abs() < 1e-3);
    // It steps one parameter at a time: no state-sized temporary, whatever
    // the kernel setting says.
    let mut foreach = plan(Optimizer::Adamw4bit);
    foreach.training.optimizer_impl = OptimizerImpl::Foreach;
    let mut fused = foreach.clone();
    fused.training.optimizer_impl = OptimizerImpl::Fused;
    assert_eq!(
        estimate(&foreach).unwrap().peak,
        estimate(&fused).unwrap().peak
    );
}

#[test]
fn bf16_optimizer_states_halve_adams_moments_and_leave_the_master() {
    // torchtitan 0.3.0's `fused_opt_states_bf16` and Megatron-Core's
    // `--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16`: exp_avg and exp_avg_sq
    // in bf16 (2 + 2 bytes a parameter instead of 4 + 4); Megatron's fp32
    // master (4) stays. 8-bit states are as they are.
    let per_param = |fw: Framework, opt: Optimizer, bf16: bool| {
        let mut p = tp_block_plan(fw, 1, false, Checkpointing::Full);
        p.training.precision = Precision::AmpBf16;
        p.training.optimizer = opt;
        p.training.optimizer_states_16bit = bf16;
        optimizer_bytes_per_trainable(&p)
    };
    let titan = |bf16| per_param(Framework::Torchtitan, Optimizer::Adamw, bf16);
    assert!((titan(false) - 8.0).abs() < 1e-3, "{}", titan(false));
    assert!((titan(true) - 4.0).abs() < 1e-3, "{}", titan(true));
    let megatron = |bf16| per_param(Framework::Megatron, Optimizer::Adamw, bf16);
    assert!((megatron(false) - 12.0).abs() < 1e-3, "{}", megatron(false));
    assert!((megatron(true) - 8.0).abs() < 1e-3, "{}", megatron(true));
    let eight = |bf16| per_param(Framework::Torchtitan, Optimizer::Adamw8bit, bf16);
    assert_eq!(eight(true), eight(false));
}
