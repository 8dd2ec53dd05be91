//! Calibration: read cases in the schema of `shared/calibration/SCHEMA.md`,
//! build a plan from each row's columns (no per-row or per-source constants),
//! predict the counter the row measured, and summarise the errors.

use crate::csv;
use crate::estimate::{estimate, Counters};
use crate::framework::Framework;
use crate::gpu::{self, GpuSpec};
use crate::model::{Arch, Mlp, ModelHead, ModelSpec, Norm, Positions};
use crate::plan::{
    AdapterMethod, Attention, Checkpointing, DeepspeedRelease, Finetune, LoraTargets, LoraVariant,
    Loss, Objective, Offload, OffloadDevice, Optimizer, OptimizerImpl, Plan, Precision,
    PytorchRelease, Sharding, TransformersRelease,
};
use crate::query::parse_targets;
use crate::units::{GIB, MIB};
use serde::{Deserialize, Serialize};

/// Which counter a measurement is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Counter {
    Allocated,
    Reserved,
    DeviceUsed,
}

impl Counter {
    /// The schema's `metric` column: `max_allocated` and `max_active` are the
    /// allocated counter; `max_reserved`, `reserved_at_end` and an unstated
    /// metric (empty, or written `unknown`) the reserved one; `device_used`
    /// what NVML reports.
    /// PyTorch's own function names and nvidia-smi's are read as the same
    /// counters (`max_memory_allocated`, `memory.used`).
    ///
    /// The name is read in any case, with spaces or `-` for `_`, and as the
    /// call that printed it (`torch.cuda.max_memory_allocated()`).
    pub fn from_metric(m: &str) -> Option<Counter> {
        // A unit or remark in brackets ("Peak memory (GB)", "max_reserved
        // [MiB]") is not part of the name.
        let m = strip_brackets(m).trim().to_ascii_lowercase();
        let m = m.strip_prefix("torch.cuda.").unwrap_or(&m);
        let m = m.trim_end_matches("()").replace([' ', '-'], "_");
        match m.as_str() {
            "max_allocated" | "max_active" | "max_memory_allocated" | "peak_allocated" => {
                Some(Counter::Allocated)
            }
            "allocated" | "active" | "max_memory_active" | "peak_active" => {
                Some(Counter::Allocated)
            }
            "max_reserved"
            | "reserved_at_end"
            | ""
            | "max_memory_reserved"
            | "memory_reserved"
            | "peak_reserved" => Some(Counter::Reserved),
            // A peak named by no counter is an unstated one: the reserved
            // counter, as for an empty column.
            "reserved" | "peak" | "peak_memory" | "max_memory" => Some(Counter::Reserved),
            // Unknown written out (as the schema's other enums spell it):
            // the empty column's meaning.
            m if written_unknown(m) => Some(Counter::Reserved),
            "device_used" | "nvidia_smi" | "memory.used" | "nvml" | "nvml_used" => {
                Some(Counter::DeviceUsed)
            }
            "used" | "memory_used" | "gpu_memory_used" | "smi" => Some(Counter::DeviceUsed),
            m => Counter::from_words(m),
        }
    }

    /// A metric named in words no exact name matches ("Peak Memory Active",
    /// "peak memory per GPU", "GPU memory used"): the counter its words name,
    /// and a peak of GPU memory naming none is an unstated one (the reserved
    /// counter, as the schema says) — "memory usage" too, which names no
    /// counter, where "used" is nvidia-smi's `memory.used`. Host memory (CPU, RSS, RAM) is no
    /// counter of the GPU's; neither is anything that names no memory.
    fn from_words(m: &str) -> Option<Counter> {
        let words: Vec<&str> = m.split(|c: char| !c.is_ascii_alphanumeric()).collect();
        let has = |w: &[&str]| words.iter().any(|x| w.contains(x));
        // "RAM" alone is the host's; "GPU RAM" is the device's.
        if has(&["cpu", "host", "rss", "swap"]) || (has(&["ram"]) && !has(&["gpu"])) {
            return None;
        }
        if m.contains("alloc") || has(&["active"]) {
            Some(Counter::Allocated)
        } else if m.contains("reserv") || has(&["cached"]) {
            Some(Counter::Reserved)
        } else if m.contains("nvidia") || has(&["smi", "nvml", "used"]) {
            Some(Counter::DeviceUsed)
        } else if has(&["peak", "max", "memory", "mem", "vram"]) {
            Some(Counter::Reserved)
        } else {
            None
        }
    }

    pub fn pick(self, c: &Counters) -> u64 {
        match self {
            Counter::Allocated => c.allocated.get(),
            Counter::Reserved => c.reserved.get(),
            Counter::DeviceUsed => c.device_used.get(),
        }
    }
}

/// `s` without its bracketed parts (`(GB)`, `[MiB]`).
fn strip_brackets(s: &str) -> String {
    let mut depth = 0u32;
    s.chars()
        .filter(|&c| match c {
            '(' | '[' => {
                depth += 1;
                false
            }
            ')' | ']' => {
                depth = depth.saturating_sub(1);
                false
            }
            _ => depth == 0,
        })
        .collect()
}

/// "Unknown" written out where the schema leaves a cell empty: `unknown` (as
/// it spells it for `attention` and `loss`), `unstated`, `n/a`, `na`, `?`.
fn written_unknown(v: &str) -> bool {
    ["unknown", "unstated", "n/a", "na", "?", "-", "—", "–"]
        .iter()
        .any(|u| v.eq_ignore_ascii_case(u))
}

/// A whole number as written: digits, or digits grouped in thousands.
fn is_count(v: &str) -> bool {
    (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())) || without_thousands(v).is_some()
}

/// A whole number written with thousands separators ("2,048", "32 000"):
/// the digits, where every group after the first has three.
fn without_thousands(v: &str) -> Option<String> {
    let groups: Vec<&str> = v.split([',', ' ', '\u{202f}', '_']).collect();
    let ok = groups.len() > 1
        && groups
            .iter()
            .all(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()))
        && groups[0].len() <= 3
        && groups[1..].iter().all(|g| g.len() == 3);
    ok.then(|| groups.concat())
}

/// One case's outcome (the JSON shape `memplan calibrate --json` prints).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub id: String,
    pub metric: String,
    pub measured_gib: f64,
    pub predicted_gib: Option<f64>,
    pub error_pct: Option<f64>,
    pub oom: bool,
    pub skipped: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: u64,
    pub skipped: u64,
    pub median_abs_error_pct: Option<f64>,
    pub p90_abs_error_pct: Option<f64>,
    pub worst_under_prediction_pct: Option<f64>,
    pub oom_detected: u64,
    pub oom_total: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub cases: Vec<CaseResult>,
    pub summary: Summary,
    /// Rows whose architecture columns disagree with their `params_total`
    /// ([`PARAMS_MISMATCH_PCT`]): for the CLI's standard error, not part of
    /// the report's fixed JSON shape.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// The columns every case file has, in the schema's order.
pub const COLUMNS: &[&str] = &[
    "id",
    "source_url",
    "framework",
    "model",
    "arch",
    "n_layers",
    "hidden",
    "n_heads",
    "n_kv_heads",
    "ffn_hidden",
    "mlp",
    "vocab",
    "tied_embeddings",
    "n_experts",
    "experts_per_token",
    "params_total",
    "task",
    "lora_rank",
    "lora_targets",
    "trainable_params",
    "micro_batch",
    "seq_len",
    "grad_accum",
    "precision",
    "base_weight_bits",
    "optimizer",
    "optimizer_in_backward",
    "activation_checkpointing",
    "activation_offload",
    "attention",
    "loss",
    "compile",
    "num_gpus",
    "sharding",
    "tp",
    "pp",
    "cp",
    "offload",
    "gpu",
    "gpu_mem_gib",
    "metric",
    "measured_gib",
    "oom",
    "quality",
    "notes",
];

struct Row<'a> {
    header: &'a [String],
    fields: &'a [String],
}

impl Row<'_> {
    /// A column's text, trimmed. "Empty means unknown" (SCHEMA.md): a
    /// setting with unknown written out ([`written_unknown`]) is empty, so it
    /// gets the framework's default as an empty one does; the free-text
    /// columns keep what they say.
    fn get(&self, col: &str) -> &str {
        let v = self
            .header
            .iter()
            .position(|h| h == col)
            .and_then(|i| self.fields.get(i))
            .map(|s| s.trim())
            .unwrap_or("");
        let free_text = matches!(col, "id" | "source_url" | "model" | "notes" | "gpu");
        if !free_text && written_unknown(v) {
            ""
        } else {
            v
        }
    }

    /// An enum column as written in any case, with `_` or spaces for `-`
    /// (`FSDP_Full`, `AMP BF16`): the schema's spelling of the same value.
    fn word(&self, col: &str) -> String {
        self.get(col).to_ascii_lowercase().replace(['_', ' '], "-")
    }

    fn u32(&self, col: &str) -> Result<Option<u32>, String> {
        self.u32_value(col, self.get(col))
    }

    /// [`Self::u32`] of `v`, the column's text or what is left of it.
    fn u32_value(&self, col: &str, v: &str) -> Result<Option<u32>, String> {
        if v.is_empty() {
            return Ok(None);
        }
        // "none" for a degree or a count of steps is one: no TP, no
        // accumulation.
        if v.eq_ignore_ascii_case("none") && matches!(col, "tp" | "pp" | "cp" | "grad_accum") {
            return Ok(Some(1));
        }
        // A note in parentheses after the count ("8 (1 node)").
        // (What is before it is read as the whole would be: a cap is still one.)
        if let Some((n, _)) = v.split_once('(').filter(|(n, _)| !n.trim().is_empty()) {
            return self.u32_value(col, n.trim());
        }
        // A count of GPUs written as a multiplier, alone or with their name
        // ("8x", "2x A100", "8 × H100").
        if let Some((n, _)) = v
            .split_once(['x', '×'])
            .filter(|(n, name)| is_count(n.trim()) && (name.is_empty() || name.starts_with(' ')))
        {
            return self.u32_trimmed(col, n.trim());
        }
        // A count per device ("2 per GPU", "2/gpu"), a batch by its flag
        // ("bs=2", "per_device_train_batch_size=2").
        if let Some((n, _)) = v
            .split_once(" per ")
            .or_else(|| {
                v.split_once('/')
                    .filter(|(_, per)| per.trim().chars().all(|c| c.is_ascii_alphabetic()))
            })
            .filter(|(n, _)| is_count(n.trim()))
        {
            return self.u32_trimmed(col, n.trim());
        }
        // (Not a cap, "max_length=2048": what ran may be shorter.)
        if let Some((_, n)) = v.split_once('=').filter(|(name, n)| {
            !name.trim().is_empty()
                && !name.to_ascii_lowercase().contains("max")
                && name
                    .trim()
                    .chars()
                    .all(|c| c.is_ascii_alphabetic() || c == '_')
                && is_count(n.trim())
        }) {
            return self.u32_trimmed(col, n.trim());
        }
        let lower = v.to_ascii_lowercase();
        if (lower.contains("max") || lower.contains("up to"))
            && lower.contains(|c: char| c.is_ascii_digit())
        {
            return Err(format!(
                "{col}: `{v}` is a cap, not what the run used (a shorter batch or sequence may have run)"
            ));
        }
        self.u32_trimmed(col, v)
    }

    /// [`Self::u32`] of a value already stripped of notes and multipliers.
    fn u32_trimmed(&self, col: &str, v: &str) -> Result<Option<u32>, String> {
        if let Some(digits) = without_thousands(v) {
            return self.u32_of(col, &digits);
        }
        // A count with its noun ("4096 tokens", "8 GPUs"), a rank with its
        // name ("r=8", "rank 8", "r8").
        let noun = v
            .split_once(' ')
            .filter(|(n, w)| {
                !n.is_empty() && w.chars().all(|c| c.is_ascii_alphabetic() || c == '-')
            })
            .map(|(n, _)| n);
        if let Some(n) = noun {
            return self.u32_of(col, n);
        }
        if col == "lora_rank" {
            let lower = v.to_ascii_lowercase();
            let n = lower
                .strip_prefix("rank")
                .or_else(|| lower.strip_prefix('r'))
                .map(|n| n.trim_start_matches([' ', '=', ':']));
            if let Some(n) = n.filter(|n| !n.is_empty()) {
                return self.u32_of(col, n);
            }
        }
        self.u32_of(col, v)
    }

    fn u32_of(&self, col: &str, v: &str) -> Result<Option<u32>, String> {
        v.parse::<u32>()
            .map(Some)
            .or_else(|_| match v.parse::<f64>() {
                Ok(f) if f.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&f) => {
                    Ok(Some(f as u32))
                }
                Ok(f) if f.fract() == 0.0 && f < 0.0 => {
                    Err(format!("{col}: `{v}` is negative (a count is 0 or more)"))
                }
                Ok(f) if f.fract() == 0.0 && f.is_finite() => {
                    Err(format!("{col}: `{v}` is too large (at most {})", u32::MAX))
                }
                _ => Err(format!("{col}: `{v}` is not a whole number")),
            })
    }

    /// A token count as [`Self::u32`], or with the `k` people write lengths
    /// with ("2k", "32K", "128k" context: 1024 tokens each).
    fn tokens(&self, col: &str) -> Result<Option<u32>, String> {
        let v = self.get(col);
        // A cap with a note that every row filled it ("max_seq_length=2048
        // (packing)", "max 4k (packed)", "max_length 512 (padding=
        // max_length)"): the cap is the length run ([`fills_the_cap`]).
        if let Some((cap, note)) = v.split_once('(') {
            let last = cap.trim().rsplit([' ', '=', ':']).next().unwrap_or("");
            let filled = fills_the_cap(&note.to_ascii_lowercase());
            if let Some(n) = leading_tokens(&last.to_ascii_lowercase()).filter(|_| filled) {
                return Ok(Some(n));
            }
        }
        // About that long ("~2048", "≈ 2048"): the length, as a user would
        // enter it.
        let v = v.trim_start_matches(['~', '≈']).trim_start();
        match v.strip_suffix(['k', 'K']).map(str::trim) {
            Some(n) if !n.is_empty() => n
                .parse::<u32>()
                .ok()
                .and_then(|n| n.checked_mul(1024))
                .map(Some)
                .ok_or_else(|| format!("{col}: `{v}` is not a whole number of tokens")),
            _ => self.u32_value(col, v),
        }
    }

    fn f64(&self, col: &str) -> Result<Option<f64>, String> {
        let v = self.get(col);
        if v.is_empty() {
            return Ok(None);
        }
        v.parse::<f64>()
            .ok()
            .or_else(|| decimal_comma(v))
            .map(Some)
            .ok_or_else(|| format!("{col}: `{v}` is not a number"))
    }

    fn bool(&self, col: &str) -> Result<bool, String> {
        match self.word(col).as_str() {
            "true" | "yes" | "1" | "on" | "y" => Ok(true),
            "false" | "no" | "0" | "" | "off" | "n" | "none" => Ok(false),
            // Where the blocks' inputs went, or the checkpointing that sends
            // them there (Unsloth's `use_gradient_checkpointing="unsloth"`).
            "cpu" | "host" | "offloaded" | "offload" | "unsloth" if col == "activation_offload" => {
                Ok(true)
            }
            // `compile` as people write it: the compiler by name, or eager.
            "torch.compile" | "torch-compile" | "inductor" | "compiled" if col == "compile" => {
                Ok(true)
            }
            "eager" if col == "compile" => Ok(false),
            "tied" | "shared" if col == "tied_embeddings" => Ok(true),
            "untied" | "separate" | "not-tied" if col == "tied_embeddings" => Ok(false),
            v => Err(format!("{col}: `{v}` is not true/false")),
        }
    }

    /// Whether the run ran out of memory: the `oom` column as a flag or in
    /// words ("OOM", "out of memory", "fits"), or a measurement written as
    /// "OOM" instead of a size.
    fn oom(&self) -> Result<bool, String> {
        let w = self.word("oom");
        if w.contains("oom") || w.contains("out-of-memory") {
            return Ok(true);
        }
        if matches!(w.as_str(), "fit" | "fits" | "ok" | "fitted") {
            return Ok(false);
        }
        let measured = self.word("measured_gib");
        Ok(self.bool("oom")? || measured.contains("oom") || measured.contains("out-of-memory"))
    }

    /// A bit width written as a number ("4") or by its format's name ("nf4",
    /// "int8", "8-bit", "bf16").
    fn bits(&self, col: &str) -> Result<Option<u32>, String> {
        let w = self.word(col);
        let named = match w.as_str() {
            "nf4" | "fp4" | "int4" | "4bit" | "4-bit" | "q4" | "bnb-4bit" | "bnb-nf4" => Some(4),
            // NF4 with its scales quantized too (LitGPT's `nf4-dq`).
            "nf4-dq" | "nf4+dq" | "nf4-double-quant" | "nf4-double-quantization" => Some(4),
            "int8" | "8bit" | "8-bit" | "q8" | "llm.int8" | "llm-int8" | "bnb-8bit" => Some(8),
            "bf16" | "fp16" | "16bit" | "16-bit" | "half" | "bfloat16" | "float16" => Some(16),
            "fp32" | "32bit" | "32-bit" | "float32" => Some(32),
            _ => None,
        };
        match named {
            Some(b) => Ok(Some(b)),
            None => self.u32(col),
        }
    }
}

/// An `other` optimizer the notes name, as the built-in one with the same
/// states per parameter: one full-size state for Adam-mini (its second moment
/// is one value per block, Zhang et al. 2024), RMSprop (`square_avg`),
/// Adagrad (`sum`) and CAME (`exp_avg` beside factored row and column
/// statistics, Luo et al. 2023, `came-pytorch`) — as SGD with momentum; two
/// for Sophia (`exp_avg`, `hessian`, Liu et al. 2023), schedule-free AdamW
/// (`z`, `exp_avg_sq`, Defazio et al. 2024), LAMB (`exp_avg`, `exp_avg_sq`,
/// You et al. 2020; apex `FusedLAMB`) and Adam — as AdamW (torch.optim state
/// dicts); four for Prodigy (`exp_avg`, `exp_avg_sq`, `s`, `p0`, Mishchenko
/// & Defazio 2024, `prodigyopt`) — as Adan — and for AdEMAMix's three
/// (`exp_avg_fast`, `exp_avg_slow`, `exp_avg_sq`, Pagliardini et al. 2024),
/// an upper bound. LOMO (Lv et al. 2023: the update fused into the backward,
/// no state, no gradient kept) reads as SGD and AdaLomo (its factored second
/// moment) as Adafactor, both stepped in backward ([`fused_update_optimizer`]).
fn other_optimizer(notes: &str) -> Option<Optimizer> {
    let n = notes.to_ascii_lowercase();
    // Optimizers modelled by their own states: Muon's momentum on the hidden
    // matrices (AdamW on the rest), Adan's four.
    let words: Vec<&str> = n.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    if words.iter().any(|w| w.starts_with("muon")) {
        return Some(Optimizer::Muon);
    }
    if words
        .iter()
        .any(|&w| w == "adan" || w.starts_with("prodigy") || w.starts_with("ademamix"))
    {
        return Some(Optimizer::Adan);
    }
    match fused_update_optimizer(notes) {
        Some(true) => return Some(Optimizer::Adafactor),
        Some(false) => return Some(Optimizer::Sgd),
        None => {}
    }
    // "CAME" in capitals: the word "came" is English too.
    let came = notes
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| w == "CAME" || w == "CAMEOptimizer");
    if came {
        return Some(Optimizer::SgdMomentum);
    }
    if words.iter().any(|w| w.ends_with("lamb")) {
        return Some(Optimizer::Adamw);
    }
    if n.contains("galore") {
        return galore(&n);
    }
    if n.contains("apollo") {
        return Some(Optimizer::Apollo);
    }
    // Optimizers whose states are none of the modelled ones: preconditioners
    // (Shampoo, SOAP).
    let own = ["shampoo", "soap"];
    if own.iter().any(|k| n.contains(k)) {
        return None;
    }
    let one = ["adam-mini", "adam_mini", "rmsprop", "adagrad"];
    let two = ["sophia", "schedule-free", "schedulefree", "adam"];
    if one.iter().any(|k| n.contains(k)) {
        Some(Optimizer::SgdMomentum)
    } else if two.iter().any(|k| n.contains(k)) {
        Some(Optimizer::Adamw)
    } else {
        None
    }
}

