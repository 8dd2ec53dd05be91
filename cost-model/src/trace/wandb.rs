//! Weights & Biases system metrics saved as CSV: a run's history
//! (`wandb.Api().run(…).history(stream="events")` written out with pandas:
//! `system.gpu.0.memoryAllocatedBytes`, `_timestamp`, `_runtime`) or a
//! chart's "Export CSV" from the web app (`my-run - system/gpu.0.memoryAllocatedBytes`
//! with the chart's `__MIN` / `__MAX` columns, against `Relative Time
//! (Process)` or `Step`).
//!
//! The system monitor's GPU memory figures (wandb 0.16.6
//! `sdk/internal/system/assets/gpu.py`): `gpu.{i}.memoryAllocatedBytes` is
//! NVML's used memory of GPU `i` (`nvmlDeviceGetMemoryInfo(handle).used`:
//! nvidia-smi's `memory.used`, so compared with `device_used`), and
//! `gpu.{i}.memoryAllocated` the same as a percentage of the GPU's total;
//! `gpu.process.{i}.…` repeats GPU `i` when the run's processes use it. Each
//! logged figure is the mean of the samples of its interval
//! (`aggregate_mean`, a sample every 2 s, 15 to a figure), so a peak shorter
//! than the interval is averaged down; the reader is told so.

use super::{Builder, LineParser, TraceError};

/// One GPU memory column of the export.
#[derive(Clone, Debug, PartialEq)]
struct Col {
    field: usize,
    gpu: u32,
    /// `memoryAllocatedBytes` (bytes) rather than `memoryAllocated` (%).
    bytes: bool,
    /// A chart export's lower bound of a bucket (`__MIN`): not a peak.
    min: bool,
}

/// What a column name says: `(gpu, bytes, min)` for a GPU's memory column —
/// `…gpu.3.memoryAllocatedBytes`, `…gpu.3.memoryAllocated__MAX` — and the
/// run name before ` - ` in a chart export. `gpu.process.N` columns repeat
/// GPU N and are not read.
fn gpu_column(name: &str) -> Option<(u32, bool, bool)> {
    let name = name.trim();
    let (name, min) = match name.rsplit_once("__") {
        Some((n, "MIN")) => (n, true),
        Some((n, "MAX")) => (n, false),
        _ => (name, false),
    };
    let (rest, bytes) = if let Some(r) = name.strip_suffix(".memoryAllocatedBytes") {
        (r, true)
    } else if let Some(r) = name.strip_suffix(".memoryAllocated") {
        (r, false)
    } else {
        return None;
    };
    let at = rest.rfind("gpu.")?;
    let before = &rest[..at];
    // `system.gpu.0`, `system/gpu.0`, or the bare `gpu.0` of the monitor.
    if !(before.is_empty() || before.ends_with(['.', '/', ' '])) {
        return None;
    }
    let gpu = rest[at + 4..].parse().ok()?;
    Some((gpu, bytes, min))
}

/// Whether a line is the header of such an export.
pub fn is_header(line: &str) -> bool {
    line.contains("memoryAllocated")
        && crate::csv::parse(line)
            .ok()
            .and_then(|r| r.into_iter().next())
            .is_some_and(|r| r.fields.iter().any(|f| gpu_column(f).is_some()))
}

/// The time of a row, in seconds, from the column that gives one.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Time {
    /// `_timestamp`: seconds since the Unix epoch.
    Epoch(usize),
    /// `_runtime`, `Relative Time (Process)` / `(Wall)`: seconds into the run.
    Relative(usize),
}

#[derive(Default)]
pub struct WandbParser {
    cols: Vec<Col>,
    time: Option<Time>,
    runs: Vec<String>,
    header_seen: bool,
    rows: u64,
    /// GPUs whose only memory column is the percentage.
    percent_only: Vec<u32>,
}

