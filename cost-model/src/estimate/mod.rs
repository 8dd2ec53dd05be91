//! The estimate: per rank (every pipeline stage), per phase, per component.
//!
//! One small function per memory component, every coefficient a named
//! constant citing its source. All arithmetic is f64 on validated inputs and
//! ends in saturating [`Bytes`]: no input can overflow or panic.
//!
//! This module holds the coefficients, the output types, [`estimate`] and the
//! derived context every component reads; the components are methods of that
//! context, one file per concern:
//! - `params`: the parameters by block and stage, adapters, a quantized base;
//! - `states`: gradients, optimizer states, sharding and its runtimes' pools,
//!   autocast's weight copies, the load phase;
//! - `inputs`: what a block's layers keep of their inputs (attention, masks,
//!   norms, casts, adapters' inputs);
//! - `blocks`: a block's activations and its backward's moments, kept,
//!   recomputed, pipelined or offloaded;
//! - `logits`: the logits and each loss implementation's tensors;
//! - `runtime`: communication and gather buffers, context, workspaces, the
//!   allocator's reserve fraction;
//! - `offload`: host RAM and NVMe for offloaded states;
//! - `segments`: segments the caching allocator strands;
//! - `stage`: one pipeline stage's phases assembled from the components.

use crate::error::PlanError;
use crate::framework::{Framework, MoeScoring};
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

