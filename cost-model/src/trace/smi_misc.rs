//! The other device-level tools: `nvidia-smi dmon` / `pmon`, `nvidia-smi -q`
//! (and `-q -d MEMORY`, and its XML form `-q -x`), `gpustat`, `rocm-smi` (concise table and `-a`) and
//! `amd-smi` (`metric`, `monitor`).

use super::{
    parse_ctime, parse_size_mib, parse_timestamp, Builder, LineParser, ProcessUse, TraceError,
};

/// A `dmon`/`pmon` header naming the `gpu` column (`# gpu pwr … fb bar1 …`, or
/// with `-o DT`: `#Date Time gpu …`): its lower-cased column names.
pub(crate) fn gpu_header(line: &str) -> Option<Vec<String>> {
    let rest = line.trim().strip_prefix('#')?;
    let cols: Vec<String> = rest
        .split_whitespace()
        .map(|s| s.to_ascii_lowercase())
        .collect();
    cols.iter().any(|c| c == "gpu").then_some(cols)
}

/// The columns of a `dmon`/`pmon` log, read from its header.
#[derive(Default)]
struct Columns {
    names: Vec<String>,
    /// Where `fb` (MB of frame buffer used) is, when the memory group was logged.
    fb: Option<usize>,
}

impl Columns {
    /// Reads a header (`#` lines; the units line is skipped) and returns the
    /// whitespace-separated fields of a data row, or `None` when there is no
    /// row to read.
    fn row<'a>(&mut self, line: &'a str) -> Option<Vec<&'a str>> {
        if line.trim_start().starts_with('#') {
            if let Some(names) = gpu_header(line) {
                self.fb = names.iter().position(|c| c == "fb");
                self.names = names;
            }
            return None;
        }
        let toks: Vec<&str> = line.split_whitespace().collect();
        (!toks.is_empty() && !self.names.is_empty()).then_some(toks)
    }
}

/// `nvidia-smi dmon`: memory figures are the `fb` column (MB, i.e. MiB, used
/// frame buffer) when the `-s m` group is selected; the default groups show
/// only `mem` (memory-controller utilisation %), which is not memory held.
#[derive(Default)]
pub struct DmonParser {
    cols: Columns,
    rows: u64,
    seen_gpus: Vec<u32>,
    tick: u64,
}

impl LineParser for DmonParser {
    fn line(&mut self, no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        let Some(toks) = self.cols.row(line) else {
            return Ok(());
        };
        let gpu_col = self.cols.names.iter().position(|c| c == "gpu").unwrap_or(0);
        let off = toks.len().saturating_sub(self.cols.names.len());
        let Some(gpu) = toks.get(off + gpu_col).and_then(|t| t.parse::<u32>().ok()) else {
            return Err(TraceError::at(
                no,
                format!(
                    "expected a dmon row of {} columns ({})",
                    self.cols.names.len(),
                    self.cols.names.join(" ")
                ),
            ));
        };
        let date_time = match (
            self.cols.names.iter().position(|c| c == "date"),
            self.cols.names.iter().position(|c| c == "time"),
        ) {
            (Some(d), Some(t)) => toks.get(off + d).zip(toks.get(off + t)).and_then(|(d, t)| {
                let d = if d.len() == 8 && d.bytes().all(|c| c.is_ascii_digit()) {
                    format!("{}-{}-{}", &d[..4], &d[4..6], &d[6..])
                } else {
                    d.to_string()
                };
                super::parse_timestamp(&format!("{d} {t}"))
            }),
            _ => None,
        };
        // A GPU seen again starts the next sampling interval.
        if self.seen_gpus.contains(&gpu) {
            self.seen_gpus.clear();
            self.tick += 1;
        }
        self.seen_gpus.push(gpu);
        self.rows += 1;
        b.describe(gpu, None, None, None);
        if let Some(fb) = self.cols.fb.and_then(|i| toks.get(off + i)) {
            if let Ok(v) = fb.parse::<f64>() {
                b.sample(gpu, None, Some(date_time.unwrap_or(self.tick as f64)), v);
            }
        }
        Ok(())
    }