impl WandbParser {
    fn header(&mut self, no: u64, fields: &[String]) -> Result<(), TraceError> {
        for (i, f) in fields.iter().enumerate() {
            let name = f.trim();
            match name {
                "_timestamp" => self.time = Some(Time::Epoch(i)),
                "_runtime" | "Relative Time (Process)" | "Relative Time (Wall)"
                    if !matches!(self.time, Some(Time::Epoch(_))) =>
                {
                    self.time = Some(Time::Relative(i))
                }
                _ => {}
            }
            if let Some((gpu, bytes, min)) = gpu_column(name) {
                self.cols.push(Col {
                    field: i,
                    gpu,
                    bytes,
                    min,
                });
                if let Some((run, _)) = name.split_once(" - ") {
                    if !self.runs.iter().any(|r| r == run) {
                        self.runs.push(run.to_string());
                    }
                }
            }
        }
        let mut gpus: Vec<u32> = self.cols.iter().map(|c| c.gpu).collect();
        gpus.sort_unstable();
        gpus.dedup();
        self.percent_only = gpus
            .into_iter()
            .filter(|g| !self.cols.iter().any(|c| c.gpu == *g && c.bytes))
            .collect();
        // A percentage is of a total the export does not hold: only the
        // bytes columns are read.
        self.cols.retain(|c| c.bytes && !c.min);
        if self.cols.is_empty() {
            return Err(TraceError::at(
                no,
                "W&B's gpu.N.memoryAllocated is a percentage of the GPU's memory, whose total \
                 the export does not hold; export gpu.N.memoryAllocatedBytes (the used bytes) too",
            ));
        }
        Ok(())
    }
}

impl LineParser for WandbParser {
    fn line(&mut self, no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        let Some(fields) = super::csv_fields(no, line)? else {
            return Ok(());
        };
        if !self.header_seen {
            if fields.iter().any(|f| gpu_column(f).is_some()) {
                self.header_seen = true;
                return self.header(no, &fields);
            }
            return Ok(());
        }
        let t = self.time.and_then(|t| {
            let (Time::Epoch(i) | Time::Relative(i)) = t;
            fields
                .get(i)?
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
        });
        // One reading per GPU a row: the larger of a chart's value and its
        // bucket's `__MAX`. History rows are sparse: a row of other metrics
        // leaves these empty.
        let mut row: Vec<(u32, f64)> = Vec::new();
        for c in &self.cols {
            let Some(bytes) = super::csv_count(&fields, c.field) else {
                continue;
            };
            match row.iter_mut().find(|(g, _)| *g == c.gpu) {
                Some((_, v)) => *v = v.max(bytes),
                None => row.push((c.gpu, bytes)),
            }
        }
        for &(gpu, bytes) in &row {
            b.sample(gpu, None, t, bytes / (1024.0 * 1024.0));
        }
        if !row.is_empty() {
            self.rows += 1;
        }
        Ok(())
    }

    fn finish(&mut self, b: &mut Builder) -> Result<(), TraceError> {
        if !self.header_seen {
            return Err(TraceError::whole(
                "no W&B system-metrics header (a gpu.N.memoryAllocatedBytes column) found",
            ));
        }
        if self.rows == 0 {
            return Err(TraceError::whole(
                "the W&B export's GPU memory columns hold no figures",
            ));
        }
        b.warnings.push(
            "W&B logs each GPU figure as the mean of its samples over the logging interval \
             (2 s samples, 15 to a figure): a peak shorter than that is averaged down"
                .to_string(),
        );
        if !self.percent_only.is_empty() {
            let list: Vec<String> = self.percent_only.iter().map(|g| g.to_string()).collect();
            b.warnings.push(format!(
                "GPU {} only as a percentage (memoryAllocated), of a total the export does not \
                 hold: not shown",
                list.join(", ")
            ));
        }
        if self.runs.len() > 1 {
            b.warnings.push(format!(
                "the export holds {} runs ({}): their GPUs are read together, by index",
                self.runs.len(),
                self.runs.join(", ")
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_names_of_the_api_and_the_chart_export() {
        assert_eq!(
            gpu_column("system.gpu.0.memoryAllocatedBytes"),
            Some((0, true, false))
        );
        assert_eq!(
            gpu_column("my-run - system/gpu.3.memoryAllocatedBytes__MAX"),
            Some((3, true, false))
        );
        assert_eq!(
            gpu_column("my-run - system/gpu.3.memoryAllocatedBytes__MIN"),
            Some((3, true, true))
        );
        assert_eq!(gpu_column("gpu.1.memoryAllocated"), Some((1, false, false)));
        assert_eq!(
            gpu_column("system.gpu.process.0.memoryAllocatedBytes"),
            None
        );
        assert_eq!(gpu_column("system.gpu.0.memory"), None);
        assert_eq!(gpu_column("system.cpu.0.memoryAllocatedBytes"), None);
        assert_eq!(gpu_column("mygpu.0.memoryAllocatedBytes"), None);
    }
}
