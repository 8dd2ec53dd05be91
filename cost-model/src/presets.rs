//! Presets of widely used open models. Dimensions come from each model's
//! Hugging Face `config.json`; `published` is the parameter count the model
//! card or `sum(p.numel())` of the released checkpoint gives (a test checks
//! that [`ModelSpec::params`] lands within 0.5 % of it).

use crate::model::{Arch, Mla, Mlp, ModelHead, ModelSpec, Norm, Positions};

/// A preset: the model's dimensions and its published parameter count.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub id: &'static str,
    pub name: &'static str,
    pub published_params: u64,
    dims: Dims,
}

#[derive(Clone, Copy, Debug)]
struct Dims {
    arch: Arch,
    layers: u32,
    encoder_layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    ffn: u32,
    mlp: Mlp,
    vocab: u32,
    tied: bool,
    norm: Norm,
    norms_per_layer: u32,
    positions: Positions,
    max_positions: u32,
    linear_bias: bool,
    qkv_bias: bool,
    experts: u32,
    experts_per_token: u32,
    shared_experts: u32,
    dense_layers: u32,
    dense_ffn: u32,
    mla: Option<Mla>,
    fused_projections: bool,
    /// Gate and up alone fused ([`ModelSpec::fused_gate_up`]).
    fused_gate_up: bool,
    /// Attention sinks ([`ModelSpec::attention_sinks`]).
    attention_sinks: bool,
    /// Every expert runs every token ([`ModelSpec::dense_experts`]).
    dense_experts: bool,
    /// gpt-oss's clamped GLU ([`ModelSpec::clamped_glu`]).
    clamped_glu: bool,
    gelu_new: bool,
    /// The MLP activation is ReLU ([`ModelSpec::relu`]).
    relu: bool,
    /// q/k norms ([`ModelSpec::qk_norm`]).
    qk_norm: bool,
    /// The LM head adds `final_logits_bias` ([`ModelSpec::logits_bias`]).
    logits_bias: bool,
    /// SDPA always gets a materialised mask ([`ModelSpec::sdpa_mask`]).
    sdpa_mask: bool,
    /// The checkpoint's config.json trains with dropout in its blocks
    /// (`hidden_dropout_prob`, `resid_pdrop`, `dropout`, `dropout_rate`
    /// above 0): GPT-2, BERT, RoBERTa, OPT, T5, BART; the decoders after
    /// them ship 0.0 (GPT-NeoX/Pythia, GPT-J, BLOOM, Falcon, Phi, the Llama
    /// lineage) — transformers 5.25 config classes and the hub configs.
    dropout: bool,
    softcap: bool,
    parallel_residual: bool,
    norm_fp32_affine: bool,
    sliding_window: u32,
    /// The vision encoder and projector ([`ModelSpec::vision_params`]).
    vision_params: u64,
}

/// A Llama-style decoder: RMSNorm, rotary, SwiGLU, no biases.
#[allow(clippy::too_many_arguments)] // one row of a config table, in config.json's order
const fn llama(
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    ffn: u32,
    vocab: u32,
    tied: bool,
) -> Dims {
    Dims {
        arch: Arch::Decoder,
        layers,
        encoder_layers: 0,
        hidden,
        heads,
        kv_heads,
        head_dim,
        ffn,
        mlp: Mlp::Gated,
        vocab,
        tied,
        norm: Norm::RmsNorm,
        norms_per_layer: 2,
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
        dropout: false,
        softcap: false,
        parallel_residual: false,
        norm_fp32_affine: false,
        sliding_window: 0,
        vision_params: 0,
    }
}

/// A GPT-2/BERT-style block: LayerNorm, learned positions, biases, plain GELU MLP.
const fn gpt(arch: Arch, layers: u32, hidden: u32, heads: u32, vocab: u32, max_pos: u32) -> Dims {
    Dims {
        arch,
        layers,
        encoder_layers: 0,
        hidden,
        heads,
        kv_heads: heads,
        head_dim: hidden / heads,
        ffn: 4 * hidden,
        mlp: Mlp::Plain,
        vocab,
        tied: true,
        norm: Norm::LayerNorm,
        norms_per_layer: 2,
        positions: Positions::Learned,
        max_positions: max_pos,
        linear_bias: true,
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
        dropout: true,
        softcap: false,
        parallel_residual: false,
        norm_fp32_affine: false,
        sliding_window: 0,
        vision_params: 0,
    }
}

/// T5 v1.0: encoder–decoder, relative attention bias, ReLU MLP, no biases, tied head.
const fn t5(layers: u32, hidden: u32, heads: u32, ffn: u32) -> Dims {
    Dims {
        arch: Arch::EncoderDecoder,
        layers,
        encoder_layers: layers,
        hidden,
        heads,
        kv_heads: heads,
        head_dim: 64,
        ffn,
        mlp: Mlp::Plain,
        vocab: 32128,
        tied: true,
        norm: Norm::RmsNorm,
        norms_per_layer: 2,
        positions: Positions::Relative,
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
        relu: true,
        qk_norm: false,
        logits_bias: false,
        sdpa_mask: false,
        dropout: true,
        softcap: false,
        parallel_residual: false,
        norm_fp32_affine: false,
        sliding_window: 0,
        vision_params: 0,
    }
}

/// T5 v1.1 (FLAN-T5, mT5, T0, mT0): T5 with a gated-GELU MLP (`gelu_new`,
/// transformers `T5Config.feed_forward_proj = "gated-gelu"`), an untied LM
/// head and 64-wide heads whatever the width (`d_kv`).
const fn t5_v11(layers: u32, hidden: u32, heads: u32, ffn: u32, vocab: u32) -> Dims {
    let mut d = t5(layers, hidden, heads, ffn);
    d.mlp = Mlp::Gated;
    d.relu = false; // its gated GELU, not v1.0's ReLU
    d.gelu_new = true;
    d.tied = false;
    d.vocab = vocab;
    d
}

/// An encoder–decoder whose encoder has `layers` blocks, not the decoder's
/// count (ByT5: three encoder blocks to each decoder one).
const fn encoder_stack(mut d: Dims, layers: u32) -> Dims {
    d.encoder_layers = layers;
    d
}

/// BART: encoder–decoder with learned positions, LayerNorm, GELU MLPs with
/// biases, a tied head (transformers `BartConfig`).
const fn bart(layers: u32, hidden: u32, heads: u32) -> Dims {
    let mut d = gpt(Arch::EncoderDecoder, layers, hidden, heads, 50265, 1026);
    d.encoder_layers = layers;
    d.logits_bias = true; // `final_logits_bias`
    d
}

/// ModernBERT (transformers `ModernBertConfig`): an encoder of pre-norm
/// LayerNorms without biases, rotary positions, q/k/v out of one `Wqkv` and
/// a GeGLU MLP out of one `Wi`, no biases on its linears, no dropout, a tied
/// decoder. Two layers in three attend over a 128-token window
/// (`local_attention`, `global_attn_every_n_layers` 3): SDPA takes a boolean
/// mask there, converts it to a float one per call and the memory-efficient
/// kernel keeps it — read as every layer, as for Gemma-3, which over-counts
/// the global layers' (replayed, `calibration/allocator_replay.py`: the
/// masked LM and the classifier without checkpointing kept 14 masks of
/// 16 × 512² in their 22 layers, 0.109 GiB; −1.30 % / −2.01 % allocated
/// without them).
const fn modernbert(layers: u32, hidden: u32, heads: u32, ffn: u32) -> Dims {
    let mut d = fused(gpt(Arch::Encoder, layers, hidden, heads, 50368, 0));
    d.ffn = ffn;
    d.mlp = Mlp::Gated;
    d.positions = Positions::Rotary;
    d.linear_bias = false;
    d.dropout = false;
    window(d, MODERNBERT_LOCAL_ATTENTION)
}

/// ModernBERT's local attention window, tokens (config.json `local_attention`).
const MODERNBERT_LOCAL_ATTENTION: u32 = 128;

/// Marian (transformers `MarianConfig`, Helsinki-NLP's opus-mt pairs):
/// BART's post-norm blocks with a SiLU (`swish`) MLP and
/// `final_logits_bias`; its sinusoidal positions are a frozen 512-row table
/// (`MarianSinusoidalPositionalEmbedding`, an `nn.Embedding`), its vocabulary
/// the pair's.
const fn marian(layers: u32, hidden: u32, heads: u32, ffn: u32, vocab: u32) -> Dims {
    let mut d = bart(layers, hidden, heads);
    d.ffn = ffn;
    d.vocab = vocab;
    d.max_positions = 512;
    d
}

/// mBART (transformers `MBartConfig`): BART's blocks, pre-norm, with an
/// embedding LayerNorm and one after each stack.
const fn mbart(layers: u32, hidden: u32, heads: u32, vocab: u32) -> Dims {
    let mut d = bart(layers, hidden, heads);
    d.vocab = vocab;
    d
}

/// PEGASUS (transformers `PegasusConfig`): pre-norm BART blocks with a ReLU
/// MLP, `final_logits_bias`, and sinusoidal positions held as a frozen
/// 1024-row table (`PegasusSinusoidalPositionalEmbedding`).
const fn pegasus(layers: u32, hidden: u32, heads: u32, vocab: u32) -> Dims {
    let mut d = bart(layers, hidden, heads);
    d.vocab = vocab;
    d.max_positions = 1024;
    d.relu = true;
    d
}

