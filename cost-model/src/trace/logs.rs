//! Training-log lines with PyTorch allocator figures: DeepSpeed
//! `see_memory_usage` (`MA … Max_MA … CA … Max_CA …`, GB = 2^30 bytes:
//! `deepspeed/runtime/utils.py` divides by 1024³) and its timer's
//! `MaxMemAllocated=`, Megatron-LM's `[Rank N] … memory (MB) | allocated: …`
//! (MB = 2^20: `megatron/training/utils.py` `report_memory`; with
//! `--log-device-memory-used`, the device's used memory too) and
//! Megatron-Bridge's `memory (GB) | mem-max-allocated-gigabytes: …` (GB =
//! 10^9), Hugging Face
//! Trainer memory metrics (`*_mem_gpu_*_delta = NMB`, `>> 20` in
//! `trainer_utils.py`), accelerate/PEFT `TorchTracemalloc` reports (`b2mb`,
//! 2^20), and `torch.cuda.memory_summary()` tables (KiB/MiB/GiB; older
//! releases label the same binary units KB/MB/GB); torchtitan's step lines
//! (`memory: 45.23GiB(57.12%)`: `max_memory_reserved` over the logging
//! interval, 2^30 — torchtitan `components/metrics.py`), torchtune's memory
//! stats (`peak memory allocation: 15.23 GiB`, and the metric logger's
//! `peak_memory_alloc:15.23`, 2^30 — `training/memory.py`; 10^9 labelled `GB`
//! up to 0.2) and LitGPT's
//! `Memory used: 12.34 GB` (`max_memory_allocated() / 1e9`: decimal GB).

use super::{keep_max, parse_size_mib, Builder, Format, LineParser, RankAllocator, TraceError};

/// A `see_memory_usage` figure line.
pub fn is_deepspeed_line(l: &str) -> bool {
    l.contains("Max_MA") && l.contains("CA ")
}

/// A torchtitan step line (`step: 10  loss:  8.1  memory: 45.23GiB(57.12%)  tps: …`)
/// or its `… memory usage for model: 3.55GiB(4.49%)` line, colours removed.
pub fn is_torchtitan_line(l: &str) -> bool {
    l.contains("GiB(") && (l.contains("memory: ") || l.contains("memory usage for model:"))
}

/// torchtune's `log_memory_stats` lines or its metric logger's keys.
pub fn is_torchtune_line(l: &str) -> bool {
    l.contains("peak memory allocation:")
        || l.contains("peak memory reserved:")
        || l.contains("peak_memory_alloc:")
        || l.contains("peak_memory_reserved:")
}

/// A tool that logs PyTorch's peak counters under keys of its own, in GiB
/// (2^30) whatever the label: `'memory(GiB)': 17.83`,
/// `perf/max_memory_reserved_gb:55.5`.
pub struct KeyedPeaks {
    pub format: Format,
    /// Keys that tell the tool's line.
    detect: &'static [&'static str],
    /// Keys of the allocated and of the reserved peak (the first found wins).
    allocated: &'static [&'static str],
    reserved: &'static [&'static str],
    /// A `[rankN]:` prefix (torchrun with every rank logging) gives that
    /// rank's own peak.
    per_rank: bool,
    /// The figures are bytes / 10^9 (decimal GB), not / 2^30.
    decimal_gb: bool,
}

impl KeyedPeaks {
    /// Whether `l` is this tool's line.
    pub fn matches(&self, l: &str) -> bool {
        self.detect.iter().any(|k| l.contains(k))
    }

    fn read(&self, line: &str, b: &mut Builder) {
        b.seen.get_or_insert(self.format);
        // A figure at most zero is no peak (LLaMA-Factory writes `-1` where
        // the device has no reserved counter).
        let first = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| figure_after(line, k, "GiB"))
                .filter(|v| *v > 0.0)
                .map(|v| if self.decimal_gb { decimal_gb(v) } else { v })
        };
        let (allocated, reserved) = (first(self.allocated), first(self.reserved));
        let prefix_rank = b.line_rank;
        let a = b.allocator();
        if let Some(v) = allocated {
            keep_max(&mut a.peak_allocated_mib, v);
        }
        if let Some(v) = reserved {
            keep_max(&mut a.peak_reserved_mib, v);
        }
        if self.per_rank && (allocated.is_some() || reserved.is_some()) {
            if let Some(r) = rank_of(line, prefix_rank) {
                keep_rank(a, r, allocated, reserved);
            }
        }
    }
}

