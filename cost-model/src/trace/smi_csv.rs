//! `nvidia-smi --query-gpu=… --format=csv[,noheader][,nounits]`: any column
//! set and order, with or without timestamps, one-shot or looping (`-l`,
//! `-lms`), a hand-made header, an extra leading column from a wrapper script.
//! Without a header the memory columns cannot be told apart, so the column
//! names must be given ([`super::ParseOptions::csv_columns`]) — except for
//! NVIDIA's documented logging query, recognised by its shape.

use super::{parse_timestamp, Builder, LineParser, TraceError};

/// What a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    Time,
    Index,
    Name,
    Bus,
    Uuid,
    Used,
    Total,
    Free,
    /// `--query-compute-apps`: one row per process.
    Pid,
    ProcessName,
    ProcessUsed,
    Other,
}

fn column(name: &str) -> Col {
    let n = name.trim().to_ascii_lowercase();
    let n = n
        .split(['[', '('])
        .next()
        .unwrap_or("")
        .trim()
        .replace([' ', '-'], "_");
    match n.as_str() {
        "timestamp" | "time" | "ts" | "epoch" | "date" | "datetime" | "unix_time" => Col::Time,
        "index" | "gpu" | "gpu_index" | "idx" | "gpu_id" | "device" => Col::Index,
        "name" | "gpu_name" | "model" => Col::Name,
        "pci.bus_id" | "pci.bus" | "bus_id" | "busid" => Col::Bus,
        "uuid" | "gpu_uuid" => Col::Uuid,
        "memory.used" | "mem.used" | "memory_used" | "mem_used" | "used" | "used_mib"
        | "fb.used" | "memory.used_mib" => Col::Used,
        "memory.total" | "mem.total" | "memory_total" | "mem_total" | "total" | "total_mib"
        | "fb.total" => Col::Total,
        "memory.free" | "mem.free" | "memory_free" | "mem_free" | "free" | "free_mib" => Col::Free,
        "pid" => Col::Pid,
        "process_name" | "process" | "command" => Col::ProcessName,
        "used_gpu_memory" | "used_memory" => Col::ProcessUsed,
        "gpu_bus_id" => Col::Bus,
        _ => Col::Other,
    }
}

/// The fields of a CSV line split at `sep`, trimmed, a spreadsheet's quotes
/// taken off.
fn fields_of(line: &str, sep: char) -> Vec<&str> {
    line.split(sep)
        .map(|f| {
            let f = f.trim();
            match f.strip_prefix('"') {
                Some(q) => q.strip_suffix('"').unwrap_or(q).trim(),
                None => f,
            }
        })
        .collect()
}

/// The separator a header line uses: nvidia-smi's comma, or the semicolon or
/// tab of a log re-saved by a spreadsheet (Excel in a decimal-comma locale) or
/// pasted from one — whichever names two known columns.
fn header_sep(line: &str) -> Option<char> {
    [',', '\t', ';'].into_iter().find(|&sep| {
        fields_of(line, sep)
            .iter()
            .filter(|f| column(f) != Col::Other)
            .count()
            >= 2
    })
}

/// A line that looks like a `--query-gpu` CSV header or row: short fields,
/// either mostly known column names or mostly numbers (with their units).
pub fn looks_like_csv(line: &str) -> bool {
    let sep = header_sep(line).unwrap_or(',');
    let fields: Vec<&str> = fields_of(line, sep);
    // `nvidia-smi --query-gpu=memory.used --format=csv -l 1`: the one column's
    // header.
    if let [f] = fields.as_slice() {
        return column(f) == Col::Used && f.starts_with("memory.used");
    }
    if fields.iter().any(|f| f.len() > 64) {
        return false;
    }
    let known = fields.iter().filter(|f| column(f) != Col::Other).count();
    if known >= 2 && known * 2 >= fields.len() {
        return true;
    }
    if known >= 1 && query_properties(&fields) {
        return true;
    }
    let numeric = fields
        .iter()
        .filter(|f| {
            let n = f.split_whitespace().next().unwrap_or("");
            n.parse::<f64>().is_ok() || super::parse_timestamp(f).is_some()
        })
        .count();
    fields.len() >= 3 && numeric * 2 >= fields.len()
}

/// The logging query NVIDIA's nvidia-smi documentation gives as its example
/// (`nvidia-smi --query-gpu=… --format=csv -l 5`), copied into many scripts,
/// often with `noheader`.
const DOCUMENTED_QUERY: &str = "timestamp,name,pci.bus_id,driver_version,pstate,pcie.link.gen.max,\
     pcie.link.gen.current,temperature.gpu,utilization.gpu,utilization.memory,memory.total,memory.free,memory.used";

