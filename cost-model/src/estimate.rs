//! The estimate: per rank (every pipeline stage), per phase, per component.
//!
//! One small function per memory component, every coefficient a named
//! constant citing its source. All arithmetic is f64 on validated inputs and
//! ends in saturating [`Bytes`]: no input can overflow or panic.

use crate::error::PlanError;
use crate::framework::Framework;
use crate::model::{Arch, Mlp, ModelHead, ModelSpec, Norm, Positions};
use crate::plan::{
    AdapterMethod, Attention, Checkpointing, Finetune, LoraTargets, LoraVariant, Loss, Objective,
    Offload, OffloadDevice, Optimizer, OptimizerImpl, PipelineSchedule, Plan, Precision, Sharding,
    GALORE_DEFAULT_RANK,
};
use crate::units::{Bytes, MIB};
use crate::validate::validate;
use serde::{Deserialize, Serialize};
use std::cell::Cell;

/// Version of the memory model; a saved plan records the version it was
/// estimated with so the UI can say when the numbers moved. Bumped whenever
/// any estimate changes: tests/model_version.rs fingerprints the estimates
/// of some 3,000 plans and fails until the bump and the new fingerprint are
/// recorded. Version 1 covered the first ten sessions' models (its numbers
/// moved without a bump); 2 is the eleventh session's; 3 runs an
/// encoder–decoder's backward working set at its largest block (the decoder's,
/// with cross-attention) rather than the average one, and adds the decoder's
/// own target length; 4 keeps a paged optimizer's states of tensors under
/// 10⁵ elements in device memory ([`PAGED_MIN_ELEMENTS`]) and counts the cuBLAS
/// workspaces in the allocator ([`CUBLAS_HANDLES`]); 5 keeps, under
/// autocast, the fp32 cast of the Python tanh GELU's input that `pow` saves;
/// 6 adds presets (the fingerprint then held no band) and re-derives the
/// uncertainty band's high edge ([`BAND_ABOVE`]); 7
/// keeps no input of a frozen 4-bit matrix under torchao's NF4 (torchtune) or
/// a stated bitsandbytes ≥ 0.43.2 without autocast
/// ([`crate::Plan::four_bit_matmul_keeps_input`]); 8 narrows the band's low
/// edge to the residuals that change left ([`BAND_BELOW`]), and the
/// fingerprint covers the band; 9 adds the Qwen3-235B-A22B preset; 10 reserves
/// in a phase the most any of its points reserved ([`phase_peak`]) and holds
/// SHARD_GRAD_OP's parameters sharded at rest, gathered in the compute dtype
/// from forward to backward (no plan of the fingerprint uses it), and keeps
/// Megatron's gradients on the GPU when its optimizer is offloaded; 11
/// gathers a sharded bitsandbytes 4-bit base as its packed codes and keeps
/// its scales whole on every rank (`replicated_quant_state_bytes`), casts
/// a frozen fp32 LM head under autocast once per chunk of a chunked head
/// (`lm_head_calls`), and keeps no autocast cast of a fully checkpointed
/// block's weights beyond its own backward (`autocast_copies`); 12 keeps the
/// full unsharded gradients an FSDP rank accumulates under `no_sync` through
/// the Trainer's, Accelerate's and LitGPT's gradient accumulation
/// (`unsharded_accumulated_grads`); its fingerprint's TRL plans checkpoint, as
/// TRL's configs do from 0.22; 13 counts the score-sized gradients of an
/// eager attention's backward under every checkpointing policy that
/// recomputes the scores, less the freed 16-bit cast of fp32 probabilities,
/// and the third one a block without checkpointing meets
/// ([`Ctx::score_grads_in_backward`]), and keeps attention dropout's output
/// instead of, not beside, the probabilities' 16-bit cast
/// ([`Ctx::attention_dropout_bytes`]; no plan of the fingerprint has it), and
/// adds a recomputed block's MLP gradients to its backward working set
/// ([`Ctx::recomputed_mlp_grads`]). 14 gives a block that kept its
/// activations its gradients alone at its backward, not a second copy of the
/// block ([`Ctx::kept_block_backward`]), and adds the final RMSNorm's fp32
/// backward as a moment of its own ([`Ctx::final_norm_backward`]). 15 keeps
/// T5's position-bias mask per SDPA call ([`Ctx::relative_bias`]) and, in
/// 16-bit, each `T5LayerNorm`'s input beside its fp32 copy
/// ([`Ctx::t5_norm_input_bytes`]), and keeps the float mask SDPA converts a
/// boolean one to in every block, with grouped k/v expanded, when the rows
/// are padded or a sliding window spans the sequence ([`Ctx::sdpa_mask_bytes`]).
/// 16 reserves again, at a checkpointed full fine-tune's loss, the loss
/// segments the first step's optimizer states stranded
/// ([`Ctx::stranded_loss_segments`]), under fp16 autocast gives a loss
/// that reads the 16-bit scores (an encoder's masked-LM head) CUDA's fp16
/// gradient ([`Ctx::half_to_float_loss`]), keeps the logits a loop holds
/// through the optimizer's step (`LogitsBytes::step`), and counts the
/// standard loss's forward moment (its upcast copy and log-softmax output)
/// apart from its backward's (the output and two gradients). 17 keeps a
/// ReLU MLP's output alone, which is fc2's input ([`ModelSpec::relu`]: OPT,
/// T5 v1.0), counts the norms Qwen3, Gemma-3 and OLMo-2 put on q and k
/// ([`ModelSpec::qk_norm`]; OLMo-2's norms scale in fp32), and gives a
/// fused projection one adapter (`block_matrices_of`: PEFT over GPT-2's
/// `c_attn`, GPT-NeoX's, Falcon's and BLOOM's `query_key_value`, Phi-3's
/// `qkv_proj`/`gate_up_proj`), lets the loss of an encoder's masked-LM
/// head and of an encoder–decoder run on its 16-bit scores in pure 16-bit
/// ([`Ctx::loss_bytes`]), and counts the adapters of a decoder block's
/// cross-attention ([`Ctx::decoder_block`]) — found by replaying eighteen
/// model families through the caching allocator
/// (`calibration/allocator_replay.py --families`); calibration rows take
/// their block dropout from the named checkpoint's config (a model no preset
/// names, by its positions' era). 18 lets T5's loss read its fp16 scores
/// under fp16 autocast as an encoder's does (CUDA's `half_to_float`), holds
/// the scores BART's fp32 `final_logits_bias` promotes as fp32
/// ([`ModelSpec::logits_bias`]), and counts T5 v1.1's inner dropout mask —
/// found by replaying the non-decoder families under fp16 autocast. 19
/// counts what the stacks keep outside their blocks ([`Ctx::stack_ends`]:
/// embedding dropout masks, BERT's and BART's embedding LayerNorm input, an
/// encoder–decoder's encoder output and T5's encoder end), a final norm as
/// a block norm is counted ([`Ctx::final_norm_kept_bytes`]: its scale's
/// normalised tensor, T5's input and final dropout mask, a masked-LM head's
/// transform) and T5 v1.1's fp32 GELU output under autocast — found by
/// listing the tensors alive at the replayed peaks —, lets a recomputed
/// block reuse the kept input its first op saves as it is
/// ([`Ctx::recompute_reuses_input`]), casts a plain MLP's input once
/// under autocast (it had been counted for a gate it does not have) and
/// keeps the mask a model's code always hands SDPA ([`ModelSpec::sdpa_mask`]:
/// Falcon). 20 reserves 2 % over allocated, not 7 %, for a frozen base
/// trained without recomputation on one GPU or under DDP
/// ([`ALLOCATOR_RESERVE_FRACTION_FROZEN_NO_RECOMPUTE`]), and re-derives the
/// band ([`BAND_BELOW`], [`BAND_ABOVE`]); a 4-bit base quantized from fp16
/// (LitGPT through Fabric's `BitsandbytesPrecision`) holds the fp16
/// dequantized matrix beside its cast ([`Ctx::dequantized_bytes_per_weight`]),
/// and an 8-bit base under a release before 0.45.0 keeps LLM.int8's int8
/// copy of every matmul input ([`Ctx::int8_input_copies`]; no plan of the
/// fingerprint has an 8-bit base). 21 counts what older PyTorch releases
/// keep ([`crate::plan::PytorchRelease`]: softmax's and log-softmax's input
/// up to 1.10, an RMSNorm's fp32 square from 1.13 to 2.1; no plan of the
/// fingerprint names a release) and re-derives the band ([`BAND_BELOW`],
/// [`BAND_ABOVE`]). 22 keeps, in a compiled model whose loss runs in the
/// graph, the loss's logit-sized buffers through the head's backward, and
/// through the blocks' when the head is tied to a trained embedding
/// ([`Ctx::compiled_tied_head_keeps_logits`]), and lets FSDP2 gather its
/// units on a single rank ([`Ctx::gathers_units`]) — both found on the H200
/// (calibration/h200-2026-12-04). 23 runs DeepSpeed's 16-bit model without
/// autocast ([`Ctx::runs_autocast`]), sizes ZeRO-3's IPG bucket in the
/// engine's communication dtype ([`Ctx::zero3_ipg_bucket`]), keeps a
/// frozen 16-bit base linear's input under ZeRO-3's own linear
/// ([`Ctx::zero3_linear_keeps_input`]) and holds what ZeRO-3 fetched on its
/// own stream reserved beside the default stream's
/// ([`Ctx::zero3_fetch_stream_pool`]) — found on the H200
/// (calibration/h200-2026-12-04-deepspeed). 24 counts the host's offloaded
/// states in the dtypes the runtimes keep them in ([`Ctx::offloaded_stage`]:
/// fp32 or packed 4-bit parameter shards, FSDP1's pinned gradient for every
/// flat parameter, DeepSpeed's master copies and gradient partitions) and
/// moves the optimizer off the GPU with FSDP's parameter offload
/// ([`Ctx::offload_of`]); no calibration row's GPU figure moved. 25 reserves,
/// under FSDP1's parameter offload, the pool of its pre-unshard stream
/// ([`Ctx::fsdp1_offload_copy_pool`]) and the segments wrapping a host-loaded
/// model left cached ([`Ctx::fsdp1_wrap_cache`]) — found on the H200
/// (calibration/h200-2026-12-04-fsdp1). 26 holds, beside the loss of a
/// frozen base trained with recomputation, the segments its blocks' forward
/// left idle ([`Ctx::idle_block_transients`]) — found in the allocator
/// replays of sixteen families and the FSDP2-offload LoRA run's trace. 27
/// keeps, at the loss's backward of a frozen base whose loop dropped the
/// model's output (the Trainer's order), the 16-bit logits' segment
/// ([`Ctx::dropped_logits_segment`]) — replayed in ten families, and the
/// H200's single-GPU Trainer LoRA and QLoRA runs' reserve. 28 keeps the
/// segments DeepSpeed's ZeRO-1/2 optimizer leaves cached as it is built
/// ([`Ctx::zero12_flatten_cache`], by release:
/// [`crate::plan::DeepspeedRelease`]) and, with its optimizer on the host
/// under `overlap_comm`, its reduction stream's fp64 gradient copies
/// ([`Ctx::zero2_offload_norm_pool`]); under ZeRO-3 with its optimizer on
/// the host, the reduce stream's norm chunks and gradient copies
/// ([`Ctx::zero3_offload_reduce_pool`]) and, with everything on the host,
/// the dropped logits' segment ([`Ctx::dropped_logits_segment`]) — found in
/// the H200's DeepSpeed runs' start-up segments and peaks; free cached
/// floors stop at the GPU's capacity. 29 repeats grouped k/v to every head
/// when a model's code always hands SDPA a mask ([`ModelSpec::sdpa_mask`]:
/// Falcon-40B's new decoder; replayed, its LoRA run was −4.8 % without it)
/// and never repeats a single k/v head, which `repeat_kv` only views
/// ([`Ctx::sdpa_gets_a_mask`]); drops out no MLP inner activation in BART's
/// encoder–decoder lineage (only T5's, relative positions), upcasts the
/// masked-LM loss of rotary encoders (ModernBERT's `ForMaskedLMLoss`),
/// gives Gemma-3 its sliding window (replayed: Gemma-3-1B −1.3 → +0.1 %),
/// adapts GLM's one `gate_up_proj` as one module
/// ([`ModelSpec::fused_gate_up`]), keeps a fused q/k/v output whose v view
/// SDPA keeps unrepeated (Phi-4-mini's grouped k/v, transformers 5.25's
/// Falcon-7B), keeps gpt-oss's softmax over its sinks in the scores' dtype
/// ([`ModelSpec::attention_sinks`]) and its clamped GLU's tensors
/// ([`ModelSpec::clamped_glu`]), and runs every Llama-4 expert on every
/// token under transformers ([`ModelSpec::dense_experts`]) — all found in
/// allocator replays. 30 counts the end of a recomputed block's forward when
/// PEFT LoRA adapts its down projection, above the MLP backward it was
/// compared with ([`Ctx::mlp_adapter_transients`]; replayed ByT5 LoRA
/// −8.6 → −2.2 %, Llama-3.2-1B classifiers −8.3/−9.9 % → −1.7/+0.2 %), and a
/// third MLP-wide gradient where a frozen, unadapted down projection kept
/// none of its input ([`Ctx::down_keeps_nothing`]). 31 keeps the input
/// embedding's output where PEFT under checkpointing makes it a leaf that
/// requires a gradient, and what runs on it before the first block
/// ([`Ctx::embedding_output_leaf`]; replayed checkpointed LoRA: T5-base
/// −1.8 → −0.5 %, BART-large −1.4 → −0.2 %, ByT5 −2.2 → +0.1 %). 32 counts
/// the forward's last adapted MLP in flight on top of every block's saved
/// tensors, a classifier's forward peak (replayed, eleven of fourteen
/// families' LoRA without checkpointing to within ±0.2 %). 33 gives
/// ModernBERT its 128-token local attention (presets, config import), whose
/// per-layer float masks SDPA keeps (replayed without checkpointing: −1.3 …
/// −2.5 % → −0.4 … +0.8 %). 34 keeps each adapter's own 16-bit copy of its
/// input under autocast without dropout ([`Ctx::lora_copies_input`]) and the
/// final norm's fp32 gradient at the top block's recompute (replayed LoRA
/// without dropout: classifiers under autocast −4.9 … −1.4 % → +0.2 … +0.3 %,
/// checkpointed bf16 −1.9 … −1.3 % → 0.0 %). 35 keeps the checkpointed
/// forward's block segments idle through a classifier's full fine-tune
/// ([`Ctx::idle_classifier_block_segments`]; replayed reserved −13.0 … −5.0 %
/// → −5.5 … +4.7 %, Gemma's eager blocks over). 36 makes a recomputed
/// block's MLP backward and its attention backward two moments
/// ([`Ctx::recomputed_attention_moment`]: replayed eager Gemma classifiers
/// +8 … +14 % → −1.4 … +3.8 % allocated), with SDPA's math kernel holding
/// one score tensor more at the attention's than the autograd graph shows
/// (measured: QLoRA Mistral-7B on the H200). 37 keeps the MLP's
/// intermediates in fp32 where bitsandbytes' 4-bit linears hand fp32 back
/// under autocast after `prepare_model_for_kbit_training`
/// ([`Ctx::quantized_outputs_in_fp32`]), and a stated bitsandbytes 0.43.2 or
/// later keeps no input of a frozen 4-bit matrix under autocast too (H200
/// QLoRA Mistral-7B without checkpointing −5.09 → +0.33 % allocated); a
/// fused qkv output is no longer kept whole there, and a single k/v head
/// cast to 16 bits is copied to every head (replayed QLoRA Pythia +5.9 →
/// +0.4 %, Falcon-7B −5.8 → +0.2 %). An encoder–decoder keeps 36's upper
/// bound whatever its target's length (36 released the MLP's tensors when
/// the target matched the source, and fell there). 38 has a LayerNorm hand
/// the 4-bit linears fp32 under autocast without the k-bit preparation too
/// (replayed QLoRA without it: OPT, Falcon-7B, StableLM-2, Pythia −4.8 …
/// −15.3 % → +0.2 … +1.3 % allocated), and reads notes that say the
/// preparation did not run. 39 computes TRL's loss through its own fused LM
/// head ([`Loss::TiledLogprob`], TRL 1.15 on: the framework profile's default,
/// and a case row that states such a release), so a TRL plan that names no
/// loss no longer holds the logits, and counts a 4-bit base's frozen down
/// projection as keeping nothing of its input under bitsandbytes ≥ 0.43.2
/// (its input's gradient in full at the recomputed MLP's backward). 40
/// counts DPO under the standard loss as TRL 0.29 to 1.13 ran it through the
/// model's logits ([`Ctx::dpo_logits`]): the policy's and the reference's
/// logits and the metrics' copy at the forward's end, fp32 under the
/// Trainer's AMP, instead of the causal-LM loss's tensors (replayed
/// Llama-3.2-1B, Qwen2.5, Qwen3, SmolLM2, Gemma-2: −20.8 … +44.0 %
/// allocated → within ±0.5 %), and has TRL's chunked NLL, its SFT default
/// from 1.7 to 1.14 ([`Loss::ChunkedNll`]; replayed +14.8 … +610 % read as
/// the Trainer's loss → within 1.6 %), and reserves the segment of TRL's SFT
/// metrics' copy of the logits under the Trainer's AMP
/// ([`Ctx::trl_metrics_copy_segment`]), and reads LLaMA-Factory's DPO logits
/// as fp32 whatever the precision ([`Ctx::dpo_logit_bytes`]). 41 counts ORPO
/// (SimPO, CPO) through the model's logits as TRL's `ORPOTrainer` and
/// LLaMA-Factory run it ([`Ctx::orpo_logits`]; under TRL its default loss,
/// [`Plan::default_loss`], where it had been read with TRL's fused head:
/// replayed −75.7 … −9.4 % allocated → within 0.5 %), with TRL's log-prob
/// kernel as a setting ([`crate::plan::TrainingSpec::logprob_kernel`]) and
/// the segments its backward cannot use ([`Ctx::orpo_idle_segments`]), and
/// LLaMA-Factory's KTO through its logits ([`Ctx::kto_logits`]: −37.1 …
/// −3.6 % → −1.5 … +6.7 %); a precomputed reference drops no reference
/// output under AMP.
pub const MODEL_VERSION: u32 = 41;

// ---------------------------------------------------------------------------
// Coefficients
// ---------------------------------------------------------------------------

/// CUDA context plus lazily loaded kernels (cuBLAS, cuDNN, NCCL, PyTorch's
/// own), MiB, outside the caching allocator. DESIGN.md §3 ("hundreds of MiB,
/// grows with the CUDA version"); an idle `torch.cuda.init()` process holds
/// 400–600 MiB on CUDA 12 (fixture smi_table_28: a bare conda python at 510
/// MiB), but a training process has loaded its kernels too: on the H200
/// (torch 2.11, CUDA 13, calibration/h200-2026-11-30) nvidia-smi's used minus
/// `max_memory_reserved` was 767 MiB in every one of the 46 runs (621 MiB of it
/// right after context creation).
pub const CUDA_CONTEXT_MIB: u64 = 768;

/// cuBLAS workspace per handle, MiB. PyTorch allocates it through its caching
/// allocator (so it counts in `memory_allocated`) at a handle's first matmul and
/// keeps it: `aten/src/ATen/cuda/CublasHandlePool.cpp`, `parseChosenWorkspaceSize`,
/// default `:4096:8` (32 MiB) on compute capability 9.0 (Hopper) and
/// `:4096:2:16:8` (8.125 MiB) on other GPUs.
pub const CUBLAS_WORKSPACE_HOPPER_MIB: f64 = 32.0;
pub const CUBLAS_WORKSPACE_MIB: f64 = 8.125;
/// cuBLAS handles with a workspace in a training step: handles are per
/// thread, and autograd runs the backward's matmuls on its own device thread
/// beside the forward's (and the optimizer's) main thread. Measured: every
/// LoRA run on the H200 held 64 MiB after its first step beyond the states it
/// made (calibration/h200-2026-11-30: r16 on q and v, 116 MiB for 52 of states;
/// every linear, 384 for 320).
pub const CUBLAS_HANDLES: f64 = 2.0;

/// NCCL buffers per communicator, MiB, outside the allocator: ≈0.5–0.7 GB per
/// communicator on NVLink machines (NVIDIA/nccl#964, DESIGN.md §3).
pub const NCCL_PER_COMMUNICATOR_MIB: u64 = 512;

/// Caching-allocator reserve over peak allocated (rounding to 2 MiB blocks,
/// cached free blocks, fragmentation): "several percent" (DESIGN.md §3).
pub const ALLOCATOR_RESERVE_FRACTION: f64 = 0.07;

/// With `expandable_segments:True` the allocator maps pages into growing
/// segments, so little is stranded (PyTorch docs, "CUDA memory management").
pub const ALLOCATOR_RESERVE_FRACTION_EXPANDABLE: f64 = 0.02;

/// Caching-allocator reserve over peak allocated for a frozen base trained
/// without recomputation on one GPU or under DDP
/// ([`Ctx::frees_in_reverse`]): the step makes no parameter-shaped tensor
/// of any size (no gradients, no optimizer states beyond an adapter's, all
/// under 1 MiB a tensor and so in the small pool), and the backward frees the
/// forward's kept tensors in the reverse of the order it made them, so a
/// freed block is asked for again at its own size. Measured on the H200
/// (calibration/h200-2026-11-30, `max_memory_reserved` over
/// `max_memory_allocated`): LoRA and QLoRA without checkpointing 1.3, 1.6,
/// 2.5, 2.6 and 4.3 % (the same loop with checkpointing 5.2–19.8 %, full
/// fine-tunes without it 0.5–13.4 %); replayed through the allocator's rules
/// (calibration/allocator_replay.py, 17 families) median 2.0 %; under the
/// flat [`ALLOCATOR_RESERVE_FRACTION`], ten of the public PEFT MetaMathQA
/// benchmark's eleven adapters without checkpointing sat +2.0 … +7.6 % over
/// their measured `max_reserved`.
pub const ALLOCATOR_RESERVE_FRACTION_FROZEN_NO_RECOMPUTE: f64 = 0.02;

/// Bytes per element of an fp32 tensor.
const FP32: f64 = 4.0;
/// Bytes per element of a 16-bit tensor.
const HALF: f64 = 2.0;
/// Bytes per element of a float8 tensor (E4M3/E5M2; the per-tensor scales
/// are a few bytes).
const FP8: f64 = 1.0;
/// Bytes per weight of a Transformer Engine linear's float8 copies: row-wise
/// for the forward GEMM and column-wise (transposed: Hopper's float8 GEMMs
/// take only the TN layout) for the input gradient, both made when the input
/// needs a gradient (transformer_engine 2.20.2 `pytorch/module/linear.py`:
/// `weight_quantizer.set_usage(rowwise=True, columnwise=columnwise_usage)`
/// with `columnwise_usage = is_grad_enabled and args.input_requires_grad`).
const FP8_WEIGHT_COPY_BYTES: f64 = 2.0;
/// Bytes of a dropout mask element (`torch.bool`); Korthikanti et al. 2022 §4.1.
const MASK: f64 = 1.0;

/// bitsandbytes NF4 storage: 4 bits per weight plus one fp32 absmax per
/// 64-weight block (Dettmers et al., QLoRA, 2023, §2: 32/64 = 0.5 bit/param).
const NF4_BYTES_PER_PARAM: f64 = 0.5 + 4.0 / 64.0;
/// Double-quantized NF4: the 64-weight blocks' scales stored as int8, with one
/// fp32 factor per 256 of them (QLoRA §2, "Double Quantization": 0.127 bit
/// per parameter instead of 0.5) — torchao's `NF4Tensor`
/// (`to_nf4(block_size=64, scaler_block_size=256)`), which torchtune's QLoRA
/// models always use. LitGPT's resource table measures the bitsandbytes
/// equivalent ("nf4-dq") 0.055 GiB below "nf4" for phi-1.5's 1.2 B quantized
/// weights: 0.047 B per parameter, as here (and 0.149 / 0.279 / 0.55 GiB for
/// StableLM-3B's, Llama-2-7B's and -13B's, against 0.149 / 0.287 / 0.56 here).
const NF4_DOUBLE_QUANT_BYTES_PER_PARAM: f64 = 0.5 + 1.0 / 64.0 + 4.0 / (64.0 * 256.0);
/// Elements from which bitsandbytes' paged optimizers page a tensor's states
/// (`Optimizer8bit.get_state_buffer`: smaller ones get `torch.zeros_like`).
const PAGED_MIN_ELEMENTS: f64 = 1e5;
/// bitsandbytes LLM.int8(): one byte per weight plus row-wise fp32 scales (negligible).
const INT8_BYTES_PER_PARAM: f64 = 1.0;
/// LLM.int8's int8 copy of a matmul's input, kept for the weight gradient
/// ([`Ctx::int8_input_copies`]): one byte per input element.
const INT8_INPUT_COPY_BYTES: f64 = 1.0;
/// The packed 4-bit codes alone, two weights a byte (QLoRA §2): what FSDP or
/// ZeRO-3 shards and gathers of a bitsandbytes 4-bit weight, whose block
/// scales (`quant_state`) are no part of the parameter's storage.
const NF4_PACKED_BYTES_PER_PARAM: f64 = 0.5;

/// Adam keeps two states (exp_avg, exp_avg_sq) per trainable parameter
/// (Loshchilov & Hutter, AdamW; ZeRO paper's K = 12 with the fp32 master).
const ADAM_STATES: f64 = 2.0;

/// bitsandbytes 8-bit Adam: two 1-byte states per parameter plus block-wise
/// fp32 quantisation statistics (Dettmers et al., "8-bit Optimizers via
/// Block-wise Quantization", 2022: ~2 bytes/param).
const ADAM_8BIT_BYTES: f64 = 2.0;

/// Muon's states per hidden matrix element: the momentum buffer
/// (`state["momentum_buffer"] = torch.zeros_like(p)`, torch 2.11
/// `optim/_muon.py`, which takes 2-D parameters only; timm 1.0's `Muon`
/// keeps the same and falls back to AdamW for 1-D ones).
const MUON_STATES: f64 = 1.0;

/// Adan's states per element: `exp_avg`, `exp_avg_sq`, `exp_avg_diff` and
/// `neg_pre_grad` (timm 1.0 `optim/adan.py`; Xie et al. 2022, Algorithm 1
/// keeps three moments and the previous gradient).
const ADAN_STATES: f64 = 4.0;

/// Logits-sized tensors alive at the loss backward with full cross-entropy:
/// the upcast logits, the log-softmax output and its gradient — "about three
/// logits-sized fp32 tensors" (DESIGN.md §3b; transformers PR #33902 measured
/// 18.5 vs 10.6 GiB for Llama-3.1-8B with and without `logits.float()`).
/// Without an upcast they are in the logits' dtype: Liger-Kernel's benchmark
/// data (liger_kernel 0.8.5 sdist, `benchmark/data/all_benchmark_data.csv`,
/// A100, an `nn.Linear` head + `CrossEntropyLoss` on bf16 logits, H 4096,
/// V 128256) grows by 6.1 bytes per logit with the token count.
const LOSS_STANDARD_TENSORS: f64 = 3.0;

/// The shifted fp32 copy of the logits transformers 4.46–4.48's
/// `ForCausalLMLoss` makes beside its upcast (`shift_logits =
/// logits[..., :-1, :].contiguous()`, 4.46.3 and 4.48.3 `loss/loss_utils.py`;
/// one position fewer per sequence, counted whole).
const LOSS_SHIFTED_COPIES: f64 = 1.0;
/// LitGPT `chunked_cross_entropy` with a chunked LM head keeps every 16-bit
/// logits chunk and its 16-bit log-softmax (litgpt/utils.py).
const LOSS_CHUNKED_KEEP_BYTES_PER_LOGIT: f64 = 2.0 * HALF;
/// torchtune `CEWithChunkedOutputLoss` (torchtune/modules/loss/ce_chunked_output_loss.py):
/// the decoder returns a list of 16-bit logits chunks (`chunked_output`), and
/// `compute_cross_entropy` runs `F.cross_entropy(logits.float(), ...)` on each.
/// Eagerly, each chunk's log-softmax keeps its fp32 output for backward
/// (`LogSoftmaxBackward` saves `result`) while the recipe still holds the
/// 16-bit list until `del logits` after the loss: 16-bit + fp32 bytes per
/// logit at the end of the loss forward, the fp32 outputs alone as backward
/// starts. Compiled (torchtune's `compile_loss` compiles
/// `compute_cross_entropy` in place), the partitioner saves the 16-bit chunk
/// and recomputes the upcast: the 16-bit list alone, each chunk's gradient
/// taking the place of its logits as backward walks the chunks (the chunks'
/// loss nodes run before any LM-head chunk's, being created later).
const LOSS_CHUNKED_FREE_EAGER_BYTES_PER_LOGIT: f64 = FP32;
/// `CEWithChunkedOutputLoss(num_output_chunks=8)`, torchtune's default.
const LOSS_CHUNKED_FREE_CHUNKS: f64 = 8.0;
/// Positions per LM-head call under LitGPT's chunked head: its fine-tuning
/// scripts call `model(input_ids, lm_head_chunk_size=128)`, and `GPT.forward`
/// returns `[self.lm_head(x_i) for x_i in x.split(lm_head_chunk_size, dim=1)]`
/// (litgpt 0.4.0 `finetune/lora.py`, `lora.py`; lit-gpt 2023 the same).
const LITGPT_LM_HEAD_CHUNK: f64 = 128.0;
/// Eager backward of one chunk: the NLL's dense fp32 gradient, log-softmax's
/// fp32 input gradient and the cast back to 16 bits.
const LOSS_CHUNKED_FREE_EAGER_CHUNK_TENSORS_FP32: f64 = 2.0;
/// Fused linear-cross-entropy (Liger) never materialises the logits: it
/// sizes its chunk so that a chunk of logits is about as large as the hidden
/// input (liger_kernel 0.8.5 `fused_linear_cross_entropy_forward`:
/// `inc_factor = cdiv(V, chunk_mem_const · H)`, `chunk_size =
/// next_power_of_2(cdiv(BT, inc_factor))`, `_CHUNK_MEM_CONST = 1`), in the
/// input's dtype, its gradient written in place; `grad_input` is a
/// `zeros_like` of the whole input. Cut Cross-Entropy (Wijmans et al. 2024,
/// arXiv:2411.09009; apple/ml-cross-entropy) computes the logits block by
/// block in on-chip memory and keeps only a per-token fp32 log-sum-exp and the
/// input's gradient: the same input gradient, no chunk — so the Liger chunk,
/// at most about the input's size, bounds it from above.
const FUSED_LOSS_CHUNK_MEM_CONST: f64 = 1.0;
/// Positions per tile of TRL's fused LM head ([`Loss::TiledLogprob`]):
/// `TOKEN_CHUNK_SIZE = 4096` (trl 1.15.0 and 1.16.0
/// `kernels/chunked_logprob.py`); the tile buffer `mm_buf` is
/// `min(N, TOKEN_CHUNK_SIZE) × chunk_size` in the compute dtype, allocated
/// once in forward and once in backward.
const TILED_LOGPROB_TOKENS: f64 = 4096.0;
/// Vocabulary entries per tile of TRL's fused LM head:
/// `_CHUNKED_LOGPROB_CHUNK_SIZE = 32768` (trl 1.15.0 and 1.16.0
/// `trainer/utils.py`, passed as `chunk_size` by `add_fused_lm_head`).
const TILED_LOGPROB_VOCAB: f64 = 32768.0;
/// The caching allocator rounds a large allocation to a multiple of 2 MiB
/// (`kRoundLarge`, c10/cuda/CUDACachingAllocator.cpp `round_size` for sizes
/// over `kSmallSize`; PyTorch 2.0–2.11): a free block serves a request only
/// if it is at least the rounded size.
const ALLOCATOR_LARGE_ROUND: f64 = 2.0 * 1024.0 * 1024.0;
/// Positions per chunk of TRL's chunked NLL ([`Loss::ChunkedNll`]):
/// `_CHUNKED_LM_HEAD_CHUNK_SIZE = 256` (trl 1.4.0 to 1.14.2
/// `trainer/sft_trainer.py`).
const CHUNKED_NLL_TOKENS: f64 = 256.0;
/// fp32 chunk-sized tensors (256 positions × the vocabulary) alive at once in
/// a chunk of TRL's chunked NLL, in its forward and again as backward
/// recomputes it (`_chunk`): the upcast logits, their log-softmax, its
/// exponential and their product for the entropy — in backward the
/// log-softmax and exponential the recompute saved beside the NLL's and the
/// log-softmax's gradients. Replayed with trl 1.14.2's code
/// (`calibration/allocator_replay.py --trl-chunked-nll`).
const CHUNKED_NLL_CHUNK_FP32_TENSORS: f64 = 4.0;
/// Logits-sized tensors alive as TRL's DPO through the model's logits logs
/// its metrics ([`Ctx::dpo_logits`]; trl 0.29.0 to 1.13.0
/// `DPOTrainer._compute_loss`): the policy's logits, the reference's (bound
/// to `ref_outputs` until the loss returns) and the flattened copy of the
/// shifted policy logits `entropy_from_logits` makes (`reshape` of a
/// non-contiguous view), beside the per-row log-softmax outputs a 16-bit
/// `selective_log_softmax` keeps for backward. Replayed with trl 1.13.0's
/// code (`calibration/allocator_replay.py --trl-dpo-logits`).
const DPO_LOGITS_METRICS_TENSORS: f64 = 3.0;
/// Logits-sized tensors alive at the forward of a reference-free preference
/// loss ([`Ctx::orpo_logits`]): as TRL's ORPO computes its chosen rows' NLL
/// (trl 1.16.0 `experimental/orpo/orpo_trainer.py` `concatenated_forward`),
/// the model's logits, the chosen half's shifted logits made contiguous for
/// `nn.CrossEntropyLoss` and that loss's log-softmax output (each half the
/// rows); in LLaMA-Factory's, the logits and their whole log-softmax.
/// Replayed with their code (`calibration/allocator_replay.py
/// --trl-orpo-kernel`, `--llamafactory-orpo`).
const ORPO_LOGITS_FWD_TENSORS: f64 = 2.0;
/// Logits-sized tensors at the backward of TRL's ORPO from 1.14.0, whose
/// `selective_log_softmax` runs a Triton kernel on CUDA that saves the logits
/// and makes their gradient contiguous (`_LogProbEntropyFunction`, trl 1.16.0
/// `kernels/logprob_entropy.py`): the logits, that gradient and the shift's
/// `slice_backward` into a zeroed logits-sized one; in LLaMA-Factory's, the
/// saved log-softmax, the gather's zeroed gradient and the log-softmax's.
/// Replayed (`--trl-orpo-kernel`, `--llamafactory-orpo`): 3 × 4 B a logit
/// under the Trainer's AMP (and in any precision for LLaMA-Factory, which
/// upcasts), 3 × 2 B in TRL's pure bf16 (trl ≤ 1.13's row-wise
/// `selective_log_softmax` keeps more in fp32:
/// [`ORPO_ROWWISE_FP32_BWD_TENSORS`]).
const ORPO_LOGITS_BWD_TENSORS: f64 = 3.0;
/// fp32 logits-sized tensors at the forward's peak of LLaMA-Factory's KTO
/// ([`Ctx::kto_logits`]; llamafactory 0.9.5 `train/kto/trainer.py`): the
/// policy's upcast logits, their saved log-softmax and its desirable and
/// undesirable rows' logits (boolean-mask copies, the logits' size between
/// them), then as the reference's passes run the reference's logits and a
/// log-softmax of its. Replayed with its code
/// (`calibration/allocator_replay.py --llamafactory-kto`): five in AMP and in
/// pure bf16, LoRA and full fine-tunes.
const KTO_LOGITS_FWD_TENSORS: f64 = 5.0;
/// fp32 logits-sized tensors at the backward of TRL's ORPO up to 1.13, whose
/// `selective_log_softmax` takes a logsumexp row by row
/// ([`crate::plan::TrainingSpec::logprob_kernel`] off): DPO's four
/// ([`DPO_LOGITS_FP32_BWD_TENSORS`]) and the chosen half's log-softmax, still
/// saved for its NLL's backward. Replayed with trl 1.13.0's
/// `selective_log_softmax` (`calibration/allocator_replay.py --trl-orpo`);
/// 16-bit logits hold the kernel's three ([`ORPO_LOGITS_BWD_TENSORS`]).
const ORPO_ROWWISE_FP32_BWD_TENSORS: f64 = 4.5;
/// 16-bit outputs a DPO step under the Trainer's AMP drops for their fp32
/// copies, each leaving a segment idle at its backward's peak: the policy's
/// and the reference's ([`Ctx::dropped_output`]).
const DPO_DROPPED_OUTPUTS: f64 = 2.0;
/// Rows of logits `entropy_from_logits` works on at a time (`chunk_size=128`,
/// trl 0.29.0 to 1.13.0 `trainer/utils.py`): a chunk's log-softmax, its
/// exponential and their product are alive at once.
const TRL_ENTROPY_CHUNK_ROWS: f64 = 128.0;
/// Temporaries per logit of an entropy chunk ([`TRL_ENTROPY_CHUNK_ROWS`]).
const TRL_ENTROPY_CHUNK_TENSORS: f64 = 3.0;
/// fp32 logits-sized tensors as the backward of an fp32 `selective_log_softmax`
/// (a gather beside a per-row logsumexp) runs: the logits the logsumexps saved,
/// the gather's `new_zeros` and its out-of-place `scatter_add`, and the rows'
/// gradients stacked by `unbind`'s backward (replayed, `--trl-dpo-logits`).
const DPO_LOGITS_FP32_BWD_TENSORS: f64 = 4.0;
/// 16-bit logits-sized tensors in the backward of a 16-bit
/// `selective_log_softmax`: the rows' log-softmax gradients stacked by
/// `unbind`'s backward and the shift's `slice_backward` (the logits themselves
/// are not saved: a log-softmax keeps its output).
const DPO_LOGITS_16BIT_BWD_TENSORS: f64 = 2.0;

/// Blocks' worth of activation-sized tensors alive on top of the kept ones
/// while a recomputed block (or one whose activations come back from the CPU)
/// runs its backward. PyTorch's autograd engine frees a node's saved tensors
/// only when that node's backward has run; a block that kept its activations
/// holds its gradients alone ([`Ctx::kept_block_backward`]).
const BACKWARD_WORKING_BLOCKS: f64 = 1.0;

/// MLP-wide gradients a recomputed gated MLP's backward holds beside the
/// recomputed block at once, net of the product the down projection kept
/// ([`Ctx::recomputed_mlp_grads`]): the gradients of the activation and of
/// the up projection.
const MLP_GRADS_GATED: f64 = 2.0;
/// The same for a plain MLP: the activation's input gradient.
const MLP_GRADS_PLAIN: f64 = 1.0;
/// Hidden-sized gradients alive through a block's MLP backward: the one
/// flowing into the block and the MLP output's.
const HIDDEN_GRADS_IN_MLP_BACKWARD: f64 = 2.0;

/// fp32 hidden-sized gradients alive at once in the backward of an RMSNorm
/// written as fp32 tensor ops ([`Ctx::final_norm_backward`]): at `pow`'s
/// backward, the gradient of the fp32 input accumulated from the product's
/// backward beside `pow`'s three (`x.pow(1)`, `· 2`, `· grad`, of which the
/// last is its gradient). Counted on the CPU allocator
/// (`calibration/cpu_allocator.py timeline llama,2816,bf16,1,0`): 12 bytes per
/// token per hidden unit made in `PowBackward0` over 4 for the input's
/// gradient and 4 for the saved fp32 input.
const FINAL_NORM_BACKWARD_FP32_TENSORS: f64 = 4.0;

/// Hidden-sized tensors beside a kept block's MLP gradients
/// ([`Ctx::kept_block_backward`]): the gradient flowing into the block.
const HIDDEN_GRADS_IN_KEPT_MLP_BACKWARD: f64 = 1.0;

/// Score-sized tensors (in softmax's dtype) more than the autograd graph
/// shows at a recomputed block's attention backward when the scores come
/// from SDPA's math kernel on CUDA ([`Ctx::recomputed_attention_moment`]).
/// Measured on the H200 (calibration/h200-2026-11-30, set 5: QLoRA
/// Mistral-7B after `prepare_model_for_kbit_training`, fp32 activations,
/// 2 × 2048, full checkpointing): the first step's forward peaked 8.999 GiB
/// and its backward 11.316 GiB; the same step replayed through the caching
/// allocator's rules with bitsandbytes' `Linear4bit` on the meta device
/// reached 8.999 (counting `_safe_softmax`'s boolean `-inf` mask, made
/// inside the kernel where the replay cannot see it) and 10.316 — one fp32
/// score tensor (2 × 32 × 2048² × 4 B = 1 GiB exactly) short in the
/// backward alone, every reading after each phase identical.
const SDPA_MATH_BACKWARD_EXTRA_SCORES: f64 = 1.0;

/// Score-sized gradients alive at once in a recomputed eager attention's
/// backward: `dP = dO · Vᵀ` and the softmax backward's `dS`
/// ([`Ctx::score_grads_in_backward`]).
const SCORE_GRADS_IN_BACKWARD: f64 = 2.0;

/// Blocks whose checkpointed inputs stay on the GPU under activation offload:
/// the one in use and the one being copied (double buffering in
/// `torch.autograd.graph.save_on_cpu(pin_memory=True)` and Unsloth's offloaded checkpointing).
const ACTIVATION_OFFLOAD_BLOCKS_ON_GPU: f64 = 2.0;

/// DeepSpeed ZeRO-1/2 buckets alive in backward: the reduce (IPG) bucket being
/// filled and the one being reduced (`overlap_comm`, stage_1_and_2.py).
const ZERO_BUCKETS_IN_BACKWARD: f64 = 2.0;

/// Units FSDP / ZeRO-3 hold unsharded at once: the current one and the
/// prefetched next (FSDP `BackwardPrefetch.BACKWARD_PRE`, `forward_prefetch`).
const FSDP_UNITS_IN_FLIGHT: f64 = 2.0;
/// Copies of a transformer block FSDP1 makes on the GPU as it wraps a model
/// loaded on the host, all freed once the unit is sharded and offloaded, all
/// left cached: the block's tensors moved there (`_move_module_to_device`
/// with `device_id`), the buffers `sync_module_states` broadcasts them in
/// (`_sync_params_and_buffers`, 250 MB buckets) and the flat parameter
/// (`flatten_tensors`), torch 2.11 `distributed/fsdp/_init_utils.py` and
/// `_flat_param.py`. Measured (calibration/h200-2026-12-04-fsdp1, whole
/// allocator history): Llama-3.1-8B's 416 MiB blocks left 1,256 MiB of
/// default-stream segments after wrapping.
const FSDP1_WRAP_BLOCK_COPIES: f64 = 3.0;
/// Bytes per element of the copy DeepSpeed makes of a gradient to take its
/// norm: fp64 (`accumulated_grad.data.double().norm(2)` in ZeRO-1/2 from
/// 0.14 to 0.19.0, `.to(get_norm_dtype())`, `torch.double` wherever the
/// device has fp64, in 0.19.8; ZeRO-3's `_constant_buffered_norm2` alike,
/// `runtime/zero/stage_1_and_2.py`, `stage3.py`).
const NORM_COPY_BYTES: f64 = 8.0;
/// Bytes SHiRA's sparse update keeps per trained value in a forward: the two
/// int64 coordinates of `torch.sparse_coo_tensor` and the scaled fp32 value
/// (PEFT `tuners/shira/layer.py` `get_delta_weight`; counted with
/// calibration/saved_tensors.py --methods: 2.13 MB for 106,496 values).
const SHIRA_BYTES_PER_VALUE: f64 = 2.0 * 8.0 + 4.0;
/// Elements of one chunk ZeRO-3's `_constant_buffered_norm2` converts at a
/// time (`buffer_size=250000000`, deepspeed 0.14.4 to 0.19.8 `stage3.py`).
const ZERO3_NORM_CHUNK_ELEMENTS: f64 = 2.5e8;
/// DeepSpeed ZeRO-3 `stage3_max_live_parameters` and `stage3_max_reuse_distance`
/// defaults (DeepSpeed config docs; transformers `integrations/deepspeed.py`
/// leaves them at 1e9 in its "auto" config).
const DEEPSPEED_MAX_LIVE_PARAMETERS: f64 = 1e9;
const DEEPSPEED_MAX_REUSE_DISTANCE: f64 = 1e9;

/// ZeRO-Infinity NVMe parameter offload: pinned host buffers of
/// `offload_param.buffer_count` (default 5) × `buffer_size` (default 1e8
/// elements) 16-bit values (DeepSpeed config docs, "Parameter offloading").
const NVME_PARAM_BUFFER_COUNT: f64 = 5.0;
const NVME_PARAM_BUFFER_ELEMENTS: f64 = 1e8;
/// ZeRO-Infinity NVMe optimizer offload swaps one sub-group at a time through
/// `offload_optimizer.buffer_count` (default 4) fp32 host buffers of
/// `sub_group_size` (default 1e9) elements (DeepSpeed config docs,
/// "Optimizer offloading"; `zero_config.py` `sub_group_size`).
const NVME_OPTIMIZER_BUFFER_COUNT: f64 = 4.0;
const NVME_SUB_GROUP_ELEMENTS: f64 = 1e9;

// ---------------------------------------------------------------------------
// Outputs
// ---------------------------------------------------------------------------

/// What holds the memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Component {
    Weights,
    Gradients,
    Optimizer,
    Activations,
    Logits,
    CommBuffers,
    Temporaries,
    AllocatorReserve,
    Runtime,
}

impl Component {
    pub const ALL: [Component; 9] = [
        Component::Weights,
        Component::Gradients,
        Component::Optimizer,
        Component::Activations,
        Component::Logits,
        Component::CommBuffers,
        Component::Temporaries,
        Component::AllocatorReserve,
        Component::Runtime,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Component::Weights => "weights",
            Component::Gradients => "gradients",
            Component::Optimizer => "optimizer",
            Component::Activations => "activations",
            Component::Logits => "logits",
            Component::CommBuffers => "comm-buffers",
            Component::Temporaries => "temporaries",
            Component::AllocatorReserve => "allocator-reserve",
            Component::Runtime => "runtime",
        }
    }
}

/// Bytes per component.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    pub weights: Bytes,
    pub gradients: Bytes,
    pub optimizer: Bytes,
    pub activations: Bytes,
    pub logits: Bytes,
    pub comm_buffers: Bytes,
    pub temporaries: Bytes,
    pub allocator_reserve: Bytes,
    pub runtime: Bytes,
}

impl Breakdown {
    pub fn get(&self, c: Component) -> Bytes {
        match c {
            Component::Weights => self.weights,
            Component::Gradients => self.gradients,
            Component::Optimizer => self.optimizer,
            Component::Activations => self.activations,
            Component::Logits => self.logits,
            Component::CommBuffers => self.comm_buffers,
            Component::Temporaries => self.temporaries,
            Component::AllocatorReserve => self.allocator_reserve,
            Component::Runtime => self.runtime,
        }
    }

    pub fn entries(&self) -> [(Component, Bytes); 9] {
        Component::ALL.map(|c| (c, self.get(c)))
    }

    /// Tensors PyTorch's caching allocator holds (`max_memory_allocated`).
    pub fn allocated(&self) -> Bytes {
        self.weights
            + self.gradients
            + self.optimizer
            + self.activations
            + self.logits
            + self.comm_buffers
            + self.temporaries
    }

    /// What the allocator holds from the driver (`max_memory_reserved`).
    pub fn reserved(&self) -> Bytes {
        self.allocated() + self.allocator_reserve
    }

    /// What nvidia-smi reports.
    pub fn device_used(&self) -> Bytes {
        self.reserved() + self.runtime
    }
}

/// A point of the training step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Loading the checkpoint (some frameworks materialise it whole on every rank).
    Load,
    /// After the model and optimizer are built (steady state: states exist).
    Init,
    /// End of forward: every saved activation and the loss.
    Forward,
    /// Backward: the larger of its start and its end.
    Backward,
    /// Optimizer step: gradients, states and the optimizer's temporaries.
    Step,
}

impl Phase {
    pub const ALL: [Phase; 5] = [
        Phase::Load,
        Phase::Init,
        Phase::Forward,
        Phase::Backward,
        Phase::Step,
    ];
    pub fn id(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Init => "init",
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::Step => "step",
        }
    }
}

/// The three counters (DESIGN.md §2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub allocated: Bytes,
    pub reserved: Bytes,
    pub device_used: Bytes,
}

/// One phase of one rank.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseEstimate {
    pub phase: Phase,
    pub breakdown: Breakdown,
    pub counters: Counters,
}

/// One phase from the points inside it: the breakdown of the point holding
/// the most allocated bytes, its reserve raised to what the phase's most
/// reserving point held. The caching allocator returns no segment to the
/// driver within a step (it frees only on `empty_cache()` or an allocation
/// that failed: PyTorch `c10/cuda/CUDACachingAllocator.cpp`,
/// `release_cached_blocks`), so the blocks an earlier point reserved — FSDP's
/// side-stream gradient pool at the start of backward, say — are still
/// reserved when a later point allocates the most; `max_memory_reserved` is
/// the larger of the two. Ties keep the later point.
fn phase_peak(
    first: PhaseEstimate,
    later: impl IntoIterator<Item = PhaseEstimate>,
) -> PhaseEstimate {
    let mut most_reserved = first.counters.reserved;
    let mut peak = first;
    for p in later {
        most_reserved = most_reserved.max(p.counters.reserved);
        if p.counters.allocated >= peak.counters.allocated {
            peak = p;
        }
    }
    peak.breakdown.allocator_reserve = most_reserved.saturating_sub(peak.counters.allocated);
    peak.counters.reserved = peak.breakdown.reserved();
    peak.counters.device_used = peak.breakdown.device_used();
    peak
}

/// One pipeline stage (all ranks of a stage hold the same).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageEstimate {
    pub stage: u32,
    /// Parameters held by one rank of this stage before sharding.
    pub params: u64,
    pub phases: Vec<PhaseEstimate>,
    /// The phase with the highest `device_used`, whose breakdown is
    /// `peak_breakdown`.
    pub peak_phase: Phase,
    /// Each counter's maximum over the phases (`allocated` and `reserved`
    /// may peak in another phase than `device_used`).
    pub peak: Counters,
    pub peak_breakdown: Breakdown,
}

/// The whole estimate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub model_version: u32,
    pub params: u64,
    pub trainable_params: u64,
    pub data_parallel: u32,
    pub stages: Vec<StageEstimate>,
    /// The stage whose peak `device_used` is highest.
    pub worst_stage: u32,
    pub peak_phase: Phase,
    /// The worst stage's peak counters ([`StageEstimate::peak`]).
    pub peak: Counters,
    pub peak_breakdown: Breakdown,
    pub capacity: Bytes,
    pub fits: bool,
    /// Capacity minus peak `device_used` (zero when it does not fit).
    pub headroom: Bytes,
    /// Peak `device_used` minus capacity (zero when it fits).
    pub shortfall: Bytes,
    /// Uncertainty band of `device_used` from the calibration residuals.
    pub band_low: Bytes,
    pub band_high: Bytes,
    /// Host RAM needed per rank for offloaded states.
    pub host_offload: Bytes,
    /// NVMe space one rank's offloaded states need (ZeRO-Infinity).
    pub nvme_offload: Bytes,
}

/// `in × in` matrices a BOFT layer keeps per forward in the activation dtype:
/// the butterfly permutation cast to the input's dtype (`boft_P.to(x)`) and
/// the two products of the rotation chain (`butterfly_oft_mat @
/// boft_rotation`, then `x @ boft_rotation`). Counted with
/// calibration/saved_tensors.py --peft (PEFT 0.21.2, block size 4, one
/// butterfly factor).
const BOFT_ROTATION_MATRICES: f64 = 3.0;

/// 16-bit casts of fp32 weights that autocast leaves alive
/// (`Ctx::autocast_copies`): at the end of forward, from its end into the
/// start of backward, and while a block runs its backward.
#[derive(Clone, Copy, Default)]
struct CastCopies {
    forward: f64,
    after_forward: f64,
    block_backward: f64,
}

impl CastCopies {
    /// The same copies throughout.
    fn flat(bytes: f64) -> Self {
        Self {
            forward: bytes,
            after_forward: bytes,
            block_backward: bytes,
        }
    }
}

/// Logits-related bytes at the three moments they matter ([`Ctx::logits`]).
#[derive(Clone, Copy, Default)]
struct LogitsBytes {
    forward: f64,
    loss_backward: f64,
    head_backward: f64,
    /// The final norm's backward, once the loss and the head are done: its
    /// saved input and its fp32 gradients ([`FINAL_NORM_BACKWARD_FP32_TENSORS`]).
    norm_backward: f64,
    /// What stays alive through the blocks' backward, to the embedding's
    /// ([`Ctx::compiled_tied_head_keeps_logits`]).
    blocks: f64,
    /// What the loop still holds at the optimizer step: the output it keeps
    /// alive until the next iteration ([`Ctx::loop_holds_logits`]).
    step: f64,
}

/// Relative width of the uncertainty band below / above the prediction, from
/// the calibration residuals (docs/ACCURACY.md): with signed errors
/// e = (predicted − measured) / measured, the truth is predicted / (1 + e).
/// Over the rows of the three files graded A or B the 90th percentile of e
/// gives the low edge and the 10th the high edge: eight runs in ten fall
/// inside. They were +4.82 % (× 0.954) and −6.61 % (× 1.071; fifteenth
/// session, model version 7) until model version 16 reserved the loss
/// segments a checkpointed full fine-tune strands, kept a loop's logits
/// through the step and counted the loss's forward moment apart from its
/// backward: +4.76 % (× 0.955) and −5.58 % (× 1.059), then +4.07 %
/// (× 0.961) and −4.48 % (× 1.047) since model version 20 gave a frozen base
/// trained without recomputation the allocator's smaller reserve
/// ([`ALLOCATOR_RESERVE_FRACTION_FROZEN_NO_RECOMPUTE`]) and LitGPT's 4-bit
/// matmuls their fp16 dequantized copy
/// ([`Framework::quantizes_4bit_from_fp16`]), then +4.29 % (× 0.959) and
/// −3.72 % (× 1.039) since model version 21 kept PyTorch 1.10's softmax
/// input ([`crate::plan::PytorchRelease::V1_10OrOlder`]: the V100 BERT
/// rows, −5.8 … −9.5 % without checkpointing, went to +2.8 … +6.2 %), then
/// +4.44 % (× 0.957) and −3.10 % (× 1.032) since model version 27 kept the
/// segment of the logits the Trainer drops before backward
/// ([`Ctx::dropped_logits_segment`]: its LoRA and QLoRA runs, −6.3 % and
/// −8.0 % on the reserved counter, went to −0.5 % and −1.3 %).
/// `tests/calibration.rs` derives both again from the three files and fails
/// when they drift.
pub const BAND_BELOW: f64 = 0.043;
pub const BAND_ABOVE: f64 = 0.032;

/// One weight matrix of a block ([`Ctx::block_matrices`]).
#[derive(Clone, Copy)]
struct BlockMatrix {
    targeted: bool,
    din: f64,
    dout: f64,
    /// Part of the MLP (one copy per expert in an MoE block).
    mlp: bool,
    /// Row-parallel under tensor parallelism (o and down: their input is
    /// split across the TP ranks, Megatron's `RowParallelLinear`).
    row_parallel: bool,
}

/// The matrices of a block (q, k, v, o, gate, up, down, then latent
/// attention's q_b and kv_b) with their widths and whether `tg` targets
/// them (gate only in a gated MLP). MLP matrices exist once per expert;
/// callers count the copies they need (all experts' parameters, or the
/// routed ones per token). Under latent attention ([`crate::model::Mla`])
/// q is `q_a_proj` (or `q_proj`) and k `kv_a_proj_with_mqa`, which v
/// shares (its slot is empty); `q_b_proj` goes with q, `kv_b_proj` with k
/// and v, as PEFT's `all-linear` and a `q_proj`/`kv_*` target list adapt
/// them. Without it the last two are empty. With `fused` (fused projections,
/// [`ModelSpec::fused_projections`], not adapted per part as LitGPT's
/// `LoRAQKVLinear` does) they are one matrix each, in q's and up's
/// slots: PEFT adapts GPT-2's `c_attn`, GPT-NeoX's and Falcon's
/// `query_key_value`, Phi-3's `qkv_proj` and `gate_up_proj` as one module, so
/// targeting any of q, k, v (gate, up) adapts all of them through one
/// adapter reading the input once (replayed: Pythia-1.4B LoRA on every linear
/// without checkpointing, 4 × 2048 tokens, kept 2.3 GiB less than three
/// adapters would). GLM's `gate_up_proj` fuses the MLP's alone
/// ([`ModelSpec::fused_gate_up`]).
fn block_matrices_of(m: &ModelSpec, tg: LoraTargets, fused: Fused) -> [BlockMatrix; 9] {
    let h = m.hidden as f64;
    let hq = m.q_width() as f64;
    let hkv = m.kv_width() as f64;
    let f = m.ffn as f64;
    let gated = m.mlp == Mlp::Gated;
    let mat = |targeted, din, dout, mlp| BlockMatrix {
        targeted,
        din,
        dout,
        mlp,
        row_parallel: false,
    };
    let none = mat(false, 0.0, 0.0, false);
    let o = BlockMatrix {
        row_parallel: true,
        ..mat(tg.o, m.attn_out_width() as f64, h, false)
    };
    let mlp = [
        mat(tg.gate && gated, h, f, true),
        mat(tg.up, h, f, true),
        BlockMatrix {
            row_parallel: true,
            ..mat(tg.down, f, h, true)
        },
    ];
    match m.mla {
        Some(a) => {
            let (qr, kvr, rope) = (a.q_rank as f64, a.kv_rank as f64, a.rope_dim as f64);
            let nope = (m.head_dim as f64 - rope).max(0.0);
            let kv_b = m.heads as f64 * (nope + a.v_dim as f64);
            let kv = tg.k || tg.v;
            let (q, q_b) = if a.q_rank > 0 {
                (mat(tg.q, h, qr, false), mat(tg.q, qr, hq, false))
            } else {
                (mat(tg.q, h, hq, false), none)
            };
            [
                q,
                mat(kv, h, kvr + rope, false),
                none,
                o,
                mlp[0],
                mlp[1],
                mlp[2],
                q_b,
                mat(kv, kvr, kv_b, false),
            ]
        }
        None => {
            let [q, k, v] = if fused.qkv {
                [
                    mat(tg.q || tg.k || tg.v, h, hq + 2.0 * hkv, false),
                    none,
                    none,
                ]
            } else {
                [
                    mat(tg.q, h, hq, false),
                    mat(tg.k, h, hkv, false),
                    mat(tg.v, h, hkv, false),
                ]
            };
            let (gate, up) = if fused.gate_up && gated {
                (none, mat(tg.gate || tg.up, h, 2.0 * f, true))
            } else if fused.qkv {
                (none, mlp[1])
            } else {
                (mlp[0], mlp[1])
            };
            [q, k, v, o, gate, up, mlp[2], none, none]
        }
    }
}

/// Which of a block's projections are one matmul, adapted by PEFT as one
/// module ([`block_matrices_of`]).
#[derive(Clone, Copy, Default)]
struct Fused {
    qkv: bool,
    gate_up: bool,
}

impl Fused {
    /// The model's own fused projections.
    fn of(m: &ModelSpec) -> Self {
        Fused {
            qkv: m.fused_projections,
            gate_up: m.gate_up_fused(),
        }
    }
}

/// Copies of a block matrix among a block's parameters (MoE experts).
fn mlp_copies_of(m: &ModelSpec, x: &BlockMatrix) -> f64 {
    if x.mlp && m.is_moe() {
        (m.experts + m.shared_experts) as f64
    } else {
        1.0
    }
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

/// Estimates memory for a plan.
pub fn estimate(plan: &Plan) -> Result<Estimate, PlanError> {
    validate(plan)?;
    let dense = plan.model.dense_block();
    let ctx = Ctx::new(plan, dense.as_ref());
    let pp = plan.parallel.pp;
    let stages: Vec<StageEstimate> = (0..pp).map(|s| ctx.stage(s)).collect();
    // Borrowed, not cloned: only its Copy fields go into the estimate.
    let fallback;
    let worst = match stages.iter().max_by_key(|s| s.peak.device_used) {
        Some(w) => w,
        None => {
            fallback = ctx.stage(0);
            &fallback
        }
    };
    let capacity = plan.gpu.capacity();
    let used = worst.peak.device_used;
    let (host_offload, nvme_offload) = ctx.offload_targets();
    Ok(Estimate {
        model_version: MODEL_VERSION,
        params: plan.model.params(),
        trainable_params: ctx.trainable_total(),
        data_parallel: plan.parallel.dp(),
        worst_stage: worst.stage,
        peak_phase: worst.peak_phase,
        peak: worst.peak,
        peak_breakdown: worst.peak_breakdown,
        capacity,
        fits: used <= capacity,
        headroom: capacity.saturating_sub(used),
        shortfall: used.saturating_sub(capacity),
        band_low: used.scale(1.0 - BAND_BELOW),
        band_high: used.scale(1.0 + BAND_ABOVE),
        host_offload,
        nvme_offload,
        stages,
    })
}

/// Derived quantities shared by the component functions.
#[derive(Clone)]
struct Ctx<'a> {
    plan: &'a Plan,
    m: &'a ModelSpec,
    /// Tensor-parallel degree.
    t: f64,
    /// Divisor of tensors replicated across TP ranks (t with sequence parallelism).
    rep: f64,
    /// Micro-batch.
    b: f64,
    /// Local sequence length (after context parallelism).
    s: f64,
    /// Activation element bytes.
    e: f64,
    /// The precision policy as stored: a float8 plan counts as its
    /// framework's 16-bit policy ([`Framework::fp8_storage`]).
    prec: Precision,
    /// Degree over which sharded model states are split.
    shard: f64,
    /// What lives off the GPU ([`Self::offload_of`]): the plan's offload,
    /// with what FSDP's parameter offload carries along.
    offload: Offload,
    /// The framework profile's defaults (read many times per block count).
    d: crate::framework::FrameworkDefaults,
    /// [`Self::layer_matrix_params`], the same for every stage: worked out
    /// once (it was a tenth of an 8-stage estimate's instructions, read
    /// some twenty times per stage).
    layer_matrix: f64,
    /// [`Self::cublas_workspaces`], worked out once (the GPU's name is read).
    workspaces: f64,
    /// [`Self::layer_activations`] without and with recomputation, each
    /// worked out once per estimate: the same for every stage (they were a
    /// tenth of an 8-stage estimate's instructions, a sixth of an MoE's with
    /// dense blocks, worked out again for each stage). Empty in the derived
    /// contexts ([`Self::block_ctx`], [`Self::at_length`]), whose blocks differ.
    layer_acts: [Cell<Option<(f64, f64)>>; 2],
    /// The dense block of an MoE model that has dense blocks too
    /// ([`ModelSpec::dense_layers`]): per-block quantities are then the
    /// average over the stack's two kinds of block ([`Self::mixed`]), as an
    /// encoder–decoder's are over its two stacks.
    dense: Option<&'a ModelSpec>,
}

impl<'a> Ctx<'a> {
    fn new(plan: &'a Plan, dense: Option<&'a ModelSpec>) -> Self {
        let p = &plan.parallel;
        let t = p.tp as f64;
        let dp = p.dp() as f64;
        // FSDP/ZeRO shard over the data-parallel ranks; torchtitan folds CP into
        // the FSDP mesh (dp_shard × cp). HSDP shards within a node only.
        let shard_over = dp * p.cp as f64;
        let shard = match p.sharding {
            Sharding::Hsdp => shard_over.min((p.gpus_per_node as f64 / (t * p.pp as f64)).max(1.0)),
            _ => shard_over,
        };
        let mut ctx = Ctx {
            plan,
            m: &plan.model,
            t,
            rep: if p.sequence_parallel { t } else { 1.0 },
            // A preference objective runs chosen and rejected as one batch.
            b: plan.training.micro_batch as f64
                * plan.training.objective.sequences_per_example() as f64,
            s: (plan.training.seq_len as f64 + plan.training.finetune.prepended_tokens() as f64)
                / p.cp as f64,
            e: plan.training.precision.activation_bytes(),
            prec: match plan.training.precision {
                Precision::Fp8 => plan.framework.fp8_storage(),
                p => p,
            },
            shard,
            offload: Self::offload_of(plan),
            d: plan.framework.defaults(),
            layer_matrix: 0.0,
            workspaces: Self::cublas_workspaces(plan),
            layer_acts: Default::default(),
            dense,
        };
        // (`block_ctx` works each kind's out.)
        ctx.layer_matrix = if ctx.dense.is_some() {
            ctx.mixed(|c| c.layer_matrix)
        } else {
            ctx.layer_matrix_params_of_model()
        };
        if ctx.kbit_fp32_stream() {
            ctx.e = FP32;
        }
        ctx
    }

    /// The plan's offload as the runtime carries it out. FSDP's parameter
    /// offload moves the gradients and the optimizer step with the
    /// parameters: FSDP1 `CPUOffload(offload_params=True)` ("gradients are
    /// offloaded to CPU as well … the optimizer step runs on CPU", torch
    /// `distributed/fsdp/api.py`), FSDP2 `CPUOffloadPolicy` (sharded
    /// parameters and gradients on the CPU, where the optimizer steps), so
    /// the optimizer's states are made on the host whatever the plan says of
    /// the optimizer.
    fn offload_of(plan: &Plan) -> Offload {
        let mut off = plan.parallel.offload;
        if plan.parallel.sharding.is_fsdp() && off.params_offloaded() && !off.optimizer_offloaded()
        {
            off.optimizer = off.params;
        }
        off
    }

    /// Without autocast, the fp32 norm and embedding weights that PEFT's
    /// `prepare_model_for_kbit_training` leaves ([`Self::kbit_fp32`]) carry
    /// the whole block in fp32: the embedding output and every norm output
    /// are fp32, and bitsandbytes' `Linear4bit.forward` computes in its
    /// 16-bit `compute_dtype` but casts its output back to the input's dtype
    /// (bitsandbytes 0.50.2 `nn/modules.py`: `inp_dtype = x.dtype` …
    /// `.to(inp_dtype)`), so attention and MLP save fp32 tensors. Measured on
    /// the H200 (calibration/h200-2026-11-30, set 5): QLoRA Mistral-7B r16 q+v,
    /// batch 2 × 2048, 73.3 GiB allocated after the forward in pure bf16
    /// against 35.9 GiB under bf16 autocast.
    fn kbit_fp32_stream(&self) -> bool {
        self.kbit_fp32() && !self.runs_autocast() && self.prec != Precision::Fp32
    }

    fn lora(&self) -> Option<(u32, LoraTargets, u32, bool)> {
        match self.plan.training.finetune {
            Finetune::Lora {
                rank,
                targets,
                base_bits,
                dropout,
                ..
            } => Some((rank, targets, base_bits, dropout)),
            _ => None,
        }
    }

    fn lora_variant(&self) -> LoraVariant {
        match self.plan.training.finetune {
            Finetune::Lora { variant, .. } => variant,
            _ => LoraVariant::Lora,
        }
    }

    /// Bits of the frozen base, `None` for full training.
    fn base_bits(&self) -> Option<u32> {
        self.plan.training.finetune.base_bits()
    }

    /// PEFT's `prepare_model_for_kbit_training` cast the unquantized
    /// parameters of a 4/8-bit base to fp32
    /// ([`crate::plan::TrainingSpec::kbit_fp32_prep`]). Not when FSDP or
    /// ZeRO-3 shards the quantized model: the tools skip it there to keep one
    /// dtype per flat parameter (axolotl `_prepare_model_for_quantization`:
    /// "Make sure everything is in the same dtype" under QLoRA + FSDP or
    /// ZeRO-3).
    fn kbit_fp32(&self) -> bool {
        self.plan.training.kbit_fp32_prep
            && self.base_bits().is_some_and(|b| b <= 8)
            && !self.shards_params()
    }

    /// The embeddings and an unquantized LM head back in 16 bits after the
    /// preparation, the norms left fp32
    /// ([`crate::plan::TrainingSpec::kbit_embeddings_16bit`], TRL ≤ 0.21).
    /// Replayed (`calibration/allocator_replay.py --qlora-trl-families`):
    /// Llama-3.2-1B's checkpointed QLoRA allocated 1.01 GiB less than fully
    /// prepared — its tied 262.7 M-parameter embedding at 2 bytes instead of 4
    /// and no 16-bit cast of it for the head's matmul.
    ///
    /// Only under autocast, as TRL casts them (`args.bf16`): without it the
    /// fp32 norm outputs would meet a 16-bit head in a plain `F.linear`,
    /// which refuses mixed dtypes.
    fn kbit_embeddings_16bit(&self) -> bool {
        self.kbit_fp32() && self.plan.training.kbit_embeddings_16bit && self.runs_autocast()
    }

    /// The prepared base's fp32 norm weights promote the norms' outputs, and
    /// so the residual stream, to fp32: always when the preparation left the
    /// embeddings fp32 (the stream starts fp32), and with them back in 16 bits
    /// ([`Self::kbit_embeddings_16bit`]) only where the norm multiplies its
    /// weight into the input's dtype (Llama's `self.weight *
    /// hidden_states.to(input_dtype)`) — not where it scales in fp32 and casts
    /// back (`ModelSpec::norm_fp32_affine`: Gemma's `.type_as(x)`, OLMo-2's
    /// `.to(input_dtype)`), whose outputs follow a 16-bit stream. Replayed
    /// (`--qlora-trl-families`): Gemma-2B, Gemma-2-2B, Gemma-3-1B without
    /// checkpointing allocated exactly what they did unprepared (37.289,
    /// 48.193, 26.564 GiB), 18.3, 11.5 and 16.8 % below the fp32-stream
    /// reading.
    fn kbit_fp32_norm_outputs(&self) -> bool {
        self.kbit_fp32() && !(self.kbit_embeddings_16bit() && self.m.norm_fp32_affine)
    }

    /// Parameters of stage `s` outside the blocks that the preparation makes
    /// fp32 and [`Self::kbit_embeddings_16bit`] puts back in 16 bits: the
    /// embeddings and a head that is not quantized (not the final norm).
    fn kbit_recast_edge_params(&self, s: u32) -> f64 {
        if !self.kbit_embeddings_16bit() {
            return 0.0;
        }
        let final_norm = if self.is_last(s) {
            self.m.norm_params() as f64
        } else {
            0.0
        };
        (self.edge_params(s) - final_norm - self.quantized_head_params(s)).max(0.0)
    }

    // ----- parameters per rank --------------------------------------------

    /// This context for one kind of block of the stack: the expert block
    /// (this model) or the dense one, each as if every block were of its kind.
    fn block_ctx<'b>(&self, m: &'b ModelSpec) -> Ctx<'b>
    where
        'a: 'b,
    {
        let mut c = Ctx {
            m,
            dense: None,
            layer_acts: Default::default(),
            ..self.clone()
        };
        c.layer_matrix = c.layer_matrix_params_of_model();
        c
    }

    /// A per-block quantity averaged over the stack's blocks: an MoE model's
    /// expert blocks and its dense ones ([`ModelSpec::dense_layers`]) in
    /// their numbers; `f` of this context when every block is alike. The
    /// pipeline split stays even in blocks, so a stage holds the average
    /// block (DeepSeek's and GLM-4.5's dense blocks sit on the first stage,
    /// which this spreads over all).
    fn mixed(&self, f: impl Fn(&Ctx<'_>) -> f64) -> f64 {
        let Some(dense) = self.dense else {
            return f(self);
        };
        let w = self.expert_block_share();
        w * f(&self.block_ctx(self.m)) + (1.0 - w) * f(&self.block_ctx(dense))
    }

    /// The stack's kinds of block with their shares of the blocks: this
    /// model's (with experts) and, when it has dense blocks too, the dense
    /// one's ([`ModelSpec::dense_layers`]).
    fn block_kinds(&self) -> impl Iterator<Item = (&'a ModelSpec, f64)> {
        let w = self.expert_block_share();
        [(self.m, w), (self.dense.unwrap_or(self.m), 1.0 - w)]
            .into_iter()
            .filter(|(_, share)| *share > 0.0)
    }

    /// `f` of every matrix of the average block that `tg` targets, times its
    /// copies (MoE experts), summed ([`Self::block_kinds`]).
    fn per_targeted_matrix(&self, tg: LoraTargets, f: impl Fn(&BlockMatrix) -> f64) -> f64 {
        self.block_kinds()
            .map(|(m, share)| {
                let per: f64 = block_matrices_of(m, tg, self.fused_adapters())
                    .iter()
                    .filter(|x| x.targeted)
                    .map(|x| mlp_copies_of(m, x) * f(x))
                    .sum();
                share * per
            })
            .sum()
    }

    /// The stack's share of blocks that hold experts.
    fn expert_block_share(&self) -> f64 {
        if self.dense.is_some() {
            self.m.moe_layers() as f64 / self.m.layers.max(1) as f64
        } else {
            1.0
        }
    }

    /// Blocks on pipeline rank `s`: an even split, the first ranks taking
    /// one more where it does not divide, or the framework's own split
    /// ([`Framework::pp_split_counts_edges_as_blocks`]) summed over the
    /// rank's model chunks (`s`, `s + pp`, … under the interleaved schedule).
    fn stage_layers(&self, s: u32) -> f64 {
        let l = self.m.total_layers();
        let p = &self.plan.parallel;
        let pp = p.pp;
        if pp > 1 && self.plan.framework.pp_split_counts_edges_as_blocks() {
            let v = match p.pp_schedule {
                PipelineSchedule::OneFOneB => 1,
                PipelineSchedule::Interleaved => p.virtual_stages.max(1),
            };
            let n = pp.saturating_mul(v);
            // `num_effective_layers = num_layers + input_weight + output_weight`,
            // spread evenly, the first stages taking the remainder; the first
            // and the last stage then give one block to the embedding and
            // the head.
            let eff = l.saturating_add(2);
            let blocks = |i: u32| {
                let e = eff / n + u32::from(i < eff % n);
                if i == 0 || i + 1 == n {
                    e.saturating_sub(1)
                } else {
                    e
                }
            };
            return (0..v)
                .map(|k| blocks(s.saturating_add(k.saturating_mul(pp))) as f64)
                .sum();
        }
        let base = l / pp;
        let extra = if s < l % pp { 1 } else { 0 };
        (base + extra) as f64
    }

    fn is_first(&self, s: u32) -> bool {
        s == 0
    }
    fn is_last(&self, s: u32) -> bool {
        s + 1 == self.plan.parallel.pp
    }

    /// Per-rank block matrix parameters of one layer (TP splits them; EP splits experts).
    fn layer_matrix_params(&self) -> f64 {
        self.layer_matrix
    }

    /// [`Self::layer_matrix_params`] from the model and the parallel layout.
    fn layer_matrix_params_of_model(&self) -> f64 {
        let m = self.m;
        // Decoder blocks of an encoder–decoder model add cross-attention: the
        // average block holds (encoder + 2 × decoder) / (encoder + decoder) attentions.
        let attn = m.attention_params() as f64
            * if m.arch == Arch::EncoderDecoder {
                (m.encoder_layers as f64 + 2.0 * m.layers as f64) / m.total_layers().max(1) as f64
            } else {
                1.0
            };
        let mlp = if m.is_moe() {
            let routed =
                m.experts as f64 * m.one_mlp_params() as f64 / self.plan.parallel.ep as f64;
            routed + m.shared_experts as f64 * m.one_mlp_params() as f64
        } else {
            m.mlp_params() as f64
        };
        (attn + mlp) / self.t
    }

    fn layer_norm_params(&self) -> f64 {
        self.m.norms_per_layer as f64 * self.m.norm_params() as f64
    }

    /// Per-rank parameters of one block, its matrices and norms: FSDP's
    /// wrapping unit.
    fn block_params(&self) -> f64 {
        self.layer_matrix_params() + self.layer_norm_params()
    }

    /// Embedding / head parameters on stage `s`, per rank (vocab-parallel over TP).
    fn edge_params(&self, s: u32) -> f64 {
        let m = self.m;
        let mut p = 0.0;
        if self.is_first(s) {
            p += m.embedding_params() as f64 / self.t;
        }
        if self.is_last(s) {
            p += m.norm_params() as f64;
            let head = if m.tied_embeddings && m.arch != Arch::Encoder && m.head == ModelHead::Lm {
                // A tied head on a later stage keeps its own copy of the embedding.
                if self.plan.parallel.pp > 1 {
                    m.vocab as f64 * m.hidden as f64
                } else {
                    0.0
                }
            } else {
                m.head_params() as f64
            };
            p += head / self.t;
        }
        p
    }

    /// The LM head's weight on stage `s` (the embedding when tied), if last.
    fn lm_head_params(&self, s: u32) -> f64 {
        let m = self.m;
        if !self.is_last(s) || m.head != ModelHead::Lm {
            return 0.0;
        }
        m.vocab as f64 * m.hidden as f64 / self.t
    }

    /// Full fine-tuning: every parameter trains, those outside the blocks too.
    fn full_finetune(&self) -> bool {
        matches!(self.plan.training.finetune, Finetune::Full)
    }

    /// With the optimizer step in backward, each parameter steps and drops
    /// its gradient once the gradient is complete
    /// (`register_post_accumulate_grad_hook`, torchtune
    /// `training.register_optim_in_bwd_hooks`). The LM head's gradient exists
    /// as backward starts; a tied head's keeps accumulating until the
    /// embedding's backward, the very last, so it lives through the whole
    /// backward. Returns (at the loss backward, through the blocks').
    fn optim_in_bwd_head_grads(&self, s: u32) -> (f64, f64) {
        if !self.plan.training.optimizer_in_backward || !self.full_finetune() {
            return (0.0, 0.0);
        }
        let g = self.lm_head_params(s) * self.grad_bytes();
        let tied = self.m.tied_embeddings && self.plan.parallel.pp == 1;
        (g, if tied { g } else { 0.0 })
    }

    fn stage_params(&self, s: u32) -> f64 {
        self.stage_layers(s) * self.block_params() + self.edge_params(s)
    }

    /// Trainable adapter parameters per block: A and B of every targeted
    /// matrix, plus DoRA's magnitude vector (one per output); under LoRA-FA
    /// only B trains.
    fn lora_layer_params(&self, rank: u32, tg: LoraTargets) -> f64 {
        let (a, b, outs) = self.lora_layer_parts(rank, tg);
        match self.lora_variant() {
            LoraVariant::Lora => a + b,
            LoraVariant::Dora => a + b + outs,
            LoraVariant::LoraFa => b,
        }
    }

    /// Frozen adapter parameters per block (LoRA-FA's A matrices), stored in
    /// the adapters' dtype beside the trained ones.
    fn frozen_adapter_layer_params(&self) -> f64 {
        match (self.lora(), self.lora_variant()) {
            (Some((rank, tg, _, _)), LoraVariant::LoraFa) => self.lora_layer_parts(rank, tg).0,
            _ => 0.0,
        }
    }

    /// Elements per token of the distinct 16-bit inputs of the matrices `tg`
    /// adapts, none of which a frozen block keeps: q, k and v share theirs (the
    /// normed block input), as gate and up do; o's is the attention output
    /// (made contiguous after eager attention), down's the gated product
    /// (per MLP a token runs through).
    fn distinct_inputs(&self, tg: LoraTargets) -> f64 {
        let (m, t, rep) = (self.m, self.t, self.rep);
        let k = self.mlp_runs_per_token();
        let [q, kk, v, o, g, u, d, _, _] = self.block_matrices(tg).map(|x| x.targeted);
        let h = m.hidden as f64;
        let mut inputs = 0.0;
        if q || kk || v {
            inputs += h / rep;
        }
        // A fused kernel's output is o's input, already kept (`layer_activations`).
        if o && self.attention() == Attention::Eager {
            inputs += m.attn_out_width() as f64 / t;
        }
        // Latent attention's q_b and kv_b read the normed latents.
        if let Some(a) = m.mla {
            if q && a.q_rank > 0 {
                inputs += a.q_rank as f64 / rep;
            }
            if kk || v {
                inputs += a.kv_rank as f64 / rep;
            }
        }
        if g || u {
            inputs += h / rep;
        }
        if d {
            inputs += k * m.ffn as f64 / t;
        }
        inputs
    }

    /// MLPs each token runs through: the routed experts plus the shared ones
    /// of an MoE block (every expert where all run every token,
    /// [`ModelSpec::dense_experts`]), else one.
    fn mlp_runs_per_token(&self) -> f64 {
        if self.runs_dense_experts() {
            (self.m.experts + self.m.shared_experts) as f64
        } else if self.m.is_moe() {
            (self.m.experts_per_token + self.m.shared_experts) as f64
        } else {
            1.0
        }
    }

    /// Whether every expert runs every token: the model's own code does so
    /// ([`ModelSpec::dense_experts`]: transformers' Llama-4), and the
    /// framework runs that code — torchtune's, torchtitan's and Megatron's
    /// MoE layers run the chosen experts alone (grouped GEMMs).
    fn runs_dense_experts(&self) -> bool {
        self.m.is_moe() && self.m.dense_experts && self.plan.framework.runs_the_models_own_code()
    }

    /// The adapter method of a `Finetune::Adapter` plan.
    fn adapter_method(&self) -> Option<AdapterMethod> {
        match self.plan.training.finetune {
            Finetune::Adapter { method, .. } => Some(method),
            _ => None,
        }
    }

    /// The rank of a per-matrix adapter method: a block's trainable parameters
    /// over what one rank costs across its adapted matrices (MoE experts each).
    fn adapter_rank(&self, per_rank: impl Fn(&BlockMatrix) -> f64) -> f64 {
        let Finetune::Adapter {
            trainable_params,
            targets,
            ..
        } = self.plan.training.finetune
        else {
            return 0.0;
        };
        let per_block = self.params_per_block(trainable_params);
        let cost = self.per_targeted_matrix(targets, per_rank);
        if cost > 0.0 {
            (per_block / cost).max(0.0)
        } else {
            0.0
        }
    }

    /// A count of parameters spread evenly over every block of the model.
    fn params_per_block(&self, params: u64) -> f64 {
        params as f64 / self.m.total_layers().max(1) as f64
    }

    /// OSF's trained rank r: `out + in + 1` parameters per rank and matrix
    /// (the `U_low` column, `V_low` row and `S_low` value).
    fn osf_rank(&self) -> f64 {
        self.adapter_rank(|x| x.din + x.dout + 1.0)
    }

    /// HRA's number of reflections: one `in`-long vector per reflection and matrix.
    fn hra_rank(&self) -> f64 {
        self.adapter_rank(|x| x.din)
    }

    /// [`mlp_copies_of`] this model.
    fn mlp_copies(&self, x: &BlockMatrix) -> f64 {
        mlp_copies_of(self.m, x)
    }

    /// Frozen OSF factors a block stores beside its base weights (PEFT
    /// `_osf_*` buffers, in the base weight's dtype): see [`AdapterMethod::Osf`]
    /// and [`AdapterMethod::OsfReconstruct`].
    fn osf_buffer_layer_params(&self) -> f64 {
        let Finetune::Adapter {
            method: method @ (AdapterMethod::Osf | AdapterMethod::OsfReconstruct),
            targets,
            ..
        } = self.plan.training.finetune
        else {
            return 0.0;
        };
        let r = self.osf_rank();
        self.per_targeted_matrix(targets, |x| {
            let high = (x.din.min(x.dout) - r).max(0.0);
            match method {
                // U_high, S_high, V_high.
                AdapterMethod::OsfReconstruct => high * (x.din + x.dout + 1.0),
                // The initial triplets, and the unrecoverable high factor.
                _ => {
                    r * (x.din + x.dout + 1.0)
                        + if x.dout > x.din { high * x.dout } else { 0.0 }
                        + if x.din > x.dout { high * x.din } else { 0.0 }
                }
            }
        })
    }

    /// (A parameters, B parameters, targeted outputs) of the average block's
    /// adapters ([`Self::mixed`]).
    fn lora_layer_parts(&self, rank: u32, tg: LoraTargets) -> (f64, f64, f64) {
        let r = rank as f64;
        let (mut a, mut b, mut outs) = (0.0, 0.0, 0.0);
        for (m, share) in self.block_kinds() {
            for mat in block_matrices_of(m, tg, self.fused_adapters())
                .iter()
                .filter(|x| x.targeted)
            {
                let n = share * mlp_copies_of(m, mat);
                a += n * r * mat.din;
                b += n * r * mat.dout;
                outs += n * mat.dout;
            }
        }
        (a, b, outs)
    }

    /// [`block_matrices_of`] this model, as its adapters see them.
    fn block_matrices(&self, tg: LoraTargets) -> [BlockMatrix; 9] {
        block_matrices_of(self.m, tg, self.fused_adapters())
    }

    /// Whether one adapter covers each fused projection: transformers' fused
    /// modules under PEFT, not LitGPT's per-part `LoRAQKVLinear`
    /// ([`crate::framework::FrameworkDefaults::lora_qkv_grouped`]).
    fn fused_adapters(&self) -> Fused {
        if self.defaults().lora_qkv_grouped {
            Fused::default()
        } else {
            Fused::of(self.m)
        }
    }

    /// Frozen blocks of stage `s`: the bottom [`TrainingSpec::frozen_layers`]
    /// of a full fine-tune, counted from the first stage up.
    fn frozen_blocks(&self, s: u32) -> f64 {
        let n = self.plan.training.frozen_layers;
        if n == 0 || !self.full_finetune() {
            return 0.0;
        }
        let below: f64 = (0..s).map(|k| self.stage_layers(k)).sum();
        (n as f64 - below).clamp(0.0, self.stage_layers(s))
    }

    /// The embedding is frozen with the bottom blocks, unless the head (which
    /// trains) shares its weight.
    fn embedding_frozen(&self) -> bool {
        self.plan.training.frozen_layers > 0 && self.full_finetune() && !self.m.tied_embeddings
    }

    /// Parameters of stage `s` that a partly frozen full fine-tune freezes.
    fn stage_frozen(&self, s: u32) -> f64 {
        let mut p = self.frozen_blocks(s) * self.block_params();
        if self.is_first(s) && self.embedding_frozen() {
            p += self.m.embedding_params() as f64 / self.t;
        }
        p
    }

    fn stage_trainable(&self, s: u32) -> f64 {
        if let Finetune::Adapter {
            trainable_params, ..
        } = self.plan.training.finetune
        {
            // Spread over the blocks; the stage holds its share.
            let share = self.stage_layers(s) / self.m.total_layers().max(1) as f64;
            return trainable_params as f64 * share;
        }
        match self.lora() {
            // (Frozen layers checked first: this runs a dozen times per stage.)
            None if self.plan.training.frozen_layers == 0 => self.stage_params(s),
            None => (self.stage_params(s) - self.stage_frozen(s)).max(0.0),
            Some((rank, tg, _, _)) => {
                let mut p = self.stage_layers(s) * self.lora_layer_params(rank, tg);
                if tg.lm_head && self.is_last(s) {
                    p += rank as f64 * (self.m.hidden as f64 + self.m.vocab as f64);
                }
                p
            }
        }
    }

    fn trainable_total(&self) -> u64 {
        if let Finetune::Adapter {
            trainable_params, ..
        } = self.plan.training.finetune
        {
            return trainable_params;
        }
        match self.lora() {
            None => {
                let m = self.m;
                let frozen_blocks = self.plan.training.frozen_layers.min(m.total_layers()) as u64;
                let embedding = if self.embedding_frozen() {
                    m.embedding_params()
                } else {
                    0
                };
                let block = self
                    .block_kinds()
                    .map(|(m, share)| share * m.layer_params() as f64)
                    .sum::<f64>() as u64;
                m.params()
                    .saturating_sub(frozen_blocks.saturating_mul(block))
                    .saturating_sub(embedding)
            }
            Some((rank, tg, _, _)) => {
                let mut p = self.m.total_layers() as f64 * self.lora_layer_params(rank, tg);
                if tg.lm_head {
                    p += rank as f64 * (self.m.hidden as f64 + self.m.vocab as f64);
                }
                p as u64
            }
        }
    }

    // ----- bytes per parameter ----------------------------------------------

    fn defaults(&self) -> &crate::framework::FrameworkDefaults {
        &self.d
    }

    /// Bytes of a trainable weight as stored: fp32 under fp32/AMP (PyTorch AMP
    /// keeps fp32 parameters, DESIGN.md §3), 16-bit for pure 16-bit and for
    /// DeepSpeed/Megatron mixed precision (ZeRO paper: 2Ψ).
    ///
    /// Adapters stated 16-bit ([`crate::plan::TrainingSpec::adapters_16bit`])
    /// are 2 bytes in any precision but fp32.
    fn trainable_weight_bytes(&self) -> f64 {
        let prec = self.prec;
        if self.base_bits().is_some()
            && self.adapter_method() != Some(AdapterMethod::OsfReconstruct)
        {
            if self.plan.training.adapters_16bit && prec != Precision::Fp32 {
                return HALF;
            }
            if self.peft_adapters_fp32() {
                return FP32;
            }
        }
        if prec == Precision::Fp32 || (prec.fp32_weights() && !self.master_in_optimizer()) {
            FP32
        } else {
            HALF
        }
    }

    /// 16-bit weights with the fp32 master copy inside the optimizer: DeepSpeed's
    /// ZeRO optimizers keep fp32 partitions of the weights whatever launched
    /// them (ZeRO paper §3: 2Ψ + 2Ψ + 12Ψ), Megatron's mixed-precision optimizer likewise.
    fn master_in_optimizer(&self) -> bool {
        self.defaults().fp32_master_in_optimizer || self.zero_sharding()
    }

    /// Whether `torch.autocast` runs the forward: an AMP precision, unless the
    /// runtime keeps the fp32 master in its optimizer ([`Self::master_in_optimizer`])
    /// and so runs a 16-bit model without autocast. DeepSpeed's engine casts
    /// the module to 16 bits for its `bf16`/`fp16` modes and enters autocast
    /// only when its config asks (`torch_autocast`, off by default:
    /// deepspeed 0.19.8 `runtime/engine.py`); Accelerate leaves native AMP off
    /// under DeepSpeed and Megatron (`Accelerator.__init__`: `native_amp` only
    /// for the other distributed types), so the Trainer's `bf16=True` does not
    /// autocast there; Megatron runs its `Float16Module` without autocast.
    /// Measured on the H200 (calibration/h200-2026-12-04-deepspeed): LoRA'd
    /// Llama-2-70B blocks under ZeRO-3 with `bf16=True` kept each adapter's
    /// input as PEFT's fp32 cast (`_cast_input_dtype`, 4 bytes an element),
    /// which autocast would have kept as a 16-bit cast.
    fn runs_autocast(&self) -> bool {
        self.prec.is_autocast() && !self.master_in_optimizer()
    }

    /// A ZeRO stage: DeepSpeed's optimizer wraps the model (and does its own
    /// mixed precision).
    fn zero_sharding(&self) -> bool {
        matches!(
            self.plan.parallel.sharding,
            Sharding::Zero1 | Sharding::Zero2 | Sharding::Zero3
        )
    }

    /// PEFT creates adapters in fp32 (`autocast_adapter_dtype=True`, PEFT ≥ 0.12);
    /// the tools built on the Trainer keep that default (LLaMA-Factory also
    /// casts every trainable parameter to fp32, `cast_trainable_params_to_fp32`,
    /// llamafactory 0.9.5; ms-swift only when no `lora_dtype` is set, 4.6.0
    /// `tuners/peft.py`; Unsloth's patch of `_cast_adapter_dtype` keeps it,
    /// 2026.10.9 `import_fixes.py`).
    fn peft_adapters_fp32(&self) -> bool {
        let f = self.plan.framework;
        f.trains_through_trainer()
            || matches!(
                f,
                Framework::HfAccelerate
                    | Framework::Peft
                    | Framework::FsdpQlora
                    | Framework::PlainPytorch
            )
    }

    /// LM-head parameters stored quantized with the blocks on stage `s`
    /// ([`Framework::quantizes_lm_head`]; an untied head on the last stage).
    fn quantized_head_params(&self, s: u32) -> f64 {
        match self.base_bits() {
            Some(bits)
                if bits <= 8
                    && self.plan.framework.quantizes_lm_head()
                    && !self.m.tied_embeddings
                    && self.m.head == ModelHead::Lm
                    && self.is_last(s) =>
            {
                self.lm_head_params(s)
            }
            _ => 0.0,
        }
    }

    /// bitsandbytes dequantizes a frozen 4- or 8-bit weight to the compute
    /// dtype for every matmul, forward and backward (`MatMul4Bit.forward`:
    /// `F.dequantize_4bit(B, quant_state).to(A.dtype)`, and again for
    /// `grad_A`; `MatMul8bitLt.backward` likewise): one 16-bit copy of the
    /// matrix in flight, freed after its matmul — two where the 4-bit state
    /// dequantizes to fp16 and the compute dtype is not fp16, the fp16 copy
    /// and its `.to(A.dtype)` cast alive together
    /// ([`Self::dequantized_bytes_per_weight`]). (block matrix, LM head).
    fn dequantized_weights(&self, s: u32) -> (f64, f64) {
        match self.base_bits() {
            Some(bits) if bits <= 8 => {
                let per_weight = self.dequantized_bytes_per_weight();
                // A dense block's MLP may be the largest (DeepSeek-MoE's 10944 wide).
                let largest = self
                    .block_kinds()
                    .flat_map(|(m, _)| block_matrices_of(m, LoraTargets::ALL_LINEAR, Fused::of(m)))
                    .map(|x| x.din * x.dout)
                    .fold(0.0, f64::max);
                (
                    per_weight * largest / self.t,
                    per_weight * self.quantized_head_params(s),
                )
            }
            _ => (0.0, 0.0),
        }
    }

    /// LLM.int8's matmul keeps, beside its input, the int8 copy of it a
    /// weight gradient would need, whenever the input needs a gradient —
    /// though a frozen base never computes that gradient
    /// (`MatMul8bitLt.forward`: `CA, CAt, SCA, SCAt, coo_tensorA =
    /// F.double_quant(A.to(torch.float16), ...)`, then `ctx.tensors = (CAt,
    /// subA, A)` if `any(ctx.needs_input_grad[:2])`; bitsandbytes 0.41.1 and
    /// 0.43.0 alike): [`INT8_INPUT_COPY_BYTES`] per input element of every
    /// 8-bit block matrix, each quantizing its input for itself (q, k and v
    /// three copies of the norm output; one where LitGPT fuses them). Bytes
    /// per token of one block (attention, one run of the MLP); the
    /// row-parallel inputs (o, down) shard under TP. From 0.45.0 the copy is
    /// made only for a weight that trains (`if ctx.needs_input_grad[1]`, else
    /// `CAt = None`): a plan that states a recent release
    /// ([`crate::plan::TrainingSpec::bnb_0_43_2`]) counts none; unstated, the
    /// older release's count, the safe side, as for the 4-bit input.
    fn int8_input_copies(&self) -> (f64, f64) {
        if self.base_bits() != Some(8) || self.plan.training.bnb_0_43_2 {
            return (0.0, 0.0);
        }
        let m = self.m;
        let one_qkv = self.defaults().fused_qkv && !m.fused_projections && m.mla.is_none();
        let (mut attn, mut mlp) = (0.0, 0.0);
        let matrices = block_matrices_of(m, LoraTargets::ALL_LINEAR, Fused::of(m));
        for (i, x) in matrices.iter().enumerate() {
            // k and v (block_matrices_of's second and third) are q's fused
            // matmul there.
            if one_qkv && (i == 1 || i == 2) {
                continue;
            }
            // A row-parallel input is split across the TP ranks; the rest
            // read the whole (under sequence parallelism, gathered) state.
            let split = if x.row_parallel { self.t } else { self.rep };
            let bytes = INT8_INPUT_COPY_BYTES * x.din / split;
            if x.mlp {
                mlp += bytes;
            } else {
                attn += bytes;
            }
        }
        (attn, mlp)
    }

    /// Bytes per weight of a dequantized matrix in flight: the compute-dtype
    /// copy, plus the fp16 one it is cast from where a 4-bit base was
    /// quantized from fp16 ([`Framework::quantizes_4bit_from_fp16`]: the
    /// quantization state records fp16, `dequantize_4bit` returns fp16 and
    /// `MatMul4Bit` casts it to the input's dtype: `.to(A.dtype)`, read in
    /// bitsandbytes 0.41.1, 0.42.0, 0.43.0 and 0.45.0) and the compute dtype
    /// is not fp16. The 2023 LitGPT QLoRA rows
    /// (bf16-true) fall short by about one such fp16 LM head without it:
    /// StableLM-3B 0.41 GiB for its 0.39, phi-1.5 0.24 for 0.20.
    fn dequantized_bytes_per_weight(&self) -> f64 {
        let fp16_state = matches!(self.base_bits(), Some(b) if b <= 4)
            && self.plan.framework.quantizes_4bit_from_fp16()
            && !matches!(
                self.plan.training.precision,
                Precision::Fp16 | Precision::AmpFp16
            );
        if fp16_state {
            self.e + HALF
        } else {
            self.e
        }
    }

    /// Bytes per weight of a frozen block matrix that FSDP or ZeRO-3 shards,
    /// gathers and offloads with the parameter: bitsandbytes' packed 4-bit
    /// codes without their scales ([`Self::replicated_quant_state_bytes`]);
    /// torchao's NF4 (torchtune) shards its scales with the codes (torchao
    /// 0.18.0 `NF4Tensor.fsdp_pre_all_gather` gathers `quantized_scalers`,
    /// `quantization_factor` and `quantized_data`); a 16/32-bit base whole.
    fn sharded_matrix_bytes(&self, base_bits: u32) -> f64 {
        self.frozen_matrix_bytes(base_bits) - self.replicated_quant_state_bytes(base_bits)
    }

    /// Bytes per weight of a bitsandbytes 4-bit base's block scales, which
    /// every rank keeps whole on the GPU however the parameters are sharded
    /// or offloaded: `Params4bit._quantize` stores the `QuantState` on the
    /// parameter and on its `Linear4bit` module (`self.module.quant_state =
    /// quant_state`), FSDP's flat parameter drops it and `Linear4bit.forward`
    /// takes the module's back ("the quant state got lost when the parameter
    /// got converted. This happens for example for fsdp", bitsandbytes
    /// 0.43.1 `nn/modules.py`); neither FSDP's nor DeepSpeed's sharding or
    /// CPU offload sees a plain attribute. Zero for torchao's NF4 and for
    /// 8- to 32-bit bases (LLM.int8's row scales are negligible).
    fn replicated_quant_state_bytes(&self, base_bits: u32) -> f64 {
        if base_bits == 4 && !self.plan.framework.quantizes_with_torchao() {
            self.frozen_matrix_bytes(4) - NF4_PACKED_BYTES_PER_PARAM
        } else {
            0.0
        }
    }

    /// Bytes of a frozen block matrix weight (LoRA base).
    fn frozen_matrix_bytes(&self, base_bits: u32) -> f64 {
        match base_bits {
            4 if self.plan.nf4_double_quantized() => NF4_DOUBLE_QUANT_BYTES_PER_PARAM,
            4 => NF4_BYTES_PER_PARAM,
            8 => INT8_BYTES_PER_PARAM,
            32 => FP32,
            _ => HALF,
        }
    }

    /// Gradient bytes per trainable parameter: the parameter's dtype, or fp32
    /// `main_grad` buffers (Megatron `accumulate_allreduce_grads_in_fp32`).
    ///
    /// Megatron accumulates in fp32 for bf16 only: fp16 runs keep fp16
    /// buffers (megatron-core 0.16.1 `DistributedDataParallelConfig.
    /// grad_reduce_in_fp32 = False`; megatron-bridge 0.3.1
    /// `training/mixed_precision.py`: `bf16_mixed` sets it, `fp16_mixed`
    /// does not), and the optimizer steps on fp32 copies made at the step
    /// (`_copy_model_grads_to_main_grads`: `main_param.grad =
    /// model_param.main_grad.float()`; the distributed optimizer's
    /// `shard_main_param.grad = shard_model_grad.float()`), which
    /// [`Self::optimizer_temporaries`] counts. Megatron-LM's distributed
    /// optimizer guide tabulates the result: 20 bytes per parameter for
    /// fp16 (4 + 16/d distributed), 18 for bf16 (6 + 12/d).
    fn grad_bytes(&self) -> f64 {
        let fp16 = matches!(self.prec, Precision::AmpFp16 | Precision::Fp16);
        if self.defaults().fp32_grad_buffers && !fp16 {
            FP32
        } else {
            self.trainable_weight_bytes()
        }
    }

    /// Optimizer state bytes per trainable parameter of stage `s`, master
    /// copy included.
    fn optimizer_bytes_per_param(&self, s: u32) -> f64 {
        let master = self.master_in_optimizer() && self.trainable_weight_bytes() < FP32;
        let master_bytes = if master { FP32 } else { 0.0 };
        self.optimizer_state_bytes_per_param(s) + master_bytes
    }

    /// The optimizer's own states per trainable parameter of stage `s`
    /// (moments, factored or projected statistics), without a master copy.
    fn optimizer_state_bytes_per_param(&self, s: u32) -> f64 {
        // States in fp32 unless the weights are pure 16-bit without a master copy
        // (pure bf16 keeps states in the parameter dtype, DESIGN.md §3).
        let state = self.state_bytes();
        match self.plan.training.optimizer {
            Optimizer::Adamw | Optimizer::PagedAdamw => ADAM_STATES * state,
            Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit => ADAM_8BIT_BYTES,
            // Adafactor (Shazeer & Stern 2018) keeps factored second moments: one
            // row and one column vector per matrix, ≈ 2/hidden of the parameters.
            Optimizer::Adafactor => state * 2.0 / self.m.hidden as f64,
            Optimizer::Sgd => 0.0,
            Optimizer::SgdMomentum | Optimizer::Lion => state,
            // Momentum on the hidden matrices, AdamW on the rest (embeddings,
            // head, norms, biases): weighted by their share of what trains.
            Optimizer::Muon => {
                let matrices = self.muon_matrix_share(s);
                (matrices * MUON_STATES + (1.0 - matrices) * ADAM_STATES) * state
            }
            Optimizer::Adan => ADAN_STATES * state,
            // GaLore: moments of the projected gradients on the blocks'
            // matrices, Adam's on the rest (the embeddings, the head, norms:
            // transformers puts only `optim_target_modules`' linear layers in
            // GaLore's group). Adapters are not projected.
            Optimizer::Galore | Optimizer::Galore8bit | Optimizer::Apollo => {
                let eight_bit = self.plan.training.optimizer == Optimizer::Galore8bit;
                let rest = if eight_bit {
                    ADAM_8BIT_BYTES
                } else {
                    ADAM_STATES * state
                };
                if self.full_finetune() {
                    let matrices = self.muon_matrix_share(s);
                    matrices * self.projected_bytes_per_matrix_param(eight_bit)
                        + (1.0 - matrices) * rest
                } else {
                    rest
                }
            }
        }
    }

    /// The blocks' matrices as one rank holds them, `(inputs, outputs, copies)`:
    /// q, k, v, gate and up split their outputs over TP, o and down their
    /// inputs (Megatron's column- and row-parallel layers); an MoE block holds
    /// a copy per expert.
    ///
    /// With dense blocks among the expert ones ([`ModelSpec::dense_layers`])
    /// the average block's: each kind's matrices, their copies scaled by the
    /// kind's share of the blocks.
    fn local_block_matrices(&self) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
        self.block_kinds().flat_map(move |(m, share)| {
            block_matrices_of(m, LoraTargets::ALL_LINEAR, Fused::of(m))
                .into_iter()
                .enumerate()
                .filter(|(_, mat)| mat.targeted)
                .map(move |(i, mat)| {
                    let row_parallel = matches!(i, 3 | 6); // o, down
                    let (din, dout) = if row_parallel {
                        (mat.din / self.t, mat.dout)
                    } else {
                        (mat.din, mat.dout / self.t)
                    };
                    (din, dout, share * mlp_copies_of(m, &mat))
                })
        })
    }

    /// Bytes GaLore keeps per block-matrix parameter (galore-torch 1.0
    /// `GaLoreAdamW.step`, `GaLoreProjector`, `proj_type="std"`): an m × n
    /// gradient is projected to r × max(m, n) (`r = min(rank, m, n)`), on which
    /// Adam keeps `exp_avg` and `exp_avg_sq` (`torch.zeros_like(grad)`: the
    /// gradient's dtype; one byte each in 8-bit), and the projector keeps its
    /// orthogonal matrix. For 16-bit weights that is a fresh r × min(m, n)
    /// copy in their dtype (`B.to(original_device).type(original_type)`); for
    /// fp32 weights `get_orthogonal_matrix` returns the slice `Vh[:rank, :]`
    /// (or `U[:, :rank]`) of `torch.linalg.svd(..., full_matrices=False)`,
    /// which keeps the whole min(m, n)² factor alive. APOLLO's random
    /// projector (apollo-torch 1.0.3 `GradientProjector`: `stable_randn((m,
    /// rank))` or `(rank, n)` in the gradient's dtype) is r × min(m, n) for
    /// any weights.
    fn projected_bytes_per_matrix_param(&self, eight_bit: bool) -> f64 {
        let w = self.trainable_weight_bytes();
        let svd = self.plan.training.optimizer != Optimizer::Apollo;
        let rank = self
            .plan
            .training
            .galore_rank
            .unwrap_or(GALORE_DEFAULT_RANK) as f64;
        let (mut kept, mut params) = (0.0, 0.0);
        for (din, dout, copies) in self.local_block_matrices() {
            let (lo, hi) = (din.min(dout), din.max(dout));
            let r = rank.min(lo);
            let moments = 2.0 * r * hi * if eight_bit { 1.0 } else { w };
            let projector = if svd && w >= FP32 {
                lo * lo * FP32
            } else {
                r * lo * w
            };
            kept += copies * (moments + projector);
            params += copies * din * dout;
        }
        if params > 0.0 {
            kept / params
        } else {
            0.0
        }
    }

    /// GaLore's largest transient at the step, one matrix at a time: when the
    /// projector is refreshed (the first step, then every `update_proj_gap`),
    /// the fp32 copy of a 16-bit gradient and the SVD's factors
    /// (`torch.linalg.svd(matrix.float(), full_matrices=False)`: U, S, Vh,
    /// lo × (lo + hi) floats); at every step `project_back`'s full-size update
    /// and its scaled copy (`full_rank_grad * self.scale`).
    ///
    /// APOLLO draws its projection instead (no SVD) and steps with the
    /// full-size scaled gradient (`scaled_grad = p.grad * grad_scaling_factor`).
    fn projected_step_temporaries(&self) -> f64 {
        let w = self.trainable_weight_bytes();
        let float_copy = if w < FP32 { FP32 } else { 0.0 };
        let apollo = self.plan.training.optimizer == Optimizer::Apollo;
        self.local_block_matrices()
            .map(|(din, dout, _)| {
                let (lo, hi) = (din.min(dout), din.max(dout));
                let svd = if apollo {
                    0.0
                } else {
                    lo * hi * float_copy + lo * (lo + hi) * FP32
                };
                let back = 2.0 * lo * hi * w;
                svd.max(back)
            })
            .fold(0.0, f64::max)
    }

    /// The share of stage `s`'s trainable parameters Muon steps: the blocks'
    /// 2-D matrices under full fine-tuning (not the embeddings or the head,
    /// which Muon's authors leave to AdamW, nor norms and biases); every
    /// adapter matrix (LoRA's A and B) otherwise.
    fn muon_matrix_share(&self, s: u32) -> f64 {
        if !self.full_finetune() {
            return 1.0;
        }
        let trainable = self.stage_trainable(s);
        if trainable <= 0.0 {
            return 0.0;
        }
        ((self.stage_layers(s) - self.frozen_blocks(s)) * self.layer_matrix_params() / trainable)
            .clamp(0.0, 1.0)
    }

    /// The share of stage `s`'s trainable parameters whose states a paged
    /// optimizer still keeps in ordinary device memory: bitsandbytes pages
    /// only tensors of at least [`PAGED_MIN_ELEMENTS`]
    /// (`Optimizer8bit.get_state_buffer`: `if not self.is_paged or p.numel() <
    /// 1e5: return torch.zeros_like(p, …)`). LoRA's A (r × in) and B (out × r)
    /// are often under it (r 8 on a 4096-wide matrix: 32,768), as are DoRA's
    /// magnitudes, IA³'s and LN tuning's vectors and LLaMA-Adapter's 10-token
    /// prompts below 10,000 wide; a full fine-tune's norms and biases (about
    /// 10⁻⁴ of its parameters) and the methods whose tensors are not known are
    /// left paged.
    fn unpaged_share(&self, s: u32) -> f64 {
        let split = |small: f64, all: f64| if all > 0.0 { small / all } else { 0.0 };
        match self.plan.training.finetune {
            Finetune::Lora { rank, targets, .. } => {
                let r = rank as f64;
                let variant = self.lora_variant();
                let (mut small, mut all) = (0.0, 0.0);
                for mat in self.block_matrices(targets).iter().filter(|x| x.targeted) {
                    let n = self.mlp_copies(mat);
                    let a = if variant == LoraVariant::LoraFa {
                        0.0
                    } else {
                        r * mat.din
                    };
                    let mag = if variant == LoraVariant::Dora {
                        mat.dout
                    } else {
                        0.0
                    };
                    for numel in [a, r * mat.dout, mag] {
                        all += n * numel;
                        if numel < PAGED_MIN_ELEMENTS {
                            small += n * numel;
                        }
                    }
                }
                split(small, all)
            }
            Finetune::Adapter {
                method: AdapterMethod::Ia3 | AdapterMethod::LnTuning,
                ..
            } => 1.0,
            Finetune::Adapter {
                method: method @ (AdapterMethod::LlamaAdapter | AdapterMethod::LlamaAdapterV2),
                ..
            } => {
                // Each block's prompt, and v2's LM head bias and scale (one
                // value per vocabulary entry each), are paged when large.
                let prompt =
                    AdapterMethod::LLAMA_ADAPTER_PROMPT_LENGTH as f64 * self.m.hidden as f64;
                let vocab = self.m.vocab as f64;
                let mut paged = 0.0;
                if prompt >= PAGED_MIN_ELEMENTS {
                    paged += self.stage_layers(s) * self.adapter_prefix_share() * prompt;
                }
                if method == AdapterMethod::LlamaAdapterV2
                    && self.is_last(s)
                    && vocab >= PAGED_MIN_ELEMENTS
                {
                    paged += 2.0 * vocab;
                }
                let trainable = self.stage_trainable(s);
                1.0 - split(paged.min(trainable), trainable)
            }
            _ => 0.0,
        }
    }

    fn paged_optimizer(&self) -> bool {
        matches!(
            self.plan.training.optimizer,
            Optimizer::PagedAdamw | Optimizer::PagedAdamw8bit
        )
    }

    fn shards_optimizer(&self) -> bool {
        !matches!(
            self.plan.parallel.sharding,
            Sharding::None | Sharding::DataParallel | Sharding::Ddp
        )
    }
    fn shards_grads(&self) -> bool {
        matches!(
            self.plan.parallel.sharding,
            Sharding::Zero2
                | Sharding::Zero3
                | Sharding::FsdpFull
                | Sharding::FsdpGradOp
                | Sharding::Hsdp
        )
    }
    /// The parameters are sharded at rest (between steps). FSDP's
    /// SHARD_GRAD_OP is: it gathers a unit in forward and reshards it after
    /// its backward whenever gradients are synchronised (FSDP1
    /// `_runtime_utils.py` `_should_free_in_backward`: `state._sync_gradients
    /// or` a strategy that reshards after forward; FSDP2
    /// `reshard_after_forward=False` likewise reshards after backward), so at
    /// the step each rank holds its shard alone; what it keeps gathered from
    /// forward to backward is in [`Self::comm_buffers`].
    fn shards_params(&self) -> bool {
        self.plan.parallel.sharding.shards_params()
    }

    // ----- model states -------------------------------------------------------

    /// Weights on one rank of stage `s`.
    fn weights(&self, s: u32) -> f64 {
        let (at_rest, quant_state, cached_fp8) = self.weight_parts(s);
        if self.offload.params_offloaded() {
            quant_state
        } else {
            at_rest + cached_fp8 + quant_state
        }
    }

    /// One rank's weights of stage `s` in three parts: the parameters as the
    /// sharding holds them between uses (the shard under parameter sharding),
    /// which is what a parameter offload moves to the host; the quantized
    /// matrices' scales beside them on every rank
    /// ([`Self::replicated_quant_state_bytes`]), which stay on the GPU (they
    /// are attributes of bitsandbytes' `Params4bit`, not parameters FSDP or
    /// ZeRO-3 shard or offload); and the cached fp8 weight copies.
    fn weight_parts(&self, s: u32) -> (f64, f64, f64) {
        // What the sharding holds, and the quantized matrices' scales beside
        // it on every rank ([`Self::replicated_quant_state_bytes`]).
        let (bytes, quant_state) = match self.base_bits() {
            None => (
                self.stage_params(s) * self.trainable_weight_bytes() * self.model_copies(),
                0.0,
            ),
            Some(base_bits) => {
                let matrices = self.stage_layers(s) * self.layer_matrix_params()
                    + self.quantized_head_params(s);
                let rest = self.stage_params(s) - matrices;
                let rest_bytes = if base_bits >= 32 || self.kbit_fp32() {
                    FP32
                } else {
                    HALF
                };
                let sharded = matrices * self.sharded_matrix_bytes(base_bits) + rest * rest_bytes
                    - self.kbit_recast_edge_params(s) * (FP32 - HALF)
                    + (self.stage_trainable(s)
                        + self.stage_layers(s) * self.frozen_adapter_layer_params())
                        * self.trainable_weight_bytes()
                    + self.stage_layers(s) * self.osf_buffer_layer_params() * rest_bytes;
                (
                    sharded,
                    matrices * self.replicated_quant_state_bytes(base_bits),
                )
            }
        };
        let cached_fp8 = if self.fp8_weight_copies_cached() {
            self.stage_layers(s) * self.fp8_weight_copies_per_layer()
        } else {
            0.0
        };
        let at_rest = if self.shards_params() {
            bytes / self.shard
        } else {
            bytes
        };
        (at_rest, quant_state, cached_fp8)
    }

    /// Copies of the weights a full fine-tune keeps: DPO's and KTO's frozen
    /// reference model beside the policy ([`Objective::Dpo`]); adapters have
    /// none, nor a run whose reference log-probabilities were computed before
    /// training, unless FSDP wraps the reference anyway
    /// ([`crate::plan::TrainingSpec::precompute_ref`]).
    fn model_copies(&self) -> f64 {
        let reference = matches!(
            self.plan.training.objective,
            Objective::Dpo | Objective::Kto
        );
        let precomputed = self.plan.training.precompute_ref
            && !matches!(
                self.plan.parallel.sharding,
                Sharding::FsdpFull | Sharding::FsdpGradOp | Sharding::Hsdp
            );
        if reference && self.full_finetune() && !precomputed {
            2.0
        } else {
            1.0
        }
    }

    /// Gradients of one rank (full size; ZeRO-2+/FSDP keep only a shard).
    fn gradients(&self, s: u32) -> f64 {
        if self.grads_offloaded() {
            // Only the reduce buckets / the unit in flight stay ([`Self::comm_buffers`]).
            return 0.0;
        }
        let g = self.stage_trainable(s) * self.grad_bytes();
        if self.plan.training.optimizer_in_backward {
            // Gradients are freed as each parameter steps: one layer's worth lives.
            return g / self.stage_layers(s).max(1.0);
        }
        if self.shards_grads() {
            g / self.shard
        } else {
            g
        }
    }

    /// The gradient shard lives in host memory ([`Self::offload_targets`]
    /// counts it there): ZeRO-2/3 with `offload_optimizer` copy each reduced
    /// bucket into the pinned fp32 gradient partition and free the GPU
    /// gradient (deepspeed/runtime/zero/stage_1_and_2.py
    /// `async_inplace_copy_grad_to_fp32_buffer_from_gpu`; stage3.py
    /// `partition_grads` into `fp32_partitioned_groups_flat[i].grad`), and
    /// FSDP's parameter offload moves the sharded gradients with them
    /// (FSDP1 `CPUOffload(offload_params=True)`: "gradients are offloaded to
    /// CPU as well"; FSDP2 `CPUOffloadPolicy`: sharded parameters and
    /// gradients on the CPU, the optimizer steps there). ZeRO-1 reduces only
    /// after backward, from full gradients on the GPU. Megatron's gradients
    /// never leave the GPU: its `main_grad` buffer is allocated there for the
    /// run ([`Self::megatron_grad_buffer`]), and its CPU-offloaded optimizer
    /// copies each gradient into a pinned host tensor before the step
    /// (megatron-core 0.16.1 `optimizer/cpu_offloading/hybrid_optimizer.py`:
    /// `self.cpu_copy_map_grad[param].data.copy_(grad, non_blocking=True)`;
    /// `distributed/param_and_grad_buffer.py`: `self.grad_data = torch.zeros(…,
    /// device=torch.cuda.current_device())`).
    fn grads_offloaded(&self) -> bool {
        if self.megatron_grad_buffer() {
            return false;
        }
        let off = self.offload;
        match self.plan.parallel.sharding {
            Sharding::Zero2 | Sharding::Zero3 => off.optimizer_offloaded(),
            Sharding::FsdpFull | Sharding::FsdpGradOp | Sharding::Hsdp => off.params_offloaded(),
            _ => false,
        }
    }

    /// Bytes the caching allocator holds on FSDP's reduce-scatter stream: the
    /// sharded gradients, when they are freed between steps. The allocator
    /// keeps every segment for the stream it was allocated on and serves a
    /// request only from blocks of the requesting stream (PyTorch
    /// `c10/cuda/CUDACachingAllocator.cpp`, `get_free_block`; segments are
    /// reported per stream, `StreamSegmentSize` in `CUDACachingAllocator.h`).
    /// FSDP allocates each sharded gradient there: FSDP2's `foreach_reduce`
    /// allocates `reduce_output` "in the RS stream and used in the default
    /// stream (for optimizer)" and the sharded `.grad` views it (torch 2.11
    /// `distributed/fsdp/_fully_shard/_fsdp_collectives.py`); FSDP1's
    /// `_reduce_grad` runs under `_post_backward_stream` and allocates
    /// `new_sharded_grad = torch.empty_like(chunks[0])` there
    /// (`distributed/fsdp/_runtime_utils.py`). Once `zero_grad(set_to_none=True)`
    /// frees them, those blocks stay reserved but cannot serve the next
    /// forward's activations on the default stream, so the forward peak
    /// reserves them on top of its own allocations. Measured on the H200 on
    /// one rank (calibration/h200-2026-11-30, set 4): FSDP2 Llama-3.2-1B
    /// reserved 7.73 GiB over its allocated peak where the same loop without
    /// FSDP reserved 2.59 GiB — the difference is its 4.60 GiB of fp32
    /// gradients; Llama-3.2-3B with checkpointing 12.49 GiB over, for 11.97
    /// GiB of gradients. Gradients kept from step to step (accumulation,
    /// `set_to_none=False`, persistent buffers) are counted as allocated in
    /// every phase, and offloaded ones are on the host: nothing is left
    /// cached then.
    fn side_stream_grad_pool(&self, s: u32) -> f64 {
        if !self.plan.parallel.sharding.is_fsdp()
            || self.grads_persistent()
            || self.plan.training.optimizer_in_backward
        {
            return 0.0;
        }
        self.gradients(s)
    }

    /// Bytes the caching allocator holds on ZeRO-3's fetch stream: the most
    /// parameters it has fetched at once (`fetched`: the gathered ones and,
    /// with parameters on the CPU, the head's partition copied in beside its
    /// gather). DeepSpeed fetches on a stream of its own
    /// (`PartitionedParameterCoordinator`: `all_gather_coalesced` under
    /// `get_accelerator().stream(self.__allgather_stream)`, deepspeed 0.19.8
    /// `runtime/zero/partitioned_param_coordinator.py`), and the allocator
    /// serves a stream only from its own blocks
    /// ([`Self::side_stream_grad_pool`]): what the forward's fetches reserved
    /// stays reserved beside the backward's logits and gradients on the
    /// default stream. Measured on the H200 (calibration/h200-2026-12-04-deepspeed,
    /// `peak-*.txt`): BLOOMZ-7B1's run (fp32 LoRA, ZeRO-3 with its parameters on
    /// the CPU) held 8,354 MiB of segments on the fetch stream and 7,864 on
    /// the default stream at its reserved peak, 15.86 GiB reserved over 12.89
    /// allocated.
    fn zero3_fetch_stream_pool(&self, fetched: f64) -> f64 {
        if self.plan.parallel.sharding == Sharding::Zero3 && self.gathers_units() {
            fetched
        } else {
            0.0
        }
    }

    /// Bytes a parameter has as the model was loaded, before any sharding:
    /// the trainable weights' dtype ([`Self::trainable_weight_bytes`]), or for
    /// a quantized base the dtype of what is not quantized (norms, embeddings).
    fn loaded_param_bytes(&self) -> f64 {
        match self.base_bits() {
            None => self.trainable_weight_bytes(),
            Some(bits) if bits >= 32 || self.kbit_fp32() => FP32,
            Some(_) => HALF,
        }
    }

    /// One block with its unquantized parameters `bytes` each: its matrices
    /// (packed codes for a quantized base, [`Self::sharded_matrix_bytes`])
    /// and norms.
    fn block_bytes_in(&self, bytes: f64) -> f64 {
        let matrix = match self.base_bits() {
            Some(bits) if bits <= 8 => self.sharded_matrix_bytes(bits),
            _ => bytes,
        };
        self.layer_matrix_params() * matrix + self.layer_norm_params() * bytes
    }

    /// The pool of FSDP1's pre-unshard stream under parameter offload: before
    /// each all-gather FSDP1 copies the unit's shard from the host to the GPU
    /// on a stream of its own (`pre_unshard` → `flat_param_to(device)` under
    /// `_pre_unshard_stream`, torch 2.11 `fsdp/_runtime_utils.py` `_unshard`,
    /// `_flat_param.py`), and the allocator serves that stream only from its
    /// own blocks ([`Self::side_stream_grad_pool`]): the largest unit's shard,
    /// the root's (embeddings, final norm, head), stays reserved there.
    /// Measured on the H200 (calibration/h200-2026-12-04-fsdp1): 1,006 MiB of
    /// segments on that stream for Llama-3.1-8B's root shard (1,002 MiB over
    /// two ranks), 504 MiB for Llama-2-70B's (500 MiB). `largest_unit` is the
    /// largest unit as loaded ([`Self::fsdp1_wrap_cache`]'s largest segment,
    /// zero without FSDP1's offload).
    fn fsdp1_offload_copy_pool(&self, largest_unit: f64) -> f64 {
        largest_unit / self.shard
    }

    /// What FSDP1 leaves cached on the default stream as it wraps a model
    /// loaded on the host, when every unit then goes back to the host
    /// (`CPUOffload(offload_params=True)` under a framework that wraps with
    /// FSDP1, [`Framework::uses_fsdp2`]; without offload the shards stay in
    /// those segments): `(bytes, largest segment)`, the largest segment being
    /// the largest unit as loaded, the root (embeddings, final norm, head) or
    /// a block. Each block leaves
    /// [`FSDP1_WRAP_BLOCK_COPIES`] copies of itself (the later blocks reuse
    /// the first one's segments); the root unit, wrapped last and larger,
    /// segments of its own: each tensor moved to the GPU, the largest once
    /// more as `sync_module_states` broadcasts it, and its flat parameter.
    /// Accelerate's `accelerate config` answers yes to CPU-RAM-efficient
    /// loading and so to `sync_module_states` by default (accelerate 1.16
    /// `commands/config/cluster.py`; peft's FSDP configs set both), and
    /// neither the Trainer nor Accelerate empties the cache after wrapping.
    /// (Lightning's `FSDPStrategy` materializes meta-device units in place and
    /// broadcasts nothing: one copy fewer there, counted alike.)
    /// Tensors larger than the largest segment (the loss's fp32 logits) get
    /// segments of their own beside the cache ([`Self::stage`]). Measured on
    /// the H200 (calibration/h200-2026-12-04-fsdp1, whole allocator history):
    /// Llama-3.1-8B with LoRA under FSDP1 offload over two ranks kept 6,270
    /// MiB of wrap segments (two 1,002 MiB tensors, a 1,004 MiB broadcast
    /// buffer, the 2,006 MiB flat root, 1,256 MiB of block segments) and then
    /// mapped three 4,008 MiB segments for its loss: 18,302 MiB on the default
    /// stream, 4,037 over what it held at its peak.
    fn fsdp1_wrap_cache(&self, s: u32) -> (f64, f64) {
        if !self.plan.parallel.sharding.is_fsdp()
            || self.plan.framework.uses_fsdp2()
            || !self.offload.params_offloaded()
        {
            return (0.0, 0.0);
        }
        let bytes = self.loaded_param_bytes();
        let block = if self.stage_layers(s) > 0.0 {
            self.block_bytes_in(bytes)
        } else {
            0.0
        };
        let root = self.edge_params(s) * bytes;
        let embedding = if self.is_first(s) {
            self.m.embedding_params() as f64 / self.t
        } else {
            0.0
        };
        let largest_tensor = embedding.max(self.lm_head_params(s)) * bytes;
        (
            FSDP1_WRAP_BLOCK_COPIES * block + 2.0 * root + largest_tensor,
            root.max(block),
        )
    }

    /// What DeepSpeed's ZeRO-1/2 optimizer leaves cached on the default
    /// stream as it is built: `(bytes, largest segment)`. Building it
    /// (deepspeed 0.19.8 `runtime/zero/stage_1_and_2.py`, `__init__`) empties
    /// the cache, then flattens the trainable parameters of the model the
    /// engine has moved to the GPU into one new buffer on the GPU when the
    /// free memory holds it (`flatten_on_accelerator`), and points each
    /// parameter at its slice (`_update_model_bit16_weights`): the
    /// parameters' own tensors are freed, their segments kept. It then
    /// clones this rank's partition of the flat buffer and converts the clone
    /// to the fp32 master (`.detach().clone().to(device=self.device,
    /// dtype=...)`, on the host under optimizer offload), freeing the 16-bit
    /// clone; and, with the optimizer on the GPU, makes an fp32 zero gradient
    /// for the partition and drops it (`initialize_optimizer_states`:
    /// `single_grad_partition = torch.zeros(...)`, then `group.grad = None`).
    /// Nothing empties the cache after that. The flat buffer, the master and
    /// the optimizer's states stay allocated in segments of their own.
    /// Measured on the H200 (calibration/h200-2026-12-04-deepspeed,
    /// `peak-ds2*.txt`, segments made before the first step): Llama-3.2-1B
    /// full ZeRO-2 on one rank 16,508 MiB with 7,072 allocated (the flat
    /// bf16 buffer 2,357 and the master 4,714; freed: the parameters'
    /// 2,357, the clone's 2,357, the zero gradient's 4,714 — 9,428, 9,436
    /// measured); Llama-3.2-3B with the optimizer on the CPU 18,430 with
    /// 6,880 allocated (the parameters' 6,128 and the clone's 6,128 freed).
    /// Those segments take what fits in them ([`Self::stage`]); the
    /// checkpointed 3B run's fp32 logits-sized tensors (8,016 MiB each) did
    /// not, and mapped segments of their own beside them. Releases before
    /// 0.19 empty the cache of the parameters' own tensors, and before
    /// 0.18.3 clone a host master's partition on the host
    /// ([`crate::plan::DeepspeedRelease`]).
    /// (`weights`: what the stage's weights hold on the GPU as loaded.)
    fn zero12_flatten_cache(&self, s: u32, weights: f64) -> (f64, f64) {
        if !self.zero12() {
            return (0.0, 0.0);
        }
        let trainable = self.stage_trainable(s);
        if trainable <= 0.0 {
            return (0.0, 0.0);
        }
        let release = self.plan.parallel.deepspeed;
        let w = self.trainable_weight_bytes();
        let partition = trainable / self.shard;
        let offloaded = self.offload.optimizer_offloaded();
        // The clone is the master itself when the weights are fp32 and the
        // master stays on the GPU (`.to()` to its own dtype and device);
        // before 0.18.3 a master for the host is cloned there.
        let clone =
            if (w >= FP32 && !offloaded) || (offloaded && !release.clones_partition_on_gpu()) {
                0.0
            } else {
                partition * w
            };
        let zero_grad = if offloaded { 0.0 } else { partition * FP32 };
        let loaded = trainable * w;
        let free = self.gpu_room() - weights;
        // Flattened through the host otherwise (and before 0.19 always): the
        // parameters go there and the cache is emptied before the flat
        // buffer comes back.
        let (per_param, largest_param) = if release.flattens_on_gpu() && free >= loaded {
            (loaded, self.largest_trainable_tensor(s) * w)
        } else {
            (0.0, 0.0)
        };
        (
            per_param + clone + zero_grad,
            largest_param.max(clone).max(zero_grad),
        )
    }

    /// The GPU's memory less what the runtime holds outside the allocator
    /// (context, NCCL, other processes): what the allocator can reserve.
    fn gpu_room(&self) -> f64 {
        self.plan.gpu.capacity().as_f64() - self.runtime()
    }

    /// DeepSpeed's ZeRO-1/2 optimizer (`stage_1_and_2.py`), not Megatron's
    /// distributed optimizer, which the same stages also name.
    fn zero12(&self) -> bool {
        matches!(
            self.plan.parallel.sharding,
            Sharding::Zero1 | Sharding::Zero2
        ) && !self.megatron_grad_buffer()
    }

    /// Elements of the largest trainable tensor on stage `s` under a full
    /// fine-tune (the embedding, an untied head or a block's MLP matrix,
    /// per TP rank); zero for adapters, whose tensors are small.
    fn largest_trainable_tensor(&self, s: u32) -> f64 {
        if !self.full_finetune() {
            return 0.0;
        }
        let embedding = if self.is_first(s) {
            self.m.embedding_params() as f64 / self.t
        } else {
            0.0
        };
        let matrix = if self.stage_layers(s) > 0.0 {
            self.m.hidden as f64 * self.m.ffn as f64 / self.t
        } else {
            0.0
        };
        embedding.max(self.lm_head_params(s)).max(matrix)
    }

    /// The reduction stream's pool of ZeRO-2 with its optimizer on the
    /// host: at the end of backward each gradient's slice in this rank's
    /// partition is copied to fp64 on the GPU for its norm
    /// (`set_norm_for_param_grad_in_gpu`, [`NORM_COPY_BYTES`]), then to fp32
    /// for the copy to the host's gradient
    /// (`async_inplace_copy_grad_to_fp32_buffer_from_gpu`), which fits where
    /// the fp64 copy was (deepspeed 0.19.8 `runtime/zero/stage_1_and_2.py`) —
    /// under `overlap_comm` on the reduction stream, whose blocks the
    /// default stream cannot use ([`Self::side_stream_grad_pool`]). The
    /// largest gradient sizes it: the H200's Llama-3.2-3B run
    /// (calibration/h200-2026-12-04-deepspeed, `peak-ds2off-*.txt`) held
    /// 3,200 MiB of segments on that stream, 3,006 allocated at its reserved
    /// peak — the fp64 copy of its 394 M-element embedding gradient. Without
    /// `overlap_comm` (DeepSpeed's default below stage 3,
    /// [`Framework::deepspeed_overlap_comm`]) the copies are made on the
    /// default stream, in blocks the backward has freed.
    fn zero2_offload_norm_pool(&self, s: u32) -> f64 {
        if self.plan.parallel.sharding != Sharding::Zero2
            || !self.offload.optimizer_offloaded()
            || !self.zero12()
            || !self.plan.framework.deepspeed_overlap_comm(false)
        {
            return 0.0;
        }
        let partition = self.stage_trainable(s) / self.shard;
        self.largest_trainable_tensor(s).min(partition) * NORM_COPY_BYTES
    }

    /// The reduce stream's pool of ZeRO-3 with its optimizer on the host:
    /// for each gradient partition `partition_grads` copies the host buffer
    /// it reduced into back to the GPU (`grad_buffer.to(grad_partition.device)`,
    /// kept for the bucket), and `_offload_grad_partition_at_boundary` takes
    /// its norm in fp64 chunks of [`ZERO3_NORM_CHUNK_ELEMENTS`] and copies it
    /// to the host in fp32, which fits where a chunk was (deepspeed 0.14.4 to
    /// 0.19.8 `runtime/zero/stage3.py`), all under `reduce_and_partition_stream`,
    /// a stream of its own with `overlap_comm` (on by default at stage 3).
    /// Its segments grow with the gradients in backward order: a block's
    /// largest matrix first, then — where a tied embedding's gradient is the
    /// last to finish and outgrows them — the embedding's. Measured on the
    /// H200 (calibration/h200-2026-12-04-deepspeed, `peak-ds3off-*.txt`):
    /// Llama-3.2-3B full fine-tune held 2,902 MiB there, 2,100 in the norm's
    /// two segments (192 MiB for a 25 M-element MLP matrix, 1,907 for the
    /// embedding's first 250 M elements) and 802 in the copies' (48 + 752 + 2)
    /// — 2,899 MiB by this count.
    fn zero3_offload_reduce_pool(&self, s: u32) -> f64 {
        if self.plan.parallel.sharding != Sharding::Zero3
            || !self.offload.optimizer_offloaded()
            || !self.plan.framework.deepspeed_overlap_comm(true)
            || !self.full_finetune()
        {
            return 0.0;
        }
        let shard = |elements: f64| elements / self.shard;
        let pair =
            |p: f64| NORM_COPY_BYTES * p.min(ZERO3_NORM_CHUNK_ELEMENTS) + self.grad_bytes() * p;
        let matrix = if self.stage_layers(s) > 0.0 {
            shard(self.m.hidden as f64 * self.m.ffn as f64 / self.t)
        } else {
            0.0
        };
        let largest = shard(self.largest_trainable_tensor(s));
        // An embedding tied to the head finishes its gradient last, after the
        // blocks' segments were made; an untied head's comes first and makes
        // the largest at once.
        let tied_last = self.is_first(s) && self.m.tied_embeddings && largest > matrix;
        if tied_last {
            pair(matrix) + pair(largest)
        } else {
            pair(largest)
        }
    }

    /// ZeRO-3 allocates the gradient partitions of every trainable parameter
    /// as one flat buffer when its optimizer is built and keeps it for the
    /// run, on the GPU unless the optimizer is offloaded
    /// (deepspeed/runtime/zero/stage3.py `grad_partitions_flat_buffer`, on
    /// `self.device`, the CPU under `offload_optimizer`; 0.14.4 and 0.17.5).
    /// ZeRO-2 frees its partition after each step (`averaged_gradients[i] = None`).
    fn zero3_grad_buffer_on_gpu(&self) -> bool {
        self.plan.parallel.sharding == Sharding::Zero3
            && !self.offload.optimizer_offloaded()
            && !self.plan.training.optimizer_in_backward
    }

    /// Megatron's data-parallel wrapper allocates every trainable parameter's
    /// fp32 `main_grad` in contiguous buffers when the model is wrapped, zeroes
    /// them at the start of each iteration and never frees them; its reduce
    /// buckets are views into them (megatron-core 0.19.2
    /// `distributed/param_and_grad_buffer.py`: `self.grad_data = torch.zeros(
    /// self.numel, dtype=self.grad_dtype, ...)`, `reset()` → `grad_data.zero_()`;
    /// `training/arguments.py` turns on `accumulate_allreduce_grads_in_fp32`
    /// for bf16). Seen in ../shared/fixtures/traces/megatron_mem_01.txt
    /// (GPT-2 345M, TP 2 × DP 2, distributed optimizer): 2040 MiB allocated
    /// between iterations = 178 M parameters per rank × (2 + 4 + 12/2) bytes,
    /// the fp32 gradient buffer included.
    fn megatron_grad_buffer(&self) -> bool {
        self.defaults().fp32_grad_buffers && !self.plan.training.optimizer_in_backward
    }

    /// The full unsharded gradients an FSDP rank accumulates through the
    /// micro-batches its framework runs under `no_sync`
    /// ([`Framework::fsdp_no_sync_accumulation`]; none with
    /// [`crate::plan::TrainingSpec::sync_each_batch`] or without
    /// accumulation), in the compute dtype: Accelerate's FSDP mixed precision
    /// reduces in the parameters' compute dtype (`reduce_dtype = param_dtype`,
    /// accelerate 1.16 `FullyShardedDataParallelPlugin.set_mixed_precision`),
    /// so the gradient autograd makes is kept as it is. They live from the
    /// second micro-batch's forward until the last one's backward reduces
    /// them unit by unit into the shards.
    fn unsharded_accumulated_grads(&self, s: u32) -> f64 {
        if !self.plan.accumulates_unsharded_grads() {
            return 0.0;
        }
        self.stage_trainable(s) * self.e
    }

    /// The gradients live from one step to the next in a buffer allocated
    /// once (ZeRO-3's partitions, Megatron's `main_grad`).
    fn grads_persistent(&self) -> bool {
        self.zero3_grad_buffer_on_gpu() || self.megatron_grad_buffer() || self.ddp_bucket_view()
    }

    /// DDP with `gradient_as_bucket_view=True`: the gradients are views of the
    /// reducer's flat buckets, allocated when the model is wrapped and kept
    /// for the run (PyTorch `torch/nn/parallel/distributed.py`: "gradients
    /// will be views pointing to different offsets of allreduce communication
    /// buckets"), so the gradient memory is there from the first forward.
    /// Measured on the H200 on one rank (set 5): Llama-3.2-1B amp-bf16 peaked
    /// at the same byte with and without the view — both hold one
    /// gradient-sized buffer more than the loop without DDP.
    fn ddp_bucket_view(&self) -> bool {
        let p = &self.plan.parallel;
        p.sharding == Sharding::Ddp && p.gradient_as_bucket_view && !self.megatron_grad_buffer()
    }

    /// Optimizer states (and master copy) one rank holds on the GPU, wherever
    /// they are allocated; zero when offloaded to the CPU.
    fn optimizer_on_gpu(&self, s: u32) -> f64 {
        if self.offload.optimizer_offloaded() {
            return 0.0;
        }
        let o = self.stage_trainable(s) * self.optimizer_bytes_per_param(s);
        if self.shards_optimizer() {
            o / self.shard
        } else {
            o
        }
    }

    /// Optimizer states in PyTorch's allocator: a paged optimizer's small
    /// tensors' ([`Self::unpaged_share`]).
    fn optimizer(&self, s: u32) -> f64 {
        if self.paged_optimizer() {
            self.optimizer_on_gpu(s) * self.unpaged_share(s)
        } else {
            self.optimizer_on_gpu(s)
        }
    }

    /// Paged optimizer state lives in CUDA managed memory: nvidia-smi sees the
    /// resident pages, PyTorch's counters do not (DESIGN.md §3b).
    fn paged_optimizer_resident(&self, s: u32) -> f64 {
        if self.paged_optimizer() {
            self.optimizer_on_gpu(s) * (1.0 - self.unpaged_share(s))
        } else {
            0.0
        }
    }

    /// Bytes of one optimizer-state element: fp32 beside fp32 weights or a
    /// master copy, else the parameter's 16-bit dtype (`torch.zeros_like(p)` in
    /// torch/optim/adamw.py `_init_group`).
    fn state_bytes(&self) -> f64 {
        let w = self.trainable_weight_bytes();
        if w >= FP32 || self.master_in_optimizer() {
            FP32
        } else {
            HALF
        }
    }

    /// Optimizer-step temporaries. Foreach Adam/AdamW makes one state-sized
    /// temporary in the states' dtype (`exp_avg_sq_sqrt = torch._foreach_sqrt(...)`
    /// in torch/optim/adam.py `_multi_tensor_adam`; measured on the H200:
    /// Llama-3.1-8B pure bf16 stepped at weights + grads + states + 2 bytes/param,
    /// and the amp run went out of memory inside that very `_foreach_sqrt`).
    /// Foreach SGD with momentum updates in place (`_multi_tensor_sgd`); fused
    /// kernels make none; per-tensor optimizers (the for-loop path, HF's
    /// Adafactor, Lion) one tensor at a time.
    fn optimizer_temporaries(&self, s: u32) -> f64 {
        if self.offload.optimizer_offloaded() || self.plan.training.optimizer_in_backward {
            return 0.0;
        }
        let has_state = !matches!(self.plan.training.optimizer, Optimizer::Sgd);
        if !has_state {
            return 0.0;
        }
        let n = self.stage_trainable(s)
            / if self.shards_optimizer() {
                self.shard
            } else {
                1.0
            };
        let largest = (self.m.vocab as f64 * self.m.hidden as f64 / self.t).min(n);
        // Muon orthogonalises one matrix at a time (`_single_tensor_muon`'s
        // Newton–Schulz iterations).
        let per_tensor = matches!(
            self.plan.training.optimizer,
            Optimizer::Adafactor | Optimizer::Lion | Optimizer::Muon
        );
        let kernel = match self.plan.training.optimizer_impl {
            // GaLore's optimizers are their own per-tensor loops, whatever
            // the kernel setting.
            _ if self.plan.training.optimizer.projects_gradients() => {
                let galore = if self.full_finetune() {
                    self.projected_step_temporaries()
                } else {
                    0.0
                };
                (largest * FP32).max(galore)
            }
            OptimizerImpl::Fused => 0.0,
            _ if self.plan.training.optimizer == Optimizer::SgdMomentum => 0.0,
            OptimizerImpl::ForLoop => largest * FP32,
            _ if per_tensor => largest * FP32,
            OptimizerImpl::Foreach => n * self.state_bytes(),
        };
        // DeepSpeed's ZeRO optimizers step on an fp32 copy of the 16-bit
        // gradient partition (stage_1_and_2.py `single_partition_of_fp32_groups[i].grad`;
        // its estimator counts 2Ψ + 18Ψ/N for ZeRO-2, DESIGN.md §3), and
        // Megatron's fp16 optimizers on fp32 copies of their fp16 `main_grad`
        // ([`Self::grad_bytes`]).
        let fp32_grad_partition = if self.master_in_optimizer() && self.grad_bytes() < FP32 {
            n * FP32
        } else {
            0.0
        };
        kernel + fp32_grad_partition
    }

    /// Under autocast over fp32 weights, every matmul runs on a 16-bit cast of
    /// its weight, and autograd saves that cast for the input gradient: the
    /// casts of trainable weights sit in autocast's cache (`cache_enabled=True`)
    /// until the outermost autocast context exits, those of frozen fp32
    /// weights in the matmuls' saved tensors only (torch/csrc/autograd: `mm`
    /// saves `mat2`; autocast_mode.cpp `cached_cast` caches a cast only when
    /// `arg.requires_grad() && arg.is_leaf()`). Without checkpointing a 16-bit
    /// copy of every fp32 matrix lives from forward into backward. A block
    /// under full checkpointing saves nothing of its forward (reentrant:
    /// `no_grad`; non-reentrant: its saved tensors dropped), so its casts of
    /// frozen weights are freed matmul by matmul, and those of trainable
    /// weights when the cache is cleared as the forward's autocast exits;
    /// its recompute in backward casts its matrices again, saved until its
    /// backward is done (torch.utils.checkpoint re-enters autocast with the
    /// forward's state). Returns the casts alive at the end of forward, after
    /// it (the start of backward) and during a block's backward.
    fn autocast_copies(&self, s: u32) -> CastCopies {
        if !self.runs_autocast() || self.shards_params() {
            return CastCopies::default();
        }
        // The LM head's matmul casts its weight whether or not it is tied to
        // the embedding (measured: +501 MiB for Llama-3.2-1B's tied head, H200).
        let experts = if self.experts_in_fp32() {
            // Grouped experts use their fp32 weights as they are (in the
            // blocks that have experts).
            self.m.experts as f64 * self.m.one_mlp_params() as f64
                / self.plan.parallel.ep as f64
                / self.t
                * self.expert_block_share()
        } else {
            0.0
        };
        let block = (self.layer_matrix_params() - experts) * HALF;
        let layers = self.stage_layers(s);
        // TRL's fused LM head casts the head's rows tile by tile outside
        // autocast (`weight[start:end].to(compute_dtype)`, counted with its
        // tile: [`Self::tiled_logprob_moments`]): no whole cast of it. Its
        // chunked NLL casts the whole head for each checkpointed chunk, one
        // at a time (counted with the chunk: [`Self::chunked_nll_moments`]).
        let head_is_a_matmul = !matches!(
            self.plan.training.loss,
            Loss::TiledLogprob | Loss::ChunkedNll
        );
        let head = if head_is_a_matmul {
            self.lm_head_params(s) * HALF
        } else {
            0.0
        };
        // Blocks whose forward keeps nothing, one of them recomputed at a time.
        let checkpointed = if self.plan.training.checkpointing == Checkpointing::Full {
            (layers / self.plan.training.checkpoint_every.max(1) as f64).floor()
        } else {
            0.0
        };
        let saved_blocks = (layers - checkpointed) * block;
        let recomputed = checkpointed.min(1.0) * block;
        match self.base_bits() {
            // Frozen 16-bit (or quantised) base: only the fp32 adapters are cast,
            // and an LM head that `prepare_model_for_kbit_training` made fp32
            // (its 16-bit cast saved by the head's matmul for the input gradient).
            Some(bits) if bits < 32 => {
                let adapters = if self.trainable_weight_bytes() >= FP32 {
                    self.stage_trainable(s) * HALF
                } else {
                    0.0
                };
                let head = if head_is_a_matmul && self.kbit_fp32() && !self.kbit_embeddings_16bit()
                {
                    (self.lm_head_params(s) - self.quantized_head_params(s))
                        * HALF
                        * self.lm_head_calls()
                } else {
                    0.0
                };
                CastCopies::flat(adapters + head)
            }
            // A frozen fp32 base: each call of its head casts it anew (a
            // chunked head once per chunk, [`Self::lm_head_calls`]; LitGPT's
            // LoRA on StableLM-3B at 1034 tokens: 9 copies of its 0.39 GiB
            // head); the fp32 adapters' casts are cached.
            Some(_) => {
                let kept =
                    saved_blocks + head * self.lm_head_calls() + self.stage_trainable(s) * HALF;
                CastCopies {
                    forward: kept,
                    after_forward: kept,
                    block_backward: kept + recomputed,
                }
            }
            None if self.trainable_weight_bytes() >= FP32 => {
                let saved = saved_blocks + head;
                CastCopies {
                    forward: layers * block + head,
                    after_forward: saved,
                    block_backward: saved + recomputed,
                }
            }
            None => CastCopies::default(),
        }
    }

    /// Extra bytes while loading: frameworks that load the whole checkpoint on
    /// every rank before sharding hold it in full beside their shard.
    fn load_materialised(&self, s: u32) -> f64 {
        if !self.defaults().loads_full_checkpoint_per_rank || !self.shards_params() {
            return 0.0;
        }
        let bytes = match self.base_bits() {
            Some(bits) if bits < 16 => HALF, // 16-bit weights before quantising
            Some(32) => FP32,
            Some(_) => HALF,
            None => self.trainable_weight_bytes(),
        };
        self.stage_params(s) * bytes
    }

    /// The loaded full copy still held while training a frozen base
    /// ([`crate::framework::FrameworkDefaults::keeps_loaded_checkpoint`]).
    fn load_kept(&self, s: u32) -> f64 {
        if self.defaults().keeps_loaded_checkpoint && self.base_bits().is_some() {
            self.load_materialised(s)
        } else {
            0.0
        }
    }

    // ----- activations --------------------------------------------------------

    /// The attention kernel that actually runs. SDPA has no fused kernel for
    /// fp32 grouped-query attention — flash needs 16-bit inputs and the
    /// memory-efficient kernel takes no `enable_gqa` (PyTorch `sdp_utils.cpp`,
    /// `check_tensor_dtype`, `check_grouped_query_attention`) — and transformers
    /// passes `enable_gqa=True` when there is no padding mask
    /// (`integrations/sdpa_attention.py` `use_gqa_in_sdpa`), so PyTorch takes the
    /// math path, which materialises the scores and expands k/v. Measured on the
    /// H200 (calibration/h200-2026-11-30): Qwen2.5-0.5B in fp32 peaked at the
    /// same byte with SDPA as with eager attention.
    fn attention(&self) -> Attention {
        let t = &self.plan.training;
        if t.attention == Attention::Flash
            && t.fp32_upcasts
            && self.e >= FP32
            && self.m.kv_heads < self.m.heads
        {
            Attention::Eager
        } else {
            t.attention
        }
    }

    /// Under autocast over an fp32 residual stream every matmul casts its own
    /// input to 16 bits and saves the cast: autocast caches casts of leaf
    /// weights only (`autocast_mode.cpp` `cached_cast`, `arg.is_leaf()`), so q,
    /// k and v (gate and up) each keep a copy of the one norm output, which no
    /// one saves in fp32. Measured on the H200: Llama-3.2-1B amp-bf16 kept
    /// 6·hidden bytes per token per block more than pure bf16 for this
    /// (plus 4·hidden for the fp32 normalised tensors, [`Self::norm_affine_bytes`]).
    fn casts_inputs_per_matmul(&self) -> bool {
        self.runs_autocast() && self.residual_bytes() >= FP32
    }

    /// A Python RMSNorm whose weight trains also keeps its normalised input for
    /// the weight's gradient: transformers' `LlamaRMSNorm` ends with
    /// `self.weight * hidden_states.to(input_dtype)` (the residual stream's
    /// dtype). A frozen weight (LoRA) needs no such tensor; fused norms
    /// (Megatron, Apex) keep only their input and statistics. Measured on the
    /// H200: 4·hidden bytes per token per Llama block in pure bf16 beyond the
    /// norm inputs and outputs.
    fn norm_affine_bytes(&self) -> f64 {
        let fp32_affine = self.defaults().rmsnorm_affine_fp32 || self.m.norm_fp32_affine;
        if !self.rmsnorm_as_tensor_ops()
            || !(self.plan.training.fp32_upcasts || fp32_affine)
            || !self.norms_train()
        {
            return 0.0;
        }
        if fp32_affine {
            FP32
        } else {
            self.residual_bytes()
        }
    }

    /// An RMSNorm that runs as separate tensor ops (transformers', LitGPT's,
    /// torchtune's), not one kernel: no fused norm of Megatron's, Liger's or
    /// Inductor's.
    fn rmsnorm_as_tensor_ops(&self) -> bool {
        let t = &self.plan.training;
        self.m.norm == Norm::RmsNorm && !self.fused_norms() && !t.fused_kernels && !t.compile
    }

    /// What a norm written as tensor ops ([`ModelSpec::python_norm`]) keeps
    /// beyond a fused one, in the residual stream's dtype (the ops are on no
    /// autocast list): the centred input, kept by the division whenever
    /// gradients flow through the norm, and the normalised tensor, kept by the
    /// scale's multiply when the scale trains. Compiled, Inductor fuses the ops
    /// and recomputes them.
    fn python_norm_extra_bytes(&self) -> f64 {
        if !self.m.python_norm || self.plan.training.compile {
            return 0.0;
        }
        let kept = if self.norms_train() { 2.0 } else { 1.0 };
        kept * self.residual_bytes()
    }

    /// The share of the blocks that keep activations and hold a LLaMA-Adapter
    /// prefix attention: LLaMA-Adapter v1 blocks below the start layer keep
    /// nothing (counted out in [`Self::activations`]), so every block that keeps
    /// anything has one; under v2 every block trains.
    fn adapter_prefix_share(&self) -> f64 {
        let l = self.m.layers as f64;
        let below = (AdapterMethod::LLAMA_ADAPTER_START_LAYER as f64).min(l);
        match self.plan.training.finetune {
            Finetune::Adapter {
                method: AdapterMethod::LlamaAdapterV2,
                ..
            } if l > 0.0 => (l - below) / l,
            _ => 1.0,
        }
    }

    /// Blocks of stage `s` that keep nothing for backward because nothing
    /// beneath them trains: the LLaMA-Adapter blocks below the start layer,
    /// and a partly frozen fine-tune's frozen blocks over a frozen embedding.
    fn untrained_prefix_layers(&self, s: u32) -> f64 {
        if self.embedding_frozen() {
            // Frozen bottom blocks over a frozen embedding: no input of theirs
            // requires grad, so autograd records nothing there.
            return self.frozen_blocks(s);
        }
        match self.plan.training.finetune {
            Finetune::Adapter {
                method: AdapterMethod::LlamaAdapter,
                ..
            } if self.is_first(s) => {
                (AdapterMethod::LLAMA_ADAPTER_START_LAYER as f64).min(self.stage_layers(s))
            }
            _ => 0.0,
        }
    }

    /// Whether the norm weights train: full training, and LLaMA-Adapter v2.
    fn norms_train(&self) -> bool {
        matches!(
            self.plan.training.finetune,
            Finetune::Full
                | Finetune::Adapter {
                    method: AdapterMethod::LlamaAdapterV2 | AdapterMethod::LnTuning,
                    ..
                }
        )
    }

    /// Extra bytes per MLP-inner element that transformers' `NewGELUActivation`
    /// (`0.5 * x * (1 + tanh(√(2/π) · (x + 0.044715 · x³)))`) keeps beyond a
    /// fused GELU (which keeps its input): the tanh output, `0.5·x` and
    /// `1 + tanh`, and `pow`'s input in its own dtype. `pow` is on autocast's
    /// fp32 list, so under autocast (and in fp32) the tanh branch is fp32 and
    /// `0.5·x` stays 16-bit; and what `pow` saves is autocast's fp32 cast of
    /// `x`, the 16-bit `x` itself then saved by nothing (`0.5 * x` and the add
    /// keep no operand): `3 · up` bytes, where a 16-bit run keeps `x` once.
    /// Measured on the H200: HF GPT-2 in fp32 kept 115 bytes per token per
    /// hidden unit per block, 12 bytes per MLP-inner element more than a fused
    /// GELU would; under fp16 autocast the GPT-2 rows' peaks sat 1.1–1.2 GiB
    /// (2 bytes per MLP-inner element) above a count without the cast.
    fn gelu_new_extra_bytes(&self) -> f64 {
        debug_assert!(self.python_gelu());
        let prec = self.prec;
        let up = if self.runs_autocast() || prec == Precision::Fp32 {
            FP32
        } else {
            self.e
        };
        // tanh output, `1 + tanh` and pow's input at `up`, and `0.5·x` at
        // the activation dtype, less the `x` a fused GELU keeps at that dtype.
        3.0 * up
    }

    /// Whether the MLP runs the Python tanh GELU ([`ModelSpec::gelu_new`]):
    /// the model's own implementation runs (transformers' under the HF
    /// frameworks, DeepSpeed and plain loops; a from-scratch model's in a plain
    /// loop), not LitGPT's, Megatron's, torchtitan's or torchtune's, which call
    /// the fused `F.gelu`. Compiled, Inductor fuses it.
    fn python_gelu(&self) -> bool {
        self.m.gelu_new
            && !self.plan.training.compile
            && self.plan.framework.runs_the_models_own_code()
    }

    /// Whether the routed experts compute in fp32 under autocast: transformers
    /// 5 runs them through `torch.nn.functional.grouped_mm`, which is on no
    /// autocast list, after casting the input to the weights' dtype
    /// (`integrations/moe.py` `_grouped_mm`, pytorch#174763). With fp32
    /// weights (AMP over trained fp32 experts) the experts' intermediates are
    /// fp32 and their weights are never cast (16-bit weights under ZeRO or
    /// FSDP mixed precision keep them 16-bit). Measured on the H200 (Mixtral-
    /// shaped, amp-bf16): allocated −11.3 % without this, +0.1 % with it.
    fn experts_in_fp32(&self) -> bool {
        self.m.is_moe()
            && self.runs_autocast()
            && self.residual_bytes() >= FP32
            && self.base_bits().is_none()
            && self.plan.framework.runs_the_models_own_code()
    }

    /// Bytes per element of the MLP's intermediates (its projections'
    /// outputs, the activation, their gradients): fp32 where the experts
    /// compute in fp32 ([`Self::experts_in_fp32`]) or bitsandbytes' 4-bit
    /// linears hand fp32 back ([`Self::quantized_outputs_in_fp32`]), else the
    /// activations' dtype.
    fn mlp_bytes(&self) -> f64 {
        if self.experts_in_fp32() || self.quantized_outputs_in_fp32() {
            FP32
        } else {
            self.e
        }
    }

    /// Whether bitsandbytes' 4-bit linears return fp32 under autocast:
    /// `Linear4bit.forward` casts its input to the 16-bit `compute_dtype`
    /// and its output back to the input's dtype (`.to(inp_dtype)`,
    /// bitsandbytes 0.50.2 `nn/modules.py`; custom ops, on no autocast list),
    /// and after PEFT's `prepare_model_for_kbit_training` ([`Self::kbit_fp32`])
    /// the fp32 embedding and norms hand them fp32 — so the MLP's gate and up
    /// outputs (with PEFT's `result + lora` sums) and its activation are
    /// fp32. Replayed with bitsandbytes on the meta device
    /// (`calibration/allocator_replay.py --qlora`, which reproduces the H200's
    /// bf16-autocast QLoRA runs to the MiB: Llama-3.1-8B 26.605 GiB,
    /// Mistral-7B 36.931): Llama-3.2-1B's blocks kept 3 × 4 bytes per MLP
    /// element and no input of a frozen 4-bit matrix
    /// ([`crate::Plan::four_bit_matmul_keeps_input`]). Without that
    /// preparation a LayerNorm hands them fp32 all the same: `layer_norm` is
    /// on autocast's fp32 list (`autocast_mode.cpp`), so its output is fp32
    /// whatever its weights — and from the first block's MLP on the residual
    /// stream is fp32 too (replayed without the preparation: Pythia-1.4B,
    /// OPT-1.3B, Falcon-7B and StableLM-2-1.6B −4.8 … −15.3 % allocated
    /// counting them 16-bit, where the RMSNorm families, whose Python norms
    /// return the input's dtype, were within ±0.5 %). Not torchao's NF4
    /// (torchtune), whose linear returns the compute dtype.
    fn quantized_outputs_in_fp32(&self) -> bool {
        self.runs_autocast()
            && (self.kbit_fp32_norm_outputs() || self.m.norm == Norm::LayerNorm)
            && self.base_bits().is_some_and(|b| b <= 4)
            && !self.plan.framework.quantizes_with_torchao()
    }

    /// Whether transformers hands SDPA an explicit mask, so that it expands
    /// grouped k/v to every head (`repeat_kv`): `use_gqa_in_sdpa` lets SDPA
    /// group k/v itself only without a mask (transformers 5
    /// `integrations/sdpa_attention.py`), and `_ignore_causal_mask_sdpa`
    /// keeps the mask whenever a sliding window is no longer than the
    /// sequence (`masking_utils.py`), or a prefix-tuning cache adds positions
    /// before the sequence, or the model runs under torch.compile (the mask is
    /// built while tracing: transformers 5.24 under torch 2.15 handed SDPA a
    /// mask and repeated k/v when compiled, none when eager —
    /// calibration/saved_tensors.py --compile). Measured on the H200: Mistral-7B v0.1 LoRA at 4096
    /// tokens, allocated −7.3 % without this term; counted for prefix tuning
    /// (calibration/saved_tensors.py --methods).
    ///
    /// Padded rows ([`crate::plan::TrainingSpec::padded`]: the
    /// `attention_mask` has zeros, so `_ignore_causal_mask_sdpa` keeps the
    /// mask) do the same. Measured on the H200: Qwen2.5-0.5B under the
    /// Trainer, 8 × 1024 tokens with the last quarter of every row padding,
    /// allocated −2.95 % without the expanded k/v and the mask
    /// ([`Self::sdpa_mask_bytes`]), −0.16 % with them.
    ///
    /// A model whose code always builds the mask ([`ModelSpec::sdpa_mask`]:
    /// Falcon's `create_causal_mask(..., allow_is_causal_skip=False)`) hands
    /// it to SDPA on every call, so its grouped k/v are repeated too.
    /// Replayed (`calibration/allocator_replay.py`, transformers 5.24 and
    /// 5.25): Falcon-40B (128 heads over 8 k/v groups), LoRA on every linear,
    /// 4 × 2048 tokens, kept 3.75 bytes per token per hidden unit a block
    /// more than grouped k/v — allocated −4.79 % without this.
    ///
    /// One k/v head (multi-query) is not copied: `repeat_kv`'s `expand` then
    /// `reshape` of a single head is a view (stride 0 over the heads), so
    /// SDPA keeps the one head it was given (checked on the CPU: the
    /// repeated tensor shares the head's storage) — unless autocast casts it
    /// there, as it casts the fp32 k and v bitsandbytes' 4-bit linears hand
    /// back ([`Self::quantized_outputs_in_fp32`]): the cast of an expanded
    /// view is a dense copy, every head's. Replayed (`allocator_replay.py
    /// --qlora-families`): Falcon-7B's blocks kept 16-bit q, k and v 4,544
    /// wide each, −5.8 % allocated without them.
    fn sdpa_gets_a_mask(&self) -> bool {
        self.attention() == Attention::Flash
            && self.plan.training.fp32_upcasts
            && self.m.kv_heads < self.m.heads
            && (self.m.kv_heads > 1 || self.quantized_outputs_in_fp32())
            && (self.sdpa_mask_stated() || self.plan.training.compile || self.model_always_masks())
    }

    /// A model whose own code always hands SDPA a mask
    /// ([`ModelSpec::sdpa_mask`]: Falcon), run by a framework that runs it.
    fn model_always_masks(&self) -> bool {
        self.m.sdpa_mask && self.plan.framework.runs_the_models_own_code()
    }

    /// What makes transformers keep the attention mask it hands SDPA, compiling
    /// apart ([`Self::sdpa_gets_a_mask`]): a sliding window no longer than the
    /// sequence, a prefix-tuning cache, or padded rows — under a framework
    /// that runs transformers' model (torchtune's and torchtitan's own
    /// attention take no padding mask: torchtune pads and masks the labels
    /// only, `padded_collate_sft`; LitGPT and Megatron likewise).
    fn sdpa_mask_stated(&self) -> bool {
        let t = &self.plan.training;
        let w = self.m.sliding_window;
        let prefix = matches!(
            t.finetune,
            Finetune::Adapter {
                method: AdapterMethod::PrefixTuning,
                virtual_tokens: 1..,
                ..
            }
        );
        (w > 0 && t.seq_len >= w) || prefix || self.padding_rows() > 0.0
    }

    /// Batch rows of an attention mask that carries padding: every row when
    /// the batches are padded ([`crate::plan::TrainingSpec::padded`]) and the
    /// framework hands transformers' model its `attention_mask`, else none.
    fn padding_rows(&self) -> f64 {
        if self.plan.training.padded && self.plan.framework.runs_the_models_own_code() {
            self.b
        } else {
            0.0
        }
    }

    /// Bytes per element of the attention mask each block keeps when
    /// transformers hands SDPA a boolean one ([`Self::sdpa_mask_stated`], or
    /// a model whose code always does, [`ModelSpec::sdpa_mask`]):
    /// SDPA converts it to a float mask in the query's dtype on every call
    /// (`convert_boolean_attn_mask` in `aten/src/ATen/native/transformers/
    /// attention.cpp`, an `at::where` that materialises the batch rows the
    /// mask is broadcast over), and the memory-efficient kernel — flash takes
    /// no mask — saves that mask for its backward (`attn_bias` of
    /// `_scaled_dot_product_efficient_attention` in
    /// `tools/autograd/derivatives.yaml`): `B × S × S` per block, shared by
    /// the heads. Compiled, the conversion is an element-wise op Inductor's
    /// partitioner recomputes (the H200's compiled runs fit without it); T5
    /// builds a float mask of its own ([`Self::relative_bias_bytes`]).
    /// Measured on the H200: Mistral-7B v0.1 LoRA at its 4096-token window,
    /// 2 × 4096, allocated −2.66 % without it, +0.37 % with it; the padded
    /// Qwen2.5-0.5B run above.
    fn sdpa_mask_bytes(&self) -> f64 {
        if self.attention() == Attention::Flash
            && self.plan.training.fp32_upcasts
            && self.m.positions != Positions::Relative
            && !self.plan.training.compile
            && (self.sdpa_mask_stated() || self.model_always_masks())
        {
            self.e
        } else {
            0.0
        }
    }

    /// Megatron/TransformerEngine (and DeepSpeed's) fused norm kernels keep only
    /// their input and statistics, in the activation dtype.
    fn fused_norms(&self) -> bool {
        matches!(
            self.plan.framework,
            Framework::Megatron | Framework::Deepspeed
        )
    }

    /// Bytes a norm layer keeps for backward: its input upcast to fp32 (HF/LitGPT
    /// RMSNorm call `.float()`; autocast runs layer_norm in fp32), 16-bit in
    /// Megatron/TransformerEngine fused norms.
    fn norm_saved_bytes(&self) -> f64 {
        let prec = self.prec;
        if self.plan.training.compile {
            // Inductor fuses the norm: its input is saved in the residual
            // stream's dtype and the fp32 copies are recomputed in backward
            // (torch/_functorch/partitioners.py `min_cut_rematerialization_partition`
            // recomputes cheap element-wise ops). Measured on the H200: GPT-2
            // fp32 compiled kept the eager count without gelu_new's
            // intermediates (LayerNorm input and output both kept); Llama-3.2-1B
            // kept 9 % less than this count, as if the norm outputs were
            // recomputed too — the larger reading is used.
            return self.residual_bytes();
        }
        if self.plan.training.fused_kernels {
            // Liger's / Unsloth's norm kernels keep the input as it comes and
            // a per-row fp32 rstd ([`crate::plan::TrainingSpec::fused_kernels`]).
            return self.residual_bytes();
        }
        if prec.fp32_weights() || (self.m.norm == Norm::RmsNorm && !self.fused_norms()) {
            FP32
        } else {
            self.e
        }
    }

    /// Bytes per q and k element their own norms keep ([`ModelSpec::qk_norm`]):
    /// what a block norm keeps of its input ([`Self::norm_saved_bytes`]) and,
    /// when the scale trains, the normalised tensor it multiplies — in fp32
    /// for an fp32 scale ([`ModelSpec::norm_fp32_affine`]), else cast back to
    /// q's dtype (`self.weight * hidden_states.to(input_dtype)`, transformers
    /// `Qwen3RMSNorm`), which under autocast is the 16-bit matmul output's,
    /// not the fp32 residual stream's.
    fn qk_norm_bytes(&self) -> f64 {
        let affine = if self.norm_affine_bytes() == 0.0 {
            0.0
        } else if self.m.norm_fp32_affine {
            FP32
        } else {
            self.e
        };
        self.norm_saved_bytes() + affine
    }

    /// What transformers' `T5LayerNorm` keeps beyond another RMSNorm over
    /// 16-bit activations: it squares an fp32 copy of its input for the
    /// variance but scales the input itself (`hidden_states *
    /// torch.rsqrt(variance + eps)`, transformers 5.24 `modeling_t5.py`), so
    /// the multiply keeps the 16-bit input beside the fp32 copy. In fp32 (or
    /// under autocast, whose residual stream is fp32) the copy is the input.
    /// Counted on the CPU (`calibration/saved_tensors.py --t5`: pure bf16,
    /// 2 · hidden bytes per token per norm, two norms in an encoder block and
    /// three in a decoder block). An encoder–decoder RMSNorm is T5's (BART's
    /// norm is a LayerNorm).
    fn t5_norm_input_bytes(&self) -> f64 {
        let m = self.m;
        if m.arch == Arch::EncoderDecoder
            && self.rmsnorm_as_tensor_ops()
            && self.plan.framework.runs_the_models_own_code()
            && self.residual_bytes() < FP32
        {
            self.residual_bytes()
        } else {
            0.0
        }
    }

    /// Bytes per element a norm keeps for backward, whichever norm it is —
    /// a block's or a stack's final one: its saved input
    /// ([`Self::norm_saved_bytes`]), the normalised tensor its trained scale
    /// multiplies ([`Self::norm_affine_bytes`]), what Python-written norms
    /// keep beyond ([`Self::python_norm_extra_bytes`]) and T5's 16-bit input
    /// beside its fp32 copy ([`Self::t5_norm_input_bytes`]).
    fn norm_kept_bytes(&self) -> f64 {
        self.norm_saved_bytes()
            + self.norm_affine_bytes()
            + self.python_norm_extra_bytes()
            + self.t5_norm_input_bytes()
            + self.rmsnorm_square_bytes()
    }

    /// The fp32 square of its input an RMSNorm written as tensor ops keeps
    /// under PyTorch 1.13 to 2.1, whose `mean` over a dimension saves its
    /// input (`x.pow(2).mean(-1, keepdim=True)` after the norms' upcast:
    /// transformers, LitGPT, torchtune; [`crate::plan::PytorchRelease`]).
    /// Counted with saved-tensor hooks on torch 2.1.2 (CPU): transformers'
    /// `LlamaRMSNorm` over a bf16 1024 × 4096 input keeps 8 bytes an
    /// element, on torch 2.15 4 (the fp32 copy alone). A q/k norm
    /// ([`Self::qk_norm_bytes`]) is left as it is: the models that have one
    /// came after 2.2.
    fn rmsnorm_square_bytes(&self) -> f64 {
        if self.plan.training.pytorch.mean_saves_input() && self.rmsnorm_as_tensor_ops() {
            FP32
        } else {
            0.0
        }
    }

    /// T5's stacks as transformers writes them (`T5Stack`: dropout on the
    /// embeddings, the blocks, `final_layer_norm`, dropout again): an
    /// encoder–decoder with an RMSNorm ([`Self::t5_norm_input_bytes`]) run by
    /// its own model code.
    fn t5_stacks(&self) -> bool {
        self.m.arch == Arch::EncoderDecoder
            && self.m.norm == Norm::RmsNorm
            && self.plan.framework.runs_the_models_own_code()
    }

    /// Bytes per element a stack's final norm keeps on the head's side beside
    /// the head's input ([`Ctx::logits`]): the norm's own
    /// ([`Self::norm_kept_bytes`]); T5's final dropout mask (its output, or
    /// tied T5's `sequence_output * model_dim**-0.5`, is the head's input);
    /// and an encoder's masked-LM head transform before its LayerNorm
    /// (transformers `BertPredictionHeadTransform`, RoBERTa's `lm_head`:
    /// `dense` keeps the last block's output, or its 16-bit cast, and GELU
    /// its input, the dense output; the final "norm" of a post-LN encoder is
    /// that transform's LayerNorm). Replayed (`calibration/allocator_replay.py`):
    /// SmolLM2-360M keeps the final norm's 16-bit normalised tensor for its
    /// scale (2 bytes a hidden element, as a block norm does); T5-base keeps
    /// 4 + 2 + 2 + 1 bytes at its decoder's end (fp32 copy, input, normalised
    /// tensor, mask); RoBERTa-large the transform's two 16-bit tensors.
    fn final_norm_kept_bytes(&self) -> f64 {
        let mut bytes = self.norm_kept_bytes();
        if self.t5_stacks() && self.plan.training.dropout {
            bytes += MASK;
        }
        if self.m.arch == Arch::Encoder
            && self.m.head != ModelHead::Classifier
            && self.plan.framework.runs_the_models_own_code()
        {
            bytes += self.linear_input_bytes() + self.e;
        }
        bytes
    }

    /// Whether the input embedding's output requires a gradient though the
    /// embedding is frozen: PEFT under checkpointing, where the model's
    /// `enable_input_require_grads` hook (`output.requires_grad_(True)`) is
    /// set by PEFT when it wraps a model with checkpointing on
    /// (`PeftModel._prepare_model_for_gradient_checkpointing`, peft 0.21.2),
    /// by transformers' `gradient_checkpointing_enable` for adapters it
    /// loaded, by TRL, and by `prepare_model_for_kbit_training`. The output
    /// becomes a leaf its `AccumulateGrad` node holds through the backward, and
    /// what runs on it before the first block records its backward as in a
    /// full fine-tune: a LayerNorm keeps its input (the leaf), dropout its
    /// mask. Replayed (`calibration/allocator_replay.py`, checkpointed LoRA):
    /// ByT5-base kept both stacks' embedding outputs and their dropout masks,
    /// ModernBERT its embedding norm's input. A decoder whose first block
    /// reads the embedding's output keeps it as that block's checkpoint
    /// anyway.
    fn embedding_output_leaf(&self) -> bool {
        matches!(
            self.plan.training.finetune,
            Finetune::Lora { .. } | Finetune::Adapter { .. }
        ) && self.plan.training.checkpointing != Checkpointing::None
            && self.peft_adapters_fp32()
            && self.plan.framework.runs_the_models_own_code()
    }

    /// What one micro-batch keeps outside the blocks at the bottom of the
    /// model, on the first stage, until backward ends (the stack's top, the
    /// final norm and the head's input, is [`Ctx::logits`]'s): for each stack
    /// whose embedding trains or whose output is a leaf
    /// ([`Self::embedding_output_leaf`]), the embedding dropout's boolean mask (GPT-2's
    /// `drop`, BERT's and BART's embedding dropout, OPT's, T5's
    /// `T5Stack.dropout`, Megatron's `embedding_dropout`: `sbh/t` bytes with
    /// sequence parallelism, Korthikanti et al. 2022 §4.3; CUDA's
    /// `native_dropout` saves its mask only when its input needs a gradient)
    /// and the embedding LayerNorm's input
    /// (BERT's `embeddings.LayerNorm`, BART's `layernorm_embedding`); for an
    /// encoder–decoder, the encoder's output, which every decoder block's
    /// cross-attention projects (one tensor, saved once; checkpointed
    /// decoder blocks take it as an input beside their own), and T5's
    /// encoder end, its final norm and its dropout's mask. Replayed
    /// (`calibration/allocator_replay.py`): T5-base bf16 checkpointed at
    /// 32 × 512 kept 0.229 GiB outside its blocks that the previous count
    /// missed — both embedding masks, the encoder's final norm (fp32 copy,
    /// input, normalised tensor), mask and output, the decoder's end.
    fn stack_ends(&self, s: u32) -> f64 {
        if !self.is_first(s) {
            return 0.0;
        }
        let m = self.m;
        let h = m.hidden as f64;
        let enc_dec = m.arch == Arch::EncoderDecoder;
        // Positions each stack's embedding produces.
        let tokens = self.b * (self.s + if enc_dec { self.decoder_s() } else { 0.0 });
        let mut per_token = 0.0;
        let leaf = self.embedding_output_leaf();
        if (self.full_finetune() && !self.embedding_frozen()) || leaf {
            if self.plan.training.dropout {
                per_token += MASK;
            }
            let embedding_norm = m.norm == Norm::LayerNorm
                && matches!(m.arch, Arch::Encoder | Arch::EncoderDecoder)
                && self.plan.framework.runs_the_models_own_code();
            if embedding_norm {
                per_token += self.norm_saved_bytes();
            } else if leaf && self.plan.training.dropout {
                // The leaf itself, which only its `AccumulateGrad` holds:
                // the dropout after it keeps its mask alone.
                per_token += self.e;
            }
        }
        let mut bytes = per_token * tokens * h;
        if enc_dec {
            // T5's encoder ends as its decoder does: a final norm and dropout.
            let mut end = self.residual_bytes();
            if self.t5_stacks() {
                end += self.final_norm_kept_bytes();
            }
            bytes += end * self.b * self.s * h;
        }
        bytes / self.rep
    }

    /// Bytes per element of the float mask that carries T5's relative
    /// position bias into SDPA: transformers 5 runs T5 through SDPA
    /// (`_supports_sdpa`; no flash-attn), adding the bias to the scores as
    /// `attn_mask` built per attention call (`create_position_bias_mask` in
    /// `integrations/sdpa_attention.py`: `torch.where(mask, position_bias,
    /// min)`, or the bias itself without a mask). A float mask keeps SDPA off
    /// its flash kernel; the memory-efficient one saves the mask for its
    /// backward (`_scaled_dot_product_efficient_attention`'s `attn_bias` in
    /// `tools/autograd/derivatives.yaml`), in the compute dtype (autocast
    /// casts every floating argument of SDPA, a new 16-bit copy per call; a
    /// 16-bit or fp32 run keeps the parameters' dtype). Eager attention adds
    /// the bias to scores it counts anyway; LitGPT, Megatron, torchtitan and
    /// torchtune bring no T5.
    fn relative_bias_bytes(&self) -> f64 {
        if self.m.positions == Positions::Relative
            && self.attention() == Attention::Flash
            && self.plan.framework.runs_the_models_own_code()
        {
            self.e
        } else {
            0.0
        }
    }

    /// The position-bias mask one attention call keeps
    /// ([`Self::relative_bias_bytes`]) for `batch` rows of this rank's heads,
    /// its local queries against `keys` positions. Counted on the CPU
    /// (`calibration/saved_tensors.py --t5`, with an SDPA that saves what
    /// CUDA's memory-efficient kernel saves): with a padding mask the
    /// encoder's self-attention and the cross-attention keep one per batch
    /// row, `(B, heads, queries, keys)`; a causal decoder self-attention,
    /// whose mask is the causal pattern alone, `(1, heads, queries, keys)`.
    /// Without padding ([`crate::plan::TrainingSpec::padded`]) the encoder's
    /// mask is one row (the bias made contiguous per call) and the
    /// cross-attention's the shared zero bias, kept once.
    fn relative_bias(&self, batch: f64, keys: f64) -> f64 {
        self.relative_bias_bytes() * batch * self.m.heads as f64 * self.s * keys / self.t
    }

    /// A float8 run through Transformer Engine's linears
    /// ([`Framework::fp8_saves_fp8_inputs`]).
    fn te_float8(&self) -> bool {
        self.plan.training.precision == Precision::Fp8 && self.plan.framework.fp8_saves_fp8_inputs()
    }

    /// Bytes per element of a block linear's saved input: one under
    /// Transformer Engine float8, which saves the quantized input, else the
    /// activation dtype.
    fn linear_input_bytes(&self) -> f64 {
        if self.te_float8() {
            FP8
        } else {
            self.e
        }
    }

    /// Whether a block matrix keeps its input for backward: it does when its
    /// weight trains, when a LoRA adapter reads it (without dropout), or when
    /// it is a bitsandbytes 4/8-bit matmul, which saves its input regardless
    /// — DESIGN.md §3b. `MatMul8bitLt` still does (`ctx.tensors = (CAt, subA,
    /// A)`, bitsandbytes 0.50.2); `MatMul4Bit` did until 0.43.1 (`ctx.tensors =
    /// (A, B)` in 0.41.3 to 0.43.1, `(None, B)` from 0.43.2 on). The 2023
    /// LitGPT QLoRA tables need the input (without it they fall 10.8–13.8 points);
    /// our H200 runs with 0.50.2 under autocast keep as much as this count,
    /// while without autocast they keep no input (calibration/h200-2026-11-30,
    /// set 5: QLoRA Mistral-7B, pure bf16, 18 % over when counted).
    /// [`crate::plan::TrainingSpec::bnb_0_43_2`] says which release runs; unstated, the
    /// count follows the older one, the safe side.
    fn keeps_input(&self, targeted: bool) -> bool {
        match self.plan.training.finetune {
            Finetune::Full => true,
            Finetune::Lora {
                base_bits,
                dropout,
                variant,
                ..
            } => {
                (targeted
                    && !dropout
                    && !self.lora_copies_input()
                    && variant != LoraVariant::LoraFa)
                    || self.quantized_matmul_keeps_input(base_bits)
                    || self.zero3_linear_keeps_input(base_bits)
            }
            Finetune::Adapter { base_bits, .. } => {
                self.quantized_matmul_keeps_input(base_bits)
                    || self.zero3_linear_keeps_input(base_bits)
            }
        }
    }

    /// Whether a frozen base linear of `base_bits` keeps its input because
    /// DeepSpeed ZeRO-3 runs it: partitioning the model (`zero.Init`, which
    /// the Trainer's and Accelerate's `zero3_init` use, or the engine's own
    /// conversion of a model built without it) replaces
    /// `torch.nn.functional.linear` with `zero3_linear_wrap` for the rest of the
    /// process (`memory_efficient_linear`, on by default: "This will persist
    /// unless manually reset"), and its `LinearFunctionForZeroStage3` saves its
    /// input whatever trains (`ctx.save_for_backward(input, weight, bias)`;
    /// deepspeed 0.19.8 `runtime/zero/partition_parameters.py`,
    /// `runtime/zero/linear.py`). A quantized base multiplies in bitsandbytes,
    /// not through `F.linear`. Measured on the H200
    /// (calibration/h200-2026-12-04-deepspeed): the LoRA'd Llama-2-70B blocks
    /// under ZeRO-3 kept both norms' 16-bit outputs and the MLP's product
    /// (2 × 256 + 896 MiB a block at 8 × 2048 tokens), which PyTorch's own
    /// linear does not save for a frozen weight.
    fn zero3_linear_keeps_input(&self, base_bits: u32) -> bool {
        self.plan.parallel.sharding == Sharding::Zero3 && base_bits >= 16
    }

    /// Whether a frozen base matrix of `base_bits` saves its input however
    /// it is used: bitsandbytes' 8-bit matmul always does, a 4-bit one as
    /// [`crate::Plan::four_bit_matmul_keeps_input`] says.
    fn quantized_matmul_keeps_input(&self, base_bits: u32) -> bool {
        match base_bits {
            8 => true,
            b if b <= 4 => self.plan.four_bit_matmul_keeps_input(),
            _ => false,
        }
    }

    /// Bytes per element of what a LoRA adapter reads: PEFT casts its input to
    /// the adapter weights' dtype (`_cast_input_dtype`: fp32 adapters over a
    /// 16-bit base, `autocast_adapter_dtype`), unless autocast runs, whose
    /// `lora_A` matmul saves a 16-bit cast instead (measured on the H200:
    /// Llama-3.2-3B amp-bf16 LoRA kept 2 bytes per adapter input element).
    fn lora_input_bytes(&self) -> f64 {
        if self.trainable_weight_bytes() >= FP32 && !self.runs_autocast() {
            FP32
        } else {
            self.e
        }
    }

    /// Each adapter keeps its own wider cast of the block input, so the input
    /// itself is not what it saves (counted with calibration/saved_tensors.py:
    /// PEFT LoRA without dropout on every linear of a bf16 Llama kept
    /// 4 bytes per adapter input element).
    fn lora_casts_input(&self) -> bool {
        self.lora_input_bytes() > self.e
    }

    /// Whether each adapter keeps a copy of its input of its own rather than
    /// the input itself: PEFT's wider cast ([`Self::lora_casts_input`]), or,
    /// under autocast, the 16-bit cast `lora_A`'s matmul makes of what it
    /// reads (PEFT's fp32 cast of a 16-bit input, or an fp32 norm output) —
    /// autocast caches casts of weights, not of activations, so every adapter
    /// makes its own. Replayed (`calibration/allocator_replay.py
    /// --no-lora-dropout`, Llama-3.2-1B as a classifier, bf16 autocast over
    /// fp32 weights, LoRA without dropout, checkpointed): the recomputed block
    /// kept one 16-bit copy per adapter of q, k, v, o, gate, up and down.
    fn lora_copies_input(&self) -> bool {
        self.lora_casts_input() || (self.runs_autocast() && self.adapters_computed_wider())
    }

    /// Whether the adapters compute in a dtype wider than the activations:
    /// they are stored wider ([`Self::trainable_weight_bytes`]) and not
    /// gathered in the compute dtype by FSDP's mixed precision (their flat
    /// parameters cast with the rest).
    fn adapters_computed_wider(&self) -> bool {
        let fsdp_mixed = self.plan.parallel.sharding.is_fsdp() && self.prec.is_autocast();
        self.trainable_weight_bytes() > self.e && !fsdp_mixed
    }

    /// Saved bytes of one block for one micro-batch on one rank, counted tensor
    /// by tensor (Korthikanti et al. 2022 §4.1, re-derived for GQA, gated MLPs,
    /// RMSNorm, flash attention and frozen layers; DESIGN.md §3). An
    /// encoder–decoder's blocks are averaged over its two stacks, the decoder's
    /// with its cross-attention ([`Self::decoder_s`]).
    ///
    /// Returns that average block and the largest one (an encoder–decoder's
    /// decoder blocks, with their cross-attention, outgrow the average, or its
    /// encoder blocks do on a longer source) — with `recomputed`, the largest
    /// a recomputed block makes again: less the kept input it reuses
    /// ([`Self::recompute_reuses_input`]), taken per stack.
    fn layer_activations(&self, recomputed: bool) -> (f64, f64) {
        let m = self.m;
        let fp8 = self.fp8_weight_copies_saved();
        // Asked only of a recomputed block: the question is not free, and
        // every estimate would pay for it.
        let reuses = recomputed && self.recompute_reuses_input();
        let reused = |c: &Ctx<'_>| if reuses { c.layer_input_bytes() } else { 0.0 };
        if let Some(dense) = self.dense {
            // An MoE model's expert and dense blocks: their average, and the larger.
            let moe = self.block_ctx(m).block_activations().1;
            let d = self.block_ctx(dense).block_activations().1;
            let share = self.expert_block_share();
            return (
                share * moe + (1.0 - share) * d + fp8,
                moe.max(d) + fp8 - reused(self),
            );
        }
        let (_, block) = self.block_activations();
        let keys = self.s * self.plan.parallel.cp as f64;
        // The position-bias mask carries the padding in every row, else one.
        let block = block + self.relative_bias(self.padding_rows().max(1.0), keys);
        if m.arch != Arch::EncoderDecoder {
            return (block + fp8, block + fp8 - reused(self));
        }
        let (enc, dec) = (m.encoder_layers as f64, m.layers as f64);
        let sd = self.decoder_s();
        let decoder = self.decoder_block(sd);
        let average = (enc * block + dec * decoder) / (enc + dec).max(1.0);
        // Each stack's block less its own input: the larger of two quantities
        // that never fall as either length grows.
        let largest = (block - reused(self)).max(decoder - reused(&self.at_length(sd)));
        (average + fp8, largest + fp8)
    }

    /// [`Self::layer_activations`], worked out on the first stage that asks
    /// ([`Ctx::layer_acts`]).
    fn layer_activations_once(&self, recomputed: bool) -> (f64, f64) {
        let cell = &self.layer_acts[usize::from(recomputed)];
        if let Some(v) = cell.get() {
            return v;
        }
        let v = self.layer_activations(recomputed);
        cell.set(Some(v));
        v
    }

    /// Uncached Transformer Engine weight copies, saved per layer.
    fn fp8_weight_copies_saved(&self) -> f64 {
        if self.fp8_weight_copies_cached() {
            0.0
        } else {
            self.fp8_weight_copies_per_layer()
        }
    }

    /// Calls of the LM head in one forward: one per chunk of positions when
    /// the loss chunks the head (LitGPT's 128-position chunks,
    /// [`LITGPT_LM_HEAD_CHUNK`]; torchtune's `num_output_chunks`,
    /// [`LOSS_CHUNKED_FREE_CHUNKS`], `h.chunk(8, dim=1)`), else one.
    fn lm_head_calls(&self) -> f64 {
        let positions = self.decoder_s().ceil().max(1.0);
        match self.plan.training.loss {
            Loss::ChunkedKeep => (positions / LITGPT_LM_HEAD_CHUNK).ceil(),
            Loss::ChunkedFree => LOSS_CHUNKED_FREE_CHUNKS.min(positions),
            _ => 1.0,
        }
    }

    /// The decoder's local length: the plan's target length when an
    /// encoder–decoder model states one (`TrainingSpec::target_len`), else
    /// the sequence.
    fn decoder_s(&self) -> f64 {
        match self.plan.training.target_len {
            Some(t) if self.m.arch == Arch::EncoderDecoder => {
                t as f64 / self.plan.parallel.cp as f64
            }
            _ => self.s,
        }
    }

    /// These quantities at another local sequence length (a decoder's).
    fn at_length(&self, s: f64) -> Ctx<'a> {
        Ctx {
            s,
            layer_acts: Default::default(),
            ..self.clone()
        }
    }

    /// One decoder block at its own length `sd` with its cross-attention,
    /// whose queries run at `sd` while its keys and values, projected from the
    /// encoder's output, run at the encoder's length (T5 `T5LayerCrossAttention`,
    /// BART `encoder_attn`): the cross-attention keeps what a self-attention
    /// at `sd` keeps, plus k and v for the longer (or shorter) source and,
    /// eager, `sd × source` scores.
    fn decoder_block(&self, sd: f64) -> f64 {
        let dec = self.at_length(sd);
        let (attn, total) = dec.block_activations();
        let m = self.m;
        let hkv = m.kv_width() as f64;
        let longer = self.s - sd; // source minus target tokens (either sign)
        let mut cross = attn + self.e * self.b * longer * 2.0 * hkv / self.t;
        // The position-bias masks: the causal self-attention's (one row),
        // and with padding the cross-attention's over the source
        // ([`Self::relative_bias`]).
        let cp = self.plan.parallel.cp as f64;
        cross +=
            dec.relative_bias(1.0, sd * cp) + dec.relative_bias(self.padding_rows(), self.s * cp);
        // Other models' masks ([`Self::sdpa_mask_bytes`]): the decoder's self-
        // attention is causal with no mask of its own (no decoder padding
        // reaches it), while the cross-attention gets the source's padding
        // mask over the source keys; `attn` counted one over the decoder's.
        cross += dec.sdpa_mask_bytes() * self.b * sd * longer * cp;
        if self.attention() == Attention::Eager {
            cross += dec.eager_score_bytes()
                * self.b
                * m.heads as f64
                * sd
                * longer
                * self.plan.parallel.cp as f64
                / self.t;
        }
        total + cross.max(0.0)
    }

    /// Bytes per attention score an eager block keeps: the softmax output
    /// ([`Self::score_bytes`]) and with dropout its mask and output
    /// ([`Self::attention_dropout_bytes`]).
    fn eager_score_bytes(&self) -> f64 {
        self.score_bytes() + self.attention_dropout_bytes() + self.softmax_input_bytes()
    }

    /// Bytes per attention score PyTorch 1.10 and earlier keep beside the
    /// softmax's output: its input, in the dtype the softmax computes in
    /// ([`Self::upcast_bytes`]: the scores of that era's eager attention
    /// reached the softmax in fp32 under autocast, promoted by the fp32
    /// attention mask added to them, or upcast by the model's own `.float()`)
    /// ([`crate::plan::PytorchRelease::V1_10OrOlder`]). Replayed through
    /// the caching allocator's rules (`calibration/allocator_replay.py
    /// --bert-guide`: torch 2.15, whose softmax keeps no input, and
    /// transformers 4.57's eager BERT): the Trainer guide's BERT-large runs
    /// on a V100 without checkpointing held 0.371 GiB per sample more than
    /// the replay reserved (batch 1 and 4, fp32) — one fp32 tensor of
    /// 16 · 512² scores in each of the 24 blocks is 0.375 GiB — and with
    /// checkpointing none more.
    fn softmax_input_bytes(&self) -> f64 {
        if self.plan.training.pytorch.softmax_saves_input() {
            self.softmax_bytes()
        } else {
            0.0
        }
    }

    /// Bytes per attention score attention dropout adds to what an eager block
    /// keeps: its mask (CUDA's `native_dropout` saves only its boolean mask,
    /// `result1` in `tools/autograd/derivatives.yaml`) and its 16-bit output,
    /// which the value matmul saves instead of the probabilities' 16-bit cast —
    /// that cast is then only the dropout's input, saved by no one, and
    /// [`Self::score_bytes`] counted it. Under autocast where the dropout comes
    /// before the cast (BERT: `dropout(softmax(…))` in fp32, cast by the matmul)
    /// the matmul keeps the same 16-bit copy of the dropped-out tensor and the
    /// fp32 dropout output goes: the same bytes. So a 16-bit run with an fp32
    /// softmax keeps 4 + 1 + 2 = 7 bytes a score, not the 9 counted before;
    /// fp32 (4 + 1 + 4) and a 16-bit softmax (2 + 1 + 2) are unchanged.
    fn attention_dropout_bytes(&self) -> f64 {
        if !self.plan.training.dropout {
            return 0.0;
        }
        MASK + self.e - self.softmax_cast_bytes()
    }

    /// [`Self::layer_activations`] of one block at this length before any
    /// encoder–decoder cross-attention or float8 weight copies: its attention
    /// part and its whole.
    fn block_activations(&self) -> (f64, f64) {
        let m = self.m;
        let (b, s, e, t, rep) = (self.b, self.s, self.e, self.t, self.rep);
        let sb = s * b;
        let h = m.hidden as f64;
        let hq = m.q_width() as f64;
        let hkv = m.kv_width() as f64;
        // The attention's output, o_proj's input.
        let out = m.attn_out_width() as f64;
        let f = m.ffn as f64;
        let a = m.heads as f64;
        let tg = match self.plan.training.finetune {
            Finetune::Full => LoraTargets::ALL_LINEAR,
            Finetune::Lora { targets, .. } => targets,
            Finetune::Adapter { .. } => LoraTargets::default(),
        };
        let dropout = self.plan.training.dropout;
        let norm = self.norm_kept_bytes();
        // How many copies of a norm's output the projections reading it keep:
        // one shared tensor, or one 16-bit cast each under autocast (one for
        // a fused projection).
        let inputs_kept = |targets: &[bool], fused: bool| -> f64 {
            let n = targets.iter().filter(|&&t| self.keeps_input(t)).count() as f64;
            if self.casts_inputs_per_matmul() && !fused {
                n
            } else {
                n.min(1.0)
            }
        };

        // Attention block.
        let mut attn = norm * sb * h / rep; // norm input
                                            // q/k/v input (the norm output, or its casts)
        let attn_inputs = inputs_kept(&[tg.q, tg.k, tg.v], m.fused_projections);
        let li = self.linear_input_bytes();
        attn += attn_inputs * li * sb * h / rep;
        // q, k, v (rotated) for the attention backward; grouped k/v are expanded
        // to every query head by HF's eager path (`repeat_kv`) and by LitGPT.
        let attention = self.attention();
        let expand = attention == Attention::Eager
            || self.defaults().expands_gqa_kv
            || self.sdpa_gets_a_mask();
        let kv = if expand { hq } else { hkv };
        match m.mla {
            // Latent attention (transformers `DeepseekV3Attention`): q
            // (`torch.cat` of its parts) and k (`new_empty`, filled) are new
            // tensors; v is a view of kv_b_proj's output, which it keeps whole
            // (every head's k_nope beside its value). Each latent's RMSNorm
            // keeps what a norm keeps of it and the projection after it its
            // output; kv_a's output itself is only split and cast (the norm's
            // `.to(float32)`, the rotary `k · cos`, neither saves it).
            Some(a) => {
                let heads = m.heads as f64;
                let nope = (m.head_dim as f64 - a.rope_dim as f64).max(0.0);
                attn += e * sb * (2.0 * hq + heads * (nope + a.v_dim as f64)) / t;
                let (qr, kvr) = (a.q_rank as f64, a.kv_rank as f64);
                attn += norm * sb * (qr + kvr) / rep;
                if a.q_rank > 0 && self.keeps_input(tg.q) {
                    attn += li * sb * qr / rep;
                }
                if self.keeps_input(tg.k || tg.v) {
                    attn += li * sb * kvr / rep;
                }
            }
            None => attn += e * sb * (hq + 2.0 * kv) / t,
        }
        if m.qk_norm {
            attn += self.qk_norm_bytes() * sb * (hq + hkv) / t;
        }
        // One fused qkv output: v is a view of it, so the whole tensor stays
        // alive beside the rotated q and k copies (transformers Phi-3,
        // GPT-NeoX, Falcon; measured on the H200: Phi-3-mini bf16 kept more than
        // the separate-projection count by about this much; counted exactly by
        // calibration/saved_tensors.py). That is with `use_cache=False`, as
        // training scripts set and gradient checkpointing forces: a KV cache in
        // the training forward copies v. LitGPT fuses qkv for every model.
        // With grouped or multi-query k/v that attention repeats (LitGPT's
        // expansion, transformers' `repeat_kv` under a mask), v is copied out
        // of the fused output, which frees it; unrepeated (SDPA's own grouped
        // attention, a single k/v head) the view stays, and the fused output
        // with it: transformers Phi-3/Phi-4-mini slice v out of `qkv_proj`'s
        // output, and from 5.25 Falcon `split`s it (5.24 indexed it out,
        // `[..., [-1], :]`, a copy). Replayed: Phi-4-mini (24 heads over 8)
        // bf16 at 4 × 2048, allocated −2.6 % counting v's copy, 0.0 % with
        // the view; counted under 5.25, a Falcon-7B-shaped block 26.44
        // bytes per token per hidden unit (24.32 under 5.24).
        // Not where bitsandbytes hands the fused output back in fp32 under
        // autocast ([`Self::quantized_outputs_in_fp32`]): SDPA then keeps
        // autocast's 16-bit copies of q, k and v, not views of it (replayed,
        // `allocator_replay.py --qlora-families`: Pythia-1.4B's blocks kept no
        // fused output).
        let keeps_qkv = (m.fused_projections || self.defaults().fused_qkv)
            && (m.kv_heads == m.heads || !expand)
            && m.mla.is_none()
            && !self.quantized_outputs_in_fp32();
        if keeps_qkv && m.positions == Positions::Rotary {
            attn += e * sb * (hq + hkv) / t;
        }
        match attention {
            Attention::Flash => {
                // The output, kept by the kernel and o_proj, and any mask SDPA
                // converted: every local query against every key.
                attn += e * sb * out / t;
                attn += self.sdpa_mask_bytes() * sb * s * self.plan.parallel.cp as f64;
                attn += FP32 * b * a * s / t; // per-row log-sum-exp
                if li < e && self.keeps_input(tg.o) {
                    // o_proj's own float8 copy of that output.
                    attn += li * sb * out / t;
                }
            }
            Attention::Eager => {
                let scores = self.score_elements();
                attn += self.eager_score_bytes() * scores;
                if self.keeps_input(tg.o) {
                    attn += li * sb * out / t;
                }
            }
        }
        if dropout {
            attn += MASK * sb * h / rep;
        }

        // MLP block (per routed token: top-k experts plus shared ones).
        let k = self.mlp_runs_per_token();
        // A parallel block with one norm (Phi, GPT-J, Falcon-7B) feeds the same
        // normalised tensor to attention and MLP: no second norm input, and the
        // MLP's input is the tensor attention already keeps (unless autocast
        // casts it once per matmul).
        let shared_norm = m.norms_per_layer == 1;
        // Parallel blocks with two norms (GPT-NeoX) normalise the same input:
        // kept once.
        let mut mlp = if shared_norm || m.parallel_residual {
            0.0
        } else {
            norm * sb * h / rep // norm input
        };
        let gated = m.mlp == Mlp::Gated;
        // The matmuls reading the MLP's input: up and, gated, gate (a plain
        // MLP has no gate to cast the input for).
        let mlp_inputs = if gated {
            inputs_kept(&[tg.up, tg.gate], m.gate_up_fused())
        } else {
            inputs_kept(&[tg.up], m.gate_up_fused())
        };
        let mlp_inputs = if shared_norm && attn_inputs > 0.0 && !self.casts_inputs_per_matmul() {
            0.0
        } else {
            mlp_inputs
        };
        let experts_fp32 = self.experts_in_fp32();
        // Experts in fp32: one fp32 copy of each routed input (gate and up are
        // one grouped weight, `gate_up_proj`) instead of per-matmul casts.
        mlp += if experts_fp32 {
            FP32 * sb * h / rep * k
        } else {
            mlp_inputs * li * sb * h / rep * if m.is_moe() { k } else { 1.0 }
        };
        let e = self.mlp_bytes();
        // fc2's input: in float8 under TE, else in the MLP's dtype.
        let down_in = if li < self.e { li } else { e };
        // T5's MLPs drop out the down projection's input (transformers
        // `T5DenseActDense` and v1.1's `T5DenseGatedActDense`: act, dropout,
        // `wo`), keeping the dropout's 1-byte mask per inner element. BART's
        // lineage (BART, M2M100/NLLB, Marian, mBART, Pegasus: learned or
        // sinusoidal positions) drops it out by `activation_dropout`, 0.0 in
        // their configs: nothing. Replayed (`calibration/allocator_replay.py
        // --families`): NLLB-200-600M (ReLU) at 16 × 512, allocated +8.9 %
        // with T5's mask and dropped-out copy counted.
        let inner_dropout =
            dropout && m.arch == Arch::EncoderDecoder && m.positions == Positions::Relative;
        let inner_mask = if inner_dropout { MASK * f / t } else { 0.0 };
        let mut per_token = if gated {
            // gate out (SiLU input), SiLU out and up out (the product's
            // inputs); a fused SwiGLU kernel recomputes the SiLU out, and so
            // does a compiled block (the partitioner recomputes the cheap
            // element-wise SiLU from the kept gate output: counted with
            // calibration/saved_tensors.py --compile, 32.57·hidden per token
            // per block for the small bf16 Llama against 43.07 eager).
            let kept = if m.clamped_glu {
                // The fused gate/up output (2), the gate's clamp, its sigmoid,
                // the gated product and `up + 1` ([`ModelSpec::clamped_glu`]).
                6.0
            } else if self.plan.training.fused_kernels
                || self.plan.training.compile
                || self.defaults().fused_swiglu
            {
                2.0
            } else {
                3.0
            };
            // Under autocast the Python tanh GELU's output is fp32 (its tanh
            // branch runs in fp32 from `pow`, and `0.5·x · (1 + tanh)`
            // promotes), and the gate × up product keeps it as it is
            // (transformers `T5DenseGatedActDense`: `act(wi_0(x)) *
            // wi_1(x)`). Replayed (`calibration/allocator_replay.py`):
            // FLAN-T5-base under bf16 autocast kept an fp32 GELU output per
            // inner element.
            let act_promoted = if kept == 3.0 && self.python_gelu() && self.runs_autocast() {
                FP32 - e
            } else {
                0.0
            };
            // With T5 v1.1's dropout, `wo` keeps the dropped-out product
            // instead of the product, which nothing else saves: the mask more.
            (kept * e + act_promoted) * f / t
                + inner_mask
                + if self.keeps_input(tg.down) {
                    down_in * f / t
                } else {
                    0.0
                }
        } else if m.relu {
            // ReLU keeps its output ([`ModelSpec::relu`]), which is fc2's
            // input unless a float8 fc2 casts it or T5's `DenseReluDense`
            // drops it out first (transformers `T5DenseActDense`: `wi`, act,
            // dropout, `wo`): then the mask and the dropped-out copy too.
            e * f / t
                + inner_mask
                + if self.keeps_input(tg.down) && (inner_dropout || down_in < e) {
                    down_in * f / t
                } else {
                    0.0
                }
        } else {
            // fc1 out (GELU input), GELU out (fc2 input)
            e * f / t
                + if self.keeps_input(tg.down) {
                    down_in * f / t
                } else {
                    0.0
                }
        };
        if self.python_gelu() {
            per_token += self.gelu_new_extra_bytes() * f / t;
        }
        mlp += k * sb * per_token;
        if m.is_moe() {
            mlp += FP32 * sb * m.experts as f64; // router logits / softmax
            if self.full_finetune() {
                // A trained router keeps its input, and the routing weights'
                // gradient needs each expert's output (`expert_out *
                // routing_weights`, transformers Mixtral / Qwen-MoE): counted
                // with calibration/saved_tensors.py, 6·hidden B per token more
                // than the experts alone for a top-2 bf16 Mixtral block. Where
                // every expert runs every token, the input repeated for each
                // (`repeat(E, 1)`, which the scores' product keeps; that
                // product is each expert's input, counted above) and no
                // expert's output (Llama-4 sums them after the down `bmm`):
                // replayed, two hidden-wide tensors per expert.
                let routed = if self.runs_dense_experts() {
                    m.experts as f64
                } else {
                    k
                };
                mlp += e * sb * h / rep * (1.0 + routed);
            }
        }
        if dropout {
            mlp += MASK * sb * h / rep;
        }
        let (int8_attn, int8_mlp) = self.int8_input_copies();
        attn += sb * int8_attn;
        mlp += k * sb * int8_mlp;

        // LoRA adapters: the dropped-out input copy (+ mask) and the rank-r
        // intermediate kept for lora_B's gradient, per targeted matrix (PEFT `Linear.forward`).
        // Those on q, k, v and o are the attention's: an encoder–decoder's
        // cross-attention has its own ([`Self::decoder_block`]).
        let mut lora = 0.0;
        let mut lora_attn = 0.0;
        if let Some((rank, tg, _, lora_dropout)) = self.lora() {
            let r = rank as f64;
            // The adapter's dropout copy and A-output are in its input dtype
            // ([`Self::lora_input_bytes`]).
            let e = self.lora_input_bytes();
            let casts = self.lora_copies_input();
            let variant = self.lora_variant();
            // One adapter reading an input of width `din`: its rank-r output
            // (`ranks` of them for a grouped adapter) and, with dropout, the
            // dropped-out input copy and its mask — without dropout, its own
            // wider cast of the input; `n` such adapters. A frozen A (LoRA-FA)
            // keeps no input (only dropout's mask). DoRA's magnitude keeps the
            // base output (16-bit) and the LoRA output (adapter dtype) of its
            // `dout` outputs; with dropout it recomputes the base output in the
            // adapter dtype (`F.linear(x, weight.to(x.dtype))`), keeping that
            // instead and the weight copy (PEFT `DoraLinearLayer.forward`).
            let adapter = |on: bool, din: f64, dout: f64, n: f64, ranks: f64| {
                if !on {
                    return 0.0;
                }
                let mut a = n * ranks * sb * e * r;
                let keeps_input = variant != LoraVariant::LoraFa;
                if lora_dropout {
                    a += n * sb * MASK * din;
                    if keeps_input {
                        a += n * sb * e * din;
                    }
                } else if casts && keeps_input {
                    a += n * sb * e * din;
                }
                if variant == LoraVariant::Dora {
                    a += if lora_dropout {
                        n * (sb * 2.0 * e * dout + e * din * dout)
                    } else {
                        n * sb * (self.e + e) * dout
                    };
                }
                a
            };
            if self.defaults().lora_qkv_grouped {
                // One adapter over the fused qkv input; `zero_pad` keeps its
                // output unless q, k and v are all adapted.
                let out = [(tg.q, hq), (tg.k, hkv), (tg.v, hkv)];
                let on = out.iter().filter(|(on, _)| *on);
                let ranks = on.clone().count() as f64;
                let outs = on.clone().map(|(_, d)| d).sum::<f64>();
                lora_attn += adapter(ranks > 0.0, h, outs, 1.0, ranks);
                if ranks > 0.0 && ranks < 3.0 {
                    lora_attn += outs * sb * self.e / t;
                }
            }
            // q, k, v separately unless grouped above; o and the MLP (routed
            // experts per token).
            let grouped = self.defaults().lora_qkv_grouped;
            for (i, mat) in self.block_matrices(tg).into_iter().enumerate() {
                if grouped && i < 3 {
                    continue;
                }
                if mat.mlp {
                    lora += adapter(mat.targeted, mat.din, mat.dout, k, 1.0);
                } else {
                    lora_attn += adapter(mat.targeted, mat.din, mat.dout, 1.0, 1.0);
                }
            }
        }
        lora += lora_attn;

        // LLaMA-Adapter v2 scales every linear's output by a trained vector
        // (`adapter_scale * (linear(x) + adapter_bias)`, LitGPT `AdapterV2Linear`),
        // so each output is kept. Counted from litgpt 0.5.13 blocks under torch
        // 2.15: Llama-2-7B kept 29·hidden bytes per token more than LLaMA-Adapter
        // v1 (these outputs plus the fp32 normalised tensors of the trained
        // RMSNorms, [`Self::norm_affine_bytes`]).
        if let Finetune::Adapter {
            method,
            targets: atg,
            trainable_params,
            ..
        } = self.plan.training.finetune
        {
            // Each adapted matrix (routed experts per token) keeps a cast of
            // its input; `delta-weight` methods also one `in × out` update.
            let le = self.lora_input_bytes();
            let (mut casts, mut weights) = (0.0, 0.0);
            for mat in self.block_matrices(atg).iter().filter(|x| x.targeted) {
                let n = if mat.mlp { k } else { 1.0 };
                casts += n * le * sb * mat.din;
                weights += n * mat.din * mat.dout / t;
            }
            // One weight-sized tensor per adapted matrix, in the adapter dtype.
            let deltas = le * weights;
            // The prefix attention's output, kept by the trained gate
            // (`y + self.gating_factor * ay`) in the blocks that have one
            // (the same probe: +2.3·hidden per token in those blocks).
            let prefix = e * sb * hq / t * self.adapter_prefix_share();
            lora += match method {
                AdapterMethod::Generic => 0.0,
                AdapterMethod::LlamaAdapter => prefix,
                AdapterMethod::LlamaAdapterV2 => {
                    let up = if gated { 2.0 * f } else { f };
                    prefix + e * sb * ((hq + 2.0 * hkv + k * up) / t + (1.0 + k) * h / rep)
                }
                // `result * ia3_scaling` keeps k's and v's outputs; the
                // feed-forward branch keeps `x.to(ia3_l.dtype)`.
                AdapterMethod::Ia3 => {
                    sb * (e * 2.0 * hkv + k * self.trainable_weight_bytes() * f) / t
                }
                // The trained norm weights keep their normalised tensors
                // ([`Self::norm_affine_bytes`], through `norms_train`).
                AdapterMethod::LnTuning => 0.0,
                // q and v share their input (kept once by the rotation
                // matmuls) and keep their outputs for the scale; each keeps
                // the rotation chain's `in × in` products.
                AdapterMethod::Boft => {
                    e * sb * (h / rep + (hq + hkv) / t)
                        + 2.0 * BOFT_ROTATION_MATRICES * e * h * h / t
                }
                AdapterMethod::CastInputs => casts,
                AdapterMethod::DeltaWeight => casts + deltas,
                // LoRA-like of rank 2r: the input (a cast per matrix when the
                // adapters are wider than it, else the shared 16-bit inputs),
                // the 2r-wide `h`, and the concatenated factors A (out × 2r)
                // and B (2r × in).
                AdapterMethod::Osf => {
                    let r2 = 2.0 * self.osf_rank();
                    let mut a = if self.lora_casts_input() {
                        casts
                    } else {
                        e * sb * self.distinct_inputs(atg)
                    };
                    for mat in self.block_matrices(atg).iter().filter(|x| x.targeted) {
                        let n = if mat.mlp { k } else { 1.0 };
                        a += n * le * (sb * r2 + r2 * (mat.din + mat.dout) / t);
                    }
                    a
                }
                // The input casts, r + 1 `in × in` reflection products and
                // two `out × in` weights (the base's fp32 copy, the rotated
                // one) per adapted matrix.
                AdapterMethod::Hra => {
                    let r = self.hra_rank();
                    let mut a = casts;
                    for mat in self.block_matrices(atg).iter().filter(|x| x.targeted) {
                        let n = if mat.mlp { k } else { 1.0 };
                        a +=
                            n * le * ((r + 1.0) * mat.din * mat.din + 2.0 * mat.dout * mat.din) / t;
                    }
                    a
                }
                // Prefix tuning: SDPA's expanded k/v ([`Self::sdpa_gets_a_mask`]).
                AdapterMethod::PrefixTuning => 0.0,
                // The 16-bit inputs `F.linear` keeps, each adapted matrix's
                // rebuilt weight in the compute dtype, and the sparse
                // update's indices and values ([`SHIRA_BYTES_PER_VALUE`] a
                // trained value).
                AdapterMethod::Shira => {
                    e * sb * self.distinct_inputs(atg)
                        + e * weights
                        + SHIRA_BYTES_PER_VALUE * self.params_per_block(trainable_params) / t
                }
                // The rebuilt weights (`deltas`: out × in each, in the adapter
                // dtype), `U_low·S_low` (out × r) each, and the 16-bit inputs
                // `F.linear` keeps.
                AdapterMethod::OsfReconstruct => {
                    let r = self.osf_rank();
                    let mut a = deltas + e * sb * self.distinct_inputs(atg);
                    for mat in self.block_matrices(atg).iter().filter(|x| x.targeted) {
                        let n = if mat.mlp { k } else { 1.0 };
                        a += n * le * mat.dout * r / t;
                    }
                    a
                }
            };
        }

        // Sandwich norms (Gemma-2/3: a norm after attention and after the MLP
        // too) save what the pre-norms save; their outputs go into the residual
        // add, which keeps nothing.
        let extra_norms = (m.norms_per_layer as f64 - 2.0).max(0.0) * norm * sb * h / rep;

        (attn + lora_attn, attn + mlp + lora + extra_norms)
    }

    /// Float8 copies of one block's linear weights that a Transformer Engine
    /// run makes ([`FP8_WEIGHT_COPY_BYTES`]); none without TE float8.
    fn fp8_weight_copies_per_layer(&self) -> f64 {
        if self.te_float8() {
            FP8_WEIGHT_COPY_BYTES * self.layer_matrix_params()
        } else {
            0.0
        }
    }

    /// The copies are weights when TE caches them for the run
    /// ([`Framework::te_caches_fp8_weights`]), else each layer's activations.
    fn fp8_weight_copies_cached(&self) -> bool {
        self.plan.framework.te_caches_fp8_weights()
    }

    /// What a recomputed block's forward holds beside the block's own saved
    /// tensors at its largest moment, when PEFT LoRA adapts its MLP — a
    /// moment above the MLP backward it is compared with. Two candidates:
    ///
    /// - the end: the recompute runs on to the last tensor the block saves
    ///   (non-reentrant checkpointing stops there, `_StopRecomputationError`),
    ///   the down adapter's — its `lora_B` input, or with dropout after the
    ///   MLP (T5, BART, GPT-2) the dropout's mask, past `lora_B`, whose fp32
    ///   output and the scaled one are then alive too. Live: the down
    ///   projection's input (the MLP product, which a frozen base does not
    ///   save), the base output, and with adapter dropout PEFT's cast of the
    ///   input to the adapters' wider dtype (`_cast_input_dtype`; without
    ///   dropout the cast is the saved copy) — under autocast also the
    ///   dropped-out copy in that width, whose 16-bit cast is what `lora_A`
    ///   keeps ([`Self::lora_input_bytes`]);
    /// - the up (or fused gate_up) adapter's scaled output: the base output,
    ///   `lora_B`'s output and the scaled one (2·MLP wide for a fused
    ///   projection), less what the block saves only after that moment.
    ///
    /// Both with the gradients flowing into the block
    /// ([`HIDDEN_GRADS_IN_MLP_BACKWARD`], the residual stream's dtype; at the
    /// top block, the first recomputed, also the final norm's fp32 input
    /// gradient where that norm upcasts a 16-bit residual — replayed: 4 bytes
    /// per token per hidden unit at Llama-3.2-1B's, Qwen2.5's and Phi-3's
    /// peaks, freed once the block's own backward starts), the
    /// MLP's input (the norm's output, the MLP call's argument) unless saved,
    /// and, where the post-attention norm saves a copy rather than its input,
    /// the residual. The cast is not made under FSDP's mixed precision, whose
    /// gathered adapters are 16-bit. Replayed through the caching allocator
    /// (`calibration/allocator_replay.py` rules; torch 2.15, transformers
    /// 5.25, peft 0.21.2; LoRA r16 with dropout on every linear, full
    /// checkpointing): ByT5-base at 32 × 512 (bf16) held 6·ffn + 16·hidden
    /// bytes per token at the end; Llama-3.2-1B as a sequence classifier at
    /// 8 × 2048 6·ffn + 10·hidden in bf16 and 10·ffn + 14·hidden under bf16
    /// autocast over fp32 weights; Phi-3-mini's fused gate_up adapter peaked
    /// above its end. Without this term: −8.6 %, −8.3 %, −9.9 % and −4.3 %
    /// allocated. An MoE block's last expert runs on its share of the tokens
    /// alone: not counted. Outside a recompute (`recompute` false: the
    /// forward's last block, on top of every block's saved tensors) no
    /// gradient flows yet and the block runs past `lora_B`: with no logits
    /// above it (a classifier), the forward's peak. Replayed: Llama-3.2-1B as
    /// a classifier, LoRA without checkpointing, peaked at its last block's
    /// down adapter (−0.95 → +0.18 % allocated; ModernBERT −3.1 → −2.0 %,
    /// XLM-RoBERTa −2.7 → 0.0 %).
    fn mlp_adapter_transients(&self, recompute: bool) -> f64 {
        let Some((_, tg, _, lora_dropout)) = self.lora() else {
            return 0.0;
        };
        let m = self.m;
        let [_, _, _, _, g, u, d, _, _] = self.block_matrices(tg);
        if !(u.targeted || d.targeted) || m.is_moe() || self.defaults().lora_qkv_grouped {
            return 0.0;
        }
        let (e, rb) = (self.e, self.residual_bytes());
        // What an adapter keeps of its input ([`Self::lora_input_bytes`]),
        // and the dtype its `lora_B` output and the scaled one are in.
        let le = self.lora_input_bytes();
        // PEFT's cast of an adapter's input to the adapters' dtype.
        let cast = if self.adapters_computed_wider() && self.peft_adapters_fp32() {
            self.trainable_weight_bytes()
        } else {
            0.0
        };
        let f = m.ffn as f64 / self.t;
        let h = m.hidden as f64 / self.rep;
        // What the down adapter saves: its input copy (dropped out, or cast)
        // and with dropout the mask.
        let down_saved = if !d.targeted {
            0.0
        } else if lora_dropout {
            (le + MASK) * f
        } else if self.lora_casts_input() {
            le * f
        } else {
            0.0
        };
        // The end: the down adapter's `lora_B` input.
        let end = if d.targeted {
            let mut end = e * h;
            if !self.keeps_input(true) {
                end += e * f;
            }
            // PEFT's cast is dropped out, or under autocast cast again to
            // the 16 bits `lora_A` keeps: not what is saved. Under autocast
            // with dropout, the dropped-out copy is in that width too.
            if lora_dropout || self.runs_autocast() {
                end += cast * f;
            }
            if lora_dropout && self.runs_autocast() {
                end += cast * f;
            }
            // Past `lora_B` when something after it saves (dropout after the
            // MLP), or always outside a recompute.
            if self.plan.training.dropout || !recompute {
                end += 2.0 * le * h;
            }
            end
        } else {
            0.0
        };
        // The up (or fused gate_up) adapter's scaled output: its base output
        // (the size of the 16-bit sum the block saves after it), `lora_B`'s
        // output and the scaled one, with dropout PEFT's cast of the MLP's
        // input — less what the block saves only after that moment: a fused
        // projection's activation output and the down adapter's copies.
        let up = if u.targeted {
            let fused_act = if u.dout > m.ffn as f64 { e * f } else { 0.0 };
            // PEFT casts a narrower MLP input (the norm's output, in the
            // residual stream's dtype) when that cast is not what it keeps.
            let cast_in = if (lora_dropout || self.runs_autocast()) && rb < cast {
                cast * h
            } else {
                0.0
            };
            2.0 * le * u.dout / self.t + cast_in - fused_act - down_saved
        } else {
            0.0
        };
        // The gradients flowing into the block; at the top block's recompute
        // (the stage's first, with every checkpoint still held) also the
        // final norm's fp32 input gradient where that norm upcasts a 16-bit
        // residual (freed as the block's own backward starts).
        let mut per_token = if recompute {
            HIDDEN_GRADS_IN_MLP_BACKWARD * rb * h
                + if self.recompute_reuses_input() {
                    0.0
                } else {
                    FP32 * h
                }
        } else {
            0.0
        };
        if !self.keeps_input(u.targeted || g.targeted) {
            per_token += rb * h;
        }
        if !self.recompute_reuses_input() {
            per_token += rb * h;
        }
        per_token += end.max(up).max(0.0);
        per_token * self.b * self.s
    }

    /// The gradients a recomputed block's MLP backward makes beside the
    /// recomputed block (the working block, [`BACKWARD_WORKING_BLOCKS`]): the
    /// gradient of the down projection's input, then the product's backward
    /// makes the gradients of both its factors (SwiGLU's activation and up
    /// projection) while that one is alive — net two MLP-wide tensors once the
    /// product the down projection kept is released, one for a plain MLP
    /// (GELU's input gradient) — and the hidden-sized gradients flowing into
    /// the block and out of its MLP. Without recompute the block's own kept
    /// tensors are released as its backward runs and these gradients are the
    /// moment ([`Self::kept_block_backward`]); a recomputed block holds all of
    /// its activations when they start. Counted on the CPU allocator
    /// (`calibration/cpu_allocator.py working`, transformers' Llama and BERT,
    /// bf16, 8,192 → 16,384 tokens, bytes per token per hidden unit at the
    /// backward peak with full checkpointing): MLP 1408 / 1792 / 2816 wide
    /// 65.6 / 74.6 / 97.5 (the model without this term 51.1 / 56.5 / 69.5;
    /// with it 66.1 / 74.5 / 95.5), BERT MLP 2048 49.1 (35.9; 47.9). Measured
    /// on the H200: QLoRA Mistral-7B with checkpointing, 2 × 2048, −4.9 → +0.1 %
    /// allocated. Per-op selective checkpointing recomputes the block's MLP
    /// the same way; selective (attention core only) does not. An MoE block's
    /// routed tokens count once per expert they run through, as its kept
    /// activations do.
    fn recomputed_mlp_grads(&self) -> f64 {
        if !matches!(
            self.plan.training.checkpointing,
            Checkpointing::Full | Checkpointing::OpSelective
        ) {
            return 0.0;
        }
        self.mlp_grads(HIDDEN_GRADS_IN_MLP_BACKWARD)
    }

    /// Whether the down projection saves nothing of its input: a frozen base
    /// matrix no adapter reads, multiplied by PyTorch's own linear or by a
    /// 4-bit matmul that keeps no input (not ZeRO-3's, nor bitsandbytes'
    /// before 0.43.2: [`Self::keeps_input`]) — PEFT's default targets (q and
    /// v), or attention-only adapters. Its input's gradient then meets the
    /// gradients of the product's factors with nothing of the block released
    /// before it. Replayed (`calibration/allocator_replay.py --classifiers`):
    /// Llama-3.2-1B as a classifier, LoRA on q and v, checkpointed, 8 × 2048:
    /// three MLP-wide gradients at the peak; and over a 4-bit base
    /// (`--trl-qlora`, TRL's fused head, where the logits no longer hide the
    /// block): Qwen2.5-1.5B on q and v, checkpointed, 4 × 2048, peaked with
    /// six MLP-wide tensors (the gate's and up projection's outputs, the
    /// activation's, and three gradients), −4.4 % allocated when the count
    /// left a 4-bit base's product as kept. An 8-bit base is left as it was
    /// (its dequantized weights' moment; no replay of it).
    fn down_keeps_nothing(&self) -> bool {
        let targets = match self.plan.training.finetune {
            Finetune::Full => return false,
            Finetune::Lora { targets, .. } | Finetune::Adapter { targets, .. } => targets,
        };
        !self.block_matrices(targets)[6].targeted
            && !self.keeps_input(false)
            && self.base_bits() != Some(8)
    }

    /// The gradients a block's MLP backward holds at once — two MLP-wide
    /// ones for a gated MLP, one for a plain one ([`Self::recomputed_mlp_grads`])
    /// — and `hidden` hidden-sized ones, over the micro-batch. MLP-wide
    /// tensors are split over the tensor-parallel ranks, hidden-sized ones
    /// only under sequence parallelism.
    fn mlp_grads(&self, hidden: f64) -> f64 {
        let m = self.m;
        let e = self.mlp_bytes();
        let factors = if m.mlp == Mlp::Gated {
            MLP_GRADS_GATED
        } else {
            MLP_GRADS_PLAIN
        };
        // Net of the product the down projection kept: a frozen,
        // unadapted down projection kept none, so its input's gradient
        // counts in full.
        let unkept = if self.down_keeps_nothing() { 1.0 } else { 0.0 };
        let mlp = e * (factors + unkept) * self.mlp_runs_per_token() * m.ffn as f64 / self.t;
        (mlp + self.hidden_grads_per_token(hidden)) * self.b * self.s
    }

    /// `n` hidden-sized gradients of one token, in the activations' dtype
    /// (replicated over TP ranks unless sequence parallelism splits them).
    fn hidden_grads_per_token(&self, n: f64) -> f64 {
        self.e * n * self.m.hidden as f64 / self.rep
    }

    /// What a block that kept its activations (no recompute: no
    /// checkpointing, or selective checkpointing's attention core alone) adds
    /// over them at its backward's largest moment. Its own saved tensors are
    /// released node by node as its backward runs (`release_variables` in
    /// `torch/csrc/autograd/engine.cpp`), so the block's gradients never meet
    /// a second copy of its activations: the moment is the MLP's backward
    /// (the product's two factors' gradients beside the down projection's
    /// input gradient, the product itself released: [`Self::mlp_grads`]
    /// with [`HIDDEN_GRADS_IN_KEPT_MLP_BACKWARD`]) or, with materialised
    /// scores, the attention core's (the block's score-sized tensors and
    /// their gradients, [`Self::score_grads_in_backward`]; under selective
    /// checkpointing the scores are the recomputed ones), whichever is
    /// larger. Counted on the CPU allocator (`calibration/cpu_allocator.py
    /// working` and `timeline`, transformers' Llama, bf16, no checkpointing,
    /// the CPU's fp32 matmul scratch left out): the top block's MLP backward
    /// holds 2·MLP·2 bytes per token over the blocks' kept tensors (MLP 2816,
    /// hidden 512: 22 bytes per token per hidden unit over what the blocks
    /// keep), where the model had put a whole block's activations (65).
    /// Measured on the H200: the two Liger runs without checkpointing (fused
    /// loss and norms, so a block's backward is the peak) +2.4 / +3.7 %
    /// allocated with a whole block, +0.3 / +1.0 % with this.
    fn kept_block_backward(&self, scores: f64) -> f64 {
        let attention = scores + self.score_grads_in_backward();
        self.mlp_grads(HIDDEN_GRADS_IN_KEPT_MLP_BACKWARD)
            .max(attention)
    }

    /// What a block's eager attention backward holds beyond the block's
    /// saved tensors ([`BACKWARD_WORKING_BLOCKS`]) when the block was
    /// recomputed: its score-sized gradients ([`Self::score_grads_in_backward`])
    /// and the hidden-sized gradients flowing through
    /// ([`HIDDEN_GRADS_IN_MLP_BACKWARD`]), less what the block's backward has
    /// released by then ([`Self::released_before_attention_backward`]). The
    /// MLP's backward runs first, releasing the MLP's saved tensors node by
    /// node (`release_variables`, `torch/csrc/autograd/engine.cpp`) and its
    /// gradients as they are consumed, so the MLP's gradients
    /// ([`Self::recomputed_mlp_grads`]) and the attention's are two moments,
    /// not one sum. Replayed through the caching allocator's rules
    /// (`calibration/allocator_replay.py`; torch 2.15, transformers 5.25,
    /// peft 0.21.2; sequence classifiers, full checkpointing): Llama-3.2-1B
    /// and Qwen2.5-1.5B in fp32 (SDPA's math kernel) at 4 × 2048 peaked at
    /// the softmax's backward with the probabilities, `dP` and `dS` beside
    /// the block's attention-side tensors alone (the model summing both:
    /// +12 … +16 % allocated); eager Gemma-2B and Gemma-2-2B in bf16 at
    /// 8 × 2048 peaked at the MLP's backward with no score gradient alive
    /// (+8 … +14 %).
    fn recomputed_attention_moment(&self, recomputed: bool) -> f64 {
        let score_grads = self.score_grads_in_backward();
        if score_grads <= 0.0 {
            return 0.0;
        }
        let released = if recomputed {
            self.released_before_attention_backward()
        } else {
            0.0
        };
        let hidden = self.hidden_grads_per_token(HIDDEN_GRADS_IN_MLP_BACKWARD) * self.b * self.s;
        let math = if self.sdpa_math_kernel() {
            SDPA_MATH_BACKWARD_EXTRA_SCORES * self.softmax_bytes() * self.score_elements()
        } else {
            0.0
        };
        score_grads + math + hidden - released
    }

    /// Whether the scores come from SDPA's math kernel: SDPA asked for, and
    /// the scores materialised ([`Self::attention`]: fp32 activations with
    /// grouped k/v, which neither the flash nor the memory-efficient kernel
    /// takes).
    fn sdpa_math_kernel(&self) -> bool {
        self.plan.training.attention == Attention::Flash && self.attention() == Attention::Eager
    }

    /// What a recomputed block's backward has released when its attention
    /// core's backward starts: the tensors its MLP side saved (the MLP, its
    /// adapters, the sandwich norms after the attention), all made after
    /// the attention in the forward and so consumed before it in the
    /// backward — the block less its attention side
    /// ([`Self::block_activations`]). Nothing for an MoE model, whose routed
    /// share of the block is not one block's, nor for an encoder–decoder,
    /// whose largest block and whose scores may be different stacks' (as the
    /// target grows to the source's length they become one stack's: the
    /// estimate would fall there; the property test
    /// `an_encoder_decoder_grows_with_its_source_and_its_target` found it),
    /// where what is left stays an upper bound that grows with either length.
    fn released_before_attention_backward(&self) -> f64 {
        if self.m.is_moe() || self.m.arch == Arch::EncoderDecoder {
            return 0.0;
        }
        let (attention, total) = self.block_activations();
        (total - attention).max(0.0)
    }

    /// Score-sized tensors a block with materialised attention scores (eager,
    /// or SDPA's math kernel, [`Self::attention`]) meets in its attention
    /// backward beyond the block's own score-sized tensors
    /// ([`Self::score_bytes`] per score: the recomputed block's,
    /// [`BACKWARD_WORKING_BLOCKS`], or the kept ones
    /// [`Self::kept_block_backward`] starts from). At the softmax's backward
    /// three score-sized tensors are alive in
    /// softmax's dtype ([`Self::upcast_bytes`]): the probabilities `P`, their
    /// gradient `dP` and the softmax input's gradient `dS`
    /// (`softmax_backward_data` writes `dS` while `dP` is alive). A 16-bit cast
    /// of fp32 probabilities is gone by then: the value matmul's backward
    /// node, its only holder, releases it once it has made `dP`
    /// (`torch/csrc/autograd/engine.cpp`: `release_variables` after a node
    /// runs without `retain_graph`).
    ///
    /// - A recomputed block (any checkpointing: selective recomputes the
    ///   attention core by definition, Korthikanti et al. 2022 §5; the per-op
    ///   policy, torchtitan's `_save_list`, saves none of the math path's
    ///   `bmm`/`_softmax`): the working block is the recomputed one, so
    ///   `3·up − score_bytes` more, that is `2·up − cast`
    ///   ([`SCORE_GRADS_IN_BACKWARD`]).
    /// - A block that kept its probabilities (no checkpointing): they are
    ///   counted twice already, kept and in the block's score-sized tensors
    ///   [`Self::kept_block_backward`] starts from, so
    ///   `3·up − 2·score_bytes = up − 2·cast` more — nothing for 16-bit
    ///   runs whose softmax is fp32, one tensor for fp32 or 16-bit softmax.
    ///
    /// Measured on the H200 (calibration/h200-2026-11-30, set 5): QLoRA
    /// Mistral-7B in pure bf16 after `prepare_model_for_kbit_training` (fp32,
    /// SDPA's math kernel), batch 2 × 2048 with full checkpointing peaked
    /// 11.37 GiB; without the two 1 GiB gradients the model said 9.46.
    /// Counted on the CPU allocator (calibration/cpu_allocator.py scores, transformers'
    /// eager Llama, 4 blocks; bytes per score element at the backward peak
    /// over what backward starts with): fp32 none 26.0 peak against 18.4 kept
    /// (model 22.4 before this term, 26.4 with it), full 12.1, selective 11.6;
    /// bf16 none 31.1 against 25.4 (model 31.4), full 12.1, selective 11.8 —
    /// the fully checkpointed and selective blocks both at three tensors of
    /// softmax's 4 bytes. Attention dropout is left as it was (its mask and
    /// dropped-out copy are freed on the way; the CPU's dropout keeps a
    /// different mask than CUDA's, so it was not counted here).
    fn score_grads_in_backward(&self) -> f64 {
        if self.attention() != Attention::Eager {
            return 0.0;
        }
        let up = self.softmax_bytes();
        let cast = self.softmax_cast_bytes();
        let per_score = match self.plan.training.checkpointing {
            Checkpointing::None if self.plan.training.dropout => 0.0,
            Checkpointing::None => (up - 2.0 * cast).max(0.0),
            _ => SCORE_GRADS_IN_BACKWARD * up - cast,
        };
        per_score * self.score_elements()
    }

    /// Attention scores one block materialises per rank: each local query
    /// against the whole sequence, per head on this TP rank.
    fn score_elements(&self) -> f64 {
        self.b * self.m.heads as f64 * self.s * (self.s * self.plan.parallel.cp as f64) / self.t
    }

    /// Bytes of a tensor that softmax / cross-entropy compute in: fp32 when the
    /// framework upcasts or autocast does (softmax and log_softmax are on
    /// autocast's fp32 list), else the activation dtype.
    fn upcast_bytes(&self) -> f64 {
        let prec = self.prec;
        if self.plan.training.fp32_upcasts || prec.fp32_weights() {
            FP32
        } else {
            self.e
        }
    }

    /// Bytes per logit the standard loss computes in ([`Self::upcast_bytes`]),
    /// except that the masked-LM heads of encoders and the LM heads of
    /// encoder–decoders hand `CrossEntropyLoss` their 16-bit scores as they
    /// are — transformers `BertForMaskedLM`, `RobertaForMaskedLM`,
    /// `T5ForConditionalGeneration`, `BartForConditionalGeneration` call
    /// `loss_fct(scores.view(-1, vocab), labels.view(-1))` with no `.float()`,
    /// where its causal LMs' `ForCausalLMLoss` upcasts — so in pure 16-bit the
    /// log-softmax and its gradients stay 16-bit (under autocast log_softmax is
    /// on the fp32 list). Replayed (`calibration/allocator_replay.py
    /// --families`): RoBERTa-large bf16 MLM at 32 × 512 with checkpointing,
    /// 9.11 GiB allocated against 13.60 counted with fp32 loss tensors.
    fn loss_bytes(&self) -> f64 {
        if self.loss_reads_head_scores() && !self.prec.fp32_weights() {
            self.e
        } else {
            self.upcast_bytes()
        }
    }

    /// Bytes kept per attention score by eager attention: the softmax output
    /// (in the upcast dtype) and, when that is fp32 over 16-bit activations, its
    /// 16-bit cast for the value matmul (transformers `eager_attention_forward`).
    /// Korthikanti et al.'s 2 bytes for a 16-bit softmax; dropout adds its own.
    /// Soft-capping (`tanh(scores / cap)`, Gemma-2) keeps the tanh output too.
    fn score_bytes(&self) -> f64 {
        let softcap = if self.m.softcap { self.e } else { 0.0 };
        self.softmax_bytes() + self.softmax_cast_bytes() + softcap
    }

    /// Bytes per score the eager softmax computes in: [`Self::upcast_bytes`],
    /// except over attention sinks ([`ModelSpec::attention_sinks`], gpt-oss),
    /// whose softmax stays in the scores' dtype.
    fn softmax_bytes(&self) -> f64 {
        if self.m.attention_sinks {
            self.e
        } else {
            self.upcast_bytes()
        }
    }

    /// Bytes per score of the 16-bit cast an fp32 softmax over 16-bit
    /// activations is handed to the value matmul in; none when the softmax
    /// runs in the activations' dtype.
    fn softmax_cast_bytes(&self) -> f64 {
        if self.softmax_bytes() > self.e {
            self.e
        } else {
            0.0
        }
    }

    /// What a checkpointed block keeps: its input (residual stream dtype).
    fn layer_input_bytes(&self) -> f64 {
        self.residual_bytes() * self.s * self.b * self.m.hidden as f64 / self.rep
    }

    /// Bytes of the residual stream between blocks: fp32 when the blocks
    /// compute over fp32 weights (plain fp32, or autocast over fp32 weights:
    /// the residual adds promote to fp32); 16-bit under FSDP/DeepSpeed mixed
    /// precision (parameters cast to 16-bit for compute) and over a frozen
    /// 16-bit or quantised base (DESIGN.md §3b).
    fn residual_bytes(&self) -> f64 {
        let prec = self.prec;
        let fp32_compute = match prec {
            Precision::Fp32 => true,
            _ if self.kbit_fp32_norm_outputs() || self.quantized_outputs_in_fp32() => true,
            Precision::AmpFp16 | Precision::AmpBf16 => {
                !self.shards_params()
                    && !self.master_in_optimizer()
                    && self.base_bits().is_none_or(|b| b >= 32)
            }
            _ => false,
        };
        if fp32_compute {
            FP32
        } else {
            self.e
        }
    }

    /// Per-op selective checkpointing as torchtitan applies it: the block's
    /// input, the attention output (SDPA is on the save list) and every
    /// *other* matmul output, the rest recomputed ("Save all compute/comm ops,
    /// except every second mm/linear": torchtitan 0.3.0
    /// `distributed/activation_checkpoint.py` `SelectiveAC`, 0.1.0
    /// `parallelize.py` `_save_list` with `mm_count % 2 == 0` recomputed; the
    /// count restarts in every block). In forward order a Llama block's mms are
    /// wq, wk, wv, wo, w1, w3, w2: q, v, w1's and w2's outputs are kept. MoE
    /// blocks keep every matmul output (their router and grouped expert mms do
    /// not follow the count), an upper bound.
    fn op_selective_layer(&self) -> f64 {
        let m = self.m;
        let sb = self.s * self.b;
        let (e, t) = (self.e, self.t);
        let h = m.hidden as f64;
        let hq = m.q_width() as f64;
        let hkv = m.kv_width() as f64;
        let f = m.ffn as f64;
        let gated = m.mlp == Mlp::Gated;
        if m.is_moe() {
            let mats = if gated { 2.0 } else { 1.0 };
            return self.layer_input_bytes() + e * sb * (hq + 2.0 * hkv + hq + mats * f) / t;
        }
        // The block's matmul outputs in forward order (widths per token): q/k/v
        // (one fused qkv), o, then gate/up (one fused gate_up) and down.
        let qkv = hq + 2.0 * hkv;
        let attn: &[f64] = if m.fused_projections {
            &[qkv, h]
        } else {
            &[hq, hkv, hkv, h]
        };
        let mlp: &[f64] = match (gated, m.gate_up_fused()) {
            (true, true) => &[2.0 * f, h],
            (true, false) => &[f, f, h],
            (false, _) => &[f, h],
        };
        let kept_mms: f64 = attn.iter().chain(mlp).step_by(2).sum();
        self.layer_input_bytes() + e * sb * (kept_mms + hq) / t
    }

    /// Micro-batches a pipeline runs per step: the stated count, else the
    /// gradient accumulation steps (at least one).
    fn pipeline_microbatches(&self) -> u32 {
        let p = &self.plan.parallel;
        if p.pp_microbatches > 0 {
            p.pp_microbatches
        } else {
            self.plan.training.grad_accum.max(1)
        }
    }

    /// Micro-batches whose activations stage `s` holds at once: p − s under
    /// 1F1B (Narayanan et al. 2021), capped by the micro-batch count; the
    /// interleaved schedule multiplies stage-1 activations by 1 + (p−1)/(p·v)
    /// (Korthikanti et al. 2022 §4.2.3).
    fn in_flight(&self, s: u32) -> f64 {
        let p = &self.plan.parallel;
        if p.pp <= 1 {
            return 1.0;
        }
        let n = ((p.pp - s) as f64).min(self.pipeline_microbatches() as f64);
        match p.pp_schedule {
            PipelineSchedule::OneFOneB => n,
            PipelineSchedule::Interleaved => {
                let v = p.virtual_stages.max(1) as f64;
                n * (1.0 + (p.pp as f64 - 1.0) / (p.pp as f64 * v))
            }
        }
    }

    /// Activations stage `s` holds at the end of forward, the transient
    /// working set of one block during backward (recompute included), and
    /// what the largest recomputed block makes again (zero when no block is
    /// recomputed on the GPU), the size of the segments its forward leaves
    /// ([`Self::idle_block_transients`]).
    fn activations(&self, s: u32) -> (f64, f64, f64) {
        let layers = self.stage_layers(s) - self.untrained_prefix_layers(s);
        let flight = self.in_flight(s);
        let scores = self.per_block(|c| c.self_attention_scores());
        // Backward working set over what is kept. A recomputed block holds
        // its activations again (BACKWARD_WORKING_BLOCKS: the largest block's,
        // where an encoder–decoder's blocks differ, less the kept input it
        // reuses) and, on top, its MLP's and eager attention's gradients; so
        // does a block whose activations come back from the CPU (all of
        // them). A block that kept its activations holds only its gradients
        // (Ctx::kept_block_backward).
        let policy = self.plan.training.checkpointing;
        let k = self.plan.training.checkpoint_every.max(1) as f64;
        let checkpointed = (layers / k).floor();
        let recomputed = matches!(policy, Checkpointing::Full | Checkpointing::OpSelective)
            && checkpointed >= 1.0;
        let offload = self.plan.training.activation_offload;
        let (full, largest) = self.layer_activations_once(recomputed && !offload);
        let working = if recomputed || offload {
            // The recompute's last moment holds no gradient of the block's
            // own and no dequantized base weight (freed after its matmul;
            // the phase adds one for the backward, `dequantized_weights`).
            let end = if recomputed && !offload {
                self.mlp_adapter_transients(true) - self.dequantized_weights(s).0
            } else {
                0.0
            };
            BACKWARD_WORKING_BLOCKS * largest
                + self
                    .recomputed_mlp_grads()
                    .max(self.recomputed_attention_moment(recomputed && !offload))
                    .max(end)
        } else {
            self.kept_block_backward(scores)
        };
        let per_checkpointed = match policy {
            Checkpointing::None => full,
            Checkpointing::Selective => (full - scores).max(0.0),
            Checkpointing::OpSelective => self.per_block(|c| c.op_selective_layer()).min(full),
            Checkpointing::Full => self.per_block(|c| c.layer_input_bytes()).min(full),
        };
        // Every k-th block follows the policy; the others keep everything.
        let kept = checkpointed * per_checkpointed + (layers - checkpointed) * full;
        let kept = if offload {
            // Offloading keeps only the block in flight (and the one prefetched).
            ACTIVATION_OFFLOAD_BLOCKS_ON_GPU * self.layer_input_bytes().min(kept)
        } else {
            kept
        };
        let recomputed_block = if recomputed && !offload { largest } else { 0.0 };
        (
            (kept + self.stack_ends(s)) * flight,
            working,
            recomputed_block,
        )
    }

    /// Whether a recomputed block makes again all it keeps but its input: its
    /// first op saves the block's input itself, the tensor checkpointing
    /// kept — a LayerNorm's input (GPT-2, OPT, BLOOM, Falcon, Phi; a post-LN
    /// block's q/k/v linears, BERT, BART, where the norm's input is the
    /// residual sum), T5's RMSNorm multiplying its input, an RMSNorm over an
    /// fp32 residual, whose `.to(float32)` copies nothing. Over a 16-bit
    /// residual a tensor-op RMSNorm saves an fp32 copy instead, a new tensor
    /// (Llama). Counted on the CPU allocator (`calibration/cpu_allocator.py
    /// working`, BERT 4 × 512 with MLP 2048, bf16, checkpointed): the backward
    /// peak grows 49.09 bytes per token per hidden unit; the kept inputs (8),
    /// the embedding LayerNorm's input (2) and a recomputed block with its
    /// own copy of its input counted 2 more than that.
    fn recompute_reuses_input(&self) -> bool {
        self.norm_saved_bytes() == self.residual_bytes() || self.t5_norm_input_bytes() > 0.0
    }

    /// Eager self-attention scores one block keeps (nothing with flash
    /// attention): what selective checkpointing recomputes.
    fn self_attention_scores(&self) -> f64 {
        if self.attention() == Attention::Eager {
            self.eager_score_bytes() * self.b * self.m.heads as f64 * self.s * self.s / self.t
        } else {
            0.0
        }
    }

    /// A per-block quantity, averaged over an encoder–decoder's two stacks
    /// when they run different lengths ([`Self::decoder_s`]), or over an MoE
    /// model's expert and dense blocks ([`Self::mixed`]).
    fn per_block(&self, f: impl Fn(&Ctx<'_>) -> f64) -> f64 {
        let sd = self.decoder_s();
        if sd == self.s {
            return self.mixed(f);
        }
        let (enc, dec) = (self.m.encoder_layers as f64, self.m.layers as f64);
        (enc * f(self) + dec * f(&self.at_length(sd))) / (enc + dec).max(1.0)
    }

    /// Positions the LM head and the loss see on the last stage: an
    /// encoder–decoder's head reads the decoder's positions, and
    /// `nn.DataParallel` gathers every replica's output on GPU 0.
    fn logit_positions(&self) -> f64 {
        let tokens = self.b * self.decoder_s();
        if self.plan.parallel.sharding == Sharding::DataParallel {
            tokens * self.plan.parallel.num_gpus as f64
        } else {
            tokens
        }
    }

    /// One logits-sized tensor of the loss on this rank (vocab-parallel over
    /// TP), in the loss's dtype: the step's largest allocation, which the
    /// loss's reserve terms compare with the segments cached beside it.
    fn loss_logits_tensor(&self) -> f64 {
        self.logits_tensor(self.loss_bytes())
    }

    /// One logits-sized tensor on this rank (vocab-parallel over TP) of
    /// `bytes` per logit.
    fn logits_tensor(&self, bytes: f64) -> f64 {
        self.logit_positions() * self.m.vocab as f64 / self.t * bytes
    }

    /// The stage where the loss's logits-sized tensors meet cached segments
    /// they cannot use and a frozen base makes nothing parameter-shaped to
    /// fill: the last, under a standard loss over an LM head, without
    /// expandable segments (pages, not blocks) — where
    /// [`Self::idle_block_transients`] and [`Self::dropped_logits_segment`]
    /// can hold.
    fn loss_strands_segments(&self, s: u32) -> bool {
        self.is_last(s)
            && self.plan.training.loss == Loss::Standard
            && self.m.head == ModelHead::Lm
            && !self.full_finetune()
            && !self.plan.runtime.expandable_segments
    }

    /// Logits and loss on the last stage (vocab-parallel over TP): what is
    /// alive at the end of the loss forward, as backward starts (the loss's
    /// backward) and at the LM head's backward, once the loss's tensors are
    /// freed and the 16-bit gradient of the logits (with whatever logits the
    /// loop still holds) meets the head's weight gradient.
    fn logits(&self, s: u32) -> LogitsBytes {
        if !self.is_last(s) {
            return LogitsBytes::default();
        }
        let m = self.m;
        let tokens = self.logit_positions();
        let v = m.vocab as f64 / self.t;
        let h = m.hidden as f64;
        // Final norm input (fp32 copy) and output (head input).
        let final_norm = (self.final_norm_kept_bytes() + self.e) * tokens * h / self.rep;
        if m.head == ModelHead::Classifier {
            // A classification head's logits are a few numbers per token (or
            // per sequence, pooled): nothing vocab-sized.
            return LogitsBytes {
                forward: final_norm,
                loss_backward: final_norm,
                head_backward: final_norm,
                norm_backward: self.final_norm_backward(tokens),
                blocks: 0.0,
                step: 0.0,
            };
        }
        let held = if self.loop_holds_logits() {
            self.held_logit_bytes()
        } else {
            0.0
        };
        let compiled = self.plan.training.compile;
        let compiled_loss = self.compiled_loss();
        // Final-logit soft-capping keeps its tanh output wherever the logits
        // are taken whole (a preference loss's policy's; the reference's,
        // under `no_grad`, is not kept).
        let softcap = if self.m.softcap { self.e } else { 0.0 };
        // Bytes per logit at the end of the loss forward and as backward starts.
        let (fwd, bwd) = match self.plan.training.loss {
            // A transformers model computes its loss inside `forward`, so a
            // compiled model fuses the upcast, log-softmax and NLL into kernels
            // that save nothing logits-sized; backward makes one fp32-sized
            // gradient (measured on the H200: +4 B per logit over the held
            // logits at the start of backward, compiled Llama-3.2-1B and GPT-2).
            // A loss computed outside the compiled code runs eagerly
            // ([`Framework::compile_covers_unchunked_loss`]).
            // TRL's DPO through the model's logits: the policy's, the
            // reference's and the metrics' copy at the forward's end.
            Loss::Standard if self.dpo_logits() => {
                let l = self.dpo_logit_bytes();
                let rows = if l < FP32 { l } else { 0.0 };
                let bwd = if l < FP32 {
                    DPO_LOGITS_16BIT_BWD_TENSORS * l
                } else {
                    DPO_LOGITS_FP32_BWD_TENSORS * l
                };
                // Reference log-probabilities computed before training: no
                // reference logits beside the policy's.
                let tensors = if self.plan.training.precompute_ref {
                    DPO_LOGITS_METRICS_TENSORS - 1.0
                } else {
                    DPO_LOGITS_METRICS_TENSORS
                };
                (tensors * l + rows + softcap, bwd + softcap)
            }
            Loss::Standard if self.orpo_logits() => {
                let l = self.dpo_logit_bytes();
                let rowwise = self.plan.framework != Framework::LlamaFactory
                    && !self.plan.training.logprob_kernel
                    && l >= FP32;
                let bwd = if rowwise {
                    ORPO_ROWWISE_FP32_BWD_TENSORS
                } else {
                    ORPO_LOGITS_BWD_TENSORS
                };
                (ORPO_LOGITS_FWD_TENSORS * l + softcap, bwd * l + softcap)
            }
            Loss::Standard if self.kto_logits() => {
                let l = self.dpo_logit_bytes();
                // Reference log-probabilities computed before training: no
                // reference logits or log-softmax beside the policy's.
                let fwd = if self.plan.training.precompute_ref {
                    KTO_LOGITS_FWD_TENSORS - 1.0
                } else {
                    KTO_LOGITS_FWD_TENSORS
                };
                (fwd * l + softcap, ORPO_LOGITS_BWD_TENSORS * l + softcap)
            }
            Loss::Standard if compiled_loss => (FP32 + held, FP32 + held),
            // Megatron's vocab-parallel loss: the fp32 copy beside the 16-bit
            // logits inside the loss forward (`.float()` copies nothing in an
            // fp32 run), then only the saved softmax, which backward turns
            // into the gradient in place.
            Loss::Standard if self.defaults().inplace_cross_entropy => {
                (self.beside_fp32() + FP32, FP32)
            }
            // At the loss's forward the upcast copy and the log-softmax output
            // are alive (the copy is dropped as the loss returns); backward
            // makes the NLL's gradient and the input's, beside the output.
            Loss::Standard => {
                let up = self.loss_bytes();
                // No fp32 copy when the loss reads the 16-bit scores as they
                // are (CUDA's `half_to_float`, or a loss in 16 bits).
                let half_to_float = self.half_to_float_loss();
                // A held output of promoted scores is the loss's fp32 input.
                let promoted_held = held > 0.0 && self.promoted_logits();
                let copy = if half_to_float || up < FP32 || promoted_held {
                    0.0
                } else {
                    up
                };
                let grad = if half_to_float { HALF } else { up };
                let fwd = copy + up + held + softcap;
                // transformers 4.46–4.48 also copy the shifted upcast logits
                // inside the loss, while the model's output is still alive
                // ([`Self::loss_copies_shifted_logits`]).
                let fwd = if self.loss_copies_shifted_logits() {
                    // The output is the held logits, or the head's 16-bit
                    // scores the loop drops once `forward` returns.
                    fwd.max(held.max(self.e) + copy + LOSS_SHIFTED_COPIES * up + up + softcap)
                } else {
                    fwd
                };
                // PyTorch ≤ 1.10's log-softmax keeps its input, the upcast
                // copy, until its backward ([`Self::softmax_input_bytes`]).
                let kept_input = if self.plan.training.pytorch.softmax_saves_input() {
                    copy
                } else {
                    0.0
                };
                let bwd = (LOSS_STANDARD_TENSORS - 1.0) * up + grad + held + softcap + kept_input;
                (fwd, bwd)
            }
            // The kept chunks and, in backward, all their 16-bit gradients.
            Loss::ChunkedKeep => (
                LOSS_CHUNKED_KEEP_BYTES_PER_LOGIT,
                LOSS_CHUNKED_KEEP_BYTES_PER_LOGIT + self.e,
            ),
            Loss::ChunkedFree if compiled => {
                (self.e, self.e * (1.0 + 1.0 / LOSS_CHUNKED_FREE_CHUNKS))
            }
            Loss::ChunkedFree => (
                self.e + LOSS_CHUNKED_FREE_EAGER_BYTES_PER_LOGIT,
                LOSS_CHUNKED_FREE_EAGER_BYTES_PER_LOGIT
                    + (LOSS_CHUNKED_FREE_EAGER_CHUNK_TENSORS_FP32 * FP32 + self.e)
                        / LOSS_CHUNKED_FREE_CHUNKS,
            ),
            Loss::Fused | Loss::TiledLogprob | Loss::ChunkedNll => (0.0, 0.0),
        };
        let fused_chunk = if self.plan.training.loss == Loss::Fused {
            // One 16-bit chunk of logits (its gradient in place) and the
            // input's gradient.
            let inc = (v / (FUSED_LOSS_CHUNK_MEM_CONST * h)).ceil().max(1.0);
            let chunk = (tokens / inc).ceil().max(1.0);
            let chunk = 2f64.powf(chunk.log2().ceil()).min(tokens);
            chunk * v * self.e + tokens * h * self.e
        } else {
            0.0
        };
        // An entropy chunk of the metrics ([`TRL_ENTROPY_CHUNK_ROWS`]).
        let entropy_chunk = if self.plan.training.loss == Loss::Standard && self.dpo_logits() {
            TRL_ENTROPY_CHUNK_ROWS.min(tokens)
                * v
                * TRL_ENTROPY_CHUNK_TENSORS
                * self.dpo_logit_bytes()
        } else {
            0.0
        };
        let (tiled_fwd, tiled_loss_bwd, tiled_head_bwd) = match self.plan.training.loss {
            Loss::TiledLogprob => self.tiled_logprob_moments(tokens, v, h),
            Loss::ChunkedNll => self.chunked_nll_moments(tokens, v, h),
            _ => (0.0, 0.0, 0.0),
        };
        // At the head's backward: the logits' 16-bit gradient, beside the
        // logits the loop holds (LitGPT's chunks, a transformers output); a
        // fused loss has no separate moment (it makes the head's gradient in
        // forward), so its head moment is its loss moment.
        let head = match self.plan.training.loss {
            // Compiled, the loss's fp32-sized gradient is still alive as the
            // head's weight gradient is made: the allocator's history of the
            // H200 runs (calibration/h200-2026-12-04, peak-*.txt) shows the
            // three logit-sized 16-bit buffers (the held output and two of the
            // loss's) beside the new head gradient, the untied Llama-3.2-1B's
            // peak. (A tied head's compiled runs without recomputation peak
            // at the loss's backward, as the eager count of this moment
            // gives: [`Self::compiled_tied_head_keeps_logits`].)
            // The shift's `slice_backward` gradient and, under the wrapper's
            // `.float()`, its 16-bit cast for the head's matmul.
            Loss::Standard if self.dpo_logits() || self.orpo_logits() || self.kto_logits() => {
                let l = self.dpo_logit_bytes();
                if l > self.e {
                    l + self.e
                } else {
                    l
                }
            }
            Loss::Standard if compiled_loss && !self.trains_tied_head() => FP32 + held,
            // The fp32 gradient and its 16-bit cast for the head's matmul.
            Loss::Standard if self.defaults().inplace_cross_entropy => FP32 + self.beside_fp32(),
            Loss::Standard => self.e + held,
            Loss::ChunkedKeep => HALF + self.e,
            Loss::ChunkedFree => self.e,
            Loss::Fused | Loss::TiledLogprob | Loss::ChunkedNll => 0.0,
        };
        let logits = tokens * v;
        // The held output outlives backward: the loops that keep it drop it
        // when the next iteration rebinds it (or `del`s it after the step, as
        // calibration/measure.py does), so it sits beside the optimizer's
        // step. Replayed through the allocator (calibration/allocator_replay.py)
        // and measured: Qwen2.5-7B in bf16, 2 × 4096, checkpointed, peaked in
        // the first step at weights, gradients, states, AdamW's temporaries and
        // the 2.3 GiB of 16-bit logits, 73.5 GiB.
        let step = match self.plan.training.loss {
            Loss::Standard | Loss::ChunkedKeep => held * logits,
            _ => 0.0,
        };
        let blocks = if self.compiled_tied_head_keeps_logits() {
            (FP32 + held) * logits
        } else {
            0.0
        };
        LogitsBytes {
            forward: final_norm + fwd * logits + fused_chunk + tiled_fwd + entropy_chunk,
            loss_backward: final_norm + bwd * logits + fused_chunk + tiled_loss_bwd,
            head_backward: final_norm + head * logits + fused_chunk + tiled_head_bwd,
            norm_backward: self.final_norm_backward(tokens) + blocks,
            blocks,
            step,
        }
    }

    /// DPO through the model's logits (the standard loss under
    /// [`Objective::Dpo`]), as TRL's `DPOTrainer._compute_loss` ran it from
    /// 0.29.0 to 1.13.0 without Liger (trl 1.13.0 `trainer/dpo_trainer.py`):
    /// the policy's logits and their per-token log-probabilities
    /// (`selective_log_softmax`), the reference's logits under `no_grad`, the
    /// sigmoid loss, then the metrics it logs from the policy's logits —
    /// their entropy over a flattened copy, the mean chosen and rejected
    /// logits. (trl 1.14.0 computes the log-probabilities with a Triton
    /// kernel, 1.15.0 with its fused LM head, [`Loss::TiledLogprob`].)
    /// Replayed through the caching allocator with trl 1.13.0's code
    /// (`calibration/allocator_replay.py --trl-dpo-logits`).
    fn dpo_logits(&self) -> bool {
        self.plan.training.objective == Objective::Dpo && !self.compiled_loss()
    }

    /// ORPO, SimPO or CPO through the model's logits, without a reference
    /// model or an entropy: as TRL's `ORPOTrainer` and `CPOTrainer` run them
    /// (and the tools that call them: axolotl, Unsloth) — the chosen rows'
    /// NLL over a contiguous copy of their shifted logits, then every row's
    /// per-token log-probabilities — and as LLaMA-Factory's
    /// `CustomDPOTrainer` runs `pref_loss: orpo` or `simpo` (its DPO forward,
    /// a whole log-softmax of the fp32 logits, without the reference pass:
    /// `use_ref_model` false, llamafactory 0.9.5
    /// `hparams/finetuning_args.py`). Both hold [`ORPO_LOGITS_FWD_TENSORS`]
    /// logits-sized tensors at the forward's end and
    /// [`ORPO_LOGITS_BWD_TENSORS`] in backward (replayed,
    /// `calibration/allocator_replay.py --trl-orpo-kernel` and
    /// `--llamafactory-orpo`).
    fn orpo_logits(&self) -> bool {
        self.plan.training.objective == Objective::Orpo && !self.compiled_loss()
    }

    /// KTO through the model's logits as LLaMA-Factory's `CustomKTOTrainer`
    /// runs it (its own `forward`: the logits upcast in any precision, a
    /// whole log-softmax gathered; the KL completions' forward under
    /// `no_grad`; the desirable and undesirable rows' logits copied by
    /// boolean mask; the reference's passes under `no_grad`):
    /// [`KTO_LOGITS_FWD_TENSORS`] at the forward's peak, backward as its
    /// reference-free DPO code's ([`ORPO_LOGITS_BWD_TENSORS`]). TRL's own KTO
    /// up to 1.14 (from 1.15 its fused head) is not replayed and keeps the
    /// causal-LM loss's count.
    fn kto_logits(&self) -> bool {
        self.plan.training.objective == Objective::Kto
            && self.plan.framework == Framework::LlamaFactory
            && !self.compiled_loss()
    }

    /// Bytes per logit of the logits DPO reads ([`Self::dpo_logits`]): fp32
    /// where Accelerate's native AMP wraps the model's forward in
    /// `convert_outputs_to_fp32` (the Trainer's `bf16=True`, TRL's default;
    /// [`Self::held_logit_bytes`]), a head's fp32 bias promotes them
    /// ([`Self::promoted_logits`]) or the model computes in fp32; the compute
    /// dtype otherwise (transformers ≥ 4.45 upcasts only for its own loss,
    /// which DPO does not ask for: it passes no labels). LLaMA-Factory's DPO
    /// upcasts them itself whatever the precision (llamafactory 0.9.5
    /// `train/dpo/trainer.py` `concatenated_forward`:
    /// `.logits.to(torch.float32)`; replayed with its code,
    /// `calibration/allocator_replay.py --llamafactory-dpo`).
    fn dpo_logit_bytes(&self) -> f64 {
        let f = self.plan.framework;
        let wrapped =
            self.runs_autocast() && (f.trains_through_trainer() || f == Framework::HfAccelerate);
        if wrapped || f == Framework::LlamaFactory || self.promoted_logits() {
            FP32
        } else {
            self.e
        }
    }

    /// The LM head's weights are stored in fp32: the model's stored dtype,
    /// trained in fp32 or a frozen fp32 base.
    fn lm_head_fp32(&self) -> bool {
        if self.full_finetune() {
            self.trainable_weight_bytes() >= FP32
        } else {
            self.base_bits().is_some_and(|b| b >= 32)
        }
    }

    /// An fp32 LM head whose matmul autocast runs in the 16-bit `compute`
    /// dtype: TRL's own heads cast it piece by piece
    /// ([`Self::tiled_logprob_moments`], [`Self::chunked_nll_moments`]).
    fn casts_an_fp32_head(&self, compute: f64) -> bool {
        self.lm_head_fp32() && self.runs_autocast() && compute < FP32
    }

    /// TRL's chunked NLL over `tokens` positions of a `v`-wide vocabulary
    /// ([`Loss::ChunkedNll`]; trl 1.7.0–1.14.2 `_chunked_cross_entropy_loss`):
    /// at its forward's end, at its backward and as that returns. Forward: the
    /// packed copy of the final hidden states (in the residual stream's
    /// dtype; the shifted, flattened copy it is packed from is freed as it is
    /// made) and one chunk's fp32 tensors ([`CHUNKED_NLL_CHUNK_FP32_TENSORS`]).
    /// Backward: the same, recomputed chunk by chunk, beside the hidden
    /// states' gradient that the chunks' slices accumulate. Under autocast an
    /// fp32 head is cast for each chunk's matmul, one cast alive at a time.
    fn chunked_nll_moments(&self, tokens: f64, v: f64, h: f64) -> (f64, f64, f64) {
        let packed = tokens * h * self.residual_bytes() / self.rep;
        let chunk = CHUNKED_NLL_TOKENS.min(tokens) * v * CHUNKED_NLL_CHUNK_FP32_TENSORS * FP32;
        // An fp32 head under autocast: each chunk's matmul casts all of it
        // (cached through a trained head's forward, saved by the recomputed
        // chunk's matmul for its backward), one cast alive at a time.
        let head_cast = if self.casts_an_fp32_head(self.e) {
            v * h * self.e
        } else {
            0.0
        };
        let chunk = chunk + head_cast;
        let fwd = packed + chunk;
        let bwd = fwd + packed;
        (fwd, bwd, packed + packed)
    }

    /// TRL's fused LM head over `tokens` positions of a `v`-wide vocabulary
    /// slice ([`Loss::TiledLogprob`]; trl 1.16.0 `ChunkedLogProbFunction`):
    /// what it holds at the end of its forward, as its backward runs, and as
    /// that backward returns.
    ///
    /// Forward: the final hidden states compacted to the labelled positions
    /// (`hidden_states[mask]`, a copy in the residual stream's dtype, saved
    /// for backward; every position counted, as a packed or pre-training batch
    /// labels them all), one tile of logits in the compute dtype, and the
    /// per-tile casts of the hidden rows and of the head's rows where they are
    /// not in it (fp32 under autocast). Backward: the same tile and casts,
    /// the input's gradient accumulated in fp32 (`grad_hidden`) and, when the
    /// head trains, its fp32 gradient accumulator (`grad_weight`); it returns
    /// their casts to the tensors' dtypes, the fp32 ones and the tile still
    /// alive (the head's cast is the gradient the step keeps, counted with
    /// the other gradients; an fp32 head's is its accumulator). Replayed
    /// through the caching allocator with trl 1.16.0's own code on the meta
    /// device (`calibration/allocator_replay.py --trl-fused-head` and
    /// `--trl-dpo`).
    fn tiled_logprob_moments(&self, tokens: f64, v: f64, h: f64) -> (f64, f64, f64) {
        let hidden = self.residual_bytes();
        let compute = self.e;
        let rows = tokens.min(TILED_LOGPROB_TOKENS);
        let cols = v.min(TILED_LOGPROB_VOCAB);
        let compact = tokens * h * hidden / self.rep;
        let tile = rows * cols * compute;
        let hidden_cast = if hidden > compute {
            rows * h * compute / self.rep
        } else {
            0.0
        };
        let head_trains = self.full_finetune();
        // Each tile's rows of an fp32 head are cast under autocast.
        let head_cast = if self.casts_an_fp32_head(compute) {
            cols * h * compute
        } else {
            0.0
        };
        let accumulator = if head_trains { v * h * FP32 } else { 0.0 };
        let grad_hidden = tokens * h * FP32 / self.rep;
        let fwd = compact + tile + hidden_cast + head_cast;
        let loss_bwd = fwd + grad_hidden + accumulator;
        // The returned casts: `.to(torch.float32)` of an fp32 accumulator is
        // the accumulator itself, so an fp32 head's gradient (counted with
        // the gradients) is its accumulator and fp32 hidden states get theirs.
        let hidden_grad_cast = if hidden < FP32 {
            tokens * h * hidden / self.rep
        } else {
            0.0
        };
        let head_accumulator = if self.lm_head_fp32() {
            0.0
        } else {
            accumulator
        };
        // The tile and the last tile's casts are the backward's locals, alive
        // as it returns.
        let head_bwd = fwd + grad_hidden + hidden_grad_cast + head_accumulator;
        (fwd, loss_bwd, head_bwd)
    }

    /// The unchunked loss runs inside the compiled graph: a compiled
    /// transformers model whose loss upcasts its logits
    /// ([`Framework::compile_covers_unchunked_loss`]).
    fn compiled_loss(&self) -> bool {
        self.plan.training.compile
            && self.plan.training.loss == Loss::Standard
            && self.plan.training.fp32_upcasts
            && self.plan.framework.compile_covers_unchunked_loss()
    }

    /// A compiled model whose trained LM head is tied to its embedding keeps
    /// the loss's logit-sized buffers (and the held output) through the
    /// blocks' backward: the shared weight's gradient, the head's product
    /// plus the embedding's, is made at the end of the compiled backward
    /// graph, and the logits' gradient it reads lives until then. Measured on
    /// the H200 (calibration/h200-2026-12-04, the allocator's history at each
    /// peak): compiled and checkpointed, Llama-3.2-1B and -3B (tied) peak
    /// inside a block's recomputed attention with the three 4008 MiB buffers
    /// of 4 × 4096 × 128,256 logits still alive (23.28 and 37.87 GiB
    /// allocated), while the same 1B shape with an untied head peaks at the
    /// head's backward and is 1.4 GiB lower despite its 0.26 B more
    /// parameters. Eager runs free them as the head's backward ends. Only
    /// seen with recomputation: the compiled tied runs without checkpointing
    /// (Llama-3.2-1B bf16 and amp-bf16, GPT-2 fp32; calibration/h200-2026-11-30)
    /// peak at the loss's backward, 2.2–6.5 % under what keeping the logits
    /// beside a block's backward with all its activations would give.
    fn compiled_tied_head_keeps_logits(&self) -> bool {
        self.compiled_loss()
            && self.trains_tied_head()
            && self.plan.training.checkpointing != Checkpointing::None
    }

    /// The LM head is the embedding's weight, and it trains.
    fn trains_tied_head(&self) -> bool {
        self.m.tied_embeddings && self.full_finetune()
    }

    /// A loss whose log-softmax reads fp16 logits straight into fp32 and
    /// hands back an fp16 gradient: CUDA's `log_softmax` given `dtype=float32`
    /// on an fp16 input takes `_log_softmax(input, dim, half_to_float=true)`
    /// (`aten/src/ATen/native/SoftMax.cpp`; a bf16 input is converted to fp32
    /// first), so under fp16 autocast a loss that does not upcast its logits
    /// itself — transformers' masked-LM heads (`BertForMaskedLM` calls
    /// `CrossEntropyLoss` on the 16-bit scores; its causal LMs call `.float()`
    /// first), and T5's, whose head has no bias — keeps no fp32 copy or
    /// gradient of them; the same mechanism as [`Ctx::loss_bytes`] in pure
    /// 16-bit. Not the BART lineage, whose fp32 `final_logits_bias` promotes
    /// the scores first ([`ModelSpec::logits_bias`]). Replayed
    /// (calibration/allocator_replay.py) and measured: BERT-large, amp-fp16,
    /// 32 × 512, 26.038 GiB allocated alike; replayed: T5-base and FLAN-T5-base
    /// keep 0.243 GiB (the fp16 scores of 8 × 512 × 32,128) less under fp16
    /// than under bf16 autocast, BART-large the same.
    fn half_to_float_loss(&self) -> bool {
        self.prec == Precision::AmpFp16 && self.loss_reads_head_scores()
    }

    /// The loss reads the head's scores in the dtype the head made them:
    /// transformers' masked-LM and encoder–decoder heads call
    /// `CrossEntropyLoss` without `.float()` ([`Self::loss_bytes`]), unless
    /// an fp32 bias buffer has promoted them ([`Self::promoted_logits`]).
    /// Its causal LMs' loss upcasts first, and so does the masked-LM loss of
    /// its rotary encoders (ModernBERT, EuroBERT: `self.loss_function`, that
    /// is `ForMaskedLMLoss`, whose first line is `logits.float()`; BERT,
    /// RoBERTa, XLM-R and DistilBERT call `CrossEntropyLoss` themselves).
    /// Replayed (`calibration/allocator_replay.py --families`, transformers
    /// 5.25): ModernBERT-base at 32 × 512 with checkpointing, allocated
    /// −37.5 % with the 16-bit loss, −0.1 % with the fp32 one.
    fn loss_reads_head_scores(&self) -> bool {
        match self.m.arch {
            Arch::Decoder => false,
            Arch::Encoder if self.m.positions == Positions::Rotary => false,
            _ => !self.promoted_logits(),
        }
    }

    /// The final norm's backward moment over `tokens` positions when it is an
    /// RMSNorm written as fp32 tensor ops (transformers' `LlamaRMSNorm`,
    /// LitGPT's and torchtune's `RMSNorm`: `x.float()`, `pow(2).mean()`,
    /// `rsqrt`, the products): its saved fp32 input and
    /// [`FINAL_NORM_BACKWARD_FP32_TENSORS`] fp32 gradients; nothing that
    /// outweighs the loss's moments for a fused norm (Liger's, Megatron's,
    /// Inductor's) or a LayerNorm (one kernel, its input's gradient).
    fn final_norm_backward(&self, tokens: f64) -> f64 {
        if !self.rmsnorm_as_tensor_ops() || self.norm_saved_bytes() != FP32 {
            return 0.0;
        }
        (FP32 + FINAL_NORM_BACKWARD_FP32_TENSORS * FP32) * tokens * self.m.hidden as f64 / self.rep
    }

    /// Bytes per logit of the 16-bit tensor beside an fp32 copy of it: none
    /// when the run is fp32 (`.float()` returns the tensor itself).
    fn beside_fp32(&self) -> f64 {
        if self.e < FP32 {
            self.e
        } else {
            0.0
        }
    }

    /// The LM head's weight gradient as autograd makes it in a full
    /// fine-tune, when no other term holds it: the gradients are not all
    /// alive already (accumulation, zeroed-not-freed, ZeRO-3's buffer), the
    /// optimizer does not step in backward ([`Self::optim_in_bwd_head_grads`])
    /// and the parameters are not sharded (ZeRO-3/FSDP count a unit's
    /// unsharded gradients with their buffers). It exists from the head's
    /// backward (from the loss forward with a fused linear-cross-entropy, which
    /// accumulates `grad_weight` chunk by chunk there: liger_kernel
    /// `fused_linear_cross_entropy_forward`) until the step.
    fn head_grad_in_backward(&self, s: u32, grads_alive: bool) -> f64 {
        if grads_alive
            || !self.full_finetune()
            || self.plan.training.optimizer_in_backward
            || self.shards_params()
        {
            return 0.0;
        }
        self.lm_head_params(s) * self.grad_bytes()
    }

    /// Bytes per logit of the output the loop holds ([`Self::loop_holds_logits`]).
    /// Accelerate's own autocast (`mixed_precision="fp16"/"bf16"` without
    /// DeepSpeed, which does its own mixed precision) wraps the model's
    /// forward in `convert_outputs_to_fp32`, so the held logits are an fp32
    /// copy of the 16-bit ones (accelerate 1.15.0 `accelerator.py`
    /// `prepare_model`: `model.forward = convert_outputs_to_fp32(
    /// autocast_context(...))` under `native_amp`, which `__init__` leaves off
    /// for `DistributedType.DEEPSPEED`). Measured on the H200 (set 5):
    /// Llama-3.2-1B, batch 4 × 2048, peaked 1.96 GiB (2 B per logit) above
    /// the same loop under plain autocast.
    ///
    /// Scores a head's bias buffer promotes from 16 bits to fp32 are held as
    /// fp32 too ([`Self::promoted_logits`]).
    fn held_logit_bytes(&self) -> f64 {
        // (Not under DeepSpeed, which runs no autocast: [`Self::runs_autocast`].)
        let accelerate_fp32 =
            self.plan.framework == Framework::HfAccelerate && self.runs_autocast();
        if accelerate_fp32 || self.promoted_logits() {
            FP32
        } else {
            self.e
        }
    }

    /// The head's fp32 bias buffer promotes autocast's 16-bit scores to fp32
    /// ([`ModelSpec::logits_bias`]: `lm_logits = lm_head(x) +
    /// final_logits_bias` in transformers' BART lineage): the output holds
    /// the fp32 sum, which is also the loss's input, so no `.float()` copy is
    /// made beside it. Replayed (`calibration/allocator_replay.py`):
    /// BART-large under bf16 or fp16 autocast, 16 × 512 with checkpointing,
    /// backward starts with four fp32 score-sized tensors (the sum, the
    /// log-softmax output and the two gradients), 11.711 GiB allocated.
    /// The buffer has the model's stored dtype: fp32 when the weights are
    /// (AMP's full training, an fp32 frozen base), 16-bit when the model was
    /// loaded or cast to 16 bits (a bf16 base under LoRA, DeepSpeed's
    /// `.half()`/`.bfloat16()` module), which adds in 16 bits.
    fn promoted_logits(&self) -> bool {
        if !self.m.logits_bias || !self.runs_autocast() {
            return false;
        }
        match self.base_bits() {
            None => self.trainable_weight_bytes() >= FP32,
            Some(bits) => bits >= 32,
        }
    }

    /// The loss is transformers' `ForCausalLMLoss` of 4.46 to 4.48
    /// ([`crate::plan::TransformersRelease::V4_46To4_48`]): a causal LM run
    /// in transformers' own model code (the frameworks that run the model's
    /// code, not a hand-written model's Python norms), its standard loss not
    /// compiled into the model, upcast to fp32. Inside that loss's forward
    /// the model's output (its head's 16-bit scores, whether or not the
    /// loop keeps them afterwards: the Trainer's `compute_loss` drops them
    /// only once `forward` has returned), the upcast, the shifted copy
    /// (`logits[..., :-1, :].contiguous()`) and the log-softmax's output are
    /// alive at once; the copy and the upcast are freed as the loss returns
    /// (nothing saves them: `contiguous`, slicing and `.float()` keep no
    /// input for backward, log-softmax keeps its output), so only the
    /// forward moment grows. With the Trainer's order that is 14 bytes per
    /// logit of 16-bit scores against the 12 of its backward's start
    /// (transformers 4.46.3 and 4.48.3 `loss/loss_utils.py`; 4.49.0 pads the
    /// labels instead and copies nothing).
    fn loss_copies_shifted_logits(&self) -> bool {
        self.plan.training.transformers.loss_copies_shifted_logits()
            && self.plan.training.fp32_upcasts
            && self.m.arch == Arch::Decoder
            && !self.m.python_norm
            && self.plan.framework.runs_the_models_own_code()
            && !self.compiled_loss()
    }

    /// A transformers model returns its loss and logits in one `ModelOutput`,
    /// and the loops written around it keep that output alive through backward
    /// (`outputs = model(**batch); loss = outputs.loss;
    /// accelerator.backward(loss)` in Accelerate's and PEFT's examples), so the
    /// 16-bit logits stay beside the loss's fp32 tensors. The Trainer's
    /// `compute_loss` returns only the loss, and hand-written models usually
    /// compute the loss in a function that returns only it. LitGPT's loops keep
    /// `logits` in scope through `fabric.backward` (litgpt/pretrain.py `fit`,
    /// finetune scripts), which only matters for the unchunked loss (the kept
    /// chunks are the logits). Measured on the H200: 14 bytes per logit at the
    /// start of backward for Llama-3.2-1B in bf16 (2 + 3 × 4).
    fn loop_holds_logits(&self) -> bool {
        (self.plan.training.fp32_upcasts
            && matches!(
                self.plan.framework,
                Framework::PlainPytorch | Framework::HfAccelerate
            ))
            || self.plan.framework == Framework::Litgpt
    }

    // ----- communication and runtime -------------------------------------------

    /// Buffers of the data-parallel runtime on stage `s` in forward and backward.
    fn comm_buffers(&self, s: u32) -> (f64, f64) {
        let p = &self.plan.parallel;
        let dp = p.dp();
        let trainable = self.stage_trainable(s);
        match p.sharding {
            // Megatron reduces in buckets that are views of its `main_grad`
            // buffers ([`Self::megatron_grad_buffer`]), counted as gradients.
            Sharding::Ddp | Sharding::Zero1 | Sharding::Zero2 if self.megatron_grad_buffer() => {
                (0.0, 0.0)
            }
            Sharding::Ddp if !p.gradient_as_bucket_view => {
                // DDP's flat buckets hold a second copy of every gradient unless
                // gradient_as_bucket_view=True (PyTorch #41954). The reducer
                // allocates them when the model is wrapped, whatever the world
                // size (`Reducer::initialize_buckets`, `at::empty` per bucket):
                // measured on the H200 on one rank (calibration/h200-2026-11-30,
                // set 4), Llama-3.2-1B amp-bf16 peaked 4.60 GiB = its 1.24 B fp32
                // gradients above the same loop without DDP.
                let g = trainable * self.grad_bytes();
                (g, g)
            }
            Sharding::Zero1 | Sharding::Zero2 if dp > 1 => {
                let bucket = self.deepspeed_bucket_elements();
                let b = bucket.min(trainable) * HALF;
                (b, ZERO_BUCKETS_IN_BACKWARD * b)
            }
            Sharding::FsdpFull | Sharding::FsdpGradOp | Sharding::Hsdp
                if p.pp > 1 && self.shard > 1.0 && self.plan.framework.pipelines_fsdp2_stages() =>
            {
                // PyTorch's pipeline schedules run every micro-batch's backward
                // of an FSDP2 stage with `set_requires_gradient_sync(False)` and
                // `set_reshard_after_backward(False)`, and reduce-scatter once
                // after the last (torch 2.11 `pipelining/stage.py`
                // `backward_maybe_with_nosync`, `perform_reduce_grad`); torchtitan
                // also keeps parameters gathered after forward under PP
                // (`fsdp_reshard_after_forward = "default"` → `not pp_enabled`,
                // torchtitan 0.3.0 `distributed/fsdp.py`). So the stage's
                // parameters stay gathered in the compute dtype through the
                // step's forwards and backwards, and each block's unsharded
                // gradient is kept, upcast to the reduce dtype, and accumulated
                // (`_fsdp_param.py` `to_accumulated_grad_if_needed`:
                // `unsharded_grad.to(self.reduce_dtype)`, fp32 under
                // torchtitan's `mixed_precision_reduce`). Those accumulators exist
                // at the end of a forward once a backward has run, i.e. when
                // the rank runs more forwards than it warms up with: 1F1B
                // `min(m, pp − s)` (`Schedule1F1B`), interleaved
                // `(v − 1)·pp + 2·(pp − 1 − s)` of its `v·m` (`_get_warmup_ops`).
                let gathered = self.gathered_stage_bytes(s);
                let accumulated = self.stage_trainable(s) * self.grad_bytes();
                let microbatches = self.pipeline_microbatches();
                let (forwards, warmup) = match p.pp_schedule {
                    PipelineSchedule::OneFOneB => (microbatches, p.pp.saturating_sub(s)),
                    PipelineSchedule::Interleaved => {
                        let v = p.virtual_stages.max(1);
                        (
                            microbatches.saturating_mul(v),
                            (v - 1)
                                .saturating_mul(p.pp)
                                .saturating_add(2 * p.pp.saturating_sub(1 + s)),
                        )
                    }
                };
                let forward = if forwards > warmup { accumulated } else { 0.0 };
                (gathered + forward, gathered + accumulated)
            }
            Sharding::Zero3 | Sharding::FsdpFull | Sharding::Hsdp if self.gathers_units() => {
                // Unsharded parameters of the current and prefetched unit
                // (one transformer block per unit), and in backward their gradients.
                // In bytes as gathered ([`Self::gathered_block_bytes`]); the
                // parameter counts DeepSpeed caps are elements of that dtype.
                let unit = self.block_params();
                let eb = self.gathered_param_bytes();
                let unit_bytes = self.gathered_block_bytes();
                let resident = if p.sharding == Sharding::Zero3 {
                    // DeepSpeed does not release a parameter reused within
                    // `stage3_max_reuse_distance` parameters and keeps at most
                    // `stage3_max_live_parameters` gathered (both 1e9 by default
                    // and in transformers' "auto" config). At the turn from
                    // forward to backward, block L−j is reused after about 2·j
                    // blocks, so the last block and those within half the reuse
                    // distance are still gathered; a single parameter larger
                    // than the cap (an embedding) is gathered whole.
                    let largest = if self.is_first(s) || self.is_last(s) {
                        self.m.embedding_params() as f64 / self.t
                    } else {
                        0.0
                    };
                    (unit_bytes + DEEPSPEED_MAX_REUSE_DISTANCE / 2.0 * eb)
                        .min(DEEPSPEED_MAX_LIVE_PARAMETERS * eb)
                        .min(self.gathered_stage_bytes(s))
                        .max(FSDP_UNITS_IN_FLIGHT * unit_bytes)
                        .max(largest * eb)
                } else {
                    FSDP_UNITS_IN_FLIGHT * unit_bytes
                };
                // Beyond the blocks: FSDP1's root unit (embeddings, final norm,
                // head) stays gathered from forward through backward, its
                // gradient whole until its reduce-scatter, the last
                // (`_post_forward_reshard`: "Do not free the root's parameters
                // in the post-forward for `FULL_SHARD`"). A framework that
                // keeps a loaded full copy ([`Self::load_kept`], LitGPT's
                // measured term) already counts those weights. The head's own
                // FSDP2 unit ([`Framework::fsdp_head_is_own_unit`]) is in flight
                // beside one block at the loss, with its gradient.
                let trains = if self.full_finetune() { 1.0 } else { 0.0 };
                let (edges, edge_grads) = if p.sharding == Sharding::Zero3 {
                    (0.0, 0.0)
                } else if self.plan.framework.fsdp_head_is_own_unit() {
                    let head = self.lm_head_params(s); // zero before the last stage
                    (
                        (unit_bytes + head * eb - resident).max(0.0),
                        trains * (head - unit).max(0.0),
                    )
                } else if self.load_kept(s) == 0.0 {
                    let e = self.edge_params(s);
                    (e * eb, trains * e)
                } else {
                    (0.0, 0.0)
                };
                let gathered = resident + edges;
                let (grads, edge_grads) = if self.gathers_on_one_rank() {
                    (0.0, 0.0)
                } else if self.base_bits().is_some() {
                    (0.0, edge_grads)
                } else {
                    (unit * self.grad_bytes(), edge_grads)
                };
                (gathered, gathered + grads + edge_grads * self.grad_bytes())
            }
            Sharding::FsdpGradOp if self.gathers_units() => {
                // SHARD_GRAD_OP keeps every unit gathered from its forward to
                // its backward ([`Self::shards_params`]): at the end of forward
                // the whole stage is unsharded, in the compute dtype, in
                // buffers of its own beside the shard (FSDP1 all-gathers into
                // `_full_param_padded`, FSDP2 into `all_gather_output`). In
                // backward a unit's unsharded gradient waits for its
                // reduce-scatter, and the root unit's (embeddings, final norm,
                // head) from the head's backward until the last, as under
                // FULL_SHARD.
                let gathered = self.gathered_stage_bytes(s);
                let grads = if self.base_bits().is_some() || self.gathers_on_one_rank() {
                    0.0
                } else {
                    (self.block_params() + self.edge_params(s)) * self.grad_bytes()
                };
                (gathered, gathered + grads)
            }
            _ => (0.0, 0.0),
        }
    }

    /// Whether the parameter-sharding runtime gathers its units into buffers
    /// of their own: across ranks, from the CPU when parameters are
    /// offloaded, and on a single rank under FSDP2, which keeps sharding
    /// there (`fully_shard` copies each unit out of its all-gather into new
    /// unsharded parameters whatever the world size) where FSDP1 switches to
    /// `NO_SHARD` (torch `fsdp/_init_utils.py`: "FSDP is switching to use
    /// `NO_SHARD` … since the world size is 1"). Measured on the H200 on one
    /// rank (calibration/h200-2026-11-30 set 5, h200-2026-12-04 set 7):
    /// Llama-3.2-1B and -3B under FSDP2 peaked their embedding's bf16 copy
    /// (0.49 and 0.73 GiB) above the same model unsharded, Llama-3.1-8B
    /// with LoRA its embedding and head's (1.96 GiB), and without resharding
    /// after forward every block's bf16 copy (+1.81 GiB, 1.24 B parameters).
    fn gathers_units(&self) -> bool {
        let p = &self.plan.parallel;
        self.shard > 1.0
            || self.offload.params_offloaded()
            || (matches!(
                p.sharding,
                Sharding::FsdpFull | Sharding::FsdpGradOp | Sharding::Hsdp
            ) && self.plan.framework.uses_fsdp2())
    }

    /// FSDP2 gathering on a single rank with its parameters on the GPU
    /// ([`Self::gathers_units`]): the measured peaks there hold the gathered
    /// copies and no unit's unsharded gradient beside the (whole) sharded
    /// ones — with them counted as across ranks, the four one-rank FSDP2 runs
    /// on the H200 came out 2.6–3.5 % over their allocated peaks, without them
    /// −0.0 … +2.6 %.
    fn gathers_on_one_rank(&self) -> bool {
        self.shard <= 1.0 && !self.offload.params_offloaded()
    }

    /// DeepSpeed ZeRO-3 gathers a parameter whose partition lives on the CPU
    /// (`offload_param`) through a GPU copy of that partition: `all_gather_coalesced`
    /// passes `param.ds_tensor.to(device)` to the all-gather beside the new
    /// full-size `param_buffer` (deepspeed 0.8.1 and 0.17.5
    /// `runtime/zero/partition_parameters.py`), and the copy lives until the
    /// gather completes. The largest such fetch under live activations is the
    /// LM head's at the end of forward (the embedding's, at the start, has
    /// none beside it): its partition, once more, on the last stage.
    fn offloaded_fetch_copy(&self, s: u32) -> f64 {
        if self.plan.parallel.sharding != Sharding::Zero3 || !self.offload.params_offloaded() {
            return 0.0;
        }
        self.lm_head_params(s) * self.gathered_param_bytes() / self.shard
    }

    /// Bytes of one block (FSDP's unit) as FSDP or ZeRO-3 gathers it: its
    /// norms in the gathered dtype ([`Self::gathered_param_bytes`]) and its
    /// matrices likewise, or, for a quantized base, in the storage the
    /// sharding holds ([`Self::sharded_matrix_bytes`]: the packed codes, four
    /// times fewer bytes than 16-bit weights for NF4), which is what the
    /// all-gather moves and the unsharded buffer holds.
    fn gathered_block_bytes(&self) -> f64 {
        self.block_bytes_in(self.gathered_param_bytes())
    }

    /// Bytes of stage `s` gathered whole ([`Self::gathered_block_bytes`] for
    /// its blocks, the embedding and head in the gathered dtype).
    fn gathered_stage_bytes(&self, s: u32) -> f64 {
        self.stage_layers(s) * self.gathered_block_bytes()
            + self.edge_params(s) * self.gathered_param_bytes()
    }

    /// Bytes of a parameter gathered by FSDP or ZeRO-3, in the compute dtype:
    /// FSDP `MixedPrecision(param_dtype=bf16)` / FSDP2 `MixedPrecisionPolicy`
    /// and DeepSpeed gather 16-bit parameters; only plain fp32 training
    /// gathers fp32. DeepSpeed also communicates in that dtype, which its
    /// stage-3 IPG buckets hold ([`Self::zero3_ipg_bucket`]): fp16 or bf16 in
    /// those modes, else fp32 (deepspeed 0.19.8 `runtime/engine.py`
    /// `communication_data_type`; `runtime/zero/stage3.py` makes one
    /// `IPGBucketZ3` per communication dtype, its buffer
    /// `torch.empty(self.reduce_bucket_size, dtype=dtype)`). Measured on the
    /// H200 (calibration/h200-2026-12-04-deepspeed, Llama-2-70B blocks ×40, LoRA
    /// r8, `bf16`): 67,730 MiB allocated after `deepspeed.initialize` = the
    /// bf16 base and fp32 adapters (66,478) + 5e8 bf16 values (954) + the
    /// adapters' fp32 master (198) and bf16 gradient partition (99); BLOOMZ-7B1
    /// in fp32: 1,907 MiB, 5e8 fp32 values.
    fn gathered_param_bytes(&self) -> f64 {
        if self.prec == Precision::Fp32 {
            FP32
        } else {
            HALF
        }
    }

    /// `reduce_bucket_size` of a DeepSpeed run: the framework's fill-in.
    fn deepspeed_bucket_elements(&self) -> f64 {
        self.plan
            .framework
            .deepspeed_reduce_bucket_elements(self.m.hidden)
    }

    /// ZeRO-3's contiguous gradient (IPG) bucket: with `contiguous_gradients`
    /// (on by default) the stage-3 optimizer allocates `reduce_bucket_size`
    /// elements of the trainable parameters' dtype on the GPU when it is built,
    /// whatever the world size, the offload or the number of trainable
    /// parameters, and keeps it for the whole run (`__ipg_bucket_flat_buffer`
    /// in deepspeed/runtime/zero/stage3.py 0.8.3 and 0.14.4, `IPGBucket.buffer`
    /// in 0.17.5). Stage 1/2 allocate theirs per backward (`comm_buffers`).
    /// Seen in ../shared/fixtures/traces/ds_see_memory_02.txt (DeepSpeed 0.10,
    /// Accelerate's ZeRO-3 CPU-offload config, fp32 LoRA on bloomz-560m):
    /// "Reduce bucket size 500,000,000", then allocated memory grows from
    /// 3.04 to 4.92 GiB while the optimizer is built — 5e8 fp32 values are
    /// 1.86 GiB. Its elements are of the engine's communication dtype, the one
    /// it gathers in ([`Self::gathered_param_bytes`]), not the trainable
    /// parameters': fp32 adapters under `bf16` reduce through a bf16 bucket.
    fn zero3_ipg_bucket(&self, s: u32) -> f64 {
        if self.plan.parallel.sharding != Sharding::Zero3 || self.stage_trainable(s) <= 0.0 {
            return 0.0;
        }
        self.deepspeed_bucket_elements() * self.gathered_param_bytes()
    }

    /// NCCL communicators a rank joins (one per parallel dimension in use).
    fn communicators(&self) -> u64 {
        let p = &self.plan.parallel;
        let mut n = 0;
        if p.dp() > 1 && p.sharding != Sharding::DataParallel {
            n += 1;
        }
        for d in [p.tp, p.pp, p.cp, p.ep] {
            if d > 1 {
                n += 1;
            }
        }
        n
    }

    /// Outside the allocator: CUDA context, NCCL, other processes.
    fn runtime(&self) -> f64 {
        let r = &self.plan.runtime;
        ((r.cuda_context_mib
            + r.other_processes_mib
            + self.communicators() * NCCL_PER_COMMUNICATOR_MIB)
            * MIB) as f64
    }

    /// The cuBLAS workspaces in the allocator once the first matmuls ran
    /// ([`CUBLAS_HANDLES`] × [`CUBLAS_WORKSPACE_HOPPER_MIB`] or
    /// [`CUBLAS_WORKSPACE_MIB`]).
    fn cublas_workspaces(plan: &Plan) -> f64 {
        let per = if plan.gpu.is_hopper() {
            CUBLAS_WORKSPACE_HOPPER_MIB
        } else {
            CUBLAS_WORKSPACE_MIB
        };
        CUBLAS_HANDLES * per * MIB as f64
    }

    fn reserve_fraction(&self) -> f64 {
        if self.plan.runtime.expandable_segments {
            ALLOCATOR_RESERVE_FRACTION_EXPANDABLE
        } else if self.frees_in_reverse() {
            ALLOCATOR_RESERVE_FRACTION_FROZEN_NO_RECOMPUTE
        } else {
            ALLOCATOR_RESERVE_FRACTION
        }
    }

    /// Whether the step's large blocks are freed in the reverse of the order
    /// they were made ([`ALLOCATOR_RESERVE_FRACTION_FROZEN_NO_RECOMPUTE`]): a
    /// frozen base (an adapter trains), no recomputation (checkpointing
    /// frees each block's transients as the forward goes and makes them again
    /// in the backward, beside tensors of other sizes), no activation offload,
    /// one pipeline stage (1F1B frees a micro-batch's activations while the
    /// next one's forward allocates) and no ZeRO or FSDP, whose gathered
    /// parameters come and go between the activations.
    fn frees_in_reverse(&self) -> bool {
        let p = self.plan;
        !self.full_finetune()
            && p.training.checkpointing == Checkpointing::None
            && !p.training.activation_offload
            && p.parallel.pp == 1
            && matches!(
                p.parallel.sharding,
                Sharding::None | Sharding::DataParallel | Sharding::Ddp
            )
    }

    /// Host RAM and NVMe space one rank's offloaded states need: the most
    /// any of its pipeline stages needs ([`Self::offloaded_stage`]).
    fn offload_targets(&self) -> (Bytes, Bytes) {
        if !self.offload.any() {
            return (Bytes::ZERO, Bytes::ZERO);
        }
        let (host, nvme) = (0..self.plan.parallel.pp.max(1))
            .map(|s| self.offloaded_stage(s))
            .fold((0.0f64, 0.0f64), |(h, n), (hs, ns)| (h.max(hs), n.max(ns)));
        (Bytes::from_f64(host), Bytes::from_f64(nvme))
    }

    /// Host and NVMe bytes of stage `s`'s offloaded states on one rank, each
    /// in the dtype the runtime keeps it in:
    /// - the parameters as the sharding holds them ([`Self::weight_parts`]:
    ///   the shard in the stored dtype — fp32 for fp32 training, the packed
    ///   codes of a 4-bit base — not a fixed 16 bits); the quantized
    ///   matrices' scales stay on the GPU;
    /// - under FSDP, the gradients the runtime copies there and the torch
    ///   optimizer's states over the CPU shard (no master copy: the shard is
    ///   the master). FSDP1 pre-allocates a pinned gradient the size of
    ///   every flat parameter's shard, frozen or not (torch 2.11
    ///   `distributed/fsdp/_flat_param.py`: `flat_param._cpu_grad =
    ///   torch.zeros_like(flat_param._local_shard, device=cpu_device)`);
    ///   FSDP2 copies only the trainable parameters' sharded gradients
    ///   (`CPUOffloadPolicy`: "Sharded gradients are copied device-to-host
    ///   in backward");
    /// - under DeepSpeed's optimizer offload, an fp32 master partition (a
    ///   copy even of fp32 weights), the moments, and the gradient
    ///   partition: ZeRO-1/2 keep it fp32 beside a 16-bit staging copy of the
    ///   partition (deepspeed 0.19.8 `runtime/zero/stage_1_and_2.py`:
    ///   `weights_partition = ….clone().to(dtype=master_weights_and_grads_dtype)`,
    ///   `param_buffer_of_bit16_for_cpu_offload_groups`,
    ///   `single_partition_of_fp32_groups[i].grad`), ZeRO-3 in the
    ///   gradient-accumulation dtype, the model's by default
    ///   (`stage3.py` `grad_partitions_flat_buffer`, `converted.clone()`;
    ///   `engine.py` `get_data_types`);
    /// - elsewhere (Megatron's hybrid CPU optimizer, a single-GPU offloading
    ///   optimizer) an fp32 master, the moments and fp32 gradients.
    ///
    /// Checked against peft_docs_fsdp_70b-149 (FSDP1, CPU offload, NF4
    /// Llama-2-70B, two ranks on one host): "~107 GB CPU RAM" in all, where
    /// the two ranks' shards and gradients come to 72 GB (a 16-bit count of
    /// the shard alone gave 139 GB, more than the host used).
    fn offloaded_stage(&self, s: u32) -> (f64, f64) {
        let off = self.offload;
        let (mut host, mut nvme) = (0.0, 0.0);
        let mut put = |dev: OffloadDevice, bytes: f64, nvme_buffers: f64| match dev {
            OffloadDevice::None => {}
            OffloadDevice::Cpu => host += bytes,
            OffloadDevice::Nvme => {
                nvme += bytes;
                host += nvme_buffers.min(bytes);
            }
        };
        let sharding = self.plan.parallel.sharding;
        let w = self.trainable_weight_bytes();
        let at_rest = self.weight_parts(s).0;
        let trainable = self.stage_trainable(s)
            / if self.shards_optimizer() {
                self.shard
            } else {
                1.0
            };
        // The host's gradients: beside the optimizer's states (FSDP2,
        // DeepSpeed, the rest), or one per parameter shard (FSDP1).
        let (optimizer, fsdp1_grads) = if sharding.is_fsdp() {
            let states = trainable * self.optimizer_bytes_per_param(s);
            if self.plan.framework.uses_fsdp2() {
                (states + trainable * w, 0.0)
            } else {
                (states, at_rest)
            }
        } else {
            let grads = match sharding {
                Sharding::Zero1 | Sharding::Zero2 if !self.megatron_grad_buffer() => FP32 + w,
                Sharding::Zero3 => w,
                _ => FP32,
            };
            let states = self.optimizer_state_bytes_per_param(s);
            (trainable * (states + FP32 + grads), 0.0)
        };
        let sub_group = trainable.min(NVME_SUB_GROUP_ELEMENTS);
        put(
            off.optimizer,
            optimizer,
            NVME_OPTIMIZER_BUFFER_COUNT * sub_group * FP32,
        );
        put(
            off.params,
            at_rest + fsdp1_grads,
            NVME_PARAM_BUFFER_COUNT * NVME_PARAM_BUFFER_ELEMENTS * HALF,
        );
        (host, nvme)
    }

    // ----- phases ---------------------------------------------------------------

    /// The segments a checkpointed forward's blocks made for their
    /// transients, idle beside the loss: the reserve's floor from the end of
    /// the forward through the LM head's backward, for a frozen base trained
    /// with recomputation. Under checkpointing each block's forward makes
    /// every tensor it would save and frees them as it goes; the blocks after
    /// it make theirs in the segments it left, while the checkpoints they keep
    /// (each block's input) split those segments, so some are made again.
    /// The loss's tensors, the step's largest (logits-sized, fp32), fit none
    /// of them and get segments of their own, and a frozen base makes nothing
    /// parameter-shaped in backward that could fill them (a full fine-tune's
    /// gradients and optimizer states do, [`Self::stranded_loss_segments`]).
    /// What stays idle is about what a recomputed block makes again
    /// (`recomputed_block`, [`Self::activations`]): replayed through the
    /// caching allocator's rules (`calibration/allocator_replay.py`, LoRA r16
    /// on every linear, checkpointed, sixteen families), the free bytes at
    /// the allocated peak (the loss's backward) were 0.4 to 2.2 times it,
    /// median 0.9 (Pythia-1.4B 2,451 MiB for 1,765; OPT-1.3B 2,432 for 2,088;
    /// Falcon-7B 4,644 for 3,413; Gemma-2B 4,005 for 4,184; FLAN-T5-base 629
    /// for 1,614; BLOOM-1b7's eager scores 10,340 for 4,708), almost all in
    /// segments of the blocks' widest transient; the H200's FSDP2 LoRA run
    /// with CPU offload (calibration/h200-2026-12-04, `peak-fsdp2off-*.txt`)
    /// held 5,366 MiB of segments made by its blocks' forward (PEFT's LoRA
    /// layers, the base linears) beside 16,034 MiB made by the loss: 24,432
    /// MiB reserved over an 18,273 MiB allocated peak. Where the allocator's
    /// share of the phase is larger (a long vocabulary's logits), it stands.
    /// Not with expandable segments (pages, not blocks), activation offload
    /// (the blocks come back from the host), on a stage without the loss, or
    /// with a loss that makes no logits-sized tensor (chunked, fused; a
    /// classification head), whose pieces the idle segments can hold.
    /// The segment of TRL's SFT metrics' copy of the logits, idle beside the
    /// loss's backward: with the Trainer's loss `SFTTrainer.compute_loss`
    /// (TRL 0.16 to 1.6; 1.7 to 1.14 under a named "nll" `loss_type`) logs
    /// the token accuracy and, from about 0.22, the entropy from the
    /// model's shifted logits, copying them (`.contiguous()`, or
    /// `entropy_from_logits`'s `reshape`; trl 0.16.0–1.6.0
    /// `trainer/sft_trainer.py`). Under the Trainer's AMP the logits are
    /// Accelerate's fp32 conversion (`convert_outputs_to_fp32`), which takes
    /// the segment the loss's upcast just freed, so the copy — one position a
    /// sequence short of the logits — maps a segment of its own; the loss's
    /// backward makes logits-sized tensors, which fit it only where the
    /// caching allocator's 2 MiB rounding ([`ALLOCATOR_LARGE_ROUND`]) makes
    /// the two sizes one. Replayed (`calibration/allocator_replay.py
    /// --trl-sft-logits`, trl 1.6.0's code copied; the segment history):
    /// checkpointed LoRA under AMP, Qwen3-0.6B and Qwen2.5-1.5B (151,936
    /// entries) reserved 4.2 and 4.7 GiB over the count without it, Gemma-2-2B
    /// (256,000) 8.0, against copies of 4.6, 4.6 and 7.8 GiB; Llama-3.2-1B's
    /// and SmolLM2-360M's (128,256 and 49,152 entries × 4 sequences × 4 bytes,
    /// under 2 MiB a position) round to the logits' own size and were within
    /// 0.3 GiB. Only where the loss's segments are stranded anyway
    /// ([`Self::loss_strands_segments`]: an adapter, whose frozen base makes
    /// nothing parameter-shaped to fill them) under full checkpointing: in
    /// pure bf16 the 16-bit copy fits the freed fp32 upcast's segment, and
    /// without checkpointing the replays reused it.
    fn trl_metrics_copy_segment(&self, s: u32) -> f64 {
        let t = &self.plan.training;
        let applies = self.plan.framework == Framework::Trl
            && t.objective == Objective::Sft
            && t.loss == Loss::Standard
            && t.checkpointing == Checkpointing::Full
            && self.runs_autocast()
            && !self.compiled_loss()
            && self.loss_strands_segments(s);
        if !applies {
            return 0.0;
        }
        self.shifted_logits_apart(FP32)
    }

    /// The shifted logits (one position a sequence short) at `bytes` a
    /// logit, where the caching allocator's 2 MiB rounding
    /// ([`ALLOCATOR_LARGE_ROUND`]) makes their segment smaller than the full
    /// logits' — so that it cannot hold a full-sized tensor. That is certain
    /// once the position each sequence drops spans a rounding step (Qwen's
    /// 151,936 and Gemma's 256,000 entries over four fp32 sequences); under
    /// it the two sizes may round to one (Llama-3's 128,256 and SmolLM2's
    /// 49,152 did in the replays) and nothing is counted, so the term never
    /// falls as the batch or the sequence grows.
    fn shifted_logits_apart(&self, bytes: f64) -> f64 {
        let positions = self.logit_positions();
        let sequences = positions / self.decoder_s().max(1.0);
        let per_position = self.m.vocab as f64 / self.t * bytes;
        if sequences * per_position >= ALLOCATOR_LARGE_ROUND {
            (positions - sequences) * per_position
        } else {
            0.0
        }
    }

    /// The segments a reference-free preference loss's forward leaves that
    /// its backward's logits-sized tensors cannot use ([`Self::orpo_logits`]):
    /// TRL's ORPO makes its chosen half's contiguous copy and that half's
    /// log-softmax in segments of half the logits (one logits-sized tensor's
    /// worth, idle once the half's NLL has run backward), and wherever the
    /// caching allocator's 2 MiB rounding ([`ALLOCATOR_LARGE_ROUND`]) parts
    /// the shifted logits' size from the logits', a shifted tensor's segment
    /// cannot hold the full-sized gradient the shift's `slice_backward`
    /// makes. Replayed (`calibration/allocator_replay.py --trl-orpo-kernel`,
    /// `--llamafactory-orpo`, the segment history): Qwen3-0.6B (151,936
    /// entries), checkpointed LoRA in pure bf16, TRL's ORPO reserved four
    /// logits-sized segments and two halves over a peak of three tensors,
    /// LLaMA-Factory's four fp32 ones (and its dropped 16-bit output) over
    /// three.
    fn orpo_idle_segments(&self, s: u32) -> f64 {
        if !self.orpo_logits() || !self.loss_strands_segments(s) {
            return 0.0;
        }
        let l = self.dpo_logit_bytes();
        let halves = if self.plan.framework == Framework::LlamaFactory {
            0.0
        } else if l > self.e {
            // Under the Trainer's AMP one fp32 half fits the segment of the
            // 16-bit output dropped for the fp32 logits ([`Self::dropped_output`]).
            self.logits_tensor(l) / 2.0
        } else {
            self.logits_tensor(l)
        };
        halves + self.shifted_logits_apart(l)
    }

    fn idle_block_transients(&self, s: u32, recomputed_block: f64) -> f64 {
        if self.loss_strands_segments(s) {
            recomputed_block
        } else {
            0.0
        }
    }

    /// The segments a checkpointed forward's blocks made for their
    /// transients ([`Self::idle_block_transients`]), idle through the
    /// backward and the step of a full fine-tune whose head makes no
    /// logits-sized tensor — a classifier (a reward model): the checkpoints
    /// the forward kept split those segments (each block's output lands in
    /// the free part of one its transients left, so the next block's widest
    /// transient takes a new one), and nothing logits-sized comes to be
    /// stranded beside them as a language model's full fine-tune strands
    /// ([`Self::stranded_loss_segments`]). Replayed through the caching
    /// allocator's rules (`calibration/allocator_replay.py --classifiers`,
    /// checkpointed bf16 full fine-tunes): the reserve over the allocated
    /// peak was 0.15 to 1.6 times what a recomputed block makes, median 1.0
    /// (SmolLM2-360M: fifteen 80 MiB segments made by the first forward's
    /// MLPs; reserved −13.0 → −5.5 %, RoBERTa-large −11.4 → −5.5 %,
    /// Llama-3.2-1B −5.0 → +1.4 %; Gemma's eager blocks, whose recomputed
    /// scores the count includes, +3.7 → +13.3 %).
    fn idle_classifier_block_segments(&self, recomputed_block: f64) -> f64 {
        if self.full_finetune()
            && self.m.head == ModelHead::Classifier
            && !self.plan.runtime.expandable_segments
        {
            recomputed_block
        } else {
            0.0
        }
    }

    /// The segment of the 16-bit logits a loop drops before backward, idle
    /// at the loss's backward: the Trainer's `compute_loss` returns only the
    /// loss, so the model's output is freed as backward starts
    /// ([`Self::loop_holds_logits`]), but the caching allocator keeps its
    /// segment, and the loss's backward makes only fp32 logits-sized
    /// tensors (the upcast's gradients), which it cannot hold; the first
    /// tensor it fits, the logits' own 16-bit gradient, comes at the head's
    /// backward. Replayed through the allocator's rules
    /// (`calibration/allocator_replay.py`'s loop with the output deleted
    /// before `loss.backward()`, the Trainer's order; torch 2.15,
    /// transformers 5.24, peft 0.21.2): the reserved peak stays where the
    /// loop holding the output put it while the allocated peak falls by the
    /// logits, so the reserve over it grows by exactly their bytes —
    /// Llama-3.1-8B LoRA 4 × 2048 checkpointed +1.957 GiB (29.357 allocated
    /// as the H200's Trainer run measured 29.36, 33.658 reserved against its
    /// 34.11), Llama-3.2-1B 8 × 2048 +3.914 (and under autocast), Pythia
    /// +1.535, Gemma-2B +7.812, Qwen3-0.6B +4.637, Falcon-7B +1.984, GPT-2
    /// large +0.768, OPT-1.3B and Pythia without checkpointing +0.768. None
    /// where the loss's tensors are no wider than the logits: fp32 logits
    /// (Llama-3.2-1B in fp32, +0.000), or a loss in the logits' dtype
    /// (T5's and BART's bf16 cross-entropy, +0.000). A full fine-tune is left
    /// to [`Self::stranded_loss_segments`] (the measured Trainer runs that
    /// train every weight sit 2–7 % above their reserved peak without it).
    /// Only on one GPU, `nn.DataParallel`, DDP and ZeRO-1/2 (which over a
    /// frozen base flattens only the adapters): ZeRO-3 and FSDP free large
    /// segments on the default stream as they shard and move the
    /// model at start-up, and the logits are carved from those — the H200's
    /// ZeRO-3 and FSDP1 LoRA runs (the Trainer's order too) list no segment
    /// of the logits' size at their reserved peak (`peak-ds3-*.txt`,
    /// `peak-fsdp1-*.txt`: only the loss's three fp32 ones, beside
    /// start-up's), and sat within 2 % of it without this term (+4 to +6 %
    /// with it). The allocator's share of the phase, where larger, stands (a
    /// run without checkpointing whose activations dwarf the logits).
    fn dropped_logits_segment(&self, s: u32) -> f64 {
        let unsharded = matches!(
            self.plan.parallel.sharding,
            Sharding::None | Sharding::DataParallel | Sharding::Ddp
        );
        // ZeRO-1/2 flattens only what trains: over a frozen base its
        // start-up segments ([`Self::zero12_flatten_cache`]) are the
        // adapters', at most their partition in fp32, which the logits
        // outgrow as they outgrow them.
        let small_start_up = || {
            self.zero12() && self.stage_trainable(s) / self.shard * FP32 < self.loss_logits_tensor()
        };
        // ZeRO-3 with everything on the host builds the model under
        // `zero.Init`, each parameter partitioned to the host as it is made:
        // start-up leaves a module's worth of segments (2,258 MiB for the
        // H200's Llama-3.2-3B, `peak-ds3off-l3b-*.txt`, beside its 4,008 MiB
        // logits, which mapped their own), and the GPU makes nothing
        // parameter-shaped to fill theirs, a full fine-tune included.
        let zero3_on_host = self.plan.parallel.sharding == Sharding::Zero3
            && self.offload.params_offloaded()
            && self.offload.optimizer_offloaded();
        if zero3_on_host || (self.loss_strands_segments(s) && (unsharded || small_start_up())) {
            self.dropped_output(s)
        } else {
            0.0
        }
    }

    /// The 16-bit logits a loop drops before backward on the last stage,
    /// when the loss works on wider logits-sized tensors that cannot reuse
    /// their segment ([`Self::dropped_logits_segment`] says where that
    /// segment stays idle); zero otherwise.
    fn dropped_output(&self, s: u32) -> f64 {
        let logits = if self.promoted_logits() { FP32 } else { self.e };
        // DPO through the model's logits: under the Trainer's AMP the
        // policy's and the reference's 16-bit outputs are each dropped for
        // their fp32 copies, and the policy's segment, split by the small
        // tensors of its log-probabilities, no longer holds the reference's:
        // two idle segments beside the four fp32 tensors of backward (the
        // allocator's replay of the AMP LoRA runs, `--trl-dpo-logits`).
        // Without a reference pass (precomputed, or a reference-free loss)
        // only the policy's output is dropped.
        let (outputs, wider) = if self.dpo_logits() && !self.plan.training.precompute_ref {
            (DPO_DROPPED_OUTPUTS, self.dpo_logit_bytes() > logits)
        } else if self.dpo_logits() || self.orpo_logits() {
            (1.0, self.dpo_logit_bytes() > logits)
        } else {
            let wider = !self.compiled_loss()
                && !self.defaults().inplace_cross_entropy
                && !self.half_to_float_loss()
                && !self.loop_holds_logits()
                && self.loss_bytes() > logits;
            (1.0, wider)
        };
        let dropped = wider
            && self.is_last(s)
            && self.plan.training.loss == Loss::Standard
            && self.m.head == ModelHead::Lm
            && !self.plan.runtime.expandable_segments;
        if dropped {
            outputs * self.logits_tensor(logits)
        } else {
            0.0
        }
    }

    /// The loss's segments stranded by the first step, which every later
    /// step's loss reserves again: the segments of `L` bytes (one upcast
    /// logits tensor) the optimizer's states land in — `states + L/2`, the
    /// segments a run of that many bytes touches when it begins halfway into
    /// one, at least one segment and at most the loss's
    /// [`LOSS_STANDARD_TENSORS`]. The replays counted one segment for states
    /// of 0.3 and 0.6 `L`, about two for 1.2 and 1.5 `L`, three for 6 `L`; a
    /// whole number of segments, `⌈states / L⌉·L`, fits them too but falls as
    /// the sequence grows past a multiple of the states, where this grows
    /// with it.
    ///
    /// The mechanism, from `calibration/allocator_replay.py` (each H200 run's
    /// allocations replayed through the caching allocator's rules,
    /// `c10/cuda/CUDACachingAllocator.cpp`: best fit within a pool, blocks
    /// split, segments never returned; it reproduces the H200 runs'
    /// `max_memory_reserved` within 0.6 % for 24 of 33): the fp32 loss
    /// tensors are the step's largest allocations, so the first step gives
    /// each a segment of its own. Under full checkpointing, once they are
    /// freed those segments are the only large free blocks, so best fit puts
    /// the gradients and then the optimizer's states, made by the first step,
    /// into them; a state lives on, and the second step's loss finds no whole
    /// block and maps its segments again. Qwen2.5-7B, 2 × 4096, checkpointed:
    /// 73.5 GiB allocated, 87.8 reserved (measured and replayed alike), three
    /// 4.6 GiB fp32 logits tensors more than the first step's peak. Only a
    /// full fine-tune's states stray there (an adapter's, under 1 MiB a
    /// tensor, are in the small pool), only the eager standard loss makes
    /// logits-sized tensors, expandable segments map pages, not blocks, and
    /// only one GPU, `nn.DataParallel` and DDP make the gradients and states
    /// on the loss's stream: ZeRO and FSDP make them from communication
    /// buffers on streams of their own, whose blocks the allocator keeps
    /// apart (the H200's FSDP2 Llama-3.2-3B reserved 12.5 GiB over its
    /// allocated peak where this term would add 23.5).
    fn stranded_loss_segments(&self, s: u32, states: f64) -> f64 {
        let t = &self.plan.training;
        if !matches!(
            self.plan.parallel.sharding,
            Sharding::None | Sharding::DataParallel | Sharding::Ddp
        ) {
            return 0.0;
        }
        let standard = t.loss == Loss::Standard
            && !t.compile
            && !self.defaults().inplace_cross_entropy
            && self.m.head == ModelHead::Lm;
        if self.plan.runtime.expandable_segments
            || !self.is_last(s)
            || !standard
            || t.checkpointing != Checkpointing::Full
            || !self.full_finetune()
            || self.paged_optimizer()
            || states <= 0.0
        {
            return 0.0;
        }
        // DPO's logits-sized tensors are its logits, in the dtype it reads
        // them in ([`Self::dpo_logits`]): 16-bit in a pure-bf16 run (the
        // replayed full fine-tunes, `--trl-dpo-logits`, within −6.2 … +6.6 %
        // reserved with them; −11.2 … +0.7 % without the term, up to +16 %
        // counting fp32 ones).
        let l = if self.dpo_logits() || self.orpo_logits() {
            self.logits_tensor(self.dpo_logit_bytes())
        } else {
            self.loss_logits_tensor()
        };
        if l <= 0.0 {
            return 0.0;
        }
        (states + l / 2.0).max(l).min(LOSS_STANDARD_TENSORS * l)
    }

    /// The backward's reserve raised to what the second step's loss needs:
    /// what the first step reserved at its own peak — its forward or backward
    /// without the states it had not yet made, with the allocator's share, or
    /// its optimizer step, whose parameter-shaped tensors split the blocks
    /// backward freed (the replays reserved within 0.5 % of allocated there) —
    /// plus [`Self::stranded_loss_segments`].
    fn reserve_stranded_loss_segments(
        &self,
        s: u32,
        backward: &mut PhaseEstimate,
        forward: &PhaseEstimate,
        step: &PhaseEstimate,
        states: f64,
    ) {
        let stranded = self.stranded_loss_segments(s, states);
        if stranded <= 0.0 {
            return;
        }
        let frac = 1.0 + self.reserve_fraction();
        let before_states = |p: &PhaseEstimate| (p.counters.allocated.as_f64() - states) * frac;
        let first_step = before_states(forward)
            .max(before_states(backward))
            .max(step.counters.allocated.as_f64());
        let needed = Bytes::from_f64(first_step + stranded);
        if needed > backward.counters.reserved {
            backward.breakdown.allocator_reserve =
                needed.saturating_sub(backward.counters.allocated);
            backward.counters.reserved = backward.breakdown.reserved();
            backward.counters.device_used = backward.breakdown.device_used();
        }
    }

    fn stage(&self, s: u32) -> StageEstimate {
        let w = self.weights(s) + self.load_kept(s);
        let g = self.gradients(s);
        let o = self.optimizer(s);
        let (acts, working, recomputed_block) = self.activations(s);
        let lg = self.logits(s);
        // The segments the checkpointed forward's blocks left, idle beside
        // the loss's tensors.
        let idle = self.idle_block_transients(s, recomputed_block);
        // A classifier's full fine-tune: those segments idle past its forward.
        let idle_later = self.idle_classifier_block_segments(recomputed_block);
        // And, once the loss's backward starts, the logits' own segment when
        // the loop has dropped them.
        let idle_loss_backward = idle
            + self.dropped_logits_segment(s)
            + self.trl_metrics_copy_segment(s)
            + self.orpo_idle_segments(s);
        let ipg = self.zero3_ipg_bucket(s);
        let (gathered, comm_b) = self.comm_buffers(s);
        let (comm_f, comm_b) = (gathered + ipg, comm_b + ipg);
        // Gradients exist through forward and backward while they accumulate,
        // in every step when `zero_grad` zeroes instead of freeing them, and
        // always in ZeRO-3's gradient partition buffer and Megatron's `main_grad`.
        let t = &self.plan.training;
        let persistent = self.grads_persistent();
        let kept = t.grad_accum > 1 || !t.zero_grad_set_to_none || persistent;
        let g_fwd = if kept && !t.optimizer_in_backward {
            g
        } else {
            0.0
        };
        // Under `no_sync` the unsharded gradients take the shards' place until
        // the last micro-batch's backward has reduced them all; a unit's
        // gradient then accumulates into them in place, so backward holds no
        // separate unsharded gradient waiting for its reduce-scatter.
        let unsharded = self.unsharded_accumulated_grads(s);
        let (g_fwd, g_bwd_end) = (g_fwd.max(unsharded), g.max(unsharded));
        let comm_b = if unsharded > 0.0 { comm_f } else { comm_b };
        let runtime = Bytes::from_f64(self.runtime() + self.paged_optimizer_resident(s));
        let frac = self.reserve_fraction();
        let side_pool = self.side_stream_grad_pool(s);
        // The head's partition copied in as ZeRO-3 fetches it from the CPU
        // ([`Self::offloaded_fetch_copy`]), and the fetch stream's pool.
        let fetch = self.offloaded_fetch_copy(s);
        let fetch_pool = self.zero3_fetch_stream_pool(gathered + fetch);
        let (wrap_cache, wrap_segment) = self.fsdp1_wrap_cache(s);
        let copy_pool = self.fsdp1_offload_copy_pool(wrap_segment);
        // The segments start-up left cached on the default stream: FSDP1's
        // wrap's ([`Self::fsdp1_wrap_cache`]) or ZeRO-1/2's flattening's
        // ([`Self::zero12_flatten_cache`]) — one runtime or the other.
        let fsdp1_wrap = wrap_cache > 0.0;
        let (start_up, start_up_segment) = if fsdp1_wrap {
            (wrap_cache, wrap_segment)
        } else {
            self.zero12_flatten_cache(s, w)
        };
        // Whether the loss's fp32 logits-sized tensors outgrow the largest
        // (worked out only where there are such segments); under ZeRO-1/2 a
        // dropped output's segment then stays idle beside them through the
        // loss's backward.
        let logits_outgrow =
            start_up > 0.0 && self.is_last(s) && self.loss_logits_tensor() > start_up_segment;
        let dropped_big = if logits_outgrow && !fsdp1_wrap {
            self.dropped_output(s)
        } else {
            0.0
        };
        let norm_pool = self.zero2_offload_norm_pool(s) + self.zero3_offload_reduce_pool(s);
        // That floor is free segments the allocator hands back when an
        // allocation finds no room (`release_cached_blocks` before it
        // retries `cudaMalloc`, c10/cuda/CUDACachingAllocator.cpp): it
        // raises the reserve up to what the GPU has, never past it.
        let room = if start_up > 0.0 { self.gpu_room() } else { 0.0 };
        let casts = self.autocast_copies(s);
        // The 16-bit copy of a quantized weight in flight: the LM head's as
        // backward starts, a block matrix's inside a block's backward.
        let (dq_block, dq_head) = self.dequantized_weights(s);

        struct Parts {
            w: f64,
            g: f64,
            o: f64,
            act: f64,
            lg: f64,
            comm: f64,
            tmp: f64,
            /// Logits-sized segments cached idle in the phase: the 16-bit
            /// output a loop dropped, where it outgrew ZeRO-1/2's start-up
            /// segments ([`Self::zero12_flatten_cache`]).
            lg_idle: f64,
        }
        // From the first forward on: loading and set-up run no matmul.
        let workspaces = self.workspaces;
        // `idle`: cached bytes no tensor of the phase can use, the floor of
        // its allocator reserve ([`Self::idle_block_transients`]).
        let mk = |phase, p: Parts, idle: f64| {
            let ws = match phase {
                Phase::Load | Phase::Init => 0.0,
                _ => workspaces,
            };
            let mut bd = Breakdown {
                weights: Bytes::from_f64(p.w),
                gradients: Bytes::from_f64(p.g),
                optimizer: Bytes::from_f64(p.o),
                activations: Bytes::from_f64(p.act),
                logits: Bytes::from_f64(p.lg),
                comm_buffers: Bytes::from_f64(p.comm),
                temporaries: Bytes::from_f64(p.tmp + ws),
                allocator_reserve: Bytes::ZERO,
                runtime,
            };
            // The side streams' blocks not holding gradients or fetched
            // parameters in this phase, from the first forward on (loading
            // and set-up come before it). ZeRO-3 holds fetched the forward's
            // gathered units (with, as it fetches the head from the CPU, the
            // partition's copy: all the forward's `comm` but the bucket) and
            // the backward's gathered units.
            let fetched = match phase {
                Phase::Forward => p.comm - ipg,
                Phase::Backward => gathered,
                _ => 0.0,
            };
            let side_cached = match phase {
                Phase::Load | Phase::Init => 0.0,
                _ => {
                    (side_pool - p.g).max(0.0)
                        + (fetch_pool - fetched).max(0.0)
                        + copy_pool
                        + norm_pool
                }
            };
            // `bd.allocated()` once: the three counters are its running sums
            // (`Breakdown::reserved`, `Breakdown::device_used`).
            let allocated = bd.allocated();
            let share = allocated.scale(frac);
            let share = if idle > 0.0 {
                share.max(Bytes::from_f64(idle))
            } else {
                share
            };
            bd.allocator_reserve = share + Bytes::from_f64(side_cached);
            // The start-up segments take what fits in them on the default
            // stream; what has segments of its own stays beside them — the
            // units FSDP1 gathers on its streams, or ZeRO-1/2's flat weights,
            // master and optimizer states — as do the loss's tensors that
            // outgrow them (and a dropped output's beside those).
            if start_up > 0.0 && !matches!(phase, Phase::Load | Phase::Init) {
                let apart = if fsdp1_wrap { p.comm } else { p.w + p.o };
                let big = if logits_outgrow {
                    p.lg + p.lg_idle
                } else {
                    0.0
                };
                let held = allocated.as_f64();
                let rest = (held - apart - big).max(0.0);
                let reserved = apart + big + start_up.max(rest * (1.0 + frac)) + side_cached;
                let floor = reserved.min(room) - held;
                if floor > bd.allocator_reserve.as_f64() {
                    bd.allocator_reserve = Bytes::from_f64(floor);
                }
            }
            let reserved = allocated + bd.allocator_reserve;
            PhaseEstimate {
                phase,
                counters: Counters {
                    allocated,
                    reserved,
                    device_used: reserved + runtime,
                },
                breakdown: bd,
            }
        };
        let z = 0.0;
        let load = mk(
            Phase::Load,
            Parts {
                w,
                g: z,
                o: z,
                act: z,
                lg: z,
                comm: z,
                tmp: self.load_materialised(s) - self.load_kept(s),
                lg_idle: z,
            },
            z,
        );
        let init = mk(
            Phase::Init,
            Parts {
                w,
                g: if persistent { g } else { z },
                o,
                act: z,
                lg: z,
                comm: ipg,
                tmp: z,
                lg_idle: z,
            },
            z,
        );
        // The head's weight gradient: made inside a fused loss's forward, else
        // at the head's backward; kept until the step either way.
        let head_g = self.head_grad_in_backward(s, g_fwd > 0.0);
        let head_g_fwd = if self.plan.training.loss == Loss::Fused {
            head_g
        } else {
            0.0
        };
        let forward_parts = Parts {
            w,
            g: g_fwd + head_g_fwd,
            o,
            act: acts,
            lg: lg.forward,
            comm: comm_f,
            tmp: casts.forward,
            lg_idle: z,
        };
        // The end of forward as ZeRO-3 fetches the head from the CPU, before
        // the logits exist ([`Self::offloaded_fetch_copy`]).
        let head_fetch = (fetch > 0.0).then(|| {
            mk(
                Phase::Forward,
                Parts {
                    lg: z,
                    comm: comm_f + fetch,
                    ..forward_parts
                },
                z,
            )
        });
        // The last block's adapted MLP, before the head runs
        // ([`Self::mlp_adapter_transients`]).
        let block_end = mk(
            Phase::Forward,
            Parts {
                lg: z,
                tmp: casts.forward + self.mlp_adapter_transients(false),
                ..forward_parts
            },
            z,
        );
        let forward = mk(Phase::Forward, forward_parts, idle);
        let forward = phase_peak(forward, head_fetch.into_iter().chain([block_end]));
        // Backward: its start (all activations, the loss backward, the 16-bit
        // weight copies autograd saved), the LM head's backward (the loss's
        // tensors freed, the logits' gradient and the head's weight gradient
        // made), the last block's backward (one block's working set instead)
        // or its end (all gradients, the last block's working set). Measured on
        // the H200: the peak of step one sat exactly at the loss backward's two
        // fp32 gradients, with no block's working set on top.
        let (head_g_opt_bwd, head_g_blocks) = self.optim_in_bwd_head_grads(s);
        let bwd_start = mk(
            Phase::Backward,
            Parts {
                w,
                g: g_fwd + head_g_fwd,
                o,
                act: acts,
                lg: lg.loss_backward,
                comm: comm_b,
                tmp: casts.after_forward + dq_head,
                lg_idle: dropped_big,
            },
            idle_loss_backward,
        );
        let bwd_head = mk(
            Phase::Backward,
            Parts {
                w,
                g: g_fwd + head_g + head_g_opt_bwd,
                o,
                act: acts,
                lg: lg.head_backward,
                comm: comm_b,
                tmp: casts.after_forward + dq_head,
                lg_idle: z,
            },
            idle,
        );
        let block_parts = Parts {
            w,
            g: g_fwd + head_g + head_g_blocks,
            o,
            act: acts,
            lg: lg.blocks,
            comm: comm_b,
            tmp: working + casts.block_backward + dq_block,
            lg_idle: z,
        };
        // The final norm's backward, after the head's and before any block's.
        let bwd_norm = mk(
            Phase::Backward,
            Parts {
                lg: lg.norm_backward,
                tmp: casts.block_backward,
                ..block_parts
            },
            z,
        );
        let bwd_block = mk(Phase::Backward, block_parts, idle_later);
        let bwd_end = mk(
            Phase::Backward,
            Parts {
                w,
                g: g_bwd_end + head_g_blocks,
                o,
                act: self.layer_input_bytes(),
                lg: lg.blocks,
                comm: comm_b,
                tmp: working + dq_block,
                lg_idle: z,
            },
            idle_later,
        );
        let mut backward = phase_peak(bwd_start, [bwd_head, bwd_norm, bwd_block, bwd_end]);
        let step = mk(
            Phase::Step,
            Parts {
                w,
                g,
                o,
                act: z,
                lg: lg.step,
                comm: ipg,
                tmp: self.optimizer_temporaries(s),
                lg_idle: z,
            },
            idle_later,
        );
        self.reserve_stranded_loss_segments(s, &mut backward, &forward, &step, o);
        let phases = vec![load, init, forward, backward, step];
        let peak = phases
            .iter()
            .copied()
            .max_by_key(|p| p.counters.device_used)
            .unwrap_or(init);
        // Each counter's own maximum over the phases, as PyTorch's
        // `max_memory_allocated` / `max_memory_reserved` and a sampled
        // nvidia-smi report them: the phase with the most device memory need
        // not hold the most allocated bytes (a forward beside FSDP's cached
        // side-stream pool can outweigh the backward that allocates more).
        let most = |f: fn(&Counters) -> Bytes| {
            phases
                .iter()
                .map(|p| f(&p.counters))
                .max()
                .unwrap_or(Bytes::ZERO)
        };
        StageEstimate {
            stage: s,
            params: self.stage_params(s) as u64,
            peak_phase: peak.phase,
            peak: Counters {
                allocated: most(|c| c.allocated),
                reserved: most(|c| c.reserved),
                device_used: peak.counters.device_used,
            },
            peak_breakdown: peak.breakdown,
            phases,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;

    /// Latent attention's block keeps, beside what every block keeps, q and k
    /// (192 wide a head for DeepSeek-V2-Lite), kv_b_proj's whole output (128 +
    /// 128 a head, kept by the value view), a 128-wide output per head, and
    /// the k/v latent's norm (512) and its normed output for kv_b: compared
    /// with the same heads as ordinary attention (q, k, v and the output all
    /// 192 wide a head), per token and block.
    #[test]
    fn latent_attention_keeps_its_latents_and_kv_b_output() {
        let mut p = Plan {
            model: preset("deepseek-v2-lite").unwrap().spec(),
            ..Plan::default()
        };
        p.set_framework(Framework::PlainPytorch);
        p.training.precision = Precision::Bf16;
        p.training.micro_batch = 1;
        p.training.seq_len = 1024;
        p.training.dropout = false;
        p.parallel.num_gpus = 1;
        p.parallel.sharding = Sharding::None;
        let mut mha = p.clone();
        mha.model.mla = None;
        let (c, plain) = (Ctx::new(&p, None), Ctx::new(&mha, None));
        assert_eq!(c.attention(), Attention::Flash);
        let (heads, e) = (16.0, 2.0);
        let latent =
            512.0 * (c.norm_saved_bytes() + c.norm_affine_bytes()) + 512.0 * c.linear_input_bytes();
        let mla = e * heads * (192.0 + 192.0 + 256.0 + 128.0) + latent;
        let ordinary = e * heads * (192.0 * 3.0 + 192.0);
        let per_token = (c.block_activations().0 - plain.block_activations().0) / 1024.0;
        assert!(
            (per_token - (mla - ordinary)).abs() < 1e-6,
            "{per_token} vs {}",
            mla - ordinary
        );
        // Its parameters: q_proj 2048 × 3072, kv_a 2048 × 576, the latent's
        // norm, kv_b 512 × 4096, o 2048 × 2048.
        assert_eq!(
            p.model.attention_params(),
            2048 * 3072 + 2048 * 576 + 512 + 512 * 4096 + 2048 * 2048
        );
    }

    /// TRL's fused LM head (1.15 on) keeps, beside the final norm's tensors,
    /// the compacted hidden states and one 4,096 × 32,768 tile, and in
    /// backward the input's fp32 gradient (and a trained head's fp32
    /// accumulator): never the logits.
    #[test]
    fn trls_fused_lm_head_keeps_one_tile_and_fp32_gradients() {
        // 4 × 2048 = 8192 positions.
        let p = trl_lora_1b(4);
        assert_eq!(p.training.loss, Loss::TiledLogprob);
        let c = Ctx::new(&p, None);
        let lg = c.logits(0);
        let (tokens, h) = (8192.0, 2048.0);
        // The final norm's kept tensors and its output, the head's input.
        let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
        let compact = tokens * h * 2.0;
        let tile = 4096.0 * 32768.0 * 2.0;
        assert_eq!(lg.forward, norm + compact + tile);
        assert_eq!(lg.loss_backward, norm + compact + tile + tokens * h * 4.0);
        assert_eq!(
            lg.head_backward,
            norm + compact + tile + tokens * h * (4.0 + 2.0)
        );
        // No logits-sized tensor: under the Trainer's loss the same step
        // holds 16-bit logits and fp32 copies of them (GiBs).
        let mut standard = p.clone();
        standard.training.loss = Loss::Standard;
        let logits = tokens * 128_256.0;
        assert!(
            Ctx::new(&standard, None).logits(0).loss_backward > lg.loss_backward + 4.0 * logits
        );
        // A full fine-tune under autocast: the head trains in fp32, so each
        // tile's head rows are cast to bf16 and its gradient accumulates in an
        // fp32 buffer the vocabulary's size; the fp32 hidden states are cast
        // per 4,096 positions.
        let mut full = p.clone();
        full.training.finetune = Finetune::Full;
        full.training.precision = Precision::AmpBf16;
        let c = Ctx::new(&full, None);
        let f = c.logits(0);
        let hidden = c.residual_bytes();
        assert_eq!(hidden, 4.0);
        let accumulator = 128_256.0 * h * 4.0;
        let fwd = tokens * h * hidden + tile + 4096.0 * h * 2.0 + 32768.0 * h * 2.0;
        let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
        assert_eq!(f.forward, norm + fwd);
        assert_eq!(f.loss_backward, norm + fwd + tokens * h * 4.0 + accumulator);
        // Its casts back to fp32 are the fp32 tensors themselves: the head's
        // gradient is the accumulator (counted with the gradients), the
        // hidden states' gradient the fp32 one.
        assert_eq!(f.head_backward, norm + fwd + tokens * h * 4.0);
    }

    /// DPO through the model's logits (TRL 0.29 to 1.13's `_compute_loss`):
    /// at its metrics the policy's logits, the reference's and the
    /// entropy's flattened copy — and, for 16-bit logits, the per-row
    /// log-softmax outputs kept for backward — beside one 128-row entropy
    /// chunk; fp32 logits (Accelerate's `convert_outputs_to_fp32` under the
    /// Trainer's AMP) go through a logsumexp that keeps none, and their
    /// backward holds four fp32 logits-sized tensors.
    #[test]
    fn trls_dpo_through_the_logits_keeps_them_with_the_references() {
        // 4 pairs × 2048 = 16,384 positions.
        let mut p = trl_lora_1b(4);
        p.training.objective = Objective::Dpo;
        p.training.loss = Loss::Standard;
        let c = Ctx::new(&p, None);
        assert!(c.dpo_logits());
        let lg = c.logits(0);
        let (tokens, h, v) = (16384.0, 2048.0, 128_256.0);
        let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
        let chunk = 128.0 * v * 3.0 * 2.0;
        assert_eq!(lg.forward, norm + 4.0 * 2.0 * tokens * v + chunk);
        assert_eq!(lg.loss_backward, norm + 2.0 * 2.0 * tokens * v);
        assert_eq!(lg.head_backward, norm + 2.0 * tokens * v);
        // The Trainer's AMP: fp32 logits.
        let mut amp = p.clone();
        amp.training.precision = Precision::AmpBf16;
        let c = Ctx::new(&amp, None);
        assert_eq!(c.dpo_logit_bytes(), 4.0);
        let lg = c.logits(0);
        let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
        assert_eq!(
            lg.forward,
            norm + 3.0 * 4.0 * tokens * v + 128.0 * v * 3.0 * 4.0
        );
        assert_eq!(lg.loss_backward, norm + 4.0 * 4.0 * tokens * v);
        assert_eq!(lg.head_backward, norm + (4.0 + 2.0) * tokens * v);
        // A plain loop's autocast leaves them 16-bit; supervised fine-tuning
        // is the causal-LM loss as before.
        let mut plain = amp.clone();
        plain.set_framework(Framework::PlainPytorch);
        plain.training.loss = Loss::Standard;
        assert_eq!(Ctx::new(&plain, None).dpo_logit_bytes(), 2.0);
        let mut sft = p.clone();
        sft.training.objective = Objective::Sft;
        assert!(!Ctx::new(&sft, None).dpo_logits());
    }

    /// ORPO through TRL's `ORPOTrainer` (no fused head, no reference): two
    /// logits-sized tensors at its chosen rows' NLL (the logits, the chosen
    /// half's contiguous copy and its log-softmax), three as the
    /// log-probabilities' kernel runs backward, in the dtype the Trainer
    /// hands them over in (fp32 under its AMP); LLaMA-Factory's ORPO runs
    /// its DPO code without the reference's logits; the default loss under
    /// TRL is the model's logits for ORPO and the fused head otherwise.
    #[test]
    fn orpo_counts_its_trainers_logits() {
        // 4 pairs × 2048 = 16,384 positions.
        let mut p = trl_lora_1b(4);
        p.training.objective = Objective::Orpo;
        assert_eq!(p.default_loss(), Loss::Standard);
        p.training.loss = p.default_loss();
        let c = Ctx::new(&p, None);
        assert!(c.orpo_logits() && !c.dpo_logits());
        let lg = c.logits(0);
        let (tokens, h, v) = (16384.0, 2048.0, 128_256.0);
        let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
        assert_eq!(lg.forward, norm + 2.0 * 2.0 * tokens * v);
        assert_eq!(lg.loss_backward, norm + 3.0 * 2.0 * tokens * v);
        assert_eq!(lg.head_backward, norm + 2.0 * tokens * v);
        let mut amp = p.clone();
        amp.training.precision = Precision::AmpBf16;
        let c = Ctx::new(&amp, None);
        let lg = c.logits(0);
        let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
        assert_eq!(lg.forward, norm + 2.0 * 4.0 * tokens * v);
        assert_eq!(lg.loss_backward, norm + 3.0 * 4.0 * tokens * v);
        assert_eq!(lg.head_backward, norm + (4.0 + 2.0) * tokens * v);
        // TRL ≤ 1.13's row-wise log-probabilities (no kernel): four and a
        // half fp32 tensors in backward; 16-bit logits as with the kernel.
        assert!(amp.training.logprob_kernel);
        let mut rowwise = amp.clone();
        rowwise.training.logprob_kernel = false;
        let lg = Ctx::new(&rowwise, None).logits(0);
        assert_eq!(lg.loss_backward, norm + 4.5 * 4.0 * tokens * v);
        let mut rowwise16 = p.clone();
        rowwise16.training.logprob_kernel = false;
        let (a, b) = (Ctx::new(&rowwise16, None), Ctx::new(&p, None));
        assert_eq!(a.logits(0).forward, b.logits(0).forward);
        assert_eq!(a.logits(0).loss_backward, b.logits(0).loss_backward);
        // SFT and DPO under TRL keep its fused head as their default.
        let mut sft = p.clone();
        sft.training.objective = Objective::Sft;
        assert_eq!(sft.default_loss(), Loss::TiledLogprob);
        sft.training.objective = Objective::Dpo;
        assert_eq!(sft.default_loss(), Loss::TiledLogprob);
        // LLaMA-Factory: the same counts, its logits fp32 in any precision.
        let mut lf = p.clone();
        lf.set_framework(Framework::LlamaFactory);
        lf.training.objective = Objective::Orpo;
        lf.training.loss = Loss::Standard;
        let c = Ctx::new(&lf, None);
        assert!(c.orpo_logits() && !c.dpo_logits());
        let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
        assert_eq!(c.logits(0).loss_backward, norm + 3.0 * 4.0 * tokens * v);
    }

    /// LLaMA-Factory's KTO: at the forward's peak the policy's fp32 logits,
    /// their log-softmax and the desirable and undesirable rows' copies, and
    /// the reference's logits and log-softmax — five fp32 logits-sized
    /// tensors over one sequence an example (four without a reference pass);
    /// three in backward. TRL's KTO through the logits keeps the causal-LM
    /// loss's count.
    #[test]
    fn llamafactory_kto_counts_its_logits() {
        // 8 examples × 2048 = 16,384 positions.
        let mut p = trl_lora_1b(8);
        p.set_framework(Framework::LlamaFactory);
        p.training.objective = Objective::Kto;
        p.training.loss = Loss::Standard;
        let c = Ctx::new(&p, None);
        assert!(c.kto_logits());
        let (tokens, h, v) = (16384.0, 2048.0, 128_256.0);
        let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
        let lg = c.logits(0);
        assert_eq!(lg.forward, norm + 5.0 * 4.0 * tokens * v);
        assert_eq!(lg.loss_backward, norm + 3.0 * 4.0 * tokens * v);
        let mut pre = p.clone();
        pre.training.precompute_ref = true;
        let lg = Ctx::new(&pre, None).logits(0);
        assert_eq!(lg.forward, norm + 4.0 * 4.0 * tokens * v);
        let mut trl = p.clone();
        trl.set_framework(Framework::Trl);
        trl.training.objective = Objective::Kto;
        trl.training.loss = Loss::Standard;
        assert!(!Ctx::new(&trl, None).kto_logits());
    }

    /// TRL's chunked NLL (1.7 to 1.14's SFT default) keeps, beside the final
    /// norm's tensors, the packed final hidden states and one 256-position
    /// chunk's four fp32 tensors; in backward the hidden states' gradient too;
    /// under autocast an fp32 head's cast for the chunk's matmul, and no whole
    /// cast of the head kept with the others.
    #[test]
    fn trls_chunked_nll_keeps_the_packed_hidden_states_and_one_chunk() {
        // 8 × 2048 = 16,384 positions.
        let mut p = trl_lora_1b(8);
        p.training.loss = Loss::ChunkedNll;
        let c = Ctx::new(&p, None);
        let lg = c.logits(0);
        let (tokens, h, v) = (16384.0, 2048.0, 128_256.0);
        let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
        let packed = tokens * h * 2.0;
        let chunk = 256.0 * v * 4.0 * 4.0;
        assert_eq!(lg.forward, norm + packed + chunk);
        assert_eq!(lg.loss_backward, norm + 2.0 * packed + chunk);
        assert_eq!(lg.head_backward, norm + 2.0 * packed);
        // LoRA over an fp32 base under autocast: the stream is fp32, and each
        // chunk's matmul casts the frozen head (one cast at a time); no whole
        // cast is kept with the blocks' casts.
        let mut amp = p.clone();
        amp.training.finetune.set_base_bits(32);
        amp.training.precision = Precision::AmpBf16;
        let c = Ctx::new(&amp, None);
        let lg = c.logits(0);
        let hidden = c.residual_bytes();
        let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
        let fwd = tokens * h * hidden + chunk + v * h * 2.0;
        assert_eq!(lg.forward, norm + fwd);
        let mut standard = amp.clone();
        standard.training.loss = Loss::Standard;
        let head_cast = v * h * 2.0;
        let kept = |p: &Plan| Ctx::new(p, None).autocast_copies(0).after_forward;
        assert!((kept(&standard) - kept(&amp) - head_cast).abs() < 1.0);
    }

    /// TRL's SFT metrics' fp32 copy of the shifted logits keeps a segment of
    /// its own under the Trainer's AMP, checkpointed, over an adapter — where
    /// the 2 MiB rounding tells it from the logits: Qwen's 151,936 entries ×
    /// 4 sequences × 4 bytes is over 2 MiB a position, Llama-3's 128,256 is
    /// not; not in pure bf16, nor for a full fine-tune, nor under TRL's later
    /// losses.
    #[test]
    fn trls_sft_metrics_copy_keeps_a_segment_where_the_rounding_parts_it() {
        let mut p = trl_lora_1b(4);
        p.training.precision = Precision::AmpBf16;
        p.training.loss = Loss::Standard;
        p.training.checkpointing = Checkpointing::Full;
        assert_eq!(Ctx::new(&p, None).trl_metrics_copy_segment(0), 0.0);
        let mut qwen = p.clone();
        qwen.model.vocab = 151_936;
        let copy = 4.0 * 2047.0 * 151_936.0 * 4.0;
        assert_eq!(Ctx::new(&qwen, None).trl_metrics_copy_segment(0), copy);
        for change in [
            |p: &mut Plan| p.training.precision = Precision::Bf16,
            |p: &mut Plan| p.training.finetune = Finetune::Full,
            |p: &mut Plan| p.training.checkpointing = Checkpointing::None,
            |p: &mut Plan| p.training.loss = Loss::ChunkedNll,
            |p: &mut Plan| p.set_framework(Framework::HfAccelerate),
        ] {
            let mut q = qwen.clone();
            change(&mut q);
            assert_eq!(Ctx::new(&q, None).trl_metrics_copy_segment(0), 0.0);
        }
    }

    /// TRL's Llama-3.2-1B (hidden 2048, vocab 128,256) in pure bf16, LoRA r 8
    /// on q and v over a bf16 base, `batch` × 2048 on one GPU.
    fn trl_lora_1b(batch: u32) -> Plan {
        let mut p = qlora("llama-3.2-1b", Framework::Trl);
        p.training.finetune.set_base_bits(16);
        p.training.precision = Precision::Bf16;
        p.training.micro_batch = batch;
        p.training.seq_len = 2048;
        p
    }

    /// A QLoRA plan (NF4 base, r 8 on q and v) of `model` under `fw`, one GPU.
    fn qlora(model: &str, fw: Framework) -> Plan {
        let mut p = Plan {
            model: preset(model).unwrap().spec(),
            ..Plan::default()
        };
        p.parallel.num_gpus = 1;
        p.set_framework(fw);
        p.parallel.sharding = Sharding::None;
        p.training.finetune = Finetune::Lora {
            rank: 8,
            targets: LoraTargets::QV,
            base_bits: 4,
            dropout: false,
            variant: LoraVariant::Lora,
        };
        p
    }

    /// torchtitan's split of Llama-3.1-70B's 80 blocks (its
    /// `_generate_llm_fqn_per_model_part`, 82 effective layers): 8 stages
    /// of 10, 11, 10 × 5, 9; interleaved over 16 virtual stages (5 + 1 on the
    /// second, 5 − 1 on the first and last) each rank sums its two chunks.
    /// Others split the 80 evenly.
    #[test]
    fn torchtitan_counts_embedding_and_head_as_a_block_each_in_its_pipeline_split() {
        let mut p = Plan {
            model: preset("llama-3.1-70b").unwrap().spec(),
            ..Plan::default()
        };
        p.set_framework(Framework::Torchtitan);
        p.parallel.num_gpus = 64;
        p.parallel.tp = 8;
        p.parallel.pp = 8;
        let per_rank = |p: &Plan| -> Vec<f64> {
            let c = Ctx::new(p, None);
            (0..p.parallel.pp).map(|s| c.stage_layers(s)).collect()
        };
        let one_f_one_b = per_rank(&p);
        assert_eq!(one_f_one_b, [10., 11., 10., 10., 10., 10., 10., 9.]);
        p.parallel.pp_schedule = PipelineSchedule::Interleaved;
        p.parallel.virtual_stages = 2;
        let interleaved = per_rank(&p);
        assert_eq!(interleaved, [10., 11., 10., 10., 10., 10., 10., 9.]);
        p.parallel.virtual_stages = 5;
        // 82 over 40 virtual stages: 2 each, the first two 3, the first and
        // the last one fewer; rank 1 holds the second, rank 7 the last.
        assert_eq!(per_rank(&p), [10., 11., 10., 10., 10., 10., 10., 9.]);
        // 80 virtual stages (one block each on average): the last is empty.
        p.parallel.virtual_stages = 10;
        let v10 = per_rank(&p);
        assert_eq!(v10, [10., 11., 10., 10., 10., 10., 10., 9.]);
        assert_eq!(v10.iter().sum::<f64>(), 80.0);
        p.parallel.pp_schedule = PipelineSchedule::OneFOneB;
        p.set_framework(Framework::Megatron);
        assert_eq!(per_rank(&p), [10.0; 8]);
        // More chunks than blocks is refused before any split.
        p.set_framework(Framework::Torchtitan);
        p.parallel.pp_schedule = PipelineSchedule::Interleaved;
        p.parallel.virtual_stages = 11;
        assert!(estimate(&p).is_err());
    }

    #[test]
    fn llm_int8_keeps_an_int8_copy_of_every_matmul_input() {
        // Llama-2-7B over an 8-bit base: q, k, v, o read 4096 wide; gate and
        // up 4096, down 11008.
        // bitsandbytes before 0.45.0 (the planner starts on a current one).
        let mut p = qlora("llama-2-7b", Framework::PlainPytorch);
        p.training.finetune.set_base_bits(8);
        p.training.precision = Precision::Bf16;
        p.training.bnb_0_43_2 = false;
        let c = Ctx::new(&p, None);
        assert_eq!(
            c.int8_input_copies(),
            (4.0 * 4096.0, 2.0 * 4096.0 + 11008.0)
        );
        // Each copy is kept in the block: one byte per element per token.
        let (_, with) = c.block_activations();
        let tokens = c.b * c.s;
        let mut p4 = p.clone();
        p4.training.finetune.set_base_bits(4);
        let c4 = Ctx::new(&p4, None);
        assert_eq!(c4.int8_input_copies(), (0.0, 0.0));
        let (_, without) = c4.block_activations();
        assert!((with - without - tokens * (6.0 * 4096.0 + 11008.0)).abs() < 1.0);
        // LitGPT fuses q, k and v into one matmul: one copy of their input.
        let mut p = qlora("llama-2-7b", Framework::Litgpt);
        p.training.finetune.set_base_bits(8);
        p.training.bnb_0_43_2 = false;
        let c = Ctx::new(&p, None);
        assert_eq!(c.int8_input_copies().0, 2.0 * 4096.0);
        // A stated recent bitsandbytes (0.45.0 on) quantizes no input of a
        // frozen matrix.
        p.training.bnb_0_43_2 = true;
        assert_eq!(Ctx::new(&p, None).int8_input_copies(), (0.0, 0.0));
    }

    #[test]
    fn bitsandbytes_dequantizes_the_weight_it_multiplies() {
        // Llama-2-7B (untied head, 32000 × 4096; largest block matrix 4096 × 11008).
        let p = qlora("llama-2-7b", Framework::PlainPytorch);
        let c = Ctx::new(&p, None);
        let (block, head) = c.dequantized_weights(0);
        assert_eq!(block, c.e * 4096.0 * 11008.0);
        // transformers keeps the LM head in 16 bits: nothing to dequantize.
        assert_eq!(head, 0.0);
        assert_eq!(c.quantized_head_params(0), 0.0);
        // LitGPT (Fabric's BitsandbytesPrecision) quantizes it too, from an
        // fp16 copy: in bf16 its matmuls hold the fp16 dequantized matrix
        // beside the bf16 cast; in fp16 the cast is the same tensor.
        let mut p = qlora("llama-2-7b", Framework::Litgpt);
        p.training.precision = Precision::Bf16;
        let c = Ctx::new(&p, None);
        assert_eq!(c.quantized_head_params(0), 32000.0 * 4096.0);
        assert_eq!(c.dequantized_weights(0).1, (2.0 + 2.0) * 32000.0 * 4096.0);
        assert_eq!(c.dequantized_weights(0).0, (2.0 + 2.0) * 4096.0 * 11008.0);
        p.training.precision = Precision::Fp16;
        let c = Ctx::new(&p, None);
        assert_eq!(c.dequantized_weights(0).1, 2.0 * 32000.0 * 4096.0);
        // transformers' bitsandbytes (0.43 on) quantizes the weights as loaded.
        let mut p = qlora("llama-2-7b", Framework::PlainPytorch);
        p.training.precision = Precision::Bf16;
        let c = Ctx::new(&p, None);
        assert_eq!(c.dequantized_weights(0).0, 2.0 * 4096.0 * 11008.0);
        // A 16-bit base dequantizes nothing.
        let mut p = qlora("llama-2-7b", Framework::Litgpt);
        p.training.finetune.set_base_bits(16);
        assert_eq!(Ctx::new(&p, None).dequantized_weights(0), (0.0, 0.0));
        // DeepSeek-MoE-16B: its dense block's MLP (2048 × 10944) is the
        // largest matrix, not an expert's (2048 × 1408).
        let p = qlora("deepseek-moe-16b", Framework::PlainPytorch);
        let dense = p.model.dense_block();
        let c = Ctx::new(&p, dense.as_ref());
        assert_eq!(c.dequantized_weights(0).0, c.e * 2048.0 * 10944.0);
    }
}