/// The tools of [`KeyedPeaks`], in the order their lines are told apart
/// (axolotl's log dict before the Trainer's metrics it resembles).
pub const KEYED_PEAKS: [KeyedPeaks; 5] = [
    // axolotl's Trainer log dict (`'memory/max_allocated (GiB)': 17.48`,
    // `'memory/device_reserved (GiB)': 19.94` — `max_memory_reserved`, reset
    // at each log: axolotl 0.13–0.19 `core/trainers/base.py`,
    // `utils/bench.py`); axolotl 0.12 named them `memory/max_mem_active(gib)`,
    // `memory/max_mem_allocated(gib)` and `memory/device_mem_reserved(gib)`
    // (peaks since the start: no reset), as its examples' READMEs still quote
    // them.
    KeyedPeaks {
        format: Format::AxolotlMetrics,
        detect: &[
            "memory/max_allocated (GiB)",
            "memory/device_reserved (GiB)",
            "memory/max_mem_allocated(gib)",
            "memory/device_mem_reserved(gib)",
        ],
        allocated: &[
            "memory/max_allocated (GiB)",
            "memory/max_active (GiB)",
            "memory/max_mem_allocated(gib)",
            "memory/max_mem_active(gib)",
        ],
        reserved: &[
            "memory/device_reserved (GiB)",
            "memory/device_mem_reserved(gib)",
        ],
        per_rank: false,
        decimal_gb: false,
    },
    // verl's console metrics (`step:10 - … - perf/max_memory_allocated_gb:42.12
    // - perf/max_memory_reserved_gb:55.5 - …`), `/ (1024**3)` (verl 0.9.1
    // `workers/engine_workers.py`, printed by `utils/logger/aggregate_logger.py`
    // `concat_dict_to_str`).
    KeyedPeaks {
        format: Format::VerlMetrics,
        detect: &[
            "perf/max_memory_allocated_gb",
            "perf/max_memory_reserved_gb",
        ],
        allocated: &["perf/max_memory_allocated_gb"],
        reserved: &["perf/max_memory_reserved_gb"],
        per_rank: false,
        decimal_gb: false,
    },
    // LLaMA-Factory's `trainer_log.jsonl` with `RECORD_VRAM=1`
    // (`"vram_allocated": 15.23, "vram_reserved": 17.5`), `/ (1024**3)`
    // (llamafactory 0.9.5 `train/callbacks.py`, `extras/misc.py`
    // `get_peak_memory`).
    KeyedPeaks {
        format: Format::LlamafactoryVram,
        detect: &[
            "vram_allocated\"",
            "vram_reserved\"",
            "vram_allocated'",
            "vram_reserved'",
        ],
        allocated: &["\"vram_allocated\"", "'vram_allocated'"],
        reserved: &["\"vram_reserved\"", "'vram_reserved'"],
        per_rank: false,
        decimal_gb: false,
    },
    // Composer's `MemoryMonitor` (MosaicML; llm-foundry), as its console
    // logger prints it (`\t Train memory/peak_allocated_mem: 33.477`) or a
    // metrics dict holds it: `memory_stats()` bytes / 1.0e9, five
    // significant digits, peaks never reset (mosaicml 0.29.0
    // `callbacks/memory_monitor.py` `_get_memory_report`).
    KeyedPeaks {
        format: Format::ComposerMemoryMonitor,
        detect: &["memory/peak_allocated_mem", "memory/peak_reserved_mem"],
        allocated: &["memory/peak_allocated_mem"],
        reserved: &["memory/peak_reserved_mem"],
        per_rank: false,
        decimal_gb: true,
    },
    // ms-swift's Trainer log dict (`'memory(GiB)': 17.83`; `"memory(GiB)"` in
    // its `logging.jsonl`): the largest `max_memory_reserved` seen so far, the
    // maximum over the GPUs of a device-map model (ms-swift 4.5.0–4.6.0; the
    // sum before, [`LogParser::finish`] warns) (ms-swift 4.6.0
    // `trainers/patcher.py` `add_train_message`, `utils/torch_utils.py`
    // `get_max_reserved_memory`; Megatron-SWIFT's the maximum over the
    // model-parallel group, `megatron/callbacks/print.py`).
    KeyedPeaks {
        format: Format::MsSwiftMemory,
        detect: &["'memory(GiB)'", "\"memory(GiB)\""],
        allocated: &[],
        reserved: &["'memory(GiB)'", "\"memory(GiB)\""],
        per_rank: true,
        decimal_gb: false,
    },
];

/// An mmengine runner's log line (XTuner, the OpenMMLab tools): `Iter(train)
/// [ 10/1000]  lr: …  time: …  memory: 15234  loss: …` or `Epoch(train)
/// [1][ 10/270] …`, where `memory` is `torch.cuda.max_memory_allocated() //
/// (1024 * 1024)` since the previous log line, which resets the peak (mmengine
/// 0.10.7 `runner/log_processor.py`, `device/utils.py` `get_max_cuda_memory`).
pub fn is_mmengine_line(l: &str) -> bool {
    (l.contains("Iter(") || l.contains("Epoch(")) && l.contains("  memory: ")
}

/// The Unsloth notebooks' summary (`Peak reserved memory = 12.345 GB.`:
/// `round(torch.cuda.max_memory_reserved() / 1024 / 1024 / 1024, 3)`, so GiB
/// whatever the label; `… for training = …` is a difference, not a peak).
pub fn is_unsloth_line(l: &str) -> bool {
    l.contains("Peak reserved memory = ")
}

/// axolotl's `log_gpu_memory_usage` line. Up to 0.11 (`utils/bench.py`,
/// axolotl 0.6.0, 0.9.0, 0.10.0, 0.11.0): `{device} memory usage {msg}: {allocated}GB
/// (+{cache}GB cache, +{misc}GB misc)` — readings at that moment:
/// `memory_allocated`, `memory_reserved − memory_allocated`, and NVML's used
/// memory less the reserved pool (an extra left out when zero), all divided by
/// 1024³ whatever the label; older releases begin `GPU memory usage`. From
/// 0.12 (axolotl 0.12.0, 0.19.0): `{msg} {active}GB (+{allocated}GB allocated,
/// +{reserved}GB reserved)` — the peaks since the previous line
/// (`active_bytes.all.peak`, `max_memory_allocated`, `max_memory_reserved`,
/// then `reset_peak_memory_stats`); the `+` is a label, not a sum.
pub fn is_axolotl_usage_line(l: &str) -> bool {
    // Both end in the bracket, a test that spares other lines any search.
    l.bytes().rev().find(|b| !b.is_ascii_whitespace()) == Some(b')')
        && l.contains("GB (")
        && (l.contains(" memory usage ")
            || (l.contains("GB (+") && (l.contains("GB allocated") || l.contains("GB reserved"))))
}

/// verl's memory line, from `log_gpu_memory_usage` and the `GPUMemoryLogger`
/// decorator around its workers' steps: `{head}, memory allocated (GB): {a},
/// memory reserved (GB): {r}` and, from verl 0.4, `, device memory
/// used/total (GB): {used}/{total}` — readings at that moment
/// (`memory_allocated`, `memory_reserved`, and `mem_get_info`'s total − free,
/// every process on the GPU), divided by 1024³ whatever the label (verl
/// 0.3.0.post1, 0.4.1 `utils/debug/performance.py`; 0.9.1
/// `utils/profiler/performance.py`).
pub fn is_verl_usage_line(l: &str) -> bool {
    l.contains("memory allocated (GB): ") && l.contains("memory reserved (GB): ")
}

/// An axolotl usage line's figures, in MiB: the one before `GB (`, and each
/// `+XGB label` inside the brackets.
struct AxolotlUsage<'a> {
    lead: f64,
    extras: Vec<(&'a str, f64)>,
}

impl AxolotlUsage<'_> {
    /// The `+XGB label` figure with that label.
    fn extra(&self, label: &str) -> Option<f64> {
        self.extras
            .iter()
            .find(|(l, _)| *l == label)
            .map(|(_, v)| *v)
    }
}

fn axolotl_usage(line: &str) -> Option<AxolotlUsage<'_>> {
    let at = line.find("GB (")?;
    let head = &line[..at];
    // The figure's bytes are ASCII, so where they start is a char boundary
    // whatever precedes them.
    let digits = head
        .bytes()
        .rev()
        .take_while(|b| b.is_ascii_digit() || *b == b'.')
        .count();
    let lead = parse_size_mib(&head[head.len() - digits..], "GiB")?;
    let inside = &line[at + 4..];
    let inside = &inside[..inside.find(')').unwrap_or(inside.len())];
    let extras = inside
        .split(',')
        .filter_map(|e| {
            let e = e.trim().trim_start_matches('+');
            let (num, label) = e.split_once("GB")?;
            Some((label.trim(), parse_size_mib(num.trim(), "GiB")?))
        })
        .collect();
    Some(AxolotlUsage { lead, extras })
}

