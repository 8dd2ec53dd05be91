//! Parsers for what training runs print about GPU memory: `nvidia-smi`
//! (table, `--query-gpu` CSV, `dmon`, `pmon`, `-q`), PyTorch (OOM messages,
//! `memory_summary()`), DeepSpeed `see_memory_usage`, Megatron-LM's per-rank
//! report, Hugging Face Trainer and accelerate memory reports, torchtitan's,
//! torchtune's, axolotl's, Unsloth's and LitGPT's training logs, a script's own print of
//! PyTorch's peak counters or of NVML's used memory, `nvitop`, `gpustat`, `rocm-smi`, `amd-smi`, Ascend's `npu-smi`, DCGM (dcgm-exporter, `dcgmi dmon`),
//! Weights & Biases' system metrics and Lightning's `DeviceStatsMonitor` CSV. Pure: they read lines and return figures in MiB (2^20 bytes);
//! a figure the input does not state is `None`, never a guess.
//!
//! Parsing streams: the text is read line by line ([`parse_reader`]), each GPU
//! keeps a bounded series (pairs of neighbouring points merge, keeping the
//! larger value, once [`SERIES_POINTS`] are held), so a 1 GB log is read in
//! constant memory.

pub mod dcgm;
pub mod findings;
pub mod lightning;
pub mod logs;
pub mod notebook;
pub mod npu_smi;
pub mod oom;
pub mod repl;
pub mod smi_csv;
pub mod smi_misc;
pub mod smi_table;
pub mod snapshot;
pub mod wandb;

use serde::{Deserialize, Serialize};
use std::io::BufRead;

pub use oom::OomEvent;

/// Parses a size such as `96.00 MiB`, `5.81 GiB`, `0 bytes`, `982.50 KiB` into MiB.
/// PyTorch, DeepSpeed, Megatron and nvidia-smi all divide by powers of 1024,
/// whatever their labels say (`MB`, `GB`), so the labels are read as binary.
pub fn parse_size_mib(num: &str, unit: &str) -> Option<f64> {
    let v: f64 = num.trim().replace(',', "").parse().ok()?;
    let unit = unit.trim().trim_end_matches(['.', ',', ';', ')']);
    let f = match unit {
        "bytes" | "byte" | "B" => 1.0 / (1024.0 * 1024.0),
        "KiB" | "KB" | "kB" => 1.0 / 1024.0,
        "MiB" | "MB" => 1.0,
        "GiB" | "GB" => 1024.0,
        "TiB" | "TB" => 1024.0 * 1024.0,
        _ => return None,
    };
    (v.is_finite() && v >= 0.0).then_some(v * f)
}

/// Parses `12345MiB` / `12345 MiB` / `1.5GB` (number and unit together or apart).
pub fn parse_joined_mib(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    parse_size_mib(&s[..split], &s[split..])
}

/// The first `<number> <unit>` in `s`.
pub fn first_size_mib(s: &str) -> Option<f64> {
    let toks: Vec<&str> = s.split_whitespace().collect();
    toks.windows(2).find_map(|w| parse_size_mib(w[0], w[1]))
}

/// The last `<number> <unit>` in `s`.
pub fn last_size_mib(s: &str) -> Option<f64> {
    let toks: Vec<&str> = s.split_whitespace().collect();
    toks.windows(2)
        .rev()
        .find_map(|w| parse_size_mib(w[0], w[1]))
}

/// The formats read, with the name `memplan verify --format` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    NvidiaSmiTable,
    NvidiaSmiCsv,
    NvidiaSmiDmon,
    NvidiaSmiPmon,
    NvidiaSmiQuery,
    PytorchOom,
    PytorchMemorySummary,
    DeepspeedSeeMemoryUsage,
    MegatronMemoryReport,
    HfTrainerMetrics,
    AccelerateTracemalloc,
    TorchtitanMetrics,
    TorchtuneMemoryStats,
    // Serialized as the name `--format` takes; the old spelling still reads.
    #[serde(rename = "axolotl-memory-metrics", alias = "axolotl-metrics")]
    AxolotlMetrics,
    UnslothMemoryStats,
    LitgptMemoryUsed,
    PytorchPeakCounters,
    Gpustat,
    RocmSmi,
    AmdSmi,
    Nvitop,
    PytorchGpuProcesses,
    MsSwiftMemory,
    MmengineMemory,
    LlamafactoryVram,
    VerlMetrics,
    WandbSystemMetrics,
    LightningDeviceStats,
    Dcgm,
    NvmlUsedPrint,
    ComposerMemoryMonitor,
    NpuSmi,
    /// `torch.cuda.memory._dump_snapshot()`'s pickle ([`snapshot`]).
    PytorchMemorySnapshot,
}

impl Format {
    pub const ALL: [Format; 33] = [
        Format::NvidiaSmiTable,
        Format::NvidiaSmiCsv,
        Format::NvidiaSmiDmon,
        Format::NvidiaSmiPmon,
        Format::NvidiaSmiQuery,
        Format::PytorchOom,
        Format::PytorchMemorySummary,
        Format::DeepspeedSeeMemoryUsage,
        Format::MegatronMemoryReport,
        Format::HfTrainerMetrics,
        Format::AccelerateTracemalloc,
        Format::TorchtitanMetrics,
        Format::TorchtuneMemoryStats,
        Format::AxolotlMetrics,
        Format::UnslothMemoryStats,
        Format::LitgptMemoryUsed,
        Format::PytorchPeakCounters,
        Format::Gpustat,
        Format::RocmSmi,
        Format::AmdSmi,
        Format::Nvitop,
        Format::PytorchGpuProcesses,
        Format::MsSwiftMemory,
        Format::MmengineMemory,
        Format::LlamafactoryVram,
        Format::VerlMetrics,
        Format::WandbSystemMetrics,
        Format::LightningDeviceStats,
        Format::Dcgm,
        Format::NvmlUsedPrint,
        Format::ComposerMemoryMonitor,
        Format::NpuSmi,
        Format::PytorchMemorySnapshot,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Format::NvidiaSmiTable => "nvidia-smi-table",
            Format::NvidiaSmiCsv => "nvidia-smi-csv",
            Format::NvidiaSmiDmon => "nvidia-smi-dmon",
            Format::NvidiaSmiPmon => "nvidia-smi-pmon",
            Format::NvidiaSmiQuery => "nvidia-smi-query",
            Format::PytorchOom => "pytorch-oom",
            Format::PytorchMemorySummary => "pytorch-memory-summary",
            Format::DeepspeedSeeMemoryUsage => "deepspeed-see-memory-usage",
            Format::MegatronMemoryReport => "megatron-memory-report",
            Format::HfTrainerMetrics => "hf-trainer-metrics",
            Format::AccelerateTracemalloc => "accelerate-tracemalloc",
            Format::TorchtitanMetrics => "torchtitan-metrics",
            Format::TorchtuneMemoryStats => "torchtune-memory-stats",
            Format::AxolotlMetrics => "axolotl-memory-metrics",
            Format::UnslothMemoryStats => "unsloth-memory-stats",
            Format::LitgptMemoryUsed => "litgpt-memory-used",
            Format::PytorchPeakCounters => "pytorch-peak-counters",
            Format::Gpustat => "gpustat",
            Format::RocmSmi => "rocm-smi",
            Format::AmdSmi => "amd-smi",
            Format::Nvitop => "nvitop",
            Format::PytorchGpuProcesses => "pytorch-gpu-processes",
            Format::MsSwiftMemory => "ms-swift-memory",
            Format::MmengineMemory => "mmengine-memory",
            Format::LlamafactoryVram => "llamafactory-vram",
            Format::VerlMetrics => "verl-metrics",
            Format::WandbSystemMetrics => "wandb-system-metrics",
            Format::LightningDeviceStats => "lightning-device-stats",
            Format::Dcgm => "dcgm",
            Format::NvmlUsedPrint => "nvml-used-print",
            Format::ComposerMemoryMonitor => "composer-memory-monitor",
            Format::NpuSmi => "npu-smi",
            Format::PytorchMemorySnapshot => "pytorch-memory-snapshot",
        }
    }

    pub fn from_id(s: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.id() == s)
    }

    /// Whether its figures are what the driver reports per GPU (nvidia-smi's
    /// `memory.used`: compare with `device_used`) rather than PyTorch's
    /// allocator counters (compare with `allocated` / `reserved`).
    pub fn is_device_level(self) -> bool {
        matches!(
            self,
            Format::NvidiaSmiTable
                | Format::NvidiaSmiCsv
                | Format::NvidiaSmiDmon
                | Format::NvidiaSmiPmon
                | Format::NvidiaSmiQuery
                | Format::Gpustat
                | Format::RocmSmi
                | Format::AmdSmi
                | Format::Nvitop
                | Format::PytorchGpuProcesses
                | Format::WandbSystemMetrics
                | Format::Dcgm
                | Format::NvmlUsedPrint
                | Format::NpuSmi
        )
    }

    /// What [`Trace::lines`] counts: a snapshot's history entries, else the
    /// input's lines.
    pub fn count_unit(self) -> &'static str {
        if self == Format::PytorchMemorySnapshot {
            "history entries"
        } else {
            "lines"
        }
    }

    /// Every format id, for error messages.
    pub fn known_list() -> String {
        Format::ALL.map(|f| f.id()).join(", ")
    }
}

/// Why a trace was not read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceError {
    /// 1-based line, when the fault is on one.
    pub line: Option<u64>,
    pub message: String,
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for TraceError {}