/// M2M100 and NLLB-200 (transformers `M2M100Config`): BART's encoder–decoder
/// blocks (LayerNorms, biases, a tied head, dropout 0.1) with a ReLU MLP,
/// sinusoidal positions (no table: a learned one of no rows) and no
/// `final_logits_bias`; 16 heads at every width.
const fn m2m100(layers: u32, hidden: u32, ffn: u32, vocab: u32) -> Dims {
    let mut d = gpt(Arch::EncoderDecoder, layers, hidden, 16, vocab, 0);
    d.encoder_layers = layers;
    d.ffn = ffn;
    d.relu = true;
    d
}

const fn qwen(l: u32, h: u32, a: u32, kv: u32, ffn: u32, vocab: u32, tied: bool) -> Dims {
    let mut d = llama(l, h, a, kv, h / a, ffn, vocab, tied);
    d.qkv_bias = true;
    d
}

/// A multimodal checkpoint: its language model's dimensions with the vision
/// encoder and projector beside them, counted from its `vision_config`
/// (`hf_config::vision_params`).
const fn with_vision(mut d: Dims, params: u64) -> Dims {
    d.vision_params = params;
    d
}

/// gpt-oss: biases on the attention projections (`attention_bias: true`),
/// a learned sink logit per head ([`ModelSpec::attention_sinks`]) and a
/// clamped GLU in its experts ([`ModelSpec::clamped_glu`]).
const fn gpt_oss(d: Dims) -> Dims {
    let mut d = attention_bias(d);
    d.attention_sinks = true;
    d.clamped_glu = true;
    d
}

/// Biases on q, k and v (`attention_bias: true`: GLM-4.5, gpt-oss).
const fn attention_bias(mut d: Dims) -> Dims {
    d.qkv_bias = true;
    d
}

/// GLM-4 (transformers `Glm4DecoderLayer`): Llama blocks with sandwich
/// norms (`post_self_attn_layernorm`, `post_mlp_layernorm`) and biases on
/// q/k/v (`attention_bias`); gate and up in one `gate_up_proj`, whose output
/// the SwiGLU keeps whole — what a gate and an up output kept apart take —
/// and which PEFT adapts as one module ([`ModelSpec::fused_gate_up`]).
const fn glm4(d: Dims) -> Dims {
    let mut d = sandwich(d);
    d.qkv_bias = true;
    d.fused_gate_up = true;
    d
}

/// Attention over a sliding window of `w` tokens (config.json `sliding_window`).
const fn window(mut d: Dims, w: u32) -> Dims {
    d.sliding_window = w;
    d
}

const fn moe(mut d: Dims, experts: u32, k: u32) -> Dims {
    d.experts = experts;
    d.experts_per_token = k;
    d
}

/// An MoE model's always-active shared experts (counted in routed experts'
/// widths) and its dense blocks, `dense_ffn` wide ([`ModelSpec::dense_layers`]).
const fn shared_and_dense(mut d: Dims, shared: u32, dense_layers: u32, dense_ffn: u32) -> Dims {
    d.shared_experts = shared;
    d.dense_layers = dense_layers;
    d.dense_ffn = dense_ffn;
    d
}

/// Llama-4 (transformers `Llama4TextMoe`): every expert runs every token
/// ([`ModelSpec::dense_experts`]).
const fn llama4(mut d: Dims) -> Dims {
    d.dense_experts = true;
    d
}

/// Multi-head latent attention ([`Mla`]): `head_dim` is q's and k's width
/// per head (`qk_nope_head_dim + qk_rope_head_dim`).
const fn mla(mut d: Dims, q_rank: u32, kv_rank: u32, rope_dim: u32, v_dim: u32) -> Dims {
    d.mla = Some(Mla {
        q_rank,
        kv_rank,
        rope_dim,
        v_dim,
    });
    d
}

/// q/k/v (and gate/up) from one matmul each.
const fn fused(mut d: Dims) -> Dims {
    d.fused_projections = true;
    d
}

/// GPT-Neo (transformers `GPTNeoConfig`): GPT-2's block with separate
/// q/k/v, Python's `gelu_new`, learned positions (2048), a tied head and no
/// dropout in its checkpoints' configs; eager attention only (transformers
/// has no SDPA path for it), global and local (256-token window) layers
/// alternating over full scores either way. Its attention casts q and k to
/// fp32 before the score matmul (`_attn`), which keeps those copies instead
/// of the 16-bit ones: 4 bytes per token per hidden unit a block more than
/// counted.
const fn gpt_neo(layers: u32, hidden: u32, heads: u32) -> Dims {
    let mut d = gpt(Arch::Decoder, layers, hidden, heads, 50257, 2048);
    d.gelu_new = true;
    d.dropout = false;
    d
}

/// GPT-BigCode (StarCoder, StarCoderBase): GPT-2's block — LayerNorms,
/// biases, learned positions (8192), a tied head, dropout 0.1 in its
/// config — with multi-query attention out of one fused `c_attn` (q and
/// one k/v head) and the C++ tanh GELU (`gelu_pytorch_tanh`)
/// (transformers `GPTBigCodeConfig`, `GPTBigCodeAttention`).
const fn gpt_bigcode(layers: u32, hidden: u32, heads: u32) -> Dims {
    let mut d = fused(gpt(Arch::Decoder, layers, hidden, heads, 49152, 8192));
    d.kv_heads = 1;
    d
}

/// OpenAI GPT-2 as transformers implements it: fused `c_attn`, `gelu_new`.
const fn gpt2(layers: u32, hidden: u32, heads: u32) -> Dims {
    let mut d = fused(gpt(Arch::Decoder, layers, hidden, heads, 50257, 1024));
    d.gelu_new = true;
    d
}

const fn sandwich(mut d: Dims) -> Dims {
    d.norms_per_layer = 4;
    d
}

/// Gemma-2: sandwich norms, soft-capped attention scores and logits, and
/// RMSNorms that scale in fp32.
const fn gemma2(d: Dims) -> Dims {
    let mut d = sandwich(d);
    d.softcap = true;
    d.norm_fp32_affine = true;
    d
}

/// Gemma-3: Gemma-2's sandwich norms and fp32-scaling RMSNorms, without soft-capping
/// (its `attn_logit_softcapping` / `final_logit_softcapping` are null). Five
/// of every six layers attend over a sliding window (`sliding_window`: 512
/// for the 270M and 1B, 1024 above; `sliding_window_pattern` 6), whose mask
/// transformers hands SDPA once the sequence reaches it; the presets put the
/// window on every layer, which over-counts the sixth (its mask and, with
/// grouped k/v, their repeat). Replayed (`calibration/allocator_replay.py
/// --families`, transformers 5.25): Gemma-3-4B at 4 × 2048 tokens, allocated
/// −18.8 % (bf16) and −8.2 % (LoRA) named by no preset, +0.27 % and +0.45 %
/// with it; Gemma-3-1B −1.33 / −1.16 % without the window, +0.11 / +0.23 %
/// with it.
const fn gemma3(d: Dims) -> Dims {
    let mut d = sandwich(d);
    d.norm_fp32_affine = true;
    d.qk_norm = true;
    d
}

/// Qwen3 (dense and MoE): Llama blocks with a per-head RMSNorm on q and k
/// (transformers `Qwen3Attention.q_norm`/`k_norm`).
const fn qk_norm(mut d: Dims) -> Dims {
    d.qk_norm = true;
    d
}

/// OLMo-2: norms after attention and MLP instead of before (as many, so the
/// count is a Llama block's), RMSNorms on the whole q and k projections, and
/// every RMSNorm scaling in fp32 (`(self.weight * hidden_states)` before the
/// cast back: transformers `Olmo2RMSNorm`).
const fn olmo2(mut d: Dims) -> Dims {
    d.qk_norm = true;
    d.norm_fp32_affine = true;
    d
}

/// Phi-1.5 / Phi-2: parallel attention+MLP under one LayerNorm, biases, untied head.
const fn phi(layers: u32, hidden: u32, heads: u32) -> Dims {
    let mut d = gpt(Arch::Decoder, layers, hidden, heads, 51200, 0);
    d.positions = Positions::Rotary;
    d.norms_per_layer = 1;
    d.tied = false;
    d.gelu_new = true;
    d.dropout = false;
    d
}

const fn falcon7b() -> Dims {
    let mut d = fused(gpt(Arch::Decoder, 32, 4544, 71, 65024, 0));
    d.kv_heads = 1;
    d.head_dim = 64;
    d.positions = Positions::Rotary;
    d.norms_per_layer = 1;
    d.linear_bias = false;
    d.dropout = false;
    d.sdpa_mask = true; // `create_causal_mask(..., allow_is_causal_skip=False)`
    d
}

/// Falcon-40B's block (`new_decoder_architecture`, as Falcon-180B's): fused
/// grouped-query q/k/v, attention and MLP side by side from the block input
/// under a LayerNorm each (`ln_attn`, `ln_mlp`), no biases, rotary, a tied
/// head (transformers `FalconDecoderLayer`, `FalconConfig`).
const fn falcon_new(layers: u32, hidden: u32, heads: u32, kv_heads: u32) -> Dims {
    let mut d = fused(gpt(Arch::Decoder, layers, hidden, heads, 65024, 0));
    d.kv_heads = kv_heads;
    d.head_dim = 64;
    d.positions = Positions::Rotary;
    d.parallel_residual = true;
    d.linear_bias = false;
    d.dropout = false;
    d.sdpa_mask = true; // `create_causal_mask(..., allow_is_causal_skip=False)`
    d
}

/// Gemma (1): Gemma-2's fp32-scaling RMSNorms (`(1 + weight)` in fp32) and
/// tied 256k embedding, with two norms per block and no soft-capping
/// (transformers `GemmaRMSNorm`, `GemmaConfig`).
const fn gemma1(d: Dims) -> Dims {
    let mut d = d;
    d.norm_fp32_affine = true;
    d
}