/// A script's own print of NVML's used memory as the Transformers docs write
/// it (`print_gpu_utilization`: `GPU memory occupied: {info.used//1024**2}
/// MB.`, transformers `docs/source/en/model_memory_anatomy.md`), the figure
/// the docs' tables report: what nvidia-smi shows as used on GPU 0, in MiB
/// whatever the label, read when the script prints it (after training, the
/// pool PyTorch keeps cached is still held).
pub fn is_nvml_used_line(l: &str) -> bool {
    l.contains("GPU memory occupied:")
}

/// LitGPT's `Memory used: 12.34 GB` (or the `| - Memory Used : …` summary row).
pub fn is_litgpt_line(l: &str) -> bool {
    (l.contains("Memory used:") || l.contains("Memory Used")) && l.trim_end().ends_with("GB")
}

/// A Trainer memory metric line (`train_mem_gpu_alloc_delta = 693MB`, as
/// `log_metrics` prints it), or the metrics dict printed whole
/// (`'train_mem_gpu_alloc_delta': 726663168`, bytes).
pub fn is_hf_metric_line(l: &str) -> bool {
    let t = l.trim();
    (t.contains("_mem_gpu_") || t.contains("_mem_cpu_"))
        && (t.contains('=') || t.contains("_delta':") || t.contains("_delta\":"))
}

/// Which of PyTorch's counters a script's print names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrintedCounter {
    Allocated,
    Reserved,
    /// "Peak GPU memory": read as the reserved counter, with a warning.
    Unnamed,
}

/// One peak a script printed (see [`peak_counters`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeakPrint {
    pub counter: PrintedCounter,
    pub mib: f64,
    /// Labelled `GB`/`MB`/`TB`, which a script may mean as 10^9 or 2^30.
    pub decimal_label: bool,
}

/// PyTorch's peak counters printed by a script of one's own:
/// `torch.cuda.max_memory_allocated() = 13245 MB`, `max_memory_reserved: 15.2GB`,
/// `Peak GPU memory allocated: 12.3 GiB`, `max memory cached (MiB): 900`
/// (`cached` is the pre-1.4 name of reserved). Each segment of the line (split
/// at `,` `;` `|`) that names a peak (`max` / `peak`) of GPU memory (`mem`)
/// and the allocated or reserved counter gives the figure after that name:
/// the first number with a size unit (binary, as [`parse_size_mib`] reads
/// them), else a unit written before it (`(GiB)`), else a whole number of at
/// least 2^20 as bytes. A peak of GPU memory (`gpu`, `cuda`, `vram`) whose
/// counter is not named is returned as such.
pub fn peak_counters(l: &str) -> Vec<PeakPrint> {
    let mut out = Vec::new();
    // Most lines of a long log say nothing of memory: leave before allocating.
    let said = |w: &[u8]| {
        l.as_bytes()
            .windows(w.len())
            .any(|x| x.eq_ignore_ascii_case(w))
    };
    if !(said(b"mem") || said(b"vram") || said(b"allocated") || said(b"reserved")) {
        return out;
    }
    // `18,432 MiB`: one figure, not two segments.
    let l = &without_thousands_commas(l);
    // A segment after one that said memory speaks of it too (`GPU memory |
    // max allocated: 12.3 GB | max reserved: 14.0 GB`); so does one that
    // names a counter's peak in a size unit without saying memory
    // (`peak allocated 14.2 GiB, peak reserved 16.0 GiB`, `Max allocated:
    // 12.4GB`: PyTorch's counters by name).
    let mut memory_said = false;
    for seg in l.split([',', ';', '|']) {
        let norm = seg.to_ascii_lowercase().replace('_', " ");
        let counter_peak = [
            "max allocated",
            "peak allocated",
            "max reserved",
            "peak reserved",
        ]
        .iter()
        .any(|w| norm.contains(w))
            && ["gib", "gb", "mib", "mb"].iter().any(|u| norm.contains(u));
        memory_said |= norm.contains("mem") || norm.contains("vram") || counter_peak;
        // A change over a stage (the Trainer's `…_peaked_delta`) is not a peak.
        if !memory_said || norm.contains("delta") {
            continue;
        }
        // Every counter the segment names, in order: one print may give both
        // (nanotron's `Peak allocated 23456.78MiB. Peak reserved: 34567.00MiB`,
        // nanotron 0.4 `logging.py` `log_memory`).
        let mut names: Vec<(usize, usize, PrintedCounter)> = Vec::new();
        for k in ["allocated", "reserved", "cached"] {
            let counter = if k == "allocated" {
                PrintedCounter::Allocated
            } else {
                PrintedCounter::Reserved
            };
            names.extend(
                norm.match_indices(k)
                    .map(|(i, _)| (i, i + k.len(), counter)),
            );
        }
        names.sort_by_key(|n| n.0);
        // `Peak GPU memory: 12.3 GiB`, `Max CUDA memory usage: 12345.67 MB`
        // (Colossal-AI): a peak whose counter is not named — `peak`, or `max`
        // with `usage`/`used`: a bare "Max memory = 14.7 GB" is the capacity
        // in the Unsloth notebooks.
        if names.is_empty() && (norm.contains("mem") || norm.contains("vram")) {
            let peak = norm.contains("peak")
                || (norm.contains("max") && (norm.contains("usage") || norm.contains("used")));
            if peak && ["gpu", "cuda", "vram"].iter().any(|w| norm.contains(w)) {
                // The rest of the word (`memory`) is skipped with the other
                // letters; `Peak VRAM: 18,432 MiB` names no memory but VRAM.
                let at = norm
                    .find("mem")
                    .map(|i| (i, i + 3))
                    .or_else(|| norm.find("vram").map(|i| (i, i + 4)));
                names.extend(at.map(|(i, end)| (i, end, PrintedCounter::Unnamed)));
            }
        }
        // Each counter's figure lies between its name and the next one's, and
        // it is a peak when `max` or `peak` comes since the previous name.
        let mut from = 0;
        for (n, &(start, end, counter)) in names.iter().enumerate() {
            let until = names.get(n + 1).map_or(seg.len(), |x| x.0);
            let before = &norm[from..start];
            from = end;
            if !(before.contains("max") || before.contains("peak")) {
                continue;
            }
            if let Some((mib, decimal_label)) = figure_in(&seg[end..until]) {
                out.push(PeakPrint {
                    counter,
                    mib,
                    decimal_label,
                });
            }
        }
    }
    out
}