mod blocks;
mod inputs;
mod logits;
mod offload;
mod params;
mod runtime;
mod segments;
mod stage;
mod states;

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
/// ([`Ctx::idle_block_segments_without_logits`]; replayed reserved −13.0 … −5.0 %
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
/// output under AMP. 42 splits a model's edges under tensor parallelism as
/// the framework's TP plan does ([`Framework::tp_shards_embedding`],
/// [`Framework::tp_vocab_parallel_loss`]): transformers' `tp_plan` (the
/// Trainer, Accelerate's ND-parallel) keeps the whole embedding on every TP
/// rank, and it, torchtune and DeepSpeed's AutoTP gather the head's output,
/// so the loss runs on the whole logits; only Megatron-LM and torchtitan
/// keep both split, as every plan was counted before. No calibration row
/// runs TP: the reports are unchanged. 43 keeps the checkpointed forward's
/// block segments idle through the backward and the step of a language
/// model's full fine-tune whose loss makes nothing logits-sized (TRL's
/// chunked NLL and fused head, a fused linear cross-entropy), as a
/// classifier's ([`Ctx::idle_block_segments_without_logits`]; replayed pure
/// bf16 checkpointed, reserved −17.7 … −2.1 % → −10.8 … +8.0 %). 44 counts
/// those idle block segments in a checkpointed full fine-tune's first step
/// too, under the standard loss, before its states strand the loss's
/// segments (`Ctx::reserve_stranded_loss_segments`; replayed GPT-Neo-1.3B
/// −17.2 → −3.7 %, the encoder–decoders over with it as their adapters were).
/// 45 counts tensor parallelism's blocks as PyTorch's DTensor TP keeps them:
/// under sequence parallelism the column-parallel projections keep their
/// gathered input whole outside Megatron-LM
/// ([`Framework::tp_keeps_gathered_inputs`]), and torchtitan's per-op
/// checkpointing keeps a row-parallel matmul's partial sums whole and each
/// reduce-scatter's output (`Ctx::op_selective_layer`). No calibration row
/// runs TP: the reports are unchanged. 46 keeps the LM head's gathered input
/// whole too (`Ctx::logits`' final norm output, under the same predicate).
/// 47 counts torchtitan's MoE layers as its code keeps them: one fp32 copy of
/// each routed token scaled by its score ([`MoeScoring::Fp32Copy`]), and
/// under its per-op checkpointing the routed experts recomputed, the router's
/// scores and top-k kept, the shared experts in the matmul count
/// (`Ctx::op_selective_layer`). 48 counts Megatron-LM's, which scale inside
/// the experts' activation and keep no expert output
/// ([`MoeScoring::InActivation`]). No calibration row runs an MoE under either.
/// 49 runs torchtitan's per-op checkpointing through latent attention's own
/// matmuls (wq_a, wq_b, wkv_a, wkv_b, wo) and keeps its narrower attention
/// output (`Ctx::op_selective_layer`). 50 counts torchtitan's RMSNorms as
/// CUDA's fused kernel keeps them: the 16-bit input alone (`Ctx::fused_norms`).
/// 51 keeps a fused norm's input in the residual stream's dtype, bf16 under
/// FSDP's, DeepSpeed's and Megatron's mixed precision (`Ctx::norm_saved_bytes`).
/// 52 reads torchtitan's release ([`crate::plan::TorchtitanRelease`]): the
/// current one's fused qkv in the per-op matmul count and its MoE router's
/// fp32 input copy; up to 0.2.1 grouped k and v repeated for SDPA.
/// 53 holds `nn.DataParallel`'s reduced gradients on GPU 0 at the end of
/// backward (`Ctx::data_parallel_reduced_grads`) and gives the replicas'
/// peak ([`Estimate::replica_peak`]). 54: under the Trainer each replica
/// computes its share's loss and GPU 0 gathers the logits alone
/// (`Ctx::replicas_compute_loss`), where a loop's loss runs over them all.
/// 55 reads TRL's release ([`crate::plan::TrlRelease`]): 0.15–0.28's DPO
/// returns no logits from its forward, and from 0.19 holds the reference's
/// hidden states, before it (unless checkpointed) the reference's keys and
/// values (`Ctx::dpo_returns_no_logits`, `Ctx::dpo_reference_kv_cache`).
/// 56 reads TRL 0.5–0.14's DPO, a whole log-softmax of the logits saved
/// (`Ctx::dpo_whole_log_softmax`; up to 0.11 the policy's logits held
/// through the reference's pass), and takes a preference loss under the
/// Trainer's AMP after autocast's weight copies are gone, their segments
/// idle (`Ctx::loss_after_autocast`), the reference's dropped 16-bit output
/// idle beside its log-softmax (`Ctx::dpo_reference_dropped_output`); one
/// dropped 16-bit output at 0.12–0.14's backward (`Ctx::dpo_dropped_outputs`).
/// 57: bitsandbytes' optimizers make no step temporaries whatever the
/// `optimizer_impl` setting and keep fp32 states in 32 bits
/// ([`crate::plan::Optimizer::is_bitsandbytes`], and Lion under the
/// Trainer); AdEMAMix's three states.
pub const MODEL_VERSION: u32 = 57;

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

/// torchao's 4-bit Adam: per moment half a byte of codes and one fp32 scale
/// per block of 128 (torchao 0.18.0 `optim/subclass_4bit.py`
/// `OptimState4bit.zeros`: `codes` n/2 uint8, `scale` n/block_size fp32;
/// `optim/adam.py` `AdamW4bit(block_size=128)`), two moments: 1.0625 bytes
/// per parameter. Tensors under 4,096 elements keep plain states, a
/// negligible share of a transformer's.
const ADAM_4BIT_BYTES: f64 = ADAM_STATES * (0.5 + FP32 / ADAM_4BIT_BLOCK);

/// Elements per scale of torchao's 4-bit optimizer states (`block_size=128`).
const ADAM_4BIT_BLOCK: f64 = 128.0;

/// Muon's states per hidden matrix element: the momentum buffer
/// (`state["momentum_buffer"] = torch.zeros_like(p)`, torch 2.11
/// `optim/_muon.py`, which takes 2-D parameters only; timm 1.0's `Muon`
/// keeps the same and falls back to AdamW for 1-D ones).
const MUON_STATES: f64 = 1.0;