/// GPT-NeoX (Pythia, StableLM-Alpha): fused q/k/v, attention and MLP side by
/// side from the block input under a LayerNorm each (`use_parallel_residual`),
/// rotary, biases, an untied head (transformers `GPTNeoXConfig`).
const fn neox(layers: u32, hidden: u32, heads: u32, vocab: u32) -> Dims {
    let mut d = fused(gpt(Arch::Decoder, layers, hidden, heads, vocab, 0));
    d.positions = Positions::Rotary;
    d.parallel_residual = true;
    d.tied = false;
    d.dropout = false;
    d
}

/// OPT: pre-LN blocks with biases and a ReLU MLP, learned positions offset by
/// 2 (a 2050-row table for 2048 positions), a tied head (transformers
/// `OPTLearnedPositionalEmbedding`).
const fn opt(layers: u32, hidden: u32, heads: u32) -> Dims {
    let mut d = gpt(Arch::Decoder, layers, hidden, heads, 50272, 2050);
    d.relu = true;
    d
}

/// BLOOM: fused `query_key_value`, ALiBi (no position table), a LayerNorm
/// after the embedding, biases, a tied 250880-token head; its GELU is a custom
/// autograd function that keeps only its input (transformers `GeLUFunction`).
const fn bloom(layers: u32, hidden: u32, heads: u32) -> Dims {
    let mut d = fused(gpt(Arch::Decoder, layers, hidden, heads, 250880, 0));
    d.positions = Positions::Alibi;
    d.dropout = false;
    d
}

/// GPT-J: attention and MLP in parallel under one LayerNorm, no attention
/// biases (the MLP's are kept), rotary, `gelu_new`, an untied head with a bias.
const fn gptj(layers: u32, hidden: u32, heads: u32, vocab: u32) -> Dims {
    let mut d = gpt(Arch::Decoder, layers, hidden, heads, vocab, 0);
    d.positions = Positions::Rotary;
    d.norms_per_layer = 1;
    d.tied = false;
    d.gelu_new = true;
    d.dropout = false;
    d
}

/// RoBERTa: BERT's encoder with a 50265-token vocabulary and a 514-row
/// position table (padding offset 2).
const fn roberta(layers: u32, hidden: u32, heads: u32) -> Dims {
    gpt(Arch::Encoder, layers, hidden, heads, 50265, 514)
}

/// MPT (MosaicML): fused `Wqkv`, ALiBi (no position table), LayerNorms and
/// linears without biases (`no_bias: true`), an exact-GELU MLP 4 × wide, a
/// tied 50432-token head, no dropout (transformers `MptConfig`, the hub's
/// mpt-7b / mpt-30b config.json; transformers' MPT has no SDPA path).
const fn mpt(layers: u32, hidden: u32, heads: u32) -> Dims {
    let mut d = fused(gpt(Arch::Decoder, layers, hidden, heads, 50432, 0));
    d.positions = Positions::Alibi;
    d.linear_bias = false;
    d.dropout = false;
    d
}

/// StableLM-2 (1.6B): Llama's SwiGLU blocks under LayerNorms with biases
/// (not RMSNorm), biases on q/k/v, a quarter of each head rotary, an untied
/// 100352-token head (transformers `StableLmConfig`: `use_qkv_bias`,
/// `partial_rotary_factor` 0.25).
const fn stablelm2(layers: u32, hidden: u32, heads: u32, ffn: u32) -> Dims {
    let mut d = llama(
        layers,
        hidden,
        heads,
        heads,
        hidden / heads,
        ffn,
        100352,
        false,
    );
    d.norm = Norm::LayerNorm;
    d.qkv_bias = true;
    d
}

macro_rules! p {
    ($id:expr, $name:expr, $params:expr, $dims:expr) => {
        Preset {
            id: $id,
            name: $name,
            published_params: $params,
            dims: $dims,
        }
    };
}