impl TraceError {
    pub fn at(line: u64, message: impl Into<String>) -> Self {
        TraceError {
            line: Some(line),
            message: message.into(),
        }
    }
    pub fn whole(message: impl Into<String>) -> Self {
        TraceError {
            line: None,
            message: message.into(),
        }
    }
}

/// Points kept per GPU series before neighbours merge (the chart's resolution).
pub const SERIES_POINTS: usize = 2048;

/// One point of a GPU's memory over time: `t` in seconds (since the Unix
/// epoch when the log has dates, else since its first sample, else the
/// sample's ordinal), `used_mib` the largest value in the span it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub t: f64,
    pub used_mib: f64,
}

/// A bounded series: when full, neighbouring points merge (keeping the larger
/// value and the earlier time), halving the count; peaks are never lost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub points: Vec<Point>,
    /// How many raw samples each point stands for (a power of two).
    pub stride: u64,
    #[serde(skip)]
    pending: Option<(Point, u64)>,
}

impl Series {
    pub fn push(&mut self, p: Point) {
        if self.stride == 0 {
            self.stride = 1;
        }
        let (acc, n) = match self.pending.take() {
            None => (p, 1),
            Some((a, n)) => (
                Point {
                    t: a.t,
                    used_mib: a.used_mib.max(p.used_mib),
                },
                n + 1,
            ),
        };
        if n < self.stride {
            self.pending = Some((acc, n));
            return;
        }
        self.points.push(acc);
        if self.points.len() >= SERIES_POINTS {
            let merged: Vec<Point> = self
                .points
                .chunks(2)
                .map(|c| Point {
                    t: c[0].t,
                    used_mib: c.iter().map(|p| p.used_mib).fold(f64::MIN, f64::max),
                })
                .collect();
            self.points = merged;
            self.stride *= 2;
        }
    }

    fn flush(&mut self) {
        if let Some((p, _)) = self.pending.take() {
            self.points.push(p);
        }
    }
}

/// What one GPU (or MIG instance) showed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuTrace {
    pub index: u32,
    pub name: Option<String>,
    /// MIG instance (`GI 3 CI 0`) when the figures are an instance's.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mig: Option<String>,
    /// Capacity as the tool reports it.
    pub total_mib: Option<f64>,
    pub peak_used_mib: Option<f64>,
    /// Samples read (snapshots or log rows) for this GPU.
    pub samples: u64,
    pub first_used_mib: Option<f64>,
    pub last_used_mib: Option<f64>,
    pub series: Series,
}

/// A process the tool listed on a GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessUse {
    pub gpu: Option<u32>,
    pub pid: Option<u64>,
    pub name: String,
    /// `C`, `G`, `C+G`… when printed.
    pub kind: Option<String>,
    pub used_mib: Option<f64>,
}

/// PyTorch caching-allocator figures (`max_memory_allocated` / `reserved`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AllocatorStats {
    pub peak_allocated_mib: Option<f64>,
    pub peak_reserved_mib: Option<f64>,
    /// Latest current figures, where printed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub current_allocated_mib: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub current_reserved_mib: Option<f64>,
    /// Per rank, where the log says which rank printed what.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub ranks: Vec<RankAllocator>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankAllocator {
    pub rank: u32,
    pub peak_allocated_mib: Option<f64>,
    pub peak_reserved_mib: Option<f64>,
}

/// Everything read from one trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub format: Format,
    /// Lines read ([`Format::count_unit`]: a memory snapshot's history entries).
    pub lines: u64,
    pub gpus: Vec<GpuTrace>,
    pub processes: Vec<ProcessUse>,
    pub oom: Vec<OomEvent>,
    pub allocator: Option<AllocatorStats>,
    /// Other figures worth showing, as (label, MiB).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub notes: Vec<(String, f64)>,
    /// Lines skipped and other things the reader should know.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub warnings: Vec<String>,
}

/// What parsers accumulate into.
#[derive(Default)]
pub struct Builder {
    /// Few entries (one per GPU or MIG instance): a linear search beats a map
    /// and allocates nothing per sample.
    gpus: Vec<GpuTrace>,
    pub processes: Vec<ProcessUse>,
    pub oom: Vec<OomEvent>,
    pub allocator: Option<AllocatorStats>,
    pub notes: Vec<(String, f64)>,
    pub warnings: Vec<String>,
    /// The log format a line-level parser recognised (for logs detected late).
    pub seen: Option<Format>,
    /// The rank a torchrun prefix taken off the current line named
    /// ([`LaunchPrefix::Torchrun`]): the per-rank readers' rank where the
    /// line itself names none.
    pub line_rank: Option<u32>,
    t0: Option<f64>,
}

impl Builder {
    fn gpu(&mut self, index: u32, mig: Option<&str>) -> &mut GpuTrace {
        let pos = self
            .gpus
            .iter()
            .position(|g| g.index == index && g.mig.as_deref() == mig);
        let i = match pos {
            Some(i) => i,
            None => {
                self.gpus.push(GpuTrace {
                    index,
                    name: None,
                    mig: mig.map(str::to_string),
                    total_mib: None,
                    peak_used_mib: None,
                    samples: 0,
                    first_used_mib: None,
                    last_used_mib: None,
                    series: Series::default(),
                });
                self.gpus.len() - 1
            }
        };
        &mut self.gpus[i]
    }

    /// Names a GPU and its capacity (first values win; later ones fill gaps).
    pub fn describe(
        &mut self,
        index: u32,
        mig: Option<&str>,
        name: Option<&str>,
        total: Option<f64>,
    ) {
        let g = self.gpu(index, mig);
        if g.name.is_none() {
            g.name = name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
        }
        if g.total_mib.is_none() {
            g.total_mib = total;
        }
    }

    /// One reading of `used_mib` on a GPU at time `t` (seconds), if known.
    pub fn sample(&mut self, index: u32, mig: Option<&str>, t: Option<f64>, used_mib: f64) {
        if !used_mib.is_finite() {
            return;
        }
        let t = t.map(|t| t - *self.t0.get_or_insert(t));
        let g = self.gpu(index, mig);
        // Samples without a time get their ordinal on this GPU.
        let t = t.unwrap_or(g.samples as f64);
        g.samples += 1;
        g.peak_used_mib = Some(g.peak_used_mib.map_or(used_mib, |p| p.max(used_mib)));
        g.first_used_mib.get_or_insert(used_mib);
        g.last_used_mib = Some(used_mib);
        g.series.push(Point { t, used_mib });
    }

    pub fn allocator(&mut self) -> &mut AllocatorStats {
        self.allocator.get_or_insert_with(AllocatorStats::default)
    }

    fn finish(mut self, format: Format, lines: u64) -> Trace {
        let mut gpus = std::mem::take(&mut self.gpus);
        gpus.sort_by(|a, b| (a.index, &a.mig).cmp(&(b.index, &b.mig)));
        for g in &mut gpus {
            g.series.flush();
        }
        Trace {
            format,
            lines,
            gpus,
            processes: self.processes,
            oom: self.oom,
            allocator: self.allocator,
            notes: self.notes,
            warnings: self.warnings,
        }
    }
}

/// The fields of one line of an exported CSV (W&B, Lightning), `None` for a
/// blank line; a malformed one is an error on its line.
pub(crate) fn csv_fields(no: u64, line: &str) -> Result<Option<Vec<String>>, TraceError> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    match crate::csv::parse(line) {
        Ok(r) => Ok(Some(
            r.into_iter().next().map(|r| r.fields).unwrap_or_default(),
        )),
        Err(e) => Err(TraceError::at(no, e)),
    }
}