    fn finish(&mut self, _b: &mut Builder) -> Result<(), TraceError> {
        if self.cols.fb.is_none() {
            return Err(TraceError::whole(format!(
                "nvidia-smi dmon without the `fb` column ({} rows read): `mem` is memory-controller \
                 utilisation in %, not memory held — run `nvidia-smi dmon -s um` to log used memory",
                self.rows
            )));
        }
        Ok(())
    }
}

/// `nvidia-smi pmon`: processes per GPU; `fb` (MB) when `-s m` is selected,
/// else only utilisation.
#[derive(Default)]
pub struct PmonParser {
    cols: Columns,
}

impl LineParser for PmonParser {
    fn line(&mut self, no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        let Some(toks) = self.cols.row(line) else {
            return Ok(());
        };
        let (Some(gpu), Some(pid)) = (toks[0].parse::<u32>().ok(), toks.get(1)) else {
            return Err(TraceError::at(
                no,
                format!("expected a pmon row ({})", self.cols.names.join(" ")),
            ));
        };
        if *pid == "-" {
            b.describe(gpu, None, None, None);
            return Ok(()); // no process on this GPU
        }
        let name_at = self
            .cols
            .names
            .iter()
            .position(|c| c == "command")
            .unwrap_or(toks.len() - 1);
        b.describe(gpu, None, None, None);
        b.processes.push(ProcessUse {
            gpu: Some(gpu),
            pid: pid.parse().ok(),
            name: toks.get(name_at).map(|s| s.to_string()).unwrap_or_default(),
            kind: toks.get(2).map(|s| s.to_string()),
            used_mib: self
                .cols
                .fb
                .and_then(|i| toks.get(i))
                .and_then(|v| v.parse().ok()),
        });
        Ok(())
    }

    fn finish(&mut self, b: &mut Builder) -> Result<(), TraceError> {
        if self.cols.fb.is_none() {
            return Err(TraceError::whole(format!(
                "nvidia-smi pmon without the `fb` column ({} processes listed): it shows SM and \
                 memory-controller utilisation only — run `nvidia-smi pmon -s um` to log memory per process",
                b.processes.len()
            )));
        }
        Ok(())
    }
}

/// `nvidia-smi -q`: `GPU 00000000:07:00.0` blocks with `Product Name`,
/// `Minor Number`, `FB Memory Usage` (Total / Reserved / Used / Free) and
/// `Processes` (`Used GPU Memory`).
#[derive(Default)]
pub struct QueryParser {
    gpus: u32,
    current: Option<u32>,
    name: Option<String>,
    in_fb: bool,
    total: Option<f64>,
    time: Option<f64>,
    pid: Option<u64>,
    pname: Option<String>,
}

fn kv(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(':')?;
    Some((k.trim(), v.trim()))
}

fn mib_value(v: &str) -> Option<f64> {
    let mut it = v.split_whitespace();
    parse_size_mib(it.next()?, it.next()?)
}

/// `<tag>value</tag>` on one line of `nvidia-smi -q -x`.
fn xml_element(t: &str) -> Option<(&str, &str)> {
    let rest = t.strip_prefix('<')?;
    let (tag, rest) = rest.split_once('>')?;
    let value = rest.strip_suffix(&format!("</{tag}>")[..])?;
    Some((tag, value.trim()))
}

impl QueryParser {
    /// A GPU's section begins (`GPU 00000000:07:00.0`, `<gpu id=…>`).
    fn start_gpu(&mut self) {
        self.current = Some(self.gpus);
        self.gpus += 1;
        self.name = None;
        self.in_fb = false;
        self.total = None;
    }

