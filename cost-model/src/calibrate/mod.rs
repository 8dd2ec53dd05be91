//! Calibration: read cases in the schema of `shared/calibration/SCHEMA.md`,
//! build a plan from each row's columns (no per-row or per-source constants),
//! predict the counter the row measured, and summarise the errors.
//!
//! This module holds the report's types, the CSV reading and the summary;
//! `reader` builds each row's plan, from what `notes` reads in the free text
//! and `gpu_names` in the GPU column.

use crate::csv;
use crate::estimate::{estimate, Counters};
use crate::framework::Framework;
use crate::gpu::{self, GpuSpec};
use crate::model::{Arch, Mlp, ModelHead, ModelSpec, Norm, Positions};
use crate::plan::{
    AdapterMethod, Attention, Checkpointing, DeepspeedRelease, Finetune, LoraTargets, LoraVariant,
    Loss, Objective, Offload, OffloadDevice, Optimizer, OptimizerImpl, Plan, Precision,
    PytorchRelease, Sharding, TorchtitanRelease, TorchtuneRelease, TransformersRelease, TrlRelease,
};
use crate::query::parse_targets;
use crate::units::{GIB, MIB};
use serde::{Deserialize, Serialize};

mod gpu_names;
mod notes;
mod reader;
use gpu_names::*;
/// The catalogue GPU a free-text name means, and a name's words without the
/// vendor's (for a log's GPU names too).
pub(crate) use gpu_names::{gpu_for as gpu_named, gpu_words};
use notes::*;
use reader::*;

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

    /// The stated `params_total` in billions, when it is a positive number.
    fn params_total(&self) -> Option<f64> {
        self.f64("params_total").ok().flatten().filter(|p| *p > 0.0)
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
    let stated = row.params_total()?;
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