/// Field `i` of such a line as a count (finite, not negative); an empty or
/// other cell is `None` (exports leave a row's other metrics empty).
pub(crate) fn csv_count(fields: &[String], i: usize) -> Option<f64> {
    fields
        .get(i)
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// `a = max(a, v)` on optional figures.
pub fn keep_max(a: &mut Option<f64>, v: f64) {
    *a = Some(a.map_or(v, |x| x.max(v)));
}

/// A line-by-line parser of one format.
pub trait LineParser {
    /// Reads line `no` (1-based; CR stripped).
    fn line(&mut self, no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError>;
    /// Called after the last line.
    fn finish(&mut self, _b: &mut Builder) -> Result<(), TraceError> {
        Ok(())
    }
}

/// Options of a parse.
#[derive(Clone, Debug, Default)]
pub struct ParseOptions {
    /// Skip detection and read this format.
    pub format: Option<Format>,
    /// For headerless `--query-gpu` CSV: the query's column names in order
    /// (`index,name,memory.total,memory.used`).
    pub csv_columns: Option<Vec<String>>,
}

/// Lines looked at to recognise the format.
const DETECT_LINES: usize = 400;

/// The most of one line that is read (16 MiB): far beyond any tool's line,
/// and what bounds the reader's memory on input without line ends.
const MAX_LINE_BYTES: u64 = 16 << 20;

/// Recognises the format from the first lines.
pub fn detect(head: &[String]) -> Option<Format> {
    let has = |needle: &str| head.iter().any(|l| l.contains(needle));
    // Before the memory_stats() keys below: a prompt may read the counter
    // through them (`memory_stats()['reserved_bytes.all.peak']`).
    if head
        .iter()
        .any(|l| repl::input(l).and_then(repl::peak_call).is_some())
    {
        return Some(Format::PytorchPeakCounters);
    }
    // Before the memory_stats() keys below: Lightning's CSV names its columns
    // with them.
    if head.iter().any(|l| lightning::is_header(l)) {
        return Some(Format::LightningDeviceStats);
    }
    if has("PyTorch CUDA memory summary")
        || has("CUDA memory summary")
        || has("allocated_bytes.all.peak")
        || has("reserved_bytes.all.peak")
    {
        return Some(Format::PytorchMemorySummary);
    }
    if head.iter().any(|l| wandb::is_header(l)) {
        return Some(Format::WandbSystemMetrics);
    }
    // DCGM's frame-buffer fields: dcgm-exporter's page or `dcgmi dmon`.
    if head
        .iter()
        .any(|l| dcgm::is_exporter_line(l) || dcgm::is_dmon_header(l))
    {
        return Some(Format::Dcgm);
    }
    if has("NVSMI LOG") || has("FB Memory Usage") || has("<nvidia_smi_log>") {
        return Some(Format::NvidiaSmiQuery);
    }
    // `gpustat --json`: its GPUs under `"gpus"`, nvidia-smi's query names as keys.
    if has("\"memory.used\"") && (has("\"gpus\"") || has("\"query_time\"")) {
        return Some(Format::Gpustat);
    }
    // Before nvidia-smi's table, whose shape it shares.
    if head.iter().any(|l| npu_smi::is_npu_smi_line(l)) {
        return Some(Format::NpuSmi);
    }
    if has("NVITOP") {
        return Some(Format::Nvitop);
    }
    // (Or its Processes section alone, as people paste it, or only its rows.)
    let processes_only = (has("Processes:") && has("Process name") && has("PID"))
        || head.iter().any(|l| smi_table::is_process_row(l));
    if has("NVIDIA-SMI")
        || has("MIG devices:")
        || processes_only
        || head.iter().any(|l| smi_table::is_gpu_row(l))
    {
        return Some(Format::NvidiaSmiTable);
    }
    // `# gpu pwr …` (or `#Date Time gpu fb …` with `-o DT`) with a metric column.
    if let Some(cols) = head
        .iter()
        .filter_map(|l| smi_misc::gpu_header(l))
        .find(|cols| {
            cols.iter()
                .any(|c| matches!(c.as_str(), "pwr" | "sm" | "fb" | "pid" | "mem" | "bar1"))
        })
    {
        return Some(if cols.iter().any(|c| c == "pid") {
            Format::NvidiaSmiPmon
        } else {
            Format::NvidiaSmiDmon
        });
    }
    if has("ROCm System Management Interface")
        || has("ROCM System Management")
        || head.iter().any(|l| l.starts_with("GPU["))
        || (has("\"card") && has("\"VRAM Total"))
    {
        return Some(Format::RocmSmi);
    }
    if head
        .iter()
        .any(|l| smi_misc::is_amd_smi_line(l) || smi_misc::is_amd_smi_json(l))
    {
        return Some(Format::AmdSmi);
    }
    if head.iter().any(|l| smi_misc::is_gpustat_row(l)) {
        return Some(Format::Gpustat);
    }
    if head.iter().any(|l| smi_misc::gpu_process_line(l).is_some())
        || has("no processes are running")
    {
        return Some(Format::PytorchGpuProcesses);
    }
    if has("memory (MB) | allocated:") || has("memory (GB) | mem-") {
        return Some(Format::MegatronMemoryReport);
    }
    if head
        .iter()
        .any(|l| logs::is_deepspeed_line(l) || l.contains("MaxMemAllocated="))
    {
        return Some(Format::DeepspeedSeeMemoryUsage);
    }
    if has("GPU Memory before entering the") || has("GPU Peak Memory consumed") {
        return Some(Format::AccelerateTracemalloc);
    }
    // Training-log lines, in this order: the tools' keyed peaks first
    // (axolotl's log dict before the Trainer's metrics it resembles).
    if let Some(k) = logs::KEYED_PEAKS
        .iter()
        .find(|k| head.iter().any(|l| k.matches(l)))
    {
        return Some(k.format);
    }
    type IsLine = fn(&str) -> bool;
    const LOG_LINES: [(IsLine, Format); 10] = [
        (logs::is_mmengine_line, Format::MmengineMemory),
        (logs::is_verl_usage_line, Format::VerlMetrics),
        (logs::is_hf_metric_line, Format::HfTrainerMetrics),
        (logs::is_torchtitan_line, Format::TorchtitanMetrics),
        (logs::is_torchtune_line, Format::TorchtuneMemoryStats),
        (logs::is_axolotl_usage_line, Format::AxolotlMetrics),
        (logs::is_unsloth_line, Format::UnslothMemoryStats),
        (logs::is_litgpt_line, Format::LitgptMemoryUsed),
        (logs::is_nvml_used_line, Format::NvmlUsedPrint),
        // Last: a script's own print of PyTorch's peak counters.
        (
            |l| !logs::peak_counters(l).is_empty(),
            Format::PytorchPeakCounters,
        ),
    ];
    for (is_line, format) in LOG_LINES {
        if head.iter().any(|l| is_line(l)) {
            return Some(format);
        }
    }
    if head.iter().any(|l| oom::is_oom_line(l)) {
        return Some(Format::PytorchOom);
    }
    if head.iter().any(|l| smi_csv::looks_like_csv(l)) {
        return Some(Format::NvidiaSmiCsv);
    }
    None
}

fn parser_for(f: Format, opts: &ParseOptions) -> Box<dyn LineParser> {
    match f {
        Format::NvidiaSmiTable => Box::new(smi_table::TableParser::default()),
        Format::NvidiaSmiCsv => Box::new(smi_csv::CsvParser::new(opts.csv_columns.clone())),
        Format::NvidiaSmiDmon => Box::new(smi_misc::DmonParser::default()),
        Format::NvidiaSmiPmon => Box::new(smi_misc::PmonParser::default()),
        Format::NvidiaSmiQuery => Box::new(smi_misc::QueryParser::default()),
        Format::Gpustat => Box::new(smi_misc::GpustatParser::default()),
        Format::RocmSmi => Box::new(smi_misc::RocmParser::default()),
        Format::AmdSmi => Box::new(smi_misc::AmdSmiParser::default()),
        Format::Nvitop => Box::new(smi_table::TableParser::nvitop()),
        Format::PytorchGpuProcesses => Box::new(smi_misc::GpuProcessesParser::default()),
        Format::PytorchMemorySummary => Box::new(logs::SummaryParser::default()),
        Format::WandbSystemMetrics => Box::new(wandb::WandbParser::default()),
        Format::LightningDeviceStats => Box::new(lightning::LightningParser::default()),
        Format::Dcgm => Box::new(dcgm::DcgmParser::default()),
        Format::NpuSmi => Box::new(npu_smi::NpuSmiParser::default()),
        Format::PytorchOom
        | Format::DeepspeedSeeMemoryUsage
        | Format::MegatronMemoryReport
        | Format::HfTrainerMetrics
        | Format::AccelerateTracemalloc
        | Format::TorchtitanMetrics
        | Format::TorchtuneMemoryStats
        | Format::AxolotlMetrics
        | Format::UnslothMemoryStats
        | Format::LitgptMemoryUsed
        | Format::MsSwiftMemory
        | Format::MmengineMemory
        | Format::LlamafactoryVram
        | Format::VerlMetrics
        | Format::NvmlUsedPrint
        | Format::ComposerMemoryMonitor
        | Format::PytorchPeakCounters => Box::new(logs::LogParser::default()),
        Format::PytorchMemorySnapshot => Box::new(NotText),
    }
}

/// The snapshot's reader is not a line reader: a text named a snapshot is
/// refused at its first line.
struct NotText;

impl LineParser for NotText {
    fn line(&mut self, no: u64, _line: &str, _b: &mut Builder) -> Result<(), TraceError> {
        Err(TraceError::at(
            no,
            "a PyTorch memory snapshot is the binary pickle torch.cuda.memory._dump_snapshot() \
             writes; this is text",
        ))
    }
}

/// Collects OOM messages from any log: a message and the lines after it.
#[derive(Default)]
struct OomScanner {
    buf: String,
    start: u64,
    left: u32,
    /// How the previous line ended, for a message wrapped inside "out of
    /// memory": `"out of"`, `"out"`, or neither (`""`).
    prev_tail: &'static str,
}

/// Lines after an OOM line that may continue its message.
const OOM_TAIL_LINES: u32 = 12;

impl OomScanner {
    fn line(&mut self, no: u64, line: &str, b: &mut Builder) {
        if self.left > 0 {
            self.buf.push_str(line);
            self.buf.push('\n');
            self.left -= 1;
            if self.left == 0 {
                self.flush(b);
            }
            return;
        }
        if oom::is_oom_line(line) {
            self.start = no;
            self.buf.clear();
            self.buf.push_str(line);
            self.buf.push('\n');
            self.left = OOM_TAIL_LINES;
        } else if self.wrapped_phrase(line) {
            // "… CUDA out of" / "memory. Tried to allocate …": one line.
            self.start = no - 1;
            self.buf.clear();
            self.buf.push_str(self.prev_tail);
            self.buf.push(' ');
            self.buf.push_str(line.trim_start());
            self.buf.push('\n');
            self.left = OOM_TAIL_LINES;
        }
        let tail = line.trim_end().as_bytes();
        let ends = |p: &[u8]| {
            tail.len() >= p.len() && tail[tail.len() - p.len()..].eq_ignore_ascii_case(p)
        };
        self.prev_tail = if ends(b" out of") {
            "out of"
        } else if ends(b" out") {
            "out"
        } else {
            ""
        };
    }

    /// Whether "out of memory" runs from the previous line into this one.
    fn wrapped_phrase(&self, line: &str) -> bool {
        let head = line.trim_start().as_bytes();
        let starts = |p: &[u8]| head.len() >= p.len() && head[..p.len()].eq_ignore_ascii_case(p);
        match self.prev_tail {
            "out of" => starts(b"memory"),
            "out" => starts(b"of memory"),
            _ => false,
        }
    }

    fn flush(&mut self, b: &mut Builder) {
        if self.buf.is_empty() {
            return;
        }
        for mut e in oom::parse(&self.buf) {
            e.line += self.start - 1;
            // One failure told twice without figures (an old THC check, then
            // its RuntimeError), farther apart than one tail when wrapped:
            // one event, as `oom::parse` keeps within a tail.
            let retold = e.tried_to_allocate_mib.is_none()
                && b.oom.last().is_some_and(|o| {
                    o.tried_to_allocate_mib.is_none() && e.line <= o.line + oom::RETOLD_WITHIN
                });
            if !retold && !b.oom.iter().any(|o| o.line == e.line) {
                b.oom.push(e);
            }
        }
        // A second OOM line inside the tail is parsed by `oom::parse` above;
        // start over after it.
        self.buf.clear();
        self.left = 0;
    }
}

/// Cleans a line as tools and web pages hand it over: removes terminal
/// escape sequences (`ESC [ … letter`, as `watch --color`, `script` captures
/// and Jupyter tracebacks contain), turns Unicode spaces into ASCII ones (a
/// no-break space or a narrow one where text was copied from a rendered page
/// or a chat; the ideographic space of CJK editors), a space for a space, and
/// drops zero-width characters and byte-order marks.
fn clean_line(line: &str) -> std::borrow::Cow<'_, str> {
    if !needs_cleaning(line.as_bytes()) {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for d in chars.by_ref() {
                        if d.is_ascii_alphabetic() {
                            break;
                        }
                    }
                }
            }
            '\u{a0}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' => {
                out.push(' ')
            }
            '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}' => {}
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether a line holds a byte the reader must act on — non-ASCII or ESC
/// ([`clean_line`]), or a carriage return (a line end of its own) — in one
/// pass eight bytes at a time: the reader calls it on every line, and almost
/// every line is plain ASCII.
fn needs_cleaning(b: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    const ESC: u64 = 0x1b1b_1b1b_1b1b_1b1b;
    const CR: u64 = 0x0d0d_0d0d_0d0d_0d0d;
    let zero_byte = |v: u64| (v.wrapping_sub(ONES) & !v & HIGH) != 0;
    let mut words = b.chunks_exact(8);
    for w in words.by_ref() {
        let x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        // A byte ≥ 0x80, or a zero byte in `x ^ ESC` / `x ^ CR` (one in `x`).
        if (x & HIGH) != 0 || zero_byte(x ^ ESC) || zero_byte(x ^ CR) {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&c| c >= 0x80 || c == 0x1b || c == b'\r')
}

/// Text a launcher or a log collector writes before every line of a tool's
/// output, recognised when (nearly) every line of a log's head carries it,
/// and removed before the formats are told apart: `srun --label` (`12: `),
/// `mpirun --tag-output` (`[1,0]<stdout>: `), `pdsh`/`clush` (`node7: `),
/// `docker compose logs` (`trainer-1  | `), `kubectl logs --timestamps` (an
/// RFC 3339 time and a space), and a Markdown quote (`> `, a bare `>` on an
/// empty line) where a log was copied out of an issue's reply, Ray's
/// worker prefix (`(RayTrainWorker pid=4242, ip=10.0.0.5) `), a syslog time
/// (`journalctl`'s `Jun 03 10:00:00 node7 python3[4242]: `, moreutils `ts`'s
/// `Jun 03 10:00:00 `), a local date and time (`2024-06-01 12:00:00 `, a
/// wrapper's `date '+%F %T'`), and torchrun's
/// (`[default0]:`, `[rank0]:`, both), whose rank the per-rank readers still
/// get ([`Builder::line_rank`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LaunchPrefix {
    SrunLabel,
    MpirunTag,
    Host,
    Compose,
    Rfc3339,
    Quote,
    Ray,
    Syslog,
    LocalTime,
    Torchrun,
}

impl LaunchPrefix {
    const ALL: [LaunchPrefix; 10] = [
        LaunchPrefix::SrunLabel,
        LaunchPrefix::MpirunTag,
        LaunchPrefix::Host,
        LaunchPrefix::Compose,
        LaunchPrefix::Rfc3339,
        LaunchPrefix::Quote,
        LaunchPrefix::Ray,
        LaunchPrefix::Syslog,
        LaunchPrefix::LocalTime,
        LaunchPrefix::Torchrun,
    ];

    /// The prefix's length in bytes at the start of `line`, if it has it.
    fn len_in(self, line: &str) -> Option<usize> {
        let b = line.as_bytes();
        let name = name_byte;
        let run =
            |from: usize, ok: &dyn Fn(u8) -> bool| b[from..].iter().take_while(|&&c| ok(c)).count();
        match self {
            LaunchPrefix::SrunLabel => {
                let d = run(0, &|c| c.is_ascii_digit());
                ((1..=5).contains(&d) && b[d..].starts_with(b": ")).then_some(d + 2)
            }
            LaunchPrefix::MpirunTag => {
                let rest = line.strip_prefix('[')?;
                let close = rest.find("]<std")?;
                let inner = &rest[..close];
                let ok =
                    !inner.is_empty() && inner.bytes().all(|c| c.is_ascii_digit() || c == b',');
                let tail = &rest[close + 1..];
                let tag = ["<stdout>:", "<stderr>:"]
                    .iter()
                    .find(|t| tail.starts_with(**t))?;
                let end = 1 + close + 1 + tag.len();
                ok.then_some(end + usize::from(line[end..].starts_with(' ')))
            }
            LaunchPrefix::Host => {
                // A host name: letters with a node's number or a hyphen
                // (`node7`, `gpu-node-07`, `ip-10-0-0-5`) or `localhost`, no
                // underscore (RFC 1123) — not a key such as `loss` or
                // `max_memory_reserved`.
                let n = run(0, &name);
                let host = &b[..n];
                let has_letter = host.iter().any(|c| c.is_ascii_alphabetic());
                let numbered =
                    host.iter().any(|&c| c.is_ascii_digit() || c == b'-') || host == b"localhost";
                let ok = (1..=64).contains(&n) && has_letter && numbered && !host.contains(&b'_');
                (ok && b[n..].starts_with(b": ")).then_some(n + 2)
            }
            LaunchPrefix::Compose => {
                let n = run(0, &name);
                let spaces = run(n, &|c| c == b' ');
                let at = n + spaces;
                ((1..=64).contains(&n) && spaces >= 1 && b[at..].starts_with(b"| "))
                    .then_some(at + 2)
            }
            LaunchPrefix::Rfc3339 => {
                // 2024-06-01T12:00:00[.fraction](Z|±hh:mm) and a space.
                let mut i = date_time_len(b, b'T', b".")?;
                match b.get(i) {
                    Some(b'Z') => i += 1,
                    Some(b'+' | b'-') => i += 6,
                    _ => return None,
                }
                (b.get(i) == Some(&b' ')).then_some(i + 1)
            }
            LaunchPrefix::Quote => match b {
                [b'>', b' ', ..] => Some(2),
                [b'>'] => Some(1),
                _ => None,
            },
            LaunchPrefix::Ray => {
                // `(Name pid=123) ` / `(Name pid=123, ip=10.0.0.5) ` / `(pid=123) `:
                // the driver's copy of a worker's line (ray `_private/log_monitor.py`,
                // `worker.py` `print_worker_logs`).
                let rest = line.strip_prefix('(')?;
                let close = rest.find(") ")?;
                let inner = &rest[..close];
                let (name, tail) = match inner.split_once(" pid=") {
                    Some(x) => x,
                    None => ("", inner.strip_prefix("pid=")?),
                };
                let name_ok = name
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':'));
                let (pid, ip) = match tail.split_once(", ip=") {
                    Some((p, ip)) => (p, Some(ip)),
                    None => (tail, None),
                };
                let pid_ok = !pid.is_empty() && pid.bytes().all(|c| c.is_ascii_digit());
                let ip_ok = ip.is_none_or(|ip| {
                    !ip.is_empty()
                        && ip
                            .bytes()
                            .all(|c| c.is_ascii_hexdigit() || matches!(c, b'.' | b':'))
                });
                (name_ok && pid_ok && ip_ok).then_some(1 + close + 2)
            }
            LaunchPrefix::Syslog => {
                // `Jun 03 10:00:00 ` (`Jun  3` too: day padded with a space),
                // then, from journald or syslog, `host ident[pid]: `.
                const MONTHS: [&[u8]; 12] = [
                    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct",
                    b"Nov", b"Dec",
                ];
                if b.len() < 16 || !MONTHS.contains(&&b[..3]) || b[3] != b' ' {
                    return None;
                }
                let day = &b[4..6];
                let day_ok = (day[0] == b' ' || day[0].is_ascii_digit()) && day[1].is_ascii_digit();
                let time = &b[7..15];
                let time_ok = b[6] == b' '
                    && time.iter().enumerate().all(|(i, c)| {
                        if i % 3 == 2 {
                            *c == b':'
                        } else {
                            c.is_ascii_digit()
                        }
                    });
                if !(day_ok && time_ok && b[15] == b' ') {
                    return None;
                }
                // `host ident[pid]: `
                let rest = &line[16..];
                let tagged = rest.split_once(' ').and_then(|(host, tail)| {
                    let colon = tail.find(": ")?;
                    let ident = &tail[..colon];
                    // The process's id in brackets, as journald prints it: a
                    // script's own `GPU 0: ` after `ts`'s time is no tag.
                    let pid = ident
                        .strip_suffix(']')
                        .and_then(|x| x.rsplit_once('['))
                        .is_some_and(|(proc, pid)| {
                            !proc.is_empty()
                                && !proc.contains(' ')
                                && !pid.is_empty()
                                && pid.bytes().all(|c| c.is_ascii_digit())
                        });
                    let ok = !host.is_empty() && host.bytes().all(name) && pid;
                    ok.then_some(16 + host.len() + 1 + colon + 2)
                });
                Some(tagged.unwrap_or(16))
            }
            LaunchPrefix::LocalTime => {
                // 2024-06-01 12:00:00[.fraction or ,milliseconds] and a space: a
                // wrapper's `date '+%F %T'`, `ts '%F %T'`, Python logging's
                // asctime.
                let i = date_time_len(b, b' ', b".,")?;
                (b.get(i) == Some(&b' ')).then_some(i + 1)
            }
            LaunchPrefix::Torchrun => torchrun_prefix(line).map(|(n, _)| n),
        }
    }

    /// The prefix nine in ten of the head's non-empty lines (at least three)
    /// carry.
    fn detect(head: &[String]) -> Option<LaunchPrefix> {
        let lines: Vec<&str> = head
            .iter()
            .map(|l| l.as_str())
            .filter(|l| !l.trim().is_empty())
            .collect();
        if lines.len() < 3 {
            return None;
        }
        LaunchPrefix::ALL.into_iter().find(|p| {
            let n = lines.iter().filter(|l| p.len_in(l).is_some()).count();
            n * 10 >= lines.len() * 9
        })
    }

    fn strip(self, line: &str) -> &str {
        match self.len_in(line) {
            Some(n) => &line[n..],
            None => line,
        }
    }
}