    /// A line of `nvidia-smi -q -x` (XML): the same figures under tags.
    fn xml_line(&mut self, t: &str, b: &mut Builder) {
        if t.starts_with("<gpu id=") || t == "<gpu>" {
            self.start_gpu();
            return;
        }
        match t {
            "<fb_memory_usage>" => self.in_fb = true,
            "</fb_memory_usage>" => self.in_fb = false,
            _ => {}
        }
        let Some((tag, v)) = xml_element(t) else {
            return;
        };
        let key = match tag {
            "timestamp" => "Timestamp",
            "product_name" => "Product Name",
            "total" => "Total",
            "reserved" => "Reserved",
            "used" => "Used",
            "pid" => "Process ID",
            "process_name" => "Process Name",
            "used_memory" => "Used GPU Memory",
            _ => return,
        };
        self.key_value(key, v, b);
    }

    fn key_value(&mut self, k: &str, v: &str, b: &mut Builder) {
        match k {
            "Timestamp" => self.time = parse_ctime(v),
            "Product Name" => self.name = Some(v.to_string()),
            "Minor Number" => {
                // Keep the ordinal: -q lists GPUs by bus id, minor numbers can differ.
            }
            "Total" if self.in_fb => {
                self.total = mib_value(v);
                if let Some(g) = self.current {
                    b.describe(g, None, self.name.as_deref(), self.total);
                }
            }
            "Reserved" if self.in_fb => {
                if let (Some(g), Some(r)) = (self.current, mib_value(v)) {
                    b.notes
                        .push((format!("GPU {g}: reserved by the driver"), r));
                }
            }
            "Used" if self.in_fb => {
                if let (Some(g), Some(u)) = (self.current.or(Some(0)), mib_value(v)) {
                    b.describe(g, None, self.name.as_deref(), self.total);
                    b.sample(g, None, self.time, u);
                }
            }
            "Process ID" => self.pid = v.parse().ok(),
            "Name" | "Process Name" => self.pname = Some(v.to_string()),
            "Used GPU Memory" => b.processes.push(ProcessUse {
                gpu: self.current,
                pid: self.pid.take(),
                name: self.pname.take().unwrap_or_default(),
                kind: None,
                used_mib: mib_value(v),
            }),
            _ => {}
        }
    }
}

impl LineParser for QueryParser {
    fn line(&mut self, _no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        let t = line.trim();
        if t.starts_with('<') {
            self.xml_line(t, b);
            return Ok(());
        }
        if t.starts_with("GPU ") && t.matches(':').count() >= 2 && !t.contains(" : ") {
            self.start_gpu();
            return Ok(());
        }
        let indent = line.len() - line.trim_start().len();
        if indent <= 4 {
            self.in_fb = t == "FB Memory Usage";
        }
        let Some((k, v)) = kv(t) else {
            return Ok(());
        };
        self.key_value(k, v, b);
        Ok(())
    }
}

/// A `gpustat` GPU line: `[0] Tesla P100-PCIE-16GB | 27'C,   0 % |   103 / 16384 MB | user(…)`.
pub fn is_gpustat_row(line: &str) -> bool {
    gpustat_row(line).is_some()
}

fn gpustat_row(line: &str) -> Option<(u32, String, f64, f64, String)> {
    let t = line.trim();
    let rest = t.strip_prefix('[')?;
    let (idx, rest) = rest.split_once(']')?;
    let idx: u32 = idx.trim().parse().ok()?;
    let parts: Vec<&str> = rest.split('|').collect();
    if parts.len() < 3 {
        return None;
    }
    let mem = parts[2].trim();
    let (used, total) = mem.trim_end_matches("MB").trim().split_once('/')?;
    let used: f64 = used.trim().parse().ok()?;
    let total: f64 = total.trim().parse().ok()?;
    let procs = parts
        .get(3)
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    Some((idx, parts[0].trim().to_string(), used, total, procs))
}

/// `gpustat` (its "MB" are MiB: it prints nvidia-smi's figures), as text or
/// as `gpustat --json` (pretty-printed or one object a line, as a loop
/// writes it): the keys are read in order, whatever the layout.
#[derive(Default)]
pub struct GpustatParser {
    time: Option<f64>,
    /// The JSON GPU being read.
    gpu: Option<JsonGpu>,
    /// The JSON process being read: its command and memory (MiB).
    process: Option<(String, Option<f64>)>,
}

