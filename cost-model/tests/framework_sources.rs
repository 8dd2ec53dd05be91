//! Mechanisms read off the frameworks' sources (torchtune 0.6.1, torchtitan
//! 0.3.0, DeepSpeed 0.14.4 and 0.17.5, PyTorch's FSDP and pipelining (2.11), megatron-core 0.19.2
//! and 0.16.1,
//! torchao 0.18.0, Lightning 2.6.6), most of them checked
//! against torchtune's published memory (calibration/torchtune-readme-0.6.1.csv):
//! each test pins one term, so that breaking it fails here.
#![allow(clippy::field_reassign_with_default)] // one field at a time reads best here

mod common;
use common::{forward_activations, phase};

use cost_model::estimate::{estimate, Phase};
use cost_model::framework::Framework;
use cost_model::plan::{
    Checkpointing, Finetune, Loss, Offload, OffloadDevice, OptimizerImpl, Plan, Precision,
    Sharding, TorchtitanRelease,
};
use cost_model::presets::preset;

/// A pure-bf16 full fine-tune of `model` under `fw`, batch 2 × `seq`, over
/// `gpus` GPUs with `sharding`.
fn bf16_plan(model: &str, fw: Framework, seq: u32, gpus: u32, sharding: Sharding) -> Plan {
    let mut p = Plan::default();
    p.model = preset(model).unwrap().spec();
    p.set_framework(fw);
    p.training.precision = Precision::Bf16;
    p.training.micro_batch = 2;
    p.training.seq_len = seq;
    p.training.finetune = Finetune::Full;
    p.parallel.num_gpus = gpus;
    p.parallel.sharding = sharding;
    p
}

/// Llama-3.2-3B (tied embeddings) under torchtune on one GPU: batch 2 × 4096,
/// pure bf16, no checkpointing (the README's "Optimization flags" baseline).
fn torchtune_3b() -> Plan {
    let mut p = bf16_plan(
        "llama-3.2-3b",
        Framework::Torchtune,
        4096,
        1,
        Sharding::None,
    );
    p.training.checkpointing = Checkpointing::None;
    p
}

/// LoRA rank 8 on q and v over a `base_bits` base.
fn lora_qv(base_bits: u32) -> Finetune {
    Finetune::Lora {
        rank: 8,
        targets: cost_model::plan::LoraTargets::QV,
        base_bits,
        dropout: false,
        variant: cost_model::plan::LoraVariant::Lora,
    }
}

/// Logits: 2 × 4096 tokens × 128256 vocabulary.
const LOGITS: f64 = 2.0 * 4096.0 * 128_256.0;

/// Gradient bytes alive in the next forward.
fn forward_gradients(p: &Plan) -> u64 {
    phase(&estimate(p).unwrap(), Phase::Forward).gradients.get()
}

fn logits_bytes(p: &Plan, ph: Phase) -> f64 {
    phase(&estimate(p).unwrap(), ph).logits.get() as f64
}

/// Liger's fused loss on Llama-3.2-3B at 2 × 4096 tokens: `inc_factor =
/// cdiv(128256, 3072) = 42`, chunk `next_power_of_2(cdiv(8192, 42)) = 256`
/// tokens of bf16 logits, and the bf16 gradient of the whole input.
const FUSED_3B: f64 = 256.0 * 128_256.0 * 2.0 + 8192.0 * 3072.0 * 2.0;

/// The loss's own bytes: the logits component less the final norm's tensors
/// (what a fused loss reports, less its chunk and input gradient).
fn loss_bytes(p: &Plan, ph: Phase) -> f64 {
    let mut q = p.clone();
    q.training.loss = Loss::Fused;
    let norm = logits_bytes(&q, Phase::Forward) - FUSED_3B;
    logits_bytes(p, ph) - norm
}

#[test]
fn liger_sizes_its_logits_chunk_like_the_hidden_input() {
    let mut p = torchtune_3b();
    p.training.loss = Loss::Fused;
    // The final norm's tensors are what the fused loss reports beyond this
    // (`loss_bytes` subtracts exactly FUSED_3B from the fused report), so
    // compare with the standard loss's final norm instead.
    let mut std = p.clone();
    std.training.loss = Loss::Standard;
    // The standard loss's forward moment: the fp32 upcast and the
    // log-softmax output.
    let norm = logits_bytes(&std, Phase::Forward) - 8.0 * LOGITS;
    let fused = logits_bytes(&p, Phase::Forward) - norm;
    assert!((fused - FUSED_3B).abs() < 1.0, "{fused} vs {FUSED_3B}");
}

#[test]
fn torchtune_configs_step_with_fused_adamw() {
    // 118 of the 123 configs naming torch.optim.AdamW set `fused: True`.
    let p = torchtune_3b();
    assert_eq!(p.training.optimizer_impl, OptimizerImpl::Fused);
    let step = phase(&estimate(&p).unwrap(), Phase::Step);
    // Nothing but the cuBLAS workspaces, which every phase after the first
    // matmul holds.
    assert_eq!(step.temporaries.get(), common::cublas_workspaces(&p));
}

#[test]
fn torchtunes_standard_loss_stays_eager_under_compile() {
    // The decoder upcasts outside the compiled blocks and the recipe drops what
    // `compile_loss` returns: compiling changes nothing logits-sized ...
    let mut p = torchtune_3b();
    p.training.loss = Loss::Standard;
    let eager = loss_bytes(&p, Phase::Forward);
    p.training.compile = true;
    assert_eq!(loss_bytes(&p, Phase::Forward), eager);
    // ... while a transformers model compiled with its loss keeps only the
    // fp32 gradient's worth (the H200 measurement, 4 B per logit).
    let mut hf = p.clone();
    hf.set_framework(Framework::HfTrainer);
    hf.training.loss = Loss::Standard;
    hf.training.checkpointing = Checkpointing::None;
    hf.training.compile = true;
    assert!((loss_bytes(&hf, Phase::Forward) - 4.0 * LOGITS).abs() < 1.0);
    // Eager, the loss's forward holds the fp32 upcast and the log-softmax
    // output (its backward adds the gradient: three fp32 tensors).
    assert!((eager - 8.0 * LOGITS).abs() < 1.0, "{eager}");
    let mut eager_plan = torchtune_3b();
    eager_plan.training.loss = Loss::Standard;
    let backward = loss_bytes(&eager_plan, Phase::Backward);
    assert!((backward - 12.0 * LOGITS).abs() < 1.0, "{backward}");
}

#[test]
fn chunked_cross_entropy_keeps_fp32_log_probs_eagerly_and_16_bit_chunks_compiled() {
    let mut p = torchtune_3b();
    p.training.loss = Loss::ChunkedFree;
    // Eager: the 16-bit chunk list (held by the recipe until `del logits`) and
    // every chunk's fp32 log-softmax output at the end of the loss forward;
    // the fp32 outputs and one chunk's backward tensors as backward starts.
    let fwd = loss_bytes(&p, Phase::Forward);
    assert!((fwd - 6.0 * LOGITS).abs() < 1.0, "{fwd}");
    let bwd = loss_bytes(&p, Phase::Backward);
    assert!((bwd - (4.0 + 10.0 / 8.0) * LOGITS).abs() < 1.0, "{bwd}");
    // Compiled: the 16-bit chunks, then one chunk's gradient beside them
    // (LoRA: no head gradient to make the head's backward the larger moment).
    p.training.compile = true;
    p.training.finetune = lora_qv(16);
    let fwd = loss_bytes(&p, Phase::Forward);
    assert!((fwd - 2.0 * LOGITS).abs() < 1.0, "{fwd}");
    let bwd = loss_bytes(&p, Phase::Backward);
    assert!((bwd - 2.0 * 9.0 / 8.0 * LOGITS).abs() < 1.0, "{bwd}");
}