/// A `static`, not a `const`: as a `const`, a 110th preset (any of the four
/// added in the forty-second session) flipped wasm-split into moving 38 KB of
/// shared code from the lazy chunks into the page's WASM — 396,185 B gzip -9
/// with 109 presets, 410,521–410,961 B with 110–113, over the 409,600 B
/// budget (the same move docs/BENCHMARKS.md records for c828ea8); as a
/// `static`, 393,315 B with 113 (one table in the data section).
static PRESETS: &[Preset] = &[
    p!(
        "llama-3.1-8b",
        "Llama-3.1-8B / Llama-3-8B",
        8_030_261_248,
        llama(32, 4096, 32, 8, 128, 14336, 128256, false)
    ),
    p!(
        "llama-3.1-70b",
        "Llama-3.1-70B",
        70_553_706_496,
        llama(80, 8192, 64, 8, 128, 28672, 128256, false)
    ),
    p!(
        "llama-3.1-405b",
        "Llama-3.1-405B",
        405_853_388_800,
        llama(126, 16384, 128, 8, 128, 53248, 128256, false)
    ),
    p!(
        "llama-3.2-1b",
        "Llama-3.2-1B",
        1_235_814_400,
        llama(16, 2048, 32, 8, 64, 8192, 128256, true)
    ),
    p!(
        "llama-3.2-3b",
        "Llama-3.2-3B",
        3_212_749_824,
        llama(28, 3072, 24, 8, 128, 8192, 128256, true)
    ),
    p!(
        "llama-2-7b",
        "Llama-2-7B",
        6_738_415_616,
        llama(32, 4096, 32, 32, 128, 11008, 32000, false)
    ),
    // LLaVA-1.5 (llava-hf): Vicuna-7B (Llama-2-7B, 64 image and padding
    // tokens more) and CLIP ViT-L/14 at 336 px with a two-layer projector.
    p!(
        "llava-1.5-7b",
        "LLaVA-1.5-7B",
        7_063_427_072,
        with_vision(
            llama(32, 4096, 32, 32, 128, 11008, 32064, false),
            324_487_168
        )
    ),
    p!(
        "llama-2-13b",
        "Llama-2-13B",
        13_015_864_320,
        llama(40, 5120, 40, 40, 128, 13824, 32000, false)
    ),
    p!(
        "llama-2-70b",
        "Llama-2-70B",
        68_976_648_192,
        llama(80, 8192, 64, 8, 128, 28672, 32000, false)
    ),
    p!(
        "mistral-7b",
        "Mistral-7B-v0.1",
        7_241_732_096,
        window(llama(32, 4096, 32, 8, 128, 14336, 32000, false), 4096)
    ),
    // v0.3 (base and Instruct): 768 more tokens (32768) and no sliding
    // window (config.json `sliding_window: null`); Instruct v0.2 dropped the
    // window too but keeps 32000 tokens.
    p!(
        "mistral-7b-v0.3",
        "Mistral-7B-v0.3",
        7_248_023_552,
        llama(32, 4096, 32, 8, 128, 14336, 32768, false)
    ),
    p!(
        "mistral-nemo-12b",
        "Mistral-NeMo-12B",
        12_247_782_400,
        llama(40, 5120, 32, 8, 128, 14336, 131072, false)
    ),
    p!(
        "mixtral-8x7b",
        "Mixtral-8x7B",
        46_702_792_704,
        moe(llama(32, 4096, 32, 8, 128, 14336, 32000, false), 8, 2)
    ),
    p!(
        "mixtral-8x22b",
        "Mixtral-8x22B",
        140_620_634_112,
        moe(llama(56, 6144, 48, 8, 128, 16384, 32768, false), 8, 2)
    ),
    p!(
        "qwen2.5-0.5b",
        "Qwen2.5-0.5B",
        494_032_768,
        qwen(24, 896, 14, 2, 4864, 151936, true)
    ),
    p!(
        "qwen2.5-1.5b",
        "Qwen2.5-1.5B",
        1_543_714_304,
        qwen(28, 1536, 12, 2, 8960, 151936, true)
    ),
    p!(
        "qwen2.5-3b",
        "Qwen2.5-3B",
        3_085_938_688,
        qwen(36, 2048, 16, 2, 11008, 151936, true)
    ),
    p!(
        "qwen2.5-7b",
        "Qwen2.5-7B",
        7_615_616_512,
        qwen(28, 3584, 28, 4, 18944, 152064, false)
    ),
    // Qwen2.5-VL: the Qwen2.5 language model (its 3B ties the head, as
    // Qwen2.5-3B does) and a 32-block ViT of 1280 with its 2 × 2 patch merger
    // into the language model's width.
    p!(
        "qwen2.5-vl-3b",
        "Qwen2.5-VL-3B",
        3_754_622_976,
        with_vision(qwen(36, 2048, 16, 2, 11008, 151936, true), 668_684_288)
    ),
    p!(
        "qwen2.5-vl-7b",
        "Qwen2.5-VL-7B",
        8_292_166_656,
        with_vision(qwen(28, 3584, 28, 4, 18944, 152064, false), 676_550_144)
    ),
    p!(
        "qwen2.5-vl-72b",
        "Qwen2.5-VL-72B",
        73_406_351_360,
        with_vision(qwen(80, 8192, 64, 8, 29568, 152064, false), 700_147_712)
    ),
    p!(
        "qwen2.5-14b",
        "Qwen2.5-14B",
        14_770_033_664,
        qwen(48, 5120, 40, 8, 13824, 152064, false)
    ),
    p!(
        "qwen2.5-32b",
        "Qwen2.5-32B",
        32_763_876_352,
        qwen(64, 5120, 40, 8, 27648, 152064, false)
    ),
    p!(
        "qwen2.5-72b",
        "Qwen2.5-72B",
        72_706_203_648,
        qwen(80, 8192, 64, 8, 29568, 152064, false)
    ),
    // Qwen3, Mistral-Small-24B, OLMo-2, Gemma-3-1B, Phi-4: the sum of the
    // released tensors' sizes as their config.json gives them (q/k norms
    // included), which the model cards round (0.6B, 4.0B, 8.2B, 14.8B, 32.8B,
    // 30.5B, 24B, 7.3B, 1B, 14.7B).
    p!(
        "qwen3-0.6b",
        "Qwen3-0.6B",
        596_049_920,
        qk_norm(llama(28, 1024, 16, 8, 128, 3072, 151936, true))
    ),
    p!(
        "qwen3-1.7b",
        "Qwen3-1.7B",
        1_720_567_808,
        qk_norm(llama(28, 2048, 16, 8, 128, 6144, 151936, true))
    ),
    p!(
        "qwen3-4b",
        "Qwen3-4B",
        4_022_468_096,
        qk_norm(llama(36, 2560, 32, 8, 128, 9728, 151936, true))
    ),
    p!(
        "qwen3-8b",
        "Qwen3-8B",
        8_190_735_360,
        qk_norm(llama(36, 4096, 32, 8, 128, 12288, 151936, false))
    ),
    p!(
        "qwen3-14b",
        "Qwen3-14B",
        14_768_307_200,
        qk_norm(llama(40, 5120, 40, 8, 128, 17408, 151936, false))
    ),
    p!(
        "qwen3-32b",
        "Qwen3-32B",
        32_762_123_264,
        qk_norm(llama(64, 5120, 64, 8, 128, 25600, 151936, false))
    ),
    p!(
        "qwen3-30b-a3b",
        "Qwen3-30B-A3B (MoE)",
        30_532_122_624,
        qk_norm(moe(llama(48, 2048, 32, 4, 128, 768, 151936, false), 128, 8))
    ),
    // 94 × (attention 71,303,168 + q/k norms + two norms + router 4096·128 +
    // 128 experts × 3 · 4096 · 1536) + two 151936 × 4096 embeddings + the
    // final norm (the card: 235B total, 22B active).
    p!(
        "qwen3-235b-a22b",
        "Qwen3-235B-A22B (MoE)",
        235_093_634_560,
        qk_norm(moe(
            llama(94, 4096, 64, 4, 128, 1536, 151936, false),
            128,
            8
        ))
    ),
    // Qwen1.5-MoE-A2.7B: 24 blocks of 60 routed experts (top-4, 1408 wide)
    // beside one shared expert 5632 wide (`shared_expert_intermediate_size`:
    // four routed widths), biases on q/k/v; the card's 14.3B total (2.7B
    // active).
    // OLMoE-1B-7B (AllenAI): 64 experts 1024 wide, 8 a token, no shared
    // expert, RMSNorms on the whole q and k projections as OLMo-2's (but
    // scaling in the input's dtype, as Llama's), an untied head
    // (transformers `OlmoeConfig`, the hub's 0924 config.json; 6,919,161,856
    // in transformers 5.25's model built from it, 1.3 B active on the card).
    p!(
        "olmoe-1b-7b",
        "OLMoE-1B-7B (MoE)",
        6_919_161_856,
        qk_norm(moe(llama(16, 2048, 16, 16, 128, 1024, 50304, false), 64, 8))
    ),
    p!(
        "qwen1.5-moe-a2.7b",
        "Qwen1.5-MoE-A2.7B (MoE, shared expert)",
        14_300_000_000,
        shared_and_dense(
            moe(qwen(24, 2048, 16, 16, 1408, 151936, false), 60, 4),
            4,
            0,
            0
        )
    ),
    // DeepSeek-MoE-16B: 28 blocks, the first dense (`first_k_dense_replace`
    // 1, `intermediate_size` 10944), the others 64 routed experts 1408 wide
    // (top-6) and 2 shared ones (`n_shared_experts`); the card's 16.4B total
    // (2.8B active).
    p!(
        "deepseek-moe-16b",
        "DeepSeek-MoE-16B (MoE, shared experts, a dense block)",
        16_400_000_000,
        shared_and_dense(
            moe(llama(28, 2048, 16, 16, 128, 1408, 102400, false), 64, 6),
            2,
            1,
            10944
        )
    ),
    // Llama-4-Maverick: 48 blocks alternating dense (`intermediate_size_mlp`
    // 16384) and MoE (`interleave_moe_layer_step` 2: 128 routed experts
    // 8192 wide, top-1, and one shared expert); the card's 400B total (17B
    // active), the text model (the vision encoder is not counted).
    p!(
        "llama-4-scout-17b-16e",
        "Llama-4-Scout-17B-16E (MoE text model)",
        107_769_861_120,
        llama4(shared_and_dense(
            moe(llama(48, 5120, 40, 8, 128, 8192, 202048, false), 16, 1),
            1,
            0,
            0
        ))
    ),
    p!(
        "llama-4-maverick-17b-128e",
        "Llama-4-Maverick-17B-128E (MoE text model)",
        400_000_000_000,
        llama4(shared_and_dense(
            moe(llama(48, 5120, 40, 8, 128, 8192, 202048, false), 128, 1),
            1,
            24,
            16384
        ))
    ),
    // DeepSeek-V2-Lite: multi-head latent attention without a q latent
    // (`q_lora_rank: null`, `kv_lora_rank` 512, 128 + 64 rotary q/k per head,
    // 128-wide values), 27 blocks, the first dense (10944), the others 64
    // routed experts 1408 wide (top-6) and 2 shared; the card's 15.7B total
    // (2.4B active).
    p!(
        "deepseek-v2-lite",
        "DeepSeek-V2-Lite (MoE, latent attention)",
        15_700_000_000,
        mla(
            shared_and_dense(
                moe(llama(27, 2048, 16, 16, 192, 1408, 102400, false), 64, 6),
                2,
                1,
                10944
            ),
            0,
            512,
            64,
            128
        )
    ),
    // DeepSeek-V3 (and R1, V3.1, V3.2's dimensions): latent attention with a
    // 1536-wide q latent, 61 blocks, the first 3 dense (18432), the others
    // 256 routed experts 2048 wide (top-8) and one shared; the card's 671B
    // total (37B active), without the multi-token-prediction block the
    // checkpoint adds (685B) and transformers does not load.
    p!(
        "deepseek-v3",
        "DeepSeek-V3 / R1 (MoE, latent attention)",
        671_000_000_000,
        mla(
            shared_and_dense(
                moe(llama(61, 7168, 128, 128, 192, 2048, 129280, false), 256, 8),
                1,
                3,
                18432
            ),
            1536,
            512,
            64,
            128
        )
    ),
    p!(
        "mistral-small-24b",
        "Mistral-Small-24B (3.x text; Magistral, Devstral Small)",
        23_572_403_200,
        llama(40, 5120, 32, 8, 128, 32768, 131072, false)
    ),
    p!(
        "glm-4.5-air",
        "GLM-4.5-Air (MoE)",
        106_852_245_504,
        attention_bias(shared_and_dense(
            moe(llama(46, 4096, 96, 8, 128, 1408, 151552, false), 128, 8),
            1,
            1,
            10944
        ))
    ),
    p!(
        "phi-4-mini",
        "Phi-4-mini",
        3_836_021_760,
        fused(llama(32, 3072, 24, 8, 128, 8192, 200064, true))
    ),
    p!(
        "exaone-4.0-1.2b",
        "EXAONE-4.0-1.2B",
        1_279_391_488,
        qk_norm(llama(30, 2048, 32, 8, 64, 4096, 102400, true))
    ),
    p!(
        "ernie-4.5-0.3b",
        "ERNIE-4.5-0.3B",
        360_748_032,
        llama(18, 1024, 16, 2, 128, 3072, 103424, true)
    ),
    p!(
        "hunyuan-1.8b",
        "Hunyuan-1.8B",
        1_791_080_448,
        qk_norm(llama(32, 2048, 16, 4, 128, 6144, 120818, true))
    ),
    p!(
        "glm-4-9b",
        "GLM-4-9B",
        9_400_279_040,
        glm4(llama(40, 4096, 32, 2, 128, 13696, 151552, false))
    ),
    p!(
        "gpt-oss-20b",
        "gpt-oss-20b (MoE, experts in bf16)",
        // The model card's table: 20.91B total (3.61B active).
        20_910_000_000,
        gpt_oss(moe(llama(24, 2880, 64, 8, 64, 2880, 201088, false), 32, 4))
    ),
    p!(
        "olmo-3-1025-7b",
        "OLMo-3-7B (1025)",
        7_298_011_136,
        window(
            olmo2(llama(32, 4096, 32, 32, 128, 11008, 100278, false)),
            4096
        )
    ),
    p!(
        "olmo-2-1124-7b",
        "OLMo-2-7B (1124)",
        7_298_617_344,
        olmo2(llama(32, 4096, 32, 32, 128, 11008, 100352, false))
    ),
    p!(
        "olmo-2-1124-13b",
        "OLMo-2-13B (1124)",
        13_716_198_400,
        olmo2(llama(40, 5120, 40, 40, 128, 13824, 100352, false))
    ),
    // SmolLM2 (HuggingFaceTB): Llama blocks, 49152 tokens, tied embeddings;
    // the counts are the sums of their config.json's tensors (135M, 360M,
    // 1.7B on the model cards).
    p!(
        "smollm2-135m",
        "SmolLM2-135M",
        134_515_008,
        llama(30, 576, 9, 3, 64, 1536, 49152, true)
    ),
    p!(
        "smollm2-360m",
        "SmolLM2-360M",
        361_821_120,
        llama(32, 960, 15, 5, 64, 2560, 49152, true)
    ),
    p!(
        "smollm2-1.7b",
        "SmolLM2-1.7B",
        1_711_376_384,
        llama(24, 2048, 32, 32, 64, 8192, 49152, true)
    ),
    // DeepSeek-R1-Distill-Qwen-1.5B: Qwen2.5-Math-1.5B, whose embedding is
    // not tied (151936 × 1536 more than Qwen2.5-1.5B; 1.78B on the card).
    p!(
        "deepseek-r1-distill-qwen-1.5b",
        "DeepSeek-R1-Distill-Qwen-1.5B",
        1_777_088_000,
        qwen(28, 1536, 12, 2, 8960, 151936, false)
    ),
    p!(
        "gemma-3-1b",
        "Gemma-3-1B",
        999_885_952,
        window(gemma3(llama(26, 1152, 4, 1, 256, 6912, 262144, true)), 512)
    ),
    p!(
        "gemma-3-4b",
        "Gemma-3-4B",
        3_880_263_168,
        window(
            gemma3(llama(34, 2560, 8, 4, 256, 10240, 262208, true)),
            1024
        )
    ),
    p!(
        "gemma-3-12b",
        "Gemma-3-12B",
        11_766_034_176,
        window(
            gemma3(llama(48, 3840, 16, 8, 256, 15360, 262208, true)),
            1024
        )
    ),
    p!(
        "gemma-3-27b",
        "Gemma-3-27B",
        27_009_346_304,
        window(
            gemma3(llama(62, 5376, 32, 16, 128, 21504, 262208, true)),
            1024
        )
    ),
    p!(
        "gemma-3-270m",
        "Gemma-3-270M",
        268_098_176,
        window(gemma3(llama(18, 640, 4, 1, 256, 2048, 262144, true)), 512)
    ),
    p!(
        "gemma-2-2b",
        "Gemma-2-2B",
        2_614_341_888,
        gemma2(llama(26, 2304, 8, 4, 256, 9216, 256000, true))
    ),
    p!(
        "gemma-2-9b",
        "Gemma-2-9B",
        9_241_705_984,
        gemma2(llama(42, 3584, 16, 8, 256, 14336, 256000, true))
    ),
    p!(
        "gemma-2-27b",
        "Gemma-2-27B",
        27_227_128_320,
        gemma2(llama(46, 4608, 32, 16, 128, 36864, 256000, true))
    ),
    p!(
        "gemma-2b",
        "Gemma-2B",
        2_506_172_416,
        gemma1(llama(18, 2048, 8, 1, 256, 16384, 256000, true))
    ),
    p!(
        "gemma-7b",
        "Gemma-7B",
        8_537_680_896,
        gemma1(llama(28, 3072, 16, 16, 256, 24576, 256000, true))
    ),
    p!(
        "phi-3-mini",
        "Phi-3-mini (3.8B)",
        3_821_079_552,
        fused(llama(32, 3072, 32, 32, 96, 8192, 32064, false))
    ),
    p!(
        "phi-3-medium",
        "Phi-3-medium (14B)",
        13_960_238_080,
        fused(llama(40, 5120, 40, 10, 128, 17920, 32064, false))
    ),
    p!(
        "phi-4",
        "Phi-4 (14B)",
        14_659_507_200,
        fused(llama(40, 5120, 40, 10, 128, 17920, 100352, false))
    ),
    p!("phi-2", "Phi-2", 2_779_683_840, phi(32, 2560, 32)),
    p!("phi-1.5", "Phi-1.5", 1_418_270_720, phi(24, 2048, 32)),
    p!("falcon-7b", "Falcon-7B", 6_921_720_704, falcon7b()),
    p!(
        "falcon-40b",
        "Falcon-40B",
        41_303_293_952,
        falcon_new(60, 8192, 128, 8)
    ),
    p!(
        "pythia-160m",
        "Pythia-160M",
        162_322_944,
        neox(12, 768, 12, 50304)
    ),
    p!(
        "pythia-410m",
        "Pythia-410M",
        405_334_016,
        neox(24, 1024, 16, 50304)
    ),
    p!(
        "pythia-1b",
        "Pythia-1B",
        1_011_781_632,
        neox(16, 2048, 8, 50304)
    ),
    p!(
        "pythia-1.4b",
        "Pythia-1.4B",
        1_414_647_808,
        neox(24, 2048, 16, 50304)
    ),
    p!(
        "pythia-2.8b",
        "Pythia-2.8B",
        2_775_208_960,
        neox(32, 2560, 32, 50304)
    ),
    p!(
        "pythia-6.9b",
        "Pythia-6.9B",
        6_857_302_016,
        neox(32, 4096, 32, 50432)
    ),
    p!(
        "gpt-neox-20b",
        "GPT-NeoX-20B",
        20_554_567_680,
        neox(44, 6144, 64, 50432)
    ),
    p!(
        "pythia-12b",
        "Pythia-12B",
        11_846_109_184,
        neox(36, 5120, 40, 50688)
    ),
    p!(
        "stablelm-base-alpha-3b",
        "StableLM-Base-Alpha-3B",
        3_637_321_728,
        neox(16, 4096, 32, 50688)
    ),
    p!(
        "stablelm-base-alpha-7b",
        "StableLM-Base-Alpha-7B",
        7_868_755_968,
        neox(16, 6144, 48, 50432)
    ),
    p!(
        "gpt-j-6b",
        "GPT-J-6B",
        6_050_882_784,
        gptj(28, 4096, 16, 50400)
    ),
    // MPT and StableLM-2: the parameter counts of transformers 5.25's models
    // built from the hub configs on the meta device (the MPT-7B one is the
    // 6.6493 B calibration/allocator_replay.py --families records).
    p!("mpt-7b", "MPT-7B", 6_649_286_656, mpt(32, 4096, 32)),
    p!("mpt-30b", "MPT-30B", 29_957_200_896, mpt(48, 7168, 64)),
    p!(
        "stablelm-2-1.6b",
        "StableLM-2-1.6B",
        1_644_515_328,
        stablelm2(24, 2048, 32, 5632)
    ),
    p!("opt-125m", "OPT-125M", 125_239_296, opt(12, 768, 12)),
    p!("opt-1.3b", "OPT-1.3B", 1_315_758_080, opt(24, 2048, 32)),
    p!("opt-2.7b", "OPT-2.7B", 2_651_596_800, opt(32, 2560, 32)),
    p!("opt-6.7b", "OPT-6.7B", 6_658_473_984, opt(32, 4096, 32)),
    p!("opt-13b", "OPT-13B", 12_853_514_240, opt(40, 5120, 40)),
    p!(
        "bloom-560m",
        "BLOOM-560M / BLOOMZ-560M",
        559_214_592,
        bloom(24, 1024, 16)
    ),
    p!(
        "bloom-1b7",
        "BLOOM-1B7 / BLOOMZ-1B7",
        1_722_408_960,
        bloom(24, 2048, 16)
    ),
    p!(
        "bloom-3b",
        "BLOOM-3B / BLOOMZ-3B",
        3_002_557_440,
        bloom(30, 2560, 32)
    ),
    p!(
        "bloom-7b1",
        "BLOOM-7B1 / BLOOMZ-7B1",
        7_069_016_064,
        bloom(30, 4096, 32)
    ),
    p!(
        "tinyllama-1.1b",
        "TinyLlama-1.1B",
        1_100_048_384,
        llama(22, 2048, 32, 4, 64, 5632, 32000, false)
    ),
    p!(
        "yi-34b",
        "Yi-34B",
        34_388_917_248,
        llama(60, 7168, 56, 8, 128, 20480, 64000, false)
    ),
    p!("gpt2", "GPT-2 (124M)", 124_439_808, gpt2(12, 768, 12)),
    p!(
        "gpt2-medium",
        "GPT-2 Medium (355M)",
        354_823_168,
        gpt2(24, 1024, 16)
    ),
    p!(
        "gpt2-large",
        "GPT-2 Large (774M)",
        774_030_080,
        gpt2(36, 1280, 20)
    ),
    p!(
        "gpt-neo-125m",
        "GPT-Neo 125M",
        125_198_592,
        gpt_neo(12, 768, 12)
    ),
    p!(
        "gpt-neo-1.3b",
        "GPT-Neo 1.3B",
        1_315_575_808,
        gpt_neo(24, 2048, 16)
    ),
    p!(
        "gpt-neo-2.7b",
        "GPT-Neo 2.7B",
        2_651_307_520,
        gpt_neo(32, 2560, 20)
    ),
    p!(
        "starcoderbase-1b",
        "StarCoderBase-1B",
        1_137_207_296,
        gpt_bigcode(24, 2048, 16)
    ),
    p!(
        "starcoderbase-3b",
        "StarCoderBase-3B",
        3_043_311_104,
        gpt_bigcode(36, 2816, 22)
    ),
    p!(
        "starcoderbase-7b",
        "StarCoderBase-7B",
        7_327_263_232,
        gpt_bigcode(42, 4096, 32)
    ),
    p!(
        "starcoderbase",
        "StarCoderBase-15B / StarCoder",
        15_517_456_384,
        gpt_bigcode(40, 6144, 48)
    ),
    p!(
        "gpt2-xl",
        "GPT-2 XL (1.5B)",
        1_557_611_200,
        gpt2(48, 1600, 25)
    ),
    p!(
        "bert-base",
        "BERT base (uncased)",
        109_482_240,
        gpt(Arch::Encoder, 12, 768, 12, 30522, 512)
    ),
    p!(
        "bert-large",
        "BERT large (uncased)",
        335_141_888,
        gpt(Arch::Encoder, 24, 1024, 16, 30522, 512)
    ),
    p!(
        "modernbert-base",
        "ModernBERT base",
        149_655_232,
        modernbert(22, 768, 12, 1152)
    ),
    p!(
        "modernbert-large",
        "ModernBERT large",
        395_881_664,
        modernbert(28, 1024, 16, 2624)
    ),
    p!(
        "roberta-base",
        "RoBERTa base",
        124_645_632,
        roberta(12, 768, 12)
    ),
    p!(
        "roberta-large",
        "RoBERTa large",
        355_359_744,
        roberta(24, 1024, 16)
    ),
    p!("t5-small", "T5 small", 60_506_624, t5(6, 512, 8, 2048)),
    p!("t5-base", "T5 base", 222_903_552, t5(12, 768, 12, 3072)),
    p!("t5-large", "T5 large", 737_668_096, t5(24, 1024, 16, 4096)),
    // FLAN-T5 and mT5: parameter counts as transformers reports them for
    // google/flan-t5-* and google/mt5-xxl (bigscience/T0_3B is flan-t5-xl's
    // shape, bigscience/mt0-xxl mT5-XXL's).
    p!(
        "flan-t5-small",
        "FLAN-T5 small",
        76_961_152,
        t5_v11(8, 512, 6, 1024, 32128)
    ),
    p!(
        "flan-t5-base",
        "FLAN-T5 base",
        247_577_856,
        t5_v11(12, 768, 12, 2048, 32128)
    ),
    p!(
        "flan-t5-large",
        "FLAN-T5 large",
        783_150_080,
        t5_v11(24, 1024, 16, 2816, 32128)
    ),
    p!(
        "flan-t5-xl",
        "FLAN-T5 XL / T0-3B",
        2_849_757_184,
        t5_v11(24, 2048, 32, 5120, 32128)
    ),
    p!(
        "flan-t5-xxl",
        "FLAN-T5 XXL",
        11_135_332_352,
        t5_v11(24, 4096, 64, 10240, 32128)
    ),
    p!(
        "mt5-small",
        "mT5 small / mT0-small",
        300_176_768,
        t5_v11(8, 512, 6, 1024, 250112)
    ),
    p!(
        "mt5-base",
        "mT5 base / mT0-base",
        582_401_280,
        t5_v11(12, 768, 12, 2048, 250112)
    ),
    p!(
        "mt5-large",
        "mT5 large / mT0-large",
        1_229_581_312,
        t5_v11(24, 1024, 16, 2816, 250112)
    ),
    p!(
        "mt5-xl",
        "mT5 XL / mT0-XL",
        3_742_619_648,
        t5_v11(24, 2048, 32, 5120, 250112)
    ),
    p!(
        "umt5-small",
        "UMT5 small",
        306_601_984,
        t5_v11(8, 512, 6, 1024, 256384)
    ),
    p!(
        "umt5-base",
        "UMT5 base",
        592_043_520,
        t5_v11(12, 768, 12, 2048, 256384)
    ),
    p!(
        "byt5-small",
        "ByT5 small",
        299_637_760,
        encoder_stack(t5_v11(4, 1472, 6, 3584, 384), 12)
    ),
    p!(
        "byt5-base",
        "ByT5 base",
        581_653_248,
        encoder_stack(t5_v11(6, 1536, 12, 3968, 384), 18)
    ),
    p!(
        "byt5-large",
        "ByT5 large",
        1_228_183_552,
        encoder_stack(t5_v11(12, 1536, 16, 3840, 384), 36)
    ),
    p!(
        "mt5-xxl",
        "mT5 XXL / mT0-XXL",
        12_921_057_280,
        t5_v11(24, 4096, 64, 10240, 250112)
    ),
    p!(
        "nllb-200-distilled-600m",
        "NLLB-200 distilled 600M",
        615_073_792,
        m2m100(12, 1024, 4096, 256206)
    ),
    p!(
        "nllb-200-distilled-1.3b",
        "NLLB-200 distilled 1.3B",
        1_370_638_336,
        m2m100(24, 1024, 8192, 256206)
    ),
    p!(
        "nllb-200-1.3b",
        "NLLB-200 1.3B",
        1_370_638_336,
        m2m100(24, 1024, 8192, 256206)
    ),
    p!(
        "nllb-200-3.3b",
        "NLLB-200 3.3B",
        3_344_863_232,
        m2m100(24, 2048, 8192, 256206)
    ),
    p!(
        "m2m100-418m",
        "M2M100 418M",
        483_905_536,
        m2m100(12, 1024, 4096, 128112)
    ),
    p!(
        "m2m100-1.2b",
        "M2M100 1.2B",
        1_239_470_080,
        m2m100(24, 1024, 8192, 128112)
    ),
    p!(
        "opus-mt",
        "Marian opus-mt (en-de)",
        74_410_496,
        marian(6, 512, 8, 2048, 58101)
    ),
    p!(
        "mbart-large",
        "mBART large (mBART-50)",
        610_879_488,
        mbart(12, 1024, 16, 250054)
    ),
    p!(
        "pegasus-large",
        "PEGASUS large",
        570_797_056,
        pegasus(16, 1024, 16, 96103)
    ),
    p!("bart-base", "BART base", 139_420_416, bart(6, 768, 12)),
    p!("bart-large", "BART large", 406_291_456, bart(12, 1024, 16)),
];