/// Whether the notes (or an optimizer column) name an optimizer that fuses
/// its update into the backward pass, freeing each gradient as it is used:
/// `Some(true)` for AdaLomo (a factored second moment), `Some(false)` for
/// LOMO (none) — Lv et al. 2023, "Full Parameter Fine-tuning for Large
/// Language Models with Limited Resources", and Lv et al. 2023b, "AdaLomo"
/// (OpenLMLab `collie` and LMFlow ship both, transformers as `optim="lomo"`
/// / `"adalomo"`).
fn fused_update_optimizer(notes: &str) -> Option<bool> {
    let n = notes.to_ascii_lowercase();
    let mut words = n.split(|c: char| !c.is_ascii_alphanumeric());
    if words.clone().any(|w| w == "adalomo") {
        Some(true)
    } else if words.any(|w| w == "lomo") {
        Some(false)
    } else {
        None
    }
}

/// The schema's `loss` value another name of it stands for (`w` as
/// [`Row::word`] gives it): a fused linear + cross-entropy by its tools'
/// names (Liger's `LigerFusedLinearCrossEntropyLoss`, Cut Cross-Entropy,
/// "FLCE"), a chunked one by its chunk count or torchtune's class
/// (`CEWithChunkedOutputLoss`), the full upcast cross-entropy by the
/// function's name.
fn loss_name(w: &str) -> Option<&'static str> {
    let fused = [
        "fused",
        "liger",
        "liger-flce",
        "flce",
        "cce",
        "cut-cross-entropy",
        "cut-ce",
        "fused-linear-cross-entropy",
        "fused-linear-ce",
        "fused-ce",
        "fused-cross-entropy",
        "ligerfusedlinearcrossentropyloss",
    ];
    if fused.contains(&w) {
        return Some("fused");
    }
    if w.starts_with("chunked") || w == "cewithchunkedoutputloss" || w == "chunked-cross-entropy" {
        return Some("chunked");
    }
    [
        "cross-entropy",
        "ce",
        "full-ce",
        "unchunked",
        "full",
        "plain",
        "crossentropyloss",
    ]
    .contains(&w)
    .then_some("standard")
}

/// The k of a checkpointing column that recomputes every k-th block in full
/// ("every-2-layers", "every-2nd-block", "every-other-layer", "full-every-4"),
/// written as [`Row::word`] gives it; `None` for every other value.
fn checkpoint_every_k(c: &str) -> Option<u32> {
    let rest = c.split_once("every-")?.1;
    let first = rest.split('-').next()?;
    if first == "other" {
        return Some(2);
    }
    let digits: String = first.chars().take_while(char::is_ascii_digit).collect();
    let k: u32 = digits.parse().ok()?;
    // "every-2nd", "every-3rd", "every-4th": an ordinal's suffix only.
    let suffix = &first[digits.len()..];
    (k > 0 && ["", "st", "nd", "rd", "th"].contains(&suffix)).then_some(k)
}

/// Whether a row's `compile = true` is Inductor's fusion, which
/// [`crate::plan::TrainingSpec::compile`] models (its partitioner recomputes
/// element-wise chains in backward instead of saving them). `torch.compile`
/// is; so is Lightning Thunder's `torchcompile` executor, which hands every
/// torch operation to `torch.compile` (lightning-thunder 0.2.0.dev20240505,
/// `thunder/executors/torch_compile.py`: `torch_compile_ex._implmap` covers
/// all of `pytorch_ex.implmap`, "meant to be used without the
/// nvfuser_executor"). Thunder's default executors are not: nvFuser fuses the
/// element-wise regions between matmuls (`thunder/__init__.py` adds
/// `nvfuser_executor` and `sdpa_executor` as the defaults) and
/// `torchcompile_cat` takes only cat, pad and slice regions (RoPE). What
/// Thunder's rematerialization of those fusions saves is not counted, so such a
/// run is read as eager — the upper bound, as for any compiler the model does
/// not know. The notes name Thunder and, where stated, its executors
/// ("executors: sdpa+torchcompile_cat+nvfuser+torch"); `torchcompile_cat` is
/// a word of its own, not `torchcompile`.
fn compiled_by_inductor(notes: &str) -> bool {
    let lower = notes.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    if !words.contains(&"thunder") {
        return true;
    }
    words.contains(&"torchcompile")
}

/// PEFT methods a task column may name instead of `other-peft` that keep
/// no more than a frozen base ([`AdapterMethod::Generic`]); the others are
/// whatever [`named_adapter_method`] reads.
const GENERIC_ADAPTER_TASKS: &[&str] = &["prompt-tuning", "p-tuning", "shira", "bone", "miss"];

/// The parameter-efficient method the notes (or a task column) name, when
/// its saved tensors differ from a frozen base's. Method names are matched
/// as whole words, so that SHiRA is not HiRA and BOFT not OFT.
fn named_adapter_method(notes: &str) -> Option<AdapterMethod> {
    let lower = notes.to_ascii_lowercase();
    let words: Vec<String> = notes
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '³'))
        .map(str::to_lowercase)
        .collect();
    let named = |names: &[&str]| names.iter().any(|n| words.iter().any(|w| w == n));
    // LitGPT names them `adapter` and `adapter_v2` (its `finetune_adapter`
    // and `finetune_adapter_v2` commands), the papers LLaMA-Adapter (V2).
    let v2 = [
        "adapter v2",
        "adapter-v2",
        "adapter_v2",
        "adapterv2",
        "adapter (v2)",
    ];
    let v1 = [
        "llama adapter",
        "llama_adapter",
        "finetune_adapter",
        "finetune-adapter",
    ];
    Some(if v2.iter().any(|n| lower.contains(n)) {
        AdapterMethod::LlamaAdapterV2
    } else if named(&[
        "llama-adapter",
        "adaptionprompt",
        "adaption-prompt",
        "adapter-v1",
    ]) || v1.iter().any(|n| lower.contains(n))
        || lower.contains("adaption prompt")
        || lower.contains("adaption_prompt")
    {
        // PEFT calls LLaMA-Adapter `AdaptionPrompt`.
        AdapterMethod::LlamaAdapter
    } else if named(&["ia3", "ia³"]) {
        AdapterMethod::Ia3
    } else if lower.contains("ln tuning") || named(&["ln-tuning"]) {
        AdapterMethod::LnTuning
    } else if named(&["boft"]) {
        AdapterMethod::Boft
    } else if named(&["hra"]) {
        AdapterMethod::Hra
    } else if named(&["shira"]) {
        AdapterMethod::Shira
    } else if lower.contains("prefix tuning")
        || named(&["prefix-tuning", "cartridge", "cartridges"])
    {
        // Cartridges (PEFT `CartridgeConfig`) train a key/value prefix too.
        AdapterMethod::PrefixTuning
    } else if named(&["osf"]) {
        // PEFT 0.21 factored OSF's forward; the published OSF runs
        // (PEFT's MetaMathQA results, added with the method in 0.18)
        // rebuilt the weight. A stated "PEFT 0.21" (or later) says which.
        match stated_version(notes, "PEFT ") {
            Some((0, minor)) if minor >= 21 => AdapterMethod::Osf,
            Some((major, _)) if major >= 1 => AdapterMethod::Osf,
            _ => AdapterMethod::OsfReconstruct,
        }
    } else if named(&[
        "loha",
        "lokr",
        "fourierft",
        "waveft",
        "randlora",
        "hira",
        "peanut",
    ]) {
        // Counted with saved_tensors.py --methods: the fp32 input
        // casts plus a weight-sized update (PEANuT keeps about two).
        AdapterMethod::DeltaWeight
    } else if named(&[
        "vera", "pvera", "vb-lora", "vblora", "c3a", "delora", "gralora", "road", "adalora", "oft",
        "lily", "unilora", "deft",
    ]) {
        // Counted: the fp32 input casts (PVeRA and DEFT keep a little more).
        AdapterMethod::CastInputs
    } else {
        return None;
    })
}

/// The preference objective the notes (or a task column such as `dpo`)
/// name: DPO with its reference model; ORPO, SimPO and CPO without one; KTO.
/// A reference-free loss named beside DPO is the one run: LLaMA-Factory's
/// `stage: dpo` with `pref_loss: orpo` (or `simpo`) loads no reference model
/// (`use_ref_model = stage == "dpo" and pref_loss not in ["orpo", "simpo"]`,
/// llamafactory 0.9.5 `hparams/finetuning_args.py`).
fn stated_objective(notes: &str) -> Objective {
    let lower = notes.to_ascii_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    let named = |names: &[&str]| words.iter().any(|w| names.contains(w));
    if named(&["orpo", "simpo", "cpo", "orpotrainer", "cpotrainer"]) {
        Objective::Orpo
    } else if named(&["dpo", "dpotrainer"]) {
        Objective::Dpo
    } else if named(&["kto", "ktotrainer"]) {
        Objective::Kto
    } else {
        Objective::Sft
    }
}

/// The bottom blocks a full fine-tune's notes say were frozen
/// (`frozen_layers=8`, "freeze the first 8 layers", "8 frozen layers",
/// "bottom 8 layers frozen").
fn stated_frozen_layers(notes: &str) -> Option<u32> {
    let lower = notes.to_ascii_lowercase().replace('_', " ");
    stated_after(
        &lower,
        &[
            "frozen layers",
            "freeze layers",
            "num frozen layers",
            "freeze the first",
            "freezing the first",
            "froze the first",
            "frozen first",
            "freeze first",
            "freeze the bottom",
            "freezing the bottom",
        ],
    )
    .or_else(|| stated_number(&lower, " frozen layers"))
    .or_else(|| stated_number(&lower, " frozen blocks"))
    .or_else(|| stated_number(&lower, " layers frozen"))
    .filter(|&n| n > 0)
}

/// The GaLore optimizer a (lower-cased) name gives: AdamW's, 32- or 8-bit
/// (galore-torch's `GaLoreAdamW`, `GaLoreAdamW8bit`; transformers'
/// `galore_adamw`, `galore_adamw_8bit` and their `_layerwise` forms);
/// GaLore-Adafactor's factored moments are not modelled.
fn galore(name: &str) -> Option<Optimizer> {
    if name.contains("adafactor") {
        None
    } else if name.contains("8bit") || name.contains("8-bit") {
        Some(Optimizer::Galore8bit)
    } else {
        Some(Optimizer::Galore)
    }
}

/// An optimizer column outside the schema's names that still names one
/// the model knows: transformers' `optim` ids (`adamw_torch_fused`,
/// `adamw_bnb_8bit`, `paged_adamw_8bit`, `lion_32bit`, `sgd`), else
/// whatever [`other_optimizer`] reads from a name. `o` is lower-cased with
/// `_` and spaces as `-`.
fn named_optimizer(o: &str) -> Option<Optimizer> {
    if ["galore", "apollo", "shampoo", "soap"]
        .iter()
        .any(|k| o.contains(k))
    {
        // Projected or preconditioned states, read as in the notes (before
        // `galore_adamw` could pass for AdamW below).
        return other_optimizer(o);
    }
    let eight = o.contains("8bit") || o.contains("8-bit");
    let paged = o.contains("paged");
    if o.contains("lion") {
        // bitsandbytes' 8-bit Lion keeps its one state in 8 bits; the model
        // has Lion's 32-bit state only, an upper bound.
        return Some(Optimizer::Lion);
    }
    if o.contains("adam") && !o.contains("mini") {
        return Some(match (paged, eight) {
            (true, true) => Optimizer::PagedAdamw8bit,
            (true, false) => Optimizer::PagedAdamw,
            (false, true) => Optimizer::Adamw8bit,
            (false, false) => Optimizer::Adamw,
        });
    }
    if o.contains("adafactor") {
        return Some(Optimizer::Adafactor);
    }
    if o.starts_with("sgd") {
        return Some(if o.contains("momentum") || o.contains("nesterov") {
            Optimizer::SgdMomentum
        } else {
            Optimizer::Sgd
        });
    }
    other_optimizer(o)
}

/// A sharding column's word (lower-cased, `_` and spaces as `-`) as a
/// strategy: its own names, FSDP's and DeepSpeed's, and their other
/// spellings; `None` for anything else.
fn sharding_word(s: &str) -> Option<Sharding> {
    Some(match s {
        "none" => Sharding::None,
        // Data parallelism by its short and long names.
        "ddp" | "dp" | "data-parallel" | "distributeddataparallel" | "megatron-dp" => Sharding::Ddp,
        // DeepSpeed's stage 0 is plain data parallelism.
        "zero0" | "zero-0" => Sharding::Ddp,
        "zero1" | "zero-1" => Sharding::Zero1,
        "zero2" | "zero-2" => Sharding::Zero2,
        "zero3" | "zero-3" => Sharding::Zero3,
        // FSDP's own strategy names (`ShardingStrategy`), and FSDP2, which
        // only fully shards.
        "fsdp-full" | "fsdp" | "fsdp2" | "full-shard" => Sharding::FsdpFull,
        "fsdp-grad-op" | "shard-grad-op" => Sharding::FsdpGradOp,
        "hsdp" | "hybrid-shard" => Sharding::Hsdp,
        // Other spellings: FSDP's strategies with a prefix, DeepSpeed's stages
        // by name ("deepspeed-zero3", "ds-stage-2", "zero-stage-3"), one GPU.
        "fsdp-hybrid" | "fsdp-hybrid-shard" | "hybrid" => Sharding::Hsdp,
        "fsdp-full-shard" => Sharding::FsdpFull,
        "fsdp-shard-grad-op" | "grad-op" => Sharding::FsdpGradOp,
        "single" | "single-gpu" | "no" | "no-shard" => Sharding::None,
        "dataparallel" | "nn-dataparallel" | "nn.dataparallel" => Sharding::DataParallel,
        // FSDP2's API (`fully_shard`).
        "fully-shard" | "fsdp2-fully-shard" => Sharding::FsdpFull,
        s => return zero_stage(s),
    })
}

/// A column's word and the note in parentheses after it, each trimmed of
/// the separators [`Row::word`] leaves ("fsdp-(shard-grad-op)" → "fsdp",
/// "shard-grad-op"); `None` without parentheses.
fn with_note(s: &str) -> Option<(&str, &str)> {
    let (outside, rest) = s.split_once('(')?;
    let inside = rest.split(')').next().unwrap_or("");
    Some((
        outside.trim_matches(NOTE_SEPARATORS),
        inside.trim_matches(NOTE_SEPARATORS),
    ))
}

/// What [`Row::word`] leaves around a note in parentheses.
const NOTE_SEPARATORS: [char; 4] = ['-', ' ', ',', ';'];

/// What `read` makes of the text inside a value's parentheses, else of the
/// text before them ("fsdp-(shard-grad-op)", "zero-3-(stage-3)").
fn in_parentheses<T>(s: &str, read: fn(&str) -> Option<T>) -> Option<T> {
    let (outside, inside) = with_note(s)?;
    read(inside).or_else(|| read(outside))
}

/// A DeepSpeed ZeRO stage named in a sharding column ("deepspeed-zero3",
/// "ds-stage-2", "zero-stage-3"): stage 0 is plain data parallelism.
fn zero_stage(s: &str) -> Option<Sharding> {
    if !(s.contains("zero")
        || s.contains("stage")
        || s.starts_with("ds")
        || s.contains("deepspeed"))
    {
        return None;
    }
    let digits: Vec<char> = s.chars().filter(|c| c.is_ascii_digit()).collect();
    match digits.as_slice() {
        ['0'] => Some(Sharding::Ddp),
        ['1'] => Some(Sharding::Zero1),
        ['2'] => Some(Sharding::Zero2),
        ['3'] => Some(Sharding::Zero3),
        _ => None,
    }
}

/// The encoder and decoder layer counts the notes state ("24 enc + 24 dec",
/// "12 encoder + 6 decoder").
fn stated_stacks(notes: &str) -> Option<(u32, u32)> {
    let trailing_number = |t: &str| -> Option<u32> {
        let t = t.trim_end();
        let digits = t.len() - t.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        t[t.len() - digits..].parse().ok()
    };
    notes.match_indices('+').find_map(|(at, _)| {
        let left = notes[..at].trim_end();
        let left = left.strip_suffix("layers").unwrap_or(left).trim_end();
        let left = left
            .strip_suffix("encoder")
            .or_else(|| left.strip_suffix("enc"))?;
        let enc = trailing_number(left)?;
        let right = notes[at + 1..].trim_start();
        let digits = right.len() - right.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let dec: u32 = right[..digits].parse().ok()?;
        right[digits..]
            .trim_start()
            .starts_with("dec")
            .then_some((enc, dec))
    })
}

/// Whether the framework's multi-GPU runs shard with FSDP: litgpt's
/// finetune/pretrain pick `FSDPStrategy` for devices > 1, torchtitan's and
/// torchtune's distributed recipes shard with FSDP2, fsdp_qlora is FSDP.
fn shards_with_fsdp(framework: Framework) -> bool {
    matches!(
        framework,
        Framework::Litgpt | Framework::Torchtitan | Framework::Torchtune | Framework::FsdpQlora
    )
}

/// The length a row ran at when its `seq_len` column is empty and its notes
/// state it as the length run: padded or packed to it ("left-padded to
/// max_length 64", "padded to 512", "packed to 4096"), transformers'
/// `run_clm.py` blocks ("block_size 1024": the text is grouped into blocks of
/// that many tokens), named ("seq_len 2048", "sequence length 2048",
/// Megatron's `--seq-length 2048`, "seqlen 4k") or counted ("2048 tokens per
/// sample", "2048-token sequences", "sequences of 2048 tokens"). A cap is not
/// the length run — `max_length`, `max_seq_length`, "max sequence length",
/// "truncated to": a batch padded to its longest sample is shorter — so it is
/// read only where the notes say every row filled it: packed (TRL's
/// `packing=True`, axolotl's `sample_packing: true`, torchtune's
/// `packed=True`, whose packs run at the cap) or padded to it
/// (`padding="max_length"`, `pad_to_max_length`, axolotl's
/// `pad_to_sequence_len`). Never a label's length ("labels padded to 32",
/// [`stated_target_len`]) or a vocabulary's ("vocab padded to 50304").
fn stated_seq_len(notes: &str) -> Option<u32> {
    let lower = notes.to_ascii_lowercase();
    let named = stated_tokens_after(
        &lower,
        &[
            "padded to max_length",
            "padded to",
            "packed to",
            "block_size",
            "block size",
            "sequence length",
            "sequence_length",
            "sequence-length",
            "seq_len",
            "seq len",
            "seq_length",
            "seq-length",
            "seq length",
            "seqlen",
            "seq",
        ],
        &NOT_THE_RUN_LENGTH,
    );
    // A cap the rows filled.
    let cap = || {
        fills_the_cap(&lower).then(|| {
            stated_tokens_after(
                &lower,
                &[
                    "max_seq_length",
                    "max_seq_len",
                    "max_length",
                    "max_len",
                    "model_max_length",
                    "max sequence length",
                    "max seq length",
                    "cutoff_len",
                    "sequence_len",
                ],
                &["_"],
            )
        })?
    };
    named
        .or_else(|| stated_tokens_before(&lower))
        .or_else(cap)
        .filter(|&n| n > 0)
}