#[test]
fn optimizer_in_backward_keeps_a_tied_heads_gradient_through_backward() {
    // A fused loss keeps no logits, and at batch 16 a block's backward working
    // set outweighs the loss's chunk and the final norm: the reported
    // backward moment is a block's. A tied head's gradient (3B) is still
    // there; an untied one's (8B) has stepped and gone.
    let grads_in_blocks = |model: &str| {
        let mut p = torchtune_3b();
        p.model = preset(model).unwrap().spec();
        p.training.micro_batch = 16;
        p.training.optimizer_in_backward = true;
        p.training.loss = Loss::Fused;
        phase(&estimate(&p).unwrap(), Phase::Backward)
            .gradients
            .get() as f64
    };
    let tied_head = 128_256.0 * 3072.0 * 2.0;
    assert_eq!(grads_in_blocks("llama-3.2-3b"), tied_head);
    let untied_head = 128_256.0 * 4096.0 * 2.0;
    assert_eq!(grads_in_blocks("llama-3.1-8b"), 0.0);
    // At the head's backward (chunked loss: the logits' gradients alive) the
    // untied head's gradient exists too, until it steps.
    // (Compiled: eagerly the loss backward's fp32 log-probabilities outweigh it.)
    let mut p = torchtune_3b();
    p.model = preset("llama-3.1-8b").unwrap().spec();
    p.training.optimizer_in_backward = true;
    p.training.checkpointing = Checkpointing::Full;
    p.training.compile = true;
    let b = phase(&estimate(&p).unwrap(), Phase::Backward);
    assert!(b.logits.get() > 0);
    assert_eq!(b.gradients.get() as f64, untied_head);
}

/// Llama-3.1-70B, full fine-tune over 8 GPUs with FSDP, batch 2 × 2048.
fn fsdp_70b(fw: Framework) -> Plan {
    bf16_plan("llama-3.1-70b", fw, 2048, 8, Sharding::FsdpFull)
}

#[test]
fn fsdp_parameter_offload_takes_the_gradients_to_the_cpu() {
    let mut p = fsdp_70b(Framework::Torchtune);
    let on_gpu = estimate(&p).unwrap();
    assert!(phase(&on_gpu, Phase::Step).gradients.get() > 0);
    p.parallel.offload = Offload {
        optimizer: OffloadDevice::Cpu,
        params: OffloadDevice::Cpu,
    };
    let off = estimate(&p).unwrap();
    assert_eq!(phase(&off, Phase::Step).gradients.get(), 0);
    // Host RAM holds them instead (with the states).
    assert!(off.host_offload.get() > 0);
}

#[test]
fn zero_offload_keeps_gradients_on_the_gpu_only_for_stage_1() {
    let grads = |sharding: Sharding, offload: bool| {
        let mut p = fsdp_70b(Framework::Deepspeed);
        p.model = preset("llama-3.1-8b").unwrap().spec();
        p.training.precision = Precision::AmpBf16;
        p.parallel.sharding = sharding;
        if offload {
            p.parallel.offload.optimizer = OffloadDevice::Cpu;
        }
        phase(&estimate(&p).unwrap(), Phase::Step).gradients.get()
    };
    assert!(grads(Sharding::Zero2, false) > 0);
    assert_eq!(grads(Sharding::Zero2, true), 0);
    assert_eq!(grads(Sharding::Zero3, true), 0);
    // ZeRO-1 reduces after backward from full gradients.
    assert_eq!(grads(Sharding::Zero1, true), grads(Sharding::Zero1, false));
}

#[test]
fn fsdp_gathers_what_lies_outside_the_blocks() {
    // Llama-3.1-70B full fine-tune, bf16, 8 GPUs: beyond two gathered blocks
    // and one block's unsharded gradients ...
    let comm = |p: &Plan| {
        phase(&estimate(p).unwrap(), Phase::Backward)
            .comm_buffers
            .get() as f64
    };
    let m = preset("llama-3.1-70b").unwrap().spec();
    let head = 128_256.0 * 8192.0;
    let edges = 2.0 * head + 8192.0; // embedding, head, final norm
    let block = (m.params() as f64 - edges) / 80.0;
    let blocks = (2.0 * block + block) * 2.0;
    // ... FSDP2 (torchtune) gathers the output projection (1.05 B parameters,
    // more than a block's 0.86 B) beside one block, with its gradient ...
    let tt = fsdp_70b(Framework::Torchtune);
    let extra = comm(&tt) - blocks;
    let expected = 2.0 * (head - block) * 2.0;
    assert!(
        (extra - expected).abs() / expected < 1e-6,
        "{extra} vs {expected}"
    );
    // ... while FSDP1 (Accelerate) keeps its root unit — embeddings, final
    // norm, head — gathered throughout, with its whole gradient.
    let mut hf = tt.clone();
    hf.set_framework(Framework::HfAccelerate);
    let extra = comm(&hf) - blocks;
    let expected = 2.0 * edges * 2.0;
    assert!(
        (extra - expected).abs() / expected < 1e-6,
        "{extra} vs {expected}"
    );
}

#[test]
fn torchtunes_nf4_base_is_double_quantized() {
    // torchao's NF4Tensor: 4 bits + an int8 scale per 64 weights + an fp32
    // factor per 256 scales; bitsandbytes' default keeps an fp32 absmax per 64.
    let weights = |fw: Framework, base_bits: u32| {
        let mut p = torchtune_3b();
        p.set_framework(fw);
        p.training.finetune = lora_qv(base_bits);
        phase(&estimate(&p).unwrap(), Phase::Init).weights.get() as f64
    };
    // What quantizing saves (the adapters' dtype differs between the two).
    let saved = |fw: Framework| weights(fw, 16) - weights(fw, 4);
    let m = preset("llama-3.2-3b").unwrap().spec();
    let quantized = m.params() as f64 - 128_256.0 * 3072.0 - 2.0 * 28.0 * 3072.0 - 3072.0;
    let per_param = (4.0 / 64.0) - (1.0 / 64.0 + 4.0 / (64.0 * 256.0));
    let d = saved(Framework::Torchtune) - saved(Framework::HfTrainer);
    assert!(
        (d - quantized * per_param).abs() < 1e3,
        "{d} vs {}",
        quantized * per_param
    );
}

#[test]
fn zero3_keeps_its_gradient_partitions_from_init_unless_offloaded() {
    // Llama-3.1-8B full fine-tune, 8 GPUs, ZeRO-3: the flat gradient buffer is
    // there before the first forward, and so during it.
    let mut p = fsdp_70b(Framework::Deepspeed);
    p.model = preset("llama-3.1-8b").unwrap().spec();
    p.training.precision = Precision::AmpBf16;
    p.parallel.sharding = Sharding::Zero3;
    let e = estimate(&p).unwrap();
    let shard = e.params as f64 * 2.0 / 8.0;
    for ph in [Phase::Init, Phase::Forward, Phase::Step] {
        let g = phase(&e, ph).gradients.get() as f64;
        assert!((g - shard).abs() < 8.0, "{ph:?}: {g} vs {shard}");
    }
    // Offloaded, the buffer is on the CPU.
    p.parallel.offload.optimizer = OffloadDevice::Cpu;
    let e = estimate(&p).unwrap();
    assert_eq!(phase(&e, Phase::Forward).gradients.get(), 0);
    // ZeRO-2 frees its partition after the step: none in the next forward.
    p.parallel.offload.optimizer = OffloadDevice::None;
    p.parallel.sharding = Sharding::Zero2;
    assert_eq!(forward_gradients(&p), 0);
}