/// A byte of a host's or user's name (`gpu-node-07`, `ip-10-0-0-5.ec2`).
fn name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-')
}

/// The length of `YYYY-MM-DD{sep}hh:mm:ss` at the start of `b` with its
/// fraction of a second, if any (after one of `fraction_marks`).
fn date_time_len(b: &[u8], sep: u8, fraction_marks: &[u8]) -> Option<usize> {
    const SHAPE: &[u8] = b"dddd-dd-dd?dd:dd:dd";
    if b.len() < SHAPE.len()
        || !SHAPE.iter().zip(b).all(|(s, &c)| match s {
            b'd' => c.is_ascii_digit(),
            b'?' => c == sep,
            s => *s == c,
        })
    {
        return None;
    }
    let mut i = SHAPE.len();
    if b.get(i).is_some_and(|c| fraction_marks.contains(c)) {
        i += 1 + b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
    }
    Some(i)
}

/// torchrun's line prefix and the rank it names: `[default3]:` (its
/// `--tee`/`--redirects` prefix, `log_line_prefix_template`'s default
/// "[{role_name}{local_rank}]:" in torch.distributed.elastic), `[rank3]:`
/// (the global rank, as torch ≥ 2.3 writes a worker's lines), or the first
/// followed by the second (the second's rank kept). No space is taken: what
/// follows keeps its indentation (one space every line shares goes with the
/// shared indentation).
fn torchrun_prefix(line: &str) -> Option<(usize, u32)> {
    let one = |at: usize| -> Option<(usize, u32)> {
        let rest = &line[at..];
        let tag = ["[default", "[rank"]
            .into_iter()
            .find(|t| rest.starts_with(t))?;
        let d = rest[tag.len()..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        let end = tag.len() + d;
        if !(1..=6).contains(&d) || !rest[end..].starts_with("]:") {
            return None;
        }
        let rank = rest[tag.len()..end].parse().ok()?;
        Some((at + end + 2, rank))
    };
    let (n, rank) = one(0)?;
    Some(one(n).unwrap_or((n, rank)))
}

/// What is taken off every line before the formats are told apart: a
/// launcher's prefix ([`LaunchPrefix`]), Markdown code fences (a line of
/// three backticks or tildes, with its language) read as empty lines, and the
/// indentation every line of the head shares (a log pasted into a Markdown
/// code block, a docstring or an e-mail), which `nvidia-smi -q`'s nesting
/// must not see.
struct Unwrap {
    prefix: Option<LaunchPrefix>,
    indent: String,
}

impl Unwrap {
    /// Learns from the head (cleaned lines) and unwraps it in place, taking
    /// `prefix` (what [`LaunchPrefix::detect`] found, or none) off each line;
    /// with the rank a torchrun prefix named on each line (empty for any
    /// other prefix).
    fn learn(head: &mut [String], prefix: Option<LaunchPrefix>) -> (Unwrap, Vec<Option<u32>>) {
        let mut u = Unwrap {
            prefix,
            indent: String::new(),
        };
        let mut ranks = Vec::new();
        // `apply_ranked` gives a suffix of the line (or nothing, for a fence).
        for l in head.iter_mut() {
            let (rest, rank) = u.apply_ranked(l);
            let start = l.len() - rest.len();
            if prefix == Some(LaunchPrefix::Torchrun) {
                ranks.push(rank);
            }
            l.drain(..start);
        }
        let mut lines = head.iter().filter(|l| !l.trim().is_empty());
        if let Some(first) = lines.next() {
            let mut indent: &str =
                &first[..first.len() - first.trim_start_matches([' ', '\t']).len()];
            for l in lines {
                let common = indent
                    .bytes()
                    .zip(l.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                indent = &indent[..common];
            }
            u.indent = indent.to_string();
        }
        if !u.indent.is_empty() {
            for l in head.iter_mut() {
                if l.starts_with(&u.indent) {
                    l.drain(..u.indent.len());
                }
            }
        }
        (u, ranks)
    }

    /// The line unwrapped, and the rank its torchrun prefix named where that
    /// is the prefix taken off (read once, with the prefix's length).
    fn apply_ranked<'a>(&self, line: &'a str) -> (&'a str, Option<u32>) {
        let (line, rank) = match self.prefix {
            Some(LaunchPrefix::Torchrun) => match torchrun_prefix(line) {
                Some((n, rank)) => (&line[n..], Some(rank)),
                None => (line, None),
            },
            Some(p) => (p.strip(line), None),
            None => (line, None),
        };
        (self.unwrap_rest(line), rank)
    }

    /// What is left of a line without its launcher's prefix: a fence or a
    /// console's chatter read as empty, the shared indentation taken off.
    fn unwrap_rest<'a>(&self, line: &'a str) -> &'a str {
        // Every line passes here: a byte test before any comparison.
        let first = line.bytes().find(|c| !c.is_ascii_whitespace());
        if let Some(command) = console_chatter(line, first) {
            return command;
        }
        if matches!(first, Some(b'`' | b'~')) {
            let t = line.trim();
            if let Some(info) = t.strip_prefix("```").or_else(|| t.strip_prefix("~~~")) {
                if info
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'+' | b' '))
                {
                    return "";
                }
            }
        }
        if self.indent.is_empty() {
            return line;
        }
        line.strip_prefix(self.indent.as_str()).unwrap_or(line)
    }
}