/// What a length follows when it is not the length run: a cap's, a label's,
/// a vocabulary's, a mean or a bound (`_`: the end of another key,
/// `max_seq_len`).
const NOT_THE_RUN_LENGTH: [&str; 16] = [
    "_",
    "max-",
    "max",
    "maximum",
    "labels",
    "label",
    "target",
    "vocab",
    "vocabulary",
    "avg",
    "average",
    "mean",
    "median",
    "min",
    "minimum",
    "up to",
];

/// A token count after one of `names` ([`stated_after_unless`]'s rules), as a
/// whole number or in thousands of 1,024 ("8k": the schema's `seq_len` column
/// reads it so): not the start of a longer word ("seq2seq" has no length).
fn stated_tokens_after(lower: &str, names: &[&str], not_after: &[&str]) -> Option<u32> {
    after_names(lower, names, not_after).find_map(|after| {
        // Not the start of a longer word ("seq_len" is not "seq").
        if after.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            return None;
        }
        leading_tokens(after.trim_start_matches([' ', '=', ':', '"', '\'']))
    })
}

/// The token count a text starts with: digits, with an optional `k`
/// (× 1,024), not followed by another letter or digit ("2048", "4k"; not
/// "2seq", "3b").
fn leading_tokens(text: &str) -> Option<u32> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let n: u32 = text[..digits].parse().ok()?;
    let rest = &text[digits..];
    let (n, rest) = match rest.strip_prefix('k') {
        Some(r) => (n.checked_mul(1024)?, r),
        None => (n, rest),
    };
    if rest.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return None;
    }
    Some(n)
}

/// A length counted in tokens before what it measures ("2048 tokens per
/// sample", "4k-token sequences", "sequences of 2048 tokens"): each sample
/// ran that long.
fn stated_tokens_before(lower: &str) -> Option<u32> {
    const PER_SAMPLE: [&str; 10] = [
        " tokens per sample",
        " tokens per sequence",
        " tokens per example",
        " tokens per row",
        " tokens each",
        "-token sequences",
        " token sequences",
        "-token samples",
        " token samples",
        "-token blocks",
    ];
    let number_before = |at: usize| {
        let head = &lower[..at];
        let start = head
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == 'k')
            .len();
        // A whole number: not the end of a name ("llama3 tokens"), nor a mean
        // or a bound ("avg 300 tokens per sample", "up to 2048 tokens each").
        name_starts_at(lower, start, &NOT_THE_RUN_LENGTH)
            .then(|| leading_tokens(&head[start..]))
            .flatten()
    };
    PER_SAMPLE
        .iter()
        .find_map(|w| lower.match_indices(w).find_map(|(at, _)| number_before(at)))
        .or_else(|| {
            ["sequences of ", "samples of ", "blocks of ", "chunks of "]
                .iter()
                .find_map(|w| {
                    lower.match_indices(w).find_map(|(at, _)| {
                        let rest = &lower[at + w.len()..];
                        let n = leading_tokens(rest)?;
                        let digits = rest
                            .find(|c: char| !(c.is_ascii_digit() || c == 'k'))
                            .unwrap_or(rest.len());
                        rest[digits..]
                            .trim_start()
                            .starts_with("token")
                            .then_some(n)
                    })
                })
        })
}

/// The notes say every row filled the length cap: packed into full-length
/// sequences ([`stated_packing`]) or padded to the cap (`padding="max_length"`,
/// `pad_to_max_length`, axolotl's `pad_to_sequence_len: true`).
fn fills_the_cap(lower: &str) -> bool {
    let squeezed: String = lower
        .chars()
        .filter(|c| !matches!(c, ' ' | '"' | '\''))
        .collect();
    let set = |key: &str| lower.contains(key) && stated_flag(lower, key) != Some(false);
    stated_packing(lower)
        || squeezed.contains("padding=max_length")
        || squeezed.contains("padding:max_length")
        || set("pad_to_max_length")
        || set("pad_to_sequence_len")
}

/// The value the notes give the flag `key` at its first occurrence that has
/// one ("packing=False", `sample_packing: true`, `expandable_segments:True`,
/// "packing off"); `None` where no occurrence is followed by a yes or a no.
fn stated_flag(lower: &str, key: &str) -> Option<bool> {
    lower.match_indices(key).find_map(|(at, _)| {
        let rest = lower[at + key.len()..].trim_start_matches([' ', '=', ':', '"', '\'']);
        let word = &rest[..rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len())];
        match word {
            "true" | "on" | "yes" | "1" => Some(true),
            "false" | "off" | "no" | "0" => Some(false),
            _ => None,
        }
    })
}

/// The notes say the rows were packed ("packed", "packing", TRL's
/// `packing=True`, axolotl's `sample_packing: true`, torchtune's
/// `packed=True`) — and not that they were not ("packing=False",
/// `sample_packing: false`, "no packing", "without packing", "unpacked",
/// "not packed").
fn stated_packing(lower: &str) -> bool {
    const NOT: [&str; 5] = [
        "no packing",
        "without packing",
        "unpacked",
        "not packed",
        "no sample packing",
    ];
    if NOT.iter().any(|w| lower.contains(w)) {
        return false;
    }
    let set_false = ["packing", "packed"]
        .iter()
        .any(|key| stated_flag(lower, key) == Some(false));
    !set_false && (lower.contains("packed") || lower.contains("packing"))
}

/// The per-GPU micro-batch a row ran, when its `micro_batch` column is empty
/// and its notes name it as such: the Trainer's
/// `per_device_train_batch_size`, DeepSpeed's `train_micro_batch_size_per_gpu`,
/// Megatron's `micro_batch_size` / `--micro-batch-size` ("MBS 4"), torchtune's
/// `batch_size` (its recipes' batch is per device), or in words
/// ("micro-batch 4", "batch size per GPU 8", "per-device batch 4", "batch 4
/// per GPU"). A plain "batch size" is not read: papers and logs give the
/// global batch under that name (DeepSpeed's `train_batch_size` is global).
fn stated_micro_batch(notes: &str, framework: Framework) -> Option<u32> {
    let lower = notes.to_ascii_lowercase();
    // `_`: not inside another key (`eval_micro_batch_size`); nor the largest
    // that fits, a search's answer ("max micro-batch 16").
    const NOT_AFTER: [&str; 7] = [
        "_",
        "global",
        "eval",
        "total",
        "effective",
        "max",
        "maximum",
    ];
    let named = stated_after_unless(
        &lower,
        &[
            "per_device_train_batch_size",
            "train_micro_batch_size_per_gpu",
            "micro_batch_size",
            "micro-batch-size",
            "micro-batch size",
            "micro batch size",
            "micro-batch",
            "micro batch",
            "batch size per gpu",
            "per-gpu batch size",
            "per gpu batch size",
            "per-device batch size",
            "per-device batch",
            "per device batch",
            "per-gpu batch",
            "per gpu batch",
            "mbs",
        ],
        &NOT_AFTER,
    );
    // torchtune's `batch_size` key (not `eval_batch_size`, not
    // `global_batch_size`).
    let torchtune = || {
        (framework == Framework::Torchtune)
            .then(|| stated_after_unless(&lower, &["batch_size"], &NOT_AFTER))?
    };
    // "batch 4 per GPU", "bs 4 per device", "batch of 4 per GPU".
    let per_device = || {
        [" per gpu", " per device", "/gpu", "/device"]
            .iter()
            .find_map(|per| {
                lower.match_indices(per).find_map(|(at, _)| {
                    let head = lower[..at].trim_end();
                    let digits =
                        head.len() - head.trim_end_matches(|c: char| c.is_ascii_digit()).len();
                    let n: u32 = head[head.len() - digits..].parse().ok()?;
                    let word = head[..head.len() - digits].trim_end();
                    let word = word.strip_suffix(" of").unwrap_or(word).trim_end();
                    let word = word.trim_end_matches([' ', '=', ':']);
                    (word.ends_with("batch")
                        || word.ends_with("bs")
                        || word.ends_with("batch size"))
                    .then_some(n)
                })
            })
    };
    named
        .or_else(torchtune)
        .or_else(per_device)
        .filter(|&n| n > 0)
}

/// The decoder (target) length an encoder–decoder row's notes state:
/// transformers' seq2seq scripts' `max_target_length` (`run_summarization.py`,
/// `run_translation.py`), PEFT's examples' `target_max_length`, or in words
/// ("target length 128", "labels padded to 128", "128 target tokens").
fn stated_target_len(notes: &str) -> Option<u32> {
    let lower = notes.to_ascii_lowercase();
    stated_after(
        &lower,
        &[
            "max_target_length",
            "target_max_length",
            "max_target_len",
            "max target length",
            "target_length",
            "target length",
            "target_len",
            "decoder length",
            "labels padded to",
        ],
    )
    .or_else(|| stated_number(&lower, " target tokens"))
    .filter(|&n| n > 0)
}

/// A `major.minor` version the notes state after `name` ("PEFT 0.21.2").
fn stated_version(notes: &str, name: &str) -> Option<(u32, u32)> {
    let at = notes.find(name)? + name.len();
    release_at(&notes[at..]).map(|(major, minor, _)| (major, minor))
}

/// A `major.minor` release the notes state after any of `names`, at any of
/// their occurrences ("torch.compile … torch 2.4.0": the second).
fn stated_release(notes: &str, names: &[&str]) -> Option<(u32, u32)> {
    stated_full_release(notes, names).map(|(major, minor, _)| (major, minor))
}

/// Task words that name a classification or reward head (no vocabulary
/// logits): which weights train, the row's LoRA columns say.
const CLASSIFIER_TASKS: [&str; 11] = [
    "reward",
    "reward-model",
    "reward-modeling",
    "reward-modelling",
    "rm",
    "classification",
    "text-classification",
    "sequence-classification",
    "seq-cls",
    "token-classification",
    "classifier",
];

/// Whether the notes or the task column describe a model that ends in a
/// classification (or reward) head rather than the language-model head:
/// "classification head", "no LM head", transformers'
/// `AutoModelForSequenceClassification` / `*ForTokenClassification`, a
/// reward model (TRL's `RewardTrainer`, DeepSpeed-Chat's step 2), PEFT's
/// `SEQ_CLS` task.
fn names_classifier_head(notes: &str, task_word: &str) -> bool {
    let lower = notes.to_ascii_lowercase();
    let squashed: String = lower
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    CLASSIFIER_TASKS.contains(&task_word)
        || [
            "classification head",
            "classifier head",
            "no lm head",
            "sequence classification",
            "token classification",
            "reward model",
            "reward trainer",
            "reward modeling",
            "reward modelling",
        ]
        .iter()
        .any(|p| lower.contains(p))
        || [
            "forsequenceclassification",
            "fortokenclassification",
            "rewardtrainer",
            "seqcls",
        ]
        .iter()
        .any(|p| squashed.contains(p))
}

/// Task words that name what a run trains on, not which weights train
/// (the row's LoRA columns say that).
const TRAINING_DATA_TASKS: [&str; 11] = [
    "sft",
    "finetune",
    "fine-tune",
    "fine-tuning",
    "finetuning",
    "instruction-tuning",
    "instruction-tune",
    "dpo",
    "orpo",
    "simpo",
    "kto",
];

/// A precision written as words in any order: fp8 (float8, Transformer
/// Engine), else one 16-bit dtype with autocast ("amp", "mixed", "autocast")
/// or without; `None` when it names both 16-bit dtypes or neither.
fn precision_in_words(p: &str) -> Option<Precision> {
    let words: Vec<&str> = p.split('-').filter(|w| !w.is_empty()).collect();
    let has = |names: &[&str]| words.iter().any(|w| names.contains(w));
    if has(&["fp8", "float8", "transformer"]) {
        return Some(Precision::Fp8);
    }
    let bf16 = has(&["bf16", "bfloat16"]);
    let fp16 = has(&["fp16", "float16", "half"]);
    let mixed = has(&["amp", "mixed", "autocast"]);
    match (bf16, fp16, mixed) {
        (true, false, true) => Some(Precision::AmpBf16),
        (false, true, true) => Some(Precision::AmpFp16),
        (true, false, false) => Some(Precision::Bf16),
        (false, true, false) => Some(Precision::Fp16),
        _ => None,
    }
}

/// A `major.minor[.patch]` release the notes state after any of `names`, at
/// any of their occurrences ("DeepSpeed ZeRO-2 … deepspeed 0.19.8": the
/// second).
fn stated_full_release(notes: &str, names: &[&str]) -> Option<(u32, u32, Option<u32>)> {
    names.iter().find_map(|name| {
        notes
            .match_indices(name)
            .find_map(|(i, _)| release_at(&notes[i + name.len()..]))
    })
}

/// The `major.minor[.patch]` release a text starts with ("0.43.2; …",
/// "v1.0"): the major a whole number, minor and patch their leading digits.
fn release_at(text: &str) -> Option<(u32, u32, Option<u32>)> {
    let digits = |p: &str| -> Option<u32> {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .ok()
    };
    let mut parts = text.trim_start_matches('v').split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = digits(parts.next()?)?;
    Some((major, minor, parts.next().and_then(digits)))
}

/// What the notes give `use_gradient_checkpointing` (lower-cased notes):
/// the text after the name and its `=`, `:` or quotes (`"unsloth"`, `false`).
fn gradient_checkpointing_argument(lower: &str) -> Option<&str> {
    const NAME: &str = "use_gradient_checkpointing";
    lower
        .find(NAME)
        .map(|i| lower[i + NAME.len()..].trim_start_matches([' ', '=', ':', '"', '\'']))
}

/// An FSDP2 run through Accelerate before 1.11 reduced every micro-batch
/// (`lower`: the row's notes, lower-cased):
/// `Accelerator.no_sync` looked for the model's `no_sync` (FSDP1's and DDP's
/// context manager), which an FSDP2 module does not have (torch 2.8.0
/// `FSDPModule`: "`set_requires_gradient_sync` … the equivalence of `no_sync`
/// in FSDP1"), so it entered a null context and `fully_shard` reduce-scattered
/// each backward; 1.11.0 added the branch that calls
/// `set_requires_gradient_sync(False)` (accelerate 1.6.0, 1.8.0 and 1.10.0
/// against 1.11.0, 1.12.0 and 1.16.0 `accelerator.py`).
/// The notes name FSDP2 (or the column says `fsdp2`) and state an Accelerate
/// release before 1.11, or an axolotl release before 0.13 (0.12 pinned
/// `accelerate==1.10.0`, 0.13.2 `1.12.0`). axolotl 0.12's gpt-oss-20b FSDP2
/// README figures (~36 GiB a GPU on 8 × 48 GB accumulating 2 micro-batches)
/// leave no room for the 39 GiB of unsharded gradients `no_sync` keeps.
fn fsdp2_reduced_each_micro_batch(lower: &str, sharding: &str) -> bool {
    let fsdp2 = sharding.trim().eq_ignore_ascii_case("fsdp2")
        || names_tool(lower, &["fsdp2", "fully_shard"])
        || lower.contains("fsdp_version: 2")
        || lower.contains("fsdp_version=2")
        || lower.contains("fsdp_version 2");
    let accelerate = stated_release(lower, &["accelerate ", "accelerate==", "accelerate v"]);
    let axolotl = stated_release(lower, &["axolotl ", "axolotl==", "axolotl v"]);
    fsdp2 && (accelerate.is_some_and(|v| v < (1, 11)) || axolotl.is_some_and(|v| v < (0, 13)))
}

/// A CUDA context larger than this (MiB) was created with eager module
/// loading. PyTorch 1.13 made lazy loading the default
/// (`torch/cuda/__init__.py` sets `CUDA_MODULE_LOADING=LAZY` when unset; 1.12.1
/// does not — both read from the wheels on PyPI), after which a training
/// process holds far less outside the allocator: 767 MiB on the H200 with its
/// kernels loaded (calibration/h200-2026-11-30), 510 MiB for an idle CUDA 12
/// context (fixture smi_table_28). Eagerly, every kernel image is loaded when
/// the context is made: 1343 MiB in the V100 rows of the Trainer's
/// perf_train_gpu_one guide. A run above this predates PyTorch 2.0, so its
/// `zero_grad()` kept the gradients (`set_to_none=False`, the 1.x default in
/// `Module.zero_grad` and `Optimizer.zero_grad`) and AdamW looped per parameter.
const EAGER_MODULE_LOADING_CONTEXT_MIB: u32 = 1024;

/// A number written with a decimal comma (`6,74`), as a spreadsheet in such a
/// locale writes it (with `;` between fields, [`crate::csv::parse`]): one
/// comma between digits, no point.
fn decimal_comma(v: &str) -> Option<f64> {
    let (a, b) = v.split_once(',')?;
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
    (digits(a) && digits(b))
        .then(|| format!("{a}.{b}").parse().ok())
        .flatten()
}

/// Lower-case alphanumeric tokens of a GPU name, without the vendor and
/// product-line words ("NVIDIA GeForce RTX 4090" → `rtx`, `4090`), plus each
/// pair of neighbours joined (`rtx4090`, as catalogue ids spell it).
fn gpu_tokens(s: &str) -> Vec<String> {
    let words = gpu_words(s);
    let mut out = words.clone();
    out.extend(words.windows(2).map(|w| format!("{}{}", w[0], w[1])));
    out
}

fn gpu_words(s: &str) -> Vec<String> {
    const NOISE: [&str; 6] = ["nvidia", "tesla", "geforce", "amd", "instinct", "quadro"];
    s.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty() && !NOISE.contains(w))
        .map(String::from)
        .collect()
}

/// A token that names the chip ("h100", "a6000", "4090", "t4"), not its
/// memory ("80gb"), form factor ("sxm5", "pcie", "hbm3"), or a count ("8x").
fn is_model_token(t: &str) -> bool {
    const FORM: [&str; 10] = [
        "sxm", "sxm2", "sxm3", "sxm4", "sxm5", "pcie", "hbm2", "hbm2e", "hbm3", "hbm3e",
    ];
    let digits = t.chars().filter(|c| c.is_ascii_digit()).count();
    let tail = t.trim_start_matches(|c: char| c.is_ascii_digit());
    // A bare number is a chip only when it has four digits ("4090", "6000");
    // "8" in "8 x A100" and "x8" in "A100 x8" are counts.
    let count = (tail.is_empty() && digits < 4)
        || t.strip_prefix('x')
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    digits > 0 && !count && !FORM.contains(&t) && !matches!(tail, "gb" | "g" | "x" | "gib")
}

/// The memory a GPU's name states, as boards are sold ("80GB", "24G",
/// "11 GB", "96GiB": binary, as nvidia-smi's `memory.total` of an "80GB" A100
/// is 81920 MiB), in GiB.
fn stated_board_gib(gpu: &str) -> Option<f64> {
    let words = gpu_words(gpu);
    words.iter().enumerate().find_map(|(i, w)| {
        let digits = w.len() - w.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let (n, unit) = w.split_at(digits);
        // "11 GB": the number and its unit in two words.
        let unit = if unit.is_empty() {
            words.get(i + 1).map_or("", |u| u.as_str())
        } else {
            unit
        };
        let n: f64 = n.parse().ok()?;
        (matches!(unit, "gb" | "g" | "gib") && n > 0.0).then_some(n)
    })
}