/// Adan's states per element: `exp_avg`, `exp_avg_sq`, `exp_avg_diff` and
/// `neg_pre_grad` (timm 1.0 `optim/adan.py`; Xie et al. 2022, Algorithm 1
/// keeps three moments and the previous gradient).
const ADAN_STATES: f64 = 4.0;

/// bitsandbytes' 8-bit Lion: one 1-byte state per element and an fp32 absmax
/// per block of 256 (bitsandbytes 0.45.0 `optim/optimizer.py`
/// `Optimizer1State.init_state`: `blocks = n // 256`; tensors under
/// `min_8bit_size`, 4,096 elements, keep an fp32 state, a negligible share).
const LION_8BIT_BYTES: f64 = 1.0 + FP32 / 256.0;

/// AdEMAMix's states per element: the fast and slow EMAs (`m1_m2`, one
/// buffer of two) and the second moment `nu` (bitsandbytes 0.45.0
/// `optim/ademamix.py`: `_ReferenceAdEMAMix` and `AdEMAMix.init_state`,
/// whose `state1` is a double buffer; Pagliardini et al. 2024, Algorithm 1).
const ADEMAMIX_STATES: f64 = 3.0;

/// bitsandbytes' 8-bit AdEMAMix: three 1-byte states per element and an fp32
/// absmax per block of 256 for each (`AdEMAMix.init_state`: `absmax1` of
/// shape (2, blocks), `absmax2` of blocks, `blocks = n // 256`).
const ADEMAMIX_8BIT_BYTES: f64 = ADEMAMIX_STATES * (1.0 + FP32 / 256.0);

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
/// Logits-sized share of the boolean-mask copy TRL's DPO makes for the mean
/// chosen (then rejected) logits it logs
/// (`logits[:num_examples][loss_mask[:num_examples]].mean()`, trl
/// 0.15.0–0.28.0 `concatenated_forward`): half the rows, every position a
/// completion token, alive until its mean is taken
/// ([`Ctx::dpo_returns_no_logits`]; in the replay of 0.24.0's code, the 2,004
/// MiB requests of Llama-3.2-1B's 3,915 MiB 16-bit logits).
const DPO_MEAN_LOGITS_COPY: f64 = 0.5;
/// Logits-sized share of the chosen half's NLL TRL 0.9 to 0.11's DPO takes
/// in every step, whatever `rpo_alpha` (`cross_entropy_loss(all_logits[:len_chosen], …)`
/// in `concatenated_forward`, trl 0.9.6–0.11.4): the contiguous copy of the
/// half's shifted logits, then `nn.CrossEntropyLoss`'s log-softmax of it,
/// saved until the loss returns — each half the rows.
const DPO_CHOSEN_NLL_SHARE: f64 = 0.5;
/// Logits-sized tensors in the backward of a whole log-softmax gathered (TRL
/// 0.5–0.14's DPO, [`Ctx::dpo_whole_log_softmax`]): the saved log-softmax,
/// the gather's zeroed gradient with the gathered values added, and the
/// log-softmax's gradient.
const DPO_LOG_SOFTMAX_BWD_TENSORS: f64 = 3.0;
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

/// Row-parallel projections in a transformer block under tensor parallelism
/// — attention's output projection and the MLP's down projection — each
/// followed by the reduction of its partial sums: under sequence parallelism
/// a reduce-scatter, whose output torchtitan's per-op checkpointing saves
/// (`_c10d_functional.reduce_scatter_tensor` on its save list: torchtitan
/// 0.3.0 `distributed/activation_checkpoint.py`, 0.2.0 `_op_sac_save_list`
/// and 0.1.0 `_save_list` in `models/llama3/infra/parallelize.py`).
const ROW_PARALLEL_OUTPUTS_PER_BLOCK: f64 = 2.0;