/// The driver's reserve (`memory.reserved`, not in the query) that makes
/// total exceed free + used: 623 MiB of an A100-40GB in smi_csv_07; allowed
/// up to this share of the total (or 1 GiB).
const DRIVER_RESERVE_MAX_SHARE: f64 = 0.05;

/// A headerless row with the shape of [`DOCUMENTED_QUERY`]: 13 fields, a
/// timestamp, a PCI bus id, a P-state, and the last three memory figures
/// adding up (total = free + used + the driver's reserve).
fn documented_query(f: &[&str]) -> bool {
    if f.len() != 13 {
        return false;
    }
    let bus = f[2].contains(':')
        && f[2].contains('.')
        && f[2]
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
    let pstate = f[4]
        .strip_prefix('P')
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    let (Some(total), Some(free), Some(used)) = (mib(f[10]), mib(f[11]), mib(f[12])) else {
        return false;
    };
    let reserve = total - free - used;
    parse_timestamp(f[0]).is_some()
        && bus
        && pstate
        && reserve >= 0.0
        && reserve <= (DRIVER_RESERVE_MAX_SHARE * total).max(1024.0)
}

/// GPUs whose `[N/A]` rows are counted one by one.
const MAX_NA_GPUS: usize = 1024;

pub struct CsvParser {
    cols: Option<Vec<Col>>,
    names: Vec<String>,
    header_line: Option<String>,
    /// Bus id / uuid → GPU ordinal, when there is no index column.
    ids: Vec<String>,
    rows: u64,
    /// The columns were recognised from the rows' shape, not named.
    guessed: bool,
    bad: u64,
    first_bad: Option<(u64, String)>,
    /// Rows per GPU whose memory.used the driver gave as `[N/A]` (or
    /// `[Not Supported]`), and the GPUs that had a figure at least once.
    na_rows: std::collections::BTreeMap<u32, u64>,
    sampled: std::collections::BTreeSet<u32>,
    /// The field separator, from the header (`,` unless it says otherwise).
    sep: char,
    /// The columns an `nvidia-smi --query-gpu=…` command above the rows
    /// queried, and its line: the names of a headerless CSV.
    command: Option<(u64, Vec<String>)>,
    /// Lines of text before the header or first row (a job log's own
    /// `echo`s), and the first one's line.
    preamble: Option<(u64, u64)>,
}

/// Columns that hold memory used (the GPU's, or a process's), else the
/// refusal `why` says, at `line`.
fn require_memory_used(
    cols: &[Col],
    line: u64,
    why: impl FnOnce() -> String,
) -> Result<(), TraceError> {
    if cols.contains(&Col::Used) || cols.contains(&Col::ProcessUsed) {
        Ok(())
    } else {
        Err(TraceError::at(line, why()))
    }
}

/// The options that list the columns of nvidia-smi's CSV.
const QUERY_OPTIONS: [&str; 2] = ["--query-gpu=", "--query-compute-apps="];

/// An `nvidia-smi --query-gpu=…` (or `--query-compute-apps=…`) command line.
pub fn is_query_command(line: &str) -> bool {
    line.trim_start()
        .strip_prefix("nvidia-smi")
        .is_some_and(|rest| QUERY_OPTIONS.iter().any(|k| rest.contains(k)))
}

/// The properties an `nvidia-smi --query-gpu=…` (or
/// `--query-compute-apps=…`) command line queries, in order; `None` for any
/// other line.
fn queried_columns(line: &str) -> Option<Vec<String>> {
    let rest = line.trim_start().strip_prefix("nvidia-smi")?;
    let at = QUERY_OPTIONS
        .into_iter()
        .find_map(|k| rest.find(k).map(|i| i + k.len()))?;
    let list = rest[at..].split_whitespace().next().unwrap_or("");
    let list = list.trim_matches(['"', '\'']);
    let names: Vec<String> = list
        .split(',')
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    Some(names)
}

impl CsvParser {
    pub fn new(columns: Option<Vec<String>>) -> Self {
        let (cols, names) = match columns {
            Some(c) => (Some(c.iter().map(|n| column(n)).collect()), c),
            None => (None, Vec::new()),
        };
        CsvParser {
            cols,
            names,
            header_line: None,
            command: None,
            preamble: None,
            ids: Vec::new(),
            rows: 0,
            guessed: false,
            bad: 0,
            first_bad: None,
            na_rows: Default::default(),
            sampled: Default::default(),
            sep: ',',
        }
    }

    fn bad_row(&mut self, no: u64, why: String) {
        self.bad += 1;
        if self.first_bad.is_none() {
            self.first_bad = Some((no, why));
        }
    }
}