/// The GPU count a free-text GPU column states: "8x H100", "8 × A100",
/// "4*A100", "A100-80GB x8".
fn stated_gpu_count(gpu: &str) -> Option<u32> {
    const TIMES: [char; 4] = ['x', 'X', '×', '*'];
    let t = gpu.trim();
    // Leading: "8x H100".
    let lead = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let trail = t.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let count = if lead > 0 && t[lead..].trim_start().starts_with(TIMES) {
        &t[..lead]
    } else if trail < t.len()
        // Trailing: "A100 x8" — the sign after a space or a dash, not the
        // "X" of a model name ("RTX 4090").
        && t[..trail]
            .trim_end()
            .strip_suffix(TIMES)
            .is_some_and(|s| s.ends_with([' ', '-', '_']))
    {
        &t[trail..]
    } else {
        return None;
    };
    count.parse().ok().filter(|n| *n > 0)
}

/// Why a device the `gpu` column names is not one the model describes: a
/// TPU, Gaudi (HPU), Trainium/Inferentia, Graphcore IPU, Apple silicon (MPS)
/// or the CPU. PyTorch reaches them through XLA, Habana's and Neuron's
/// bridges, MPS or plain host memory, none through the caching allocator
/// (CUDA's, or ROCm's port of it) whose segments and reserve the model
/// counts; Ascend NPUs (torch_npu ports the CUDA allocator) and AMD GPUs are
/// read as GPUs.
fn not_a_gpu(name: &str) -> Option<String> {
    let words = gpu_words(name);
    // `gpu_words` splits at every other character: a prefix names the word.
    let named = |prefixes: &[&str]| {
        words
            .iter()
            .any(|w| prefixes.iter().any(|p| w.starts_with(p)))
    };
    let what = if named(&["tpu"]) {
        "a TPU (XLA's memory)"
    } else if named(&["gaudi", "hpu"]) {
        "a Gaudi HPU (Habana's allocator)"
    } else if named(&["trainium", "inferentia", "trn1", "trn2", "inf2"]) {
        "an AWS Neuron device"
    } else if words.iter().any(|w| w == "ipu") {
        "a Graphcore IPU"
    } else if words.iter().any(|w| matches!(w.as_str(), "apple" | "mps")) {
        "Apple silicon (MPS: unified memory)"
    } else if words.iter().any(|w| w == "cpu")
        && !words.iter().any(|w| w != "cpu" && is_model_token(w))
    {
        "the CPU"
    } else {
        return None;
    };
    Some(format!(
        "gpu `{}` is {what}, not a GPU under PyTorch's CUDA (or ROCm) caching allocator, which the \
         model describes",
        name.trim()
    ))
}

/// Finds the catalogue GPU a free-text name means; else one with the stated capacity.
/// Every chip token of the name must be one of the GPU's (so "H20" is not a
/// GH200); among those, the one sharing most tokens wins (catalogue order on
/// ties); a stated capacity must agree within 10 %.
fn gpu_for(name: &str, mem_gib: Option<f64>) -> GpuSpec {
    let want = gpu_tokens(name);
    let words = gpu_words(name);
    let mut chips: Vec<String> = words
        .iter()
        .filter(|t| is_model_token(t))
        .cloned()
        .collect();
    // The one chip named without a digit: a TITAN, with the word after it
    // (TITAN RTX, TITAN V, TITAN Xp are different boards).
    if let Some(i) = words.iter().position(|w| w == "titan") {
        chips.extend(words[i..].iter().take(2).cloned());
    }
    let cap_mib = mem_gib.map(|g| (g * 1024.0).round() as u64);
    let mut best: Option<(usize, GpuSpec)> = None;
    if !chips.is_empty() {
        for g in gpu::catalogue() {
            let mut have = gpu_tokens(&g.name);
            have.extend(gpu_tokens(&g.id));
            if !chips.iter().all(|c| have.contains(c)) {
                continue;
            }
            // A stated capacity must agree within 10 % (48 GB board ≈ 46068 MiB).
            let cap_ok = cap_mib
                .map(|c| (g.capacity_mib as f64 - c as f64).abs() / (c as f64) < 0.1)
                .unwrap_or(true);
            if !cap_ok {
                continue;
            }
            let score = want.iter().filter(|t| have.contains(t)).count();
            if best.as_ref().is_none_or(|(s, _)| score > *s) {
                best = Some((score, g));
            }
        }
    }
    let best = best.map(|(_, g)| g);
    // Words in brackets are prose around the board's name ("A10G (AWS g5)",
    // "H100 (SXM5, 80 GB)"): when they name no catalogue entry, the name
    // without them may.
    if best.is_none() && name.contains('(') {
        let bare = without_brackets(name);
        if !bare.trim().is_empty() && bare != name {
            let g = gpu_for(&bare, mem_gib);
            if g.id != "custom" {
                return g;
            }
        }
    }
    best.unwrap_or_else(|| GpuSpec {
        id: "custom".into(),
        name: if name.is_empty() {
            "GPU (not stated)".into()
        } else {
            name.into()
        },
        capacity_mib: cap_mib.unwrap_or(80 * 1024),
        bandwidth_gbps: 0.0,
        bf16_tflops: 0.0,
        fp16_tflops: 0.0,
        fp8_tflops: 0.0,
    })
}

/// The text with every bracketed part (and the brackets) left out.
fn without_brackets(text: &str) -> String {
    let mut depth = 0u32;
    text.chars()
        .filter(|c| match c {
            '(' => {
                depth += 1;
                false
            }
            ')' => {
                depth = depth.saturating_sub(1);
                false
            }
            _ => depth == 0,
        })
        .collect()
}