/// DeepSpeed ZeRO-3 with `offload_param` gathers each parameter through a GPU
/// copy of its CPU partition (`param.ds_tensor.to(device)` beside the new
/// `param_buffer`, deepspeed 0.8.1 and 0.17.5 `all_gather_coalesced`): the LM
/// head's fetch at the end of forward holds its partition twice under every
/// activation, before the logits exist. LoRA in fp32 (PEFT's RAFT example):
/// the head is 32,000 × 4,096 fp32 on one GPU, an eighth of it on eight.
#[test]
fn zero3_param_offload_fetches_the_head_through_a_copy_of_its_partition() {
    let plan = |gpus: u32, params: OffloadDevice| {
        let mut p = fsdp_70b(Framework::HfAccelerate);
        p.model = preset("llama-2-7b").unwrap().spec();
        p.training.precision = Precision::Fp32;
        p.training.finetune = lora_qv(32);
        p.training.micro_batch = 1;
        p.training.seq_len = 32;
        p.parallel.num_gpus = gpus;
        p.parallel.sharding = Sharding::Zero3;
        p.parallel.offload.optimizer = OffloadDevice::Cpu;
        p.parallel.offload.params = params;
        estimate(&p).unwrap()
    };
    let head = 32000.0 * 4096.0 * 4.0;
    for gpus in [1, 8] {
        let e = plan(gpus, OffloadDevice::Cpu);
        let fwd = phase(&e, Phase::Forward);
        // The fetch, before the logits: the head's partition once more.
        assert_eq!(fwd.logits.get(), 0, "{gpus} GPUs");
        let bwd = phase(&e, Phase::Backward).comm_buffers.get() as f64;
        let extra = fwd.comm_buffers.get() as f64 - bwd;
        let want = head / gpus as f64;
        assert!((extra - want).abs() < 8.0, "{gpus} GPUs: {extra} vs {want}");
    }
    // Parameters on the GPU: no copy, the forward peak keeps its logits.
    let e = plan(1, OffloadDevice::None);
    assert!(phase(&e, Phase::Forward).logits.get() > 0);
}

#[test]
fn the_heads_weight_gradient_meets_the_logits_gradient_at_the_heads_backward() {
    // Llama-3.2-3B full fine-tune, compiled chunked loss, every activation
    // kept: the reported backward moment is the head's: all chunks' 16-bit
    // gradients (the chunks themselves freed) and the tied head's bf16 weight
    // gradient.
    let mut p = torchtune_3b();
    p.training.loss = Loss::ChunkedFree;
    p.training.compile = true;
    let b = phase(&estimate(&p).unwrap(), Phase::Backward);
    let head = 128_256.0 * 3072.0 * 2.0;
    assert_eq!(b.gradients.get() as f64, head);
    let lg = loss_bytes(&p, Phase::Backward);
    assert!((lg - 2.0 * LOGITS).abs() < 1.0, "{lg}");
    // A fused linear-cross-entropy makes the head's gradient in forward.
    p.training.loss = Loss::Fused;
    let f = phase(&estimate(&p).unwrap(), Phase::Forward);
    assert_eq!(f.gradients.get() as f64, head);
    // LoRA: the head is frozen, no such gradient.
    p.training.loss = Loss::ChunkedFree;
    p.training.finetune = lora_qv(16);
    let b = phase(&estimate(&p).unwrap(), Phase::Backward);
    assert!((b.gradients.get() as f64) < head / 10.0);
}

#[test]
fn torchtunes_rmsnorm_keeps_the_fp32_normalised_tensor_for_its_scale() {
    // `F.rms_norm(x.float(), weight=self.scale)`: the scale multiplies in fp32,
    // so a trained scale keeps the fp32 normalised tensor (transformers keeps
    // a 16-bit cast): 2 more bytes per hidden unit, two norms per block.
    let acts = |fw: Framework| {
        let mut p = torchtune_3b();
        p.set_framework(fw);
        p.training.loss = Loss::Standard;
        p.training.checkpointing = Checkpointing::None;
        phase(&estimate(&p).unwrap(), Phase::Forward)
            .activations
            .get() as f64
    };
    let d = acts(Framework::Torchtune) - acts(Framework::HfTrainer);
    let expected = 2.0 * 2.0 * 3072.0 * 2.0 * 4096.0 * 28.0;
    assert!((d - expected).abs() < 1.0, "{d} vs {expected}");
}

/// QLoRA of Llama-3.1-8B (untied 128K-vocabulary head) under the Trainer with
/// autocast: all-linear rank 16 over NF4, batch 1 × 2048, full checkpointing.
fn qlora_8b(prep: bool) -> Plan {
    let mut p = bf16_plan(
        "llama-3.1-8b",
        Framework::HfTrainer,
        2048,
        1,
        Sharding::None,
    );
    p.training.precision = Precision::AmpBf16;
    p.training.micro_batch = 1;
    p.training.checkpointing = Checkpointing::Full;
    p.training.finetune = Finetune::Lora {
        rank: 16,
        targets: cost_model::plan::LoraTargets::ALL_LINEAR,
        base_bits: 4,
        dropout: false,
        variant: cost_model::plan::LoraVariant::Lora,
    };
    p.training.kbit_fp32_prep = prep;
    p
}

#[test]
fn peft_prepare_model_for_kbit_training_makes_the_unquantized_parameters_and_the_stream_fp32() {
    let (off, on) = (qlora_8b(false), qlora_8b(true));
    let (eo, en) = (estimate(&off).unwrap(), estimate(&on).unwrap());
    let m = &off.model;
    let (h, v, l) = (m.hidden as f64, m.vocab as f64, m.layers as f64);
    // peft `prepare_model_for_kbit_training`: embeddings, the (unquantized)
    // head and the norms go from 2 to 4 bytes.
    let unquantized = 2.0 * v * h + (2.0 * l + 1.0) * h;
    let init = |e| phase(e, Phase::Init);
    let dw = init(&en).weights.get() as f64 - init(&eo).weights.get() as f64;
    assert_eq!(dw, 2.0 * unquantized);
    // The residual stream follows the fp32 norms: every checkpointed block
    // input doubles (2048 tokens × hidden × 2 more bytes per block) …
    let fwd = |e| phase(e, Phase::Forward);
    let dact = fwd(&en).activations.get() as f64 - fwd(&eo).activations.get() as f64;
    assert!(dact >= l * 2048.0 * h * 2.0, "{dact}");
    // … and under autocast the head's matmul saves a 16-bit cast of the fp32 head.
    assert!(en.peak.allocated.get() as f64 - eo.peak.allocated.get() as f64 > dw + v * h * 2.0);
    // PEFT's profile runs it by default; the Trainer's and TRL's do not.
    let mut p = off.clone();
    p.set_framework(Framework::Peft);
    assert!(p.training.kbit_fp32_prep);
    p.set_framework(Framework::Trl);
    assert!(!p.training.kbit_fp32_prep);
    // It travels in the URL.
    let url = cost_model::query::encode(&on);
    assert!(url.contains("kbit32=1"), "{url}");
    assert!(
        cost_model::query::decode_str(&url)
            .unwrap()
            .training
            .kbit_fp32_prep
    );
    // Not under FSDP: the sharded QLoRA recipes skip it (one dtype per flat
    // parameter).
    let sharded = |prep: bool| {
        let mut p = qlora_8b(prep);
        p.parallel.num_gpus = 2;
        p.parallel.sharding = Sharding::FsdpFull;
        estimate(&p).unwrap().peak
    };
    assert_eq!(sharded(true), sharded(false));
    // Without a quantized base there is nothing to prepare.
    let mut lora16 = on.clone();
    if let Finetune::Lora { base_bits, .. } = &mut lora16.training.finetune {
        *base_bits = 16;
    }
    let mut lora16_off = lora16.clone();
    lora16_off.training.kbit_fp32_prep = false;
    assert_eq!(
        estimate(&lora16).unwrap().peak,
        estimate(&lora16_off).unwrap().peak
    );
}