fn mib(v: &str) -> Option<f64> {
    let v = v.trim();
    if v.is_empty() || v.contains("N/A") || v.contains("Not Supported") {
        return None;
    }
    let num = v.split_whitespace().next()?;
    let x: f64 = num.parse().ok()?;
    let unit = v[num.len()..].trim();
    match unit {
        "" | "MiB" => Some(x),
        u => super::parse_size_mib(num, u),
    }
    .filter(|x| x.is_finite() && *x >= 0.0)
}

/// Every field names a `--query-gpu` property (`timestamp, power.draw [W]`):
/// a column this reader knows, or a lower-case dotted property name.
fn query_properties(fields: &[&str]) -> bool {
    fields.iter().all(|f| {
        column(f) != Col::Other
            || (f.contains('.') && f.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
    })
}

impl LineParser for CsvParser {
    fn line(&mut self, no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            return Ok(());
        }
        // The command that printed the CSV, pasted above it: its columns
        // name the rows if no header follows.
        if t.as_bytes()[0] == b'n' {
            if let Some(names) = queried_columns(t) {
                if self.cols.is_none() {
                    self.command = Some((no, names));
                }
                return Ok(());
            }
        }
        if self.cols.is_none() {
            if let Some(sep) = header_sep(t) {
                self.sep = sep;
            }
        }
        let fields: Vec<&str> = fields_of(t, self.sep);
        if self.cols.is_none() {
            // A line of text before the CSV (`Job 4242 started on node7`,
            // `=== GPU log ===`): one field, no column name, no figure.
            if let [f] = fields.as_slice() {
                if column(f) != Col::Used && !f.starts_with(|c: char| c.is_ascii_digit()) {
                    self.preamble.get_or_insert((no, 0)).1 += 1;
                    return Ok(());
                }
            }
            let cols: Vec<Col> = fields.iter().map(|f| column(f)).collect();
            // Or every field names a query property (`power.draw [W]`): a
            // header without memory columns.
            let is_header = cols.contains(&Col::Used)
                || cols.iter().filter(|c| **c != Col::Other).count() >= 2
                || query_properties(&fields);
            let has_digits_only = fields.iter().any(|f| f.parse::<f64>().is_ok());
            if is_header && !has_digits_only {
                require_memory_used(&cols, no, || {
                    format!(
                        "the CSV columns ({}) include no memory.used: nothing to compare (query memory.used)",
                        fields.join(", ")
                    )
                })?;
                self.names = fields.iter().map(|s| s.to_string()).collect();
                self.cols = Some(cols);
                self.header_line = Some(t.to_string());
                return Ok(());
            }
            // TensorBoard's scalar download (`Wall time,Step,Value`): the
            // scalar's tag is in the file's name only.
            let lower: Vec<String> = fields.iter().map(|f| f.to_ascii_lowercase()).collect();
            if lower == ["wall time", "step", "value"] {
                return Err(TraceError::at(
                    no,
                    "a TensorBoard scalar download (Wall time, Step, Value): the scalar's name is not in \
                     the file, so which memory figure it holds (and in which unit) cannot be told — \
                     upload the training log that printed it, W&B's system metrics, or an nvidia-smi log",
                ));
            }
            if let Some((at, names)) = self.command.take().filter(|(_, n)| n.len() == fields.len())
            {
                let cols: Vec<Col> = names.iter().map(|n| column(n)).collect();
                require_memory_used(&cols, at, || {
                    format!(
                        "the nvidia-smi command queries no memory.used ({}): nothing to compare",
                        names.join(", ")
                    )
                })?;
                b.warnings.push(format!(
                    "no header: the columns are those the nvidia-smi command on line {at} queried ({})",
                    names.join(", ")
                ));
                self.names = names;
                self.cols = Some(cols);
            } else if !documented_query(&fields) {
                return Err(TraceError::at(
                    no,
                    "a --query-gpu CSV without its header: which column is memory.used cannot be told; \
                     keep the header line or give the column names (e.g. --columns timestamp,index,memory.used,memory.total)",
                ));
            } else {
                self.guessed = true;
                self.names = DOCUMENTED_QUERY.split(',').map(String::from).collect();
                self.cols = Some(self.names.iter().map(|n| column(n)).collect());
                b.warnings.push(format!(
                    "no header: read as NVIDIA's documented logging query ({DOCUMENTED_QUERY}) — its 13 \
                     columns, bus id and P-state, and total = free + used (+ the driver's reserve) on line {no}"
                ));
            }
        }
        if self.header_line.as_deref() == Some(t) {
            return Ok(()); // repeated header (restarted loop)
        }
        let ncols = self.cols.as_ref().map_or(0, Vec::len);
        if fields.len() != ncols {
            let why = format!(
                "expected {ncols} comma-separated fields ({}), found {}",
                self.names.join(", "),
                fields.len()
            );
            self.bad_row(no, why);
            return Ok(());
        }
        if self.guessed && !documented_query(&fields) {
            return Err(TraceError::at(
                no,
                "a --query-gpu CSV without its header, read as NVIDIA's documented logging query \
                 until this row, whose bus id, P-state or memory figures (total = free + used) do not \
                 fit it: keep the header line or give the column names (--columns)",
            ));
        }
        let cols = self.cols.as_deref().unwrap_or(&[]);
        let (mut time, mut index, mut name, mut id) = (None, None, None, None);
        let (mut used, mut total, mut free) = (None, None, None);
        let (mut pid, mut pname, mut pused) = (None, None, None);
        for (c, v) in cols.iter().zip(&fields) {
            match c {
                Col::Pid => pid = v.parse::<u64>().ok(),
                Col::ProcessName => pname = Some(*v),
                Col::ProcessUsed => pused = Some(mib(v)),
                Col::Time => time = parse_timestamp(v),
                Col::Index => index = v.parse::<u32>().ok(),
                Col::Name => name = Some(*v),
                Col::Bus | Col::Uuid => id = Some(*v),
                Col::Used => used = mib(v),
                Col::Total => total = mib(v),
                Col::Free => free = mib(v),
                Col::Other => {}
            }
        }
        // A process row (`--query-compute-apps`) that names no GPU (no index,
        // uuid or bus id column) is on a GPU the log does not say: `null`,
        // not a guess.
        let stated = index.is_some() || id.is_some();
        let index = match (index, id) {
            (Some(i), _) => i,
            (None, Some(id)) => match self.ids.iter().position(|x| x == id) {
                Some(i) => i as u32,
                None => {
                    self.ids.push(id.to_string());
                    (self.ids.len() - 1) as u32
                }
            },
            (None, None) => 0,
        };
        if let Some(pused) = pused {
            b.processes.push(super::ProcessUse {
                gpu: stated.then_some(index),
                pid,
                name: pname.unwrap_or("").to_string(),
                kind: None,
                used_mib: pused,
            });
            self.rows += 1;
            return Ok(());
        }
        let used_raw = cols
            .iter()
            .position(|c| *c == Col::Used)
            .and_then(|i| fields.get(i))
            .copied()
            .unwrap_or("");
        let Some(used) = used else {
            let raw = used_raw;
            if raw.contains("N/A") || raw.contains("Not Supported") || raw.is_empty() {
                // The driver had no figure (said once per GPU at the end;
                // bounded, as a garbage index column could name millions).
                if self.na_rows.len() < MAX_NA_GPUS || self.na_rows.contains_key(&index) {
                    *self.na_rows.entry(index).or_default() += 1;
                }
                return Ok(());
            }
            self.bad_row(no, format!("memory.used `{raw}` is not a number of MiB"));
            return Ok(());
        };
        let total = total.or_else(|| free.map(|f| f + used));
        b.describe(index, None, name, total);
        b.sample(index, None, time, used);
        self.sampled.insert(index);
        self.rows += 1;
        Ok(())
    }

    fn finish(&mut self, b: &mut Builder) -> Result<(), TraceError> {
        if let (Some((line, n)), Some(_)) = (self.preamble, &self.cols) {
            b.warnings.push(format!(
                "{n} line(s) of text before the CSV's header or first row skipped (first at line {line})"
            ));
        }
        if let Some((line, why)) = self.first_bad.take() {
            // A log cut mid-write ends in one partial row; many bad rows mean
            // the columns are not what the header says.
            if self.bad > 3 && self.bad * 100 > self.rows {
                return Err(TraceError::at(line, why));
            }
            b.warnings.push(format!(
                "skipped {} malformed row(s); first at line {line}: {why}",
                self.bad
            ));
        }
        let na: u64 = self.na_rows.values().sum();
        if self.rows == 0 && self.cols.is_some() && b.processes.is_empty() {
            return Err(TraceError::whole(if na > 0 {
                format!(
                    "memory.used is [N/A] in every row ({na}): the driver reported no figure \
                     (a MIG instance, a unified-memory board such as GH200, a vGPU): nothing to compare"
                )
            } else {
                "the CSV has a header but no rows with memory.used".to_string()
            }));
        }
        for (gpu, n) in &self.na_rows {
            b.warnings.push(if self.sampled.contains(gpu) {
                format!("GPU {gpu}: {n} row(s) with memory.used [N/A] left out")
            } else {
                format!(
                    "GPU {gpu}: memory.used is [N/A] in all {n} row(s) — the driver reported no \
                     figure for it (a MIG instance, a unified-memory board, a vGPU), so it is not shown"
                )
            });
        }
        Ok(())
    }
}