/// Builds the plan a case row describes. Settings the schema does not carry
/// come from the framework profile, as for any user.
fn plan_for(r: &Row) -> Result<Plan, String> {
    // A note in parentheses after the framework ("torchtune (recipe)"), or
    // the tool inside them after `other` ("other (axolotl)").
    let framework_word = r.word("framework");
    let framework_word = match with_note(&framework_word) {
        Some(("" | "other", tool)) => tool.to_string(),
        Some((name, _)) => name.to_string(),
        None => framework_word,
    };
    let framework = match framework_word.as_str() {
        // The Trainer running TRL's trainers ("TRL SFTTrainer"): TRL's profile
        // (the schema has no `trl` value; [`runs_trl`]).
        "hf-trainer" if other_framework(r.get("notes")) == Some(Framework::Trl) => Framework::Trl,
        "hf-trainer" => Framework::HfTrainer,
        "hf-accelerate" => Framework::HfAccelerate,
        "litgpt" => Framework::Litgpt,
        "torchtune" => Framework::Torchtune,
        "torchtitan" => Framework::Torchtitan,
        "deepspeed" => Framework::Deepspeed,
        "megatron" => Framework::Megatron,
        "fsdp-qlora" => Framework::FsdpQlora,
        // A tool the notes name: NeMo and Megatron-Bridge run Megatron-Core;
        // axolotl, LLaMA-Factory, Unsloth, ms-swift and TRL have profiles of
        // their own over transformers' `Trainer`.
        "other" => other_framework(r.get("notes")).unwrap_or(Framework::PlainPytorch),
        "plain-pytorch" | "" => Framework::PlainPytorch,
        // Other names of the schema's frameworks.
        "peft" => Framework::Peft,
        "accelerate" => Framework::HfAccelerate,
        "transformers"
        | "hf-transformers"
        | "huggingface-trainer"
        | "transformers-trainer"
        | "hf-trainer-api"
        | "huggingface"
        | "hugging-face"
        | "hf"
        | "hugging-face-transformers"
        | "trainer" => Framework::HfTrainer,
        "lit-gpt" | "lit-llama" => Framework::Litgpt,
        "torch-titan" => Framework::Torchtitan,
        // Oumi trains through transformers' `Trainer` (or TRL's) by default.
        "oumi" => Framework::HfTrainer,
        // Megatron-DeepSpeed runs Megatron-LM's model code (its ZeRO stage is
        // the sharding column's).
        // EleutherAI's GPT-NeoX library is built on Megatron-DeepSpeed.
        "megatron-lm" | "megatron-deepspeed" | "gpt-neox" | "neox" => Framework::Megatron,
        "deepspeed-chat" | "openrlhf" => Framework::Deepspeed,
        // ms-swift by its command and project names (`swift sft`, ModelScope's
        // SWIFT); the notes need "ms-swift", "swift" being a word of its own.
        "swift" | "modelscope-swift" | "ms-swift" => Framework::MsSwift,
        // A loop of one's own, under torchrun or Lightning, or a PyTorch tool
        // running its own (or the given) model code with the sharding the
        // columns state: nanoGPT, MosaicML's Composer and LLM Foundry,
        // fairseq, Colossal-AI, XTuner (mmengine), verl.
        "pytorch"
        | "torch"
        | "torchrun"
        | "lightning"
        | "pytorch-lightning"
        | "fabric"
        | "lightning-fabric"
        | "pytorch-fsdp"
        | "fsdp"
        | "fsdp2"
        | "pytorch-ddp"
        | "ddp"
        | "nanogpt"
        | "composer"
        | "mosaic-composer"
        | "mosaicml-composer"
        | "llm-foundry"
        | "mosaicml"
        | "llmfoundry"
        | "mosaicml-llm-foundry"
        | "fairseq"
        | "metaseq"
        | "colossalai"
        | "colossal-ai"
        | "xtuner"
        | "mmengine"
        | "verl" => Framework::PlainPytorch,
        // Not PyTorch: XLA's and MLX's memory is not a caching allocator's
        // (JAX preallocates 75 % of the GPU unless told otherwise).
        f @ ("jax" | "flax" | "maxtext" | "levanter" | "t5x" | "paxml" | "praxis" | "easylm"
        | "tensorflow" | "tf" | "keras" | "mlx") => {
            return Err(format!(
                "framework `{f}` is not PyTorch: the model describes PyTorch's allocator (JAX \
                 and TensorFlow preallocate most of the GPU through XLA; MLX runs on Apple's \
                 unified memory)"
            ))
        }
        // A tool written in the column instead of `other` + notes
        // (`axolotl`, `NeMo`): read as the notes would be, and with its
        // hyphens as spaces ("trl-sft", "axolotl-v0.6").
        f => other_framework(f)
            .or_else(|| other_framework(&f.replace('-', " ")))
            .ok_or(format!("framework `{f}` is not in the schema"))?,
    };
    // The preset the model column names (its hub id, or the name as people
    // write it: "TinyLlama-1.1B (litgpt config)", "Llama 2 7B"): it fills
    // architecture columns a row leaves empty, and says what the columns
    // cannot (below).
    let preset = crate::presets::by_name(r.get("model"));
    let named = preset.map(|p| p.spec());
    let from_preset = |col: &str, v: Option<u32>, pick: fn(&ModelSpec) -> u32| {
        v.or(named.as_ref().map(pick)).ok_or_else(|| {
            format!(
                "{col} is empty and `model` ({}) names no preset to take it from",
                r.get("model")
            )
        })
    };
    let arch = match r.word("arch").as_str() {
        "" => named.as_ref().map_or(Arch::Decoder, |m| m.arch),
        "decoder" => Arch::Decoder,
        "encoder" => Arch::Encoder,
        "encoder-decoder" => Arch::EncoderDecoder,
        // The same kinds as people name them (transformers' `AutoModelFor…`
        // heads, "decoder-only", "seq2seq").
        "decoder-only" | "causal-lm" | "causal" | "clm" | "causallm" | "autoregressive" | "gpt" => {
            Arch::Decoder
        }
        "encoder-only" | "masked-lm" | "mlm" | "bert" => Arch::Encoder,
        "seq2seq" | "seq2seq-lm" | "seq-2-seq" | "enc-dec" | "encoder+decoder" | "t5" => {
            Arch::EncoderDecoder
        }
        a => {
            return Err(format!(
                "arch `{a}` is not in the schema (decoder, encoder or encoder-decoder)"
            ))
        }
    };
    let mlp = match r.word("mlp").as_str() {
        "" => named.as_ref().map_or(Mlp::Plain, |m| m.mlp),
        "gated" => Mlp::Gated,
        "plain" => Mlp::Plain,
        // By the activation's name: the GLU family has three matrices
        // (Shazeer 2020, "GLU Variants Improve Transformer"), the rest two.
        "swiglu" | "geglu" | "reglu" | "glu" | "gated-mlp" | "gated-silu" | "gated-gelu"
        | "silu-gated" => Mlp::Gated,
        "gelu" | "gelu-new" | "relu" | "squared-relu" | "mlp" | "standard" | "dense" | "ffn" => {
            Mlp::Plain
        }
        m => return Err(format!("mlp `{m}` is not in the schema (gated or plain)")),
    };
    let layers = from_preset("n_layers", r.u32("n_layers")?, |m| m.layers)?;
    let hidden = from_preset("hidden", r.u32("hidden")?, |m| m.hidden)?;
    let heads = from_preset("n_heads", r.u32("n_heads")?, |m| m.heads)?;
    // Without GQA unless the named preset (with these heads) has it.
    let kv_heads = match (r.u32("n_kv_heads")?, &named) {
        (Some(k), _) => k,
        (None, Some(m)) if m.heads == heads => m.kv_heads,
        (None, _) => heads,
    };
    // The schema has no norm or position column: gated-MLP models are the
    // Llama lineage (RMSNorm, rotary); plain-MLP ones GPT/BERT (LayerNorm);
    // T5-style encoder–decoders use RMS-style norms and relative positions.
    let (norm, positions, linear_bias) = match (arch, mlp) {
        (Arch::EncoderDecoder, _) => (Norm::RmsNorm, Positions::Relative, false),
        (_, Mlp::Gated) => (Norm::RmsNorm, Positions::Rotary, false),
        (Arch::Encoder, Mlp::Plain) => (Norm::LayerNorm, Positions::Learned, true),
        (Arch::Decoder, Mlp::Plain) => (Norm::LayerNorm, Positions::Rotary, true),
    };
    // Empty expert columns are unknown, not dense: the named preset's (a row
    // for gpt-oss-20b that leaves them empty is its 32 experts, 4 a token).
    let experts = match r.u32("n_experts")? {
        Some(n) => n,
        None => named.as_ref().map_or(0, |m| m.experts),
    };
    let experts_per_token = match (r.u32("experts_per_token")?, &named) {
        (Some(k), _) => k,
        (None, Some(m)) if experts > 0 && m.experts == experts => m.experts_per_token,
        (None, _) => 0,
    };
    let mut model = ModelSpec {
        name: r.get("model").to_string(),
        arch,
        layers,
        encoder_layers: if arch == Arch::EncoderDecoder {
            layers
        } else {
            0
        },
        hidden,
        heads,
        kv_heads,
        head_dim: hidden / heads.max(1),
        ffn: from_preset("ffn_hidden", r.u32("ffn_hidden")?, |m| m.ffn)?,
        mlp,
        vocab: from_preset("vocab", r.u32("vocab")?, |m| m.vocab)?,
        tied_embeddings: match r.get("tied_embeddings") {
            "" => named.as_ref().is_some_and(|m| m.tied_embeddings),
            _ => r.bool("tied_embeddings")?,
        },
        norm,
        norms_per_layer: 2,
        positions,
        max_positions: if positions == Positions::Learned {
            512
        } else {
            0
        },
        linear_bias,
        qkv_bias: false,
        experts,
        experts_per_token,
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
    };
    // What the schema's columns cannot say about the architecture (norm kind
    // and how many a block has, positions, biases, parallel blocks,
    // soft-capping, head width, a sliding window) comes from the preset the
    // model column names, when its dimensions agree with the row's; how
    // transformers implements it (fused projections, the Python GELU) only
    // when the column is a hub id (`org/name`, or one word: `gpt2`), the
    // checkpoint transformers loads, or the Trainer runs it: a free-form name
    // ("GPT-2 124M (from scratch)") may be any code.
    let transformers_code =
        !r.get("model").trim().contains(char::is_whitespace) || framework.trains_through_trainer();
    // Whether the named checkpoint's config trains with dropout in its blocks.
    let mut config_dropout = None;
    // The named preset of the row's shape says the rest; a size of a preset
    // family no preset has (Pythia-70M, Falcon-180B) takes its family's
    // implementation, not its dimensions (head width, window). Whether the
    // head width came from a preset of the row's shape:
    let shape = (model.layers, model.hidden, model.arch);
    let head_width_known = match named
        .as_ref()
        .filter(|s| (s.layers, s.hidden, s.arch) == shape)
    {
        Some(s) => {
            config_dropout = preset.map(|p| p.config_dropout());
            copy_implementation(&mut model, s, transformers_code);
            model.sliding_window = s.sliding_window;
            model.head_dim = s.head_dim;
            // Latent attention (DeepSeek-V2/V3): the heads' shape comes with it.
            if s.mla.is_some() && model.heads == s.heads && model.kv_heads == model.heads {
                model.mla = s.mla;
            }
            // An MoE preset's layout the columns cannot hold: its shared
            // experts and dense blocks (DeepSeek-MoE, Llama-4 Maverick), when
            // the row's experts are its routed ones (or routed and shared:
            // "total experts") and its width the experts' (or the dense
            // blocks').
            let experts_agree = model.experts > 0
                && (model.experts == s.experts || model.experts == s.experts + s.shared_experts);
            let width_agrees =
                model.ffn == s.ffn || (s.dense_layers > 0 && model.ffn == s.dense_ffn);
            if s.is_moe() && experts_agree && width_agrees {
                model.experts = s.experts;
                model.ffn = s.ffn;
                model.shared_experts = s.shared_experts;
                model.dense_layers = s.dense_layers;
                model.dense_ffn = s.dense_ffn;
            }
            true
        }
        None => {
            let member = crate::presets::family_member(r.get("model"), model.hidden)
                .filter(|p| p.spec().arch == model.arch);
            if let Some(p) = member {
                config_dropout = Some(p.config_dropout());
                copy_implementation(&mut model, &p.spec(), transformers_code);
            }
            false
        }
    };
    // What the notes state about the implementation.
    let notes = r.get("notes");
    // A fused projection the LoRA targets or the notes name: the model's own
    // code computes q/k/v (or gate/up) in one matmul, which PEFT adapts as one
    // module — for a model no preset describes (ChatGLM's `query_key_value`,
    // Baichuan's `W_pack`, InternLM2's `wqkv`, Qwen 1's `c_attn`, MPT's
    // `Wqkv`). Replayed: MPT-7B with LoRA on every linear, +6.1 % until its
    // one adapter on `Wqkv` was counted as one.
    let targets_and_notes = format!("{} {notes}", r.get("lora_targets"));
    if transformers_code && names_fused_module(&targets_and_notes) {
        model.fused_projections = true;
    }
    // "n_layers is per stack (24 enc + 24 dec)", "12 encoder + 6 decoder".
    if let (Arch::EncoderDecoder, Some((enc, dec))) = (arch, stated_stacks(notes)) {
        model.encoder_layers = enc;
        model.layers = dec;
    }
    // "sequence classification head only (no LM head; no vocab logits)", a
    // reward model, a `*ForSequenceClassification` class, or a task column
    // that names one.
    if names_classifier_head(notes, &r.word("task")) {
        model.head = ModelHead::Classifier;
    }
    // MoE shared experts the schema has no column for ("2 shared experts",
    // `n_shared_experts=2`), counted in routed experts' widths (DeepSeek-MoE's
    // `n_shared_experts` are; Qwen-MoE's one shared expert 4 routed widths wide
    // is "4 shared experts").
    if model.experts > 0 {
        let lower = notes.to_ascii_lowercase();
        let n = stated_number(&lower, " shared expert")
            .or_else(|| stated_after(&lower, &["n_shared_experts", "num_shared_experts"]));
        if let Some(n) = n {
            model.shared_experts = n;
        }
    }
    // A from-scratch model whose LayerNorm / GELU are written as tensor ops
    // ("custom LayerNorm/GELU").
    if notes.contains("custom LayerNorm") {
        model.python_norm = true;
    }
    if notes.contains("custom LayerNorm/GELU") || notes.contains("custom GELU") {
        model.gelu_new = true;
    }
    // A head width the columns cannot give: heads × head width need not be
    // the hidden size (Qwen3, Gemma, ERNIE-4.5, Seed-OSS: 128- or 256-wide
    // heads over a narrower hidden), and the attention's projections — its
    // parameters and its q/k/v activations — follow it. Where no preset of
    // the row's shape says, the stated `params_total` does, when the usual
    // width (hidden / heads) misses it by more than
    // [`HEAD_WIDTH_MISMATCH_PCT`] and a common width
    // ([`COMMON_HEAD_WIDTHS`]) meets it within [`HEAD_WIDTH_MATCH_PCT`].
    // Replayed: Seed-OSS-36B (80 heads of 128 over 5120) −9 … −10 % on every
    // counter with 64-wide heads, ERNIE-4.5-0.3B −8 %.
    if !head_width_known && model.mla.is_none() {
        if let Some(stated) = r.f64("params_total").ok().flatten().filter(|p| *p > 0.0) {
            model.head_dim = head_width_for(&model, stated * 1e9);
        }
    }
    let oom = r.oom().unwrap_or(false);
    // The capacity: the column, else the board size the name states ("RTX
    // 2080 Ti 11GB"), else, on an OOM row, its measurement (the schema's
    // lower bound: the capacity the run hit).
    let mem_gib = match gpu_mem_gib(r.get("gpu_mem_gib"))? {
        Some(g) if !(g.is_finite() && g > 0.0) => {
            return Err(format!(
                "gpu_mem_gib: `{}` is not a capacity (a number of GiB above 0)",
                r.get("gpu_mem_gib")
            ))
        }
        Some(g) => Some(g),
        None => stated_board_gib(r.get("gpu")).or(if oom {
            r.f64("measured_gib").ok().flatten()
        } else {
            None
        }),
    };
    if let Some(why) = not_a_gpu(r.get("gpu")) {
        return Err(why);
    }
    let gpu = gpu_for(r.get("gpu"), mem_gib);

    // Not stated in its column: the count the GPU column may carry ("8x H100").
    let num_gpus = r
        .u32("num_gpus")?
        .or_else(|| stated_gpu_count(r.get("gpu")))
        .unwrap_or(1);
    if num_gpus == 0 {
        return Err("num_gpus is 0: a run has at least one GPU".into());
    }
    let mut plan = Plan {
        model,
        gpu,
        ..Plan::default()
    };
    // On the row's GPU count: a framework may decide its defaults by it
    // (`Framework::default_checkpointing`).
    plan.parallel.num_gpus = num_gpus;
    plan.set_framework(framework);
    // Block dropout (below), from the named checkpoint's config.
    let dropout = plan.dropout_for(config_dropout);
    let t = &mut plan.training;
    t.micro_batch = match r
        .u32("micro_batch")?
        .or_else(|| stated_micro_batch(notes, framework))
    {
        Some(b) => b,
        // An OOM row's lower bound, as for the sequence below.
        None if oom => 1,
        None => return Err("micro_batch is empty (the batch run is unknown)".into()),
    };
    t.seq_len = match r.tokens("seq_len")?.or_else(|| stated_seq_len(notes)) {
        Some(s) => s,
        // An OOM row only needs a lower bound: memory never falls as the
        // sequence grows (tests/properties.rs), so a run that does not fit
        // at one token did not fit at its real length. Its prediction is
        // that lower bound.
        None if oom => 1,
        None => return Err("seq_len is empty (the sequence length run is unknown)".into()),
    };
    if plan.model.arch == Arch::EncoderDecoder {
        // The decoder's own length, when the notes give the labels' length
        // ("max_target_length 128"); seq_len is then the source's.
        t.target_len = stated_target_len(notes);
    }
    t.grad_accum = r.u32("grad_accum")?.unwrap_or(1).max(1);
    // `AMP (bf16)`, `bf16 (mixed)`: the brackets are prose around the name.
    let precision = r.word("precision").replace(['(', ')'], "");
    let precision = precision.trim_matches('-').replace("--", "-");
    t.precision = match precision.as_str() {
        // Not stated: the framework's default (set above).
        "" => t.precision,
        // Beside the schema's names, Lightning Fabric's precision strings
        // (`bf16-mixed`, `bf16-true`, `32-true`), which LitGPT rows quote.
        "fp32" | "32" | "32-true" => Precision::Fp32,
        // Lightning 1.x's `precision=16` is its native AMP in fp16.
        "amp-fp16" | "16-mixed" | "fp16-mixed" | "16" => Precision::AmpFp16,
        "amp-bf16" | "bf16-mixed" => Precision::AmpBf16,
        "bf16" | "bf16-true" => Precision::Bf16,
        "fp16" | "16-true" | "fp16-true" => Precision::Fp16,
        "fp8" => Precision::Fp8,
        // Other spellings of the same policies: TF32 matmuls keep fp32
        // tensors; dtype names alone are pure (`torch_dtype=bfloat16`);
        // "mixed" / "amp" is autocast over fp32 weights.
        "tf32" | "fp32-tf32" | "float32" => Precision::Fp32,
        "mixed-bf16" | "bf16-amp" | "amp-bfloat16" | "bfloat16-mixed" => Precision::AmpBf16,
        "mixed-fp16" | "fp16-amp" | "amp-float16" | "float16-mixed" => Precision::AmpFp16,
        "bfloat16" | "pure-bf16" => Precision::Bf16,
        "float16" | "half" | "pure-fp16" => Precision::Fp16,
        "float8" | "fp8-mixed" | "fp8-e4m3" | "fp8-hybrid" | "float8-e4m3fn" => Precision::Fp8,
        // Lightning Fabric's `transformer-engine` precision: Transformer
        // Engine's fp8 matmuls over bf16 weights (`TransformerEnginePrecision`,
        // weights dtype bfloat16 by default).
        "transformer-engine" | "transformer-engine-float16" => Precision::Fp8,
        // Autocast named without its dtype: PyTorch's CUDA default is fp16
        // (`torch.autocast("cuda")`, `torch.cuda.amp.autocast()`).
        "amp" | "mixed" | "autocast" | "mixed-precision" => Precision::AmpFp16,
        // Other orders of the same words ("bfloat16 AMP", "mixed precision
        // bf16", "fp8 (transformer engine)"): one dtype named, with or
        // without autocast.
        p => precision_in_words(p).ok_or(format!("precision `{p}` is not in the schema"))?,
    };
    t.optimizer = match r.word("optimizer").as_str() {
        // Adam keeps the same two moments as AdamW (torch.optim state dicts).
        "adamw" | "adam" | "" => Optimizer::Adamw,
        "adamw-8bit" | "adamw8bit" | "adam-8bit" => Optimizer::Adamw8bit,
        "paged-adamw" | "paged-adamw-32bit" => Optimizer::PagedAdamw,
        "paged-adamw-8bit" => Optimizer::PagedAdamw8bit,
        "adafactor" => Optimizer::Adafactor,
        "sgd" => Optimizer::Sgd,
        "sgd-momentum" => Optimizer::SgdMomentum,
        "lion" => Optimizer::Lion,
        // Beyond the schema's names: optimizers the model knows by name.
        "muon" => Optimizer::Muon,
        "adan" => Optimizer::Adan,
        // PEFT's LoRA-FA optimizer is AdamW over B (the A matrices are frozen:
        // the LoRA variant below).
        "other" if notes.contains("LoRA-FA") => Optimizer::Adamw,
        "other" => other_optimizer(notes).ok_or(
            "optimizer `other` cannot be modelled without its state size (modelled when the notes \
             name Muon, Adan, GaLore, APOLLO, Adam-mini, RMSprop, Adagrad, CAME, Sophia, schedule-free AdamW, \
             LAMB, Prodigy, AdEMAMix, LOMO, AdaLomo or Adam)",
        )?,
        // Another name for one the model knows: transformers' `optim` ids
        // (`adamw_torch_fused`, `adamw_bnb_8bit`, `paged_adamw_32bit`,
        // `lion_32bit`), or an optimizer named by its states.
        o => named_optimizer(o).ok_or(format!("optimizer `{o}` is not in the schema"))?,
    };
    t.optimizer_in_backward = r.bool("optimizer_in_backward")?;
    // LOMO and AdaLomo step each parameter as its gradient is made.
    if matches!(t.optimizer, Optimizer::Sgd | Optimizer::Adafactor)
        && fused_update_optimizer(&format!("{} {}", r.get("optimizer"), notes)).is_some()
    {
        t.optimizer_in_backward = true;
    }
    if t.optimizer.projects_gradients() {
        let lower = format!("{} {}", notes, r.get("optimizer")).to_ascii_lowercase();
        // `optim_args="rank=64"`, "GaLore rank 512"; else transformers' 128.
        t.galore_rank = stated_after(&lower, &["galore_rank", "galore rank", "rank"])
            // APOLLO-Mini is APOLLO at rank 1.
            .or_else(|| (t.optimizer == Optimizer::Apollo && lower.contains("mini")).then_some(1));
        // transformers' `*_layerwise` GaLore steps each parameter from a
        // post-accumulate-grad hook: the optimizer in backward.
        if lower.contains("layerwise") || lower.contains("layer-wise") {
            t.optimizer_in_backward = true;
        }
    }
    let ckpt_column = r.word("activation_checkpointing");
    let every_k = checkpoint_every_k(&ckpt_column);
    t.checkpointing = match ckpt_column.as_str() {
        "none" | "false" | "no" | "off" | "0" => Checkpointing::None,
        "full"
        | "true"
        | "yes"
        | "on"
        | "1"
        // LitGPT's `activation_checkpointing_policy={Block}`: every block.
        | "block"
        | "every-layer"
        | "every-block"
        | "gradient-checkpointing"
        | "activation-checkpointing"
        | "recompute"
        | "full-recompute" => Checkpointing::Full,
        // Unsloth's offloading checkpointing, named in the column, and
        // checkpointing with the kept inputs on the host by its own names
        // (torchtune's `enable_activation_offloading`): below.
        "unsloth" | "offload" | "offloaded" | "full-offload" | "cpu-offload" => {
            Checkpointing::Full
        }
        "selective-op" | "op-selective" | "per-op" | "op" | "per-op-selective"
        | "selective-per-op" => Checkpointing::OpSelective,
        // Full recomputation of every k-th block ("every 2 layers", "every
        // other block"; torchtitan's `selective_ac_option = "2"`, Megatron's
        // `--recompute-num-layers`): `checkpoint_every` below.
        _ if every_k.is_some() => Checkpointing::Full,
        // torchtitan's "selective" is its per-op policy (`SelectiveAC`, the
        // default in 0.3.0; `selective_ac_option = "op"` in its Llama configs);
        // elsewhere it is Megatron's attention-core recomputation.
        "selective" if framework == Framework::Torchtitan => Checkpointing::OpSelective,
        "selective" => Checkpointing::Selective,
        // TRL before 0.22 left checkpointing off, as the Trainer does.
        "" if framework == Framework::Trl
            && stated_trl_release(notes).is_some_and(|v| v < (0, 22, 0)) =>
        {
            Checkpointing::None
        }
        "" => t.checkpointing,
        c => {
            return Err(format!(
                "activation_checkpointing `{c}` is not in the schema"
            ))
        }
    };
    if let Some(k) = every_k {
        t.checkpoint_every = k;
    }
    t.activation_offload = r.bool("activation_offload")?;
    let lower = notes.to_ascii_lowercase();
    // Unsloth's own checkpointing (`use_gradient_checkpointing="unsloth"`)
    // moves each checkpointed block input to host memory and back for its
    // recomputation: checkpointing with the activations offloaded.
    let ckpt_argument = gradient_checkpointing_argument(&lower);
    let unsloth_ckpt = ckpt_argument.is_some_and(|a| a.starts_with("unsloth"));
    // It is Unsloth's default (`use_gradient_checkpointing = "unsloth"` in
    // `FastLanguageModel.from_pretrained` and `get_peft_model`, unsloth
    // 2026.3.4 `models/loader.py`, `models/llama.py`): a row naming Unsloth
    // (or whose framework column is `unsloth`) that states neither the column
    // nor the argument runs it.
    let unsloth_default = ckpt_column.is_empty()
        && ckpt_argument.is_none()
        && (framework == Framework::Unsloth
            || lower
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == "unsloth"));
    // The argument stated off (`use_gradient_checkpointing=False`) where the
    // column is empty: no checkpointing, whatever the profile's default.
    if ckpt_column.is_empty() && ckpt_argument.is_some_and(|a| a.starts_with("false")) {
        t.checkpointing = Checkpointing::None;
    }
    if unsloth_ckpt
        || unsloth_default
        || lower.contains("unsloth gradient checkpointing")
        || matches!(
            ckpt_column.as_str(),
            "unsloth" | "offload" | "offloaded" | "full-offload" | "cpu-offload"
        )
    {
        t.activation_offload = true;
        if t.checkpointing == Checkpointing::None {
            t.checkpointing = Checkpointing::Full;
        }
    }
    // Liger Kernel / Unsloth: fused norm and SwiGLU kernels.
    if lower.contains("liger") || lower.contains("unsloth") {
        t.fused_kernels = true;
    }
    // "zero_grad(set_to_none=False)", as PyTorch < 2.0 did by default; a
    // stated PyTorch 1.x also ran AdamW's per-parameter loop (its `foreach`
    // defaulted to False until 2.0's `_default_to_fused_or_foreach`).
    // A stated CUDA context beyond what lazy module loading leaves means the
    // kernels were loaded eagerly, as before PyTorch 1.13
    // ([`EAGER_MODULE_LOADING_CONTEXT_MIB`]): a PyTorch 1.x run.
    let eager_context = stated_number(notes, "MiB CUDA context")
        .is_some_and(|mib| mib > EAGER_MODULE_LOADING_CONTEXT_MIB);
    let torch_1 = ["torch 1.", "PyTorch 1.", "pytorch 1."]
        .iter()
        .any(|k| notes.contains(k))
        || eager_context;
    if notes.contains("set_to_none=False") || torch_1 {
        t.zero_grad_set_to_none = false;
    }
    if torch_1 {
        t.optimizer_impl = OptimizerImpl::ForLoop;
    }
    // The release the notes state; a PyTorch 1.x run of unknown minor (an
    // eagerly loaded context, a bare "PyTorch 1.x") as 1.10 or older, whose
    // softmax keeps more — the safe side, as for bitsandbytes' releases.
    let torch_release = stated_release(notes, &["torch ", "torch==", "PyTorch ", "pytorch "]);
    t.pytorch = match torch_release {
        Some((major, minor)) => PytorchRelease::of(major, minor),
        None if torch_1 => PytorchRelease::V1_10OrOlder,
        None => PytorchRelease::Current,
    };
    // The transformers release the notes state ("transformers 4.46.3",
    // "transformers==4.47.1"); unstated, the current one's loss.
    let transformers_release = stated_release(
        notes,
        &["transformers ", "transformers==", "transformers v"],
    );
    t.transformers = transformers_release.map_or(TransformersRelease::Current, |(major, minor)| {
        TransformersRelease::of(major, minor)
    });
    let kbit_prep_stated = stated_kbit_prep(&lower);
    if let Some(prep) = kbit_prep_stated {
        t.kbit_fp32_prep = prep;
    }
    t.sync_each_batch = notes.contains("sync_each_batch")
        || fsdp2_reduced_each_micro_batch(&lower, r.get("sharding"));
    // Stated, else the profile's (the tools built on the Trainer set it).
    t.nf4_double_quant = stated_double_quant(notes).unwrap_or(t.nf4_double_quant);
    // A bit-width column that names the double quantization ("nf4-dq").
    let bits_word = r.word("base_weight_bits");
    if bits_word.contains("-dq") || bits_word.contains("+dq") || bits_word.contains("double") {
        t.nf4_double_quant = true;
    }
    t.bnb_0_43_2 = runs_bnb_0_43_2(notes, transformers_release)
        || (framework == Framework::Litgpt && litgpt_pins_new_bnb(&lower));
    // The optimizer implementation the notes name: transformers' own AdamW
    // (`adamw_hf`) loops over parameters; `adamw_torch_fused` / "fused AdamW"
    // is the fused kernel; `adamw_torch` / foreach the multi-tensor one.
    // The optimizer column may hold the `optim` id itself.
    let named = format!("{notes} {}", r.get("optimizer").replace('-', "_"));
    if named.contains("adamw_hf") {
        t.optimizer_impl = OptimizerImpl::ForLoop;
    } else if named.contains("adamw_torch_fused")
        || named.contains("fused AdamW")
        || named.contains("fused=True")
    {
        t.optimizer_impl = OptimizerImpl::Fused;
    } else if named.contains("adamw_torch") || named.contains("foreach") {
        t.optimizer_impl = OptimizerImpl::Foreach;
    } else if framework.trains_through_trainer()
        && t.optimizer == Optimizer::Adamw
        && !named.contains("fused")
    {
        // No kernel named: the Trainer's default for the releases the notes
        // state ("transformers 4.44.2", "torch 2.4.0"), else the profile's.
        let transformers = stated_release(notes, &["transformers ", "transformers=="]);
        if let Some(k) = Framework::trainer_default_optimizer_impl(transformers, torch_release) {
            t.optimizer_impl = k;
        }
    }
    t.compile = r.bool("compile")? && compiled_by_inductor(notes);
    // The named checkpoint's config says whether its blocks drop out (GPT-2,
    // BERT, T5, OPT, BART: 0.1; GPT-NeoX, GPT-J, BLOOM, Falcon, Phi and the
    // Llama lineage: 0.0); a model no preset describes is read by its era's
    // habit, which its positions tell: the learned- and relative-position
    // families (GPT-2, BERT, OPT, BART, StarCoder 1, T5) ship 0.1, the
    // rotary and ALiBi ones (GPT-NeoX on, StarCoder2, MPT, Cohere, the Llama
    // lineage) 0.0 — unless the framework runs its own model code without
    // dropout layers (LitGPT, torchtitan, torchtune). Replayed: StarCoder2-3B,
    // no preset, kept 3 % less than with dropout masks.
    t.dropout = dropout;
    // A plain PyTorch or Accelerate loop runs whatever model implementation it
    // is given: a model named by its Hugging Face hub id (`org/name`) is the
    // transformers implementation, which upcasts softmax and logits to fp32.
    if matches!(framework, Framework::PlainPytorch | Framework::HfAccelerate) {
        t.fp32_upcasts = r.get("model").contains('/');
    }
    t.attention = match r.word("attention").as_str() {
        "eager" => Attention::Eager,
        // Not stated, and transformers' code for a family it gives no SDPA
        // path runs eager ([`without_sdpa_in_transformers`]).
        "" if framework.runs_the_models_own_code()
            && without_sdpa_in_transformers(&r.get("model").to_ascii_lowercase()) =>
        {
            Attention::Eager
        }
        // SDPA's math backend ("sdpa (math)") and attention written as
        // matmuls and a softmax materialise the scores as eager does.
        a if a.contains("math") || a.contains("eager") || matches!(a, "manual" | "naive") => {
            Attention::Eager
        }
        _ => Attention::Flash,
    };
    t.padded = stated_padding(&lower);
    let loss_column = r.word("loss");
    t.loss = match loss_name(&loss_column).unwrap_or(loss_column.as_str()) {
        "standard" => Loss::Standard,
        // Cut Cross-Entropy names itself; a fused loss the column could only
        // call "chunked" or leave unknown.
        "chunked" | "unknown" | "" if fused_linear_ce(&lower) => Loss::Fused,
        "fused" => Loss::Fused,
        "chunked" => match framework {
            // Liger's / Unsloth's loss is a fused linear + cross-entropy.
            _ if t.fused_kernels => Loss::Fused,
            Framework::Litgpt => Loss::ChunkedKeep,
            _ => Loss::ChunkedFree,
        },
        _ => t.loss,
    };
    // A task left empty is LoRA when a rank or targets are stated.
    // A note in parentheses after the task ("LoRA (4-bit)": the bit width
    // is the base_weight_bits column's).
    let task_word = r.word("task");
    let task_word = match with_note(&task_word) {
        Some((task, _)) if !task.is_empty() => task.to_string(),
        _ => task_word,
    };
    let lora_stated = !r.get("lora_rank").is_empty() || !r.get("lora_targets").is_empty();
    let task = match task_word.as_str() {
        "" if lora_stated => "lora",
        "" => "full",
        // Other names of the schema's tasks: every weight trained, whatever
        // the data; a LoRA variant; a 4-bit base; a PEFT method by name.
        "pretrain"
        | "pretraining"
        | "pre-training"
        | "continued-pretraining"
        | "full-sft"
        | "full-finetune"
        | "full-fine-tune"
        | "full-ft" => "full",
        // What the run trains on, not which weights: LoRA where the row
        // gives a LoRA rank or targets, else every weight (RL and `peft`
        // only with LoRA columns).
        t if TRAINING_DATA_TASKS.contains(&t) || CLASSIFIER_TASKS.contains(&t) => {
            if lora_stated {
                "lora"
            } else {
                "full"
            }
        }
        "grpo" | "ppo" | "rlhf" | "peft" if lora_stated => "lora",
        // LoRA+ trains the same matrices at two learning rates.
        "dora" | "lora-fa" | "rslora" | "lora+" | "loraplus" | "lora-plus" => "lora",
        "q-lora" | "qdora" => "qlora",
        // QLoRA with its base's format, what the run trained on or the
        // library ("qlora-nf4", "sft-qlora", "peft-qlora").
        t if t.split('-').any(|w| w == "qlora") => "qlora",
        t if GENERIC_ADAPTER_TASKS.contains(&t)
            || t == "adapter"
            || named_adapter_method(t).is_some() =>
        {
            "other-peft"
        }
        t => t,
    };
    // Not stated: QLoRA's 4-bit NF4 base (Dettmers et al. 2023), else 16-bit.
    let base_bits = r
        .bits("base_weight_bits")?
        .unwrap_or(if task == "qlora" { 4 } else { 16 });
    // A task column that names a method or variant is read as the notes would
    // be; a bare `adapter` is LitGPT's (`finetune_adapter`: LLaMA-Adapter).
    let notes_and_task = match task_word.as_str() {
        "" | "full" | "lora" | "qlora" | "other-peft" => notes.to_string(),
        "adapter" => format!("{notes} llama-adapter"),
        named => format!("{notes} {named}"),
    };
    let notes = notes_and_task.as_str();
    t.finetune = match task {
        "full" => Finetune::Full,
        "lora" | "qlora" => Finetune::Lora {
            // Not stated: the framework's defaults.
            rank: r.u32("lora_rank")?.unwrap_or(framework.lora_defaults().0),
            targets: match r.get("lora_targets") {
                "" => framework.lora_defaults().1,
                t => parse_targets("lora_targets", t)
                    .map_err(|e| format!("lora_targets: {}", e.reason))?,
            },
            base_bits,
            // No column states it: the notes may ("dropout 0.1",
            // "lora_dropout=0.05"), else the framework's default.
            dropout: stated_dropout(notes).unwrap_or(framework.defaults().lora_dropout),
            variant: if notes.contains("LoRA-FA") || task_word == "lora-fa" {
                LoraVariant::LoraFa
            } else if notes.contains("DoRA")
                || notes.contains("use_dora")
                || matches!(task_word.as_str(), "dora" | "qdora")
            {
                LoraVariant::Dora
            } else {
                LoraVariant::Lora
            },
        },
        "other-peft" => {
            let method = named_adapter_method(notes).unwrap_or(AdapterMethod::Generic);
            // Prompt tuning: "200 virtual tokens prepended".
            let virtual_tokens = stated_number(notes, "virtual tokens").unwrap_or(0);
            // Not stated: the count the method's defaults give on this model
            // (LLaMA-Adapter, IA³, LN tuning, prefix tuning), as PEFT's or
            // LitGPT's trainable-parameter print would report it.
            let trainable_params = match r.f64("trainable_params")? {
                Some(m) => (m * 1e6).round() as u64,
                None => method
                    .default_trainable_params(&plan.model, virtual_tokens)
                    .ok_or(
                        "trainable_params is empty for an other-peft row, and the method's \
                         count does not follow from the model's shape",
                    )?,
            };
            Finetune::Adapter {
                trainable_params,
                base_bits,
                method,
                virtual_tokens,
                // "… on q+v": the adapted matrices, else PEFT's default.
                targets: stated_targets(notes).unwrap_or(LoraTargets::QV),
            }
        }
        k => return Err(format!("task `{k}` is not in the schema")),
    };
    if matches!(t.finetune, Finetune::Full) {
        t.frozen_layers = stated_frozen_layers(notes).unwrap_or(0);
    }
    t.objective = stated_objective(notes);
    // TRL's `precompute_ref_log_probs` named without a no ("precompute_ref_log_probs",
    // "precompute_ref_log_probs=True"; not "=False").
    t.precompute_ref = lower.contains("precompute_ref_log_probs")
        && stated_flag(&lower, "precompute_ref_log_probs") != Some(false);
    // A CUDA context the source measured ("incl. ~1343 MiB CUDA context": CUDA
    // before lazy module loading) replaces the default, as a user would enter it.
    if let Some(mib) = stated_number(notes, "MiB CUDA context") {
        plan.runtime.cuda_context_mib = mib.into();
    }
    // The allocator's setting, as the run's environment gave it.
    plan.runtime.expandable_segments = stated_expandable_segments(&lower);
    let p = &mut plan.parallel;
    p.num_gpus = num_gpus;
    p.tp = r.u32("tp")?.unwrap_or(1).max(1);
    p.pp = r.u32("pp")?.unwrap_or(1).max(1);
    p.cp = r.u32("cp")?.unwrap_or(1).max(1);
    // What the schema has no column for, as the notes state it: sequence
    // parallelism (else the framework's default, from `set_framework`), the
    // expert-parallel degree, the interleaved schedule's model chunks.
    if stated_sequence_parallel(notes) {
        p.sequence_parallel = true;
    }
    if let Some(ep) = stated_degree(notes, &["EP", "expert parallel", "expert-parallel"]) {
        p.ep = ep;
    }
    // GPUs per node, where the notes say (only HSDP's shard group depends on
    // it), and HSDP's shard group where they name it ([`stated_node`]).
    if let Some(n) = stated_node(&format!("{notes}; {}", r.get("num_gpus")), p.num_gpus) {
        p.gpus_per_node = n;
    }
    if let Some(n) = stated_after(&lower, &HSDP_SHARD_GROUP) {
        // The model shards HSDP within a node of `gpus_per_node` GPUs over
        // TP × PP: the stated group is that node.
        let node = n
            .max(1)
            .checked_mul(p.tp)
            .and_then(|n| n.checked_mul(p.pp))
            .filter(|&n| n <= p.num_gpus);
        if let Some(node) = node {
            p.gpus_per_node = node;
        }
    }
    if let Some(v) =
        stated_degree(notes, &["VPP", "virtual pipeline", "virtual stages"]).filter(|_| p.pp > 1)
    {
        p.virtual_stages = v;
        p.pp_schedule = crate::plan::PipelineSchedule::Interleaved;
    }
    if p.pp > 1 {
        let stated = stated_pipeline_microbatches(notes, plan.training.micro_batch, p.dp());
        // Neither the notes nor the gradient-accumulation column: at least as
        // many micro-batches as stages, which a pipelined run needs to keep
        // every stage busy (fewer leave 1F1B's warm-up idle), so the first
        // stage holds `pp` in flight, the schedule's steady state.
        let unstated = r.get("grad_accum").is_empty();
        p.pp_microbatches = stated.unwrap_or(if unstated { p.pp } else { 0 });
    }
    p.sharding = match r.word("sharding").as_str() {
        "" if p.num_gpus / (p.tp * p.pp * p.cp).max(1) <= 1 => Sharding::None,
        // Data parallel across GPUs, not stated: what the framework's
        // multi-GPU launch does by default.
        // DDP for Trainer/Accelerate/torchrun loops, DeepSpeed's default
        // ZeRO stage 0 and Megatron without the distributed optimizer.
        "" if shards_with_fsdp(framework) => Sharding::FsdpFull,
        "" => Sharding::Ddp,
        // A strategy with a note in parentheses: the one named inside ("FSDP
        // (SHARD_GRAD_OP)"), else the one outside ("fsdp (8 GPUs)").
        s => sharding_word(s)
            .or_else(|| in_parentheses(s, sharding_word))
            .ok_or(format!("sharding `{s}` is not in the schema"))?,
    };
    // Megatron's distributed optimizer (`--use-distributed-optimizer`) shards
    // the fp32 master weights and Adam states over the data-parallel ranks —
    // ZeRO-1's layout — where the column could only say data parallelism.
    if framework == Framework::Megatron
        && p.sharding == Sharding::Ddp
        && stated_distributed_optimizer(notes)
    {
        p.sharding = Sharding::Zero1;
    }
    if p.sharding == Sharding::Ddp && stated_bucket_view(notes) {
        p.gradient_as_bucket_view = true;
    }
    // The DeepSpeed release the notes state ("deepspeed 0.19.8", "DeepSpeed
    // v0.9.5"); else that of the PyTorch they state — DeepSpeed 0.18.3 came
    // out in December 2025 and 0.19.0 in May 2026 (their sdists' dates on
    // PyPI), beside PyTorch 2.10 and 2.11; else the current one, as for
    // PyTorch's.
    p.deepspeed = match stated_full_release(&lower, &["deepspeed ", "deepspeed=="]) {
        Some((major, minor, patch)) => DeepspeedRelease::of(major, minor, patch),
        None => match torch_release {
            Some(v) if v < (2, 10) => DeepspeedRelease::V0_18_2OrOlder,
            Some((2, 10)) => DeepspeedRelease::V0_18_3To0_18,
            None if torch_1 => DeepspeedRelease::V0_18_2OrOlder,
            _ => DeepspeedRelease::Current,
        },
    };
    // A sharding column that says "offload" ("ZeRO-2 offload", "zero3-offload")
    // where the offload column is empty: DeepSpeed's ZeRO-Offload moves the
    // optimizer to the host (stage 1/2); transformers' "ZeRO-3 Offload"
    // config moves the parameters too.
    let sharding_offload = r.word("sharding").contains("offload");
    // The device in parentheses after what went ("optimizer (nvme)"): the
    // host unless it names NVMe.
    let offload_word = r.word("offload");
    let (offload_word, nvme) = match with_note(&offload_word) {
        Some((what, device)) if !what.is_empty() => (what.to_string(), device.contains("nvme")),
        _ => (offload_word, false),
    };
    p.offload = match offload_word.as_str() {
        "" if sharding_offload && p.sharding == Sharding::Zero3 => Offload::ALL_CPU,
        "" if sharding_offload && matches!(p.sharding, Sharding::Zero1 | Sharding::Zero2) => {
            Offload::OPTIMIZER_CPU
        }
        "none" | "" => Offload::NONE,
        "optimizer" => Offload::OPTIMIZER_CPU,
        "params+optimizer" | "optimizer+params" => Offload::ALL_CPU,
        // FSDP's `CPUOffload(offload_params=True)` moves the parameters, their
        // gradients and so the optimizer step to the CPU; DeepSpeed's names.
        "params" | "param" | "parameters" | "offload-params" | "cpu-offload-params" => {
            Offload::ALL_CPU
        }
        "optimizer-cpu" | "cpu-optimizer" | "offload-optimizer" | "optimizer-states"
        | "optimizer:cpu" | "optimizer-to-cpu" => Offload::OPTIMIZER_CPU,
        // ZeRO-Offload (Ren et al. 2021): the optimizer's states, gradients
        // and update on the host, the parameters on the GPU.
        "zero-offload" => Offload::OPTIMIZER_CPU,
        o => {
            return Err(format!(
                "offload `{o}` is not in the schema (none, optimizer or params+optimizer)"
            ))
        }
    };
    if nvme {
        for d in [&mut p.offload.optimizer, &mut p.offload.params] {
            if *d == OffloadDevice::Cpu {
                *d = OffloadDevice::Nvme;
            }
        }
    }
    // Parameters offloaded where the sharding column cannot hold them: under
    // ZeRO-1/2 DeepSpeed ignores `offload_param` (it builds those stages
    // without it, deepspeed 0.19.8 `runtime/zero/config.py`: "Valid only
    // with stage 3"), so the optimizer alone went to the host; with no
    // sharding or plain data parallelism, the only runtimes that offload
    // parameters shard them too — FSDP where the framework shards with it,
    // in a plain PyTorch loop (its own) or where the notes name it, else
    // DeepSpeed's ZeRO-3 — and the column named the layout the run saw, not
    // its runtime.
    if p.offload.params_offloaded() && !p.sharding.shards_params() {
        if matches!(p.sharding, Sharding::Zero1 | Sharding::Zero2) {
            p.offload.params = OffloadDevice::None;
        } else if shards_with_fsdp(framework)
            || framework == Framework::PlainPytorch
            || lower.contains("fsdp")
        {
            p.sharding = Sharding::FsdpFull;
        } else {
            p.sharding = Sharding::Zero3;
        }
    }
    // A row that runs TRL's trainers, with the TRL release its notes state.
    let trl = runs_trl(plan.framework, notes).then(|| stated_trl_release(notes));
    let trl_prepares = trl.and_then(|release| {
        trl_kbit_preparation(release, &plan.training, kbit_prep_stated.is_some())
    });
    if let Some((prep, embeddings_16bit)) = trl_prepares {
        plan.training.kbit_fp32_prep = prep;
        plan.training.kbit_embeddings_16bit = embeddings_16bit;
    }
    if lower.contains("peft_module_casting_to_bf16") {
        plan.training.kbit_embeddings_16bit = true;
    }
    // TRL's own fused LM head from 1.15.0: a row stating such a release
    // computes its loss there whatever the loss column calls it (TRL refuses
    // Liger's fused cross-entropy beside it); any other TRL row took the
    // model's logits, as the Trainer does, unless its column says otherwise.
    // From 1.7.0 to 1.14 its `SFTTrainer` defaulted to its chunked NLL
    // unless Liger was on or the notes name `loss_type` "nll". Its ORPO and
    // CPO trainers never took the fused head ([`Plan::default_loss`]).
    if let Some(release) = trl {
        let own_head = !fused_linear_ce(&lower) && plan.training.objective != Objective::Orpo;
        let chunked_nll = plan.training.objective == Objective::Sft
            && release.is_some_and(|v| (TRL_CHUNKED_NLL..TRL_FUSED_LM_HEAD).contains(&v))
            && !lower.contains("liger")
            && !stated_nll_loss_type(&lower);
        if own_head && release.is_some_and(|v| v >= TRL_FUSED_LM_HEAD) {
            plan.training.loss = Loss::TiledLogprob;
        } else if own_head && chunked_nll {
            plan.training.loss = Loss::ChunkedNll;
        } else if matches!(plan.training.loss, Loss::TiledLogprob | Loss::ChunkedNll) {
            plan.training.loss = Loss::Standard;
        }
        // Its log-probabilities' Triton kernel from 1.14.0; an unstated
        // release is read as an earlier one, as for its k-bit preparation.
        plan.training.logprob_kernel = release.is_some_and(|v| v >= TRL_LOGPROB_KERNEL);
    }
    plan.training.adapters_16bit = stated_flag(&lower, "autocast_adapter_dtype") == Some(false)
        || trl.flatten().is_some_and(|release| {
            trl_adapters_16bit(release, &plan.training, plan.parallel.sharding)
        });
    // An unstated policy under PEFT's k-bit preparation: checkpointed, as
    // `prepare_model_for_kbit_training` leaves the model (`Plan::default_checkpointing`);
    // not under TRL, which hands it its own `gradient_checkpointing` argument.
    if ckpt_column.is_empty() && plan.kbit_preparation_checkpoints() && trl_prepares.is_none() {
        plan.training.checkpointing = Checkpointing::Full;
    }
    Ok(plan)
}