#[test]
fn torchtitan_shards_the_sequence_with_tensor_parallelism_megatron_only_when_asked() {
    let mut p = bf16_plan(
        "llama-3.1-70b",
        Framework::Torchtitan,
        8192,
        64,
        Sharding::FsdpFull,
    );
    p.parallel.tp = 8;
    assert!(p.parallel.sequence_parallel);
    let with_sp = estimate(&p).unwrap();
    p.set_framework(Framework::Megatron);
    assert!(!p.parallel.sequence_parallel);
    p.set_framework(Framework::Torchtitan);
    p.parallel.sequence_parallel = false;
    // Without SP the norms and the block inputs are whole on every TP rank.
    assert!(estimate(&p).unwrap().peak.allocated > with_sp.peak.allocated);
    // The URL can still turn it off.
    let q = cost_model::query::encode(&p);
    assert!(
        !cost_model::query::decode_str(&q)
            .unwrap()
            .parallel
            .sequence_parallel,
        "{q}"
    );
}

#[test]
fn torchtitan_per_op_sac_keeps_every_other_matmul_and_steps_fused() {
    // Llama-3.1-8B under torchtitan's defaults: per-op SAC, fused AdamW.
    let p = bf16_plan(
        "llama-3.1-8b",
        Framework::Torchtitan,
        4096,
        8,
        Sharding::FsdpFull,
    );
    assert_eq!(p.training.checkpointing, Checkpointing::OpSelective);
    assert_eq!(p.training.optimizer_impl, OptimizerImpl::Fused);
    // One more block adds what one block keeps: its input, wqkv's, w1's and
    // w2's outputs (mm 1, 3, 5 of wqkv wo w1 w3 w2: 0.3's fused projection)
    // and SDPA's output; up to 0.2.2 wq's and wv's instead of wqkv's (mm 1
    // and 3 of wq wk wv wo).
    let (h, hq, hkv, f) = (4096.0, 4096.0, 1024.0, 14336.0);
    let tokens = 2.0 * 4096.0;
    for (release, qkv) in [
        (TorchtitanRelease::Current, hq + 2.0 * hkv),
        (TorchtitanRelease::V0_2_2, hq + hkv),
        (TorchtitanRelease::V0_2_1OrOlder, hq + hkv),
    ] {
        let mut p = p.clone();
        p.training.torchtitan = release;
        let mut q = p.clone();
        q.model.layers += 1;
        let per_block = forward_activations(&q) - forward_activations(&p);
        let kept = 2.0 * tokens * (h + qkv + f + h + hq);
        assert!(
            (per_block - kept).abs() <= 0.02 * kept,
            "{release:?}: {per_block} vs {kept} bytes per block"
        );
    }
}

#[test]
fn every_framework_default_is_a_valid_plan_on_every_preset() {
    // A framework's defaults must never make a plan invalid (sequence
    // parallelism on by default once made every torchtitan plan without TP an
    // error).
    for f in Framework::ALL {
        for preset in cost_model::presets::presets() {
            let mut p = Plan::default();
            p.model = preset.spec();
            p.set_framework(f);
            if let Err(e) = estimate(&p) {
                panic!("{} on {}: {e}", f.id(), preset.id);
            }
        }
    }
}

#[test]
fn megatron_keeps_its_fp32_main_grad_buffers_from_wrapping_to_the_step() {
    // Llama-3.1-8B under Megatron's distributed optimizer over 8 ranks.
    let mut p = bf16_plan(
        "llama-3.1-8b",
        Framework::Megatron,
        4096,
        8,
        Sharding::Zero1,
    );
    // Megatron recomputes nothing unless asked
    // (`TransformerConfig.recompute_granularity` defaults to None).
    assert_eq!(p.training.checkpointing, Checkpointing::None);
    let e = estimate(&p).unwrap();
    let n = e.trainable_params as f64;
    for ph in [Phase::Init, Phase::Forward, Phase::Backward, Phase::Step] {
        let b = phase(&e, ph);
        // `grad_data = torch.zeros(numel, dtype=grad_dtype)`, fp32 for bf16 runs,
        // zeroed each iteration, never freed; the reduce buckets are its views.
        assert!((b.gradients.get() as f64 - 4.0 * n).abs() < 1.0, "{ph:?}");
        assert_eq!(b.comm_buffers.get(), 0, "{ph:?}");
    }
    // Between iterations: 2 + 4 + 12/DP bytes per parameter
    // (megatron_mem_01.txt: 12 B at DP 2).
    let init = phase(&e, Phase::Init);
    let states = (init.weights.get() + init.gradients.get() + init.optimizer.get()) as f64;
    assert!(
        (states / n - (2.0 + 4.0 + 12.0 / 8.0)).abs() < 1e-6,
        "{}",
        states / n
    );
    // PyTorch's DDP under a plain loop frees its gradients at `zero_grad()`.
    p.set_framework(Framework::PlainPytorch);
    p.parallel.sharding = Sharding::Ddp;
    assert_eq!(forward_gradients(&p), 0);
}

#[test]
fn megatron_cross_entropy_works_in_place_on_one_fp32_copy() {
    // Llama-3.2-3B at 2 × 4096 tokens: the 16-bit logits and their fp32 copy
    // inside the loss forward; the saved softmax (the gradient, in place) as
    // backward starts; the transformers loss holds its fp32 upcast and the
    // log-softmax output in forward (and three fp32 tensors in backward).
    let mut p = torchtune_3b();
    p.set_framework(Framework::Megatron);
    p.training.checkpointing = Checkpointing::None;
    assert_eq!(p.training.loss, Loss::Standard);
    let fwd = loss_bytes(&p, Phase::Forward);
    assert!((fwd - 6.0 * LOGITS).abs() < 1.0, "{fwd}");
    let mut hf = p.clone();
    hf.set_framework(Framework::HfTrainer);
    hf.training.checkpointing = Checkpointing::None;
    let hf_fwd = loss_bytes(&hf, Phase::Forward);
    assert!((hf_fwd - 8.0 * LOGITS).abs() < 1.0, "{hf_fwd}");
    // Per logit, by growing the vocabulary: 2 + 4 in bf16; in fp32 `.float()`
    // returns the logits themselves, which the loss then works on in place.
    let per_logit = |prec: Precision| {
        let mut a = p.clone();
        a.training.precision = prec;
        let mut b = a.clone();
        b.model.vocab += 1024;
        (logits_bytes(&b, Phase::Forward) - logits_bytes(&a, Phase::Forward))
            / (2.0 * 4096.0 * 1024.0)
    };
    assert!((per_logit(Precision::Bf16) - 6.0).abs() < 1e-6);
    assert!((per_logit(Precision::Fp32) - 4.0).abs() < 1e-6);
}

