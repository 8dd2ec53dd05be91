//! What a block's layers keep of their inputs: attention kind and masks, norms, casts, the adapters' inputs.

use super::*;

impl<'a> Ctx<'a> {
    /// The attention kernel that actually runs. SDPA has no fused kernel for
    /// fp32 grouped-query attention — flash needs 16-bit inputs and the
    /// memory-efficient kernel takes no `enable_gqa` (PyTorch `sdp_utils.cpp`,
    /// `check_tensor_dtype`, `check_grouped_query_attention`) — and transformers
    /// passes `enable_gqa=True` when there is no padding mask
    /// (`integrations/sdpa_attention.py` `use_gqa_in_sdpa`), so PyTorch takes the
    /// math path, which materialises the scores and expands k/v. Measured on the
    /// H200 (calibration/h200-2026-11-30): Qwen2.5-0.5B in fp32 peaked at the
    /// same byte with SDPA as with eager attention.
    pub(super) fn attention(&self) -> Attention {
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
    pub(super) fn casts_inputs_per_matmul(&self) -> bool {
        self.runs_autocast() && self.residual_bytes() >= FP32
    }

    /// A Python RMSNorm whose weight trains also keeps its normalised input for
    /// the weight's gradient: transformers' `LlamaRMSNorm` ends with
    /// `self.weight * hidden_states.to(input_dtype)` (the residual stream's
    /// dtype). A frozen weight (LoRA) needs no such tensor; fused norms
    /// (Megatron, Apex) keep only their input and statistics. Measured on the
    /// H200: 4·hidden bytes per token per Llama block in pure bf16 beyond the
    /// norm inputs and outputs.
    pub(super) fn norm_affine_bytes(&self) -> f64 {
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
    pub(super) fn rmsnorm_as_tensor_ops(&self) -> bool {
        let t = &self.plan.training;
        self.m.norm == Norm::RmsNorm && !self.fused_norms() && !t.fused_kernels && !t.compile
    }

    /// What a norm written as tensor ops ([`ModelSpec::python_norm`]) keeps
    /// beyond a fused one, in the residual stream's dtype (the ops are on no
    /// autocast list): the centred input, kept by the division whenever
    /// gradients flow through the norm, and the normalised tensor, kept by the
    /// scale's multiply when the scale trains. Compiled, Inductor fuses the ops
    /// and recomputes them.
    pub(super) fn python_norm_extra_bytes(&self) -> f64 {
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
    pub(super) fn adapter_prefix_share(&self) -> f64 {
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
    pub(super) fn untrained_prefix_layers(&self, s: u32) -> f64 {
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
    pub(super) fn norms_train(&self) -> bool {
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
    pub(super) fn gelu_new_extra_bytes(&self) -> f64 {
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
    pub(super) fn python_gelu(&self) -> bool {
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
    pub(super) fn experts_in_fp32(&self) -> bool {
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
    pub(super) fn mlp_bytes(&self) -> f64 {
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
    pub(super) fn quantized_outputs_in_fp32(&self) -> bool {
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
    pub(super) fn sdpa_gets_a_mask(&self) -> bool {
        self.attention() == Attention::Flash
            && self.plan.training.fp32_upcasts
            && self.m.kv_heads < self.m.heads
            && (self.m.kv_heads > 1 || self.quantized_outputs_in_fp32())
            && (self.sdpa_mask_stated() || self.plan.training.compile || self.model_always_masks())
    }

    /// A model whose own code always hands SDPA a mask
    /// ([`ModelSpec::sdpa_mask`]: Falcon), run by a framework that runs it.
    pub(super) fn model_always_masks(&self) -> bool {
        self.m.sdpa_mask && self.plan.framework.runs_the_models_own_code()
    }

    /// What makes transformers keep the attention mask it hands SDPA, compiling
    /// apart ([`Self::sdpa_gets_a_mask`]): a sliding window no longer than the
    /// sequence, a prefix-tuning cache, or padded rows — under a framework
    /// that runs transformers' model (torchtune's and torchtitan's own
    /// attention take no padding mask: torchtune pads and masks the labels
    /// only, `padded_collate_sft`; LitGPT and Megatron likewise).
    pub(super) fn sdpa_mask_stated(&self) -> bool {
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
    pub(super) fn padding_rows(&self) -> f64 {
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
    pub(super) fn sdpa_mask_bytes(&self) -> f64 {
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
    /// their input and statistics, in the activation dtype. So does
    /// torchtitan's RMSNorm, PyTorch's `nn.RMSNorm` (0.1.0
    /// `models/llama3/model/model.py`; 0.3.0 `models/common/nn_modules.py`
    /// `class RMSNorm(nn.RMSNorm, Module)`): on CUDA `F.rms_norm` is one
    /// `aten._fused_rms_norm`, which saves the input and a per-row fp32 rstd
    /// (torch 2.15 traced under `FakeTensorMode` on a CUDA tensor; the CPU
    /// takes the composite, keeping an fp32 copy and the fp32 normalised
    /// tensor). Its CUDA kernel (`wrapper_CUDA___fused_rms_norm`) is in torch
    /// 2.9.0's `libtorch_cuda.so` and not 2.8.0's; torchtitan runs on
    /// PyTorch nightlies (its 0.1.0 README, July 2025) and pins one per
    /// release since.
    pub(super) fn fused_norms(&self) -> bool {
        matches!(
            self.plan.framework,
            Framework::Megatron | Framework::Deepspeed
        ) || (self.plan.framework == Framework::Torchtitan && self.m.norm == Norm::RmsNorm)
    }

    /// Bytes a norm layer keeps for backward: its input upcast to fp32 (HF/LitGPT
    /// RMSNorm call `.float()`; autocast runs layer_norm in fp32), 16-bit in
    /// Megatron/TransformerEngine fused norms.
    pub(super) fn norm_saved_bytes(&self) -> f64 {
        let prec = self.prec;
        // One kernel keeps the norm's input as it comes, the residual
        // stream's dtype (16-bit under FSDP's, DeepSpeed's and Megatron's
        // mixed precision, fp32 under autocast), and a per-row fp32 rstd:
        // - Inductor fuses the norm and recomputes the fp32 copies in backward
        //   (torch/_functorch/partitioners.py `min_cut_rematerialization_partition`
        //   recomputes cheap element-wise ops). Measured on the H200: GPT-2
        //   fp32 compiled kept the eager count without gelu_new's
        //   intermediates (LayerNorm input and output both kept); Llama-3.2-1B
        //   kept 9 % less than this count, as if the norm outputs were
        //   recomputed too — the larger reading is used.
        // - Liger's / Unsloth's norm kernels
        //   ([`crate::plan::TrainingSpec::fused_kernels`]).
        // - The frameworks' fused norms ([`Self::fused_norms`]).
        let t = &self.plan.training;
        if t.compile || t.fused_kernels || self.fused_norms() {
            return self.residual_bytes();
        }
        if prec.fp32_weights() || self.m.norm == Norm::RmsNorm {
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
    pub(super) fn qk_norm_bytes(&self) -> f64 {
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
    pub(super) fn t5_norm_input_bytes(&self) -> f64 {
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
    pub(super) fn norm_kept_bytes(&self) -> f64 {
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
    pub(super) fn rmsnorm_square_bytes(&self) -> f64 {
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
    pub(super) fn t5_stacks(&self) -> bool {
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
    pub(super) fn final_norm_kept_bytes(&self) -> f64 {
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
    pub(super) fn embedding_output_leaf(&self) -> bool {
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
    pub(super) fn stack_ends(&self, s: u32) -> f64 {
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
    pub(super) fn relative_bias_bytes(&self) -> f64 {
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
    pub(super) fn relative_bias(&self, batch: f64, keys: f64) -> f64 {
        self.relative_bias_bytes() * batch * self.m.heads as f64 * self.s * keys / self.t
    }

    /// A float8 run through Transformer Engine's linears
    /// ([`Framework::fp8_saves_fp8_inputs`]).
    pub(super) fn te_float8(&self) -> bool {
        self.plan.training.precision == Precision::Fp8 && self.plan.framework.fp8_saves_fp8_inputs()
    }

    /// Bytes per element of a block linear's saved input: one under
    /// Transformer Engine float8, which saves the quantized input, else the
    /// activation dtype.
    pub(super) fn linear_input_bytes(&self) -> f64 {
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
    pub(super) fn keeps_input(&self, targeted: bool) -> bool {
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
    pub(super) fn zero3_linear_keeps_input(&self, base_bits: u32) -> bool {
        self.plan.parallel.sharding == Sharding::Zero3 && base_bits >= 16
    }

    /// Whether a frozen base matrix of `base_bits` saves its input however
    /// it is used: bitsandbytes' 8-bit matmul always does, a 4-bit one as
    /// [`crate::Plan::four_bit_matmul_keeps_input`] says.
    pub(super) fn quantized_matmul_keeps_input(&self, base_bits: u32) -> bool {
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
    pub(super) fn lora_input_bytes(&self) -> f64 {
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
    pub(super) fn lora_casts_input(&self) -> bool {
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
    pub(super) fn lora_copies_input(&self) -> bool {
        self.lora_casts_input() || (self.runs_autocast() && self.adapters_computed_wider())
    }

    /// Whether the adapters compute in a dtype wider than the activations:
    /// they are stored wider ([`Self::trainable_weight_bytes`]) and not
    /// gathered in the compute dtype by FSDP's mixed precision (their flat
    /// parameters cast with the rest).
    pub(super) fn adapters_computed_wider(&self) -> bool {
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
    pub(super) fn layer_activations(&self, recomputed: bool) -> (f64, f64) {
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
    pub(super) fn layer_activations_once(&self, recomputed: bool) -> (f64, f64) {
        let cell = &self.layer_acts[usize::from(recomputed)];
        if let Some(v) = cell.get() {
            return v;
        }
        let v = self.layer_activations(recomputed);
        cell.set(Some(v));
        v
    }

    /// Uncached Transformer Engine weight copies, saved per layer.
    pub(super) fn fp8_weight_copies_saved(&self) -> f64 {
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
    pub(super) fn lm_head_calls(&self) -> f64 {
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
    pub(super) fn decoder_s(&self) -> f64 {
        match self.plan.training.target_len {
            Some(t) if self.m.arch == Arch::EncoderDecoder => {
                t as f64 / self.plan.parallel.cp as f64
            }
            _ => self.s,
        }
    }

    /// These quantities at another local sequence length (a decoder's).
    pub(super) fn at_length(&self, s: f64) -> Ctx<'a> {
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
    pub(super) fn decoder_block(&self, sd: f64) -> f64 {
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
    pub(super) fn eager_score_bytes(&self) -> f64 {
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
    pub(super) fn softmax_input_bytes(&self) -> f64 {
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
    pub(super) fn attention_dropout_bytes(&self) -> f64 {
        if !self.plan.training.dropout {
            return 0.0;
        }
        MASK + self.e - self.softmax_cast_bytes()
    }
}