/// Windows-1252's characters for the bytes 0x80–0x9F (the rest of the code
/// page is Latin-1: byte = code point); undefined bytes stay U+FFFD.
const CP1252_HIGH: [char; 32] = [
    '€', '\u{fffd}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{fffd}', 'Ž',
    '\u{fffd}', '\u{fffd}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{fffd}',
    'ž', 'Ÿ',
];

/// A case file's bytes as text, and the encoding it was read in when that was
/// not UTF-8: UTF-16 with its byte-order mark (Excel's "Unicode text",
/// PowerShell's `>`), else — bytes that are not UTF-8 — Windows-1252, the
/// code page Excel's plain "CSV" is saved in on Western Windows. The schema's
/// columns are ASCII, so only free text (notes, model names) depends on it.
pub fn decode_case_file(bytes: &[u8]) -> (String, Option<&'static str>) {
    match bytes {
        [0xFF, 0xFE, rest @ ..] => {
            let t = crate::trace::utf16_to_utf8(rest, true);
            (String::from_utf8_lossy(&t).into_owned(), Some("UTF-16LE"))
        }
        [0xFE, 0xFF, rest @ ..] => {
            let t = crate::trace::utf16_to_utf8(rest, false);
            (String::from_utf8_lossy(&t).into_owned(), Some("UTF-16BE"))
        }
        _ => match std::str::from_utf8(bytes) {
            Ok(t) => (t.to_string(), None),
            Err(_) => {
                let t = bytes
                    .iter()
                    .map(|&b| match b {
                        0x80..=0x9F => CP1252_HIGH[(b - 0x80) as usize],
                        _ => b as char,
                    })
                    .collect();
                (t, Some("Windows-1252"))
            }
        },
    }
}

/// What the notes say of the 4-bit base's scales being quantized too:
/// QLoRA's "double quant(ization)", LitGPT's `nf4-dq`, bitsandbytes'
/// `bnb_4bit_use_double_quant=True` say so, `=False` (or LLaMA-Factory's
/// `double_quantization: false`) says not; `None` when they say nothing.
fn stated_double_quant(notes: &str) -> Option<bool> {
    let lower = notes.to_ascii_lowercase().replace([' ', '-'], "_");
    for name in ["use_double_quant", "double_quantization"] {
        if let Some(i) = lower.find(name) {
            let rest = lower[i + name.len()..].trim_start_matches(['=', ':', '_']);
            if rest.starts_with("false") || rest.starts_with('0') {
                return Some(false);
            }
            if name == "use_double_quant" {
                return Some(true);
            }
        }
    }
    (lower.contains("double_quant") || lower.contains("nf4_dq") || lower.contains("doublequant"))
        .then_some(true)
}

