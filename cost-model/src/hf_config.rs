//! Import a model from a pasted Hugging Face `config.json`.

use crate::model::{Arch, Mla, Mlp, ModelHead, ModelSpec, Norm, Positions};
use serde_json::Value;
use thiserror::Error;

/// Why a config could not be read; names the key at fault.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum ConfigError {
    #[error("config.json is not valid JSON (line {line}, column {column}): {msg}")]
    Json {
        line: usize,
        column: usize,
        msg: String,
    },
    #[error("config.json must be a JSON object")]
    NotObject,
    #[error("config.json: missing key `{key}` (needed for model_type `{model_type}`)")]
    Missing {
        key: &'static str,
        model_type: String,
    },
    #[error("config.json: `{key}` must be a positive whole number, got {got}")]
    BadNumber { key: &'static str, got: String },
    #[error("config.json: model_type `{0}` is not supported; known: {known}", known = KNOWN_TYPES.join(", "))]
    UnknownType(String),
    #[error("config.json: {what} (model_type `{model_type}`) is not modelled")]
    NotModelled {
        what: &'static str,
        model_type: String,
    },
}

/// The `model_type`s this importer understands.
pub const KNOWN_TYPES: &[&str] = &[
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "gemma",
    "gemma2",
    "phi3",
    "olmo",
    "phi",
    "gpt2",
    "gpt_neox",
    "falcon",
    "bert",
    "roberta",
    "t5",
    "mt5",
    "umt5",
    "qwen3_moe",
    "olmo2",
    "olmo3",
    "olmoe",
    "granite",
    "granitemoe",
    "smollm3",
    "seed_oss",
    "hunyuan_v1_dense",
    "ministral",
    "exaone4",
    "glm",
    "glm4",
    "gemma3_text",
    "cohere",
    "cohere2",
    "stablelm",
    "starcoder2",
    "phimoe",
    "gpt_oss",
    "llama4_text",
    "glm4_moe",
    "deepseek",
    "deepseek_v2",
    "deepseek_v3",
    "kimi_k2",
    "dots1",
    "ernie4_5",
    "ernie4_5_moe",
    "bloom",
    "opt",
    "gptj",
    "gpt_bigcode",
    "mpt",
    "xlm-roberta",
    "camembert",
    "bart",
    "mbart",
    "marian",
    "pegasus",
    "m2m_100",
    "modernbert",
    "distilbert",
    "gpt_neo",
    "electra",
    "mpnet",
    "deberta",
    "deberta-v2",
];

/// Multimodal checkpoints keep their language model's config under
/// `text_config`; the `model_type` it has when that config does not say
/// (transformers' `*Config.sub_configs`).
const TEXT_CONFIG_TYPES: &[(&str, &str)] = &[
    ("gemma3", "gemma3_text"),
    ("mistral3", "mistral"),
    ("llava", "llama"),
    ("llava_next", "llama"),
    ("qwen2_vl", "qwen2"),
    ("qwen2_5_vl", "qwen2"),
    ("paligemma", "gemma"),
    ("llama4", "llama4_text"),
    ("qwen3_vl", "qwen3"),
    ("qwen3_vl_moe", "qwen3_moe"),
];

/// A language model's own `model_type` inside a multimodal wrapper that reads
/// as a known one (Qwen3-VL's text model is Qwen3's, its MoE Qwen3-MoE's).
const TEXT_TYPE_ALIASES: &[(&str, &str)] = &[
    ("qwen3_vl_text", "qwen3"),
    ("qwen3_vl_moe_text", "qwen3_moe"),
];

/// `tie_word_embeddings` when the file leaves it out (a config saved by
/// transformers omits values equal to the class default): the classes whose
/// default ties the head to the embedding.
const TIED_BY_DEFAULT: &[&str] = &[
    "ernie4_5",
    "ernie4_5_moe",
    "gemma",
    "gemma2",
    "gemma3_text",
    "cohere",
    "cohere2",
    "smollm3",
    "starcoder2",
    "bloom",
    "opt",
    "gpt_bigcode",
    "mpt",
];

struct Cfg<'a> {
    v: &'a Value,
    model_type: String,
}

impl Cfg<'_> {
    fn opt_u32(&self, key: &'static str) -> Result<Option<u32>, ConfigError> {
        match self.v.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => match x.as_u64() {
                Some(n) if n > 0 && n <= u32::MAX as u64 => Ok(Some(n as u32)),
                _ => Err(ConfigError::BadNumber {
                    key,
                    got: x.to_string(),
                }),
            },
        }
    }
    /// A count that may be 0 (`first_k_dense_replace: 0`).
    fn opt_count(&self, key: &'static str) -> Result<Option<u32>, ConfigError> {
        match self.v.get(key) {
            Some(x) if x.as_u64() == Some(0) => Ok(Some(0)),
            _ => self.opt_u32(key),
        }
    }
    /// The distinct block indices below `layers` a list key names
    /// (`mlp_only_layers`, `moe_layers`), those `keep` accepts.
    fn listed_layers(&self, key: &str, layers: u32, keep: impl Fn(u32) -> bool) -> Option<u32> {
        let list = self.v.get(key)?.as_array()?;
        let mut seen: Vec<u32> = list
            .iter()
            .filter_map(Value::as_u64)
            .filter(|&i| i < layers as u64)
            .map(|i| i as u32)
            .filter(|&i| keep(i))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        Some(seen.len() as u32)
    }
    fn u32(&self, key: &'static str) -> Result<u32, ConfigError> {
        self.opt_u32(key)?.ok_or_else(|| ConfigError::Missing {
            key,
            model_type: self.model_type.clone(),
        })
    }
    /// The first of several spellings that is present.
    fn any_u32(&self, keys: &[&'static str]) -> Result<u32, ConfigError> {
        for k in keys {
            if let Some(v) = self.opt_u32(k)? {
                return Ok(v);
            }
        }
        Err(ConfigError::Missing {
            key: keys[0],
            model_type: self.model_type.clone(),
        })
    }
    fn bool(&self, key: &str, default: bool) -> bool {
        self.v.get(key).and_then(Value::as_bool).unwrap_or(default)
    }
    /// The key is present with a non-null value.
    fn is_set(&self, key: &str) -> bool {
        self.v.get(key).is_some_and(|v| !v.is_null())
    }

    fn str(&self, key: &str) -> Option<&str> {
        self.v.get(key).and_then(Value::as_str)
    }
}

/// The keys a config.json states its blocks' dropout probability under, as
/// transformers' config classes spell them: GPT-2, GPT-J, Phi (`resid_pdrop`),
/// BERT, RoBERTa (`hidden_dropout_prob`), GPT-NeoX, Falcon, BLOOM
/// (`hidden_dropout`), T5 (`dropout_rate`), OPT, BART, DistilBERT (`dropout`).
const DROPOUT_KEYS: &[&str] = &[
    "resid_pdrop",
    "hidden_dropout_prob",
    "hidden_dropout",
    "dropout_rate",
    "dropout",
];

/// Whether a `config.json` trains with dropout in its blocks: the first of
/// [`DROPOUT_KEYS`] it states, above 0 (read inside `text_config` for a
/// multimodal wrapper). `None` when it states none (Llama-lineage configs name
/// only `attention_dropout`, 0.0, which SDPA applies inside its kernel) or is
/// not a JSON object: the model's era decides then
/// ([`crate::model::ModelSpec::era_dropout`]).
pub fn config_dropout(text: &str) -> Option<bool> {
    dropout_of(&serde_json::from_str(text).ok()?)
}

fn dropout_of(config: &Value) -> Option<bool> {
    let v = language_config(config);
    DROPOUT_KEYS
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_f64))
        .map(|p| p > 0.0)
}

/// A multimodal wrapper's language model (`text_config`), else the config.
fn language_config(config: &Value) -> &Value {
    config
        .get("text_config")
        .filter(|t| t.is_object())
        .unwrap_or(config)
}

/// The `model_type`s whose transformers implementation has no SDPA path, so
/// that transformers runs their attention eager (the scores kept): BLOOM, MPT,
/// GPT-Neo (`_supports_sdpa` unset in 4.x and 5.25), Gemma-2 (eager unless
/// SDPA is asked for, refused in 5.25), gpt-oss (eager unless its flash
/// kernels are installed), DeBERTa v1–v3 and MPNet — the families the
/// calibration reader reads by name (`calibrate::notes::without_sdpa_in_transformers`).
const WITHOUT_SDPA: &[&str] = &[
    "bloom",
    "mpt",
    "gpt_neo",
    "gemma2",
    "gpt_oss",
    "deberta",
    "deberta-v2",
    "mpnet",
];

/// Whether a `config.json`'s model has no SDPA path in transformers
/// ([`WITHOUT_SDPA`]; a multimodal wrapper's language model read).
pub fn config_without_sdpa(text: &str) -> bool {
    serde_json::from_str(text).is_ok_and(|v| without_sdpa_of(&v))
}

fn without_sdpa_of(config: &Value) -> bool {
    language_config(config)
        .get("model_type")
        .and_then(Value::as_str)
        .is_some_and(|t| WITHOUT_SDPA.contains(&t))
}