/// The line with the commas that group a figure's thousands taken out
/// (`18,432 MiB` → `18432 MiB`): a comma between a digit and exactly three
/// digits that end the number. A list (`1,2`, `12, 14`) keeps its commas.
fn without_thousands_commas(l: &str) -> std::borrow::Cow<'_, str> {
    let b = l.as_bytes();
    let grouping = |i: usize| {
        b[i] == b',' && i > 0 && b[i - 1].is_ascii_digit() && {
            let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            digits == 3
        }
    };
    if !(0..b.len()).any(grouping) {
        return std::borrow::Cow::Borrowed(l);
    }
    let kept: String = l
        .char_indices()
        .filter(|&(i, _)| !grouping(i))
        .map(|(_, c)| c)
        .collect();
    std::borrow::Cow::Owned(kept)
}

/// A print of PyTorch's current (not peak) counters on a GPU
/// (`torch.cuda.memory_allocated: 11.5GB`, `GPU mem allocated: 12.3 GB`):
/// not read as a peak — what the GPU held between two prints is not in it —
/// but named when a log holds nothing else ([`super::refusal_reason`]).
pub fn is_current_counter_print(l: &str) -> bool {
    let norm = l.to_ascii_lowercase().replace('_', " ");
    let gpu = ["gpu", "cuda", "vram"].iter().any(|w| norm.contains(w));
    let counter = [
        "memory allocated",
        "memory reserved",
        "mem allocated",
        "mem reserved",
    ]
    .iter()
    .any(|w| norm.contains(w));
    gpu && counter && !norm.contains("max") && !norm.contains("peak") && figure_in(l).is_some()
}

/// The figure in the text after a counter's name (see [`peak_counters`]):
/// (MiB, labelled `GB`/`MB`/`TB`).
fn figure_in(rest: &str) -> Option<(f64, bool)> {
    let toks: Vec<&str> = rest
        .split(|c: char| c.is_whitespace() || matches!(c, ':' | '=' | '(' | ')' | '[' | ']'))
        .filter(|t| !t.is_empty())
        .collect();
    let is_unit = |u: &str| parse_size_mib("1", u).is_some();
    let mut unit_before: Option<&str> = None;
    for (i, t) in toks.iter().enumerate() {
        let end = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, tail) = t.split_at(end);
        if num.parse::<f64>().is_err() {
            if unit_before.is_none() && is_unit(t) {
                unit_before = Some(t);
            }
            continue;
        }
        // `12.3GB`, `12.3 GB`, or a unit written before the figure (`(GiB): 12.3`).
        let unit = if tail.is_empty() {
            toks.get(i + 1)
                .copied()
                .filter(|u| is_unit(u))
                .or(unit_before)
        } else if is_unit(tail) {
            Some(tail)
        } else if matches!(tail.trim_end_matches(['.', ',']), "G" | "M") {
            // `12.3G` (XTuner's `peak gpu memory {max_memory/1024**3:.1f}G`,
            // xtuner 0.2.0 `_lite/accelerate/utils.py`): a one-letter label,
            // read as the binary unit like `GB`.
            let mib = num.parse::<f64>().ok()? * if tail.starts_with('G') { 1024.0 } else { 1.0 };
            return Some((mib, true));
        } else {
            continue;
        };
        if let Some(u) = unit {
            let decimal_label = matches!(u.trim_end_matches(['.', ',']), "GB" | "MB" | "TB");
            return parse_size_mib(num, u).map(|m| (m, decimal_label));
        }
        // A whole number of bytes.
        if !num.contains('.') {
            if let Ok(bytes) = num.parse::<f64>() {
                if bytes >= 1024.0 * 1024.0 {
                    return Some((bytes / (1024.0 * 1024.0), false));
                }
            }
        }
    }
    None
}

