//! The plan as a URL query: the URL is the plan's first home, so every
//! setting the page exposes round-trips through `encode` / `decode`.
//! Only settings that differ from the default plan are written, which keeps
//! shared links short. Unknown keys (e.g. `lang`, `utm_*`) are ignored.

use crate::framework::Framework;
use crate::gpu;
use crate::model::{Arch, ModelHead, ModelSpec};
use crate::plan::{AdapterMethod, Finetune, LoraTargets, LoraVariant, Offload, Plan, TrainingSpec};
use crate::presets;
use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;

/// A query parameter that could not be read.
#[derive(Clone, Debug, PartialEq, Error)]
#[error("URL parameter `{param}`: {reason}")]
pub struct QueryError {
    pub param: String,
    pub reason: String,
}

fn err(param: &str, reason: impl Into<String>) -> QueryError {
    QueryError {
        param: param.to_string(),
        reason: reason.into(),
    }
}

/// The kebab-case id serde gives an enum variant.
pub fn enum_id<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// Parses an enum from its kebab-case id.
pub fn parse_enum<T: DeserializeOwned>(param: &str, s: &str) -> Result<T, QueryError> {
    serde_json::from_value(serde_json::Value::String(s.to_string()))
        .map_err(|_| err(param, format!("unknown value `{s}`")))
}

fn num(param: &str, s: &str) -> Result<u32, QueryError> {
    s.trim().parse::<u32>().map_err(|_| {
        err(
            param,
            format!("`{s}` is not a whole number between 0 and 4294967295"),
        )
    })
}

fn boolean(param: &str, s: &str) -> Result<bool, QueryError> {
    match s {
        "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" => Ok(false),
        _ => Err(err(param, format!("`{s}` is not a boolean (use 1 or 0)"))),
    }
}

/// LoRA targets as `q+k+v+o+gate+up+down` (or `all-linear`).
pub fn targets_id(t: &LoraTargets) -> String {
    if *t == LoraTargets::ALL_LINEAR {
        return "all-linear".into();
    }
    let mut v = Vec::new();
    for (on, n) in [
        (t.q, "q"),
        (t.k, "k"),
        (t.v, "v"),
        (t.o, "o"),
        (t.gate, "gate"),
        (t.up, "up"),
        (t.down, "down"),
        (t.lm_head, "lm_head"),
    ] {
        if on {
            v.push(n);
        }
    }
    v.join("+")
}

pub fn parse_targets(param: &str, s: &str) -> Result<LoraTargets, QueryError> {
    let mut t = LoraTargets::default();
    // A list as configs write it (`["q_proj", "v_proj"]`) and module paths
    // (`model.layers.*.self_attn.q_proj`: the last name is the module's).
    let parts = s
        .split(['+', ',', ' ', ';', '|'])
        .map(|p| p.trim_matches(['[', ']', '(', ')', '{', '}', '"', '\'']))
        .map(|p| p.rsplit('.').next().unwrap_or(p))
        .filter(|p| !p.is_empty());
    for part in parts {
        // Module names as the model code spells them (transformers' Llama,
        // BERT, GPT-2, BLOOM/Falcon, Phi; Meta's and torchtitan's wq/w1…).
        match part.to_ascii_lowercase().replace('-', "_").as_str() {
            "all_linear" | "all" => {
                let lm = t.lm_head;
                t = LoraTargets::ALL_LINEAR;
                t.lm_head = lm;
            }
            "q" | "q_proj" | "query" | "wq" => t.q = true,
            "k" | "k_proj" | "key" | "wk" => t.k = true,
            "v" | "v_proj" | "value" | "wv" => t.v = true,
            // (`dense`: GPT-NeoX's, Falcon's and ChatGLM's attention output.)
            "o" | "o_proj" | "out_proj" | "wo" | "dense" => t.o = true,
            "qkv" | "qkv_proj" | "wqkv" | "c_attn" | "query_key_value" | "w_pack" => {
                (t.q, t.k, t.v) = (true, true, true)
            }
            "attention" | "attn" | "qkvo" => (t.q, t.k, t.v, t.o) = (true, true, true, true),
            "gate" | "gate_proj" | "w1" => t.gate = true,
            "up" | "up_proj" | "w3" | "fc1" | "c_fc" | "dense_h_to_4h" => t.up = true,
            "down" | "down_proj" | "w2" | "fc2" | "dense_4h_to_h" => t.down = true,
            "gate_up_proj" => (t.gate, t.up) = (true, true),
            "mlp" | "ffn" => (t.gate, t.up, t.down) = (true, true, true),
            "lm_head" | "head" => t.lm_head = true,
            _ => return Err(err(param, format!("unknown LoRA target `{part}`"))),
        }
    }
    if t == LoraTargets::default() {
        return Err(err(param, "names no target module"));
    }
    Ok(t)
}

/// Decodes `%XX` and `+` in a query component.
fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes a query value (everything but `A-Z a-z 0-9 - _ . ~`).
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else if b == b'+' {
            o.push_str("%2B");
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// Splits a raw query string (with or without the leading `?`) into pairs.
pub fn pairs(q: &str) -> Vec<(String, String)> {
    q.trim_start_matches('?')
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (unescape(k), unescape(v)),
            None => (unescape(p), String::new()),
        })
        .collect()
}

/// The query's pairs for a plan, only where they differ from the default plan.
pub fn encode_pairs(plan: &Plan) -> Vec<(&'static str, String)> {
    pairs_for(plan, false)
}

/// Every setting the page exposes, as `(key, value)` (defaults included): what
/// each form control shows.
pub fn all_pairs(plan: &Plan) -> Vec<(&'static str, String)> {
    pairs_for(plan, true)
}

/// The value of one setting (`None` for an unknown key).
pub fn value_of(plan: &Plan, key: &str) -> Option<String> {
    all_pairs(plan)
        .into_iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// The keys whose values a framework's profile decides: a change of framework
/// re-seeds them (in the planner's form, hydrated or not).
const SEEDED_BY_FRAMEWORK: [&str; 11] = [
    "loss",
    "lpk",
    "ckpt",
    "ad16",
    "opt_impl",
    "upcast",
    "lora_dropout",
    "dropout",
    "act_off",
    "fkern",
    "dq",
];

/// The plan with one setting changed, through the same decoder as the URL
/// (one validation path for the form, the URL and the no-JavaScript GET).
pub fn apply(plan: &Plan, key: &str, value: &str) -> Result<Plan, QueryError> {
    let mut pairs: Vec<(String, String)> = all_pairs(plan)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    if key == "model" && value != "custom" {
        // A new preset replaces the custom dimensions and re-seeds the
        // block dropout its checkpoint trains with.
        pairs.retain(|(k, _)| !is_model_key(k) && k != "dropout");
    }
    if key == "gpu" {
        // Another GPU from the list brings its own figures; one of the
        // user's own (an id the list lacks) starts from the current one's.
        let figures = gpu_figures(&plan.gpu);
        pairs.retain(|(k, _)| !figures.iter().any(|f| f.0 == k));
        if gpu::gpu(value).is_none() {
            let own = gpu::GpuSpec {
                id: value.to_string(),
                ..plan.gpu.clone()
            };
            for (k, v, _) in gpu_figures(&own) {
                pairs.push((k.to_string(), v));
            }
        }
    }
    if key == "fw" {
        // A new framework re-seeds the settings it decides.
        pairs.retain(|(k, _)| !SEEDED_BY_FRAMEWORK.contains(&k.as_str()));
    }
    if key == "ft" {
        pairs.retain(|(k, _)| !matches!(k.as_str(), "bits"));
    }
    // The objective's default loss follows it (TRL's ORPO trainer takes the
    // logits, its others its fused head); a loss the user chose stays —
    // decided in `decode` from the objective the plan had, as for the form.
    if key == "obj" {
        pairs.push(("obj_prev".to_string(), enum_id(&plan.training.objective)));
    }
    // So does torchtune's release (0.1–0.2 had only the standard loss).
    if key == "ttr" {
        pairs.push(("ttr_prev".to_string(), enum_id(&plan.training.torchtune)));
    }
    // A trainable count that is the method's own on this model (or none yet)
    // follows a change of method, model or virtual tokens; an entered one stays.
    let follows = matches!(key, "adapter" | "model" | "vtokens") || is_model_key(key);
    let none_yet = matches!(
        plan.training.finetune,
        Finetune::Adapter {
            trainable_params: 0,
            ..
        }
    );
    if follows && (none_yet || auto_trainable(plan).is_some()) {
        pairs.retain(|(k, _)| k != "trainable");
    }
    pairs.retain(|(k, _)| k != key);
    pairs.push((key.to_string(), value.to_string()));
    decode(&pairs)
}

/// The trainable count of an adapter plan when it is the one its method
/// gives on its model ([`AdapterMethod::default_trainable_params`]) rather
/// than one the user entered: the planner's form sends it as
/// `trainable_auto`, so that without JavaScript the count follows a changed
/// method or model as it does in the browser ([`apply`]).
pub fn auto_trainable(plan: &Plan) -> Option<u64> {
    match plan.training.finetune {
        Finetune::Adapter {
            trainable_params,
            method,
            virtual_tokens,
            ..
        } => method
            .default_trainable_params(&plan.model, virtual_tokens)
            .filter(|&d| d == trainable_params),
        _ => None,
    }
}

/// The keys that describe a custom model's dimensions (with the
/// implementation switches of [`MODEL_FLAGS`]).
const MODEL_KEYS: &[&str] = &[
    "model_name",
    "arch",
    "layers",
    "enc_layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "ffn",
    "vocab",
    "experts",
    "top_k",
    "shared",
    "dense",
    "dense_ffn",
    "window",
    "q_rank",
    "kv_rank",
    "rope_dim",
    "v_dim",
    "mlp",
    "norm",
    "tied",
    "norms",
    "pos",
    "max_pos",
    "vision",
];

/// The GPU a plan's `gpu` id starts from: its catalogue entry, or for an id
/// the catalogue lacks, a card with no figures yet.
fn gpu_base(id: &str) -> gpu::GpuSpec {
    gpu::gpu(id).unwrap_or_else(|| gpu::GpuSpec {
        id: id.to_string(),
        name: String::new(),
        capacity_mib: 0,
        bandwidth_gbps: 0.0,
        bf16_tflops: 0.0,
        fp16_tflops: 0.0,
        fp8_tflops: 0.0,
    })
}

/// The figures of `g` beside its id's catalogue entry's: URL key, its
/// value, the entry's (the URL keeps those that differ). Floats print in
/// Rust's shortest round-trip form, so they read back exact.
fn gpu_figures(g: &gpu::GpuSpec) -> Vec<(&'static str, String, String)> {
    let base = gpu_base(&g.id);
    let mut out = vec![
        ("gpu_name", g.name.clone(), base.name.clone()),
        (
            "gpu_mib",
            g.capacity_mib.to_string(),
            base.capacity_mib.to_string(),
        ),
    ];
    for (k, a, b) in [
        ("gpu_bw", g.bandwidth_gbps, base.bandwidth_gbps),
        ("gpu_bf16", g.bf16_tflops, base.bf16_tflops),
        ("gpu_fp16", g.fp16_tflops, base.fp16_tflops),
        ("gpu_fp8", g.fp8_tflops, base.fp8_tflops),
    ] {
        out.push((k, a.to_string(), b.to_string()));
    }
    out
}

/// The new value of a select the no-JavaScript form submitted changed: the
/// form sends the value it showed as `{key}_prev` beside the select's own.
fn changed_select<'q>(get: &impl Fn(&str) -> Option<&'q str>, key: &str) -> Option<&'q str> {
    match (get(key), get(&format!("{key}_prev"))) {
        (Some(now), Some(before)) if now != before => Some(now),
        _ => None,
    }
}

