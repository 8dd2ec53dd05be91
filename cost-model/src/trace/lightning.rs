//! PyTorch Lightning's `DeviceStatsMonitor` as its `CSVLogger` writes it
//! (`lightning_logs/version_N/metrics.csv`): on CUDA the monitor logs
//! `torch.cuda.memory_stats()` whole, each key after the hook's name —
//! `DeviceStatsMonitor.on_train_batch_end/allocated_bytes.all.peak` (lightning
//! 2.x `callbacks/device_stats_monitor.py`: `_prefix_metric_keys(device_stats,
//! f"{self.__class__.__qualname__}.{key}", separator)`;
//! `accelerators/cuda.py` `get_device_stats` returns
//! `torch.cuda.memory_stats(device)`). Figures are bytes; a row holds one
//! hook's figures, the other metrics' rows leave them empty. The peaks are
//! PyTorch's since the process started (Lightning does not reset them).

use super::{keep_max, Builder, LineParser, TraceError};

/// The counters read, by their `memory_stats()` key.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stat {
    PeakAllocated,
    PeakReserved,
    CurrentAllocated,
    CurrentReserved,
    Ooms,
    Retries,
}

fn stat(column: &str) -> Option<Stat> {
    // The key after the hook's prefix (`…/allocated_bytes.all.peak`), or bare.
    let key = column.trim().rsplit('/').next()?;
    Some(match key {
        "allocated_bytes.all.peak" => Stat::PeakAllocated,
        "reserved_bytes.all.peak" => Stat::PeakReserved,
        "allocated_bytes.all.current" => Stat::CurrentAllocated,
        "reserved_bytes.all.current" => Stat::CurrentReserved,
        "num_ooms" => Stat::Ooms,
        "num_alloc_retries" => Stat::Retries,
        _ => return None,
    })
}

/// Whether a line is the header of such a CSV: comma-separated names, one of
/// them a byte counter's `memory_stats()` key.
pub fn is_header(line: &str) -> bool {
    line.contains("_bytes.all.")
        && line.contains(',')
        && !line.contains('\'')
        && !line.contains(':')
        && line.split(',').any(|c| {
            matches!(
                stat(c),
                Some(Stat::PeakAllocated | Stat::PeakReserved | Stat::CurrentAllocated)
            )
        })
}

#[derive(Default)]
pub struct LightningParser {
    cols: Vec<(usize, Stat)>,
    header_seen: bool,
    rows: u64,
    ooms: f64,
    retries: f64,
}

impl LineParser for LightningParser {
    fn line(&mut self, no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        let Some(fields) = super::csv_fields(no, line)? else {
            return Ok(());
        };
        if !self.header_seen {
            if is_header(line) {
                self.header_seen = true;
                self.cols = fields
                    .iter()
                    .enumerate()
                    .filter_map(|(i, f)| stat(f).map(|s| (i, s)))
                    .collect();
            }
            return Ok(());
        }
        let mut any = false;
        for &(i, s) in &self.cols {
            let Some(v) = super::csv_count(&fields, i) else {
                continue;
            };
            let mib = v / (1024.0 * 1024.0);
            let a = b.allocator();
            match s {
                Stat::PeakAllocated => keep_max(&mut a.peak_allocated_mib, mib),
                Stat::PeakReserved => keep_max(&mut a.peak_reserved_mib, mib),
                Stat::CurrentAllocated => a.current_allocated_mib = Some(mib),
                Stat::CurrentReserved => a.current_reserved_mib = Some(mib),
                Stat::Ooms => self.ooms = self.ooms.max(v),
                Stat::Retries => self.retries = self.retries.max(v),
            }
            any = true;
        }
        if any {
            self.rows += 1;
        }
        Ok(())
    }

    fn finish(&mut self, b: &mut Builder) -> Result<(), TraceError> {
        if self.rows == 0 || b.allocator.is_none() {
            return Err(TraceError::whole(
                "the Lightning metrics CSV's memory_stats columns (…/allocated_bytes.all.peak) hold \
                 no figures",
            ));
        }
        if self.ooms > 0.0 {
            b.warnings.push(format!(
                "the allocator counted {} CUDA out-of-memory errors (num_ooms)",
                self.ooms
            ));
        }
        if self.retries > 0.0 {
            b.warnings.push(format!(
                "the allocator freed its cache and retried {} times (num_alloc_retries): the run \
                 was at the edge of the GPU's memory",
                self.retries
            ));
        }
        Ok(())
    }
}
