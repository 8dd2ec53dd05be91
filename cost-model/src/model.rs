//! Model architecture: the dimensions that decide parameter counts and
//! activation sizes.

use serde::{Deserialize, Serialize};

/// Which transformer family the model belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arch {
    /// Causal language model (GPT, Llama, …).
    Decoder,
    /// Bidirectional encoder with an MLM head (BERT-like).
    Encoder,
    /// Encoder–decoder (T5-like): `encoder_layers` encoder blocks plus `layers` decoder blocks.
    EncoderDecoder,
}

/// MLP shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mlp {
    /// Two matrices (h→ffn→h) with GELU/ReLU.
    Plain,
    /// Three matrices (gate, up, down) with SwiGLU/GeGLU.
    Gated,
}

/// Normalisation layer kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Norm {
    /// LayerNorm: weight and bias.
    LayerNorm,
    /// RMSNorm: weight only.
    RmsNorm,
}

/// Position encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Positions {
    /// Rotary embeddings: no parameters.
    Rotary,
    /// A learned table of `max_positions × hidden`.
    Learned,
    /// T5 relative attention bias: `32 buckets × heads` per stack.
    Relative,
    /// ALiBi: no parameters.
    Alibi,
}

/// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2; DeepSeek-V2,
/// arXiv:2405.04434 §2.1): k and v come out of one shared latent
/// (`kv_a_proj_with_mqa`: hidden → `kv_lora_rank` + `qk_rope_head_dim`, an
/// RMSNorm over the latent, then `kv_b_proj`: `kv_lora_rank` → heads ·
/// (`qk_nope_head_dim` + `v_head_dim`)), q optionally out of a latent of its
/// own (`q_a_proj` → `q_lora_rank`, RMSNorm, `q_b_proj`), the rotary part of
/// k shared by every head. The model's `head_dim` is q's and k's width per
/// head (`qk_nope_head_dim + qk_rope_head_dim`), `kv_heads` its `heads`
/// (transformers `DeepseekV3Attention`, 5.24).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mla {
    /// q's latent width (`q_lora_rank`); 0: one `q_proj` (DeepSeek-V2-Lite).
    #[serde(default)]
    pub q_rank: u32,
    /// The k/v latent's width (`kv_lora_rank`).
    pub kv_rank: u32,
    /// The rotary part of a q/k head (`qk_rope_head_dim`).
    pub rope_dim: u32,
    /// A value head's width (`v_head_dim`).
    pub v_dim: u32,
}