/// The transformers major release from which its 4-bit loader refuses a
/// bitsandbytes older than 0.46.1 (`BITSANDBYTES_MIN_VERSION = "0.46.1"`,
/// transformers 5.0.0 `utils/import_utils.py`, checked by
/// `quantizer_bnb_4bit.py`; 4.44–4.57 asked for 0.41.3 at the least): a row
/// that states transformers 5 ran a bitsandbytes whose 4-bit matmul saves
/// no input ([`runs_bnb_0_43_2`]), unless it names an older one.
const TRANSFORMERS_REQUIRING_NEW_BNB: u32 = 5;

/// Whether the notes place the run on bitsandbytes 0.43.2 or later, whose
/// 4-bit matmul saves no input: a stated release ("bitsandbytes 0.45.2",
/// "bnb==0.43.3", "bitsandbytes>=0.44"; a bare "0.43" does not tell, 0.43.0
/// and 0.43.1 still saved it, nor does `quant_storage`, 0.43.0 on), else a
/// stated `transformers` release that refuses older ones
/// ([`TRANSFORMERS_REQUIRING_NEW_BNB`]).
fn runs_bnb_0_43_2(notes: &str, transformers: Option<(u32, u32)>) -> bool {
    match stated_bnb_release(notes) {
        Some((0, 43, Some(patch))) => patch >= 2,
        Some((0, minor, _)) => minor >= 44,
        Some((major, _, _)) => major >= 1,
        None => transformers.is_some_and(|(major, _)| major >= TRANSFORMERS_REQUIRING_NEW_BNB),
    }
}

/// The first LitGPT release whose Linux install pins a bitsandbytes whose
/// 4-bit matmul saves no input: 0.5.5 asks `bitsandbytes>=0.44.0,<0.44.2`
/// (later releases ≥ 0.45.2); 0.4.0 to 0.5.4 pinned `==0.42.0` (read in the
/// litgpt wheels' metadata, `Requires-Dist`).
const LITGPT_NEW_BNB: (u32, u32, u32) = (0, 5, 5);

/// Whether a LitGPT row's notes (`lower`: lower-cased) state a LitGPT release
/// that pins a new bitsandbytes ([`LITGPT_NEW_BNB`]) and name no bitsandbytes
/// release of their own ("litgpt 0.5.7", "LitGPT v0.5.11", "litgpt==0.5.5").
fn litgpt_pins_new_bnb(lower: &str) -> bool {
    stated_bnb_release(lower).is_none()
        && stated_full_release(lower, &["litgpt ", "litgpt==", "litgpt v", "lit-gpt "]).is_some_and(
            |(major, minor, patch)| (major, minor, patch.unwrap_or(0)) >= LITGPT_NEW_BNB,
        )
}

/// The bitsandbytes release the notes name ("bitsandbytes 0.45.2",
/// "bnb==0.43.3", "bitsandbytes>=0.44"): the first that reads as one.
fn stated_bnb_release(notes: &str) -> Option<(u32, u32, Option<u32>)> {
    let lower = notes.to_ascii_lowercase();
    ["bitsandbytes", "bnb"].iter().find_map(|name| {
        lower.match_indices(name).find_map(|(i, _)| {
            let rest = lower[i + name.len()..].trim_start_matches([' ', '=', '>', '<', '~', '-']);
            release_at(rest)
        })
    })
}

/// The header (trimmed) and the data records of a case file.
fn read_cases(csv_text: &str) -> Result<(Vec<String>, Vec<csv::Record>), String> {
    let mut records = csv::parse(csv_text)?;
    if records.is_empty() {
        return Err("the file is empty: expected a header line".into());
    }
    let head = records.remove(0);
    // Column names in any case and with spaces for `_` (`Measured_GiB`,
    // `n layers`), as a hand-edited header may have them.
    let names: Vec<String> = head
        .fields
        .iter()
        .map(|h| h.trim().to_ascii_lowercase().replace(' ', "_"))
        .collect();
    for col in ["id", "metric", "measured_gib", "n_layers", "hidden"] {
        if !names.iter().any(|h| h == col) {
            return Err(format!("line {}: header has no `{col}` column", head.line));
        }
    }
    Ok((names, records))
}

/// A number the notes state right before `unit`: "200 virtual tokens",
/// "~1343 MiB CUDA context" (`None` when not stated).
fn stated_number(notes: &str, unit: &str) -> Option<u32> {
    let at = notes.find(unit)?;
    let before = notes[..at].trim_end();
    let digits = before.len()
        - before
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_digit())
            .count();
    before[digits..].parse().ok()
}

/// The micro-batches a pipeline runs per step, as the notes state them:
/// counted ("8 microbatches", `n_microbatches=8`, "num micro-batches: 8"),
/// or a global batch ("GBS 512", `global_batch_size=512`, "global batch
/// 512") over the micro-batch and the data-parallel size, as Megatron
/// derives them (`get_num_microbatches()` = global batch / (micro-batch ×
/// DP)). `None` when the notes say neither, and the plan falls back to the
/// gradient accumulation column.
fn stated_pipeline_microbatches(notes: &str, micro_batch: u32, dp: u32) -> Option<u32> {
    let named = ["microbatches", "micro-batches", "micro batches"];
    let counted = named
        .iter()
        .find_map(|n| stated_number(notes, n).filter(|&m| m > 0))
        .or_else(|| {
            stated_after(
                notes,
                &[
                    "n_microbatches",
                    "num_microbatches",
                    "num microbatches",
                    "num micro-batches",
                    "microbatches",
                    "micro-batches",
                ],
            )
        })
        .filter(|&m| m > 0);
    counted.or_else(|| {
        let gbs = stated_after(
            notes,
            &[
                "global_batch_size",
                "global batch size",
                "global batch",
                "GBS",
            ],
        )?;
        let per = micro_batch.max(1).saturating_mul(dp.max(1));
        (gbs >= per).then(|| gbs / per)
    })
}

/// The notes say sequence parallelism runs beside TP ("sequence parallel",
/// `--sequence-parallel`, "TP 4 + SP").
fn stated_sequence_parallel(notes: &str) -> bool {
    let lower = notes.to_ascii_lowercase();
    (lower.contains("sequence parallel")
        || lower.contains("sequence-parallel")
        || lower.contains("sequence_parallel"))
        && !lower.contains("no sequence parallel")
        && !lower.contains("sequence_parallel=false")
        || notes
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == "SP")
}

/// The notes say Megatron's distributed optimizer runs
/// (`--use-distributed-optimizer`, `use_distributed_optimizer=True`,
/// "distributed optimizer").
fn stated_distributed_optimizer(notes: &str) -> bool {
    let lower = notes.to_ascii_lowercase().replace(['_', '-'], " ");
    lower.contains("distributed optimizer")
        && !lower.contains("no distributed optimizer")
        && !lower.contains("distributed optimizer=false")
        && !lower.contains("distributed optimizer: false")
}

/// The notes say DDP keeps its gradients as bucket views
/// (`gradient_as_bucket_view=True`; no column says it).
fn stated_bucket_view(notes: &str) -> bool {
    [
        "gradient_as_bucket_view True",
        "gradient_as_bucket_view=True",
    ]
    .iter()
    .any(|k| notes.contains(k))
}

/// A degree the notes give after one of `names` ("EP 8", "EP=8", "EP8",
/// "expert parallel 8"); at least 1.
fn stated_degree(notes: &str, names: &[&str]) -> Option<u32> {
    stated_after(notes, names).map(|n| n.max(1))
}

/// What TRL's `SFTTrainer` does to a quantized model it does not shard, by
/// the `release` the notes state ([`stated_trl_release`]; `None`: unstated),
/// where they say nothing of the preparation themselves:
/// `(kbit_fp32_prep, kbit_embeddings_16bit)`, `None` for an unquantized base.
/// Asked of TRL's rows only ([`runs_trl`]).
///
/// Read in the trl wheels: up to 0.21.0 it prepares the model
/// (`prepare_model_for_kbit_training`; up to 0.7.1 PEFT's older
/// `prepare_model_for_int8_training`, which upcasts alike), and from 0.7.5 it
/// puts a 4-bit model's embeddings and LM head back in bf16 under
/// `bf16=True` (`peft_module_casting_to_bf16`; 0.7.4 did not); from 0.22.0
/// it prepares nothing. The sharded case (FSDP, ZeRO-3), which it leaves
/// alone, the estimate tells apart itself. An unstated release reads as one
/// before 0.22 (its wheel built 29 August 2025): what most published runs
/// ran, and the reading that keeps more — the safe side, as for
/// bitsandbytes' releases.
fn trl_kbit_preparation(
    release: Option<(u32, u32, u32)>,
    t: &crate::plan::TrainingSpec,
    prep_stated: bool,
) -> Option<(bool, bool)> {
    let bits = t.finetune.base_bits()?;
    if bits > 8 || prep_stated {
        return None;
    }
    let prepares = release.is_none_or(|v| v < (0, 22, 0));
    let casts_back = release.is_none_or(|v| v >= TRL_CASTS_EMBEDDINGS_BACK);
    let bf16 = t.precision == Precision::AmpBf16;
    Some((prepares, prepares && casts_back && bits == 4 && bf16))
}

/// The first TRL release whose `SFTTrainer` ran `peft_module_casting_to_bf16`
/// after the k-bit preparation (absent from 0.7.4's wheel, present in 0.7.5's).
const TRL_CASTS_EMBEDDINGS_BACK: (u32, u32, u32) = (0, 7, 5);

/// The row runs TRL's trainers: the framework's, or the Trainer's with TRL's
/// trainers named in the notes and no tool that runs them its own way
/// (Unsloth, axolotl, LLaMA-Factory, ms-swift wrap the model before TRL sees
/// it: [`other_framework`]'s order). The schema has no `trl` value, and TRL's
/// trainers subclass transformers' `Trainer`: PEFT's QLoRA guides' rows read
/// "hf-trainer" and "TRL SFTTrainer".
fn runs_trl(framework: Framework, notes: &str) -> bool {
    framework == Framework::Trl
        || (framework == Framework::HfTrainer && other_framework(notes) == Some(Framework::Trl))
}

/// The first TRL release whose trainers compute the loss through their own
/// fused LM head ([`Loss::TiledLogprob`]): 1.15.0 (`add_fused_lm_head` in
/// `trainer/utils.py`, called by `SFTTrainer`, `DPOTrainer`, `KTOTrainer`,
/// `GRPOTrainer`, `RLOOTrainer`; absent from 1.14.2, read in the wheels).
const TRL_FUSED_LM_HEAD: (u32, u32, u32) = (1, 15, 0);

/// The first TRL release whose `SFTTrainer` defaults to its chunked NLL
/// ([`Loss::ChunkedNll`], `loss_type=None` read as `"chunked_nll"` unless
/// `use_liger_kernel`): 1.7.0 (1.4.0 to 1.6.x offered it, defaulting to
/// `"nll"`; read in the wheels).
const TRL_CHUNKED_NLL: (u32, u32, u32) = (1, 7, 0);

/// The first TRL release whose `selective_log_softmax` runs its Triton kernel
/// on CUDA ([`crate::plan::TrainingSpec::logprob_kernel`]): 1.14.0
/// (`_fused_logprob_entropy` in `trainer/utils.py`; 1.13.0 took a logsumexp
/// or a log-softmax row by row).
const TRL_LOGPROB_KERNEL: (u32, u32, u32) = (1, 14, 0);

/// Notes that name TRL's `loss_type` as the plain NLL ("loss_type nll",
/// `loss_type="nll"`).
fn stated_nll_loss_type(lower: &str) -> bool {
    [
        "loss_type nll",
        "loss_type=nll",
        "loss_type=\"nll\"",
        "loss_type='nll'",
        "loss_type: nll",
    ]
    .iter()
    .any(|k| lower.contains(k))
}

/// The TRL release the notes state ("TRL 0.21.0", "trl==0.9.6", "trl>=1.8",
/// "TRL version 1.10.0", "TRL: v0.12.1"), patch 0 where they give none.
fn stated_trl_release(notes: &str) -> Option<(u32, u32, u32)> {
    const AFTER: [&str; 7] = ["==", ">=", "~=", "=", " version ", ": ", " "];
    let lower = notes.to_ascii_lowercase();
    // "trl" as a word of its own (not "ctrl"), then the release.
    let starts: Vec<usize> = lower
        .match_indices("trl")
        .map(|(i, _)| i)
        .filter(|&i| {
            !lower[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .collect();
    AFTER
        .iter()
        .find_map(|after| {
            starts
                .iter()
                .find_map(|&i| lower[i + 3..].strip_prefix(after).and_then(release_at))
        })
        .map(|(major, minor, patch)| (major, minor, patch.unwrap_or(0)))
}

/// Whether TRL's `SFTTrainer`, by the `release` the notes state, keeps the
/// adapters in 16 bits ([`crate::plan::TrainingSpec::adapters_16bit`]); read
/// in the trl wheels: 0.7.5–0.8.6's `peft_module_casting_to_bf16` casts every
/// `BaseTunerLayer` of an unsharded 4-bit model under `bf16=True` (gone from
/// 0.9.2); from 0.9.2 a sharded 4-bit model's adapters are made with
/// `autocast_adapter_dtype=False`, in the bf16 its storage is; from 0.26 a
/// quantized model's trainable parameters are cast to bf16; from 1.13 ZeRO-3
/// over a 16-bit model gets `autocast_adapter_dtype=False` too. An unstated
/// release keeps PEFT's fp32, which keeps more.
fn trl_adapters_16bit(
    v: (u32, u32, u32),
    t: &crate::plan::TrainingSpec,
    sharding: Sharding,
) -> bool {
    let Some(bits) = t.finetune.base_bits() else {
        return false;
    };
    if t.precision == Precision::Fp32 {
        return false;
    }
    match bits {
        4 if sharding.shards_params() => v >= (0, 9, 2),
        4 if (TRL_CASTS_EMBEDDINGS_BACK..(0, 9, 0)).contains(&v) => {
            t.precision == Precision::AmpBf16
        }
        b if b <= 8 => v >= (0, 26, 0),
        _ => sharding == Sharding::Zero3 && v >= (1, 13, 0),
    }
}

/// What the notes (lower-cased) say of PEFT's `prepare_model_for_kbit_training`
/// (which casts a quantized model's unquantized parameters to fp32): named,
/// it ran; named with a negation ("without prepare_model_for_kbit_training",
/// "no k-bit preparation", "prepare_model_for_kbit_training not called"), it
/// did not — TRL's `SFTTrainer` from 0.22.0 on prepares nothing; unnamed,
/// the profile's default.
fn stated_kbit_prep(lower: &str) -> Option<bool> {
    const NOT: [&str; 6] = [
        "without prepare_model_for_kbit_training",
        "no prepare_model_for_kbit_training",
        "prepare_model_for_kbit_training not",
        "no k-bit preparation",
        "no kbit preparation",
        "not prepared for k-bit",
    ];
    if NOT.iter().any(|w| lower.contains(w)) {
        Some(false)
    } else if lower.contains("prepare_model_for_kbit_training") {
        Some(true)
    } else {
        None
    }
}

/// The notes (lower-cased) say the caching allocator ran with expandable
/// segments (`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`, PyTorch
/// 2.9's `PYTORCH_ALLOC_CONF`, "with expandable segments") and not that it
/// ran without them ("expandable_segments:False", "no expandable segments").
fn stated_expandable_segments(lower: &str) -> bool {
    if let Some(set) = stated_flag(lower, "expandable_segments") {
        return set;
    }
    let said_off = [
        "no expandable",
        "without expandable",
        "expandable segments off",
    ]
    .iter()
    .any(|w| lower.contains(w));
    !said_off && (lower.contains("expandable segments") || lower.contains("expandable_segments"))
}

/// A model family whose transformers implementation has no SDPA path, so a
/// run that names no attention kernel ran the eager one (scores kept):
/// BLOOM, GPT-Neo, MPT and GPT-1 (`_supports_sdpa` unset in transformers
/// 4.x and 5.25), Gemma-2 (4.42–4.x pick eager unless SDPA is asked for,
/// `Gemma2PreTrainedModel._check_and_enable_sdpa`; 5.25 refuses SDPA:
/// "does not support an attention implementation through
/// torch.nn.functional.scaled_dot_product_attention yet", met replaying it)
/// and gpt-oss (eager unless its flash kernels are installed); among the
/// encoders and encoder–decoders (transformers 5.25's masked-LM and seq2seq
/// classes without `_supports_sdpa`), DeBERTa (v1–v3), MPNet (the
/// sentence-transformers `all-mpnet` models), Longformer, LED, LongT5,
/// BigBird, RoFormer, RemBERT, Funnel, SqueezeBERT, ConvBERT, Switch
/// Transformers, PEGASUS-X and ProphetNet. Read from the model's name: not
/// Gemma 1 ("gemma-2b", "gemma-7b") nor GPT-NeoX.
fn without_sdpa_in_transformers(model: &str) -> bool {
    const PREFIXES: [&str; 22] = [
        "bloom",
        "gemma-2-",
        "gemma2",
        "gpt-oss",
        "mpt-",
        "deberta",
        "mpnet",
        "all-mpnet",
        "longformer",
        "led-",
        "long-t5",
        "longt5",
        "bigbird",
        "roformer",
        "rembert",
        "funnel",
        "squeezebert",
        "conv-bert",
        "convbert",
        "switch-",
        "pegasus-x",
        "prophetnet",
    ];
    let name = model.rsplit('/').next().unwrap_or(model);
    PREFIXES.iter().any(|p| name.starts_with(p))
        || (name.starts_with("gpt-neo-") && !name.starts_with("gpt-neox"))
        || name == "openai-gpt"
}

/// What a preset says of a model's implementation that the schema's columns
/// cannot: norm kind and count, positions, biases, parallel blocks,
/// soft-capping, q/k norms, the ReLU activation and the head's bias; and,
/// when transformers' code runs the model, its fused projections and Python
/// GELU.
fn copy_implementation(model: &mut ModelSpec, s: &ModelSpec, transformers_code: bool) {
    // The activation is the model's, whatever code runs it.
    model.relu = s.relu && model.mlp == Mlp::Plain;
    model.logits_bias = s.logits_bias;
    model.sdpa_mask = s.sdpa_mask;
    model.norm = s.norm;
    model.norms_per_layer = s.norms_per_layer;
    model.positions = s.positions;
    model.max_positions = s.max_positions;
    model.linear_bias = s.linear_bias;
    model.qkv_bias = s.qkv_bias;
    model.parallel_residual = s.parallel_residual;
    model.norm_fp32_affine = s.norm_fp32_affine;
    model.qk_norm = s.qk_norm;
    model.softcap = s.softcap;
    model.attention_sinks = s.attention_sinks;
    model.clamped_glu = s.clamped_glu;
    if transformers_code {
        model.fused_projections = s.fused_projections;
        model.fused_gate_up = s.fused_gate_up;
        model.gelu_new = s.gelu_new;
        model.dense_experts = s.dense_experts;
    }
}

/// The text names a module that computes q/k/v (or gate/up) in one matmul,
/// as the model code spells it: `query_key_value` (GPT-NeoX, Falcon, BLOOM,
/// ChatGLM), `c_attn` (GPT-2, Qwen 1), `qkv_proj` / `gate_up_proj` (Phi-3),
/// `Wqkv` (MPT), `wqkv` (InternLM2), `W_pack` (Baichuan).
fn names_fused_module(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| {
            matches!(
                w,
                "query_key_value" | "c_attn" | "qkv_proj" | "gate_up_proj" | "wqkv" | "w_pack"
            )
        })
}

/// The names HSDP's shard group goes by: torchtitan's
/// `data_parallel_shard_degree` (`dp_shard`), DeepSpeed's hpZ
/// `zero_hpz_partition_size`, or in words.
const HSDP_SHARD_GROUP: [&str; 7] = [
    "data_parallel_shard_degree",
    "dp_shard",
    "dp-shard",
    "shard group size",
    "sharding group size",
    "sharding_group_size",
    "shard group",
];

/// The GPUs a node holds, as the notes state them ("8 GPUs per node",
/// "4 GPUs/node", torchrun's `--nproc_per_node 4`, `gpus_per_node=8`) or
/// through the nodes the run spanned ("2 nodes", `--nnodes 4`,
/// `num_nodes=2`) over its `num_gpus`. `None` when they say neither, or a
/// count that does not divide the GPUs: the plan's default (8) stands. HSDP
/// shards within a node (PyTorch FSDP's `HYBRID_SHARD`: the intra-node
/// group), so its shard group follows.
fn stated_node(notes: &str, num_gpus: u32) -> Option<u32> {
    let lower = notes.to_ascii_lowercase();
    let per_node = stated_after(
        &lower,
        &[
            "nproc_per_node",
            "nproc-per-node",
            "gpus_per_node",
            "gpus-per-node",
            "gpus per node",
            "devices per node",
        ],
    )
    .or_else(|| {
        [
            " gpus per node",
            " gpus/node",
            " gpus a node",
            " gpus each",
            " per node",
        ]
        .iter()
        .find_map(|w| stated_number(&lower, w))
    });
    let nodes = || {
        stated_after(&lower, &["nnodes", "num_nodes", "num-nodes", "nodes"])
            .or_else(|| stated_number(&lower, " nodes"))
            .or_else(|| stated_number(&lower, " node ").filter(|&n| n == 1))
            .filter(|&n| n > 0 && num_gpus.is_multiple_of(n))
            .map(|n| num_gpus / n)
    };
    per_node.filter(|&n| n > 0 && n <= num_gpus).or_else(nodes)
}

/// The whole number the notes give after one of `names`, each a whole word
/// ("EP 8", "n_shared_experts=2", "num_shared_experts: 2").
fn stated_after(notes: &str, names: &[&str]) -> Option<u32> {
    stated_after_unless(notes, names, &[])
}

/// A name found at `at` in `text` starts a word — "EP" is not the end of
/// "STEP" — and does not follow one of `not_after` (a cap's or another
/// quantity's name: "max sequence length", `max_seq_len`).
fn name_starts_at(text: &str, at: usize, not_after: &[&str]) -> bool {
    let before = &text[..at];
    before
        .chars()
        .next_back()
        .is_none_or(|c| !c.is_ascii_alphanumeric())
        && !not_after.iter().any(|w| before.trim_end().ends_with(w))
}

/// [`stated_after`], passing over a name whose preceding text ends with one
/// of `not_after` (a cap's or another quantity's: "max sequence length",
/// `max_seq_len`).
fn stated_after_unless(notes: &str, names: &[&str], not_after: &[&str]) -> Option<u32> {
    after_names(notes, names, not_after).find_map(|after| {
        let rest = after.trim_start_matches([' ', '=', ':']);
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        rest[..digits].parse().ok()
    })
}

/// The text after each whole-word occurrence of `names` in `text`, name by
/// name ([`name_starts_at`]).
fn after_names<'t>(
    text: &'t str,
    names: &'t [&'t str],
    not_after: &'t [&'t str],
) -> impl Iterator<Item = &'t str> + 't {
    names.iter().flat_map(move |name| {
        text.match_indices(name)
            .filter(move |&(at, _)| name_starts_at(text, at, not_after))
            .map(move |(at, _)| &text[at + name.len()..])
    })
}