/// What a terminal adds around a tool's output when a session is copied
/// whole: the `^C` that stopped a looping `nvidia-smi -l`/`dmon`, and the
/// shell's prompt lines with the commands typed. Such a line reads as an
/// empty one — except an `nvidia-smi --query-gpu=…`/`--query-compute-apps=…`
/// command, given without its prompt: its list names the columns of the CSV
/// below it (what a `noheader` CSV does not say). `first` is the line's first
/// byte that is not a space: every line passes here, and most fail the byte
/// test on it.
#[inline]
fn console_chatter(line: &str, first: Option<u8>) -> Option<&str> {
    // A prompt starts with `$`, `(` (a virtualenv's or conda's name), `[`
    // (Red Hat's `[user@host dir]$`), `PS ` (PowerShell), `+` (`set -x`) or
    // a user's name (a letter first) and `@` (`user@host:~$`); `^C` with `^`.
    let t = match first? {
        b'$' | b'(' | b'[' | b'^' | b'+' => line.trim_start(),
        c if c.is_ascii_alphabetic() || c == b'_' => {
            let t = line.trim_start();
            let word = t.bytes().take_while(|&c| name_byte(c)).count();
            if t.as_bytes().get(word) != Some(&b'@') && !t.starts_with("PS ") {
                return None;
            }
            t
        }
        _ => return None,
    };
    if t.starts_with("^C") {
        return Some("");
    }
    let command = shell_prompt_len(t).map(|n| t[n..].trim_start())?;
    Some(if smi_csv::is_query_command(command) {
        command
    } else {
        ""
    })
}