/// A `gpustat --json` GPU as its keys come: index, name, used and total MiB.
struct JsonGpu(u32, Option<String>, Option<f64>, Option<f64>);

/// The `"key": value` pairs of a JSON text, in order (strings unquoted, no
/// escapes needed for the keys read here).
fn json_pairs(line: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find('"') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('"') else { break };
        let key = &after[..close];
        let tail = after[close + 1..].trim_start();
        let Some(value) = tail.strip_prefix(':') else {
            rest = &after[close + 1..];
            continue;
        };
        let value = value.trim_start();
        let (v, next) = if let Some(q) = value.strip_prefix('"') {
            match q.find('"') {
                Some(e) => (&q[..e], &q[e + 1..]),
                None => (q, ""),
            }
        } else if value.starts_with(['{', '[']) {
            // An object or array: its own keys come next.
            ("", value)
        } else {
            let e = value.find([',', '}', ']']).unwrap_or(value.len());
            (value[..e].trim(), &value[e..])
        };
        out.push((key, v));
        rest = next;
    }
    out
}

impl GpustatParser {
    fn flush_gpu(&mut self, b: &mut Builder) {
        if let Some(JsonGpu(idx, name, used, total)) = self.gpu.take() {
            b.describe(idx, None, name.as_deref(), total);
            if let Some(u) = used {
                b.sample(idx, None, self.time, u);
            }
        }
    }

    fn json(&mut self, line: &str, b: &mut Builder) {
        for (k, v) in json_pairs(line) {
            let num = v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0);
            match k {
                "query_time" => {
                    self.flush_gpu(b);
                    if let Some(t) = parse_timestamp(&v.replace('T', " ")) {
                        self.time = Some(t);
                    }
                }
                "index" => {
                    self.flush_gpu(b);
                    if let Ok(i) = v.parse::<u32>() {
                        self.gpu = Some(JsonGpu(i, None, None, None));
                    }
                }
                "name" => {
                    if let Some(g) = &mut self.gpu {
                        g.1 = Some(v.to_string());
                    }
                }
                "memory.used" => {
                    if let Some(g) = &mut self.gpu {
                        g.2 = num;
                    }
                }
                "memory.total" => {
                    if let Some(g) = &mut self.gpu {
                        g.3 = num;
                    }
                }
                "command" => self.process = Some((v.to_string(), None)),
                "gpu_memory_usage" => {
                    self.process.get_or_insert_with(Default::default).1 = num;
                }
                "pid" => {
                    if let Some((name, used_mib)) = self.process.take() {
                        b.processes.push(ProcessUse {
                            gpu: self.gpu.as_ref().map(|g| g.0),
                            pid: v.parse().ok(),
                            name,
                            kind: None,
                            used_mib,
                        });
                    }
                }
                _ => {}
            }
        }
    }
}

impl LineParser for GpustatParser {
    fn finish(&mut self, b: &mut Builder) -> Result<(), TraceError> {
        self.flush_gpu(b);
        Ok(())
    }

    fn line(&mut self, _no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        if line.contains('"') {
            self.json(line, b);
            return Ok(());
        }
        if let Some((idx, name, used, total, procs)) = gpustat_row(line) {
            b.describe(idx, None, Some(&name), Some(total));
            b.sample(idx, None, self.time, used);
            // `user/python/12345(1000M)` or `python(1000M)` entries.
            for p in procs.split_whitespace() {
                if let Some((who, rest)) = p.split_once('(') {
                    let m = rest.trim_end_matches(')').trim_end_matches('M');
                    b.processes.push(ProcessUse {
                        gpu: Some(idx),
                        pid: who.rsplit('/').next().and_then(|x| x.parse().ok()),
                        name: who.to_string(),
                        kind: None,
                        used_mib: m.parse().ok(),
                    });
                }
            }
        } else if let Some(t) = parse_ctime(line) {
            self.time = Some(t);
        }
        Ok(())
    }
}