/// Hub-name prefixes of checkpoints that share a preset's shape, as
/// [`by_hub_id`] reads them (lower-cased, `_` as `.`).
const HUB_ALIASES: [(&str, &str); 30] = [
    // PEGASUS's fine-tunes keep the large model's shape (`pegasus-xsum`,
    // `pegasus-cnn_dailymail`); PEGASUS-X (`pegasus-x-base`) is another
    // model.
    ("pegasus-xsum", "pegasus-large"),
    ("pegasus-cnn.dailymail", "pegasus-large"),
    ("pegasus-multi.news", "pegasus-large"),
    // Llama 3 and 3.3 share Llama-3.1's shapes (8B, 70B); Qwen2 Qwen2.5's
    // (0.5B, 1.5B, 7B, 72B); BLOOMZ is BLOOM fine-tuned.
    ("meta-llama-3.1-", "llama-3.1-"),
    ("meta-llama-3-", "llama-3.1-"),
    ("llama-3.3-", "llama-3.1-"),
    ("qwen2-", "qwen2.5-"),
    ("bloomz-", "bloom-"),
    // Mistral-NeMo has one size (`Mistral-Nemo-Base-2407`, `…-Instruct-2407`).
    ("mistral-nemo-", "mistral-nemo-12b-"),
    ("t5-v1.1-", "flan-t5-"),
    ("t0.3b", "flan-t5-xl"),
    ("t0pp", "flan-t5-xxl"),
    ("t0", "flan-t5-xxl"),
    ("mt0-", "mt5-"),
    // LLaMA (1)'s 7B and 13B are Llama-2's shapes (`huggyllama/llama-7b`:
    // 32 × 4096, 11008, 32000; 40 × 5120, 13824); only the context differs.
    ("llama-7b", "llama-2-7b"),
    ("llama-13b", "llama-2-13b"),
    // Fine-tunes published under names of their own keep their base's shape:
    // DeepSeek-R1's distilled models are Qwen2.5 7B/14B/32B (the 7B from
    // Qwen2.5-Math-7B, the same shape; the 1.5B unties its embedding and has
    // a preset of its own) and Llama-3.1-8B / Llama-3.3-70B (their
    // config.json); Vicuna v1.5 is Llama-2; Zephyr-7B is Mistral-7B v0.1;
    // Code Llama 7B/13B are Llama-2's with 16 more tokens (32016: 131,072
    // more parameters, 0.002 %).
    ("deepseek-r1-distill-qwen-7b", "qwen2.5-7b"),
    ("deepseek-r1-distill-qwen-14b", "qwen2.5-14b"),
    ("deepseek-r1-distill-qwen-32b", "qwen2.5-32b"),
    ("deepseek-r1-distill-llama-", "llama-3.1-"),
    ("vicuna-7b", "llama-2-7b"),
    ("vicuna-13b", "llama-2-13b"),
    ("zephyr-7b", "mistral-7b"),
    ("codellama-7b", "llama-2-7b"),
    ("codellama-13b", "llama-2-13b"),
    // Qwen2.5-Coder and Qwen2.5-Math-7B keep Qwen2.5's shapes; Phi-3.5-mini
    // is Phi-3-mini's; Mistral-7B-Instruct-v0.3 is v0.3's.
    ("qwen2.5-coder-", "qwen2.5-"),
    ("qwen2.5-math-7b", "qwen2.5-7b"),
    ("phi-3.5-mini", "phi-3-mini"),
    ("mistral-7b-instruct-v0.3", "mistral-7b-v0.3"),
    // Qwen3-Coder-30B-A3B is Qwen3-30B-A3B's shape.
    ("qwen3-coder-30b-a3b", "qwen3-30b-a3b"),
];