/// The length of a shell prompt at the start of `t`: `$ ` (or a lone `$`),
/// bash's `user@host:path$ ` / `# ` (root) behind an optional `(env) `, Red
/// Hat's `[user@host dir]$ `, zsh's `user@host dir % `, PowerShell's
/// `PS C:\path> `, and bash's trace of a command under `set -x` (`+ `, `++ `
/// nested) in a job's log.
fn shell_prompt_len(t: &str) -> Option<usize> {
    let ends_prompt = |rest: &str| rest.is_empty() || rest.starts_with(' ');
    let plus = t.bytes().take_while(|&c| c == b'+').count();
    if plus > 0 {
        let traced = plus <= 9
            && t[plus..].starts_with(' ')
            && t[plus + 1..].starts_with(|c: char| c.is_ascii_alphabetic());
        return traced.then_some(plus + 1);
    }
    if let Some(rest) = t.strip_prefix('$') {
        return ends_prompt(rest).then_some(1);
    }
    if let Some(rest) = t.strip_prefix("PS ") {
        let b = rest.as_bytes();
        if b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'\\' {
            let close = rest.find('>')?;
            return ends_prompt(&rest[close + 1..]).then_some(3 + close + 1);
        }
        return None;
    }
    // An environment's name: `(base) `, `(.venv) `.
    let mut at = 0;
    if t.starts_with('(') {
        let close = t.find(") ")?;
        if t[1..close].contains(char::is_whitespace) {
            return None;
        }
        at = close + 2;
    }
    let rest = &t[at..];
    let name = |c: char| c.is_ascii() && name_byte(c as u8);
    // `user@host`, as the prompt's first word.
    let user_host = |s: &str| -> Option<usize> {
        let u = s.find(|c: char| !name(c)).unwrap_or(s.len());
        if u == 0 || !s[u..].starts_with('@') {
            return None;
        }
        let h = s[u + 1..]
            .find(|c: char| !name(c))
            .unwrap_or(s.len() - u - 1);
        (h > 0).then_some(u + 1 + h)
    };
    if let Some(inner) = rest.strip_prefix('[') {
        // `[user@host dir]$ `
        user_host(inner)?;
        let close = inner.find(']')?;
        let after = &inner[close + 1..];
        let sign = after.chars().next().filter(|c| matches!(c, '$' | '#'))?;
        return ends_prompt(&after[sign.len_utf8()..]).then_some(at + 1 + close + 2);
    }
    let n = user_host(rest)?;
    let after = &rest[n..];
    // bash: `:path` then `$`/`#` at once.
    if let Some(path) = after.strip_prefix(':') {
        let end = path.find(['$', '#'])?;
        if path[..end].contains(char::is_whitespace) {
            return None;
        }
        return ends_prompt(&path[end + 1..]).then_some(at + n + 1 + end + 1);
    }
    if let Some(sign) = after.strip_prefix(['$', '#']) {
        return ends_prompt(sign).then_some(at + n + 1);
    }
    // zsh: ` dir % `.
    let dir = after.strip_prefix(' ')?;
    let end = dir.find(' ')?;
    let sign = dir[end..].strip_prefix(" %")?;
    ends_prompt(sign).then_some(at + n + 1 + end + 2)
}

/// Text saved as UTF-16 (PowerShell's `>` on Windows) becomes UTF-8.
pub(crate) fn utf16_to_utf8(bytes: &[u8], little_endian: bool) -> Vec<u8> {
    let units = bytes.chunks_exact(2).map(|c| {
        if little_endian {
            u16::from_le_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], c[1]])
        }
    });
    char::decode_utf16(units)
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect::<String>()
        .into_bytes()
}

/// What a text no reader recognised is, when its head says: a memory
/// estimator's output (a prediction, not a measurement), torch.profiler's
/// operator table (allocations per operator, not a peak), `nvidia-smi -L`'s
/// list (names, no figures), an inference engine's memory profile (what a
/// serving engine set aside, not a training peak), TensorFlow's OOM (a
/// shape, no figures), prints of PyTorch's current counters (not their
/// peaks), or a bare column of figures (`--query-gpu=memory.used
/// --format=csv,noheader`: which counter it is cannot be told).
fn refusal_reason(head: &[String]) -> Option<TraceError> {
    let has = |needle: &str| head.iter().any(|l| l.contains(needle));
    let estimator = if has("Estimated memory needed for params, optim states and gradients") {
        Some("DeepSpeed's memory estimator (estimate_zero*_model_states_mem_needs)")
    } else if has("Memory Usage for loading") && has("Training using Adam") {
        Some("`accelerate estimate-memory`")
    } else {
        None
    };
    // torch.profiler's operator table (`key_averages().table()` with
    // `profile_memory=True`): its "CPU Mem" and "<DEVICE> Mem" columns
    // ("CUDA Mem", "Self CUDA Mem"; `_build_table` in
    // torch/autograd/profiler_util.py, torch 2.15) hold what each operator
    // allocated net of what it freed, summed over its calls — a table of
    // flows, not what the GPU held at any moment.
    let profiler = head
        .iter()
        .any(|l| l.contains("# of Calls") && l.contains(" Mem "));
    if profiler {
        return Some(TraceError::whole(
            "this is torch.profiler's operator table (key_averages().table()): its Mem \
             columns are what each operator allocated net of what it freed, summed over its \
             calls, not what the GPU held at the peak — upload torch.cuda.max_memory_allocated() \
             / max_memory_reserved(), torch.cuda.memory_summary() or nvidia-smi output"
                .to_string(),
        ));
    }
    // `nvidia-smi -L`: `GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-…)` a line.
    if head
        .iter()
        .any(|l| l.trim_start().starts_with("GPU ") && l.contains("(UUID: GPU-"))
    {
        return Some(TraceError::whole(
            "this is `nvidia-smi -L`'s list of GPUs: it names them but holds no memory figures — \
             upload `nvidia-smi`'s table, or a log of `nvidia-smi --query-gpu=index,memory.used,\
             memory.total --format=csv -lms 500` taken while the run trains"
                .to_string(),
        ));
    }
    // An inference engine's start-up memory profile: vLLM's (`total_gpu_memory
    // (79.22GiB) x gpu_memory_utilization (0.90) = 71.29GiB`, `model weights
    // take 14.99GiB; … the rest of the memory reserved for KV Cache is
    // 54.79GiB`, vllm 0.6.6 `worker/worker.py`; `Loading model weights took
    // 14.9888 GB`, `worker/model_runner.py`; `Model loading took 14.9888 GiB
    // and …`, `Available KV cache memory: 54.79 GiB`, vllm 0.10.1
    // `v1/worker/gpu_model_runner.py`, `gpu_worker.py`) and SGLang's (`Load
    // weight end. … mem usage=14.99 GB.`, `Capture cuda graph end. … mem
    // usage=…`, sglang 0.4.6 `model_executor/model_runner.py`; `KV Cache is
    // allocated. #tokens: …`, `mem_cache/memory_pool.py`) and llama.cpp's
    // (`load_tensors: CUDA0 model buffer size = … MiB`, `… KV buffer size =
    // …`, `… compute buffer size = …`: the llama.cpp that llama-cpp-python
    // 0.3.9 vendors, `src/llama-model.cpp`, `llama-kv-cache.cpp`,
    // `llama-context.cpp`; `llm_load_tensors: CUDA0 buffer size = …` before
    // it) — what a serving engine set aside, not a training run's peak.
    let inference = head.iter().position(|l| {
        (l.contains("model weights take ") && l.contains("KV Cache"))
            || l.contains("x gpu_memory_utilization (")
            || l.contains("Loading model weights took ")
            || l.contains("Model loading took ")
            || l.contains("Available KV cache memory")
            || l.contains("KV Cache is allocated")
            || ((l.contains("Load weight end") || l.contains("Capture cuda graph end"))
                && l.contains("mem usage="))
            || l.contains(" model buffer size = ")
            || l.contains(" KV buffer size = ")
            || l.contains(" compute buffer size = ")
            || (l.contains("llm_load_tensors:") && l.contains(" buffer size = "))
    });
    if let Some(i) = inference {
        return Some(TraceError::at(
            i as u64 + 1,
            "this is an inference engine's memory profile (vLLM, SGLang or llama.cpp: the \
             model's weights and the KV cache it sets aside), not a training run's peak — \
             upload what nvidia-smi, PyTorch or the training framework printed during training",
        ));
    }
    if let Some(tool) = estimator {
        return Some(TraceError::whole(format!(
            "this is the output of {tool}: a prediction from the parameter count, not a \
             measurement of a run — upload what nvidia-smi, PyTorch or the framework printed \
             during training"
        )));
    }
    // TensorFlow's OOM (`ResourceExhaustedError: OOM when allocating tensor
    // with shape[…]`) names a shape, no figures; JAX's names its bytes and is
    // read with PyTorch's.
    if let Some(i) = head
        .iter()
        .position(|l| l.contains("OOM when allocating tensor"))
    {
        return Some(TraceError::at(
            i as u64 + 1,
            "a TensorFlow out-of-memory error: it names the tensor's shape but no memory \
             figures, and TensorFlow's allocator (which reserves most of the GPU up front) is not \
             the PyTorch one memplan models",
        ));
    }
    if let Some(i) = head.iter().position(|l| logs::is_current_counter_print(l)) {
        return Some(TraceError::at(
            i as u64 + 1,
            "this prints PyTorch's current counters (torch.cuda.memory_allocated() / \
             memory_reserved()), not their peaks: what the GPU held between two prints is not \
             in them — print torch.cuda.max_memory_allocated() and max_memory_reserved(), or \
             upload torch.cuda.memory_summary() or an nvidia-smi log",
        ));
    }
    let bare_column = head.iter().filter(|l| !l.trim().is_empty()).all(|l| {
        let n = l.trim().trim_end_matches("MiB").trim();
        !n.is_empty() && n.parse::<f64>().is_ok()
    });
    bare_column.then(|| {
        TraceError::at(
            1,
            "a single column of figures without a header (`--query-gpu=… --format=csv,noheader`): \
             which query it is cannot be told; keep the header line or name the column \
             (e.g. --columns memory.used)",
        )
    })
}