/// A transformer's dimensions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    pub name: String,
    pub arch: Arch,
    /// Transformer blocks (decoder blocks for encoder–decoder models).
    pub layers: u32,
    /// Encoder blocks of an encoder–decoder model; 0 otherwise.
    #[serde(default)]
    pub encoder_layers: u32,
    pub hidden: u32,
    pub heads: u32,
    /// Key/value heads (GQA/MQA); equal to `heads` for plain multi-head attention.
    pub kv_heads: u32,
    /// Per-head width; usually `hidden / heads`.
    pub head_dim: u32,
    /// MLP inner width (per expert for MoE models).
    pub ffn: u32,
    pub mlp: Mlp,
    pub vocab: u32,
    pub tied_embeddings: bool,
    pub norm: Norm,
    /// Norm layers inside each block: 2 (pre-attention, pre-MLP), 1 for parallel
    /// blocks (Falcon, GPT-J), 4 for sandwich norms (Gemma-2).
    #[serde(default = "two")]
    pub norms_per_layer: u32,
    pub positions: Positions,
    /// Rows of the learned position table (ignored unless `positions = learned`).
    #[serde(default)]
    pub max_positions: u32,
    /// Biases on every linear layer (GPT-2, BERT, Phi).
    #[serde(default)]
    pub linear_bias: bool,
    /// Biases on q, k and v only (Qwen2).
    #[serde(default)]
    pub qkv_bias: bool,
    /// Routed experts per MoE layer; 0 for a dense model.
    #[serde(default)]
    pub experts: u32,
    /// Experts each token is routed to (top-k).
    #[serde(default)]
    pub experts_per_token: u32,
    /// Always-active shared experts (DeepSeek/Qwen-MoE style).
    #[serde(default)]
    pub shared_experts: u32,
    /// Decoder blocks of an MoE model whose feed-forward is one dense MLP
    /// [`Self::dense_ffn`] wide instead of the experts: DeepSeek-V2/V3's and
    /// GLM-4.5's first `first_k_dense_replace` blocks (transformers
    /// `Glm4MoeDecoderLayer`: `Glm4MoeMoE` only from that index on, else
    /// `Glm4MoeMLP(config)` of `intermediate_size`), Llama-4 Maverick's every
    /// other block (`interleave_moe_layer_step: 2`, `Llama4TextMLP` of
    /// `intermediate_size_mlp`), Qwen-MoE's `mlp_only_layers` and the blocks
    /// `decoder_sparse_step` skips. 0: every block alike.
    #[serde(default)]
    pub dense_layers: u32,
    /// Inner width of the dense blocks' MLP ([`Self::dense_layers`]).
    #[serde(default)]
    pub dense_ffn: u32,
    /// Multi-head latent attention's widths ([`Mla`]); none for attention
    /// with heads × head_dim projections.
    #[serde(default)]
    pub mla: Option<Mla>,
    /// q/k/v (and gate/up) come out of one matmul each (GPT-2 `c_attn`, Phi-3
    /// `qkv_proj`/`gate_up_proj`, Falcon, BLOOM, GPT-NeoX): under autocast one
    /// 16-bit cast of the block input is saved instead of one per projection.
    #[serde(default)]
    pub fused_projections: bool,
    /// Gate and up come out of one matmul (`gate_up_proj`) while q, k and v
    /// stay apart (transformers GLM-4 `Glm4MLP`, GLM `GlmMLP`): PEFT adapts
    /// the one module as one, and under autocast one cast of the MLP's input
    /// is kept ([`Self::gate_up_fused`]; [`Self::fused_projections`] fuses
    /// both). Replayed (`calibration/allocator_replay.py --families`):
    /// GLM-4-9B, LoRA on every linear at 4 × 2048, allocated +4.75 % counted
    /// as two MLP adapters.
    #[serde(default, skip_serializing_if = "crate::plan::is_false")]
    pub fused_gate_up: bool,
    /// Attention sinks: a learned logit per head joins every query's scores
    /// (`torch.cat`) before the softmax, which runs in the scores' own dtype
    /// (transformers gpt-oss `eager_attention_forward`: `F.softmax(combined,
    /// dim=-1, dtype=combined_logits.dtype)`), so an eager block keeps a
    /// 16-bit softmax output, not an fp32 one and its cast. Replayed
    /// (`calibration/allocator_replay.py --families`): gpt-oss-20b in bf16
    /// at 4 × 2048 kept one 2-byte tensor of 64 × 2048 × 2049 scores a block;
    /// allocated +33.5 % counted as transformers' fp32 softmax.
    #[serde(default, skip_serializing_if = "crate::plan::is_false")]
    pub attention_sinks: bool,
    /// Every expert runs every token, the router's scores zeroing the ones
    /// not chosen (transformers `Llama4TextMoe`: `hidden_states.repeat(E,
    /// 1)` scaled by the scores, one `bmm` over all experts): an MoE block
    /// keeps every expert's intermediates, not its top-k's. Replayed
    /// (`calibration/allocator_replay.py --families`): Llama-4-Scout (16
    /// experts, top-1) in bf16 at 4 × 2048 kept, a block, the 16 experts'
    /// gate/up output, activation and product and three 16-fold copies of
    /// the hidden state; allocated −16.0 % counted as top-1.
    #[serde(default, skip_serializing_if = "crate::plan::is_false")]
    pub dense_experts: bool,
    /// gpt-oss's clamped GLU (transformers `GptOssExperts._apply_gate`: gate
    /// and up clamped, `gate · σ(α · gate)`, then `(up + 1) · glu`): the
    /// clamp, the sigmoid, the gated product and `up + 1` each keep an
    /// expert-wide tensor, seven a routed token with the fused gate/up output
    /// where SwiGLU keeps four. Replayed (`calibration/allocator_replay.py
    /// --families`): gpt-oss-20b bf16 at 4 × 2048, allocated −6.2 % counted
    /// as SwiGLU.
    #[serde(default, skip_serializing_if = "crate::plan::is_false")]
    pub clamped_glu: bool,
    /// The MLP activation is the tanh GELU computed with Python element-wise
    /// ops — transformers' `hidden_act: "gelu_new"` (`NewGELUActivation`:
    /// GPT-2, GPT-J, Phi-1/1.5/2, T5 v1.1) or a from-scratch model's
    /// (LLMs-from-scratch `GELU`, the same formula); each op saves its own
    /// tensor.
    #[serde(default)]
    pub gelu_new: bool,
    /// The plain MLP's activation is ReLU (OPT's `activation_function: relu`,
    /// the original T5's `DenseReluDense`): `relu` saves its output, not its
    /// input (PyTorch `tools/autograd/derivatives.yaml`: `threshold_backward(grad,
    /// result, 0)`), and that output is the down projection's input, so the
    /// MLP keeps one ffn-wide tensor where GELU keeps two. Replayed
    /// (`calibration/allocator_replay.py --families`): OPT-1.3B bf16 at 4 ×
    /// 2048 kept 2.9 GiB less than the GELU count.
    #[serde(default, skip_serializing_if = "crate::plan::is_false")]
    pub relu: bool,
    /// q and k pass through an RMSNorm of their own before the rotary
    /// embedding — per head in Qwen3 and Gemma-3 (`q_norm`/`k_norm` over
    /// `head_dim`), over the whole projection in OLMo-2 — each keeping what a
    /// block norm keeps of its input (transformers `Qwen3Attention`,
    /// `Olmo2Attention`, `Gemma3Attention`). Replayed
    /// (`calibration/allocator_replay.py --families`): Qwen3-0.6B bf16 at 4 ×
    /// 2048 kept 3.97 GiB more than the same blocks without them.
    #[serde(default, skip_serializing_if = "crate::plan::is_false")]
    pub qk_norm: bool,
    /// The LM head adds a bias buffer to its scores (transformers' BART
    /// lineage — BART, mBART, Marian, Pegasus, PLBart, LED, Blenderbot —
    /// registers `final_logits_bias`, 1 × vocab, and computes `lm_logits =
    /// lm_head(x) + final_logits_bias`). Under autocast the buffer stays fp32,
    /// so the 16-bit scores promote to fp32 before the loss: the loss then
    /// runs as over upcast logits, and an fp16 run takes no `half_to_float`
    /// path (`Ctx::half_to_float_loss`); in pure 16-bit the buffer is cast
    /// with the model and nothing changes. Replayed
    /// (`calibration/allocator_replay.py`): BART-large under fp16 and bf16
    /// autocast keeps the same 13.327 GiB, where T5-base, whose head has no
    /// bias, keeps 0.243 GiB (its fp16 scores' size) less under fp16.
    #[serde(default, skip_serializing_if = "crate::plan::is_false")]
    pub logits_bias: bool,
    /// The model's code always hands SDPA a materialised causal mask
    /// (transformers 5 Falcon: `create_causal_mask(...,
    /// allow_is_causal_skip=False)`, "always materialize the mask"), where
    /// other models pass none and let SDPA apply `is_causal`: SDPA converts
    /// the boolean `B × 1 × S × S` mask in every block and its
    /// memory-efficient kernel keeps it. Replayed
    /// (`calibration/allocator_replay.py`): Falcon-7B bf16 at 4 × 2048 kept
    /// 32 MiB a block beside the rest of its count.
    #[serde(default, skip_serializing_if = "crate::plan::is_false")]
    pub sdpa_mask: bool,
    /// Attention and final-logit soft-capping, `cap · tanh(x / cap)` (Gemma-2:
    /// `attn_logit_softcapping`, `final_logit_softcapping`): the tanh output of
    /// every score (eager attention) and of every logit is kept for backward.
    #[serde(default)]
    pub softcap: bool,
    /// Attention and MLP both read the block input (GPT-NeoX/Pythia
    /// `use_parallel_residual`, GPT-J, Falcon, Phi): with two norms
    /// (`norms_per_layer = 2`) both normalise that one tensor, which is kept
    /// once. Counted with calibration/saved_tensors.py: transformers GPT-NeoX
    /// kept 2·hidden bytes per token per block less than sequential blocks.
    /// One norm (`norms_per_layer = 1`) implies it.
    #[serde(default)]
    pub parallel_residual: bool,
    /// The RMSNorm scales its fp32 output by the fp32 weight (Gemma's
    /// `output * (1.0 + self.weight.float())`, LitGPT's `x_normed *
    /// weight.float()`): a trained weight keeps the fp32 normalised tensor, not
    /// a 16-bit cast. Measured on the H200: Gemma-2-2B bf16 −3.2 % → −0.2 %.
    #[serde(default)]
    pub norm_fp32_affine: bool,
    /// The norm is written as Python tensor ops (LLMs-from-scratch
    /// `LayerNorm`: `mean`, `var`, `(x − mean) / sqrt(var + eps)`,
    /// `scale · norm + shift`), each saving its own tensor: beside the input,
    /// the centred input (kept by the division) and the normalised tensor (kept
    /// by the scale's multiply) — two more hidden-sized tensors per norm than a
    /// fused `F.layer_norm`, which keeps its input and two per-row statistics
    /// (PyTorch `tools/autograd/derivatives.yaml`: `var`, `div`, `mul`).
    #[serde(default)]
    pub python_norm: bool,
    /// What sits on top of the last block: the language-model head (vocab
    /// logits), or a classification head (`AutoModelForSequenceClassification`,
    /// reward models: a few outputs per token, no vocab logits).
    #[serde(default)]
    pub head: ModelHead,
    /// Attention over a sliding window of this many tokens (config.json
    /// `sliding_window`: Mistral-7B v0.1, 4096); 0 for none. When the
    /// sequence reaches it, transformers passes SDPA an explicit mask, and
    /// SDPA then gets grouped k/v expanded to every head.
    #[serde(default)]
    pub sliding_window: u32,
    /// A multimodal model's vision encoder and its projector (config.json
    /// `vision_config`: Qwen2.5-VL's 32-block ViT and merger, Gemma 3's
    /// SigLIP, LLaVA's CLIP, Pixtral), in parameters; 0 for a text model.
    /// Held as frozen weights on the first pipeline stage, in the dtype of the
    /// model's other frozen weights, sharded as they are and replicated over
    /// tensor parallelism: the fine-tuning recipes freeze it by default
    /// (LLaMA-Factory `freeze_vision_tower: true`, ms-swift `freeze_vit`,
    /// Qwen2.5-VL's `tune_mm_vision=False`, LLaVA's frozen CLIP), and a frozen
    /// encoder fed pixels that need no gradient keeps no activations for
    /// backward. Its image tokens run through the language model as part of
    /// the sequence (`training.seq_len` counts them).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub vision_params: u64,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// The output head.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelHead {
    /// Vocab logits (causal or masked LM).
    #[default]
    Lm,
    /// A linear layer to [`CLASSIFIER_OUTPUTS`] labels (transformers
    /// `*ForSequenceClassification` / `*ForTokenClassification`: `score` or
    /// `classifier`; BERT's also keeps its pooler): its logits are negligible.
    Classifier,
}