/// Ways people write a model's name that [`by_name`] reads as the hub
/// name of a preset (lower-cased, spaces as `-`): "Llama 2 7B" and "llama2-7b",
/// "Llama-3-8B" (Llama-3.1's shapes, as `meta-llama-3-`), "GPT-2 XL",
/// "Qwen 2.5 7B", "Phi3 mini", "Tiny-Llama-1.1B". Applied until none fits.
const NAME_ALIASES: [(&str, &str); 10] = [
    ("llama2-", "llama-2-"),
    ("llama3-", "llama-3-"),
    ("llama3.", "llama-3."),
    ("llama-3-", "llama-3.1-"),
    ("gpt-2", "gpt2"),
    ("qwen-2.5-", "qwen2.5-"),
    ("qwen-2-", "qwen2-"),
    ("qwen-3-", "qwen3-"),
    ("phi3-", "phi-3-"),
    ("tiny-llama-", "tinyllama-"),
];

/// The preset a model's name, as people write it, names: a hub id or a
/// free-form name ("Llama 2 7B", "GPT-2 124M (from scratch)", "Mistral 7B
/// v0.1"), any case, up to a bracket or `;`/`,` that starts a comment
/// ([`NAME_ALIASES`], then [`by_hub_id`]).
pub fn by_name(name: &str) -> Option<&'static Preset> {
    by_hub_id(&written_name(name))
}