/// Reads the GPU: `gpu` names a catalogue entry or, with `gpu_mib`, a card
/// of the user's own; the `gpu_*` keys override its figures.
fn decode_gpu<'q>(
    get: impl Fn(&str) -> Option<&'q str>,
    current: &gpu::GpuSpec,
) -> Result<gpu::GpuSpec, QueryError> {
    // Without JavaScript the form sends the figures it showed beside a GPU
    // select that may have changed (`gpu_prev` names the GPU it showed): a
    // new GPU from the list brings its own figures, one of the user's own
    // starts from those shown (as [`apply`] does).
    let switched = changed_select(&get, "gpu").is_some_and(|now| gpu::gpu(now).is_some());
    let get = |k: &str| {
        if switched && k != "gpu" {
            None
        } else {
            get(k)
        }
    };
    let mut g = match get("gpu") {
        Some(id) => match gpu::gpu(id) {
            Some(g) => g,
            None if get("gpu_mib").is_some() => gpu_base(id),
            None => {
                return Err(err(
                    "gpu",
                    format!(
                        "unknown GPU `{id}` (give its memory as gpu_mib for a GPU not in the list)"
                    ),
                ))
            }
        },
        None => current.clone(),
    };
    if let Some(name) = get("gpu_name") {
        g.name = name.to_string();
    }
    if let Some(s) = get("gpu_mib") {
        g.capacity_mib = s
            .trim()
            .parse::<u64>()
            .map_err(|_| err("gpu_mib", format!("`{s}` is not a whole number of MiB")))?;
    }
    for (k, slot) in [
        ("gpu_bw", &mut g.bandwidth_gbps),
        ("gpu_bf16", &mut g.bf16_tflops),
        ("gpu_fp16", &mut g.fp16_tflops),
        ("gpu_fp8", &mut g.fp8_tflops),
    ] {
        if let Some(s) = get(k) {
            *slot = s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| err(k, format!("`{s}` is not a number of zero or more")))?;
        }
    }
    Ok(g)
}

fn is_model_key(k: &str) -> bool {
    MODEL_KEYS.contains(&k) || MODEL_FLAGS.iter().any(|(f, _)| *f == k)
}

/// The model's implementation switches and their URL keys.
type Flag = fn(&mut ModelSpec) -> &mut bool;
const MODEL_FLAGS: [(&str, Flag); 16] = [
    ("cglu", |m| &mut m.clamped_glu),
    ("dense_moe", |m| &mut m.dense_experts),
    ("sinks", |m| &mut m.attention_sinks),
    ("bias", |m| &mut m.linear_bias),
    ("qkv_bias", |m| &mut m.qkv_bias),
    ("fproj", |m| &mut m.fused_projections),
    ("fgu", |m| &mut m.fused_gate_up),
    ("gelu_new", |m| &mut m.gelu_new),
    ("relu", |m| &mut m.relu),
    ("qknorm", |m| &mut m.qk_norm),
    ("lbias", |m| &mut m.logits_bias),
    ("smask", |m| &mut m.sdpa_mask),
    ("softcap", |m| &mut m.softcap),
    ("parallel", |m| &mut m.parallel_residual),
    ("norm32", |m| &mut m.norm_fp32_affine),
    ("pynorm", |m| &mut m.python_norm),
];

/// The training step's switches and their URL keys.
type TrainingFlag = fn(&mut TrainingSpec) -> &mut bool;
const TRAINING_FLAGS: [(&str, TrainingFlag); 17] = [
    ("opt_bwd", |t| &mut t.optimizer_in_backward),
    ("opt16", |t| &mut t.optimizer_states_16bit),
    ("upcast", |t| &mut t.fp32_upcasts),
    ("dropout", |t| &mut t.dropout),
    ("pad", |t| &mut t.padded),
    ("act_off", |t| &mut t.activation_offload),
    ("compile", |t| &mut t.compile),
    ("fkern", |t| &mut t.fused_kernels),
    ("grad_none", |t| &mut t.zero_grad_set_to_none),
    ("kbit32", |t| &mut t.kbit_fp32_prep),
    ("emb16", |t| &mut t.kbit_embeddings_16bit),
    ("ad16", |t| &mut t.adapters_16bit),
    ("dq", |t| &mut t.nf4_double_quant),
    ("bnb432", |t| &mut t.bnb_0_43_2),
    ("sync_each", |t| &mut t.sync_each_batch),
    ("pre_ref", |t| &mut t.precompute_ref),
    ("lpk", |t| &mut t.logprob_kernel),
];

fn pairs_for(plan: &Plan, all: bool) -> Vec<(&'static str, String)> {
    // Each value is left out when it is what decoding rebuilds without it:
    // the default plan with the plan's framework applied (`decode` sets the
    // framework first, and its defaults seed the settings it decides).
    let d0 = Plan::default();
    let mut d = d0.clone();
    d.set_framework(plan.framework);
    let mut v: Vec<(&'static str, String)> = Vec::new();
    let mut put = |k: &'static str, a: String, b: String| {
        if all || a != b {
            v.push((k, a));
        }
    };
    // Model: preset id when it matches one, else every dimension (with `all`,
    // the dimensions too, so every control shows its value).
    // The head is its own key (kept when the preset changes).
    let headless = ModelSpec {
        head: ModelHead::Lm,
        ..plan.model.clone()
    };
    match presets::presets().iter().find(|p| p.spec() == headless) {
        Some(p) if !all => put("model", p.id.to_string(), d.model.name.clone()),
        found => {
            let id = found.map(|p| p.id).unwrap_or("custom");
            let m = &plan.model;
            v.push(("model", id.into()));
            // A model of one's own keeps the name it was given (a plan
            // file's Hugging Face id, an imported config's).
            if found.is_none() && m.name != "custom" {
                v.push(("model_name", m.name.clone()));
            }
            v.push(("arch", enum_id(&m.arch)));
            for (k, x) in [
                ("layers", m.layers),
                ("enc_layers", m.encoder_layers),
                ("hidden", m.hidden),
                ("heads", m.heads),
                ("kv_heads", m.kv_heads),
                ("head_dim", m.head_dim),
                ("ffn", m.ffn),
                ("vocab", m.vocab),
                ("experts", m.experts),
                ("top_k", m.experts_per_token),
                ("shared", m.shared_experts),
                ("dense", m.dense_layers),
                ("dense_ffn", m.dense_ffn),
                ("window", m.sliding_window),
                ("norms", m.norms_per_layer),
                ("max_pos", m.max_positions),
                // Latent attention's widths; kv_rank 0: none.
                ("q_rank", m.mla.map_or(0, |a| a.q_rank)),
                ("kv_rank", m.mla.map_or(0, |a| a.kv_rank)),
                ("rope_dim", m.mla.map_or(0, |a| a.rope_dim)),
                ("v_dim", m.mla.map_or(0, |a| a.v_dim)),
            ] {
                v.push((k, x.to_string()));
            }
            if all || m.vision_params > 0 {
                v.push(("vision", m.vision_params.to_string()));
            }
            v.push(("mlp", enum_id(&m.mlp)));
            v.push(("norm", enum_id(&m.norm)));
            v.push(("pos", enum_id(&m.positions)));
            v.push(("tied", (m.tied_embeddings as u8).to_string()));
            let mut flags = m.clone(); // the table's accessors take `&mut`
            for (k, flag) in MODEL_FLAGS {
                let on = *flag(&mut flags);
                if all || on {
                    v.push((k, (on as u8).to_string()));
                }
            }
        }
    }
    if all || plan.model.head != ModelHead::Lm {
        v.push(("head", enum_id(&plan.model.head)));
    }
    let (t, dt) = (&plan.training, &d.training);
    let (p, dp) = (&plan.parallel, &d.parallel);
    let mut put = |k: &'static str, a: String, b: String| {
        if all || a != b {
            v.push((k, a));
        }
    };
    put("gpu", plan.gpu.id.clone(), d.gpu.id.clone());
    // A GPU that is not its catalogue entry (a custom card, a MIG slice, a
    // plan file's own figures) keeps every figure that differs from it.
    for (k, a, b) in gpu_figures(&plan.gpu) {
        put(k, a, b);
    }
    put("gpus", p.num_gpus.to_string(), dp.num_gpus.to_string());
    put(
        "per_node",
        p.gpus_per_node.to_string(),
        dp.gpus_per_node.to_string(),
    );
    put("fw", plan.framework.id().into(), d0.framework.id().into());
    put("mb", t.micro_batch.to_string(), dt.micro_batch.to_string());
    put("seq", t.seq_len.to_string(), dt.seq_len.to_string());
    if let Some(target) = t.target_len {
        put("tgt", target.to_string(), String::new());
    }
    put("ga", t.grad_accum.to_string(), dt.grad_accum.to_string());
    put(
        "frozen",
        t.frozen_layers.to_string(),
        dt.frozen_layers.to_string(),
    );
    put("prec", enum_id(&t.precision), enum_id(&dt.precision));
    put("opt", enum_id(&t.optimizer), enum_id(&dt.optimizer));
    if let Some(rank) = t.galore_rank {
        put("galore_rank", rank.to_string(), String::new());
    }
    put(
        "opt_impl",
        enum_id(&t.optimizer_impl),
        enum_id(&dt.optimizer_impl),
    );
    put("torch", enum_id(&t.pytorch), enum_id(&dt.pytorch));
    put("tf", enum_id(&t.transformers), enum_id(&dt.transformers));
    put("ttr", enum_id(&t.torchtune), enum_id(&dt.torchtune));
    put("ttn", enum_id(&t.torchtitan), enum_id(&dt.torchtitan));
    put("trl", enum_id(&t.trl), enum_id(&dt.trl));
    // The default policy depends on the GPU count and a k-bit base's
    // preparation, which `decode` reads after the framework: it re-seeds an
    // absent `ckpt` once the plan is read.
    put(
        "ckpt",
        enum_id(&t.checkpointing),
        enum_id(&plan.default_checkpointing()),
    );
    put("attn", enum_id(&t.attention), enum_id(&dt.attention));
    // The default loss depends on the objective (TRL's ORPO trainer takes
    // the logits): an absent `loss` is re-seeded once the plan is read.
    put("loss", enum_id(&t.loss), enum_id(&plan.default_loss()));
    put("obj", enum_id(&t.objective), enum_id(&dt.objective));
    put(
        "ckpt_every",
        t.checkpoint_every.to_string(),
        dt.checkpoint_every.to_string(),
    );
    let (mut tc, mut dc) = (t.clone(), dt.clone()); // the accessors take `&mut`
    dc.dropout = plan.default_dropout(); // what decoding seeds for this model
    dc.adapters_16bit = plan.default_adapters_16bit(); // re-seeded once the plan is read
    for (k, flag) in TRAINING_FLAGS {
        let (a, b) = (*flag(&mut tc), *flag(&mut dc));
        put(k, (a as u8).to_string(), (b as u8).to_string());
    }
    match t.finetune {
        Finetune::Full => {
            if all {
                v.push(("ft", "full".into()));
            }
        }
        Finetune::Lora {
            rank,
            targets,
            base_bits,
            dropout,
            variant,
        } => {
            v.push(("ft", "lora".into()));
            v.push(("rank", rank.to_string()));
            v.push(("targets", targets_id(&targets)));
            v.push(("bits", base_bits.to_string()));
            v.push(("lora_dropout", (dropout as u8).to_string()));
            if all || variant != LoraVariant::Lora {
                v.push(("lora_var", enum_id(&variant)));
            }
        }
        Finetune::Adapter {
            trainable_params,
            base_bits,
            method,
            virtual_tokens,
            targets,
        } => {
            v.push(("ft", "adapter".into()));
            v.push(("trainable", trainable_params.to_string()));
            v.push(("bits", base_bits.to_string()));
            if all || method != AdapterMethod::Generic {
                v.push(("adapter", enum_id(&method)));
            }
            if all || targets != LoraTargets::QV {
                v.push(("targets", targets_id(&targets)));
            }
            if all || virtual_tokens > 0 {
                v.push(("vtokens", virtual_tokens.to_string()));
            }
        }
    }
    let mut put = |k: &'static str, a: String, b: String| {
        if all || a != b {
            v.push((k, a));
        }
    };
    put("shard", enum_id(&p.sharding), enum_id(&dp.sharding));
    put("tp", p.tp.to_string(), dp.tp.to_string());
    put(
        "sp",
        (p.sequence_parallel as u8).to_string(),
        (dp.sequence_parallel as u8).to_string(),
    );
    put("pp", p.pp.to_string(), dp.pp.to_string());
    put(
        "pp_sched",
        enum_id(&p.pp_schedule),
        enum_id(&dp.pp_schedule),
    );
    put(
        "pp_mb",
        p.pp_microbatches.to_string(),
        dp.pp_microbatches.to_string(),
    );
    put(
        "vstages",
        p.virtual_stages.to_string(),
        dp.virtual_stages.to_string(),
    );
    put("cp", p.cp.to_string(), dp.cp.to_string());
    put("ep", p.ep.to_string(), dp.ep.to_string());
    put(
        "off_opt",
        enum_id(&p.offload.optimizer),
        enum_id(&dp.offload.optimizer),
    );
    put(
        "off_par",
        enum_id(&p.offload.params),
        enum_id(&dp.offload.params),
    );
    put(
        "bucket_view",
        (p.gradient_as_bucket_view as u8).to_string(),
        (dp.gradient_as_bucket_view as u8).to_string(),
    );
    put("ds", enum_id(&p.deepspeed), enum_id(&dp.deepspeed));
    put(
        "hpz",
        p.hpz_partition_size.to_string(),
        dp.hpz_partition_size.to_string(),
    );
    put(
        "ctx_mib",
        plan.runtime.cuda_context_mib.to_string(),
        d.runtime.cuda_context_mib.to_string(),
    );
    put(
        "other_mib",
        plan.runtime.other_processes_mib.to_string(),
        d.runtime.other_processes_mib.to_string(),
    );
    put(
        "expandable",
        (plan.runtime.expandable_segments as u8).to_string(),
        (d.runtime.expandable_segments as u8).to_string(),
    );
    v
}