#[test]
fn float8_runs_store_what_the_frameworks_16_bit_policy_stores() {
    let peak = |fw: Framework, prec: Precision| {
        let mut p = bf16_plan("llama-3.1-8b", fw, 4096, 8, Sharding::FsdpFull);
        if fw == Framework::Megatron {
            p.parallel.sharding = Sharding::Zero1;
        }
        p.training.precision = prec;
        estimate(&p).unwrap().peak
    };
    for (fw, stored_as) in [
        // torchtitan: fp32 parameters under FSDP2's bf16 policy; torchao's
        // Float8Linear saves the high-precision input and weight.
        (Framework::Torchtitan, Precision::AmpBf16),
        // Accelerate converts the model as loaded (fp32) and autocasts to bf16.
        (Framework::HfAccelerate, Precision::AmpBf16),
        // torchtune trains float8 over its bf16 model.
        (Framework::Torchtune, Precision::Bf16),
    ] {
        assert_eq!(peak(fw, Precision::Fp8), peak(fw, stored_as), "{fw:?}");
    }
    assert_ne!(
        peak(Framework::Torchtitan, Precision::Fp8),
        peak(Framework::Torchtitan, Precision::Bf16)
    );
    // LitGPT's transformer-engine precision converts the weights to bf16;
    // Megatron keeps bf16 weights with its fp32 master copy (their TE float8
    // copies are the next test's).
    for fw in [Framework::Litgpt, Framework::Megatron] {
        let states = |prec| {
            let mut p = bf16_plan("llama-3.1-8b", fw, 4096, 8, Sharding::Zero1);
            p.training.precision = prec;
            let b = phase(&estimate(&p).unwrap(), Phase::Step);
            (b.gradients, b.optimizer)
        };
        assert_eq!(states(Precision::Fp8), states(Precision::Bf16), "{fw:?}");
    }
}

#[test]
fn transformer_engine_float8_saves_float8_inputs_and_makes_float8_weight_copies() {
    // Llama-3.1-8B, 2 × 4096 tokens, no recomputation, flash attention.
    let (h, f, layers, tokens) = (4096.0, 14336.0, 32.0, 2.0 * 4096.0);
    // Per block: q, o (h × h), k, v (h × 1024), gate, up, down (h × f).
    let block = 2.0 * h * h + 2.0 * h * 1024.0 + 3.0 * h * f;
    let at = |fw: Framework, prec: Precision, ph: Phase| {
        let mut p = bf16_plan("llama-3.1-8b", fw, 4096, 8, Sharding::Zero1);
        p.training.checkpointing = Checkpointing::None;
        p.training.precision = prec;
        phase(&estimate(&p).unwrap(), ph)
    };
    // Megatron: the qkv and fc1 inputs (norm outputs) and the fc2 input are
    // kept in one byte instead of two; o_proj adds its float8 copy of the
    // attention output the kernel keeps anyway.
    let mg = |prec| at(Framework::Megatron, prec, Phase::Forward);
    let saved =
        mg(Precision::Bf16).activations.get() as f64 - mg(Precision::Fp8).activations.get() as f64;
    let want = layers * tokens * (h + h + f - h);
    assert!((saved - want).abs() < 64.0, "{saved} vs {want}");
    // ... and caches row- and column-wise float8 weights for the run.
    let init = |prec| at(Framework::Megatron, prec, Phase::Init).weights.get() as f64;
    let cache = init(Precision::Fp8) - init(Precision::Bf16);
    assert!((cache - 2.0 * layers * block).abs() < 64.0, "{cache}");
    // LitGPT's TE linears cache nothing: each layer saves its copies for backward.
    let lit = |prec| {
        at(Framework::Litgpt, prec, Phase::Forward)
            .activations
            .get() as f64
    };
    let more = lit(Precision::Fp8) - lit(Precision::Bf16);
    let want = layers * (2.0 * block - tokens * (h + f));
    assert!((more - want).abs() < 64.0, "{more} vs {want}");
    // torchao's Float8Linear (torchtitan) saves its 16-bit input and weight.
    let tt = |prec| at(Framework::Torchtitan, prec, Phase::Forward);
    assert_eq!(tt(Precision::Fp8), tt(Precision::AmpBf16));
}

#[test]
fn megatron_block_keeps_korthikanti_tensors_with_the_fused_swiglu() {
    // Llama-3.1-8B block under Megatron, bf16, flash attention, dropout off,
    // 2 × 4096 tokens: per token, the fused norms' 16-bit inputs (2 × 2h),
    // the qkv and fc1 inputs (2 × 2h), q, k, v (2·(h + 2·1024)), the
    // attention output (2h), its fp32 log-sum-exp (4 per head), fc1's
    // gate and up outputs (2 × 2f: `BiasSwiGLUFunction` saves only its
    // input) and fc2's input (2f).
    let (h, f, heads) = (4096.0, 14336.0, 32.0);
    let mut p = bf16_plan(
        "llama-3.1-8b",
        Framework::Megatron,
        4096,
        8,
        Sharding::Zero1,
    );
    p.training.dropout = false;
    let mut q = p.clone();
    q.model.layers += 1;
    let per_token = (forward_activations(&q) - forward_activations(&p)) / (2.0 * 4096.0);
    let want = 4.0 * h + 4.0 * h + 2.0 * (h + 2.0 * 1024.0) + 2.0 * h + 4.0 * heads + 6.0 * f;
    assert!((per_token - want).abs() < 1e-3, "{per_token} vs {want}");
}