/// `rocm-smi`: the concise table gives only `VRAM%`; `--showmeminfo vram`
/// gives `VRAM Total Memory (B)` / `VRAM Total Used Memory (B)`; `-a` lists
/// `GPU memory use (%)` and a KFD process table.
#[derive(Default)]
pub struct RocmParser {
    total: std::collections::BTreeMap<u32, f64>,
    percent_only: bool,
    time: Option<f64>,
    /// `--json`: the card whose keys are being read.
    card: Option<u32>,
}

fn rocm_gpu(line: &str) -> Option<(u32, &str)> {
    let rest = line.trim().strip_prefix("GPU[")?;
    let (i, rest) = rest.split_once(']')?;
    Some((
        i.parse().ok()?,
        rest.trim_start().trim_start_matches(':').trim(),
    ))
}

impl RocmParser {
    /// `--showmeminfo vram`'s figures, as text or JSON: whether `key` was
    /// one of them (`bytes` its value, when it is a number).
    fn vram(&mut self, g: u32, key: &str, bytes: Option<f64>, b: &mut Builder) -> bool {
        let to_mib = |x: f64| x / (1024.0 * 1024.0);
        match key {
            "VRAM Total Memory (B)" => {
                if let Some(x) = bytes {
                    self.total.insert(g, to_mib(x));
                    b.describe(g, None, None, Some(to_mib(x)));
                }
            }
            "VRAM Total Used Memory (B)" => {
                if let Some(x) = bytes {
                    b.describe(g, None, None, self.total.get(&g).copied());
                    b.sample(g, None, self.time, to_mib(x));
                }
            }
            _ => return false,
        }
        true
    }

    /// `rocm-smi --showmeminfo vram --json`: `{"card0": {"VRAM Total Memory
    /// (B)": "…", "VRAM Total Used Memory (B)": "…"}, …}`, bytes as strings.
    fn json(&mut self, line: &str, b: &mut Builder) {
        for (k, v) in json_pairs(line) {
            if let Some(n) = k.strip_prefix("card") {
                self.card = n.parse().ok();
            } else if let Some(g) = self.card {
                self.vram(g, k, v.trim().parse().ok(), b);
            }
        }
    }
}

impl LineParser for RocmParser {
    fn line(&mut self, _no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        if line.contains("\"card") {
            self.json(line, b);
            return Ok(());
        }
        if let Some((g, rest)) = rocm_gpu(line) {
            if let Some((k, v)) = kv(rest) {
                if self.vram(g, k, v.trim().parse().ok(), b) {
                    return Ok(());
                }
                match k {
                    "Card series" | "Card Series" | "Card model" | "Card SKU" => {
                        b.describe(g, None, Some(v), None)
                    }
                    k if k.starts_with("GPU memory use")
                        || k.starts_with("GPU Memory Allocated") =>
                    {
                        self.percent_only = true;
                        b.describe(g, None, None, None);
                    }
                    _ => {}
                }
            }
        } else if line.contains("VRAM%") {
            self.percent_only = true;
        } else if let Some(t) = parse_ctime(line) {
            self.time = Some(t);
        }
        Ok(())
    }

    fn finish(&mut self, b: &mut Builder) -> Result<(), TraceError> {
        if b.processes.is_empty() && !self.total.is_empty() {
            return Ok(());
        }
        if self.total.is_empty() {
            let why = if self.percent_only {
                "rocm-smi output with memory only as a percentage (VRAM% / GPU memory use %): no MiB \
                 figures — run `rocm-smi --showmeminfo vram` for used and total bytes"
            } else {
                "rocm-smi output without memory columns (temperature, power and clocks only) — run \
                 `rocm-smi --showmeminfo vram`"
            };
            return Err(TraceError::whole(why));
        }
        Ok(())
    }
}