/// Labels of a classification head as counted (binary classification; a
/// reward model's one score is smaller still).
pub const CLASSIFIER_OUTPUTS: u64 = 2;

fn two() -> u32 {
    2
}

impl ModelSpec {
    /// A model of no size with every variant switch off (decoder, gated MLP,
    /// RMSNorm, rotary positions, two norms a block, no biases or experts):
    /// where a reader of a description starts (a Hugging Face config, a
    /// calibration row) before it sets what the description says.
    pub(crate) fn unset(name: &str) -> ModelSpec {
        ModelSpec {
            name: name.to_string(),
            arch: Arch::Decoder,
            layers: 0,
            encoder_layers: 0,
            hidden: 0,
            heads: 0,
            kv_heads: 0,
            head_dim: 0,
            ffn: 0,
            mlp: Mlp::Gated,
            vocab: 0,
            tied_embeddings: false,
            norm: Norm::RmsNorm,
            norms_per_layer: two(),
            positions: Positions::Rotary,
            max_positions: 0,
            linear_bias: false,
            qkv_bias: false,
            experts: 0,
            experts_per_token: 0,
            shared_experts: 0,
            dense_layers: 0,
            dense_ffn: 0,
            mla: None,
            fused_projections: false,
            fused_gate_up: false,
            attention_sinks: false,
            dense_experts: false,
            clamped_glu: false,
            gelu_new: false,
            relu: false,
            qk_norm: false,
            logits_bias: false,
            sdpa_mask: false,
            softcap: false,
            parallel_residual: false,
            norm_fp32_affine: false,
            python_norm: false,
            head: ModelHead::Lm,
            sliding_window: 0,
            vision_params: 0,
        }
    }