/// The number after `key` (and an optional `=`/`:`, or a dict's `': `) with
/// its unit; `default_unit` when none follows — also when the next word is
/// not a size unit (torchtune's `peak_memory_alloc:17.48 peak_memory_…`).
fn figure_after(line: &str, key: &str, default_unit: &str) -> Option<f64> {
    let i = line.find(key)? + key.len();
    let rest = line[i..].trim_start_matches([' ', '\t', '\'', '"', '=', ':']);
    let num_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(rest.len());
    let num = &rest[..num_end];
    if num.is_empty() {
        return None;
    }
    let unit: String = rest[num_end..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    let unit = if parse_size_mib("1", &unit).is_some() {
        unit.as_str()
    } else {
        default_unit
    };
    let v: f64 = num.parse().ok()?;
    if v < 0.0 {
        return Some(-parse_size_mib(&(-v).to_string(), unit)?);
    }
    parse_size_mib(num, unit)
}

/// The MiB of a figure [`figure_after`] read as binary GB (2^30) that the
/// tool had divided by 10^9 (LitGPT's `Memory used`, Composer's monitor).
fn decimal_gb(mib_read_as_binary: f64) -> f64 {
    mib_read_as_binary * 1e9 / (1u64 << 30) as f64
}

/// Keeps a rank's peaks (Megatron's per-rank report, `[rankN]:`-prefixed prints).
fn keep_rank(
    a: &mut super::AllocatorStats,
    rank: u32,
    allocated: Option<f64>,
    reserved: Option<f64>,
) {
    match a.ranks.iter_mut().find(|x| x.rank == rank) {
        Some(x) => {
            if let Some(v) = allocated {
                keep_max(&mut x.peak_allocated_mib, v);
            }
            if let Some(v) = reserved {
                keep_max(&mut x.peak_reserved_mib, v);
            }
        }
        None => {
            a.ranks.push(RankAllocator {
                rank,
                peak_allocated_mib: allocated,
                peak_reserved_mib: reserved,
            });
            a.ranks.sort_by_key(|x| x.rank);
        }
    }
}

/// The figures (MiB) of one per-rank Megatron report (Megatron-LM's or
/// Megatron-Bridge's): the peaks, or the current figures where a peak is not
/// printed, for the log and for the printing rank.
fn megatron_report(
    b: &mut Builder,
    rank: Option<u32>,
    alloc: Option<f64>,
    max_alloc: Option<f64>,
    reserved: Option<f64>,
    max_reserved: Option<f64>,
) -> &mut super::AllocatorStats {
    let a = b.allocator();
    if let Some(v) = max_alloc.or(alloc) {
        keep_max(&mut a.peak_allocated_mib, v);
    }
    if let Some(v) = max_reserved.or(reserved) {
        keep_max(&mut a.peak_reserved_mib, v);
    }
    if let Some(r) = rank {
        keep_rank(a, r, max_alloc, max_reserved);
    }
    a
}

/// `[Rank 3]` / `[rank3]:` anywhere in the line, else torchrun's `--tee`
/// prefix `[default3]:` (`log_line_prefix_template` "[{role_name}{local_rank}]:",
/// torch.distributed.elastic: the rank on its node, the global one on one node),
/// else a script's own `Rank 3: …` opening the line (`print(f"Rank {rank}: …")`),
/// else the rank of the torchrun prefix taken off the line (`prefix_rank`,
/// [`super::Builder::line_rank`]).
fn rank_of(line: &str, prefix_rank: Option<u32>) -> Option<u32> {
    named_rank(line).or(prefix_rank)
}

fn named_rank(line: &str) -> Option<u32> {
    let low = line.to_ascii_lowercase();
    let i = match low.find("[rank") {
        Some(i) => i + 5,
        None => match low.strip_prefix("[default") {
            Some(_) => 8,
            None => {
                let rest = low.trim_start().strip_prefix("rank")?.trim_start();
                let d = rest.bytes().take_while(u8::is_ascii_digit).count();
                if d == 0 || !rest[d..].starts_with(':') {
                    return None;
                }
                return rest[..d].parse().ok();
            }
        },
    };
    let digits: String = low[i..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

#[derive(Default)]
pub struct LogParser {
    /// The warnings about a script's prints, given once each.
    warned_decimal_label: bool,
    warned_unnamed: bool,
    warned_axolotl_moment: bool,
    /// An ms-swift `memory(GiB)` figure was read (see [`LogParser::finish`]).
    saw_ms_swift: bool,
    warned_verl_moment: bool,
    /// torchtune's figures are decimal GB: its memory stats said `GB`.
    torchtune_decimal: bool,
    /// The largest `device memory used` of verl's lines, MiB.
    verl_device_used: Option<f64>,
    /// An interactive session's prompt read a peak counter: which, the
    /// bytes one printed unit stands for, and the prompt's line; its value
    /// is on the next line ([`super::repl`]).
    repl: Option<(PrintedCounter, f64, u64)>,
}

impl LogParser {
    /// Keeps a script's peak prints (for the log, and for the rank that
    /// printed them where the line or its prefix says), warning once about an
    /// unnamed counter or a decimal-looking label.
    fn record_peaks(&mut self, no: u64, line: &str, counters: &[PeakPrint], b: &mut Builder) {
        let rank = rank_of(line, b.line_rank);
        for p in counters {
            if p.counter == PrintedCounter::Unnamed && !self.warned_unnamed {
                self.warned_unnamed = true;
                b.warnings.push(format!(
                    "a peak that does not name its counter (line {no}): read as the reserved counter, the one \
                     torch.cuda.max_memory_reserved() and most frameworks report"
                ));
            }
            let a = b.allocator();
            let (allocated, reserved) = if p.counter == PrintedCounter::Allocated {
                keep_max(&mut a.peak_allocated_mib, p.mib);
                (Some(p.mib), None)
            } else {
                keep_max(&mut a.peak_reserved_mib, p.mib);
                (None, Some(p.mib))
            };
            // torchrun's `[rank3]:` prefix: each rank's own peak.
            if let Some(r) = rank {
                keep_rank(a, r, allocated, reserved);
            }
            if p.decimal_label && !self.warned_decimal_label {
                self.warned_decimal_label = true;
                b.warnings.push(format!(
                    "figures labelled GB or MB (or G, M) (line {no}): read as 2^30 / 2^20 bytes, as a script dividing \
                     PyTorch's counter by 1024**3 prints it; if it divided by 1e9, the \
                     counter was 7 % below these figures"
                ));
            }
        }
    }

    /// torchtune 0.1–0.2 divided its memory stats by 10^9 and printed `GB`;
    /// from 0.3 it divides by 1024³ and prints `GiB` (`utils/memory.py`,
    /// `training/memory.py` `get_memory_stats`, `log_memory_stats`). The
    /// metric logger's `peak_memory_alloc:` figures carry no unit: they are
    /// read as the log's labelled lines were.
    fn note_torchtune_unit(&mut self, line: &str) {
        if line.contains(" GB") && !line.contains("GiB") {
            self.torchtune_decimal = true;
        }
    }

    fn torchtune_unit(&self, mib_read_as_binary: f64) -> f64 {
        if self.torchtune_decimal {
            decimal_gb(mib_read_as_binary)
        } else {
            mib_read_as_binary
        }
    }
}

impl LineParser for LogParser {
    fn line(&mut self, no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        // Each branch records the first log format it recognises (`b.seen`),
        // so a log detected late is named by what it held.
        // The tools' own keys below all hold `mem` or `vram`; most lines of a
        // long log have neither, so one test spares them the rest.
        let memish = line.contains("mem") || line.contains("vram");
        if let Some(code) = super::repl::input(line) {
            self.repl = super::repl::peak_call(code).map(|(c, per)| (c, per, no));
            if self.repl.is_some() {
                return Ok(());
            }
        } else if let Some((counter, per_unit, _)) = self.repl {
            if line.trim().is_empty() {
                return Ok(());
            }
            self.repl = None;
            if let Some(v) = super::repl::output(line) {
                b.seen.get_or_insert(Format::PytorchPeakCounters);
                let p = PeakPrint {
                    counter,
                    mib: v * per_unit / (1024.0 * 1024.0),
                    decimal_label: false,
                };
                self.record_peaks(no, line, &[p], b);
                return Ok(());
            }
        }
        if is_deepspeed_line(line) {
            b.seen.get_or_insert(Format::DeepspeedSeeMemoryUsage);
            // ` MA 0.65 GB  Max_MA 0.66 GB  CA 0.68 GB  Max_CA 1 GB`
            let ma = figure_after(line, " MA ", "GB");
            let max_ma = figure_after(line, "Max_MA", "GB");
            let ca = figure_after(line, " CA ", "GB");
            let max_ca = figure_after(line, "Max_CA", "GB");
            let a = b.allocator();
            // `Max_CA` is rounded to whole GB and can print below `CA`: take both.
            for v in [ma, max_ma].into_iter().flatten() {
                keep_max(&mut a.peak_allocated_mib, v);
            }
            for v in [ca, max_ca].into_iter().flatten() {
                keep_max(&mut a.peak_reserved_mib, v);
            }
            if ma.is_some() {
                a.current_allocated_mib = ma;
            }
            if ca.is_some() {
                a.current_reserved_mib = ca;
            }
            return Ok(());
        }
        if line.contains("MaxMemAllocated=") {
            b.seen.get_or_insert(Format::DeepspeedSeeMemoryUsage);
            if let Some(v) = figure_after(line, "MaxMemAllocated=", "GB") {
                keep_max(&mut b.allocator().peak_allocated_mib, v);
            }
            return Ok(());
        }
        if memish && line.contains("memory (GB)") && line.contains("mem-") {
            // Megatron-Bridge's report (`[Rank N] (after K iterations) memory
            // (GB) | mem-allocated-gigabytes: … | mem-max-allocated-gigabytes:
            // …`): `torch.cuda.memory_stats()` bytes divided by 1.0e9 and
            // rounded to five significant digits (megatron-bridge 0.6.2
            // `training/utils/train_utils.py` `report_memory`), so GB = 10^9.
            b.seen.get_or_insert(Format::MegatronMemoryReport);
            let num = |key: &str| -> Option<f64> {
                let i = line.find(key)? + key.len();
                let rest = line[i..].trim_start();
                let end = rest
                    .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-'))
                    .unwrap_or(rest.len());
                rest[..end].parse().ok()
            };
            let mib = |key: &str| num(key).map(|g| g * 1e9 / (1024.0 * 1024.0));
            let max_alloc = mib("mem-max-allocated-gigabytes:");
            let max_reserved = mib("mem-max-reserved-gigabytes:");
            let alloc = mib("mem-allocated-gigabytes:");
            let reserved = mib("mem-reserved-gigabytes:");
            let a = megatron_report(
                b,
                rank_of(line, b.line_rank),
                alloc,
                max_alloc,
                reserved,
                max_reserved,
            );
            a.current_allocated_mib = alloc.or(a.current_allocated_mib);
            a.current_reserved_mib = reserved.or(a.current_reserved_mib);
            // Its key for `num_alloc_retries` is spelled `mem-alloc-retires`.
            if let Some(n) = num("mem-alloc-retires:").filter(|n| *n > 0.0) {
                b.warnings.push(format!(
                    "line {no}: the allocator freed its cache and retried {n} times \
                     (mem-alloc-retires): the run was at the edge of the GPU's memory"
                ));
            }
            return Ok(());
        }
        if memish && line.contains("Theoretical memory footprints:") {
            // Megatron's own estimate from its arguments, printed before
            // training (`report_theoretical_memory`, MB = 2^20: megatron-core
            // 0.19.2 `training/theoretical_memory_usage.py`): shown beside
            // the plan, never compared as a measurement.
            b.seen.get_or_insert(Format::MegatronMemoryReport);
            // Megatron-Bridge prints `MB` or `GB` (2^30) and, without an
            // activation estimate, the weights and optimizer alone.
            if let Some(v) = figure_after(line, "total=", "MB") {
                b.notes.push((
                    "Megatron's theoretical footprint (its own prediction, not a measurement)"
                        .to_string(),
                    v,
                ));
            } else if let Some(v) = figure_after(line, "weight and optimizer=", "MB") {
                b.notes.push((
                    "Megatron's theoretical weights and optimizer (its own prediction, not a \
                     measurement)"
                        .to_string(),
                    v,
                ));
            }
            return Ok(());
        }
        if line.contains("memory (MB)") && line.contains("allocated:") {
            b.seen.get_or_insert(Format::MegatronMemoryReport);
            let alloc = figure_after(line, "| allocated:", "MB");
            let max_alloc = figure_after(line, "max allocated:", "MB");
            let reserved = figure_after(line, "| reserved:", "MB");
            let max_reserved = figure_after(line, "max reserved:", "MB");
            let rank = rank_of(line, b.line_rank);
            megatron_report(b, rank, alloc, max_alloc, reserved, max_reserved);
            // `--log-device-memory-used` appends the device's used memory
            // (`torch.cuda.device_memory_used()`, what NVML and nvidia-smi
            // report, in MB = 2^20: megatron-core 0.19.2
            // `training/utils/common_utils.py` `report_memory`): one reading of
            // the printing rank's GPU.
            if let Some(v) = figure_after(line, "total device memory used:", "MB") {
                let r = rank.unwrap_or(0);
                b.describe(r, None, Some(&format!("rank {r}")), None);
                b.sample(r, None, None, v);
            }
            return Ok(());
        }
        if line.contains("Peak Memory consumed during the") {
            b.seen.get_or_insert(Format::AccelerateTracemalloc);
        }
        if line.contains("Peak Memory consumed during the") && line.contains("GPU Total") {
            if let Some(v) = figure_after(line, "(max):", "MB") {
                keep_max(&mut b.allocator().peak_allocated_mib, v);
            }
            return Ok(());
        }
        if line.contains("GPU Memory before entering the") {
            b.seen.get_or_insert(Format::AccelerateTracemalloc);
            if let Some((label, v)) = line.rsplit_once(':') {
                if let Ok(v) = v.trim().parse::<f64>() {
                    b.notes.push((label.trim().to_string(), v));
                }
            }
            return Ok(());
        }
        if is_torchtitan_line(line) {
            b.seen.get_or_insert(Format::TorchtitanMetrics);
            // Each step line holds the interval's `max_memory_reserved` (the
            // peak is reset after every log); the model-init line too.
            let key = if line.contains("memory usage for model:") {
                "memory usage for model:"
            } else {
                "memory: "
            };
            if let Some(v) = figure_after(line, key, "GiB") {
                let rank = rank_of(line, b.line_rank);
                let a = b.allocator();
                keep_max(&mut a.peak_reserved_mib, v);
                // torchrun's `[rank3]:` prefix when every rank logs.
                if let Some(r) = rank {
                    keep_rank(a, r, None, Some(v));
                }
            }
            return Ok(());
        }
        if let Some(k) = KEYED_PEAKS
            .iter()
            .filter(|_| memish)
            .find(|k| k.matches(line))
        {
            k.read(line, b);
            self.saw_ms_swift |= k.format == Format::MsSwiftMemory;
            return Ok(());
        }
        if memish && is_mmengine_line(line) {
            b.seen.get_or_insert(Format::MmengineMemory);
            if let Some(v) = figure_after(line, "  memory: ", "MiB") {
                keep_max(&mut b.allocator().peak_allocated_mib, v);
            }
            return Ok(());
        }
        if is_torchtune_line(line) {
            b.seen.get_or_insert(Format::TorchtuneMemoryStats);
            self.note_torchtune_unit(line);
            let unit = |v: f64| self.torchtune_unit(v);
            let a = b.allocator();
            for key in ["peak memory allocation:", "peak_memory_alloc:"] {
                if let Some(v) = figure_after(line, key, "GiB") {
                    keep_max(&mut a.peak_allocated_mib, unit(v));
                }
            }
            for key in ["peak memory reserved:", "peak_memory_reserved:"] {
                if let Some(v) = figure_after(line, key, "GiB") {
                    keep_max(&mut a.peak_reserved_mib, unit(v));
                }
            }
            return Ok(());
        }
        if line.contains("peak memory active:") || line.contains("peak_memory_active:") {
            // torchtune's third figure (peak active bytes ≥ allocated): the
            // allocated counter's peak when that is not printed.
            self.note_torchtune_unit(line);
            let v = figure_after(line, "peak memory active:", "GiB")
                .or_else(|| figure_after(line, "peak_memory_active:", "GiB"))
                .map(|v| self.torchtune_unit(v));
            if let Some(v) = v {
                let a = b.allocator();
                if a.peak_allocated_mib.is_none() {
                    a.peak_allocated_mib = Some(v);
                }
            }
            return Ok(());
        }
        if memish && is_verl_usage_line(line) {
            b.seen.get_or_insert(Format::VerlMetrics);
            let allocated = figure_after(line, "memory allocated (GB):", "GiB");
            let reserved = figure_after(line, "memory reserved (GB):", "GiB");
            // Readings at a moment: the largest reserved one is the pool's
            // peak as far as the log tells (a lower bound: verl empties the
            // cache between phases); allocated is shown, not compared.
            let a = b.allocator();
            if let Some(v) = allocated {
                a.current_allocated_mib = Some(v);
            }
            if let Some(v) = reserved {
                a.current_reserved_mib = Some(v);
                keep_max(&mut a.peak_reserved_mib, v);
            }
            if let Some(v) = figure_after(line, "used/total (GB):", "GiB") {
                keep_max(&mut self.verl_device_used, v);
            }
            if !self.warned_verl_moment {
                self.warned_verl_moment = true;
                b.warnings.push(format!(
                    "verl's memory lines (line {no}) are readings at a moment, not peaks: the largest \
                     reserved reading is compared as the reserved peak (a lower bound — verl empties the \
                     cache between phases); allocated is shown, not compared; device memory used counts \
                     every process on the GPU, a colocated rollout engine (vLLM, SGLang) too"
                ));
            }
            return Ok(());
        }
        if is_axolotl_usage_line(line) {
            if let Some(u) = axolotl_usage(line) {
                b.seen.get_or_insert(Format::AxolotlMetrics);
                let a = b.allocator();
                if u.extra("allocated").is_some() || u.extra("reserved").is_some() {
                    // Peaks since the previous line (0.12 and later).
                    keep_max(
                        &mut a.peak_allocated_mib,
                        u.extra("allocated").unwrap_or(u.lead),
                    );
                    if let Some(v) = u.extra("reserved") {
                        keep_max(&mut a.peak_reserved_mib, v);
                    }
                    return Ok(());
                }
                // Readings at a moment (0.11 and earlier): what was allocated
                // then is no peak and is not compared; the pool only grows
                // (nothing here empties it), so what it holds once training
                // has run steps (`while training`, after the second) is
                // taken as its peak, a lower bound.
                let reserved = u.lead + u.extra("cache").unwrap_or(0.0);
                a.current_allocated_mib = Some(u.lead);
                a.current_reserved_mib = Some(reserved);
                keep_max(&mut a.peak_reserved_mib, reserved);
                let what = line
                    .split_once(" memory usage ")
                    .and_then(|(_, r)| r.split_once(':'))
                    .map_or("", |(m, _)| m.trim());
                if let Some(misc) = u.extra("misc") {
                    b.notes
                        .push((format!("device memory used (NVML) {what}"), reserved + misc));
                }
                if !self.warned_axolotl_moment {
                    self.warned_axolotl_moment = true;
                    b.warnings.push(format!(
                        "axolotl's memory usage lines (line {no}) are readings at a moment, not peaks: the \
                         reserved pool after training steps is compared as the reserved peak (a lower bound); \
                         the allocated figure is shown, not compared"
                    ));
                }
                return Ok(());
            }
        }
        if memish && is_nvml_used_line(line) {
            b.seen.get_or_insert(Format::NvmlUsedPrint);
            if let Some(v) = figure_after(line, "GPU memory occupied:", "MiB") {
                b.describe(0, None, None, None);
                b.sample(0, None, None, v);
            }
            return Ok(());
        }
        if is_unsloth_line(line) {
            b.seen.get_or_insert(Format::UnslothMemoryStats);
            if let Some(v) = figure_after(line, "Peak reserved memory = ", "GiB") {
                keep_max(&mut b.allocator().peak_reserved_mib, v);
            }
            return Ok(());
        }
        if line.contains("Peak reserved memory for training = ")
            || line.contains("Peak reserved memory % of max memory = ")
        {
            return Ok(());
        }
        if is_litgpt_line(line) {
            b.seen.get_or_insert(Format::LitgptMemoryUsed);
            // `torch.cuda.max_memory_allocated() / 1e9`: decimal gigabytes.
            let at = line
                .find("Memory used")
                .or_else(|| line.find("Memory Used"))
                .unwrap_or(0);
            if let Some(gb) = figure_after(&line[at..], ":", "GB") {
                // `figure_after` reads GB as 2^30 (PyTorch's habit); LitGPT's is 1e9.
                keep_max(&mut b.allocator().peak_allocated_mib, decimal_gb(gb));
            }
            return Ok(());
        }
        if is_hf_metric_line(line) {
            b.seen.get_or_insert(Format::HfTrainerMetrics);
            if !line.contains('=') {
                // The metrics dict: each `'…_mem_…_delta': bytes` entry.
                for (k, v) in line.split(',').filter_map(|e| e.split_once(':')) {
                    let key = k.trim().trim_matches(['{', '\'', '"']);
                    if !(key.contains("_mem_") && key.ends_with("_delta")) {
                        continue;
                    }
                    if let Ok(v) = v.trim().trim_end_matches('}').trim().parse::<f64>() {
                        b.notes.push((key.to_string(), v / (1024.0 * 1024.0)));
                    }
                }
                return Ok(());
            }
            if let Some((k, _)) = line.split_once('=') {
                let key = k.trim();
                if let Some(v) = figure_after(line, key, "MB") {
                    b.notes.push((key.to_string(), v));
                }
            }
            return Ok(());
        }
        // Last, after every framework's own lines: a script's own print.
        let counters = peak_counters(line);
        if !counters.is_empty() {
            b.seen.get_or_insert(Format::PytorchPeakCounters);
            self.record_peaks(no, line, &counters, b);
            return Ok(());
        }
        Ok(())
    }

    /// The Trainer's deltas add up to the train stage's peak of the allocated
    /// counter over what was allocated before the Trainer was built (its
    /// docstring: "add up alloc_delta + peaked_delta and you know how much
    /// memory was needed"); shown as a note, not compared as a peak, since a
    /// model placed on the GPU before the Trainer is in neither.
    fn finish(&mut self, b: &mut Builder) -> Result<(), TraceError> {
        if let Some(v) = self.verl_device_used {
            b.notes.push((
                "device memory used (verl's largest reading, every process on the GPU)".into(),
                v,
            ));
        }
        if self.saw_ms_swift {
            // `get_max_cuda_memory` / `get_max_reserved_memory` summed
            // `max_memory_reserved` over the process's GPUs through ms-swift
            // 4.4 (2.6.1: over every visible GPU; 3.x–4.4: every GPU of a
            // model-parallel, device-map run) and takes the largest from 4.5.0
            // (`swift/utils/torch_utils.py`).
            b.warnings.push(
                "ms-swift before 4.5 logged memory(GiB) as the sum over the GPUs one process \
                 uses: for one model spread over several GPUs (device_map, no torchrun) that is \
                 their total, not one GPU's peak — divide by the GPU count, or compare a log \
                 from ms-swift 4.5 or later (the largest GPU's)"
                    .into(),
            );
        }
        let last = |key: &str| {
            b.notes
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| *v)
        };
        if let (Some(init), Some(alloc), Some(peaked)) = (
            last("init_mem_gpu_alloc_delta"),
            last("train_mem_gpu_alloc_delta"),
            last("train_mem_gpu_peaked_delta"),
        ) {
            b.notes.push((
                "train peak allocated over what preceded the Trainer (init + train alloc + train peaked delta)"
                    .into(),
                init + alloc + peaked,
            ));
        }
        Ok(())
    }
}

/// `torch.cuda.memory_summary()`: the `Allocated memory` and `GPU reserved
/// memory` rows (Cur Usage, Peak Usage); the last table's current figures
/// and every table's peaks.
#[derive(Default)]
pub struct SummaryParser {
    tables: u32,
}

fn cell_mib(cell: &str) -> Option<f64> {
    let mut it = cell.split_whitespace();
    parse_size_mib(it.next()?, it.next()?)
}

/// The integer after `key` in a printed `torch.cuda.memory_stats()` dict —
/// `'allocated_bytes.all.peak': 1234` (a dict, pprint or JSON) or
/// `('allocated_bytes.all.peak', 1234)` (the `OrderedDict` older PyTorch
/// returns).
fn stat_count(line: &str, key: &str) -> Option<f64> {
    let i = line.find(key)? + key.len();
    let rest = line[i..].trim_start_matches(['\'', '"', ':', ' ', '=', ',']);
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse::<f64>().ok()
}

/// [`stat_count`] of a byte counter, in MiB.
fn stat_mib(line: &str, key: &str) -> Option<f64> {
    stat_count(line, key).map(|b| b / (1024.0 * 1024.0))
}

impl LineParser for SummaryParser {
    fn line(&mut self, no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        // The allocator's own count of failed allocations, and of the
        // times it freed its cache and retried (a run at the edge).
        if let Some(n) = stat_count(line, "num_ooms").filter(|n| *n > 0.0) {
            b.warnings.push(format!(
                "line {no}: the allocator counted {n} CUDA out-of-memory errors (num_ooms)"
            ));
        }
        if let Some(n) = stat_count(line, "num_alloc_retries").filter(|n| *n > 0.0) {
            b.warnings.push(format!(
                "line {no}: the allocator freed its cache and retried {n} times \
                 (num_alloc_retries): the run was at the edge of the GPU's memory"
            ));
        }
        if line.contains("_bytes.all.") {
            let a = b.allocator();
            if let Some(v) = stat_mib(line, "allocated_bytes.all.peak") {
                keep_max(&mut a.peak_allocated_mib, v);
            }
            if let Some(v) = stat_mib(line, "reserved_bytes.all.peak") {
                keep_max(&mut a.peak_reserved_mib, v);
            }
            if let Some(v) = stat_mib(line, "allocated_bytes.all.current") {
                a.current_allocated_mib = Some(v);
            }
            if let Some(v) = stat_mib(line, "reserved_bytes.all.current") {
                a.current_reserved_mib = Some(v);
            }
            if a.peak_allocated_mib.is_none()
                && a.peak_reserved_mib.is_none()
                && a.current_allocated_mib.is_none()
            {
                b.allocator = None;
            }
            return Ok(());
        }
        if line.contains("memory summary") {
            self.tables += 1;
            return Ok(());
        }
        let t = line.trim();
        if let Some(rest) = t.strip_prefix('|') {
            let cells: Vec<&str> = rest.split('|').map(str::trim).collect();
            let row = cells.first().copied().unwrap_or("");
            let is_alloc = row == "Allocated memory";
            let is_reserved = row == "GPU reserved memory";
            if is_alloc || is_reserved {
                let (Some(cur), Some(peak)) = (
                    cells.get(1).and_then(|c| cell_mib(c)),
                    cells.get(2).and_then(|c| cell_mib(c)),
                ) else {
                    return Err(TraceError::at(
                        no,
                        format!("`{row}` row: expected `| Cur Usage | Peak Usage | …` sizes such as `184648 KiB`"),
                    ));
                };
                let a = b.allocator();
                if is_alloc {
                    a.current_allocated_mib = Some(cur);
                    keep_max(&mut a.peak_allocated_mib, peak);
                } else {
                    a.current_reserved_mib = Some(cur);
                    keep_max(&mut a.peak_reserved_mib, peak);
                }
            }
            if let Some(c) = cells.iter().find(|c| c.starts_with("CUDA OOMs:")) {
                if let Some(n) = c
                    .trim_start_matches("CUDA OOMs:")
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|n| *n > 0.0)
                {
                    b.warnings.push(format!(
                        "the allocator counted {n} CUDA out-of-memory errors"
                    ));
                }
            }
        }
        Ok(())
    }
}