/// `amd-smi` (ROCm 6 and later, rocm-smi's successor): `amd-smi metric`'s
/// blocks (`GPU: 0`, then `USED_VRAM: 283 MB`, `TOTAL_VRAM: 196592 MB` under
/// `MEM_USAGE:`) and `amd-smi monitor`'s table (a `VRAM_USED  VRAM_TOTAL`
/// header, rows such as `0  152 W  45 °C … 283 MB  196592 MB`). amd-smi
/// divides bytes by 1024² and prints `MB`: read as MiB, as [`parse_size_mib`] does.
#[derive(Default)]
pub struct AmdSmiParser {
    gpu: Option<u32>,
    /// `amd-smi monitor`: the header's `VRAM_*` size columns, in order.
    vram_cols: Vec<String>,
    /// `--json`: the size key whose `{"value": …, "unit": …}` is being read
    /// (used or total), and its value until the unit comes.
    json_key: Option<(bool, Option<String>)>,
}

impl AmdSmiParser {
    /// `amd-smi metric --json` / `monitor --json`: per GPU (`"gpu": 0`) a
    /// `"used_vram"`/`"total_vram"` (monitor: `"vram_used"`/`"vram_total"`)
    /// object of `"value"` and `"unit"`.
    fn json(&mut self, line: &str, b: &mut Builder) {
        for (k, v) in json_pairs(line) {
            match k {
                "gpu" => self.gpu = v.parse().ok(),
                // A size as one string (`"283 MB"`), or an object to follow.
                "used_vram" | "vram_used" | "total_vram" | "vram_total" => {
                    let used = k.contains("used");
                    match mib_value(v) {
                        Some(m) if used => b.sample(self.gpu.unwrap_or(0), None, None, m),
                        Some(m) => b.describe(self.gpu.unwrap_or(0), None, None, Some(m)),
                        None => self.json_key = Some((used, None)),
                    }
                }
                "value" => {
                    if let Some((_, value)) = &mut self.json_key {
                        *value = Some(v.to_string());
                    }
                }
                "unit" => {
                    if let Some((used, Some(x))) = self.json_key.take() {
                        let g = self.gpu.unwrap_or(0);
                        match parse_size_mib(&x, v) {
                            Some(m) if used => b.sample(g, None, None, m),
                            Some(m) => b.describe(g, None, None, Some(m)),
                            None => {}
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

/// Whether a head holds `amd-smi … --json` memory keys.
pub fn is_amd_smi_json(l: &str) -> bool {
    [
        "\"used_vram\"",
        "\"total_vram\"",
        "\"vram_used\"",
        "\"vram_total\"",
    ]
    .iter()
    .any(|k| l.contains(k))
}

/// `amd-smi monitor`'s header line.
fn is_amd_monitor_header(l: &str) -> bool {
    l.contains("VRAM_USED") && l.contains("VRAM_TOTAL")
}

/// Whether a line is amd-smi's: a metric key or the monitor header.
pub fn is_amd_smi_line(l: &str) -> bool {
    let t = l.trim_start();
    t.starts_with("USED_VRAM:") || t.starts_with("TOTAL_VRAM:") || is_amd_monitor_header(l)
}

impl LineParser for AmdSmiParser {
    fn line(&mut self, _no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        if line.contains('"') {
            self.json(line, b);
            return Ok(());
        }
        let t = line.trim();
        if let Some(i) = t.strip_prefix("GPU:") {
            self.gpu = i.trim().parse().ok();
            return Ok(());
        }
        if is_amd_monitor_header(t) {
            self.vram_cols = t
                .split_whitespace()
                .filter(|c| c.starts_with("VRAM_") && !c.ends_with('%'))
                .map(str::to_string)
                .collect();
            return Ok(());
        }
        if let Some((k, v)) = kv(t) {
            let g = self.gpu.unwrap_or(0);
            match (k, mib_value(v)) {
                ("TOTAL_VRAM", Some(m)) => b.describe(g, None, None, Some(m)),
                ("USED_VRAM", Some(m)) => b.sample(g, None, None, m),
                _ => {}
            }
            return Ok(());
        }
        // A monitor row: the GPU index, then the sizes in the header's order.
        if self.vram_cols.is_empty() {
            return Ok(());
        }
        let toks: Vec<&str> = t.split_whitespace().collect();
        let Some(g) = toks.first().and_then(|x| x.parse::<u32>().ok()) else {
            return Ok(());
        };
        let sizes: Vec<f64> = toks
            .windows(2)
            .filter(|w| matches!(w[1], "MB" | "GB" | "MiB" | "GiB"))
            .filter_map(|w| parse_size_mib(w[0], w[1]))
            .collect();
        let at = |name: &str| {
            self.vram_cols
                .iter()
                .position(|c| c == name)
                .and_then(|i| sizes.get(i).copied())
        };
        if let Some(total) = at("VRAM_TOTAL") {
            b.describe(g, None, None, Some(total));
        }
        if let Some(used) = at("VRAM_USED") {
            b.sample(g, None, None, used);
        }
        Ok(())
    }
}

/// A `torch.cuda.list_gpu_processes()` process line: `process {pid:>10d} uses
/// {mem:>12.3f} MB GPU memory` (torch/cuda/memory.py; `usedGpuMemory / (1024 *
/// 1024)`, so MB = 2^20). Returns the pid and MiB.
pub fn gpu_process_line(line: &str) -> Option<(u64, f64)> {
    let rest = line.trim().strip_prefix("process")?;
    let (pid, rest) = rest.trim_start().split_once(char::is_whitespace)?;
    let mem = rest.trim_start().strip_prefix("uses")?;
    let mem = mem.trim().strip_suffix("MB GPU memory")?.trim();
    Some((pid.parse().ok()?, mem.parse().ok()?))
}

/// `torch.cuda.list_gpu_processes()`: a `GPU:N` line, then one line per
/// process (NVML's per-process used memory: its CUDA context and what its
/// allocator holds, as nvidia-smi's process list shows) or `no processes are
/// running`. A script may print it for every GPU and every step: each listing
/// is a reading of that GPU, the sum of its processes.
#[derive(Default)]
pub struct GpuProcessesParser {
    /// The GPU being listed and its processes' sum so far (none listed yet).
    listing: Option<(u32, Option<f64>)>,
    readings: u64,
}

impl GpuProcessesParser {
    fn flush(&mut self, b: &mut Builder) {
        if let Some((gpu, Some(sum))) = self.listing.take() {
            b.sample(gpu, None, None, sum);
            self.readings += 1;
        }
    }
}

impl LineParser for GpuProcessesParser {
    fn line(&mut self, _no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        let t = line.trim();
        if let Some(g) = t
            .strip_prefix("GPU:")
            .and_then(|g| g.trim().parse::<u32>().ok())
        {
            self.flush(b);
            b.describe(g, None, None, None);
            self.listing = Some((g, None));
        } else if let Some((pid, mib)) = gpu_process_line(t) {
            let (gpu, sum) = self.listing.get_or_insert((0, None));
            let gpu = *gpu;
            *sum = Some(sum.unwrap_or(0.0) + mib);
            // One entry per process: its largest reading.
            match b
                .processes
                .iter_mut()
                .find(|p| p.gpu == Some(gpu) && p.pid == Some(pid))
            {
                Some(p) => p.used_mib = Some(p.used_mib.map_or(mib, |m| m.max(mib))),
                None => b.processes.push(ProcessUse {
                    gpu: Some(gpu),
                    pid: Some(pid),
                    name: String::new(),
                    kind: None,
                    used_mib: Some(mib),
                }),
            }
        }
        Ok(())
    }

    fn finish(&mut self, b: &mut Builder) -> Result<(), TraceError> {
        self.flush(b);
        if self.readings == 0 {
            return Err(TraceError::whole(
                "torch.cuda.list_gpu_processes() listed no process (\"no processes are running\"): \
                 print it while the training process holds the GPU",
            ));
        }
        Ok(())
    }
}