#[test]
fn torchtitan_pipelined_fsdp_stages_keep_parameters_gathered_and_gradients_unsharded() {
    // Llama-3.1-8B, torchtitan's AMP policy (fp32 shards, bf16 compute, fp32
    // reduce), FSDP over 16 ranks × PP 4, eight micro-batches of 1 × 2048.
    let mut p = bf16_plan(
        "llama-3.1-8b",
        Framework::Torchtitan,
        2048,
        64,
        Sharding::FsdpFull,
    );
    p.training.precision = Precision::AmpBf16;
    p.training.micro_batch = 1;
    p.parallel.pp = 4;
    p.parallel.pp_microbatches = 8;
    // The data-parallel buffers of rank `s` in phase `ph`, per stage parameter.
    let per_param = |p: &Plan, s: usize, ph: Phase| {
        let e = estimate(p).unwrap();
        let st = &e.stages[s];
        let b = st
            .phases
            .iter()
            .filter(|x| x.phase == ph)
            .map(|x| x.breakdown.comm_buffers.get())
            .max()
            .unwrap();
        b as f64 / st.params as f64
    };
    // Each rank's forward buffers, per parameter: 2 (gathered bf16) or 6
    // (with the fp32 accumulators).
    let forwards = |p: &Plan, want: [f64; 4]| {
        for (s, w) in want.into_iter().enumerate() {
            let got = per_param(p, s, Phase::Forward);
            assert!((got - w).abs() < 1e-3, "rank {s}: {got} vs {w}");
        }
    };
    // The stage's parameters gathered in bf16 and its gradients kept
    // unsharded in fp32 until the reduce-scatter after the last micro-batch:
    // 2 + 4 bytes per parameter in backward, whatever the FSDP degree.
    for s in 0..4 {
        let bwd = per_param(&p, s, Phase::Backward);
        assert!((bwd - 6.0).abs() < 1e-3, "stage {s}: {bwd}");
    }
    // Eight micro-batches outnumber every stage's warm-up forwards (4 − s),
    // so a forward runs beside the accumulated gradients.
    forwards(&p, [6.0; 4]);
    // Two micro-batches: 1F1B warms stage s up with min(2, 4 − s) forwards
    // (torch 2.11 `Schedule1F1B`), so only the last stage runs a forward
    // after a backward.
    let mut two = p.clone();
    two.parallel.pp_microbatches = 2;
    forwards(&two, [2.0, 2.0, 2.0, 6.0]);
    // Interleaved over two chunks a rank: rank s warms up with
    // 4 + 2 × (3 − s) of its 2 × m forwards (`_get_warmup_ops`); with m = 4
    // the first two ranks (10 and 8 of 8) never run a forward after a
    // backward, the last two (6 and 4 of 8) do.
    let mut vpp = p.clone();
    vpp.parallel.pp_schedule = cost_model::plan::PipelineSchedule::Interleaved;
    vpp.parallel.virtual_stages = 2;
    vpp.parallel.pp_microbatches = 4;
    forwards(&vpp, [2.0, 2.0, 6.0, 6.0]);
    // Without PP torchtitan reshards after forward and reduce-scatters per
    // block: two blocks in flight, far below the whole model.
    let mut flat = p.clone();
    flat.parallel.pp = 1;
    flat.parallel.pp_microbatches = 0;
    let bwd = per_param(&flat, 0, Phase::Backward);
    assert!(bwd < 0.5, "{bwd}");
    // Frameworks that do not run FSDP2 under PyTorch's pipeline schedules
    // keep the per-block term: two of the stage's eight blocks gathered and
    // one block's fp32 gradient, 2 × 2/8 + 4/8 bytes per parameter.
    let mut hf = p.clone();
    hf.set_framework(Framework::HfAccelerate);
    hf.training.precision = Precision::AmpBf16;
    let bwd = per_param(&hf, 1, Phase::Backward);
    assert!((bwd - 1.0).abs() < 0.01, "{bwd}");
}

/// Gradient accumulation under FSDP through `no_sync` (the Trainer,
/// Accelerate, LitGPT; `Framework::fsdp_no_sync_accumulation`): from the
/// second micro-batch on each rank holds the full unsharded gradients, in the
/// compute dtype, until the last micro-batch reduces them into the shards.
/// Accelerate's `sync_each_batch`, torchtune's loop (a reduce-scatter every
/// micro-batch) and a step without accumulation keep only the shards.
#[test]
fn fsdp_accumulation_under_no_sync_keeps_the_full_unsharded_gradients() {
    let plan = |fw: Framework, ga: u32, sync_each_batch: bool| {
        let mut p = bf16_plan("llama-3.1-8b", fw, 2048, 8, Sharding::FsdpFull);
        p.training.precision = Precision::AmpBf16;
        p.training.grad_accum = ga;
        p.training.sync_each_batch = sync_each_batch;
        p
    };
    let grads = |p: &Plan, ph: Phase| phase(&estimate(p).unwrap(), ph).gradients.get() as f64;
    let trainable = estimate(&plan(Framework::HfTrainer, 4, false))
        .unwrap()
        .trainable_params as f64;
    let (unsharded, shard) = (2.0 * trainable, 4.0 * trainable / 8.0);
    for fw in [
        Framework::HfTrainer,
        Framework::HfAccelerate,
        Framework::Litgpt,
        Framework::LlamaFactory,
        Framework::Axolotl,
    ] {
        let p = plan(fw, 4, false);
        for ph in [Phase::Forward, Phase::Backward] {
            let g = grads(&p, ph);
            assert!(
                (g - unsharded).abs() < 1e-6 * unsharded,
                "{fw:?} {ph:?}: {g}"
            );
        }
        // At the step only the reduced shards are left.
        let step = grads(&p, Phase::Step);
        assert!((step - shard).abs() < 1e-6 * shard, "{fw:?}: {step}");
    }
    for p in [
        plan(Framework::HfTrainer, 4, true),
        plan(Framework::Torchtune, 4, false),
        plan(Framework::HfTrainer, 1, false),
    ] {
        let g = grads(&p, Phase::Forward);
        assert!(g <= shard * (1.0 + 1e-6), "{:?}: {g}", p.framework);
    }
    // DeepSpeed's ZeRO partitions as it goes, whatever runs it.
    let mut z = plan(Framework::HfTrainer, 4, false);
    z.parallel.sharding = Sharding::Zero3;
    assert!(grads(&z, Phase::Forward) < unsharded / 2.0);
    // The peak grows by the unsharded gradients less the shards and less the
    // gradients the reduced run holds unsharded in backward (a block's and
    // the root unit's, waiting for their reduce-scatter), which accumulate
    // into the unsharded ones in place.
    let peak = |p: &Plan| estimate(p).unwrap().peak.allocated.get() as f64;
    let (without, with) = (
        plan(Framework::HfTrainer, 4, true),
        plan(Framework::HfTrainer, 4, false),
    );
    let grown = peak(&with) - peak(&without);
    let comm = |p: &Plan| {
        phase(&estimate(p).unwrap(), Phase::Backward)
            .comm_buffers
            .get() as f64
    };
    let in_flight = comm(&without) - comm(&with);
    assert!(
        in_flight > 0.0 && in_flight < unsharded / 2.0,
        "{in_flight}"
    );
    let expected = unsharded - shard - in_flight;
    assert!(
        (grown - expected).abs() < 0.15 * expected,
        "{grown} vs {expected}"
    );
}