/// Bytes per token per routed expert of a top-k router's choice as
/// torchtitan's per-op checkpointing keeps it: `aten.topk` is on its save list
/// ("topk can be non-deterministic; save to keep MoE expert assignments
/// stable", torchtitan 0.3.0 `distributed/activation_checkpoint.py`), its
/// values the fp32 scores and its indices int64.
const TOPK_BYTES_PER_ROUTED_TOKEN: f64 = FP32 + 8.0;

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
    /// The framework keeps this pure 16-bit full fine-tune's trainable
    /// weights in fp32 all the same ([`Plan::framework_upcasts_trainable`]):
    /// the run stores what the plan calls AMP, which the planner says
    /// ([`crate::plan::UPCAST_CAVEAT`]). The figures are the plan's as stated.
    #[serde(default, skip_serializing_if = "crate::plan::is_false")]
    pub framework_upcasts: bool,
    /// Under `nn.DataParallel` on more than one GPU, the peak counters of the
    /// other GPUs (the replicas): the figures above are GPU 0's, which holds
    /// the optimizer states, the gathered outputs and the reduced gradients
    /// (`data_parallel_replica_peak`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_peak: Option<Counters>,
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
        framework_upcasts: plan.framework_upcasts_trainable(),
        replica_peak: data_parallel_replica_peak(plan),
        stages,
    })
}

/// The peak counters of `nn.DataParallel`'s other GPUs (`None` for any other
/// runtime, or one GPU). Each forward broadcasts the parameters to them
/// (`replicate`, torch 2.5 `nn/parallel/replicate.py`), runs its share of
/// the batch there, and gathers the outputs on GPU 0; their gradients are
/// summed onto GPU 0 at the end of backward (`ReduceAddCoalesced`,
/// [`Ctx::data_parallel_reduced_grads`]), and once the step's graph is freed
/// the copies go with it. So a replica holds the model's weights, its share's
/// activations and loss, and its gradients until they are reduced — never
/// optimizer states, gathered outputs or a gradient kept across
/// micro-batches, and nothing at loading or in the optimizer's step: the
/// plan on one GPU without those, over its forward and backward. With the
/// Trainer each replica computes its share's loss inside the model's forward
/// (labels passed); a loop that computes the loss on the gathered logits on
/// GPU 0 leaves the replicas only their logits, so this is their most.
fn data_parallel_replica_peak(plan: &Plan) -> Option<Counters> {
    if !plan.parallel.has_data_parallel_replicas() || plan.parallel.pp > 1 {
        return None;
    }
    let mut r = plan.clone();
    r.parallel.sharding = Sharding::None;
    r.parallel.num_gpus = 1;
    r.parallel.gpus_per_node = 1;
    r.parallel.offload = Default::default();
    r.training.optimizer = Optimizer::Sgd;
    r.training.optimizer_in_backward = false;
    r.training.grad_accum = 1;
    r.training.zero_grad_set_to_none = true;
    let est = estimate(&r).ok()?;
    let stage = est.stages.first()?;
    let running = || {
        stage
            .phases
            .iter()
            .filter(|ph| matches!(ph.phase, Phase::Forward | Phase::Backward))
            .map(|ph| ph.counters)
    };
    Some(Counters {
        allocated: running().map(|c| c.allocated).max()?,
        reserved: running().map(|c| c.reserved).max()?,
        device_used: running().map(|c| c.device_used).max()?,
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
    /// TP's divisor of the input embedding: t where the framework splits it
    /// ([`Framework::tp_shards_embedding`]), else 1.
    te: f64,
    /// TP's divisor of the logits: t under a vocab-parallel loss
    /// ([`Framework::tp_vocab_parallel_loss`]), else 1 (the head's output
    /// gathered whole on every TP rank).
    tv: f64,
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
            te: if plan.framework.tp_shards_embedding() {
                t
            } else {
                1.0
            },
            tv: if plan.framework.tp_vocab_parallel_loss() {
                t
            } else {
                1.0
            },
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
            d: Self::defaults_of(plan),
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
}

#[cfg(test)]
mod tests;