    /// Whether a model no preset or config describes trains with dropout in
    /// its blocks, by its era's habit, which its positions tell: the learned-
    /// and relative-position families (GPT-2, BERT, RoBERTa, OPT, BART,
    /// StarCoder 1, T5: `resid_pdrop`/`hidden_dropout_prob`/`dropout_rate`
    /// 0.1 in their config.json) drop out; the rotary and ALiBi ones (GPT-NeoX
    /// on, BLOOM, MPT, StarCoder2, the Llama lineage: 0.0) do not. Replayed
    /// (calibration/replay-families-2026-12-03.csv): StarCoder2-3B, which no
    /// preset names, within 0.5 % read this way, +5 % with dropout masks.
    pub fn era_dropout(&self) -> bool {
        matches!(self.positions, Positions::Learned | Positions::Relative)
    }

    pub fn is_moe(&self) -> bool {
        self.experts > 0
    }

    /// Per token: q's width (every head's).
    pub fn q_width(&self) -> u64 {
        self.heads as u64 * self.head_dim as u64
    }

    /// Per token: k's (and v's) width, every k/v head's.
    pub fn kv_width(&self) -> u64 {
        self.kv_heads as u64 * self.head_dim as u64
    }

    /// Per token: the width of the attention's output, o_proj's input (an
    /// MLA model's value heads are `v_dim` wide).
    pub fn attn_out_width(&self) -> u64 {
        match self.mla {
            Some(a) => self.heads as u64 * a.v_dim as u64,
            None => self.q_width(),
        }
    }