/// A model's name as people write it, in the spelling hub ids use: up to a
/// bracket or `;`/`,`, its last path part, words joined by `-`, lower case,
/// [`NAME_ALIASES`] applied.
fn written_name(name: &str) -> String {
    let head = name.split(['(', '[', ';', ',']).next().unwrap_or("");
    let head = head.rsplit('/').next().unwrap_or(head);
    let mut n = head
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("-")
        .to_ascii_lowercase();
    // An alias's output may start another ("llama3-" → "llama-3-" →
    // "llama-3.1-"); no chain is longer than the list.
    for _ in 0..NAME_ALIASES.len() {
        let Some((from, to)) = NAME_ALIASES.iter().find(|(from, _)| n.starts_with(from)) else {
            break;
        };
        n = format!("{to}{}", &n[from.len()..]);
    }
    n
}

/// Whether a name's `-`-separated word is a model size: `7b`, `1.5b`,
/// `560m`, BLOOM's `1b7`, Mixtral's `8x7b`, or a named one (`base`,
/// `large`, `xl`, …).
fn is_size(word: &str) -> bool {
    if matches!(
        word,
        "tiny" | "mini" | "small" | "base" | "medium" | "large" | "xl" | "xxl"
    ) {
        return true;
    }
    let word = word.split_once('x').map_or(word, |(n, rest)| {
        if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
            rest
        } else {
            word
        }
    });
    let Some(unit) = word.find(['b', 'm']) else {
        return false;
    };
    let (count, after) = (&word[..unit], &word[unit + 1..]);
    count.starts_with(|c: char| c.is_ascii_digit())
        && count.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && after.bytes().all(|b| b.is_ascii_digit())
}

/// A preset id's family: the id up to its first size word (`gemma-3-1b` →
/// `gemma-3-`, `mt5-base` → `mt5-`, `qwen3-30b-a3b` → `qwen3-`); none for an
/// id without one (`phi-4`, `gpt2`).
fn family(id: &str) -> Option<&str> {
    let mut at = 0;
    for word in id.split('-') {
        if is_size(word) {
            return (at > 0).then(|| &id[..at]);
        }
        at += word.len() + 1;
    }
    None
}

/// The preset of the family a model's name belongs to, for a size no preset
/// has (`EleutherAI/pythia-70m`, `tiiuae/falcon-180B`,
/// `meta-llama/Llama-3.2-11B-Vision`): its name is a preset family
/// ([`family`]) followed by a size word. Among the family's presets, the one
/// nearest in width (`hidden`): Falcon-180B is Falcon-40B's new decoder, not
/// Falcon-7B's. What such a preset says of its family — norms, positions,
/// biases, parallel blocks, fused projections, activations, dropout — holds
/// for every size; its dimensions, head width and window need not.
pub fn family_member(name: &str, hidden: u32) -> Option<&'static Preset> {
    let n = hub_spelling(&written_name(name));
    PRESETS
        .iter()
        .filter_map(|p| family(p.id).map(|f| (p, f)))
        .filter(|(_, f)| {
            n.strip_prefix(f)
                .and_then(|rest| rest.split('-').next())
                .is_some_and(is_size)
        })
        .max_by_key(|(p, f)| (f.len(), std::cmp::Reverse(p.dims.hidden.abs_diff(hidden))))
        .map(|(p, _)| p)
}

/// The default model of a new plan.
pub const DEFAULT_PRESET: &str = "llama-3.1-8b";

/// Every preset, in display order.
pub fn presets() -> &'static [Preset] {
    PRESETS
}

/// Looks a preset up by id.
pub fn preset(id: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.id == id)
}

/// A hub id as preset ids spell it: its last path part, lower case, `_`
/// for `.`, and [`HUB_ALIASES`] applied (checkpoints of a preset's shape under
/// another name: T5 v1.1 and BigScience's T0 are FLAN-T5's shapes, T0_3B the
/// XL and T0/T0pp the XXL; mT0 is mT5's; …).
fn hub_spelling(hub_id: &str) -> String {
    let name = hub_id
        .rsplit('/')
        .next()
        .unwrap_or(hub_id)
        .to_ascii_lowercase()
        .replace('_', ".");
    for (other, ours) in HUB_ALIASES {
        if let Some(rest) = name.strip_prefix(other) {
            return format!("{ours}{rest}");
        }
    }
    name
}

/// The preset a Hugging Face hub id names (`org/name`, any case, `_` for `.`,
/// a suffix such as `-hf` or `-4k-instruct` allowed): the longest preset id
/// the name starts with.
pub fn by_hub_id(hub_id: &str) -> Option<&'static Preset> {
    let name = hub_spelling(hub_id);
    PRESETS
        .iter()
        .filter(|p| {
            name.strip_prefix(p.id)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
        })
        .max_by_key(|p| p.id.len())
}

/// Whether a model trains with dropout in its blocks as its checkpoint's
/// config says: the preset it is (a model head aside) decides
/// ([`Preset::config_dropout`]), else its era ([`ModelSpec::era_dropout`]).
/// Seeds the planner's block-dropout switch ([`crate::Plan::default_dropout`]).
pub fn trains_with_dropout(model: &ModelSpec) -> bool {
    // A preset's spec carries its id as its name: looked up by it, not by
    // building every preset's spec (the fix ladder encodes each rung's plan).
    let headless = ModelSpec {
        head: ModelHead::Lm,
        ..model.clone()
    };
    match preset(&model.name) {
        Some(p) if p.spec() == headless => p.config_dropout(),
        _ => model.era_dropout(),
    }
}

impl Preset {
    /// Whether the checkpoint's config trains with dropout in its blocks
    /// (GPT-2, BERT, RoBERTa, OPT, T5, BART: 0.1; the others 0.0).
    pub fn config_dropout(&self) -> bool {
        self.dims.dropout
    }