/// The plan as a query string (without `?`).
pub fn encode(plan: &Plan) -> String {
    encode_pairs(plan)
        .into_iter()
        .map(|(k, v)| format!("{k}={}", escape(&v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Reads a plan from query pairs, starting from the default plan.
pub fn decode<K: AsRef<str>, V: AsRef<str>>(q: &[(K, V)]) -> Result<Plan, QueryError> {
    let mut plan = Plan::default();
    // An empty value (a cleared form field) means "keep the default".
    let raw = |k: &str| {
        q.iter()
            .rev()
            .find(|(a, _)| a.as_ref() == k)
            .map(|(_, v)| v.as_ref().trim())
            .filter(|v| !v.is_empty())
    };
    // A form submitted without JavaScript sends every field. When its
    // framework select was changed (`fw_prev` names the framework the page
    // showed), the fields the old framework seeded still hold its defaults:
    // the new framework's stand, as they do when the hydrated form applies
    // the change ([`apply`]).
    let fw_switched = changed_select(&raw, "fw").is_some();
    let get = |k: &str| {
        if fw_switched && SEEDED_BY_FRAMEWORK.contains(&k) {
            None
        } else {
            raw(k)
        }
    };

    // Framework first: its defaults seed the settings it decides.
    if let Some(fw) = get("fw") {
        let f =
            Framework::from_id(fw).ok_or_else(|| err("fw", format!("unknown framework `{fw}`")))?;
        plan.set_framework(f);
    }
    if let Some(id) = get("model") {
        if id == "custom" {
            let m = &mut plan.model;
            m.name = get("model_name").unwrap_or("custom").into();
        } else {
            let p = presets::preset(id)
                .ok_or_else(|| err("model", format!("unknown model preset `{id}`")))?;
            plan.model = p.spec();
        }
    }
    // A form submitted without JavaScript sends every field. When its model
    // select was changed (`model_prev` names the model the page showed), the
    // dimension fields still hold the old model's: the new preset's stand.
    let switched = changed_select(&get, "model").is_some_and(|now| now != "custom");
    if !switched {
        let m = &mut plan.model;
        if let Some(a) = get("arch") {
            m.arch = parse_enum("arch", a)?;
        }
        for (k, slot) in [
            ("layers", &mut m.layers),
            ("enc_layers", &mut m.encoder_layers),
            ("hidden", &mut m.hidden),
            ("heads", &mut m.heads),
            ("kv_heads", &mut m.kv_heads),
            ("head_dim", &mut m.head_dim),
            ("ffn", &mut m.ffn),
            ("vocab", &mut m.vocab),
            ("experts", &mut m.experts),
            ("top_k", &mut m.experts_per_token),
            ("shared", &mut m.shared_experts),
            ("dense", &mut m.dense_layers),
            ("dense_ffn", &mut m.dense_ffn),
            ("window", &mut m.sliding_window),
            ("norms", &mut m.norms_per_layer),
            ("max_pos", &mut m.max_positions),
        ] {
            if let Some(s) = get(k) {
                *slot = num(k, s)?;
            }
        }
        if let Some(s) = get("vision") {
            m.vision_params = s.trim().parse().map_err(|_| {
                err(
                    "vision",
                    format!("`{s}` is not a whole number of parameters (0 or more)"),
                )
            })?;
        }
        // Latent attention: kv_rank > 0 turns it on, 0 off; the other
        // widths change the model's own (0 when it has none).
        let mut a = m.mla.unwrap_or_default();
        let mut stated = false;
        for (k, slot) in [
            ("q_rank", &mut a.q_rank),
            ("kv_rank", &mut a.kv_rank),
            ("rope_dim", &mut a.rope_dim),
            ("v_dim", &mut a.v_dim),
        ] {
            if let Some(s) = get(k) {
                *slot = num(k, s)?;
                stated = true;
            }
        }
        if stated {
            m.mla = (a.kv_rank > 0).then_some(a);
        }
        if let Some(s) = get("mlp") {
            m.mlp = parse_enum("mlp", s)?;
        }
        if let Some(s) = get("norm") {
            m.norm = parse_enum("norm", s)?;
        }
        if let Some(s) = get("pos") {
            m.positions = parse_enum("pos", s)?;
        }
        if let Some(s) = get("tied") {
            m.tied_embeddings = boolean("tied", s)?;
        }
        for (k, flag) in MODEL_FLAGS {
            if let Some(s) = get(k) {
                *flag(m) = boolean(k, s)?;
            }
        }
    }
    if let Some(s) = get("head") {
        plan.model.head = parse_enum("head", s)?;
    }
    plan.gpu = decode_gpu(get, &plan.gpu)?;
    let lora_dropout_default = plan.framework.defaults().lora_dropout;
    let dropout_default = plan.default_dropout();
    let arch = plan.model.arch;
    let model = &plan.model;
    let t = &mut plan.training;
    for (k, slot) in [
        ("mb", &mut t.micro_batch),
        ("seq", &mut t.seq_len),
        ("ga", &mut t.grad_accum),
    ] {
        if let Some(s) = get(k) {
            *slot = num(k, s)?;
        }
    }
    if let Some(s) = get("frozen") {
        let frozen = num("frozen", s)?;
        // Frozen layers belong to full fine-tuning: beside an adapter (the
        // form submits every field) they are ignored.
        if matches!(get("ft"), None | Some("full")) {
            t.frozen_layers = frozen;
        }
    }
    if let Some(s) = get("tgt") {
        let target = num("tgt", s)?;
        // A target length belongs to an encoder–decoder: beside a model of
        // another kind (the form submits every field, and a new preset
        // leaves the old value there) it is ignored, as a preset ignores
        // the custom dimensions.
        if arch == Arch::EncoderDecoder {
            t.target_len = Some(target);
        }
    }
    if let Some(s) = get("prec") {
        t.precision = parse_enum("prec", s)?;
    }
    if let Some(s) = get("opt") {
        t.optimizer = parse_enum("opt", s)?;
    }
    if let Some(s) = get("galore_rank") {
        t.galore_rank = Some(num("galore_rank", s)?);
    }
    if let Some(s) = get("torch") {
        t.pytorch = parse_enum("torch", s)?;
    }
    if let Some(s) = get("tf") {
        t.transformers = parse_enum("tf", s)?;
    }
    if let Some(s) = get("ttr") {
        t.torchtune = parse_enum("ttr", s)?;
    }
    if let Some(s) = get("ttn") {
        t.torchtitan = parse_enum("ttn", s)?;
    }
    if let Some(s) = get("trl") {
        t.trl = parse_enum("trl", s)?;
    }
    if let Some(s) = get("opt_impl") {
        t.optimizer_impl = parse_enum("opt_impl", s)?;
    }
    if let Some(s) = get("ckpt") {
        t.checkpointing = parse_enum("ckpt", s)?;
    }
    if let Some(s) = get("attn") {
        t.attention = parse_enum("attn", s)?;
    }
    if let Some(s) = get("loss") {
        t.loss = parse_enum("loss", s)?;
    }
    if let Some(s) = get("obj") {
        t.objective = parse_enum("obj", s)?;
    }
    if let Some(s) = get("ckpt_every") {
        t.checkpoint_every = num("ckpt_every", s)?;
    }
    // Block dropout is the model's and framework's unless stated; a form
    // whose model select changed still holds the old model's.
    t.dropout = dropout_default;
    for (k, flag) in TRAINING_FLAGS {
        if k == "dropout" && switched {
            continue;
        }
        if let Some(s) = get(k) {
            *flag(t) = boolean(k, s)?;
        }
    }
    // A form whose method select changed (`ft_prev` names the method the
    // page showed) still holds the old method's base bits: the new method's
    // default stands, as `apply` drops them (QLoRA's 4 bits, LoRA's 16).
    let ft_switched = changed_select(&get, "ft").is_some();
    let bits = |k: &str| if ft_switched { None } else { get(k) };
    match get("ft") {
        None | Some("full") => {}
        Some("lora") | Some("qlora") => {
            let rank = get("rank")
                .map(|s| num("rank", s))
                .transpose()?
                .unwrap_or(16);
            let targets = get("targets")
                .map(|s| parse_targets("targets", s))
                .transpose()?
                .unwrap_or(LoraTargets::ALL_LINEAR);
            let default_bits = if get("ft") == Some("qlora") { 4 } else { 16 };
            let base_bits = bits("bits")
                .map(|s| num("bits", s))
                .transpose()?
                .unwrap_or(default_bits);
            let dropout = get("lora_dropout")
                .map(|s| boolean("lora_dropout", s))
                .transpose()?
                .unwrap_or(lora_dropout_default);
            let variant = get("lora_var")
                .map(|s| parse_enum("lora_var", s))
                .transpose()?
                .unwrap_or_default();
            t.finetune = Finetune::Lora {
                rank,
                targets,
                base_bits,
                dropout,
                variant,
            };
        }
        Some("adapter") => {
            let base_bits = bits("bits")
                .map(|s| num("bits", s))
                .transpose()?
                .unwrap_or(16);
            let method: AdapterMethod = get("adapter")
                .map(|s| parse_enum("adapter", s))
                .transpose()?
                .unwrap_or_default();
            let virtual_tokens = get("vtokens")
                .map(|s| num("vtokens", s))
                .transpose()?
                .unwrap_or(0);
            // Not given, or 0 (the planner's method switched to `adapter`, the
            // field left empty; an adapter that trains nothing is no plan):
            // the count the method's defaults give on this model where its
            // shape decides it (LLaMA-Adapter, IA³, LN tuning, prefix
            // tuning), else none yet — a frozen base — until it is entered.
            let entered = match get("trainable") {
                Some(s) => s
                    .parse::<u64>()
                    .map_err(|_| err("trainable", format!("`{s}` is not a whole number")))?,
                None => 0,
            };
            // Without JavaScript the form sends the count it showed, and,
            // when that was the method's own (`trainable_auto`, see
            // [`auto_trainable`]), the count follows a new method or model.
            let shown_auto = get("trainable_auto").and_then(|s| s.parse::<u64>().ok());
            let derived = method.default_trainable_params(model, virtual_tokens);
            let trainable_params = match entered {
                0 => derived.unwrap_or(0),
                n if Some(n) == shown_auto => derived.unwrap_or(0),
                n => n,
            };
            let targets = get("targets")
                .map(|s| parse_targets("targets", s))
                .transpose()?
                .unwrap_or(LoraTargets::QV);
            t.finetune = Finetune::Adapter {
                trainable_params,
                base_bits,
                method,
                virtual_tokens,
                targets,
            };
        }
        Some(other) => {
            return Err(err(
                "ft",
                format!("unknown fine-tuning kind `{other}` (full, lora, qlora, adapter)"),
            ))
        }
    }
    let p = &mut plan.parallel;
    for (k, slot) in [
        ("gpus", &mut p.num_gpus),
        ("per_node", &mut p.gpus_per_node),
        ("tp", &mut p.tp),
        ("pp", &mut p.pp),
        ("pp_mb", &mut p.pp_microbatches),
        ("vstages", &mut p.virtual_stages),
        ("cp", &mut p.cp),
        ("ep", &mut p.ep),
        ("hpz", &mut p.hpz_partition_size),
    ] {
        if let Some(s) = get(k) {
            *slot = num(k, s)?;
        }
    }
    if let Some(s) = get("shard") {
        p.sharding = parse_enum("shard", s)?;
    }
    if let Some(s) = get("sp") {
        p.sequence_parallel = boolean("sp", s)?;
    }
    if let Some(s) = get("pp_sched") {
        p.pp_schedule = parse_enum("pp_sched", s)?;
    }
    if let Some(s) = get("offload") {
        // Links made before plan schema 2: one value, always to the CPU.
        p.offload = match s {
            "none" => Offload::NONE,
            "optimizer" => Offload::OPTIMIZER_CPU,
            "params-optimizer" => Offload::ALL_CPU,
            _ => {
                return Err(err(
                    "offload",
                    format!("unknown value `{s}` (none, optimizer, params-optimizer)"),
                ))
            }
        };
    }
    if let Some(s) = get("off_opt") {
        p.offload.optimizer = parse_enum("off_opt", s)?;
    }
    if let Some(s) = get("off_par") {
        p.offload.params = parse_enum("off_par", s)?;
    }
    if let Some(s) = get("bucket_view") {
        p.gradient_as_bucket_view = boolean("bucket_view", s)?;
    }
    if let Some(s) = get("ds") {
        p.deepspeed = parse_enum("ds", s)?;
    }
    let r = &mut plan.runtime;
    if let Some(s) = get("ctx_mib") {
        r.cuda_context_mib = num("ctx_mib", s)? as u64;
    }
    if let Some(s) = get("other_mib") {
        r.other_processes_mib = num("other_mib", s)? as u64;
    }
    if let Some(s) = get("expandable") {
        r.expandable_segments = boolean("expandable", s)?;
    }
    // A policy that depends on what was read after the framework (LitGPT's
    // finetune scripts checkpoint on more than one device; PEFT's k-bit
    // preparation turns checkpointing on): `set_framework` above applied the
    // default plan's, so an absent `ckpt` is re-seeded from the plan as read.
    if get("ckpt").is_none() {
        plan.training.checkpointing = plan.default_checkpointing();
    }
    // Likewise the loss (TRL's ORPO, torchtune before 0.3) and the adapters'
    // dtype (TRL's over a quantized base). A form submitted without
    // JavaScript whose objective or torchtune release select changed
    // (`obj_prev`, `ttr_prev` name what the page showed) sends the loss it
    // showed: still the old default, it follows the new one (the hydrated
    // form's [`apply`] names the old setting the same way).
    let objective = changed_select(&get, "obj").and(get("obj_prev"));
    let release = changed_select(&get, "ttr").and(get("ttr_prev"));
    let reseed_loss = match get("loss") {
        Some(loss) if objective.is_some() || release.is_some() => {
            let objective = match objective {
                Some(prev) => parse_enum("obj_prev", prev)?,
                None => plan.training.objective,
            };
            let release = match release {
                Some(prev) => parse_enum("ttr_prev", prev)?,
                None => plan.training.torchtune,
            };
            enum_id(&plan.default_loss_for(objective, release)) == loss
        }
        loss => loss.is_none(),
    };
    if reseed_loss {
        plan.training.loss = plan.default_loss();
    }
    if get("ad16").is_none() {
        plan.training.adapters_16bit = plan.default_adapters_16bit();
    }
    Ok(plan)
}

/// Reads a plan from a raw query string.
pub fn decode_str(q: &str) -> Result<Plan, QueryError> {
    decode(&pairs(q))
}

/// The URL key — and so the planner's control — of a plan field a
/// [`crate::PlanError`] names by its dotted path, so the planner can mark the
/// control at fault (`None` for a field no control sets, such as a
/// product `tp × pp × cp`).
pub fn key_of_field(field: &str) -> Option<&'static str> {
    Some(match field {
        "gpu.capacity_mib" => "gpu_mib",
        "model.layers" => "layers",
        "model.encoder_layers" => "enc_layers",
        "model.hidden" => "hidden",
        "model.heads" => "heads",
        "model.kv_heads" => "kv_heads",
        "model.head_dim" => "head_dim",
        "model.ffn" => "ffn",
        "model.vocab" => "vocab",
        "model.experts" => "experts",
        "model.experts_per_token" => "top_k",
        "model.shared_experts" => "shared",
        "model.dense_layers" => "dense",
        "model.dense_ffn" => "dense_ffn",
        "model.norms_per_layer" => "norms",
        "model.vision_params" => "vision",
        "model.mla.q_rank" => "q_rank",
        "model.mla.kv_rank" => "kv_rank",
        "model.mla.rope_dim" => "rope_dim",
        "model.mla.v_dim" => "v_dim",
        "parallel.num_gpus" => "gpus",
        "parallel.gpus_per_node" => "per_node",
        "parallel.tp" => "tp",
        "parallel.pp" => "pp",
        "parallel.cp" => "cp",
        "parallel.ep" => "ep",
        "parallel.virtual_stages" => "vstages",
        "parallel.hpz_partition_size" => "hpz",
        "parallel.offload.params" => "off_par",
        "training.micro_batch" => "mb",
        "training.seq_len" => "seq",
        "training.target_len" => "tgt",
        "training.grad_accum" => "ga",
        "training.precision" => "prec",
        "training.frozen_layers" => "frozen",
        "training.checkpoint_every" => "ckpt_every",
        "training.galore_rank" => "galore_rank",
        "training.finetune.rank" => "rank",
        "training.finetune.base_bits" => "bits",
        "training.finetune.virtual_tokens" => "vtokens",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::estimate;
    use crate::plan::{Precision, Sharding};

    #[test]
    fn default_plan_encodes_to_empty_query() {
        assert_eq!(encode(&Plan::default()), "");
        assert_eq!(decode_str("").unwrap(), Plan::default());
    }

    #[test]
    fn round_trips_a_changed_plan() {
        let mut p = Plan {
            model: presets::preset("qwen2.5-7b").unwrap().spec(),
            ..Plan::default()
        };
        p.training.micro_batch = 3;
        p.training.seq_len = 8192;
        p.training.precision = Precision::Bf16;
        p.training.finetune = Finetune::Lora {
            rank: 8,
            targets: LoraTargets::QV,
            base_bits: 4,
            dropout: false,
            variant: LoraVariant::Dora,
        };
        p.parallel.sharding = Sharding::FsdpFull;
        p.parallel.num_gpus = 4;
        p.training.transformers = crate::plan::TransformersRelease::V4_46To4_48;
        p.training.torchtune = crate::plan::TorchtuneRelease::V0_2;
        p.training.torchtitan = crate::plan::TorchtitanRelease::V0_2_1OrOlder;
        p.training.trl = crate::plan::TrlRelease::V0_19To0_28;
        let q = encode(&p);
        assert!(q.contains("trl=0.19-0.28"), "{q}");
        assert_eq!(decode_str("trl=0.24").unwrap_err().param, "trl");
        for (id, release) in [
            ("0.12-0.14", crate::plan::TrlRelease::V0_12To0_14),
            ("0.9-0.11", crate::plan::TrlRelease::V0_9To0_11),
            ("0.5-0.8", crate::plan::TrlRelease::V0_5To0_8),
        ] {
            assert_eq!(
                decode_str(&format!("trl={id}")).unwrap().training.trl,
                release
            );
        }
        assert!(q.contains("ttn=0.2.1-older"), "{q}");
        assert_eq!(decode_str("ttn=0.2").unwrap_err().param, "ttn");
        assert_eq!(
            decode_str("ttn=0.2.2").unwrap().training.torchtitan,
            crate::plan::TorchtitanRelease::V0_2_2
        );
        assert!(q.contains("lora_var=dora"), "{q}");
        assert!(q.contains("tf=4.46-4.48"), "{q}");
        assert!(q.contains("ttr=0.2"), "{q}");
        assert_eq!(decode_str("tf=4.45").unwrap_err().param, "tf");
        assert_eq!(decode_str("ttr=0.4").unwrap_err().param, "ttr");
        assert_eq!(decode_str(&q).unwrap(), p, "query: {q}");
        // A classification head keeps the preset's id and survives a new preset.
        p.model.head = ModelHead::Classifier;
        let q = encode(&p);
        assert!(
            q.contains("model=qwen2.5-7b") && q.contains("head=classifier"),
            "{q}"
        );
        assert_eq!(decode_str(&q).unwrap(), p, "query: {q}");
        let other = apply(&p, "model", "llama-3.1-8b").unwrap();
        assert_eq!(other.model.head, ModelHead::Classifier);
        assert_eq!(decode_str("head=score").unwrap_err().param, "head");
        assert_eq!(
            decode_str("ft=lora&lora_var=qlora").unwrap_err().param,
            "lora_var"
        );
    }

    #[test]
    fn a_form_that_switched_frameworks_takes_the_new_frameworks_defaults() {
        // What the no-JavaScript form sends after the framework select moved
        // from the Trainer to Unsloth: every field, the seeded ones still the
        // Trainer's (offload and fused kernels off, the standard loss).
        let trainer = decode_str("gpus=1&shard=none&ft=lora&targets=q%2Bv").unwrap();
        let form = |fw: &str, prev: &str| {
            let mut f: Vec<(&str, String)> = all_pairs(&trainer)
                .into_iter()
                .filter(|(k, _)| *k != "fw")
                .collect();
            f.push(("fw", fw.into()));
            f.push(("fw_prev", prev.into()));
            decode(&f).unwrap()
        };
        let switched = form("unsloth", "hf-trainer");
        assert_eq!(switched, apply(&trainer, "fw", "unsloth").unwrap());
        assert!(switched.training.activation_offload && switched.training.fused_kernels);
        // The same framework submitted again keeps what the form holds.
        let mut kept = form("unsloth", "unsloth");
        assert!(!kept.training.activation_offload);
        kept.set_framework(Framework::Unsloth);
        assert_eq!(kept.training, switched.training);
        // Other fields still come from the form.
        assert_eq!(switched.parallel.num_gpus, 1);
        assert!(matches!(switched.training.finetune, Finetune::Lora { .. }));
    }

    #[test]
    fn a_form_that_switched_presets_drops_the_old_models_dimensions() {
        // What the no-JavaScript form sends after the model select moved from
        // T5-large to Llama-3.2-1B: every field, the dimensions still T5's.
        let t5 = Plan {
            model: presets::preset("t5-large").unwrap().spec(),
            ..Plan::default()
        };
        let mut form: Vec<(&str, String)> = all_pairs(&t5)
            .into_iter()
            .filter(|(k, _)| *k != "model")
            .collect();
        form.push(("model", "llama-3.2-1b".into()));
        form.push(("model_prev", "t5-large".into()));
        let p = decode(&form).unwrap();
        assert_eq!(p.model, presets::preset("llama-3.2-1b").unwrap().spec());
        // Unchanged select: edited dimensions make the model custom as before.
        let mut same: Vec<(&str, String)> = form
            .iter()
            .map(|(k, v)| {
                (
                    *k,
                    if *k == "model" {
                        "t5-large".into()
                    } else {
                        v.clone()
                    },
                )
            })
            .collect();
        same.retain(|(k, _)| *k != "layers");
        same.push(("layers", "12".into()));
        assert_eq!(decode(&same).unwrap().model.layers, 12);
    }

    #[test]
    fn frozen_layers_travel_with_a_full_fine_tune_only() {
        let p = apply(&Plan::default(), "frozen", "8").unwrap();
        assert_eq!(p.training.frozen_layers, 8);
        let q = encode(&p);
        assert!(q.contains("frozen=8"), "{q}");
        assert_eq!(decode_str(&q).unwrap(), p, "query: {q}");
        assert_eq!(apply(&p, "ft", "lora").unwrap().training.frozen_layers, 0);
        assert_eq!(decode_str("frozen=-1").unwrap_err().param, "frozen");
    }

    #[test]
    fn a_preference_objective_travels_with_the_plan() {
        assert!(!encode(&Plan::default()).contains("obj="));
        let p = apply(&Plan::default(), "obj", "dpo").unwrap();
        assert_eq!(p.training.objective, crate::plan::Objective::Dpo);
        let q = encode(&p);
        assert!(q.contains("obj=dpo"), "{q}");
        assert_eq!(decode_str(&q).unwrap(), p, "query: {q}");
        assert_eq!(decode_str("obj=ppo").unwrap_err().param, "obj");
    }

    /// Under TRL the objective's default loss follows it (ORPO's trainer
    /// takes the logits, SFT's its fused head); a loss chosen stays.
    #[test]
    fn the_objectives_default_loss_follows_it() {
        use crate::plan::Loss;
        let trl = apply(&Plan::default(), "fw", "trl").unwrap();
        assert_eq!(trl.training.loss, Loss::TiledLogprob);
        let orpo = apply(&trl, "obj", "orpo").unwrap();
        assert_eq!(orpo.training.loss, Loss::Standard);
        assert!(!encode(&orpo).contains("loss="), "{}", encode(&orpo));
        assert_eq!(decode_str(&encode(&orpo)).unwrap(), orpo);
        let back = apply(&orpo, "obj", "sft").unwrap();
        assert_eq!(back.training.loss, Loss::TiledLogprob);
        // TRL's profile runs its log-probabilities' kernel; another
        // framework's does not, and switching re-seeds it.
        assert!(orpo.training.logprob_kernel);
        assert!(!encode(&orpo).contains("lpk"), "{}", encode(&orpo));
        let off = apply(&orpo, "lpk", "0").unwrap();
        assert!(!off.training.logprob_kernel);
        assert!(encode(&off).contains("lpk=0"), "{}", encode(&off));
        assert_eq!(decode_str(&encode(&off)).unwrap(), off);
        let axolotl = apply(&off, "fw", "axolotl").unwrap();
        assert!(!axolotl.training.logprob_kernel);
        assert!(
            apply(&axolotl, "fw", "trl")
                .unwrap()
                .training
                .logprob_kernel
        );
        // Without JavaScript the form sends the loss it showed and the
        // objective it showed (`obj_prev`): the seeded loss follows.
        let form = "fw=trl&obj=orpo&obj_prev=sft&loss=tiled-logprob";
        assert_eq!(decode_str(form).unwrap().training.loss, Loss::Standard);
        let form = "fw=trl&obj=orpo&obj_prev=sft&loss=chunked-free";
        assert_eq!(decode_str(form).unwrap().training.loss, Loss::ChunkedFree);
        let form = "fw=trl&obj=orpo&obj_prev=orpo&loss=tiled-logprob";
        assert_eq!(decode_str(form).unwrap().training.loss, Loss::TiledLogprob);
        // A loss the user chose is kept through a change of objective.
        let chosen = apply(&trl, "loss", "chunked-free").unwrap();
        let chosen = apply(&chosen, "obj", "orpo").unwrap();
        assert_eq!(chosen.training.loss, Loss::ChunkedFree);
    }

    /// torchtune's 0.1–0.2 recipes had only the standard loss: choosing
    /// such a release re-seeds a loss still at the profile's chunked default,
    /// hydrated (`apply`) and without JavaScript (`ttr_prev`), and back; a
    /// loss the user chose stays.
    #[test]
    fn a_torchtune_release_before_0_3_seeds_the_standard_loss() {
        use crate::plan::Loss;
        let tt = decode_str("fw=torchtune").unwrap();
        assert_eq!(tt.training.loss, Loss::ChunkedFree);
        let old = apply(&tt, "ttr", "0.2").unwrap();
        assert_eq!(old.training.loss, Loss::Standard);
        assert!(!encode(&old).contains("loss="), "{}", encode(&old));
        assert_eq!(decode_str(&encode(&old)).unwrap(), old);
        assert_eq!(
            decode_str("fw=torchtune&ttr=0.1").unwrap().training.loss,
            Loss::Standard
        );
        let back = apply(&old, "ttr", "current").unwrap();
        assert_eq!(back.training.loss, Loss::ChunkedFree);
        let form = "fw=torchtune&ttr=0.2&ttr_prev=current&loss=chunked-free";
        assert_eq!(decode_str(form).unwrap().training.loss, Loss::Standard);
        let form = "fw=torchtune&ttr=0.2&ttr_prev=0.2&loss=chunked-free";
        assert_eq!(decode_str(form).unwrap().training.loss, Loss::ChunkedFree);
        let form = "fw=torchtune&ttr=0.2&ttr_prev=current&loss=fused";
        assert_eq!(decode_str(form).unwrap().training.loss, Loss::Fused);
        assert_eq!(
            decode_str("fw=torchtune&ttr=0.2&ttr_prev=x&loss=chunked-free")
                .unwrap_err()
                .param,
            "ttr_prev"
        );
        let chosen = apply(&apply(&tt, "loss", "fused").unwrap(), "ttr", "0.2").unwrap();
        assert_eq!(chosen.training.loss, Loss::Fused);
        // Another framework's loss does not follow the release.
        let trainer = apply(&decode_str("fw=hf-trainer").unwrap(), "ttr", "0.2").unwrap();
        assert_eq!(trainer.training.loss, Loss::Standard);
        let trl = apply(&decode_str("fw=trl").unwrap(), "ttr", "0.2").unwrap();
        assert_eq!(trl.training.loss, Loss::TiledLogprob);
    }

    #[test]
    fn precomputed_reference_log_probs_travel_with_the_plan() {
        assert!(!encode(&Plan::default()).contains("pre_ref"));
        let p = apply(&Plan::default(), "obj", "dpo").unwrap();
        let p = apply(&p, "pre_ref", "1").unwrap();
        assert!(p.training.precompute_ref);
        let q = encode(&p);
        assert!(q.contains("pre_ref=1"), "{q}");
        assert_eq!(decode_str(&q).unwrap(), p, "query: {q}");
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["training"]["precompute_ref"], serde_json::json!(true));
    }

    #[test]
    fn a_galore_rank_travels_with_the_plan() {
        let p = apply(&Plan::default(), "opt", "galore8bit").unwrap();
        assert_eq!(p.training.optimizer, crate::plan::Optimizer::Galore8bit);
        let p = apply(&p, "galore_rank", "512").unwrap();
        let q = encode(&p);
        assert!(
            q.contains("opt=galore8bit") && q.contains("galore_rank=512"),
            "{q}"
        );
        assert_eq!(decode_str(&q).unwrap(), p, "query: {q}");
        assert_eq!(
            apply(&p, "galore_rank", "").unwrap().training.galore_rank,
            None
        );
        assert_eq!(
            decode_str("galore_rank=x").unwrap_err().param,
            "galore_rank"
        );
    }

    #[test]
    fn lora_targets_read_the_module_names_models_use() {
        let t = |s: &str| parse_targets("targets", s).unwrap();
        let qkvo = LoraTargets {
            q: true,
            k: true,
            v: true,
            o: true,
            ..LoraTargets::default()
        };
        assert_eq!(t("q_proj+k_proj+v_proj+o_proj"), qkvo);
        assert_eq!(t("wq,wk,wv,wo"), qkvo);
        assert_eq!(t("attention"), qkvo);
        assert_eq!(t("query_key_value+out_proj"), t("q+k+v+o"));
        // GPT-NeoX's / Falcon's attention output, Baichuan's fused q/k/v.
        assert_eq!(t("query_key_value+dense"), t("q+k+v+o"));
        assert_eq!(t("W_pack"), t("q+k+v"));
        assert_eq!(t("c_attn"), t("Q+K+V"));
        assert_eq!(t("query value"), LoraTargets::QV);
        assert_eq!(t("w1+w3+w2"), t("gate+up+down"));
        assert_eq!(t("gate_up_proj+down_proj"), t("mlp"));
        assert_eq!(t("fc1|fc2"), t("up+down"));
        assert_eq!(t("all_linear"), LoraTargets::ALL_LINEAR);
        let e = parse_targets("targets", "q+embed_tokens").unwrap_err();
        assert!(e.reason.contains("`embed_tokens`"), "{e}");
    }

    #[test]
    fn an_encoder_decoder_target_length_travels_and_leaves_with_its_model() {
        let mut p = Plan {
            model: presets::preset("t5-large").unwrap().spec(),
            ..Plan::default()
        };
        p.training.seq_len = 512;
        assert!(!encode(&p).contains("tgt="));
        let p = apply(&p, "tgt", "128").unwrap();
        assert_eq!(p.training.target_len, Some(128));
        let q = encode(&p);
        assert!(q.contains("tgt=128"), "{q}");
        assert_eq!(decode_str(&q).unwrap(), p, "query: {q}");
        // A cleared field is no target; a decoder-only model drops it.
        assert_eq!(apply(&p, "tgt", "").unwrap().training.target_len, None);
        assert_eq!(
            apply(&p, "model", "t5-base").unwrap().training.target_len,
            Some(128)
        );
        assert_eq!(
            apply(&p, "model", "llama-3.1-8b")
                .unwrap()
                .training
                .target_len,
            None
        );
        assert_eq!(decode_str("model=t5-base&tgt=x").unwrap_err().param, "tgt");
        // The form submits every field: beside a decoder-only model the
        // target is ignored.
        assert_eq!(decode_str("tgt=16").unwrap(), Plan::default());
    }

    #[test]
    fn every_framework_round_trips_each_switch_against_its_own_defaults() {
        // A value equal to the default plan's but not to the framework's
        // (PEFT's k-bit preparation, torchtitan's sequence parallelism, a plain
        // loop's upcasts) must still travel.
        for f in Framework::ALL {
            let mut base = Plan::default();
            base.set_framework(f);
            base.parallel.tp = 2;
            base.training.finetune = Finetune::Lora {
                rank: 8,
                targets: LoraTargets::QV,
                base_bits: 4,
                dropout: true,
                variant: LoraVariant::Lora,
            };
            for (k, flag) in TRAINING_FLAGS {
                let mut p = base.clone();
                let v = flag(&mut p.training);
                *v = !*v;
                let q = encode(&p);
                assert_eq!(decode_str(&q).unwrap(), p, "{} {k}: {q}", f.id());
            }
            let mut p = base.clone();
            p.parallel.sequence_parallel = !p.parallel.sequence_parallel;
            let q = encode(&p);
            assert_eq!(decode_str(&q).unwrap(), p, "{} sp: {q}", f.id());
        }
    }

    #[test]
    fn a_new_framework_reseeds_the_lora_dropout() {
        let p = decode_str("fw=hf-trainer&ft=lora").unwrap();
        let p = apply(&p, "fw", "torchtune").unwrap();
        match p.training.finetune {
            Finetune::Lora { dropout, .. } => assert!(!dropout),
            _ => panic!("expected lora"),
        }
    }

    #[test]
    fn round_trips_a_custom_model() {
        let mut p = Plan::default();
        p.model.name = "custom".into();
        p.model.layers = 7;
        p.model.hidden = 1000;
        p.model.fused_projections = true;
        p.model.gelu_new = true;
        let q = encode(&p);
        let back = decode_str(&q).unwrap();
        assert_eq!(back.model.layers, 7);
        assert_eq!(back.model.hidden, 1000);
        assert!(back.model.fused_projections && back.model.gelu_new);
        // GLM's gate/up alone.
        p.model.fused_projections = false;
        p.model.fused_gate_up = true;
        let back = decode_str(&encode(&p)).unwrap();
        assert!(back.model.fused_gate_up && !back.model.fused_projections);
        p.model.attention_sinks = true;
        p.model.dense_experts = true;
        p.model.clamped_glu = true;
        let back = decode_str(&encode(&p)).unwrap();
        assert!(back.model.attention_sinks && back.model.dense_experts && back.model.clamped_glu);
        assert_eq!(back.model.params(), p.model.params());
        // A vision encoder, larger than 32 bits hold (InternViT-6B's 5.9e9).
        p.model.vision_params = 5_903_040_512;
        let q = encode(&p);
        assert!(q.contains("vision=5903040512"), "{q}");
        assert_eq!(decode_str(&q).unwrap(), p);
        // A preset's dimensions with a vision encoder are a model of their own.
        let mut vl = Plan::default();
        vl.model.vision_params = 676_550_144;
        assert_eq!(decode_str(&encode(&vl)).unwrap(), vl);
        let bad = decode_str(&format!("{}&vision=lots", encode(&vl))).unwrap_err();
        assert!(bad.to_string().contains("vision"), "{bad}");
        // The planner's select: a vision-language preset brings its encoder
        // and reads back as itself; another preset after it drops the encoder.
        let qwen_vl = apply(&Plan::default(), "model", "qwen2.5-vl-7b").unwrap();
        assert_eq!(
            qwen_vl.model,
            presets::preset("qwen2.5-vl-7b").unwrap().spec()
        );
        assert!(qwen_vl.model.vision_params > 0);
        assert_eq!(
            value_of(&qwen_vl, "model").as_deref(),
            Some("qwen2.5-vl-7b")
        );
        let text = apply(&qwen_vl, "model", "llama-3.1-8b").unwrap();
        assert_eq!(text.model.vision_params, 0);
        assert_eq!(value_of(&text, "model").as_deref(), Some("llama-3.1-8b"));
    }

    /// Without JavaScript a changed method select arrives beside the old
    /// method's base bits; `ft_prev` says it changed, so the new method's
    /// own stand, as `apply` gives them in the browser.
    #[test]
    fn a_method_chosen_without_javascript_brings_its_own_base_bits() {
        let lora = decode_str("ft=lora&bits=16").unwrap();
        let form = "ft=qlora&ft_prev=lora&bits=16&rank=16&targets=all-linear";
        let qlora = decode_str(form).unwrap();
        assert_eq!(qlora.training.finetune.base_bits(), Some(4));
        assert_eq!(qlora, apply(&lora, "ft", "qlora").unwrap());
        // Unchanged, the bits shown are the user's.
        let kept = decode_str("ft=lora&ft_prev=lora&bits=8").unwrap();
        assert_eq!(kept.training.finetune.base_bits(), Some(8));
        // From a 4-bit LoRA to another PEFT method: its 16-bit default.
        let other = decode_str("ft=adapter&ft_prev=lora&bits=4").unwrap();
        assert_eq!(other.training.finetune.base_bits(), Some(16));
    }

    #[test]
    fn zero_plus_plus_hpz_travels_and_is_checked() {
        let p = decode_str("shard=zero3&gpus=16&hpz=8").unwrap();
        assert_eq!(p.parallel.hpz_partition_size, 8);
        assert!(encode(&p).contains("hpz=8"), "{}", encode(&p));
        assert_eq!(decode_str(&encode(&p)).unwrap(), p);
        // Off (1) is the default and is not written.
        assert!(!encode(&Plan::default()).contains("hpz"));
        // The estimate refuses what ZeRO++ cannot run, and its error names
        // the URL key the planner marks.
        for q in [
            "shard=zero2&gpus=16&hpz=8",
            "shard=zero3&gpus=16&hpz=0",
            "shard=zero3&gpus=12&hpz=8",
        ] {
            let e = crate::estimate::estimate(&decode_str(q).unwrap()).unwrap_err();
            assert_eq!(key_of_field(e.field()), Some("hpz"), "{q}: {e}");
        }
    }

    #[test]
    fn round_trips_a_custom_moe_with_shared_experts_and_dense_blocks() {
        // DeepSeek-MoE-16B's shape with one layer more: no preset matches, so
        // every dimension travels, the shared experts and dense blocks too.
        let mut p = Plan {
            model: crate::presets::preset("deepseek-moe-16b").unwrap().spec(),
            ..Plan::default()
        };
        p.model.name = "custom".into();
        p.model.layers += 1;
        let q = encode(&p);
        for key in ["shared=2", "dense=1", "dense_ffn=10944"] {
            assert!(q.contains(key), "{key} missing from {q}");
        }
        let back = decode_str(&q).unwrap();
        assert_eq!(back.model, p.model);
        assert_eq!(estimate(&back).unwrap(), estimate(&p).unwrap());
        // Latent attention's widths too (DeepSeek-V2-Lite, one layer more).
        let mut lite = Plan {
            model: crate::presets::preset("deepseek-v2-lite").unwrap().spec(),
            ..Plan::default()
        };
        lite.model.name = "custom".into();
        lite.model.layers += 1;
        let q = encode(&lite);
        for key in [
            "q_rank=0",
            "kv_rank=512",
            "rope_dim=64",
            "v_dim=128",
            "head_dim=192",
        ] {
            assert!(q.contains(key), "{key} missing from {q}");
        }
        assert_eq!(decode_str(&q).unwrap().model, lite.model);
        // kv_rank 0 turns it off.
        let off = decode_str(&q.replace("kv_rank=512", "kv_rank=0")).unwrap();
        assert_eq!(off.model.mla, None);
        // The preset itself travels by its id.
        let d = Plan {
            model: crate::presets::preset("deepseek-moe-16b").unwrap().spec(),
            ..Plan::default()
        };
        assert_eq!(encode(&d), "model=deepseek-moe-16b");
        assert_eq!(decode_str(&encode(&d)).unwrap().model, d.model);
    }

    #[test]
    fn bad_values_name_the_parameter() {
        let e = decode_str("mb=abc").unwrap_err();
        assert_eq!(e.param, "mb");
        let e = decode_str("gpu=nope").unwrap_err();
        assert_eq!(e.param, "gpu");
        assert!(e.to_string().contains("nope"));
        let e = decode_str("prec=fp64").unwrap_err();
        assert_eq!(e.param, "prec");
        let e = decode_str("ft=lora&targets=q+zz").unwrap_err();
        assert_eq!(e.param, "targets");
    }

    #[test]
    fn unknown_keys_are_ignored_and_escapes_decoded() {
        let p = decode_str("?lang=zh&utm_source=x&targets=q%2Bv&ft=lora").unwrap();
        match p.training.finetune {
            Finetune::Lora { targets, .. } => assert_eq!(targets, LoraTargets::QV),
            _ => panic!("expected lora"),
        }
    }
}
#[cfg(test)]
mod empty_values {
    use super::*;
    #[test]
    fn empty_values_keep_defaults() {
        let p = decode_str("gpus=&mb=3").unwrap();
        assert_eq!(p.training.micro_batch, 3);
        assert_eq!(p.parallel.num_gpus, Plan::default().parallel.num_gpus);
    }
}

#[cfg(test)]
mod apply_tests {
    use super::*;

    #[test]
    fn every_field_validation_names_has_a_control() {
        // The dotted fields validate.rs can name, read from its source.
        let src = include_str!("validate.rs");
        let mut fields: Vec<&str> = src
            .split('"')
            .skip(1)
            .step_by(2)
            .filter(|s| {
                s.split('.').count() >= 2
                    && ["model.", "gpu.", "parallel.", "training."]
                        .iter()
                        .any(|p| s.starts_with(p))
                    && s.chars()
                        .all(|c| c.is_ascii_lowercase() || c == '_' || c == '.')
            })
            .collect();
        fields.sort_unstable();
        fields.dedup();
        assert!(fields.len() > 30, "{fields:?}");
        // A QLoRA plan of a latent-attention MoE, and an adapter's, show
        // every control.
        let bases = [
            decode_str("ft=qlora&bits=4&rank=8&model=custom&experts=8&top_k=2&kv_rank=512")
                .unwrap(),
            decode_str("ft=adapter").unwrap(),
        ];
        for f in fields {
            let key = key_of_field(f).unwrap_or_else(|| panic!("{f} has no control"));
            // The key is one the planner reads: a value that is no number
            // or choice is refused under that very name.
            let refused = bases
                .iter()
                .any(|b| apply(b, key, "x?").is_err_and(|e| e.param == key));
            assert!(refused, "{f}: {key}");
        }
        assert_eq!(key_of_field("tp × pp × cp"), None);
    }

    #[test]
    fn apply_changes_one_setting_and_keeps_the_rest() {
        let p = decode_str("mb=4&gpu=a100-sxm4-80gb").unwrap();
        let q = apply(&p, "seq", "1024").unwrap();
        assert_eq!(q.training.seq_len, 1024);
        assert_eq!(q.training.micro_batch, 4);
        assert_eq!(q.gpu.id, "a100-sxm4-80gb");
        assert_eq!(value_of(&q, "seq").as_deref(), Some("1024"));
        assert_eq!(value_of(&Plan::default(), "ft").as_deref(), Some("full"));
        assert_eq!(apply(&p, "tp", "x").unwrap_err().param, "tp");
    }

    #[test]
    fn apply_framework_reseeds_its_defaults() {
        let p = Plan::default();
        let q = apply(&p, "fw", "torchtune").unwrap();
        assert_eq!(q.training.loss, crate::plan::Loss::ChunkedFree);
        let r = apply(&q, "model", "gpt2").unwrap();
        assert_eq!(r.model.layers, 12);
        assert_eq!(r.training.loss, crate::plan::Loss::ChunkedFree);
    }

    /// Block dropout is seeded by the model's checkpoint and the framework's
    /// model code, travels only when it differs from that, and is re-seeded
    /// by a new preset or framework, hydrated or through the plain form.
    #[test]
    fn block_dropout_follows_the_model_and_the_framework() {
        let dropout = |q: &str| decode_str(q).unwrap().training.dropout;
        assert!(dropout("model=gpt2"));
        assert!(dropout("model=bert-base"));
        assert!(!dropout("model=llama-3.1-8b"));
        assert!(!dropout(""));
        // LitGPT's and torchtune's own model code has no dropout layers.
        assert!(!dropout("fw=litgpt&model=gpt2"));
        assert!(!dropout("fw=torchtune&model=gpt2"));
        assert!(!dropout("model=gpt2&dropout=0"));
        assert!(dropout("model=llama-3.1-8b&dropout=1"));
        // A custom model drops out by its positions' era.
        assert!(dropout("model=gpt2&layers=24"));
        for q in ["model=gpt2", "model=llama-3.1-8b", "fw=litgpt&model=gpt2"] {
            let p = decode_str(q).unwrap();
            assert!(!encode(&p).contains("dropout"), "{q}: {}", encode(&p));
            let mut flipped = p.clone();
            flipped.training.dropout = !p.training.dropout;
            assert_eq!(decode_str(&encode(&flipped)).unwrap(), flipped, "{q}");
        }

        let llama = decode_str("model=llama-3.1-8b&dropout=1").unwrap();
        let gpt2 = apply(&llama, "model", "gpt2").unwrap();
        assert!(gpt2.training.dropout);
        let gpt2_off = apply(&gpt2, "dropout", "0").unwrap();
        assert!(!gpt2_off.training.dropout);
        // Another dimension keeps the stated switch; another preset re-seeds.
        assert!(!apply(&gpt2_off, "layers", "24").unwrap().training.dropout);
        assert!(
            apply(&gpt2_off, "model", "bert-base")
                .unwrap()
                .training
                .dropout
        );
        assert!(
            !apply(&gpt2, "model", "mistral-7b")
                .unwrap()
                .training
                .dropout
        );
        let lit = apply(&gpt2_off, "fw", "litgpt").unwrap();
        assert!(!lit.training.dropout);
        assert!(apply(&lit, "fw", "hf-trainer").unwrap().training.dropout);

        // The plain form sends the checkbox the page showed.
        let form = |model: &str, prev: &str, fw: &str, fw_prev: &str, d: &str| {
            let q = format!(
                "model={model}&model_prev={prev}&fw={fw}&fw_prev={fw_prev}&dropout=0&dropout={d}"
            );
            dropout(&q)
        };
        assert!(!form("gpt2", "gpt2", "hf-trainer", "hf-trainer", "0"));
        assert!(form(
            "gpt2",
            "llama-3.1-8b",
            "hf-trainer",
            "hf-trainer",
            "0"
        ));
        assert!(!form(
            "llama-3.1-8b",
            "gpt2",
            "hf-trainer",
            "hf-trainer",
            "1"
        ));
        assert!(form("gpt2", "gpt2", "hf-trainer", "litgpt", "0"));
        assert!(form(
            "llama-3.1-8b",
            "llama-3.1-8b",
            "hf-trainer",
            "hf-trainer",
            "1"
        ));
    }

    /// Unsloth's profile turns on offloaded checkpointing, fused kernels and
    /// the fused loss: a URL naming it needs none of them, one that turns
    /// them off keeps that, and a change of framework re-seeds them.
    #[test]
    fn a_framework_that_offloads_and_fuses_by_default_round_trips() {
        use crate::plan::Loss;
        let p = decode_str("fw=unsloth&gpus=1&shard=none").unwrap();
        assert!(p.training.activation_offload && p.training.fused_kernels);
        assert_eq!(p.training.loss, Loss::Fused);
        let q = encode(&p);
        assert!(!q.contains("act_off") && !q.contains("fkern"), "{q}");
        assert_eq!(decode_str(&q).unwrap(), p);
        let off = decode_str("fw=unsloth&gpus=1&shard=none&act_off=0").unwrap();
        assert!(!off.training.activation_offload);
        assert!(encode(&off).contains("act_off=0"));
        assert_eq!(decode_str(&encode(&off)).unwrap(), off);
        let trainer = apply(&p, "fw", "hf-trainer").unwrap();
        assert!(!trainer.training.activation_offload && !trainer.training.fused_kernels);
        assert_eq!(trainer.training.loss, Loss::Standard);
        let back = apply(&trainer, "fw", "unsloth").unwrap();
        assert_eq!(back, p);
        // LLaMA-Factory, ms-swift and axolotl checkpoint by default, and all
        // four double-quantize a 4-bit base: shown checked, and off travels.
        for fw in ["llama-factory", "ms-swift", "axolotl"] {
            let t = decode_str(&format!("fw={fw}")).unwrap().training;
            assert_eq!(t.checkpointing, crate::plan::Checkpointing::Full, "{fw}");
            assert!(!t.activation_offload, "{fw}");
        }
        for fw in ["llama-factory", "ms-swift", "axolotl", "unsloth"] {
            let q = format!("fw={fw}&ft=qlora");
            let p = decode_str(&q).unwrap();
            assert!(p.training.nf4_double_quant, "{fw}");
            assert!(!encode(&p).contains("dq="), "{fw}");
            let off = decode_str(&format!("{q}&dq=0")).unwrap();
            assert!(!off.training.nf4_double_quant && encode(&off).contains("dq=0"));
        }
        assert!(
            !decode_str("fw=hf-trainer&ft=qlora")
                .unwrap()
                .training
                .nf4_double_quant
        );
    }

    /// LitGPT's finetune scripts checkpoint every block on more than one
    /// device only: the default follows the GPU count the URL states, and a
    /// policy that differs from it is kept in the URL.
    #[test]
    fn litgpt_checkpoints_by_default_on_more_than_one_gpu() {
        use crate::plan::Checkpointing;
        let ckpt = |q: &str| decode_str(q).unwrap().training.checkpointing;
        // The default plan has 8 GPUs.
        assert_eq!(ckpt("fw=litgpt"), Checkpointing::Full);
        assert_eq!(ckpt("fw=litgpt&gpus=2"), Checkpointing::Full);
        assert_eq!(ckpt("fw=litgpt&gpus=1"), Checkpointing::None);
        assert_eq!(ckpt("fw=litgpt&gpus=1&ckpt=full"), Checkpointing::Full);
        assert_eq!(ckpt("fw=litgpt&gpus=4&ckpt=none"), Checkpointing::None);
        // Other frameworks do not look at the count.
        assert_eq!(ckpt("fw=hf-trainer&gpus=1"), Checkpointing::None);
        assert_eq!(ckpt("fw=torchtune&gpus=1"), Checkpointing::Full);
        // TRL's configs checkpoint by default (from TRL 0.22).
        assert_eq!(ckpt("fw=trl&gpus=1"), Checkpointing::Full);
        for gpus in [1, 2, 8] {
            for c in [
                Checkpointing::None,
                Checkpointing::Full,
                Checkpointing::OpSelective,
            ] {
                let mut p = Plan::default();
                p.parallel.num_gpus = gpus;
                p.set_framework(Framework::Litgpt);
                p.training.checkpointing = c;
                let q = encode(&p);
                assert_eq!(decode_str(&q).unwrap(), p, "{q}");
                // Only a policy other than the default is written.
                let default = if gpus > 1 {
                    Checkpointing::Full
                } else {
                    Checkpointing::None
                };
                assert_eq!(q.contains("ckpt="), c != default, "{q}");
            }
        }
        // Choosing LitGPT in the form applies the default for the plan's count;
        // changing the count afterwards keeps the policy shown (the form, with
        // or without JavaScript, sends every setting), which the URL then
        // states when it is not the new count's default.
        let one = apply(&decode_str("gpus=1").unwrap(), "fw", "litgpt").unwrap();
        assert_eq!(one.training.checkpointing, Checkpointing::None);
        let eight = apply(&one, "gpus", "8").unwrap();
        assert_eq!(eight.training.checkpointing, Checkpointing::None);
        assert!(encode(&eight).contains("ckpt=none"));
        let again = apply(&eight, "fw", "litgpt").unwrap();
        assert_eq!(again.training.checkpointing, Checkpointing::Full);
    }

    /// PEFT's `prepare_model_for_kbit_training` turns checkpointing on for a
    /// quantized base (its `use_gradient_checkpointing=True` default): under
    /// PEFT a 4- or 8-bit base is checkpointed unless the user says otherwise.
    #[test]
    fn peft_kbit_preparation_checkpoints_by_default() {
        use crate::plan::Checkpointing;
        let ckpt = |q: &str| decode_str(q).unwrap().training.checkpointing;
        assert_eq!(ckpt("fw=peft&ft=qlora&bits=4"), Checkpointing::Full);
        assert_eq!(
            ckpt("fw=peft&ft=qlora&bits=4&kbit32=0"),
            Checkpointing::None
        );
        assert_eq!(ckpt("fw=peft&ft=lora&bits=16"), Checkpointing::None);
        assert_eq!(
            ckpt("fw=peft&ft=qlora&bits=4&ckpt=none"),
            Checkpointing::None
        );
        // The Trainer does not prepare the base (no k-bit preparation).
        assert_eq!(ckpt("fw=hf-trainer&ft=qlora&bits=4"), Checkpointing::None);
        // In the form the policy shown stays; the URL says so where it is not
        // the default.
        let peft = decode_str("fw=peft&ft=lora&bits=16").unwrap();
        let q = apply(&peft, "ft", "qlora").unwrap();
        assert_eq!(q.training.checkpointing, Checkpointing::None);
        assert_eq!(decode_str(&encode(&q)).unwrap(), q);
        assert!(encode(&q).contains("ckpt=none"), "{}", encode(&q));
    }

    /// TRL keeps a quantized base's adapters in bf16 (0.26 on): under TRL a
    /// 4- or 8-bit base has 16-bit adapters unless the URL says otherwise,
    /// and a change of framework re-seeds them.
    #[test]
    fn trl_keeps_a_quantized_bases_adapters_in_16_bits_by_default() {
        let ad16 = |q: &str| decode_str(q).unwrap().training.adapters_16bit;
        assert!(ad16("fw=trl&ft=qlora&bits=4"));
        assert!(ad16("fw=trl&ft=qlora&bits=8"));
        assert!(!ad16("fw=trl&ft=lora&bits=16"));
        assert!(!ad16("fw=trl&ft=qlora&bits=4&ad16=0"));
        assert!(!ad16("fw=peft&ft=qlora&bits=4"));
        assert!(ad16("fw=peft&ft=qlora&bits=4&ad16=1"));
        // The default leaves the URL; a choice against it stays in it.
        let trl = decode_str("fw=trl&ft=qlora&bits=4").unwrap();
        assert!(!encode(&trl).contains("ad16"), "{}", encode(&trl));
        let off = decode_str("fw=trl&ft=qlora&bits=4&ad16=0").unwrap();
        assert!(encode(&off).contains("ad16=0"));
        assert_eq!(decode_str(&encode(&off)).unwrap(), off);
        // In the form a change of framework re-seeds it (hydrated or not); as
        // with the checkpointing policy, the value shown stays through other
        // changes, and the URL says so where it is not the default.
        assert!(!apply(&trl, "fw", "peft").unwrap().training.adapters_16bit);
        let peft = decode_str("fw=peft&ft=qlora&bits=4").unwrap();
        assert!(apply(&peft, "fw", "trl").unwrap().training.adapters_16bit);
        let form = "fw=trl&fw_prev=peft&ft=qlora&bits=4&ad16=0";
        assert!(ad16(form));
        let lora = decode_str("fw=trl&ft=lora&bits=16").unwrap();
        let q = apply(&lora, "bits", "4").unwrap();
        assert!(!q.training.adapters_16bit);
        assert!(encode(&q).contains("ad16=0"), "{}", encode(&q));
        assert!(!apply(&off, "mb", "2").unwrap().training.adapters_16bit);
    }

    /// TRL's profile computes the loss through its fused LM head (1.15 on):
    /// seeded with the framework, left out of the URL, and replaced by the
    /// next framework's loss on a switch.
    #[test]
    fn trl_seeds_its_fused_lm_head() {
        use crate::plan::Loss;
        let trl = decode_str("fw=trl&ft=lora").unwrap();
        assert_eq!(trl.training.loss, Loss::TiledLogprob);
        assert!(!encode(&trl).contains("loss"), "{}", encode(&trl));
        let older = decode_str("fw=trl&ft=lora&loss=standard").unwrap();
        assert_eq!(older.training.loss, Loss::Standard);
        assert!(encode(&older).contains("loss=standard"));
        assert_eq!(decode_str(&encode(&older)).unwrap(), older);
        assert_eq!(
            apply(&trl, "fw", "peft").unwrap().training.loss,
            Loss::Standard
        );
        let peft = decode_str("fw=peft&ft=lora").unwrap();
        assert_eq!(
            apply(&peft, "fw", "trl").unwrap().training.loss,
            Loss::TiledLogprob
        );
        assert_eq!(
            decode_str("loss=tiled-logprob").unwrap().training.loss,
            Loss::TiledLogprob
        );
    }

    /// The planner starts on a current bitsandbytes (every framework's
    /// current release runs 0.43.2 or later); an older one is chosen in the
    /// URL, and a plan file that leaves the field out reads it off, as saved
    /// plans were written.
    #[test]
    fn the_planner_starts_on_a_current_bitsandbytes() {
        let bnb = |q: &str| decode_str(q).unwrap().training.bnb_0_43_2;
        for fw in [
            "peft",
            "trl",
            "hf-trainer",
            "litgpt",
            "plain-pytorch",
            "fsdp-qlora",
        ] {
            assert!(bnb(&format!("fw={fw}&ft=qlora&bits=4")), "{fw}");
            assert!(!bnb(&format!("fw={fw}&ft=qlora&bits=4&bnb432=0")), "{fw}");
        }
        let now = decode_str("fw=litgpt&ft=qlora&bits=4&ckpt=none&prec=bf16").unwrap();
        assert!(!encode(&now).contains("bnb432"), "{}", encode(&now));
        let old = apply(&now, "bnb432", "0").unwrap();
        assert!(encode(&old).contains("bnb432=0"), "{}", encode(&old));
        assert_eq!(decode_str(&encode(&old)).unwrap(), old);
        // The older release keeps each frozen 4-bit matmul's input: more.
        let peak = |p: &Plan| crate::estimate(p).unwrap().peak.allocated;
        assert!(peak(&old) > peak(&now));
        // A plan file without the field: off, as before.
        let mut json = serde_json::to_value(&now).unwrap();
        assert_eq!(json["training"]["bnb_0_43_2"], serde_json::json!(true));
        json["training"]
            .as_object_mut()
            .unwrap()
            .remove("bnb_0_43_2");
        let file: Plan = serde_json::from_value(json).unwrap();
        assert!(!file.training.bnb_0_43_2);
    }

    #[test]
    fn adapter_plans_round_trip() {
        let p = decode_str("ft=adapter&trainable=1200000&bits=4").unwrap();
        assert_eq!(
            p.training.finetune,
            Finetune::Adapter {
                trainable_params: 1_200_000,
                base_bits: 4,
                method: AdapterMethod::Generic,
                virtual_tokens: 0,
                targets: LoraTargets::QV,
            }
        );
        assert_eq!(decode_str(&encode(&p)).unwrap(), p);
        // Switching the planner's method to `adapter`: no count yet, a frozen base.
        assert_eq!(
            decode_str("ft=adapter").unwrap().training.finetune,
            Finetune::Adapter {
                trainable_params: 0,
                base_bits: 16,
                method: AdapterMethod::Generic,
                virtual_tokens: 0,
                targets: LoraTargets::QV,
            }
        );
        // … a method whose count the model's shape decides: that count, as
        // the framework would print it (LitGPT, Llama-2-7B), also for an
        // entered 0 (the form's value before a method was picked); an
        // entered count wins.
        let count = |q: &str| match decode_str(q).unwrap().training.finetune {
            Finetune::Adapter {
                trainable_params, ..
            } => trainable_params,
            other => panic!("{q}: {other:?}"),
        };
        assert_eq!(
            count("model=llama-2-7b&ft=adapter&adapter=llama-adapter"),
            1_229_760
        );
        assert_eq!(
            count("model=llama-2-7b&ft=adapter&adapter=llama-adapter-v2&trainable="),
            4_279_744
        );
        assert_eq!(
            count("model=llama-2-7b&ft=adapter&adapter=llama-adapter&trainable=0"),
            1_229_760
        );
        assert_eq!(
            count("model=llama-2-7b&ft=adapter&adapter=llama-adapter&trainable=7"),
            7
        );
        assert_eq!(count("model=llama-2-7b&ft=adapter&adapter=boft"), 0);
        // In the planner: a derived (or empty) count follows the method and
        // the model; an entered one stays.
        let trainable = |p: &Plan| match p.training.finetune {
            Finetune::Adapter {
                trainable_params, ..
            } => trainable_params,
            _ => panic!("not an adapter"),
        };
        let p = decode_str("model=llama-2-7b&ft=adapter").unwrap();
        assert_eq!(trainable(&p), 0);
        let v1 = apply(&p, "adapter", "llama-adapter").unwrap();
        assert_eq!(trainable(&v1), 1_229_760);
        let v2 = apply(&v1, "adapter", "llama-adapter-v2").unwrap();
        assert_eq!(trainable(&v2), 4_279_744);
        let tiny = apply(&v2, "model", "tinyllama-1.1b").unwrap();
        assert_eq!(
            Some(trainable(&tiny)),
            AdapterMethod::LlamaAdapterV2.default_trainable_params(&tiny.model, 0)
        );
        let typed = apply(&v2, "trainable", "5000000").unwrap();
        assert_eq!(
            trainable(&apply(&typed, "model", "tinyllama-1.1b").unwrap()),
            5_000_000
        );
        assert_eq!(
            trainable(&apply(&typed, "adapter", "ia3").unwrap()),
            5_000_000
        );
        // Without JavaScript: the form sends every field and the count it
        // showed; `trainable_auto` says that count was the method's own.
        assert_eq!(auto_trainable(&v1), Some(1_229_760));
        assert_eq!(auto_trainable(&typed), None);
        let form = |q: &str| trainable(&decode_str(q).unwrap());
        let base = "model=llama-2-7b&ft=adapter&adapter=llama-adapter-v2&trainable=1229760";
        assert_eq!(form(&format!("{base}&trainable_auto=1229760")), 4_279_744);
        assert_eq!(form(base), 1_229_760);
        assert_eq!(
            form(
                "model=llama-2-7b&ft=adapter&adapter=boft&trainable=1229760&trainable_auto=1229760"
            ),
            0
        );
        assert_eq!(
            decode_str("ft=adapter&trainable=many").unwrap_err().param,
            "trainable"
        );
        for m in ["osf", "osf-reconstruct", "hra", "prefix-tuning"] {
            let p =
                decode_str(&format!("ft=adapter&trainable=1000&adapter={m}&vtokens=20")).unwrap();
            assert_eq!(decode_str(&encode(&p)).unwrap(), p, "{m}");
        }
        let v2 = decode_str("ft=adapter&trainable=4280000&adapter=llama-adapter-v2").unwrap();
        assert!(matches!(
            v2.training.finetune,
            Finetune::Adapter {
                method: AdapterMethod::LlamaAdapterV2,
                ..
            }
        ));
        assert_eq!(decode_str(&encode(&v2)).unwrap(), v2);
        assert_eq!(
            decode_str("ft=adapter&trainable=1&adapter=v3")
                .unwrap_err()
                .param,
            "adapter"
        );
        let pt = decode_str("ft=adapter&trainable=614400&vtokens=200").unwrap();
        assert_eq!(pt.training.finetune.virtual_tokens(), 200);
        assert_eq!(decode_str(&encode(&pt)).unwrap(), pt);
        assert_eq!(
            decode_str("ft=adapter&trainable=1&vtokens=-3")
                .unwrap_err()
                .param,
            "vtokens"
        );
    }

    #[test]
    fn lora_dropout_defaults_to_the_frameworks() {
        let dropout = |q: &str| match decode_str(q).unwrap().training.finetune {
            Finetune::Lora { dropout, .. } => dropout,
            other => panic!("{other:?}"),
        };
        assert!(dropout("ft=lora"));
        assert!(dropout("fw=litgpt&ft=lora"));
        // torchtune's LoRA configs set lora_dropout: 0.0.
        assert!(!dropout("fw=torchtune&ft=lora"));
        assert!(dropout("fw=torchtune&ft=lora&lora_dropout=1"));
        let p = decode_str("fw=torchtune&ft=qlora").unwrap();
        assert_eq!(decode_str(&encode(&p)).unwrap(), p);
    }

    #[test]
    fn a_gpu_of_ones_own_and_a_changed_capacity_travel_in_the_url() {
        // A listed GPU with its memory changed (a MIG slice): the id and
        // the one figure that differs.
        let mig = apply(&Plan::default(), "gpu_mib", "40192").unwrap();
        assert_eq!(mig.gpu.id, Plan::default().gpu.id);
        assert_eq!(mig.gpu.capacity_mib, 40192);
        assert!(encode(&mig).contains("gpu_mib=40192"), "{}", encode(&mig));
        assert_eq!(decode_str(&encode(&mig)).unwrap(), mig);
        // Another GPU from the list brings its own capacity back.
        let a100 = apply(&mig, "gpu", "a100-sxm4-80gb").unwrap();
        assert_eq!(a100.gpu, gpu::gpu("a100-sxm4-80gb").unwrap());
        // A GPU the list lacks starts from the current one's figures.
        let own = apply(&mig, "gpu", "custom").unwrap();
        assert_eq!(own.gpu.id, "custom");
        assert_eq!(own.gpu.capacity_mib, 40192);
        assert_eq!(own.gpu.bandwidth_gbps, mig.gpu.bandwidth_gbps);
        let own = apply(&own, "gpu_mib", "24576").unwrap();
        assert_eq!(decode_str(&encode(&own)).unwrap(), own);
        // Without its memory an unknown id is refused by name.
        let e = decode_str("gpu=my-card").unwrap_err();
        assert_eq!(e.param, "gpu");
        let e = decode_str("gpu=custom&gpu_mib=lots").unwrap_err();
        assert_eq!(e.param, "gpu_mib");
        let e = decode_str("gpu_bw=-1").unwrap_err();
        assert_eq!(e.param, "gpu_bw");
        // The no-JavaScript form sends the capacity it showed beside a GPU
        // select that changed: the new GPU's own figures stand.
        let form = decode_str("gpu=a100-sxm4-80gb&gpu_prev=h100-sxm-80gb&gpu_mib=40192").unwrap();
        assert_eq!(form.gpu, gpu::gpu("a100-sxm4-80gb").unwrap());
        let kept = decode_str("gpu=h100-sxm-80gb&gpu_prev=h100-sxm-80gb&gpu_mib=40192").unwrap();
        assert_eq!(kept.gpu.capacity_mib, 40192);
        let own =
            decode_str("gpu=custom&gpu_prev=h100-sxm-80gb&gpu_mib=81559&gpu_bw=3350").unwrap();
        assert_eq!(
            (own.gpu.id.as_str(), own.gpu.capacity_mib),
            ("custom", 81559)
        );
    }

    #[test]
    fn a_custom_models_name_biases_norms_and_positions_travel_in_the_url() {
        let mut p = decode_str("model=custom").unwrap();
        p.model.name = "gpt2-like/my-model".into();
        p.model.linear_bias = true;
        p.model.qkv_bias = true;
        p.model.norms_per_layer = 3;
        p.model.positions = crate::model::Positions::Learned;
        p.model.max_positions = 2048;
        let q = encode(&p);
        assert_eq!(decode_str(&q).unwrap(), p, "{q}");
        // A preset chosen afterwards drops them all.
        let llama = apply(&p, "model", "llama-3.1-8b").unwrap();
        assert_eq!(llama.model, presets::preset("llama-3.1-8b").unwrap().spec());
    }

    /// The planner's model controls change a preset's model too (it then
    /// reads as custom dimensions); the architecture select was read only
    /// for a model already custom, so it snapped back.
    #[test]
    fn model_controls_apply_to_a_preset() {
        let p = Plan::default();
        for (k, v) in [
            ("arch", "encoder-decoder"),
            ("enc_layers", "6"),
            ("norm", "layer-norm"),
            ("pos", "learned"),
            ("tied", "1"),
            ("mlp", "plain"),
            ("layers", "7"),
        ] {
            let q = apply(&p, k, v).unwrap();
            assert_eq!(value_of(&q, k).as_deref(), Some(v), "{k}");
            assert_eq!(value_of(&q, "model").as_deref(), Some("custom"), "{k}");
            // And back through the URL.
            assert_eq!(decode_str(&encode(&q)).unwrap(), q, "{k}");
        }
    }

    #[test]
    fn every_key_round_trips_through_all_pairs() {
        let p =
            decode_str("ft=lora&rank=8&targets=q%2Bv&bits=4&shard=fsdp-full&tp=2&gpus=8").unwrap();
        assert_eq!(decode(&all_pairs(&p)).unwrap(), p);
    }
}