/// LLaMA-Factory, ms-swift, axolotl and Unsloth train through transformers'
/// `Trainer`: with their own defaults set back to the Trainer's, every plan
/// estimates exactly as the Trainer's (PEFT's fp32 adapters, Accelerate's
/// `no_sync` under FSDP, the DeepSpeed "auto" bucket, the default AdamW
/// kernel); their defaults are the ones their sources set.
#[test]
fn trainer_based_tools_share_the_trainers_mechanisms_and_set_their_own_defaults() {
    use cost_model::plan::{LoraTargets, LoraVariant};
    let tools = [
        Framework::LlamaFactory,
        Framework::MsSwift,
        Framework::Axolotl,
        Framework::Unsloth,
    ];
    let variants = |fw: Framework| {
        let mut out = Vec::new();
        for (sharding, bits, ga) in [
            (Sharding::FsdpFull, 16, 2),
            (Sharding::Zero3, 16, 1),
            (Sharding::None, 4, 1),
            (Sharding::Ddp, 8, 4),
        ] {
            let mut p = bf16_plan("llama-3.1-8b", fw, 2048, 4, sharding);
            if sharding == Sharding::None {
                p.parallel.num_gpus = 1;
            }
            p.training.precision = Precision::AmpBf16;
            p.training.grad_accum = ga;
            p.training.finetune = Finetune::Lora {
                rank: 16,
                targets: LoraTargets::ALL_LINEAR,
                base_bits: bits,
                dropout: fw.defaults().lora_dropout,
                variant: LoraVariant::Lora,
            };
            out.push(p);
        }
        out
    };
    let trainer = Framework::HfTrainer.defaults();
    for fw in tools {
        assert!(fw.trains_through_trainer() && fw.fsdp_no_sync_accumulation());
        assert_eq!(Framework::from_id(fw.id()), Some(fw));
        for (mut p, reference) in variants(fw).into_iter().zip(variants(Framework::HfTrainer)) {
            // The tool's own defaults, set back to the Trainer's.
            let t = &mut p.training;
            t.loss = trainer.loss;
            t.checkpointing = reference.training.checkpointing;
            t.optimizer_impl = trainer.optimizer_impl;
            t.activation_offload = false;
            t.fused_kernels = false;
            t.nf4_double_quant = trainer.nf4_double_quant;
            t.kbit_fp32_prep = reference.training.kbit_fp32_prep;
            if let Finetune::Lora { dropout, .. } = &mut t.finetune {
                *dropout = trainer.lora_dropout;
            }
            let (a, b) = (estimate(&p).unwrap(), estimate(&reference).unwrap());
            assert_eq!(a.peak, b.peak, "{fw:?} {:?}", p.parallel.sharding);
        }
    }
    // Their defaults, as their sources set them.
    let d = |fw: Framework| fw.defaults();
    for fw in tools {
        assert_eq!(d(fw).checkpointing, Checkpointing::Full, "{fw:?}");
        assert_eq!(d(fw).optimizer_impl, OptimizerImpl::Fused, "{fw:?}");
        assert!(!d(fw).kbit_fp32_prep, "{fw:?}");
    }
    assert!(!d(Framework::LlamaFactory).lora_dropout);
    assert!(d(Framework::MsSwift).lora_dropout && d(Framework::Axolotl).lora_dropout);
    let u = d(Framework::Unsloth);
    assert!(u.activation_offload && u.fused_kernels && !u.lora_dropout);
    for fw in tools {
        assert!(d(fw).nf4_double_quant, "{fw:?}");
    }
    assert!(!trainer.nf4_double_quant);
    assert_eq!(u.loss, Loss::Fused);
    // Switching a plan to Unsloth brings them; switching away takes them back.
    let mut p = bf16_plan(
        "llama-3.1-8b",
        Framework::HfTrainer,
        2048,
        1,
        Sharding::None,
    );
    p.set_framework(Framework::Unsloth);
    assert!(p.training.activation_offload && p.training.fused_kernels);
    let unsloth = estimate(&p).unwrap();
    p.set_framework(Framework::HfTrainer);
    assert!(!p.training.activation_offload && !p.training.fused_kernels);
    assert_eq!(p.training.loss, Loss::Standard);
    let trainer_est = estimate(&p).unwrap();
    // Logits one chunk at a time, the checkpointed inputs on the host: far
    // less memory.
    let logits = |e: &cost_model::estimate::Estimate| phase(e, Phase::Forward).logits.get();
    assert!(logits(&unsloth) < logits(&trainer_est) / 10);
    let held = |e: &cost_model::estimate::Estimate| {
        let b = phase(e, Phase::Backward);
        b.activations.get() + b.logits.get()
    };
    assert!(held(&unsloth) < held(&trainer_est) / 10);
    assert!(unsloth.peak.allocated < trainer_est.peak.allocated);
}

/// transformers 4.46–4.48's `ForCausalLMLoss` copies the shifted upcast
/// logits (`logits[..., :-1, :].contiguous()`) beside the upcast inside the
/// loss's forward, while the model's 16-bit output is alive: 14 bytes per
/// logit there (2 + 4 + 4 + 4). Under the Trainer, which drops the output
/// before backward (12 bytes at its start), that moment is the loss's peak:
/// 2 bytes per logit more allocated than 4.49's (the reserve, and so
/// nvidia-smi, not: backward's start held as many segments); a loop that keeps the output already
/// holds 14 at backward's start, so its peak does not move. Compiled into the
/// model, a hand-written model's loss, or a release outside 4.46–4.48: no copy.
#[test]
fn transformers_4_46_to_4_48_copy_the_shifted_logits_inside_the_loss() {
    use cost_model::plan::TransformersRelease;
    let trainer = || {
        let mut p = Plan::default();
        p.model = preset("llama-3.1-8b").unwrap().spec();
        p.set_framework(Framework::HfTrainer);
        p.training.precision = Precision::Bf16;
        p.training.micro_batch = 2;
        p.training.seq_len = 4096;
        p.training.finetune = common::lora16_all();
        p.training.checkpointing = Checkpointing::Full;
        p.parallel.num_gpus = 1;
        p.parallel.sharding = Sharding::None;
        p
    };
    let with = |mut p: Plan, r: TransformersRelease| {
        p.training.transformers = r;
        p
    };
    let peak = |p: &Plan| estimate(p).unwrap().peak.allocated.get() as f64;
    let current = trainer();
    let old = with(trainer(), TransformersRelease::V4_46To4_48);
    // The forward moment's logits: 14 bytes per logit against 4.49's 8 (the
    // Trainer's count there: upcast and log-softmax), the final norm's alike.
    let fwd = logits_bytes(&old, Phase::Forward) - logits_bytes(&current, Phase::Forward);
    assert!(
        (fwd - 6.0 * LOGITS).abs() < 1e-6 * LOGITS,
        "forward moment grows by {} B per logit",
        fwd / LOGITS
    );
    // The backward's start is unchanged, so the peak grows by 2 bytes a logit.
    assert_eq!(
        logits_bytes(&old, Phase::Backward),
        logits_bytes(&current, Phase::Backward)
    );
    let grown = peak(&old) - peak(&current);
    assert!(
        (grown - 2.0 * LOGITS).abs() < 0.01 * LOGITS,
        "peak grows by {} B per logit",
        grown / LOGITS
    );
    // What the GPU holds does not: backward's start already reserved 14 bytes
    // a logit (the dropped output's segment beside its 12), which the loss's
    // forward fills as it goes.
    let used = |p: &Plan| estimate(p).unwrap().peak.device_used;
    assert_eq!(used(&old), used(&current));
    // A loop that keeps the output: 14 bytes at both moments, peak unchanged.
    let mut holding = trainer();
    holding.set_framework(Framework::HfAccelerate);
    holding.training.finetune = common::lora16_all();
    holding.training.checkpointing = Checkpointing::Full;
    assert_eq!(
        peak(&with(holding.clone(), TransformersRelease::V4_46To4_48)),
        peak(&holding)
    );
    // No copy outside the release, in a compiled model, or in LitGPT's code.
    assert_eq!(TransformersRelease::of(4, 45), TransformersRelease::Current);
    assert_eq!(
        TransformersRelease::of(4, 46),
        TransformersRelease::V4_46To4_48
    );
    assert_eq!(
        TransformersRelease::of(4, 48),
        TransformersRelease::V4_46To4_48
    );
    assert_eq!(TransformersRelease::of(4, 49), TransformersRelease::Current);
    assert_eq!(TransformersRelease::of(5, 0), TransformersRelease::Current);
    let mut compiled = trainer();
    compiled.training.compile = true;
    assert_eq!(
        peak(&with(compiled.clone(), TransformersRelease::V4_46To4_48)),
        peak(&compiled)
    );
    let mut litgpt = trainer();
    litgpt.set_framework(Framework::Litgpt);
    litgpt.training.finetune = common::lora16_all();
    assert_eq!(
        peak(&with(litgpt.clone(), TransformersRelease::V4_46To4_48)),
        peak(&litgpt)
    );
}