/// Reads the dimensions most `model_type`s name with the standard keys
/// (`hidden_size`, `num_hidden_layers`, `num_attention_heads`,
/// `num_key_value_heads`, `head_dim`, the FFN width under `ffn_keys`, `vocab_size`).
fn standard_dims(c: &Cfg, m: &mut ModelSpec, ffn_keys: &[&'static str]) -> Result<(), ConfigError> {
    m.hidden = c.u32("hidden_size")?;
    m.layers = c.u32("num_hidden_layers")?;
    m.heads = c.u32("num_attention_heads")?;
    m.kv_heads = c.opt_u32("num_key_value_heads")?.unwrap_or(m.heads);
    m.head_dim = c.opt_u32("head_dim")?.unwrap_or(m.hidden / m.heads);
    m.ffn = c.any_u32(ffn_keys)?;
    m.vocab = c.u32("vocab_size")?;
    Ok(())
}

/// Every head its own k/v, `hidden / heads` wide.
fn mha(m: &mut ModelSpec) {
    m.kv_heads = m.heads;
    m.head_dim = m.hidden / m.heads;
}

/// GPT-2's key spellings (`n_embd`, `n_layer`, `n_head`, `n_inner`), shared by
/// GPT-J and GPT-BigCode, and its block.
fn gpt2_dims(c: &Cfg, m: &mut ModelSpec) -> Result<(), ConfigError> {
    gpt_dims(c, m, ["n_embd", "n_layer", "n_head", "n_inner"], true)
}

/// A GPT-2-like block (every head its own k/v, [`gpt_block`]) under a
/// family's own keys for the hidden size, layers, heads and MLP width; with
/// `ffn_optional` an absent MLP width is 4 × hidden.
fn gpt_dims(
    c: &Cfg,
    m: &mut ModelSpec,
    [hidden, layers, heads, ffn]: [&'static str; 4],
    ffn_optional: bool,
) -> Result<(), ConfigError> {
    m.hidden = c.u32(hidden)?;
    m.layers = c.u32(layers)?;
    m.heads = c.u32(heads)?;
    mha(m);
    m.ffn = if ffn_optional {
        c.opt_u32(ffn)?.unwrap_or(4 * m.hidden)
    } else {
        c.u32(ffn)?
    };
    m.vocab = c.u32("vocab_size")?;
    gpt_block(m);
    Ok(())
}

/// The GPT-2 / BERT / NeoX / Phi block: plain GELU MLP, LayerNorm, biases everywhere.
fn gpt_block(m: &mut ModelSpec) {
    m.mlp = Mlp::Plain;
    m.norm = Norm::LayerNorm;
    m.linear_bias = true;
}

/// Blocks `i` in `[lo, hi)` with `i % every == 0`.
fn multiples_in(lo: u32, hi: u32, every: u32) -> u32 {
    let above = |n: u32| n.div_ceil(every.max(1));
    above(hi).saturating_sub(above(lo.min(hi)))
}

/// An MoE model's shared experts and its dense blocks, as each `model_type`
/// places them (transformers' decoder layers):
/// - Qwen2-MoE / Qwen3-MoE: experts in block `i` unless `i` is in
///   `mlp_only_layers` or `(i + 1) % decoder_sparse_step != 0`
///   (`Qwen2MoeDecoderLayer`); the dense MLP is `intermediate_size` wide.
///   Qwen2-MoE's shared expert is `shared_expert_intermediate_size` wide,
///   counted in routed widths (Qwen1.5-MoE: 5632 / 1408 = 4).
/// - Llama-4: experts in the blocks `moe_layers` lists, by default every
///   `interleave_moe_layer_step`-th (`Llama4TextConfig`); the dense blocks'
///   MLP is `intermediate_size_mlp` wide; one shared expert.
/// - GLM-4.5 (`glm4_moe`) and DeepSeek-MoE (`deepseek`): experts from block
///   `first_k_dense_replace` on (DeepSeek: every `moe_layer_freq`-th), the
///   dense MLP `intermediate_size` wide, `n_shared_experts` of the routed
///   width.
///
/// - ERNIE-4.5-MoE: experts in blocks `moe_layer_start_index` ..=
///   `moe_layer_end_index` with `(i + 1) % moe_layer_interval == 0`
///   (`Ernie4_5_MoeDecoderLayer`), `moe_num_shared_experts` shared ones of
///   the routed width (`Ernie4_5_MoeMLP(config, moe_intermediate_size ·
///   moe_num_shared_experts)`); dots.llm1 (`dots1`) as GLM-4.5.
///
/// A stack left with no expert block is a dense model of the dense width.
fn expert_layout(c: &Cfg, m: &mut ModelSpec) -> Result<(), ConfigError> {
    if m.experts == 0 {
        return Ok(());
    }
    let l = m.layers;
    let t = c.model_type.as_str();
    let (expert_blocks, dense_key) = match t {
        "qwen2_moe" | "qwen3_moe" => {
            let step = c.opt_u32("decoder_sparse_step")?.unwrap_or(1);
            let on_step = |i: u32| (i + 1).is_multiple_of(step);
            let skipped = c.listed_layers("mlp_only_layers", l, on_step).unwrap_or(0);
            if t == "qwen2_moe" {
                if let Some(w) = c.opt_u32("shared_expert_intermediate_size")? {
                    let routed = m.ffn.max(1);
                    m.shared_experts = ((w as f64 / routed as f64).round() as u32).max(1);
                }
            }
            (l / step - skipped, "intermediate_size")
        }
        "llama4_text" => {
            m.shared_experts = 1;
            let step = c.opt_u32("interleave_moe_layer_step")?.unwrap_or(1);
            let n = match c.listed_layers("moe_layers", l, |_| true) {
                Some(n) => n,
                None => l / step,
            };
            (n, "intermediate_size_mlp")
        }
        "glm4_moe" | "deepseek" | "deepseek_v2" | "deepseek_v3" | "kimi_k2" | "dots1" => {
            m.shared_experts = c.opt_count("n_shared_experts")?.unwrap_or(0);
            let first = c.opt_count("first_k_dense_replace")?.unwrap_or(0);
            let every = if matches!(t, "deepseek" | "deepseek_v2") {
                c.opt_u32("moe_layer_freq")?.unwrap_or(1)
            } else {
                1
            };
            (multiples_in(first, l, every), "intermediate_size")
        }
        "ernie4_5_moe" => {
            // Class defaults: 2 shared experts, experts from block 1 to the
            // last (`moe_layer_end_index: -1`), every `moe_layer_interval`-th
            // counted from 1 (`(layer_idx + 1) % interval == 0`).
            m.shared_experts = c.opt_count("moe_num_shared_experts")?.unwrap_or(2);
            let start = c.opt_count("moe_layer_start_index")?.unwrap_or(1);
            let last = match c.v.get("moe_layer_end_index").and_then(Value::as_i64) {
                Some(i) if i >= 0 => (i as u64).min(l.saturating_sub(1) as u64) as u32,
                _ => l.saturating_sub(1),
            };
            let every = c.opt_u32("moe_layer_interval")?.unwrap_or(1);
            let n = if start > last {
                0
            } else {
                multiples_in(start.saturating_add(1), last.saturating_add(2), every)
            };
            (n, "intermediate_size")
        }
        _ => return Ok(()),
    };
    let dense = l.saturating_sub(expert_blocks);
    if dense == 0 {
        return Ok(());
    }
    let dense_ffn = c.u32(dense_key)?;
    if expert_blocks == 0 {
        m.experts = 0;
        m.experts_per_token = 0;
        m.shared_experts = 0;
        m.ffn = dense_ffn;
    } else {
        m.dense_layers = dense;
        m.dense_ffn = dense_ffn;
    }
    Ok(())
}

/// A pasted `config.json` read with one parse: the model ([`from_config_json`]),
/// its block dropout where it states one ([`config_dropout`]) and whether
/// transformers runs it without SDPA ([`config_without_sdpa`]) — what the
/// planner's import needs.
pub struct Imported {
    pub model: ModelSpec,
    pub dropout: Option<bool>,
    pub without_sdpa: bool,
}

/// Reads a `config.json` for the planner's import ([`Imported`]).
pub fn import_config_json(text: &str, name: &str) -> Result<Imported, ConfigError> {
    let config = parse_config(text)?;
    Ok(Imported {
        model: model_of(&config, name)?,
        dropout: dropout_of(&config),
        without_sdpa: without_sdpa_of(&config),
    })
}

/// Parses a `config.json` into a [`ModelSpec`] named `name`.
pub fn from_config_json(text: &str, name: &str) -> Result<ModelSpec, ConfigError> {
    model_of(&parse_config(text)?, name)
}

/// The JSON object a `config.json` holds, or where it is not one.
fn parse_config(text: &str) -> Result<Value, ConfigError> {
    let v: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json {
        line: e.line(),
        column: e.column(),
        msg: e.to_string(),
    })?;
    if !v.is_object() {
        return Err(ConfigError::NotObject);
    }
    Ok(v)
}

fn model_of(outer: &Value, name: &str) -> Result<ModelSpec, ConfigError> {
    let outer_type = outer
        .get("model_type")
        .and_then(Value::as_str)
        .unwrap_or("llama");
    // A multimodal wrapper: read its language model.
    let (v, model_type) = match outer.get("text_config").filter(|t| t.is_object()) {
        Some(text) => {
            let inner = text.get("model_type").and_then(Value::as_str).or_else(|| {
                TEXT_CONFIG_TYPES
                    .iter()
                    .find(|(o, _)| *o == outer_type)
                    .map(|(_, i)| *i)
            });
            let inner = inner.map(|t| {
                TEXT_TYPE_ALIASES
                    .iter()
                    .find(|(alias, _)| *alias == t)
                    .map_or(t, |(_, known)| *known)
            });
            match inner {
                Some(t) => (text, t.to_string()),
                None => {
                    return Err(ConfigError::UnknownType(format!(
                        "{outer_type} (text_config)"
                    )))
                }
            }
        }
        // Qwen2-VL and Qwen2.5-VL as their hub repositories ship them: the
        // language model's keys at the top, beside `vision_config`.
        None => match TEXT_CONFIG_TYPES.iter().find(|(o, _)| *o == outer_type) {
            Some((_, inner)) if outer.get("vision_config").is_some() => (outer, inner.to_string()),
            _ => (outer, outer_type.to_string()),
        },
    };
    let c = Cfg {
        v,
        model_type: model_type.clone(),
    };
    // A multimodal wrapper may state the tie beside its text config rather
    // than inside it (Qwen3-VL); else the text class's default.
    let tied_default = match outer.get("tie_word_embeddings").and_then(Value::as_bool) {
        Some(tied) if !std::ptr::eq(outer, v) => tied,
        _ => TIED_BY_DEFAULT.contains(&model_type.as_str()),
    };
    let mut m = ModelSpec::unset(name);
    match model_type.as_str() {
        "llama" | "mistral" | "mixtral" | "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe"
        | "gemma" | "gemma2" | "gemma3_text" | "phi3" | "phimoe" | "olmo" | "olmo2" | "olmo3"
        | "olmoe" | "granite" | "granitemoe" | "smollm3" | "seed_oss" | "hunyuan_v1_dense"
        | "ministral" | "exaone4" | "glm" | "glm4" | "cohere" | "cohere2" | "stablelm"
        | "starcoder2" | "gpt_oss" | "llama4_text" | "glm4_moe" | "deepseek" | "deepseek_v2"
        | "deepseek_v3" | "kimi_k2" | "dots1" | "ernie4_5" | "ernie4_5_moe" => {
            let ffn_keys: &[&'static str] = match model_type.as_str() {
                "qwen2_moe" | "qwen3_moe" | "glm4_moe" | "deepseek" | "deepseek_v2"
                | "deepseek_v3" | "kimi_k2" | "dots1" | "ernie4_5_moe" => {
                    &["moe_intermediate_size", "intermediate_size"]
                }
                _ => &["intermediate_size"],
            };
            standard_dims(&c, &mut m, ffn_keys)?;
            // ERNIE-4.5's heads are 128 wide unless the file says otherwise
            // (`Ernie4_5Config.head_dim = 128`).
            if model_type == "ernie4_5" && !c.is_set("head_dim") {
                m.head_dim = 128;
            }
            // ERNIE-4.5: `use_bias` on every linear layer, the head too.
            if model_type.starts_with("ernie4_5") {
                m.linear_bias = c.bool("use_bias", false);
            }
            m.tied_embeddings = c.bool("tie_word_embeddings", tied_default);
            // Biases on q/k/v: Qwen2 always; GLM, Seed-OSS and gpt-oss by their
            // class default; StableLM under its own key.
            let bias_default = matches!(
                model_type.as_str(),
                "glm" | "glm4" | "seed_oss" | "gpt_oss" | "glm4_moe"
            );
            m.qkv_bias = matches!(model_type.as_str(), "qwen2" | "qwen2_moe")
                || c.bool("attention_bias", bias_default)
                || c.bool("use_qkv_bias", false);
            // Sandwich norms: Gemma-2/3 and GLM-4 normalise each sub-block's
            // output too.
            if matches!(model_type.as_str(), "gemma2" | "gemma3_text" | "glm4") {
                m.norms_per_layer = 4;
            }
            if matches!(model_type.as_str(), "gemma2" | "gemma3_text") {
                m.softcap =
                    c.is_set("attn_logit_softcapping") || c.is_set("final_logit_softcapping");
            }
            // GemmaRMSNorm: `output * (1.0 + self.weight.float())`; OLMo-2/3's
            // `(self.weight * hidden_states).to(input_dtype)` scales in fp32 too.
            m.norm_fp32_affine = matches!(
                model_type.as_str(),
                "gemma" | "gemma2" | "gemma3_text" | "olmo2" | "olmo3"
            );
            // Norms on q and k: always in these classes; by a config switch in
            // others (GLM-4-MoE, Cohere, HunYuan `use_qk_norm`; StableLM
            // `qk_layernorm`). Llama-4's is a weightless L2 norm, left out.
            m.qk_norm = matches!(
                model_type.as_str(),
                "qwen3" | "qwen3_moe" | "gemma3_text" | "olmo2" | "olmo3" | "olmoe" | "exaone4"
            ) || (c.bool("use_qk_norm", false) && model_type != "llama4_text")
                || c.bool("qk_layernorm", false);
            // Phi-3 computes q/k/v in `qkv_proj` and gate/up in `gate_up_proj`;
            // GLM and GLM-4 gate/up alone.
            m.fused_projections = model_type == "phi3";
            m.fused_gate_up = matches!(model_type.as_str(), "glm" | "glm4");
            // gpt-oss joins a learned sink logit to every head's scores.
            m.attention_sinks = model_type == "gpt_oss";
            m.clamped_glu = model_type == "gpt_oss";
            // Llama-4's MoE runs every expert on every token.
            m.dense_experts = model_type == "llama4_text";
            // LayerNorm blocks: Cohere (one norm feeding attention and MLP in
            // parallel), StableLM (parallel when `use_parallel_residual`),
            // StarCoder2 (a plain GELU MLP with biases), PhiMoE.
            match model_type.as_str() {
                "cohere" | "cohere2" => {
                    m.norm = Norm::LayerNorm;
                    m.norms_per_layer = 1;
                    m.parallel_residual = true;
                }
                "stablelm" => {
                    m.norm = Norm::LayerNorm;
                    if c.bool("use_parallel_residual", false) {
                        m.norms_per_layer = 1;
                        m.parallel_residual = true;
                    }
                }
                "starcoder2" => {
                    m.norm = Norm::LayerNorm;
                    m.mlp = Mlp::Plain;
                    m.linear_bias = c.bool("use_bias", true);
                }
                "phimoe" => m.norm = Norm::LayerNorm,
                _ => {}
            }
            // Every layer attends over a window (Mistral, Mixtral, Phi-3,
            // StarCoder2 when set; Qwen2/Qwen3-MoE only with
            // `use_sliding_window`), or most do: Gemma-3 five layers of six
            // (`sliding_window_pattern` 6), Cohere-2 and OLMo-3 three of four
            // — read as every layer, which over-counts the global ones' mask
            // (replayed: Gemma-3-4B at 4 × 2048, allocated −18.8 % without
            // its window, +0.3 % with it on every layer). Gemma-2, gpt-oss and
            // Ministral alternate window and full layers one for one.
            let windowed = match model_type.as_str() {
                "mistral" | "mixtral" | "phi3" | "phimoe" | "starcoder2" | "gemma3_text"
                | "cohere2" | "olmo3" => true,
                "qwen2" | "qwen2_moe" | "qwen3_moe" => c.bool("use_sliding_window", false),
                _ => false,
            };
            if windowed {
                m.sliding_window = c.opt_u32("sliding_window")?.unwrap_or(0);
            }
            if let Some(e) = c
                .opt_u32("num_local_experts")?
                .or(c.opt_u32("num_experts")?)
                .or(c.opt_u32("n_routed_experts")?)
                .or(c.opt_u32("moe_num_experts")?)
            {
                m.experts = e;
                m.experts_per_token = c.any_u32(&["num_experts_per_tok", "moe_k"])?;
            }
            expert_layout(&c, &mut m)?;
            // DeepSeek-V2/V3, Kimi-K2: multi-head latent attention, every
            // head its own k and v, q and k `qk_nope_head_dim +
            // qk_rope_head_dim` wide per head (`head_dim` in their configs
            // is the rotary part).
            if matches!(
                model_type.as_str(),
                "deepseek_v2" | "deepseek_v3" | "kimi_k2"
            ) {
                let rope = c.u32("qk_rope_head_dim")?;
                m.head_dim = c.u32("qk_nope_head_dim")?.saturating_add(rope);
                m.kv_heads = m.heads;
                m.mla = Some(Mla {
                    q_rank: c.opt_u32("q_lora_rank")?.unwrap_or(0),
                    kv_rank: c.u32("kv_lora_rank")?,
                    rope_dim: rope,
                    v_dim: c.u32("v_head_dim")?,
                });
            }
        }
        "phi" => {
            standard_dims(&c, &mut m, &["intermediate_size"])?;
            gpt_block(&mut m);
            m.norms_per_layer = 1;
            m.tied_embeddings = c.bool("tie_word_embeddings", false);
            m.gelu_new = c.str("hidden_act").unwrap_or("gelu_new") == "gelu_new";
        }
        "gpt2" => {
            gpt2_dims(&c, &mut m)?;
            m.positions = Positions::Learned;
            m.max_positions = c.any_u32(&["n_positions", "n_ctx"])?;
            m.tied_embeddings = c.bool("tie_word_embeddings", true);
            m.fused_projections = true; // `c_attn`
            m.gelu_new = c.str("activation_function").unwrap_or("gelu_new") == "gelu_new";
        }
        "gpt_neox" => {
            standard_dims(&c, &mut m, &["intermediate_size"])?;
            gpt_block(&mut m);
            m.fused_projections = true; // `query_key_value`
            m.tied_embeddings = c.bool("tie_word_embeddings", false);
            m.parallel_residual = c.bool("use_parallel_residual", true);
        }
        "falcon" | "RefinedWeb" | "RefinedWebModel" => {
            m.hidden = c.u32("hidden_size")?;
            m.layers = c.any_u32(&["num_hidden_layers", "n_layer"])?;
            m.heads = c.any_u32(&["num_attention_heads", "n_head"])?;
            m.kv_heads =
                if c.bool("multi_query", true) && !c.bool("new_decoder_architecture", false) {
                    1
                } else {
                    c.any_u32(&["num_kv_heads", "n_head_kv"]).unwrap_or(m.heads)
                };
            m.head_dim = m.hidden / m.heads;
            m.ffn = c.opt_u32("ffn_hidden_size")?.unwrap_or(4 * m.hidden);
            m.vocab = c.u32("vocab_size")?;
            m.mlp = Mlp::Plain;
            m.norm = Norm::LayerNorm;
            m.norms_per_layer = if c.bool("new_decoder_architecture", false) {
                2
            } else {
                1
            };
            m.parallel_residual = c.bool("parallel_attn", true);
            m.linear_bias = c.bool("bias", false);
            m.fused_projections = true; // `query_key_value`
            m.tied_embeddings = c.bool("tie_word_embeddings", true);
            // transformers 5 always materialises Falcon's causal mask for SDPA
            // (ALiBi variants run their own attention).
            m.sdpa_mask = !c.bool("alibi", false);
        }
        "bloom" => {
            m.hidden = c.any_u32(&["hidden_size", "n_embed"])?;
            m.layers = c.any_u32(&["n_layer", "num_hidden_layers"])?;
            m.heads = c.any_u32(&["n_head", "num_attention_heads"])?;
            mha(&mut m);
            m.ffn = 4 * m.hidden;
            m.vocab = c.u32("vocab_size")?;
            gpt_block(&mut m);
            m.positions = Positions::Alibi;
            m.fused_projections = true; // `query_key_value`
            m.tied_embeddings = c.bool("tie_word_embeddings", tied_default);
        }
        "opt" => {
            let keys = [
                "hidden_size",
                "num_hidden_layers",
                "num_attention_heads",
                "ffn_dim",
            ];
            gpt_dims(&c, &mut m, keys, false)?;
            m.linear_bias = c.bool("enable_bias", true);
            m.positions = Positions::Learned;
            // `OPTLearnedPositionalEmbedding` keeps 2 rows beyond the maximum.
            m.max_positions = c.u32("max_position_embeddings")?.saturating_add(2);
            m.tied_embeddings = c.bool("tie_word_embeddings", tied_default);
            // `OPTConfig.activation_function` defaults to "relu".
            m.relu = c.str("activation_function").unwrap_or("relu") == "relu";
        }
        "gptj" => {
            gpt2_dims(&c, &mut m)?;
            // One norm feeds attention and the MLP, added in parallel.
            m.norms_per_layer = 1;
            m.parallel_residual = true;
            m.tied_embeddings = c.bool("tie_word_embeddings", tied_default);
            m.gelu_new = c.str("activation_function").unwrap_or("gelu_new") == "gelu_new";
        }
        "gpt_bigcode" => {
            gpt2_dims(&c, &mut m)?;
            // Multi-query attention by default (SantaCoder, StarCoder).
            if c.bool("multi_query", true) {
                m.kv_heads = 1;
            }
            m.positions = Positions::Learned;
            m.max_positions = c.any_u32(&["n_positions", "max_position_embeddings"])?;
            m.fused_projections = true; // `c_attn`
            m.tied_embeddings = c.bool("tie_word_embeddings", tied_default);
            m.gelu_new = c.str("activation_function") == Some("gelu_new");
        }
        "mpt" => {
            m.hidden = c.u32("d_model")?;
            m.layers = c.u32("n_layers")?;
            m.heads = c.u32("n_heads")?;
            let attn = c.v.get("attn_config");
            let attn_str = |k: &str| attn.and_then(|a| a.get(k)).and_then(Value::as_str);
            m.kv_heads = match attn_str("attn_type") {
                Some("multiquery_attention") => 1,
                Some("grouped_query_attention") => attn
                    .and_then(|a| a.get("kv_n_heads"))
                    .and_then(Value::as_u64)
                    .filter(|&n| n > 0 && n <= m.heads as u64)
                    .map_or(m.heads, |n| n as u32),
                _ => m.heads,
            };
            m.head_dim = m.hidden / m.heads;
            m.ffn = c.u32("expansion_ratio")?.saturating_mul(m.hidden);
            m.vocab = c.u32("vocab_size")?;
            gpt_block(&mut m);
            m.linear_bias = !c.bool("no_bias", true);
            let alibi = attn
                .and_then(|a| a.get("alibi"))
                .and_then(Value::as_bool)
                .unwrap_or(true);
            if alibi {
                m.positions = Positions::Alibi;
            } else {
                m.positions = Positions::Learned;
                m.max_positions = c.u32("max_seq_len")?;
            }
            m.fused_projections = true; // `Wqkv`
            m.tied_embeddings = c.bool("tie_word_embeddings", tied_default);
        }
        // BART's lineage: BART, mBART, Marian, PEGASUS, and M2M100 / NLLB-200
        // (no `final_logits_bias`, a ReLU MLP by default).
        "bart" | "mbart" | "marian" | "pegasus" | "m2m_100" => {
            m.arch = Arch::EncoderDecoder;
            let keys = [
                "d_model",
                "encoder_layers",
                "encoder_attention_heads",
                "encoder_ffn_dim",
            ];
            gpt_dims(&c, &mut m, keys, false)?;
            m.encoder_layers = m.layers;
            m.layers = c.u32("decoder_layers")?;
            m.positions = Positions::Learned;
            // `BartLearnedPositionalEmbedding`: 2 rows beyond the maximum;
            // Marian's and PEGASUS's sinusoidal tables are frozen embeddings
            // of the maximum's rows; M2M100's a buffer, no parameters.
            m.max_positions = match model_type.as_str() {
                "bart" | "mbart" => c.u32("max_position_embeddings")?.saturating_add(2),
                "m2m_100" => 0,
                _ => c.u32("max_position_embeddings")?,
            };
            m.tied_embeddings = true;
            let m2m = model_type == "m2m_100";
            let default_act = if m2m { "relu" } else { "gelu" };
            m.relu = c.str("activation_function").unwrap_or(default_act) == "relu";
            m.logits_bias = !m2m; // `final_logits_bias`
        }
        // GPT-Neo: GPT-2's block under its own key names, separate q/k/v.
        "gpt_neo" => {
            let keys = [
                "hidden_size",
                "num_layers",
                "num_heads",
                "intermediate_size",
            ];
            gpt_dims(&c, &mut m, keys, true)?;
            m.positions = Positions::Learned;
            m.max_positions = c.u32("max_position_embeddings")?;
            m.tied_embeddings = c.bool("tie_word_embeddings", true);
            m.gelu_new = c.str("activation_function").unwrap_or("gelu_new") == "gelu_new";
        }
        // ModernBERT: pre-norm LayerNorms, rotary positions, fused `Wqkv` and
        // GeGLU `Wi`, no biases unless `attention_bias` / `mlp_bias`.
        "modernbert" => {
            m.arch = Arch::Encoder;
            standard_dims(&c, &mut m, &["intermediate_size"])?;
            mha(&mut m);
            m.mlp = Mlp::Gated;
            m.norm = Norm::LayerNorm;
            m.positions = Positions::Rotary;
            m.linear_bias = c.bool("attention_bias", false) || c.bool("mlp_bias", false);
            m.fused_projections = true;
            m.tied_embeddings = c.bool("tie_word_embeddings", true);
            // Local attention in all layers but every n-th (read as every
            // layer, presets.rs `modernbert`).
            if c.opt_u32("global_attn_every_n_layers")?.unwrap_or(3) > 1 {
                m.sliding_window = c.opt_u32("local_attention")?.unwrap_or(128);
            }
        }
        // DistilBERT: BERT's block under its own key names (`dim`,
        // `n_layers`, `n_heads`, `hidden_dim`).
        "distilbert" => {
            m.arch = Arch::Encoder;
            gpt_dims(
                &c,
                &mut m,
                ["dim", "n_layers", "n_heads", "hidden_dim"],
                false,
            )?;
            m.positions = Positions::Learned;
            m.max_positions = c.u32("max_position_embeddings")?;
            m.tied_embeddings = true;
            m.relu = c.str("activation") == Some("relu");
        }
        "bert" | "roberta" | "xlm-roberta" | "camembert" => {
            m.arch = Arch::Encoder;
            standard_dims(&c, &mut m, &["intermediate_size"])?;
            gpt_block(&mut m);
            m.positions = Positions::Learned;
            m.max_positions = c.u32("max_position_embeddings")?;
            m.tied_embeddings = true;
            m.relu = c.str("hidden_act") == Some("relu");
        }
        // ELECTRA (its discriminator is BERT's encoder; a generator or a small
        // model narrower than its embedding projects the embedding up, which
        // is not modelled), MPNet (learned positions beside a relative bias
        // shared by every block: read as BERT's), DeBERTa (v1–v3: no absolute
        // positions, a relative position embedding and disentangled
        // attention, read as a relative position bias; transformers has no
        // SDPA path for it, so choose eager attention).
        "electra" | "mpnet" | "deberta" | "deberta-v2" => {
            m.arch = Arch::Encoder;
            standard_dims(&c, &mut m, &["intermediate_size"])?;
            gpt_block(&mut m);
            m.tied_embeddings = true;
            m.relu = c.str("hidden_act") == Some("relu");
            if model_type == "electra"
                && c.opt_u32("embedding_size")?.is_some_and(|e| e != m.hidden)
            {
                return Err(ConfigError::NotModelled {
                    what: "an embedding narrower than the blocks (embedding_size ≠ hidden_size)",
                    model_type,
                });
            }
            if model_type.starts_with("deberta") {
                m.positions = Positions::Relative;
            } else {
                m.positions = Positions::Learned;
                m.max_positions = c.u32("max_position_embeddings")?;
            }
        }
        "t5" | "mt5" | "umt5" => {
            m.arch = Arch::EncoderDecoder;
            m.hidden = c.u32("d_model")?;
            m.encoder_layers = c.u32("num_layers")?;
            m.layers = c.opt_u32("num_decoder_layers")?.unwrap_or(m.encoder_layers);
            m.heads = c.u32("num_heads")?;
            m.kv_heads = m.heads;
            m.head_dim = c.u32("d_kv")?;
            m.ffn = c.u32("d_ff")?;
            m.vocab = c.u32("vocab_size")?;
            m.mlp = if c
                .str("feed_forward_proj")
                .is_some_and(|s| s.starts_with("gated"))
            {
                Mlp::Gated
            } else {
                Mlp::Plain
            };
            // T5 v1.1 / mT5 "gated-gelu" runs `gelu_new` (T5Config.dense_act_fn).
            m.gelu_new = c.str("feed_forward_proj") == Some("gated-gelu");
            // T5 v1.0's `DenseReluDense` (`feed_forward_proj` defaults to "relu").
            m.relu = c.str("feed_forward_proj").unwrap_or("relu") == "relu";
            m.positions = Positions::Relative;
            m.tied_embeddings = c.bool("tie_word_embeddings", true);
        }
        other => return Err(ConfigError::UnknownType(other.to_string())),
    }
    // A checkpoint saved from `*ForSequenceClassification` /
    // `*ForTokenClassification` (reward models, BERT classifiers) names its
    // head in `architectures`.
    let classifier = outer
        .get("architectures")
        .and_then(Value::as_array)
        .is_some_and(|a| {
            a.iter().filter_map(Value::as_str).any(|s| {
                s.ends_with("ForSequenceClassification") || s.ends_with("ForTokenClassification")
            })
        });
    if classifier {
        m.head = ModelHead::Classifier;
    }
    m.vision_params = vision_params(outer, outer_type, m.hidden as u64);
    Ok(m)
}

/// The parameters of a multimodal checkpoint's vision encoder and projector
/// ([`ModelSpec::vision_params`]), from its `vision_config` (0 without one),
/// counted module by module as transformers 5.25 builds them; a key the file
/// leaves out takes its config class's default. `text` is the language
/// model's width, which the projector ends in.
/// - Qwen2-VL (`Qwen2VisionTransformerPretrainedModel`): a bias-free Conv3d
///   patch embedding (2 frames × patch²), blocks of two LayerNorms, a biased
///   fused qkv and output projection and a biased `fc1`/`fc2` MLP
///   (`mlp_ratio` × `embed_dim`), and the `PatchMerger` (LayerNorm, then
///   Linear(4E, 4E) and Linear(4E, text), biased, over 2 × 2 merged patches).
/// - Qwen2.5-VL: the same with RMSNorms and a biased gated MLP
///   (`intermediate_size`), ending in `out_hidden_size`.
/// - Gemma 3, PaliGemma (`SiglipVisionModel`, no attention-pooling head): a
///   biased patch Conv2d, a learned position per patch, blocks of biased
///   q/k/v/o and `fc1`/`fc2` with two LayerNorms, a final LayerNorm; Gemma 3's
///   projector an RMSNorm and an E × text matrix, PaliGemma's a biased
///   Linear(E, text).
/// - LLaVA, LLaVA-NeXT (`CLIPVisionModel`): a bias-free patch Conv2d, a class
///   embedding and a position per patch and for it, LayerNorms before and
///   after the blocks (CLIP blocks as SigLIP's); the projector
///   Linear(E, text) and Linear(text, text), biased by default; LLaVA-NeXT's
///   `image_newline` vector.
/// - Mistral 3 (`PixtralVisionModel`): a bias-free patch Conv2d, an RMSNorm,
///   blocks of bias-free q/k/v/o and a gated MLP with two RMSNorms; the
///   projector an RMSNorm, the 2 × 2 patch merger Linear(4E, E) and
///   Linear(E, text), Linear(text, text), bias-free by default.
/// - Any other: its blocks counted as CLIP's (the commonest ViT block).
///
/// Checked against the checkpoints' published totals (tests below):
/// Qwen2-VL-7B, Qwen2.5-VL-7B, Gemma-3-4B, PaliGemma-3B, LLaVA-1.5-7B and
/// Mistral-Small-3.1-24B, each tower to the parameter.
fn vision_params(outer: &Value, outer_type: &str, text: u64) -> u64 {
    let Some(v) = outer.get("vision_config").filter(|v| v.is_object()) else {
        return 0;
    };
    // In f64 (exact below 2^53, far above any real tower), so that no figure a
    // file states can overflow a sum; held to the plan's bound at the end.
    let n = |keys: &[&str], default: u64| {
        keys.iter()
            .find_map(|k| v.get(*k).and_then(Value::as_u64))
            .unwrap_or(default) as f64
    };
    let (text_width, text) = (text, text as f64);
    let bias_of = |key: &str, default: bool| {
        let on = outer.get(key).and_then(Value::as_bool).unwrap_or(default);
        if on {
            1.0
        } else {
            0.0
        }
    };
    let channels = n(&["num_channels", "in_chans", "in_channels"], 3);
    // A block of biased q/k/v/o and fc1/fc2 and two biased LayerNorms
    // (CLIP, SigLIP; Qwen2-VL's fused qkv holds the same).
    let clip_block = |e: f64, i: f64| 4.0 * e * e + 4.0 * e + 2.0 * e * i + i + e + 4.0 * e;
    // Patches per image.
    let grid = |image: f64, patch: f64| (image / patch.max(1.0)).floor().powi(2);
    // Qwen's patch merger over 2 × 2 patches: Linear(4E, 4E), Linear(4E, out), biased.
    let merger = |merged: f64, out: f64| merged * merged + merged + merged * out + out;
    // Qwen's Conv3d patch embedding: its weights per output channel (channels
    // × frames × patch²), and the patches a merged token holds.
    let qwen_patches = |default_patch: u64| {
        let p = n(&["patch_size"], default_patch);
        (
            channels * n(&["temporal_patch_size"], 2) * p * p,
            n(&["spatial_merge_size"], 2).powi(2),
        )
    };
    let params = match outer_type {
        "qwen2_vl" => {
            let e = n(&["embed_dim"], 1280);
            let i = n(&["mlp_ratio"], 4) * e;
            let (conv, merge) = qwen_patches(14);
            let out = n(&["hidden_size"], text_width);
            n(&["depth"], 32) * clip_block(e, i) + conv * e + 2.0 * e + merger(merge * e, out)
        }
        "qwen2_5_vl" => {
            let e = n(&["hidden_size"], 1280);
            let i = n(&["intermediate_size"], 3420);
            let (conv, merge) = qwen_patches(14);
            let out = n(&["out_hidden_size"], text_width);
            let block = 2.0 * e + 4.0 * e * e + 4.0 * e + 3.0 * e * i + 2.0 * i + e;
            n(&["depth"], 32) * block + conv * e + e + merger(merge * e, out)
        }
        "qwen3_vl" | "qwen3_vl_moe" => {
            // Qwen3-VL: a biased Conv3d patch embedding, a learned position
            // table (`num_position_embeddings`), CLIP-shaped blocks, the
            // merger (LayerNorm, Linear(4E, 4E), Linear(4E, out)) and one
            // DeepStack merger more per `deepstack_visual_indexes` entry,
            // normalising after the 2 × 2 shuffle (LayerNorm over 4E).
            let e = n(&["hidden_size"], 1152);
            let i = n(&["intermediate_size"], 4304);
            let (conv, merge) = qwen_patches(16);
            let merged = merge * e;
            let out = n(&["out_hidden_size"], text_width);
            let deepstack = v
                .get("deepstack_visual_indexes")
                .and_then(Value::as_array)
                .map_or(3.0, |a| a.len() as f64);
            n(&["depth"], 27) * clip_block(e, i)
                + conv * e
                + e
                + n(&["num_position_embeddings"], 2304) * e
                + 2.0 * e
                + merger(merged, out)
                + deepstack * (2.0 * merged + merger(merged, out))
        }
        "gemma3" | "paligemma" => {
            let e = n(&["hidden_size"], 768);
            let i = n(&["intermediate_size"], 3072);
            let p = n(&["patch_size"], 16);
            let tower = n(&["num_hidden_layers"], 12) * clip_block(e, i)
                + channels * p * p * e
                + e
                + grid(n(&["image_size"], 224), p) * e
                + 2.0 * e;
            let projector = if outer_type == "gemma3" {
                e + e * text
            } else {
                e * text + text
            };
            tower + projector
        }
        "mistral3" => {
            let e = n(&["hidden_size"], 1024);
            let i = n(&["intermediate_size"], 4096);
            let p = n(&["patch_size"], 16);
            let merge = outer
                .get("spatial_merge_size")
                .and_then(Value::as_u64)
                .unwrap_or(2) as f64;
            let bias = bias_of("multimodal_projector_bias", false);
            let tower = n(&["num_hidden_layers"], 24) * (4.0 * e * e + 3.0 * e * i + 2.0 * e)
                + channels * p * p * e
                + e;
            tower + e + merge * merge * e * e + e * text + text * text + 2.0 * bias * text
        }
        _ => {
            // CLIP (LLaVA's default tower) and any other ViT.
            let e = n(&["hidden_size"], 768);
            let i = n(&["intermediate_size"], 3072);
            let p = n(&["patch_size"], 32);
            let tower = n(&["num_hidden_layers"], 12) * clip_block(e, i)
                + e
                + channels * p * p * e
                + (grid(n(&["image_size"], 224), p) + 1.0) * e
                + 4.0 * e;
            let bias = bias_of("multimodal_projector_bias", true);
            let newline = if outer_type == "llava_next" {
                text
            } else {
                0.0
            };
            tower + e * text + text * text + 2.0 * bias * text + newline
        }
    };
    params.clamp(0.0, crate::validate::MAX_VISION_PARAMS as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;

    #[test]
    fn a_sliding_window_is_read_where_every_layer_uses_it() {
        let mistral = LLAMA3_8B.replace("\"llama\"", "\"mistral\"").replacen(
            '{',
            "{\"sliding_window\":4096,",
            1,
        );
        assert_eq!(
            from_config_json(&mistral, "m").unwrap().sliding_window,
            4096
        );
        let null = mistral.replace("\"sliding_window\":4096", "\"sliding_window\":null");
        assert_eq!(from_config_json(&null, "m").unwrap().sliding_window, 0);
        // Qwen2 ships a window but uses it only with use_sliding_window.
        let qwen = mistral.replace("\"mistral\"", "\"qwen2\"");
        assert_eq!(from_config_json(&qwen, "q").unwrap().sliding_window, 0);
        // Gemma-3's five window layers in six count as every layer's; Gemma-2's
        // one in two do not.
        let gemma3 = mistral.replace("\"mistral\"", "\"gemma3_text\"");
        assert_eq!(from_config_json(&gemma3, "g").unwrap().sliding_window, 4096);
        let gemma2 = mistral.replace("\"mistral\"", "\"gemma2\"");
        assert_eq!(from_config_json(&gemma2, "g").unwrap().sliding_window, 0);
    }

    #[test]
    fn a_classification_checkpoint_has_a_classifier_head() {
        let cls = LLAMA3_8B.replace("LlamaForCausalLM", "LlamaForSequenceClassification");
        let m = from_config_json(&cls, "rm").unwrap();
        assert_eq!(m.head, ModelHead::Classifier);
        let lm = from_config_json(LLAMA3_8B, "lm").unwrap();
        assert_eq!(lm.head, ModelHead::Lm);
        // The untied LM head (128256 × 4096) is gone; a 2-output score is there.
        assert_eq!(lm.params() - m.params(), 128_256 * 4096 - 2 * 4096 - 2);
    }

    const LLAMA3_8B: &str = r#"{"architectures":["LlamaForCausalLM"],"hidden_size":4096,
      "intermediate_size":14336,"model_type":"llama","num_attention_heads":32,
      "num_hidden_layers":32,"num_key_value_heads":8,"rms_norm_eps":1e-05,
      "tie_word_embeddings":false,"vocab_size":128256}"#;

    /// q/k norms and a ReLU MLP are read from the config as the presets of
    /// the same checkpoints have them.
    #[test]
    fn qk_norms_and_a_relu_mlp_come_from_the_config() {
        let as_type = |t: &str| LLAMA3_8B.replace("\"llama\"", &format!("\"{t}\""));
        assert!(!from_config_json(LLAMA3_8B, "l").unwrap().qk_norm);
        for t in ["qwen3", "gemma3_text", "olmo2"] {
            assert!(from_config_json(&as_type(t), t).unwrap().qk_norm, "{t}");
        }
        let olmo2 = from_config_json(&as_type("olmo2"), "o").unwrap();
        assert!(olmo2.norm_fp32_affine);
        assert_eq!((olmo2.qk_norm, olmo2.norm_fp32_affine), {
            let p = preset("olmo-2-1124-7b").unwrap().spec();
            (p.qk_norm, p.norm_fp32_affine)
        });
        assert!(preset("qwen3-8b").unwrap().spec().qk_norm);
        assert!(preset("gemma-3-1b").unwrap().spec().qk_norm);
        let switched = LLAMA3_8B.replacen('{', "{\"use_qk_norm\":true,", 1);
        assert!(from_config_json(&switched, "s").unwrap().qk_norm);

        let opt = r#"{"model_type":"opt","hidden_size":2048,"num_hidden_layers":24,
          "num_attention_heads":32,"ffn_dim":8192,"vocab_size":50272,
          "max_position_embeddings":2048}"#;
        // The preset's spec under the imported model's name.
        let named = |id: &str, m: &ModelSpec| ModelSpec {
            name: m.name.clone(),
            ..preset(id).unwrap().spec()
        };
        let m = from_config_json(opt, "opt").unwrap();
        assert!(m.relu);
        assert_eq!(m, named("opt-1.3b", &m));
        let gelu = opt.replacen('{', "{\"activation_function\":\"gelu\",", 1);
        assert!(!from_config_json(&gelu, "g").unwrap().relu);
        let t5 = r#"{"model_type":"t5","d_model":768,"num_layers":12,"num_heads":12,"d_kv":64,
          "d_ff":3072,"vocab_size":32128}"#;
        assert!(from_config_json(t5, "t5").unwrap().relu);
        let v11 = t5.replacen('{', "{\"feed_forward_proj\":\"gated-gelu\",", 1);
        assert!(!from_config_json(&v11, "t5").unwrap().relu);
        // BART's head adds `final_logits_bias`; T5's has no bias.
        assert!(!from_config_json(t5, "t5").unwrap().logits_bias);
        let bart = r#"{"model_type":"bart","d_model":768,"encoder_layers":6,"decoder_layers":6,
          "encoder_attention_heads":12,"encoder_ffn_dim":3072,"vocab_size":50265,
          "max_position_embeddings":1024}"#;
        let m = from_config_json(bart, "bart").unwrap();
        assert!(m.logits_bias);
        assert_eq!(m, named("bart-base", &m));
        // transformers 5 always materialises Falcon's causal mask for SDPA;
        // an ALiBi Falcon (RW) runs its own attention.
        let falcon = r#"{"model_type":"falcon","hidden_size":4544,"num_hidden_layers":32,
          "num_attention_heads":71,"vocab_size":65024,"multi_query":true,"parallel_attn":true,
          "bias":false,"alibi":false}"#;
        let m = from_config_json(falcon, "falcon").unwrap();
        assert!(m.sdpa_mask);
        assert!(preset("falcon-7b").unwrap().spec().sdpa_mask);
        assert!(preset("falcon-40b").unwrap().spec().sdpa_mask);
        let rw = falcon.replace("\"alibi\":false", "\"alibi\":true");
        assert!(!from_config_json(&rw, "rw").unwrap().sdpa_mask);
        assert!(!from_config_json(opt, "opt").unwrap().sdpa_mask);
        // NLLB-200 (M2M100), ModernBERT and DistilBERT as their hub configs
        // spell them.
        let nllb = r#"{"model_type":"m2m_100","d_model":1024,"encoder_layers":12,
          "decoder_layers":12,"encoder_attention_heads":16,"decoder_attention_heads":16,
          "encoder_ffn_dim":4096,"decoder_ffn_dim":4096,"vocab_size":256206,
          "activation_function":"relu","scale_embedding":true}"#;
        let m = from_config_json(nllb, "nllb").unwrap();
        assert_eq!(m, named("nllb-200-distilled-600m", &m));
        let modernbert = r#"{"model_type":"modernbert","hidden_size":768,"num_hidden_layers":22,
          "num_attention_heads":12,"intermediate_size":1152,"vocab_size":50368,
          "global_attn_every_n_layers":3,"local_attention":128}"#;
        let m = from_config_json(modernbert, "mb").unwrap();
        assert_eq!(m, named("modernbert-base", &m));
        let distilbert = r#"{"model_type":"distilbert","dim":768,"n_layers":6,"n_heads":12,
          "hidden_dim":3072,"vocab_size":30522,"max_position_embeddings":512,
          "activation":"gelu"}"#;
        let marian = r#"{"model_type":"marian","d_model":512,"encoder_layers":6,
          "decoder_layers":6,"encoder_attention_heads":8,"decoder_attention_heads":8,
          "encoder_ffn_dim":2048,"decoder_ffn_dim":2048,"vocab_size":58101,
          "max_position_embeddings":512,"activation_function":"swish"}"#;
        let m = from_config_json(marian, "opus").unwrap();
        assert_eq!(m, named("opus-mt", &m));
        let pegasus = r#"{"model_type":"pegasus","d_model":1024,"encoder_layers":16,
          "decoder_layers":16,"encoder_attention_heads":16,"decoder_attention_heads":16,
          "encoder_ffn_dim":4096,"decoder_ffn_dim":4096,"vocab_size":96103,
          "max_position_embeddings":1024,"activation_function":"relu"}"#;
        let m = from_config_json(pegasus, "pegasus").unwrap();
        assert_eq!(m, named("pegasus-large", &m));
        // ByT5 (a T5 v1.1 with a deeper encoder) and UMT5 (mT5's shapes).
        let byt5 = r#"{"model_type":"t5","d_model":1536,"d_ff":3968,"num_layers":18,
          "num_decoder_layers":6,"num_heads":12,"d_kv":64,"vocab_size":384,
          "feed_forward_proj":"gated-gelu","tie_word_embeddings":false}"#;
        let m = from_config_json(byt5, "byt5").unwrap();
        assert_eq!(m, named("byt5-base", &m));
        let umt5 = r#"{"model_type":"umt5","d_model":768,"d_ff":2048,"num_layers":12,"num_heads":12,
          "d_kv":64,"vocab_size":256384,"feed_forward_proj":"gated-gelu","tie_word_embeddings":false}"#;
        let m = from_config_json(umt5, "umt5").unwrap();
        assert_eq!(m, named("umt5-base", &m));
        let neo = r#"{"model_type":"gpt_neo","hidden_size":2048,"num_layers":24,"num_heads":16,
          "vocab_size":50257,"max_position_embeddings":2048,"intermediate_size":null,
          "activation_function":"gelu_new","window_size":256}"#;
        let m = from_config_json(neo, "neo").unwrap();
        assert_eq!(m, named("gpt-neo-1.3b", &m));
        let m = from_config_json(distilbert, "db").unwrap();
        assert_eq!(
            (m.arch, m.layers, m.hidden, m.ffn),
            (Arch::Encoder, 6, 768, 3072)
        );
        // The 66 M of `distilbert-base-uncased` (DistilBertForMaskedLM).
        let n = m.params() as f64;
        assert!((n / 66_985_530.0 - 1.0).abs() < 0.005, "{n}");
    }

    #[test]
    fn block_dropout_is_read_where_the_config_states_it() {
        // Spelled as each family's config.json ships it.
        for (cfg, want) in [
            (r#"{"model_type":"gpt2","resid_pdrop":0.1}"#, Some(true)),
            (r#"{"model_type":"gptj","resid_pdrop":0.0}"#, Some(false)),
            (
                r#"{"model_type":"bert","hidden_dropout_prob":0.1}"#,
                Some(true),
            ),
            (
                r#"{"model_type":"gpt_neox","hidden_dropout":0.0}"#,
                Some(false),
            ),
            (r#"{"model_type":"t5","dropout_rate":0.1}"#, Some(true)),
            (r#"{"model_type":"opt","dropout":0.1}"#, Some(true)),
            (
                r#"{"model_type":"llava","text_config":{"dropout":0.1}}"#,
                Some(true),
            ),
            // The first stated key decides (BART states `dropout` only).
            (r#"{"resid_pdrop":0.0,"dropout":0.1}"#, Some(false)),
        ] {
            assert_eq!(config_dropout(cfg), want, "{cfg}");
        }
        // Llama's only dropout key is attention's; the era decides.
        assert_eq!(config_dropout(LLAMA3_8B), None);
        assert_eq!(config_dropout("not json"), None);
    }

    /// Qwen/Qwen3-VL-8B-Instruct's config.json (the keys that matter).
    const QWEN3_VL_8B: &str = r#"{"model_type":"qwen3_vl","architectures":["Qwen3VLForConditionalGeneration"],
            "tie_word_embeddings":false,
            "text_config":{"model_type":"qwen3_vl_text","hidden_size":4096,"intermediate_size":12288,
            "num_attention_heads":32,"num_hidden_layers":36,"num_key_value_heads":8,"head_dim":128,
            "vocab_size":151936},
            "vision_config":{"model_type":"qwen3_vl","depth":27,"hidden_size":1152,"intermediate_size":4304,
            "num_heads":16,"in_channels":3,"patch_size":16,"spatial_merge_size":2,"temporal_patch_size":2,
            "out_hidden_size":4096,"num_position_embeddings":2304,"deepstack_visual_indexes":[8,16,24]}}"#;

    /// Multimodal checkpoints: the vision tower with its projector to the
    /// parameter, and with the language model the totals their hub
    /// repositories publish (safetensors parameter counts).
    #[test]
    fn vision_towers_match_the_published_totals() {
        const QWEN_TEXT: &str = r#""hidden_size":3584,"intermediate_size":18944,
            "num_attention_heads":28,"num_hidden_layers":28,"num_key_value_heads":4,
            "vocab_size":152064,"tie_word_embeddings":false,"sliding_window":32768,
            "use_sliding_window":false,"max_window_layers":28"#;
        let qwen2_vl = format!(
            r#"{{"model_type":"qwen2_vl","architectures":["Qwen2VLForConditionalGeneration"],{QWEN_TEXT},
            "vision_config":{{"depth":32,"embed_dim":1280,"mlp_ratio":4,"num_heads":16,
            "in_chans":3,"hidden_size":3584,"patch_size":14,"spatial_merge_size":2,
            "spatial_patch_size":14,"temporal_patch_size":2}}}}"#
        );
        let qwen2_5_vl = format!(
            r#"{{"model_type":"qwen2_5_vl","architectures":["Qwen2_5_VLForConditionalGeneration"],{QWEN_TEXT},
            "vision_config":{{"depth":32,"hidden_act":"silu","hidden_size":1280,
            "intermediate_size":3420,"num_heads":16,"in_chans":3,"out_hidden_size":3584,
            "patch_size":14,"spatial_merge_size":2,"spatial_patch_size":14,"window_size":112,
            "fullatt_block_indexes":[7,15,23,31],"tokens_per_second":2,"temporal_patch_size":2}}}}"#
        );
        let cases: [(&str, &str, u64, u64); 6] = [
            // Qwen/Qwen2-VL-7B-Instruct.
            ("qwen2-vl", &qwen2_vl, 8_291_375_616, 675_759_104),
            // Qwen/Qwen2.5-VL-7B-Instruct.
            ("qwen2.5-vl", &qwen2_5_vl, 8_292_166_656, 676_550_144),
            // google/gemma-3-4b-it (SigLIP So400m at 896 px).
            (
                "gemma-3",
                r#"{"model_type":"gemma3","architectures":["Gemma3ForConditionalGeneration"],
                "text_config":{"model_type":"gemma3_text","hidden_size":2560,"intermediate_size":10240,
                "num_attention_heads":8,"num_hidden_layers":34,"num_key_value_heads":4,"head_dim":256,
                "vocab_size":262208,"sliding_window":1024},
                "vision_config":{"hidden_size":1152,"image_size":896,"intermediate_size":4304,
                "model_type":"siglip_vision_model","num_attention_heads":16,"num_hidden_layers":27,
                "patch_size":14,"vision_use_head":false}}"#,
                4_300_079_472,
                419_816_304,
            ),
            // google/paligemma-3b-pt-224.
            (
                "paligemma",
                r#"{"model_type":"paligemma","architectures":["PaliGemmaForConditionalGeneration"],
                "text_config":{"model_type":"gemma","hidden_size":2048,"intermediate_size":16384,
                "num_attention_heads":8,"num_hidden_layers":18,"num_key_value_heads":1,"head_dim":256,
                "vocab_size":257152},
                "vision_config":{"hidden_size":1152,"intermediate_size":4304,"model_type":"siglip_vision_model",
                "num_attention_heads":16,"num_hidden_layers":27,"num_image_tokens":256,"patch_size":14,
                "projection_dim":2048,"projector_hidden_act":"gelu_fast","vision_use_head":false}}"#,
                2_923_335_408,
                414_803_696,
            ),
            // llava-hf/llava-1.5-7b-hf (CLIP ViT-L/14 at 336 px).
            (
                "llava",
                r#"{"model_type":"llava","architectures":["LlavaForConditionalGeneration"],
                "text_config":{"model_type":"llama","hidden_size":4096,"intermediate_size":11008,
                "num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":32,
                "vocab_size":32064,"tie_word_embeddings":false},
                "vision_config":{"hidden_size":1024,"image_size":336,"intermediate_size":4096,
                "model_type":"clip_vision_model","num_attention_heads":16,"num_hidden_layers":24,
                "patch_size":14,"projection_dim":768,"vocab_size":32000}}"#,
                7_063_427_072,
                324_487_168,
            ),
            // mistralai/Mistral-Small-3.1-24B-Instruct-2503 (Pixtral).
            (
                "mistral-3",
                r#"{"model_type":"mistral3","architectures":["Mistral3ForConditionalGeneration"],
                "multimodal_projector_bias":false,"spatial_merge_size":2,
                "text_config":{"model_type":"mistral","hidden_size":5120,"intermediate_size":32768,
                "num_attention_heads":32,"num_hidden_layers":40,"num_key_value_heads":8,
                "head_dim":128,"vocab_size":131072,"tie_word_embeddings":false},
                "vision_config":{"model_type":"pixtral","hidden_size":1024,"intermediate_size":4096,
                "num_hidden_layers":24,"num_attention_heads":16,"head_dim":64,"patch_size":14,
                "image_size":1540}}"#,
                24_011_361_280,
                438_958_080,
            ),
        ];
        for &(name, cfg, total, vision) in &cases {
            let m = from_config_json(cfg, name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(m.vision_params, vision, "{name}");
            // Within 0.001 %: the q/k norms' weights (Gemma 3: 2 × 256 a
            // block) are not among the counted parameters.
            let off = (m.params() as f64 - total as f64).abs() / total as f64;
            assert!(off < 1e-5, "{name}: {} against {total}", m.params());
        }
        // Qwen/Qwen3-VL-8B-Instruct (8.77 B published): Qwen3-8B's text model
        // under `text_config`, a 27-block ViT of 1152 with three DeepStack
        // mergers.
        let of = |cfg: &str| from_config_json(cfg, "p").unwrap();
        let qwen3_vl = of(QWEN3_VL_8B);
        assert!(qwen3_vl.qk_norm && !qwen3_vl.tied_embeddings);
        assert!(
            (qwen3_vl.params() as f64 / 8.77e9 - 1.0).abs() < 0.002,
            "{}",
            qwen3_vl.params()
        );
        assert_eq!(qwen3_vl.vision_params, 576_388_336);
        // The tie stated beside the text config (Qwen3-VL-2B and -4B tie).
        let tied = QWEN3_VL_8B.replace(
            "\"tie_word_embeddings\":false",
            "\"tie_word_embeddings\":true",
        );
        assert!(of(&tied).tied_embeddings);
        // The presets hold the same towers: Qwen2.5-VL's three sizes differ
        // only in the merger's output width.
        let vl7 = of(&qwen2_5_vl);
        assert_eq!(
            vl7.params(),
            preset("qwen2.5-vl-7b").unwrap().spec().params()
        );
        for (id, width) in [("qwen2.5-vl-3b", 2048), ("qwen2.5-vl-72b", 8192)] {
            let cfg = qwen2_5_vl.replace(
                "\"out_hidden_size\":3584",
                &format!("\"out_hidden_size\":{width}"),
            );
            assert_eq!(
                of(&cfg).vision_params,
                preset(id).unwrap().spec().vision_params,
                "{id}"
            );
        }
        assert_eq!(
            of(cases[4].1).params(),
            preset("llava-1.5-7b").unwrap().spec().params()
        );
        // Absurd figures overflow nothing: the count stops at the plan's bound.
        for wrapper in [
            "llava",
            "qwen2_vl",
            "qwen2_5_vl",
            "qwen3_vl",
            "gemma3",
            "mistral3",
        ] {
            let huge = format!(
                r#"{{"model_type":"{wrapper}","text_config":{{"model_type":"llama","hidden_size":64,
                "intermediate_size":128,"num_attention_heads":4,"num_hidden_layers":2,"vocab_size":100}},
                "spatial_merge_size":18446744073709551615,
                "vision_config":{{"hidden_size":18446744073709551615,"embed_dim":18446744073709551615,
                "depth":4294967295,"num_hidden_layers":4294967295,"patch_size":0,"image_size":18446744073709551615,
                "spatial_merge_size":18446744073709551615,"deepstack_visual_indexes":[1,2,3]}}}}"#
            );
            let m = from_config_json(&huge, "h").unwrap_or_else(|e| panic!("{wrapper}: {e}"));
            assert_eq!(
                m.vision_params,
                crate::validate::MAX_VISION_PARAMS,
                "{wrapper}"
            );
        }
        // A text model has none; nor does a multimodal config without
        // `vision_config`.
        assert_eq!(from_config_json(LLAMA3_8B, "l").unwrap().vision_params, 0);
    }

    /// Encoders read as BERT's block: the totals their papers and model
    /// cards publish (DeBERTa-v3: "86M backbone parameters … 98M parameters in
    /// the Embedding layer", large 304M + 131M; ELECTRA-Base and MPNet-base
    /// 110M), within 0.6 %.
    #[test]
    fn bert_like_encoders_match_their_published_counts() {
        let enc = |t: &str, h: u32, l: u32, i: u32, v: u32, extra: &str| {
            format!(
                r#"{{"model_type":"{t}","hidden_size":{h},"num_hidden_layers":{l},
                "num_attention_heads":{},"intermediate_size":{i},"vocab_size":{v}{extra}}}"#,
                h / 64
            )
        };
        for (cfg, published) in [
            (
                enc(
                    "deberta-v2",
                    768,
                    12,
                    3072,
                    128100,
                    r#","position_buckets":256"#,
                ),
                184e6,
            ),
            (
                enc(
                    "deberta-v2",
                    1024,
                    24,
                    4096,
                    128100,
                    r#","position_buckets":256"#,
                ),
                435e6,
            ),
            (
                enc(
                    "electra",
                    768,
                    12,
                    3072,
                    30522,
                    r#","embedding_size":768,"max_position_embeddings":512"#,
                ),
                110e6,
            ),
            (
                enc(
                    "mpnet",
                    768,
                    12,
                    3072,
                    30527,
                    r#","max_position_embeddings":514"#,
                ),
                110e6,
            ),
        ] {
            let m = from_config_json(&cfg, "e").unwrap_or_else(|e| panic!("{cfg}: {e}"));
            assert_eq!(m.arch, Arch::Encoder);
            let off = (m.params() as f64 / published - 1.0).abs();
            assert!(off < 0.006, "{cfg}: {}", m.params());
        }
        // DeBERTa's positions are relative; an ELECTRA generator's narrower
        // embedding is refused by name.
        let d = from_config_json(&enc("deberta-v2", 768, 12, 3072, 128100, ""), "d").unwrap();
        assert_eq!(d.positions, Positions::Relative);
        let small = enc(
            "electra",
            256,
            12,
            1024,
            30522,
            r#","embedding_size":128,"max_position_embeddings":512"#,
        );
        let e = from_config_json(&small, "s").unwrap_err().to_string();
        assert!(e.contains("embedding_size"), "{e}");
    }

    #[test]
    fn families_without_sdpa_are_named() {
        for (cfg, without) in [
            (
                r#"{"model_type":"bloom","hidden_size":1024,"n_layer":24,"n_head":16}"#,
                true,
            ),
            (r#"{"model_type":"deberta-v2","hidden_size":768}"#, true),
            (
                r#"{"model_type":"paligemma","text_config":{"model_type":"gemma2"}}"#,
                true,
            ),
            (LLAMA3_8B, false),
            (r#"{"model_type":"gpt_neox"}"#, false),
            ("not json", false),
        ] {
            assert_eq!(config_without_sdpa(cfg), without, "{cfg}");
        }
        // Eager under a framework that runs transformers' code; a framework
        // with its own model code keeps its kernel.
        let bloom = r#"{"model_type":"bloom","hidden_size":1024,"n_layer":24,"n_head":16,"vocab_size":250880}"#;
        let m = from_config_json(bloom, "b").unwrap();
        let mut p = crate::Plan::default();
        assert_eq!(p.training.attention, crate::plan::Attention::Flash);
        assert!(p.set_imported_model(m.clone(), None, config_without_sdpa(bloom)));
        assert_eq!(p.training.attention, crate::plan::Attention::Eager);
        let mut lit = crate::Plan::default();
        lit.set_framework(crate::framework::Framework::Litgpt);
        let kernel = lit.training.attention;
        assert!(!lit.set_imported_model(m, None, true));
        assert_eq!(lit.training.attention, kernel);
    }

    #[test]
    fn llama_config_matches_the_preset() {
        let m = from_config_json(LLAMA3_8B, "llama3").unwrap();
        assert_eq!(m.params(), preset("llama-3.1-8b").unwrap().spec().params());
    }

    #[test]
    fn mixtral_qwen_gpt2_bert_t5() {
        let mixtral = r#"{"model_type":"mixtral","hidden_size":4096,"intermediate_size":14336,
          "num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":8,
          "num_local_experts":8,"num_experts_per_tok":2,"vocab_size":32000}"#;
        assert_eq!(
            from_config_json(mixtral, "m").unwrap().params(),
            46_702_792_704
        );
        let qwen = r#"{"model_type":"qwen2","hidden_size":3584,"intermediate_size":18944,
          "num_attention_heads":28,"num_hidden_layers":28,"num_key_value_heads":4,
          "vocab_size":152064,"tie_word_embeddings":false}"#;
        assert_eq!(from_config_json(qwen, "q").unwrap().params(), 7_615_616_512);
        let gpt2 = r#"{"model_type":"gpt2","n_embd":768,"n_layer":12,"n_head":12,"n_positions":1024,"vocab_size":50257}"#;
        assert_eq!(from_config_json(gpt2, "g").unwrap().params(), 124_439_808);
        let bert = r#"{"model_type":"bert","hidden_size":768,"num_hidden_layers":12,"num_attention_heads":12,
          "intermediate_size":3072,"vocab_size":30522,"max_position_embeddings":512}"#;
        assert_eq!(from_config_json(bert, "b").unwrap().params(), 109_482_240);
        let t5 = r#"{"model_type":"t5","d_model":768,"num_layers":12,"num_heads":12,"d_kv":64,"d_ff":3072,"vocab_size":32128}"#;
        assert_eq!(from_config_json(t5, "t").unwrap().params(), 222_903_552);
    }

    /// Within 0.5 % of the published count (the preset standard): the
    /// importer does not count q/k norms, BLOOM's embedding LayerNorm or a
    /// bias-free LayerNorm's missing bias.
    fn close(got: u64, published: u64) -> bool {
        (got as f64 - published as f64).abs() <= 0.005 * published as f64
    }

    #[test]
    fn newer_and_older_model_types_match_their_published_counts() {
        // The configs as their hub repositories ship them (the keys that matter).
        let cases: [(&str, u64); 8] = [
            // Qwen/Qwen3-30B-A3B: 30.5B.
            (
                r#"{"model_type":"qwen3_moe","hidden_size":2048,"intermediate_size":6144,
                "moe_intermediate_size":768,"num_attention_heads":32,"num_hidden_layers":48,
                "num_key_value_heads":4,"head_dim":128,"num_experts":128,"num_experts_per_tok":8,
                "vocab_size":151936,"tie_word_embeddings":false}"#,
                30_532_122_624,
            ),
            // google/gemma-3-1b-pt (text only; ties by its class default).
            (
                r#"{"model_type":"gemma3_text","hidden_size":1152,"intermediate_size":6912,
                "num_attention_heads":4,"num_hidden_layers":26,"num_key_value_heads":1,
                "head_dim":256,"vocab_size":262144}"#,
                999_885_952,
            ),
            // mistralai/Mistral-Small-3.1-24B-Instruct-2503: the language model
            // under `text_config` (23.57B of its 24B; without `vision_config`
            // no vision tower is counted).
            (
                r#"{"model_type":"mistral3","architectures":["Mistral3ForConditionalGeneration"],
                "text_config":{"model_type":"mistral","hidden_size":5120,"intermediate_size":32768,
                "num_attention_heads":32,"num_hidden_layers":40,"num_key_value_heads":8,
                "head_dim":128,"vocab_size":131072,"tie_word_embeddings":false}}"#,
                23_572_403_200,
            ),
            // bigscience/bloom-560m.
            (
                r#"{"model_type":"bloom","hidden_size":1024,"n_layer":24,"n_head":16,"vocab_size":250880}"#,
                559_214_592,
            ),
            // facebook/opt-125m.
            (
                r#"{"model_type":"opt","hidden_size":768,"num_hidden_layers":12,"num_attention_heads":12,
                "ffn_dim":3072,"vocab_size":50272,"max_position_embeddings":2048}"#,
                125_239_296,
            ),
            // EleutherAI/gpt-j-6b.
            (
                r#"{"model_type":"gptj","n_embd":4096,"n_layer":28,"n_head":16,"n_positions":2048,
                "rotary_dim":64,"vocab_size":50400,"tie_word_embeddings":false}"#,
                6_053_381_344,
            ),
            // mosaicml/mpt-7b.
            (
                r#"{"model_type":"mpt","d_model":4096,"n_heads":32,"n_layers":32,"expansion_ratio":4,
                "max_seq_len":2048,"vocab_size":50432,"no_bias":true,
                "attn_config":{"alibi":true,"attn_type":"multihead_attention"}}"#,
                6_649_286_656,
            ),
            // facebook/bart-large.
            (
                r#"{"model_type":"bart","d_model":1024,"encoder_layers":12,"decoder_layers":12,
                "encoder_attention_heads":16,"decoder_attention_heads":16,"encoder_ffn_dim":4096,
                "decoder_ffn_dim":4096,"vocab_size":50265,"max_position_embeddings":1024}"#,
                406_291_456,
            ),
        ];
        for (json, published) in cases {
            let m = from_config_json(json, "x").unwrap_or_else(|e| panic!("{e}: {json}"));
            assert!(
                close(m.params(), published),
                "{} vs {published}: {json}",
                m.params()
            );
        }
    }

    #[test]
    fn implementation_details_follow_the_model_type() {
        let m = |json: &str| from_config_json(json, "x").unwrap();
        let dims = r#""hidden_size":1024,"intermediate_size":4096,"num_attention_heads":16,
            "num_hidden_layers":2,"vocab_size":1000"#;
        let with = |t: &str, extra: &str| format!(r#"{{"model_type":"{t}",{dims}{extra}}}"#);
        // Cohere: one LayerNorm feeding attention and the MLP in parallel, tied.
        let cohere = m(&with("cohere", ""));
        assert!(cohere.parallel_residual && cohere.norm == Norm::LayerNorm);
        assert_eq!(cohere.norms_per_layer, 1);
        assert!(cohere.tied_embeddings);
        // StarCoder2: plain MLP with biases; a window on every layer when set.
        let sc2 = m(&with("starcoder2", r#","sliding_window":4096"#));
        assert_eq!(
            (sc2.mlp, sc2.linear_bias, sc2.sliding_window),
            (Mlp::Plain, true, 4096)
        );
        // Gemma-3: sandwich norms in fp32-affine RMSNorm; GLM-4 sandwiches too.
        let g3 = m(&with("gemma3_text", ""));
        assert_eq!(g3.norms_per_layer, 4);
        assert!(g3.norm_fp32_affine && g3.tied_embeddings);
        assert_eq!(m(&with("glm4", "")).norms_per_layer, 4);
        // GLM-4's one `gate_up_proj` beside separate q, k and v.
        let glm4 = m(&with("glm4", ""));
        assert!(glm4.fused_gate_up && !glm4.fused_projections && glm4.gate_up_fused());
        // gpt-oss's sinks; Llama-4's experts, each on every token.
        assert!(m(&with("gpt_oss", "")).attention_sinks && m(&with("gpt_oss", "")).clamped_glu);
        assert!(!m(&with("llama", "")).attention_sinks);
        assert!(preset("gpt-oss-20b").unwrap().spec().attention_sinks);
        assert!(
            preset("llama-4-scout-17b-16e")
                .unwrap()
                .spec()
                .dense_experts
        );
        assert!(!preset("mixtral-8x7b").unwrap().spec().dense_experts);
        assert!(!m(&with("llama", "")).gate_up_fused());
        // q/k/v biases by class default or by key.
        assert!(m(&with("seed_oss", "")).qkv_bias);
        assert!(!m(&with("seed_oss", r#","attention_bias":false"#)).qkv_bias);
        assert!(m(&with("stablelm", r#","use_qkv_bias":true"#)).qkv_bias);
        // gpt-oss: experts by `num_local_experts`.
        let oss = m(&with(
            "gpt_oss",
            r#","num_local_experts":32,"num_experts_per_tok":4"#,
        ));
        assert_eq!((oss.experts, oss.experts_per_token), (32, 4));
        // GPT-BigCode is multi-query unless it says otherwise.
        let bigcode = r#"{"model_type":"gpt_bigcode","n_embd":768,"n_layer":2,"n_head":12,
            "n_positions":1024,"vocab_size":1000}"#;
        assert_eq!(m(bigcode).kv_heads, 1);
        assert_eq!(
            m(&bigcode.replace("{", r#"{"multi_query":false,"#)).kv_heads,
            12
        );
        // A classifier checkpoint of a multimodal model names it at the top.
        let nested = r#"{"model_type":"gemma3","architectures":["Gemma3ForSequenceClassification"],
            "text_config":{"hidden_size":1152,"intermediate_size":6912,"num_attention_heads":4,
            "num_hidden_layers":2,"num_key_value_heads":1,"head_dim":256,"vocab_size":1000}}"#;
        let g = m(nested);
        assert_eq!(g.head, ModelHead::Classifier);
        assert_eq!(g.norms_per_layer, 4, "text_config read as gemma3_text");
        // Llama-4 Scout: 16 routed experts, top-1, and a shared expert on every
        // block; Maverick alternates dense and MoE blocks.
        let scout = r#"{"model_type":"llama4","text_config":{"hidden_size":5120,
            "intermediate_size":8192,"intermediate_size_mlp":16384,"num_attention_heads":40,
            "num_hidden_layers":48,"num_key_value_heads":8,"head_dim":128,"num_local_experts":16,
            "num_experts_per_tok":1,"vocab_size":202048,"interleave_moe_layer_step":1}}"#;
        let s = m(scout);
        assert_eq!(
            (
                s.experts,
                s.experts_per_token,
                s.shared_experts,
                s.dense_layers
            ),
            (16, 1, 1, 0)
        );
        let maverick = scout
            .replace(
                r#""interleave_moe_layer_step":1"#,
                r#""interleave_moe_layer_step":2"#,
            )
            .replace(r#""num_local_experts":16"#, r#""num_local_experts":128"#);
        let mv = m(&maverick);
        assert_eq!((mv.dense_layers, mv.dense_ffn, mv.ffn), (24, 16384, 8192));
        let preset = crate::presets::preset("llama-4-maverick-17b-128e")
            .unwrap()
            .spec();
        assert_eq!(mv.params(), preset.params());
        assert_eq!(mv.active_params(), preset.active_params());
        // An explicit `moe_layers` list wins over the step.
        let listed = maverick.replace(
            r#""interleave_moe_layer_step":2"#,
            r#""interleave_moe_layer_step":2,"moe_layers":[1,3,5,5,99]"#,
        );
        assert_eq!(m(&listed).dense_layers, 45);
        // Qwen-MoE: blocks skipped by `decoder_sparse_step` or listed in
        // `mlp_only_layers` are dense, `intermediate_size` wide; none left
        // with experts is a dense model.
        let sparse_step = r#"{"model_type":"qwen2_moe","hidden_size":1024,"intermediate_size":4096,
            "moe_intermediate_size":512,"num_attention_heads":16,"num_hidden_layers":4,
            "num_experts":8,"num_experts_per_tok":2,"vocab_size":1000,"decoder_sparse_step":2}"#;
        let q = m(sparse_step);
        assert_eq!(
            (q.dense_layers, q.dense_ffn, q.ffn, q.experts),
            (2, 4096, 512, 8)
        );
        let every = sparse_step.replace(r#""decoder_sparse_step":2"#, r#""decoder_sparse_step":1"#);
        assert_eq!(m(&every).dense_layers, 0);
        let only = every.replace("{", r#"{"mlp_only_layers":[0,2],"#);
        assert_eq!(m(&only).dense_layers, 2);
        let none = every.replace("{", r#"{"mlp_only_layers":[0,1,2,3],"#);
        assert_eq!((m(&none).experts, m(&none).ffn), (0, 4096));
        // Qwen1.5-MoE-A2.7B as released: its shared expert is four routed widths.
        let qwen15 = r#"{"model_type":"qwen2_moe","hidden_size":2048,"intermediate_size":5632,
            "moe_intermediate_size":1408,"shared_expert_intermediate_size":5632,
            "num_attention_heads":16,"num_key_value_heads":16,"num_hidden_layers":24,
            "num_experts":60,"num_experts_per_tok":4,"vocab_size":151936,
            "tie_word_embeddings":false,"decoder_sparse_step":1,"mlp_only_layers":[]}"#;
        let q15 = m(qwen15);
        assert_eq!(q15.shared_experts, 4);
        assert_eq!(
            q15.params(),
            crate::presets::preset("qwen1.5-moe-a2.7b")
                .unwrap()
                .spec()
                .params()
        );
        // DeepSeek-MoE-16B (`trust_remote_code`, model_type `deepseek`): the
        // first block dense, two shared experts.
        let ds = r#"{"model_type":"deepseek","hidden_size":2048,"intermediate_size":10944,
            "moe_intermediate_size":1408,"num_attention_heads":16,"num_key_value_heads":16,
            "num_hidden_layers":28,"n_routed_experts":64,"n_shared_experts":2,
            "num_experts_per_tok":6,"first_k_dense_replace":1,"moe_layer_freq":1,
            "vocab_size":102400,"tie_word_embeddings":false}"#;
        let d = m(ds);
        assert_eq!(
            (d.dense_layers, d.dense_ffn, d.shared_experts),
            (1, 10944, 2)
        );
        assert_eq!(
            d.params(),
            crate::presets::preset("deepseek-moe-16b")
                .unwrap()
                .spec()
                .params()
        );
        // Every other block from the first dense one on.
        assert_eq!(
            m(&ds.replace(r#""moe_layer_freq":1"#, r#""moe_layer_freq":2"#)).dense_layers,
            15
        );
        assert_eq!(
            m(&ds.replace(
                r#""first_k_dense_replace":1"#,
                r#""first_k_dense_replace":0"#
            ))
            .dense_layers,
            0
        );
        // GLM-4.5-Air (`glm4_moe`): 46 blocks, the first dense, one shared
        // expert, biases on q/k/v; 106.85B without the multi-token-prediction
        // block transformers does not load (the card: 106B total, 12B active).
        let air = r#"{"model_type":"glm4_moe","hidden_size":4096,"intermediate_size":10944,
            "moe_intermediate_size":1408,"num_attention_heads":96,"num_key_value_heads":8,
            "head_dim":128,"num_hidden_layers":46,"n_routed_experts":128,"n_shared_experts":1,
            "num_experts_per_tok":8,"first_k_dense_replace":1,"vocab_size":151552,
            "attention_bias":true,"tie_word_embeddings":false,"num_nextn_predict_layers":1}"#;
        let g = m(air);
        assert_eq!((g.dense_layers, g.shared_experts, g.experts), (1, 1, 128));
        assert!(g.qkv_bias);
        let (total, active) = (g.params() as f64 / 1e9, g.active_params() as f64 / 1e9);
        assert!((106.0..107.5).contains(&total), "{total}");
        assert!((12.0..14.0).contains(&active), "{active}");
        // ERNIE-4.5-21B-A3B as its class defaults describe it (saved files
        // leave them out): 2 shared experts, the first block dense, a tied
        // head; and the dense 0.3B with its 128-wide heads.
        let ernie = r#"{"model_type":"ernie4_5_moe","hidden_size":2560,"intermediate_size":12288,
            "moe_intermediate_size":1536,"num_attention_heads":20,"num_key_value_heads":4,
            "num_hidden_layers":28,"moe_num_experts":64,"moe_k":6,"vocab_size":103424,
            "moe_layer_end_index":-1}"#;
        let e45 = m(ernie);
        assert_eq!(
            (
                e45.experts,
                e45.experts_per_token,
                e45.shared_experts,
                e45.dense_layers,
                e45.dense_ffn
            ),
            (64, 6, 2, 1, 12288)
        );
        assert!(e45.tied_embeddings && !e45.linear_bias);
        let total = e45.params() as f64 / 1e9;
        assert!((21.0..22.5).contains(&total), "{total}");
        let every_other = ernie.replace(r#""moe_k":6"#, r#""moe_k":6,"moe_layer_interval":2"#);
        assert_eq!(m(&every_other).dense_layers, 14);
        let small = r#"{"model_type":"ernie4_5","hidden_size":1024,"intermediate_size":3072,
            "num_attention_heads":16,"num_key_value_heads":2,"num_hidden_layers":18,
            "vocab_size":103424}"#;
        let e03 = m(small);
        assert_eq!((e03.head_dim, e03.tied_embeddings), (128, true));
        let total = e03.params() as f64 / 1e9;
        assert!((0.35..0.37).contains(&total), "{total}");
        // dots.llm1: GLM-4.5's layout keys.
        let dots = r#"{"model_type":"dots1","hidden_size":4096,"intermediate_size":10944,
            "moe_intermediate_size":1408,"num_attention_heads":32,"num_key_value_heads":32,
            "num_hidden_layers":62,"n_routed_experts":128,"n_shared_experts":2,
            "num_experts_per_tok":6,"first_k_dense_replace":1,"vocab_size":152064}"#;
        let d1 = m(dots);
        assert_eq!(
            (d1.dense_layers, d1.shared_experts, d1.experts),
            (1, 2, 128)
        );
        // DeepSeek-V2-Lite and DeepSeek-V3 as released: latent attention
        // (`head_dim` there is the rotary part), their published counts.
        let lite = r#"{"model_type":"deepseek_v2","hidden_size":2048,"intermediate_size":10944,
            "moe_intermediate_size":1408,"num_attention_heads":16,"num_key_value_heads":16,
            "num_hidden_layers":27,"n_routed_experts":64,"n_shared_experts":2,
            "num_experts_per_tok":6,"first_k_dense_replace":1,"moe_layer_freq":1,
            "kv_lora_rank":512,"q_lora_rank":null,"qk_nope_head_dim":128,"qk_rope_head_dim":64,
            "v_head_dim":128,"vocab_size":102400,"tie_word_embeddings":false}"#;
        let v3 = r#"{"model_type":"deepseek_v3","hidden_size":7168,"intermediate_size":18432,
            "moe_intermediate_size":2048,"num_attention_heads":128,"num_key_value_heads":128,
            "num_hidden_layers":61,"n_routed_experts":256,"n_shared_experts":1,
            "num_experts_per_tok":8,"first_k_dense_replace":3,"moe_layer_freq":1,
            "kv_lora_rank":512,"q_lora_rank":1536,"qk_nope_head_dim":128,"qk_rope_head_dim":64,
            "head_dim":64,"v_head_dim":128,"vocab_size":129280,"tie_word_embeddings":false,
            "num_nextn_predict_layers":1}"#;
        for (json, id) in [(lite, "deepseek-v2-lite"), (v3, "deepseek-v3")] {
            let got = m(json);
            let preset = crate::presets::preset(id).unwrap().spec();
            assert_eq!(got.head_dim, 192, "{id}");
            assert_eq!(got.mla, preset.mla, "{id}");
            assert_eq!(got.params(), preset.params(), "{id}");
            assert_eq!(got.active_params(), preset.active_params(), "{id}");
        }
        let e = from_config_json(&v3.replace(r#""kv_lora_rank":512,"#, ""), "x").unwrap_err();
        assert!(e.to_string().contains("kv_lora_rank"), "{e}");
        // A wrapper whose language model cannot be named is refused by name.
        let e = from_config_json(
            r#"{"model_type":"mystery_vlm","text_config":{"hidden_size":8}}"#,
            "x",
        )
        .unwrap_err();
        assert!(e.to_string().contains("mystery_vlm (text_config)"), "{e}");
    }

    #[test]
    fn errors_name_the_key() {
        let e = from_config_json(r#"{"model_type":"llama","hidden_size":4096}"#, "x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "config.json: missing key `num_hidden_layers` (needed for model_type `llama`)"
        );
        let e = from_config_json(r#"{"model_type":"llama","hidden_size":-1}"#, "x").unwrap_err();
        assert!(e
            .to_string()
            .contains("`hidden_size` must be a positive whole number"));
        let e = from_config_json(r#"{"model_type":"mamba"}"#, "x").unwrap_err();
        assert!(e.to_string().contains("mamba") && e.to_string().contains("llama"));
        let e = from_config_json("{\n  \"a\": ", "x").unwrap_err();
        assert!(matches!(e, ConfigError::Json { line: 2, .. }), "{e}");
    }
}