/// The notes (lower-cased) say the batches the peak ran carried padding
/// ("padded per batch", "left-padded to max_length 64", "the last 25 % of
/// every row padding"), so that transformers hands SDPA an attention mask
/// ([`crate::plan::TrainingSpec::padded`]). A clause about the vocabulary
/// ("vocab padded to 50304") is not about the rows; packed or padding-free
/// batches, and flash-attn's varlen path, which drops the padding, pass no
/// mask; length-bucketed batches (or `group_by_length`) put the longest rows —
/// truncated at the stated length, the batch that sets the peak — together,
/// with no padding among them.
fn stated_padding(lower: &str) -> bool {
    // ("bucketed", not "bucket": DDP's `gradient_as_bucket_view` is no batching.)
    if stated_packing(lower) {
        return false;
    }
    const NONE: [&str; 9] = [
        "padding-free",
        "padding_free",
        "unpadded",
        "no padding",
        "without padding",
        "bucketed",
        "bucketing",
        "group_by_length",
        "flash_attention_2",
    ];
    if NONE.iter().any(|w| lower.contains(w)) {
        return false;
    }
    lower
        .split(';')
        .filter(|clause| !clause.contains("vocab"))
        .any(|clause| clause.contains("padded") || clause.contains("padding"))
}

/// The adapter dropout probability the notes state (`dropout 0.1`,
/// `lora_dropout=0.05`): whether it is non-zero.
fn stated_dropout(notes: &str) -> Option<bool> {
    let at = notes.find("dropout")? + "dropout".len();
    let rest = notes[at..].trim_start_matches([' ', '=', ':']);
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse::<f64>().ok().map(|p| p > 0.0)
}

/// The matrices the notes say a method adapts ("BOFT block 4 on q+v").
fn stated_targets(notes: &str) -> Option<LoraTargets> {
    let at = notes.find(" on ")? + " on ".len();
    let word = notes[at..].split([' ', ';', ',', '(']).next()?;
    parse_targets("notes", word).ok()
}

/// The notes name one of `tools` as a whole word (lower-case names; `-`
/// belongs to a word), so "control" is not TRL.
fn names_tool(notes: &str, tools: &[&str]) -> bool {
    notes
        .to_ascii_lowercase()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .any(|w| tools.contains(&w))
}

/// The framework profile of a tool the notes name (whole words, so
/// "control" is not TRL): Megatron-Core's users (NeMo, Megatron-Bridge) get
/// Megatron-LM's (so does ms-swift's Megatron-SWIFT backend, `megatron sft`,
/// which trains through `megatron.core`: ms-swift 4.6.0 `swift/megatron`);
/// Unsloth, LLaMA-Factory, ms-swift and axolotl their own
/// (before TRL's, whose trainers they run: Unsloth's notebooks train with
/// TRL's `SFTTrainer`, axolotl's RL configs with TRL's trainers); TRL's
/// trainers TRL's.
fn other_framework(notes: &str) -> Option<Framework> {
    const TOOLS: [(&[&str], Framework); 6] = [
        (
            &[
                "nemo",
                "megatron-core",
                "megatron-bridge",
                "mcore",
                "megatron-swift",
            ],
            Framework::Megatron,
        ),
        (&["unsloth"], Framework::Unsloth),
        (&["llama-factory", "llamafactory"], Framework::LlamaFactory),
        (&["ms-swift"], Framework::MsSwift),
        (&["axolotl"], Framework::Axolotl),
        (&TRL_NAMES, Framework::Trl),
    ];
    TOOLS
        .iter()
        .find(|(names, _)| names_tool(notes, names))
        .map(|(_, f)| *f)
}

/// TRL and its trainers, as notes name them (whole words, lower-cased).
const TRL_NAMES: [&str; 5] = [
    "trl",
    "sfttrainer",
    "dpotrainer",
    "grpotrainer",
    "ktotrainer",
];

/// The notes (lower-cased) name a fused linear + cross-entropy: Apple's Cut
/// Cross-Entropy (axolotl's `CutCrossEntropyPlugin`, Unsloth), or Liger's by
/// its name.
fn fused_linear_ce(lower: &str) -> bool {
    [
        "cut cross-entropy",
        "cut cross entropy",
        "cut_cross_entropy",
        "cutcrossentropy",
        "fused linear cross",
        "fused linear-cross",
        "fused_linear_cross",
    ]
    .iter()
    .any(|k| lower.contains(k))
        || lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == "cce" || w == "flce")
}

/// The plan the row with this id describes (for `memplan calibrate --explain`).
pub fn case_plan(csv_text: &str, id: &str) -> Result<Plan, String> {
    let (header, rows) = read_cases(csv_text)?;
    for rec in &rows {
        let row = Row {
            header: &header,
            fields: &rec.fields,
        };
        if row.get("id") == id {
            return plan_for(&row);
        }
    }
    Err(format!("no case with id `{id}`"))
}

/// Rows whose architecture columns give a parameter count more than this far
/// from their `params_total` hold something the columns cannot describe.
pub const PARAMS_MISMATCH_PCT: f64 = 5.0;

/// How far (%) the parameter count at the usual head width (hidden / heads)
/// may miss a row's `params_total` before another width is tried
/// ([`head_width_for`]): published counts are rounded ("6.74", "7.24").
const HEAD_WIDTH_MISMATCH_PCT: f64 = 3.0;

/// How near (%) a common head width must bring the count to `params_total`
/// to be taken.
const HEAD_WIDTH_MATCH_PCT: f64 = 1.0;

/// Head widths published models use (config.json `head_dim`: 64 for most,
/// 80 Phi-2, 96 Phi-3-mini, 128 Llama and Qwen3, 256 Gemma).
const COMMON_HEAD_WIDTHS: [u32; 7] = [64, 80, 96, 112, 128, 192, 256];

/// The head width whose parameter count meets `stated` (parameters), when
/// the model's own misses it ([`HEAD_WIDTH_MISMATCH_PCT`],
/// [`HEAD_WIDTH_MATCH_PCT`]); else the model's.
fn head_width_for(model: &ModelSpec, stated: f64) -> u32 {
    let off = |head_dim: u32| {
        let m = ModelSpec {
            head_dim,
            ..model.clone()
        };
        100.0 * (m.params() as f64 - stated).abs() / stated
    };
    if off(model.head_dim) <= HEAD_WIDTH_MISMATCH_PCT {
        return model.head_dim;
    }
    COMMON_HEAD_WIDTHS
        .iter()
        .map(|&w| (off(w), w))
        .filter(|(pct, _)| *pct <= HEAD_WIDTH_MATCH_PCT)
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map_or(model.head_dim, |(_, w)| w)
}

/// The warning for a row whose architecture columns give a parameter count
/// more than [`PARAMS_MISMATCH_PCT`] from its stated `params_total` (an
/// attention or expert layout, a vision tower, … the schema has no column for).
fn params_mismatch(row: &Row, plan: &Plan, line: u64) -> Option<String> {
    let stated = row
        .f64("params_total")
        .ok()
        .flatten()
        .filter(|p| *p > 0.0)?;
    let ours = plan.model.params() as f64 / 1e9;
    let pct = 100.0 * (ours - stated) / stated;
    (pct.abs() > PARAMS_MISMATCH_PCT).then(|| {
        format!(
            "line {line} ({}): the architecture columns give {ours:.3} B parameters, params_total states \
             {stated} B ({pct:+.1} %): what the columns cannot describe is not modelled",
            row.get("id")
        )
    })
}

/// The `measured_gib` column: GiB, or a figure with its unit as a source
/// printed it — `GiB`/`MiB`/`KiB`/`TiB` (powers of 2) or `GB`/`MB`/`TB`
/// (powers of 10, as DESIGN's units say; nvidia-smi's `MiB`) — in any case.
/// A board's capacity as written: GiB, or with its unit — where "80GB" is
/// the A100 80GB's 80 GiB (boards are sold in binary sizes), and MiB is what
/// nvidia-smi prints ("81920 MiB").
fn gpu_mem_gib(v: &str) -> Result<Option<f64>, String> {
    let v = v.trim();
    if v.is_empty() {
        return Ok(None);
    }
    let (x, unit) = number_and_unit(v);
    let per_gib = match unit.to_ascii_lowercase().as_str() {
        "" | "gib" | "gb" | "g" => Some(1.0),
        "mib" | "mb" => Some(1.0 / 1024.0),
        "tib" | "tb" => Some(1024.0),
        _ => None,
    };
    match (x, per_gib) {
        (Some(x), Some(k)) => Ok(Some(x * k)),
        _ => Err(format!("gpu_mem_gib: `{v}` is not a number")),
    }
}

/// A figure and the unit written after it ("81920 MiB", "4.82GB", "18,2"):
/// the number (decimal comma read), and the unit as written (empty if none).
fn number_and_unit(v: &str) -> (Option<f64>, &str) {
    let split = v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len());
    let (num, unit) = (v[..split].trim(), v[split..].trim());
    (num.parse().ok().or_else(|| decimal_comma(num)), unit)
}

fn measured_gib(v: &str) -> Result<Option<f64>, String> {
    let v = v.trim();
    // An approximate figure ("~19.6", "≈ 19.6", "about 19.6 GB") is the
    // figure; so is one with a table's footnote mark ("18.2*", "18.2†").
    let v = v
        .trim_start_matches(['~', '≈'])
        .trim_start_matches("about ")
        .trim_start_matches("approx. ")
        .trim_end_matches(['*', '†', '‡'])
        .trim();
    // A note in parentheses after the figure ("18.2 (peak)"), its spread
    // ("18.2 ± 0.3", "18.2+/-0.3 GB"): the figure, in the spread's unit when
    // only the spread names one.
    let v = v.split_once('(').map_or(v, |(figure, _)| figure).trim();
    let (v, spread) = v
        .split_once('±')
        .or_else(|| v.split_once("+/-"))
        .map_or((v, ""), |(figure, spread)| {
            (figure.trim(), spread.trim_end())
        });
    if v.is_empty() {
        return Ok(None);
    }
    let (x, unit) = number_and_unit(v);
    let unit = if unit.is_empty() {
        &spread[spread
            .trim_end_matches(|c: char| c.is_ascii_alphabetic())
            .len()..]
    } else {
        unit
    };
    let x = x.ok_or_else(|| format!("measured_gib: `{v}` is not a number"))?;
    if !x.is_finite() || x < 0.0 {
        return Err(format!(
            "measured_gib: `{v}` is not a memory size (a finite number, 0 or more)"
        ));
    }
    let bytes_per = match unit.to_ascii_lowercase().as_str() {
        "" | "gib" => return Ok(Some(x)),
        "tib" => 1024.0 * GIB as f64,
        "mib" => MIB as f64,
        "kib" => 1024.0,
        "tb" => 1e12,
        "gb" => 1e9,
        "mb" => 1e6,
        _ => {
            return Err(format!(
                "measured_gib: unit `{unit}` in `{v}` is not one of GiB, MiB, KiB, TiB, GB, MB, TB"
            ))
        }
    };
    Ok(Some(x * bytes_per / GIB as f64))
}

fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    // Linear interpolation between closest ranks (numpy's default).
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let w = pos - lo as f64;
    Some(sorted[lo] * (1.0 - w) + sorted[hi] * w)
}

/// Predicts every case of a calibration CSV.
pub fn calibrate(csv_text: &str) -> Result<Report, String> {
    let (header, rows) = read_cases(csv_text)?;
    let mut cases = Vec::new();
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut oom_total = 0;
    let mut oom_detected = 0;
    for rec in rows {
        let row = Row {
            header: &header,
            fields: &rec.fields,
        };
        let id = row.get("id").to_string();
        let metric = row.get("metric").to_string();
        let measured_read = measured_gib(row.get("measured_gib"));
        let measured = measured_read
            .as_ref()
            .ok()
            .copied()
            .flatten()
            .unwrap_or(f64::NAN);
        let oom_read = row.oom();
        let oom = oom_read.clone().unwrap_or(false);
        let quality_c = row.get("quality") == "C";
        let mut res = CaseResult {
            id,
            metric: metric.clone(),
            measured_gib: measured,
            predicted_gib: None,
            error_pct: None,
            oom,
            skipped: None,
        };
        let outcome = (|| -> Result<(f64, bool), String> {
            if rec.fields.len() != header.len() {
                return Err(format!(
                    "{} fields, header has {}",
                    rec.fields.len(),
                    header.len()
                ));
            }
            oom_read?;
            let counter = Counter::from_metric(&metric)
                .ok_or(format!("metric `{metric}` is not in the schema"))?;
            // An OOM row's measurement is only the capacity it hit; any other
            // row needs one to be graded.
            if !oom && measured_read?.is_none() {
                return Err("measured_gib is empty".into());
            }
            let plan = plan_for(&row)?;
            warnings.extend(params_mismatch(&row, &plan, rec.line));
            let est = estimate(&plan).map_err(|e| e.to_string())?;
            let predicted = counter.pick(&est.peak) as f64 / GIB as f64;
            let over = est.peak.device_used.get() > plan.gpu.capacity_mib.saturating_mul(MIB);
            Ok((predicted, over))
        })();
        match outcome {
            Ok((pred, over)) => {
                res.predicted_gib = Some(round3(pred));
                if oom {
                    oom_total += 1;
                    if over {
                        oom_detected += 1;
                    }
                } else if measured.is_finite() && measured > 0.0 {
                    let e = 100.0 * (pred - measured) / measured;
                    res.error_pct = Some(round3(e));
                    if !quality_c {
                        errors.push(e);
                    }
                }
            }
            Err(reason) => {
                if oom {
                    oom_total += 1;
                }
                res.skipped = Some(format!("line {}: {reason}", rec.line))
            }
        }
        cases.push(res);
    }
    let mut abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    abs.sort_by(|a, b| a.total_cmp(b));
    let worst_under = errors.iter().copied().fold(None, |acc: Option<f64>, e| {
        Some(acc.map_or(e, |a| a.min(e)))
    });
    let skipped = cases.iter().filter(|c| c.skipped.is_some()).count() as u64;
    Ok(Report {
        summary: Summary {
            n: cases.len() as u64,
            skipped,
            median_abs_error_pct: percentile(&abs, 0.5).map(round3),
            p90_abs_error_pct: percentile(&abs, 0.9).map(round3),
            worst_under_prediction_pct: worst_under.map(|w| round3(w.min(0.0))),
            oom_detected,
            oom_total,
        },
        cases,
        warnings,
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The report as a Markdown table plus summary (what docs/ACCURACY.md holds).
pub fn markdown(r: &Report) -> String {
    let f = |x: Option<f64>| x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "—".into());
    let mut o = String::new();
    let s = &r.summary;
    o.push_str("| summary | value |\n|---|---|\n");
    o.push_str(&format!(
        "| cases | {} |\n| skipped | {} |\n",
        s.n, s.skipped
    ));
    o.push_str(&format!(
        "| median abs error % | {} |\n",
        f(s.median_abs_error_pct)
    ));
    o.push_str(&format!(
        "| p90 abs error % | {} |\n",
        f(s.p90_abs_error_pct)
    ));
    o.push_str(&format!(
        "| worst under-prediction % | {} |\n",
        f(s.worst_under_prediction_pct)
    ));
    o.push_str(&format!(
        "| OOM rows detected | {} / {} |\n\n",
        s.oom_detected, s.oom_total
    ));
    o.push_str("| id | metric | measured GiB | predicted GiB | error % | oom | skipped |\n|---|---|---:|---:|---:|---|---|\n");
    for c in &r.cases {
        o.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            c.id,
            if c.metric.is_empty() {
                "(unstated)"
            } else {
                &c.metric
            },
            if c.measured_gib.is_finite() {
                format!("{:.3}", c.measured_gib)
            } else {
                "—".into()
            },
            f(c.predicted_gib),
            f(c.error_pct),
            if c.oom { "OOM" } else { "" },
            c.skipped.as_deref().unwrap_or("")
        ));
    }
    o
}