/// The most of a notebook read (it is read whole, to parse its JSON): the
/// upload's own limit.
const MAX_NOTEBOOK_BYTES: u64 = 64 << 20;

/// A Jupyter notebook: its code cells' outputs read as one log
/// ([`notebook`]); line numbers count the lines of those outputs.
fn parse_notebook<R: BufRead>(
    head: Vec<String>,
    r: R,
    opts: &ParseOptions,
) -> Result<Trace, TraceError> {
    let mut json = head.join("\n");
    json.push('\n');
    let rest = read_whole(r, MAX_NOTEBOOK_BYTES, |cap| {
        format!(
            "a Jupyter notebook of more than {cap} MiB: clear its large outputs (images) or upload the \
             text of the cells that printed memory figures"
        )
    })?;
    json.push_str(&String::from_utf8_lossy(&rest));
    let (text, cells) = notebook::outputs(&json).map_err(TraceError::whole)?;
    let within = |e: TraceError| TraceError {
        line: e.line,
        message: format!("in the notebook's cell outputs: {}", e.message),
    };
    let mut t = parse(&text, opts).map_err(within)?;
    t.warnings.insert(
        0,
        format!(
            "a Jupyter notebook: the outputs of its {cells} code cell(s) read as one log (line numbers count \
             lines of those outputs)"
        ),
    );
    Ok(t)
}

/// The most of a memory snapshot read (it is read whole, to unpickle it):
/// the upload's own limit is 64 MiB; the CLI reads up to this.
const MAX_SNAPSHOT_BYTES: u64 = 512 << 20;

/// A PyTorch memory snapshot's pickle ([`snapshot`]).
fn parse_snapshot<R: BufRead>(r: R, opts: &ParseOptions) -> Result<Trace, TraceError> {
    if let Some(f) = opts.format.filter(|&f| f != Format::PytorchMemorySnapshot) {
        return Err(TraceError::whole(format!(
            "this is a Python pickle (a PyTorch memory snapshot?), not {} output",
            f.id()
        )));
    }
    let all = read_whole(r, MAX_SNAPSHOT_BYTES, |cap| {
        format!(
            "a memory snapshot of more than {cap} MiB: record fewer entries \
             (torch.cuda.memory._record_memory_history(max_entries=…)) or fewer steps"
        )
    })?;
    snapshot::read(&all)
}

/// The rest of an input read whole, up to `cap` bytes; beyond it, the
/// error `too_large` words (given the cap in MiB).
fn read_whole<R: BufRead>(
    r: R,
    cap: u64,
    too_large: impl Fn(u64) -> String,
) -> Result<Vec<u8>, TraceError> {
    let mut all = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(r, cap + 1), &mut all)
        .map_err(|e| TraceError::whole(format!("cannot read the input: {e}")))?;
    if all.len() as u64 > cap {
        return Err(TraceError::whole(too_large(cap >> 20)));
    }
    Ok(all)
}

/// Parses a whole text (see [`parse_reader`]).
pub fn parse(text: &str, opts: &ParseOptions) -> Result<Trace, TraceError> {
    parse_reader(text.as_bytes(), opts)
}

/// What a file that holds no text is, by its first bytes (each format's
/// signature), and what to hand over instead: gzip (which the CLI and the
/// upload API decompress before this reader), a screenshot, a PDF, an archive
/// or a file compressed otherwise would otherwise be read as lines of binary
/// and refused only as "no GPU memory figures".
fn not_a_log(head: &[u8]) -> Option<&'static str> {
    let at = |sig: &[u8]| head.starts_with(sig);
    let image = at(b"\x89PNG\r\n\x1a\n")
        || at(&[0xFF, 0xD8, 0xFF])
        || at(b"GIF87a")
        || at(b"GIF89a")
        || (at(b"RIFF") && head.get(8..12) == Some(b"WEBP"));
    Some(if at(&[0x1F, 0x8B]) {
        "this is gzip-compressed: decompress it first (memplan verify and the upload API \
         decompress gzip themselves)"
    } else if image {
        "this is an image (a screenshot?), not text: memplan reads the text a tool printed — \
         copy it from the terminal, or save it with `nvidia-smi > smi.txt`, and upload or paste that"
    } else if at(b"%PDF-") {
        "this is a PDF document, not text: copy the log's text out of it and paste that"
    } else if at(b"PK\x03\x04") || at(b"PK\x05\x06") {
        "this is a ZIP archive (an Office document is one too): unpack it and upload the log inside"
    } else if at(&[0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C]) {
        "this is a 7-Zip archive: unpack it and upload the log inside"
    } else if at(&[0xFD, b'7', b'z', b'X', b'Z', 0x00])
        || at(b"BZh") && head.get(3).is_some_and(u8::is_ascii_digit)
        || at(&[0x28, 0xB5, 0x2F, 0xFD])
    {
        "this is compressed with xz, bzip2 or zstd: decompress it first (gzip is read as it is)"
    } else if head.get(257..262) == Some(b"ustar") {
        "this is a tar archive: unpack it and upload the log inside"
    } else {
        return None;
    })
}