    pub fn spec(&self) -> ModelSpec {
        let d = self.dims;
        ModelSpec {
            name: self.id.to_string(),
            arch: d.arch,
            layers: d.layers,
            encoder_layers: if d.arch == Arch::EncoderDecoder {
                d.encoder_layers
            } else {
                0
            },
            hidden: d.hidden,
            heads: d.heads,
            kv_heads: d.kv_heads,
            head_dim: d.head_dim,
            ffn: d.ffn,
            mlp: d.mlp,
            vocab: d.vocab,
            tied_embeddings: d.tied,
            norm: d.norm,
            norms_per_layer: d.norms_per_layer,
            positions: d.positions,
            max_positions: d.max_positions,
            linear_bias: d.linear_bias,
            qkv_bias: d.qkv_bias,
            experts: d.experts,
            experts_per_token: d.experts_per_token,
            shared_experts: d.shared_experts,
            dense_layers: d.dense_layers,
            dense_ffn: d.dense_ffn,
            mla: d.mla,
            fused_projections: d.fused_projections,
            fused_gate_up: d.fused_gate_up,
            attention_sinks: d.attention_sinks,
            dense_experts: d.dense_experts,
            clamped_glu: d.clamped_glu,
            gelu_new: d.gelu_new,
            relu: d.relu,
            qk_norm: d.qk_norm,
            logits_bias: d.logits_bias,
            sdpa_mask: d.sdpa_mask,
            softcap: d.softcap,
            parallel_residual: d.parallel_residual || d.norms_per_layer == 1,
            norm_fp32_affine: d.norm_fp32_affine,
            python_norm: false,
            head: ModelHead::Lm,
            sliding_window: d.sliding_window,
            vision_params: d.vision_params,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_least_thirty_presets_with_unique_ids() {
        assert!(presets().len() >= 30, "{} presets", presets().len());
        let mut ids: Vec<_> = presets().iter().map(|p| p.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), presets().len());
        assert!(preset(DEFAULT_PRESET).is_some());
    }

    #[test]
    fn parameter_counts_match_published_within_half_a_percent() {
        let mut bad = Vec::new();
        for p in presets() {
            let got = p.spec().params() as f64;
            let want = p.published_params as f64;
            let err = (got - want) / want * 100.0;
            if err.abs() > 0.5 {
                bad.push(format!(
                    "{}: computed {} published {} ({err:+.3} %)",
                    p.id, got, want
                ));
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// The MoE cards' activated counts, which round and differ in whether the
    /// input embedding counts (DeepSeek's appear not to): each lies between
    /// the active count without the embedding and with it, 5 % either way.
    #[test]
    fn moe_active_counts_match_the_cards() {
        for (id, card) in [
            ("mixtral-8x7b", 12.9e9),
            ("qwen1.5-moe-a2.7b", 2.7e9),
            ("deepseek-moe-16b", 2.8e9),
            ("llama-4-maverick-17b-128e", 17e9),
            ("deepseek-v2-lite", 2.4e9),
            ("deepseek-v3", 37e9),
        ] {
            let m = preset(id).unwrap().spec();
            let active = m.active_params() as f64;
            let embedding = m.embedding_params() as f64;
            assert!(
                (0.95 * (active - embedding)..=1.05 * active).contains(&card),
                "{id}: {active} active ({embedding} embedding), card {card}"
            );
        }
    }

    #[test]
    fn exact_counts_for_well_known_models() {
        assert_eq!(preset("gpt2").unwrap().spec().params(), 124_439_808);
        assert_eq!(preset("llama-2-7b").unwrap().spec().params(), 6_738_415_616);
        assert_eq!(
            preset("llama-3.1-8b").unwrap().spec().params(),
            8_030_261_248
        );
        assert_eq!(preset("t5-base").unwrap().spec().params(), 222_903_552);
        assert_eq!(preset("bert-base").unwrap().spec().params(), 109_482_240);
        assert_eq!(preset("bert-large").unwrap().spec().params(), 335_141_888);
        // Counted from each config.json, as transformers' sum(p.numel()).
        for (id, n) in [
            ("gemma-2b", 2_506_172_416),
            ("gemma-7b", 8_537_680_896),
            ("mistral-nemo-12b", 12_247_782_400),
            ("pythia-1b", 1_011_781_632),
            ("pythia-6.9b", 6_857_302_016),
            ("stablelm-base-alpha-3b", 3_637_321_728),
            ("opt-125m", 125_239_296),
            ("opt-1.3b", 1_315_758_080),
            ("opt-6.7b", 6_658_473_984),
            // 60 × (8192·9216 + 8192² + 2·8192·32768 + 2·2·8192) + 65024·8192 + 2·8192
            ("falcon-40b", 41_303_293_952),
            ("t5-small", 60_506_624),
        ] {
            assert_eq!(preset(id).unwrap().spec().params(), n, "{id}");
        }
    }

    #[test]
    fn hub_ids_of_checkpoints_that_share_a_presets_shape() {
        for (hub, id) in [
            ("meta-llama/Meta-Llama-3-8B", "llama-3.1-8b"),
            ("meta-llama/Meta-Llama-3-70B-Instruct", "llama-3.1-70b"),
            ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
            ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.1-70b"),
            ("Qwen/Qwen2-7B", "qwen2.5-7b"),
            ("bigscience/bloomz-7b1", "bloom-7b1"),
            ("bigscience/bloom-560m", "bloom-560m"),
            ("EleutherAI/pythia-1.4b-deduped", "pythia-1.4b"),
            ("facebook/opt-1.3b", "opt-1.3b"),
            ("google/gemma-7b-it", "gemma-7b"),
            ("google/gemma-2-9b", "gemma-2-9b"),
            ("FacebookAI/roberta-large", "roberta-large"),
            ("EleutherAI/gpt-j-6b", "gpt-j-6b"),
            ("mistralai/Mistral-Nemo-Base-2407", "mistral-nemo-12b"),
            ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "qwen2.5-7b"),
            ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "llama-3.1-8b"),
            ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "llama-3.1-70b"),
            ("lmsys/vicuna-7b-v1.5", "llama-2-7b"),
            ("Qwen/Qwen2.5-VL-7B-Instruct", "qwen2.5-vl-7b"),
            ("Qwen/Qwen2.5-VL-72B-Instruct", "qwen2.5-vl-72b"),
            ("llava-hf/llava-1.5-7b-hf", "llava-1.5-7b"),
            ("HuggingFaceH4/zephyr-7b-beta", "mistral-7b"),
            ("codellama/CodeLlama-13b-hf", "llama-2-13b"),
            ("mistralai/Mistral-7B-v0.3", "mistral-7b-v0.3"),
            ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b-v0.3"),
            ("mistralai/Mistral-7B-Instruct-v0.2", "mistral-7b"),
            ("Qwen/Qwen2.5-Coder-7B-Instruct", "qwen2.5-7b"),
            ("Qwen/Qwen2.5-Math-7B", "qwen2.5-7b"),
            ("Qwen/Qwen3-1.7B-Base", "qwen3-1.7b"),
            ("HuggingFaceTB/SmolLM2-1.7B-Instruct", "smollm2-1.7b"),
            ("HuggingFaceTB/SmolLM2-135M", "smollm2-135m"),
            ("microsoft/Phi-3.5-mini-instruct", "phi-3-mini"),
            ("microsoft/Phi-3-medium-4k-instruct", "phi-3-medium"),
            ("allenai/OLMo-2-1124-13B-Instruct", "olmo-2-1124-13b"),
            (
                "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
                "deepseek-r1-distill-qwen-1.5b",
            ),
            ("EleutherAI/gpt-neox-20b", "gpt-neox-20b"),
            ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b"),
            ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3-30b-a3b"),
        ] {
            assert_eq!(by_hub_id(hub).map(|p| p.id), Some(id), "{hub}");
        }
        // A Qwen2 size Qwen2.5 lacks, and unknown names, name no preset.
        assert_eq!(by_hub_id("Qwen/Qwen2-57B-A14B").map(|p| p.id), None);
        assert_eq!(by_hub_id("acme/unknown-7b").map(|p| p.id), None);
        // Code Llama 34B has a shape of its own.
        assert_eq!(by_hub_id("codellama/CodeLlama-34b-hf").map(|p| p.id), None);
        // Mistral-7B v0.1's window stays with v0.1 and Instruct v0.2.
        assert_eq!(preset("mistral-7b").unwrap().spec().sliding_window, 4096);
        assert_eq!(preset("mistral-7b-v0.3").unwrap().spec().sliding_window, 0);
    }

    #[test]
    fn names_as_people_write_them_find_their_preset() {
        for (name, id) in [
            ("meta-llama/Llama-2-7b-hf", "llama-2-7b"),
            ("Llama 2 7B", "llama-2-7b"),
            ("LLaMA-2 13B chat", "llama-2-13b"),
            ("llama2-70b", "llama-2-70b"),
            ("huggyllama/llama-7b", "llama-2-7b"),
            ("Llama-3-8B", "llama-3.1-8b"),
            ("llama3-70b-instruct", "llama-3.1-70b"),
            ("Llama 3.1 8B Instruct", "llama-3.1-8b"),
            ("llama3.2-1b", "llama-3.2-1b"),
            (
                "GPT-2 124M (LLMs-from-scratch GPTModel; untied out_head)",
                "gpt2",
            ),
            ("GPT-2 XL", "gpt2-xl"),
            ("gpt2-medium", "gpt2-medium"),
            ("Qwen 2.5 7B", "qwen2.5-7b"),
            ("Qwen-2-7B", "qwen2.5-7b"),
            ("Qwen2.5-0.5B-Instruct", "qwen2.5-0.5b"),
            ("Mistral 7B v0.1", "mistral-7b"),
            ("Mixtral 8x7B", "mixtral-8x7b"),
            ("Phi3 mini 4k", "phi-3-mini"),
            ("microsoft/phi-1_5", "phi-1.5"),
            (
                "TinyLlama-1.1B (litgpt tiny-llama-1.1b config; from scratch)",
                "tinyllama-1.1b",
            ),
            ("Tiny-Llama-1.1B", "tinyllama-1.1b"),
            ("tiiuae/falcon-40b", "falcon-40b"),
            ("mosaicml/mpt-7b-instruct", "mpt-7b"),
            ("mosaicml/mpt-30b", "mpt-30b"),
            ("stabilityai/stablelm-2-1_6b-chat", "stablelm-2-1.6b"),
            ("allenai/OLMoE-1B-7B-0924-Instruct", "olmoe-1b-7b"),
            ("Falcon 7B", "falcon-7b"),
            ("BERT base uncased", "bert-base"),
            ("Gemma 2 9B", "gemma-2-9b"),
        ] {
            assert_eq!(by_name(name).map(|p| p.id), Some(id), "{name}");
        }
        // Sizes no preset has, and what is not a model name at all.
        for name in [
            "LLaMA-65B",
            "Llama 2",
            "Qwen2-57B-A14B",
            "my model",
            "",
            "(7B)",
            "GPT-3 175B",
        ] {
            assert_eq!(by_name(name).map(|p| p.id), None, "{name}");
        }
    }

    #[test]
    fn sizes_no_preset_has_find_their_family() {
        for w in ["7b", "1.5b", "560m", "1b7", "8x7b", "base", "xl", "125m"] {
            assert!(is_size(w), "{w}");
        }
        for w in [
            "", "b", "v0.1", "hf", "instruct", "a3b", "2407", "4k", "mamba",
        ] {
            assert!(!is_size(w), "{w}");
        }
        assert_eq!(family("gemma-3-1b"), Some("gemma-3-"));
        assert_eq!(family("qwen3-30b-a3b"), Some("qwen3-"));
        assert_eq!(family("mt5-base"), Some("mt5-"));
        assert_eq!(family("phi-4"), None);
        assert_eq!(family("gpt2"), None);
        // (name, width) → a preset of its family; Falcon-180B is Falcon-40B's
        // new decoder, not Falcon-7B's block.
        for (name, hidden, family_of) in [
            ("EleutherAI/pythia-70m-deduped", 512, "pythia-"),
            ("tiiuae/falcon-180B", 14848, "falcon-40b"),
            ("meta-llama/Llama-3.2-11B-Vision", 4096, "llama-3.2-"),
            ("facebook/opt-350m", 1024, "opt-"),
            ("bigscience/bloom-1b1", 1536, "bloom-"),
            ("Qwen/Qwen2.5-Coder-7B", 3584, "qwen2.5-"), // a hub alias: Qwen2.5's shapes
            ("google/gemma-3n-E4B", 2048, ""),
            ("Helsinki-NLP/opus-mt-en-de", 512, ""),
            ("microsoft/phi-4", 5120, ""),
        ] {
            let got = family_member(name, hidden).map_or("", |p| p.id);
            if family_of.is_empty() {
                assert_eq!(got, "", "{name}");
            } else {
                assert!(got.starts_with(family_of), "{name}: {got}");
            }
        }
    }
}