/// torchtune's 0.1 and 0.2 recipes copy the shifted fp32 logits
/// (`logits[..., :-1, :].contiguous()`) and hand cross-entropy their
/// transpose, whose log-softmax makes a contiguous copy first: one fp32
/// logits-sized tensor more at the loss's forward than 0.3's reshaped
/// logits; the recipes that do not `del logits` (all of 0.1's, 0.2's but the
/// LoRA distributed one) keep the shifted copy through backward, one more
/// there (torchtune 0.1.1, 0.2.0 and 0.2.1 `recipes/*_finetune_*.py`). And
/// their distributed recipes wrap with FSDP1, whose root unit keeps the
/// embedding and head gathered, where 0.3 on shards with FSDP2, the head a
/// unit of its own. Only a torchtune plan reads the release.
#[test]
fn torchtune_before_0_3_copies_its_shifted_logits_and_wraps_with_fsdp1() {
    use cost_model::plan::TorchtuneRelease;
    let with = |mut p: Plan, r: TorchtuneRelease| {
        p.training.torchtune = r;
        p
    };
    // LoRA at 2 × 4096, checkpointed, under the standard loss: the 0.1–0.2
    // recipes had no chunked one (the profile's default, 0.6.1's).
    let lora = |gpus, sharding| {
        let mut p = bf16_plan("llama-3.1-8b", Framework::Torchtune, 4096, gpus, sharding);
        p.training.finetune = common::lora16_all();
        p.training.checkpointing = Checkpointing::Full;
        p.training.loss = Loss::Standard;
        p
    };
    let single = lora(1, Sharding::None);
    let grown = |p: &Plan, r, ph| logits_bytes(&with(p.clone(), r), ph) - logits_bytes(p, ph);
    for r in [TorchtuneRelease::V0_1, TorchtuneRelease::V0_2] {
        for (ph, bytes) in [(Phase::Forward, 4.0), (Phase::Backward, 4.0)] {
            let g = grown(&single, r, ph);
            assert!(
                (g - bytes * LOGITS).abs() < 1e-6 * LOGITS,
                "{r:?} {ph:?}: {} B per logit more",
                g / LOGITS
            );
        }
        let old = with(single.clone(), r);
        assert!(old.old_torchtune() && !old.uses_fsdp2() && !old.fsdp_head_is_own_unit());
    }
    // 0.2's LoRA distributed recipe `del`s its logits before backward; 0.1's
    // does not.
    let lora_fsdp = lora(2, Sharding::FsdpFull);
    let loss_bwd = |r| logits_bytes(&with(lora_fsdp.clone(), r), Phase::Backward);
    assert_eq!(
        loss_bwd(TorchtuneRelease::V0_2),
        loss_bwd(TorchtuneRelease::Current)
    );
    let kept = loss_bwd(TorchtuneRelease::V0_1) - loss_bwd(TorchtuneRelease::Current);
    assert!(
        (kept - 4.0 * LOGITS).abs() < 1e-6 * LOGITS,
        "{}",
        kept / LOGITS
    );
    // FSDP1 under the old recipes: the root unit's embedding and head stay
    // gathered, so a full fine-tune over four ranks holds more than FSDP2's.
    let full = bf16_plan(
        "llama-3.1-8b",
        Framework::Torchtune,
        2048,
        4,
        Sharding::FsdpFull,
    );
    let comm = |p: &Plan| {
        phase(&estimate(p).unwrap(), Phase::Backward)
            .comm_buffers
            .get()
    };
    assert!(comm(&with(full.clone(), TorchtuneRelease::V0_2)) > comm(&full));
    assert!(full.uses_fsdp2() && full.fsdp_head_is_own_unit() && !full.old_torchtune());
    // Nor did they have tensor parallelism, which 0.6.1's full fine-tune has.
    let runs = Framework::Torchtune.layouts();
    assert!(runs.tensor_parallel_for(&full));
    assert!(!runs.tensor_parallel_for(&with(full.clone(), TorchtuneRelease::V0_2)));
    // Other frameworks ignore it; releases from 0.3 are the current one.
    let trainer = bf16_plan(
        "llama-3.1-8b",
        Framework::HfTrainer,
        4096,
        1,
        Sharding::None,
    );
    assert_eq!(
        estimate(&with(trainer.clone(), TorchtuneRelease::V0_1))
            .unwrap()
            .peak,
        estimate(&trainer).unwrap().peak
    );
    assert_eq!(TorchtuneRelease::of(0, 1), TorchtuneRelease::V0_1);
    assert_eq!(TorchtuneRelease::of(0, 2), TorchtuneRelease::V0_2);
    assert_eq!(TorchtuneRelease::of(0, 3), TorchtuneRelease::Current);
    assert_eq!(TorchtuneRelease::of(0, 6), TorchtuneRelease::Current);
}

/// Accelerate's FSDP preparation casts trainable 16-bit parameters to fp32
/// when mixed precision is on (the Trainer's `--bf16`; accelerate 0.30.1–1.16.0
/// `Accelerator.prepare_model`, `fsdp2_prepare_model`), and LLaMA-Factory does
/// outside DeepSpeed unless `pure_bf16` (llamafactory 0.9.5 `model/adapter.py`):
/// a pure bf16 full fine-tune there stores what the planner calls AMP, which
/// the planner and the CLI say (`Estimate::framework_upcasts`).
#[test]
fn the_trainer_under_fsdp_and_llamafactory_keep_a_pure_16_bit_full_fine_tune_in_fp32() {
    let trainer = |sharding| bf16_plan("llama-3.2-3b", Framework::HfTrainer, 1024, 4, sharding);
    for s in [Sharding::FsdpFull, Sharding::FsdpGradOp, Sharding::Hsdp] {
        assert!(trainer(s).framework_upcasts_trainable(), "{s:?}");
    }
    for s in [Sharding::Ddp, Sharding::Zero2, Sharding::Zero3] {
        assert!(!trainer(s).framework_upcasts_trainable(), "{s:?}");
    }
    // `--fp16`'s GradScaler refuses fp16 gradients: on one GPU and under DDP
    // the run had fp32 weights; DeepSpeed keeps its own fp32 master.
    let fp16 = |s| {
        let mut p = trainer(s);
        p.training.precision = Precision::Fp16;
        p.framework_upcasts_trainable()
    };
    assert!(fp16(Sharding::None) && fp16(Sharding::Ddp) && fp16(Sharding::FsdpFull));
    assert!(!fp16(Sharding::Zero2));
    let fsdp = trainer(Sharding::FsdpFull);
    let said = |p: &Plan| estimate(p).unwrap().framework_upcasts;
    assert!(said(&fsdp));
    // The figures stay the plan's as stated: AMP's are larger.
    // Nothing to say when the plan already stores fp32, for adapters, or
    // where the FSDP is not Accelerate's.
    let mut amp = fsdp.clone();
    amp.training.precision = Precision::AmpBf16;
    let mut lora = fsdp.clone();
    lora.training.finetune = lora_qv(16);
    let titan = bf16_plan(
        "llama-3.2-3b",
        Framework::Torchtitan,
        1024,
        4,
        Sharding::FsdpFull,
    );
    assert!(estimate(&amp).unwrap().peak.allocated > estimate(&fsdp).unwrap().peak.allocated);
    for p in [&amp, &lora, &titan] {
        assert!(!said(p), "{:?}", p.framework);
    }
    // LLaMA-Factory: on one GPU and under DDP too, not under DeepSpeed.
    let lf = |gpus, s| bf16_plan("llama-3.2-3b", Framework::LlamaFactory, 1024, gpus, s);
    assert!(lf(1, Sharding::None).framework_upcasts_trainable());
    assert!(lf(4, Sharding::Ddp).framework_upcasts_trainable());
    assert!(!lf(4, Sharding::Zero3).framework_upcasts_trainable());
}
