//! Import a model from a pasted Hugging Face `config.json`.

use crate::model::{Arch, Mlp, ModelHead, ModelSpec, Norm, Positions};
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

/// The GPT-2 / BERT / NeoX / Phi block: plain GELU MLP, LayerNorm, biases everywhere.
fn gpt_block(m: &mut ModelSpec) {
    m.mlp = Mlp::Plain;
    m.norm = Norm::LayerNorm;
    m.linear_bias = true;
}

/// Parses a `config.json` into a [`ModelSpec`] named `name`.
pub fn from_config_json(text: &str, name: &str) -> Result<ModelSpec, ConfigError> {
    let v: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json {
        line: e.line(),
        column: e.column(),
        msg: e.to_string(),
    })?;
    if !v.is_object() {
        return Err(ConfigError::NotObject);
    }
    let model_type = v
        .get("model_type")
        .and_then(Value::as_str)
        .unwrap_or("llama")
        .to_string();
    let c = Cfg {
        v: &v,
        model_type: model_type.clone(),
    };
    let mut m = ModelSpec {
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
        norms_per_layer: 2,
        positions: Positions::Rotary,
        max_positions: 0,
        linear_bias: false,
        qkv_bias: false,
        experts: 0,
        experts_per_token: 0,
        shared_experts: 0,
        fused_projections: false,
        gelu_new: false,
        softcap: false,
        parallel_residual: false,
        norm_fp32_affine: false,
        python_norm: false,
        head: ModelHead::Lm,
        sliding_window: 0,
    };
    match model_type.as_str() {
        "llama" | "mistral" | "mixtral" | "qwen2" | "qwen2_moe" | "qwen3" | "gemma" | "gemma2"
        | "phi3" | "olmo" => {
            let ffn_keys: &[&'static str] = match model_type.as_str() {
                "qwen2_moe" => &["moe_intermediate_size", "intermediate_size"],
                _ => &["intermediate_size"],
            };
            standard_dims(&c, &mut m, ffn_keys)?;
            let tied_default = matches!(model_type.as_str(), "gemma" | "gemma2");
            m.tied_embeddings = c.bool("tie_word_embeddings", tied_default);
            m.qkv_bias = matches!(model_type.as_str(), "qwen2" | "qwen2_moe")
                || c.bool("attention_bias", false);
            if model_type == "gemma2" {
                m.norms_per_layer = 4;
                m.softcap =
                    c.is_set("attn_logit_softcapping") || c.is_set("final_logit_softcapping");
            }
            // GemmaRMSNorm: `output * (1.0 + self.weight.float())`.
            m.norm_fp32_affine = matches!(model_type.as_str(), "gemma" | "gemma2");
            // Phi-3 computes q/k/v in `qkv_proj` and gate/up in `gate_up_proj`.
            m.fused_projections = model_type == "phi3";
            // Every layer attends over a window (Mistral, Mixtral, Phi-3; Qwen2
            // only with `use_sliding_window`); Gemma-2 alternates, in eager.
            let windowed = match model_type.as_str() {
                "mistral" | "mixtral" | "phi3" => true,
                "qwen2" | "qwen2_moe" => c.bool("use_sliding_window", false),
                _ => false,
            };
            if windowed {
                m.sliding_window = c.opt_u32("sliding_window")?.unwrap_or(0);
            }
            if let Some(e) = c
                .opt_u32("num_local_experts")?
                .or(c.opt_u32("num_experts")?)
            {
                m.experts = e;
                m.experts_per_token = c.u32("num_experts_per_tok")?;
            }
            if model_type == "qwen2_moe" && c.opt_u32("shared_expert_intermediate_size")?.is_some()
            {
                m.shared_experts = 1;
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
            m.hidden = c.u32("n_embd")?;
            m.layers = c.u32("n_layer")?;
            m.heads = c.u32("n_head")?;
            m.kv_heads = m.heads;
            m.head_dim = m.hidden / m.heads;
            m.ffn = c.opt_u32("n_inner")?.unwrap_or(4 * m.hidden);
            m.vocab = c.u32("vocab_size")?;
            gpt_block(&mut m);
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
        }
        "bert" | "roberta" => {
            m.arch = Arch::Encoder;
            standard_dims(&c, &mut m, &["intermediate_size"])?;
            gpt_block(&mut m);
            m.positions = Positions::Learned;
            m.max_positions = c.u32("max_position_embeddings")?;
            m.tied_embeddings = true;
        }
        "t5" | "mt5" => {
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
            m.positions = Positions::Relative;
            m.tied_embeddings = c.bool("tie_word_embeddings", true);
        }
        other => return Err(ConfigError::UnknownType(other.to_string())),
    }
    // A checkpoint saved from `*ForSequenceClassification` /
    // `*ForTokenClassification` (reward models, BERT classifiers) names its
    // head in `architectures`.
    let classifier = v
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
    Ok(m)
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