    /// q/k/v/o projections of one attention block (self- or cross-attention).
    pub fn attention_params(&self) -> u64 {
        let h = self.hidden as u64;
        if let Some(a) = self.mla {
            let heads = self.heads as u64;
            let q = self.q_width();
            let (qr, kvr, rope) = (a.q_rank as u64, a.kv_rank as u64, a.rope_dim as u64);
            let nope = (self.head_dim as u64).saturating_sub(rope);
            // q_proj, or q_a_proj + its RMSNorm + q_b_proj.
            let q_proj = if qr > 0 { h * qr + qr + qr * q } else { h * q };
            // kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj.
            let kv = h * (kvr + rope) + kvr + kvr * heads * (nope + a.v_dim as u64);
            let o = self.attn_out_width() * h;
            let bias = if self.linear_bias || self.qkv_bias {
                (if qr > 0 { qr } else { q }) + kvr + rope + h
            } else {
                0
            };
            return q_proj + kv + o + bias;
        }
        let (q, kv) = (self.q_width(), self.kv_width());
        let mut p = h * q + 2 * h * kv + q * h;
        if self.linear_bias {
            p += q + 2 * kv + h;
        } else if self.qkv_bias {
            p += q + 2 * kv;
        }
        p
    }

    fn mlp_matrices(&self) -> u64 {
        match self.mlp {
            Mlp::Plain => 2,
            Mlp::Gated => 3,
        }
    }

    /// One MLP (one expert's worth for MoE).
    pub fn one_mlp_params(&self) -> u64 {
        let h = self.hidden as u64;
        let f = self.ffn as u64;
        let m = self.mlp_matrices();
        let mut p = m * h * f;
        if self.linear_bias {
            p += (m - 1) * f + h;
        }
        p
    }

    /// The MLP part of one block: all experts and the router for MoE.
    pub fn mlp_params(&self) -> u64 {
        if self.is_moe() {
            let experts = self.experts as u64 + self.shared_experts as u64;
            experts * self.one_mlp_params() + self.hidden as u64 * self.experts as u64
        } else {
            self.one_mlp_params()
        }
    }

    pub fn norm_params(&self) -> u64 {
        match self.norm {
            Norm::LayerNorm => 2 * self.hidden as u64,
            Norm::RmsNorm => self.hidden as u64,
        }
    }

    /// Decoder blocks with experts: all of them, less the dense ones
    /// ([`Self::dense_layers`]).
    pub fn moe_layers(&self) -> u32 {
        if self.is_moe() {
            self.layers.saturating_sub(self.dense_layers)
        } else {
            0
        }
    }

    /// Whether gate and up are one matmul: every fused model's
    /// ([`Self::fused_projections`]) and GLM's ([`Self::fused_gate_up`]).
    pub fn gate_up_fused(&self) -> bool {
        self.fused_projections || self.fused_gate_up
    }

    /// The dense block of an MoE model that has some ([`Self::dense_layers`]):
    /// the same attention and norms, one MLP `dense_ffn` wide.
    pub fn dense_block(&self) -> Option<ModelSpec> {
        (self.is_moe() && self.dense_layers > 0).then(|| ModelSpec {
            experts: 0,
            experts_per_token: 0,
            shared_experts: 0,
            ffn: self.dense_ffn,
            dense_layers: 0,
            dense_ffn: 0,
            ..self.clone()
        })
    }