/// Reads a trace line by line in bounded memory. Invalid UTF-8 is replaced,
/// CR before LF is dropped.
pub fn parse_reader<R: BufRead>(mut r: R, opts: &ParseOptions) -> Result<Trace, TraceError> {
    // A UTF-16 file (byte-order mark FF FE / FE FF) is converted whole: such
    // files come from Windows shells and are small.
    let bom = r
        .fill_buf()
        .map_err(|e| TraceError::whole(format!("cannot read the input: {e}")))?;
    // A pickle (protocol 2–5): `torch.cuda.memory._dump_snapshot()` writes one.
    if bom.len() >= 2 && bom[0] == 0x80 && (2..=5).contains(&bom[1]) {
        return parse_snapshot(r, opts);
    }
    if let Some(what) = not_a_log(bom) {
        return Err(TraceError::whole(what));
    }
    if bom.starts_with(&[0xFF, 0xFE]) || bom.starts_with(&[0xFE, 0xFF]) {
        let le = bom[0] == 0xFF;
        let mut all = Vec::new();
        r.read_to_end(&mut all)
            .map_err(|e| TraceError::whole(format!("cannot read the input: {e}")))?;
        let utf8 = utf16_to_utf8(&all[2..], le);
        return parse_reader(&utf8[..], opts);
    }
    let mut raw = Vec::new();
    let cut_lines = std::cell::Cell::new(0u64);
    // Reads one line into `raw` without its line ending; false at the end.
    // A line longer than [`MAX_LINE_BYTES`] (a file of zeros, a binary with
    // no line ends) keeps its first bytes and the rest is skipped unread,
    // so memory stays bounded whatever the input.
    let next = |r: &mut R, raw: &mut Vec<u8>| -> Result<bool, TraceError> {
        raw.clear();
        let io = |e: std::io::Error| TraceError::whole(format!("cannot read the input: {e}"));
        let n = <&mut R as std::io::Read>::take(&mut *r, MAX_LINE_BYTES)
            .read_until(b'\n', raw)
            .map_err(io)?;
        if n as u64 == MAX_LINE_BYTES && raw.last() != Some(&b'\n') {
            r.skip_until(b'\n').map_err(io)?;
            cut_lines.set(cut_lines.get() + 1);
        }
        // One line end: `\n` or `\r\n` (a `\r` before it is a line of its own).
        if raw.last() == Some(&b'\n') {
            raw.pop();
        }
        if raw.last() == Some(&b'\r') {
            raw.pop();
        }
        Ok(n > 0)
    };
    let mut head: Vec<String> = Vec::new();
    let mut eof = false;
    while head.len() < DETECT_LINES {
        if !next(&mut r, &mut raw)? {
            eof = true;
            break;
        }
        let line = String::from_utf8_lossy(&raw);
        let line = line.strip_prefix('\u{feff}').unwrap_or(&line);
        // A carriage return alone ends a line too: a progress bar's redraws
        // (tqdm writes `\r` and the bar) before a print on the same line of a
        // captured log, or a file saved with old Mac line ends.
        for seg in line.split('\r') {
            head.push(clean_line(seg).into_owned());
        }
    }
    if head.iter().all(|l| l.trim().is_empty()) {
        return Err(TraceError::whole("the input is empty"));
    }
    if notebook::looks_like(&head) {
        return parse_notebook(head, r, opts);
    }
    // The lines as they came, kept only when a prefix is to be taken off.
    let prefix = LaunchPrefix::detect(&head);
    let original = prefix.map(|_| head.clone());
    let (mut unwrap, mut head_ranks) = Unwrap::learn(&mut head, prefix);
    // Nothing recognisable at the top (a long training log whose OOM or
    // memory lines come later): scan the whole log for log-line formats.
    // Column names given for a headerless CSV say what it is.
    let mut detected = opts
        .format
        .or_else(|| opts.csv_columns.as_ref().map(|_| Format::NvidiaSmiCsv))
        .or_else(|| detect(&head));
    // Lines of `key: value` share the shape of pdsh's `host: ` prefix
    // (`torch.cuda.max_memory_reserved: 15.1GB`, three such prints): when
    // what is left without the prefix reads as nothing, the lines as they
    // came are read.
    if let (None, Some(mut plain)) = (detected, original) {
        let (plain_unwrap, plain_ranks) = Unwrap::learn(&mut plain, None);
        if let Some(f) = detect(&plain) {
            head = plain;
            unwrap = plain_unwrap;
            head_ranks = plain_ranks;
            detected = Some(f);
        }
    }
    // Why an unrecognised text is refused, read off its head while it is held.
    let refusal = if detected.is_none() {
        refusal_reason(&head)
    } else {
        None
    };
    let format = detected.unwrap_or(Format::PytorchOom);
    let mut parser = parser_for(format, opts);
    let mut b = Builder::default();
    let mut oom = OomScanner::default();
    let mut no = 0u64;
    for (i, l) in head.iter().enumerate() {
        no += 1;
        b.line_rank = head_ranks.get(i).copied().flatten();
        oom.line(no, l, &mut b);
        parser.line(no, l, &mut b)?;
    }
    drop(head);
    if !eof {
        while next(&mut r, &mut raw)? {
            // Valid UTF-8 (the common case) is read in place; anything else is repaired.
            let lossy;
            let l = match std::str::from_utf8(&raw) {
                Ok(l) => l,
                Err(_) => {
                    lossy = String::from_utf8_lossy(&raw).into_owned();
                    &lossy
                }
            };
            if !needs_cleaning(l.as_bytes()) {
                // Plain ASCII, one line: as it is.
                no += 1;
                let (l, rank) = unwrap.apply_ranked(l);
                b.line_rank = rank;
                oom.line(no, l, &mut b);
                parser.line(no, l, &mut b)?;
                continue;
            }
            for seg in l.split('\r') {
                no += 1;
                let seg = clean_line(seg);
                let (seg, rank) = unwrap.apply_ranked(&seg);
                b.line_rank = rank;
                oom.line(no, seg, &mut b);
                parser.line(no, seg, &mut b)?;
            }
        }
    }
    oom.flush(&mut b);
    if cut_lines.get() > 0 {
        b.warnings.push(format!(
            "{} line(s) longer than {} MiB were read up to that length only",
            cut_lines.get(),
            MAX_LINE_BYTES >> 20
        ));
    }
    parser.finish(&mut b)?;
    let format = match detected {
        Some(f) => f,
        None => match b.seen.or((!b.oom.is_empty()).then_some(Format::PytorchOom)) {
            Some(f) => f,
            None => {
                return Err(refusal.unwrap_or_else(|| {
                    TraceError::whole(format!(
                    "unrecognised format: no GPU memory figures in {no} lines; known formats: {}",
                    Format::known_list()
                ))
                }))
            }
        },
    };
    let trace = b.finish(format, no);
    let has_figures = trace
        .gpus
        .iter()
        .any(|g| g.samples > 0 || g.total_mib.is_some())
        || !trace.oom.is_empty()
        || trace.allocator.is_some()
        || !trace.notes.is_empty()
        || trace.processes.iter().any(|p| p.used_mib.is_some());
    if !has_figures {
        return Err(TraceError::whole(format!(
            "read as {} but it holds no memory figures (no used/total memory, allocator counters or OOM message)",
            format.id()
        )));
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_at_a_time_check_finds_every_byte_to_clean() {
        let naive = |b: &[u8]| b.iter().any(|&c| c >= 0x80 || c == 0x1b || c == b'\r');
        // Every position and length up to three words, each byte kind.
        for len in 0..24 {
            for at in 0..len {
                for c in [0x1bu8, 0x0d, 0x80, 0xa0, 0xff, 0x1a, 0x1c, 0x0c, 0x3b, 0x7f] {
                    let mut b = vec![b'a'; len];
                    b[at] = c;
                    assert_eq!(needs_cleaning(&b), naive(&b), "{len} {at} {c:#x}");
                }
            }
            assert!(!needs_cleaning(&vec![b' '; len]));
        }
        // Bytes around ESC in every lane of a word.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let b: Vec<u8> = x.to_le_bytes().iter().map(|v| v & 0x3f).collect();
            assert_eq!(needs_cleaning(&b), naive(&b), "{b:?}");
        }
    }

    #[test]
    fn series_stay_bounded_and_keep_the_peak() {
        let mut s = Series::default();
        for i in 0..100_000u32 {
            let v = if i == 77_777 { 1e6 } else { (i % 100) as f64 };
            s.push(Point {
                t: i as f64,
                used_mib: v,
            });
        }
        s.flush();
        assert!(s.points.len() <= SERIES_POINTS, "{}", s.points.len());
        assert!(s.points.len() > SERIES_POINTS / 4);
        assert_eq!(s.points.iter().map(|p| p.used_mib).fold(0.0, f64::max), 1e6);
        assert!(s.points.windows(2).all(|w| w[0].t < w[1].t));
    }

    #[test]
    fn escapes_boms_and_utf16_are_read() {
        let table = "\u{feff}| NVIDIA-SMI 535.54.03  Driver Version: 535.54.03  CUDA Version: 12.2 |\n\
                     |   0  NVIDIA A100-SXM4-80GB  On  | 00000000:07:00.0 Off |   0 |\n\
                     | N/A   33C  P0  62W / 400W |  \u{1b}[1m40000MiB\u{1b}[0m / 81920MiB |  0%  Default |\n";
        let t = parse(table, &ParseOptions::default()).unwrap();
        assert_eq!(t.gpus[0].peak_used_mib, Some(40000.0));
        let mut utf16 = vec![0xFF, 0xFE];
        for u in table.trim_start_matches('\u{feff}').encode_utf16() {
            utf16.extend_from_slice(&u.to_le_bytes());
        }
        let t = parse_reader(&utf16[..], &ParseOptions::default()).unwrap();
        assert_eq!(t.gpus[0].total_mib, Some(81920.0));
    }

    #[test]
    fn sizes_read_binary_units() {
        assert_eq!(parse_joined_mib("12345MiB"), Some(12345.0));
        assert_eq!(parse_joined_mib("2GB"), Some(2048.0));
        assert_eq!(parse_joined_mib("N/A"), None);
        assert_eq!(parse_size_mib("1,024", "KiB"), Some(1.0));
    }

    #[test]
    fn unknown_and_empty_inputs_are_refused_with_the_reason() {
        let e = parse("hello\nworld\n", &ParseOptions::default()).unwrap_err();
        assert!(e.message.contains("known formats: nvidia-smi-table"), "{e}");
        let e = parse("\n\n  \n", &ParseOptions::default()).unwrap_err();
        assert!(e.message.contains("empty"), "{e}");
    }
}

/// Days from 1970-01-01 to a civil date (H. Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn hms(s: &str) -> Option<f64> {
    let mut it = s.split(':');
    let h: f64 = it.next()?.parse().ok()?;
    let m: f64 = it.next()?.parse().ok()?;
    let sec: f64 = it.next()?.parse().ok()?;
    (it.next().is_none() && h < 24.0 && m < 60.0 && sec < 61.0)
        .then_some(h * 3600.0 + m * 60.0 + sec)
}

fn month(s: &str) -> Option<u32> {
    const M: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    M.iter()
        .position(|m| s.starts_with(m))
        .map(|i| i as u32 + 1)
}

/// Seconds since the epoch of a `ctime` date anywhere in `s`
/// (`Fri Jun 30 19:25:22 2023`, as nvidia-smi and `date` print it).
pub fn parse_ctime(s: &str) -> Option<f64> {
    let t: Vec<&str> = s.split_whitespace().collect();
    t.windows(4).find_map(|w| {
        let mo = month(w[0])?;
        let d: u32 = w[1].parse().ok().filter(|d| (1..=31).contains(d))?;
        let secs = hms(w[2])?;
        let y: i64 = w[3].parse().ok().filter(|y| (1970..=9999).contains(y))?;
        Some(days_from_civil(y, mo, d) as f64 * 86_400.0 + secs)
    })
}

/// Seconds since the epoch of `2024/11/23 12:23:29.950` or `2024-11-23 12:23:29`
/// (nvidia-smi's `timestamp` column, log prefixes), or of a bare epoch number.
pub fn parse_timestamp(s: &str) -> Option<f64> {
    let s = s.trim().trim_start_matches('[').trim_end_matches(']');
    if let Ok(v) = s.parse::<f64>() {
        return (v > 1e8 && v < 1e11).then_some(v);
    }
    let (date, time) = s.split_once([' ', 'T'])?;
    let mut d = date.split(['/', '-']);
    let y: i64 = d.next()?.parse().ok()?;
    let m: u32 = d.next()?.parse().ok()?;
    let day: u32 = d.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    // `19:09:56,486` (Python logging) is `19:09:56.486`.
    let time = time.trim().split(' ').next()?.replace(',', ".");
    Some(days_from_civil(y, m, day) as f64 * 86_400.0 + hms(&time)?)
}

#[cfg(test)]
mod time_tests {
    use super::*;

    #[test]
    fn dates_parse() {
        assert_eq!(parse_ctime("Thu Jan  1 00:00:10 1970"), Some(10.0));
        assert_eq!(
            parse_ctime("Fri Jun 30 19:25:22 2023"),
            Some(1_688_153_122.0)
        );
        assert_eq!(
            parse_timestamp("2024/11/23 12:23:29.950"),
            Some(1_732_364_609.95)
        );
        assert_eq!(parse_timestamp("1764189075"), Some(1_764_189_075.0));
        assert_eq!(
            parse_timestamp("2023-01-15 19:09:56,486"),
            Some(1_673_809_796.486)
        );
        assert_eq!(parse_timestamp("junk"), None);
    }
}