    /// `per_block` summed over the decoder stack: the expert blocks' and,
    /// for an MoE model with dense blocks ([`Self::dense_layers`]), the dense
    /// ones' own.
    fn over_decoder_stack(&self, per_block: impl Fn(&ModelSpec) -> u64) -> u64 {
        match self.dense_block() {
            Some(d) => {
                let experts = self.moe_layers() as u64;
                let dense = self.layers as u64 - experts;
                experts * per_block(self) + dense * per_block(&d)
            }
            None => self.layers as u64 * per_block(self),
        }
    }

    /// One decoder (or encoder-only) block (an expert block of an MoE model
    /// with dense blocks too).
    pub fn layer_params(&self) -> u64 {
        self.attention_params()
            + self.mlp_params()
            + self.norms_per_layer as u64 * self.norm_params()
    }

    /// One decoder block of an encoder–decoder model (adds cross-attention and its norm).
    fn cross_layer_params(&self) -> u64 {
        self.layer_params() + self.attention_params() + self.norm_params()
    }

    /// Token (+ position, + token-type) embeddings.
    pub fn embedding_params(&self) -> u64 {
        let h = self.hidden as u64;
        let mut p = self.vocab as u64 * h;
        if self.positions == Positions::Learned {
            // An encoder–decoder (BART) learns one position table per stack
            // (`BartEncoder.embed_positions`, `BartDecoder.embed_positions`).
            let tables = if self.arch == Arch::EncoderDecoder {
                2
            } else {
                1
            };
            p += tables * self.max_positions as u64 * h;
        }
        if self.arch == Arch::Encoder {
            // BERT: 2 token types, a LayerNorm after the embeddings.
            p += 2 * h + self.norm_params();
        }
        p
    }

    /// The output head: LM head (untied), BERT pooler; a classifier's linear
    /// layer (BERT: after the pooler).
    pub fn head_params(&self) -> u64 {
        let h = self.hidden as u64;
        if self.head == ModelHead::Classifier {
            let classifier = h * CLASSIFIER_OUTPUTS + CLASSIFIER_OUTPUTS;
            return match self.arch {
                Arch::Encoder => h * h + h + classifier,
                _ => classifier,
            };
        }
        match self.arch {
            // BERT base model: pooler dense h×h + bias (the MLM head is not counted
            // in the published 110M/340M figures).
            Arch::Encoder => h * h + h,
            _ if self.tied_embeddings => 0,
            _ => self.vocab as u64 * h,
        }
    }

    /// Parameters of the whole model.
    pub fn params(&self) -> u64 {
        let stacks = match self.arch {
            Arch::EncoderDecoder => {
                self.encoder_layers as u64 * self.layer_params()
                    + self.layers as u64 * self.cross_layer_params()
                    + 2 * self.norm_params()
            }
            // BERT-style encoders are post-LN: no norm after the last block.
            Arch::Encoder => self.layers as u64 * self.layer_params(),
            Arch::Decoder => self.over_decoder_stack(Self::layer_params) + self.norm_params(),
        };
        let rel = if self.positions == Positions::Relative {
            let stacks_n = if self.arch == Arch::EncoderDecoder {
                2
            } else {
                1
            };
            stacks_n * 32 * self.heads as u64
        } else {
            0
        };
        // (Saturating: a plan's vision count is bounded only when it is
        // validated, and this may run before.)
        (self.embedding_params() + stacks + self.head_params() + rel)
            .saturating_add(self.vision_params)
    }

    /// Parameters a token passes through (MoE: only `experts_per_token` experts).
    pub fn active_params(&self) -> u64 {
        if !self.is_moe() {
            return self.params();
        }
        let expert_blocks = match self.arch {
            Arch::Decoder => self.moe_layers(),
            _ => self.total_layers(),
        };
        let idle = (self.experts.saturating_sub(self.experts_per_token)) as u64
            * self.one_mlp_params()
            * expert_blocks as u64;
        self.params().saturating_sub(idle)
    }

    /// All blocks, encoder and decoder.
    pub fn total_layers(&self) -> u32 {
        self.layers.saturating_add(self.encoder_layers)
    }

    /// The weight matrices inside the blocks (what LoRA targets and what tensor
    /// parallelism splits), excluding embeddings, norms and the LM head.
    pub fn block_matrix_params(&self) -> u64 {
        let per = self.attention_params() + self.mlp_params();
        match self.arch {
            Arch::EncoderDecoder => {
                self.encoder_layers as u64 * per
                    + self.layers as u64 * (per + self.attention_params())
            }
            Arch::Decoder => self.over_decoder_stack(|m| m.attention_params() + m.mlp_params()),
            Arch::Encoder => self.layers as u64 * per,
        }
    }
}
