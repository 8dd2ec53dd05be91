//! Huawei Ascend's `npu-smi info` table (torch_npu runs: MindSpeed, ms-swift,
//! LLaMA-Factory on Atlas 800 / 910B). Each NPU is two rows under the
//! `NPU Name | Health | Power(W) Temp(C) Hugepages-Usage(page)` /
//! `Chip | Bus-Id | AICore(%) Memory-Usage(MB) HBM-Usage(MB)` header:
//!
//! ```text
//! | 0     910B3               | OK            | 93.2        35                0    / 0             |
//! | 0                         | 0000:C1:00.0  | 0           0    / 0          3162 / 65536         |
//! ```
//!
//! The `used / total` pairs of the second row's last cell are, in the
//! header's order, the chip's DDR (`Memory-Usage`, 0 / 0 on the 910B) and its
//! HBM (`HBM-Usage`), in MB that are MiB (65536 for a 64 GiB 910B): the device
//! memory a training process holds is the HBM, the DDR where a chip has no HBM
//! (the 310 series). The process table (`NPU Chip | Process id | Process
//! name | Process memory(MB)`) lists each process's memory.

use super::{Builder, LineParser, ProcessUse, TraceError};

/// The tool's banner or its header row.
pub fn is_npu_smi_line(l: &str) -> bool {
    l.contains("npu-smi") || (l.contains("HBM-Usage(MB)") && l.contains("AICore"))
}

#[derive(Default)]
pub struct NpuSmiParser {
    /// The NPU id and name of the row before, waiting for its chip row.
    pending: Option<(u32, String)>,
    /// Inside the process table (after its header).
    in_processes: bool,
    /// NPU memory rows read.
    rows: u64,
}

/// The cells of a table row (`| a | b | c |` → `["a", "b", "c"]`).
fn cells(line: &str) -> Option<Vec<&str>> {
    let t = line.trim();
    let inner = t.strip_prefix('|')?.strip_suffix('|')?;
    Some(inner.split('|').map(str::trim).collect())
}

/// Every `used / total` pair in a cell, as numbers.
fn pairs(cell: &str) -> Vec<(f64, f64)> {
    // `3162 / 65536`, or with the slash against a wide figure: `58844/ 65536`.
    let spaced = cell.replace('/', " / ");
    let toks: Vec<&str> = spaced.split_whitespace().collect();
    toks.windows(3)
        .filter(|w| w[1] == "/")
        .filter_map(|w| Some((w[0].parse().ok()?, w[2].parse().ok()?)))
        .collect()
}

impl LineParser for NpuSmiParser {
    fn line(&mut self, no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        // A new snapshot (a repeated `npu-smi info` is a time series: each
        // NPU's readings in order).
        if line.contains("npu-smi") && line.contains("Version") {
            self.in_processes = false;
            self.pending = None;
            return Ok(());
        }
        let Some(c) = cells(line) else {
            return Ok(()); // borders and text around the table
        };
        if c.iter()
            .any(|x| x.starts_with("Process id") || x.starts_with("Process name"))
        {
            self.in_processes = true;
            return Ok(());
        }
        if c.iter()
            .any(|x| x.starts_with("NPU") || x.starts_with("Chip"))
        {
            return Ok(()); // the device table's header rows
        }
        if self.in_processes {
            // `| 0       0                 | 1234          | python        | 56789   |`
            if c.len() >= 4 {
                let npu = c[0].split_whitespace().next().and_then(|n| n.parse().ok());
                let pid = c[1].parse().ok();
                let used: Option<f64> = c[c.len() - 1].parse().ok();
                if let (Some(gpu), Some(used)) = (npu, used) {
                    b.processes.push(ProcessUse {
                        gpu: Some(gpu),
                        pid,
                        name: c[2].to_string(),
                        kind: None,
                        used_mib: Some(used),
                    });
                }
            }
            return Ok(());
        }
        if c.len() < 3 {
            return Ok(());
        }
        let first: Vec<&str> = c[0].split_whitespace().collect();
        // The chip row: `| 0 | 0000:C1:00.0 | 0  0 / 0  3162 / 65536 |`.
        let chip_row = first.len() == 1 && c[1].contains(':');
        if let Some((npu, name)) = self.pending.take_if(|_| chip_row) {
            let p = pairs(c[c.len() - 1]);
            // HBM (the last pair) where the chip has it, else its DDR.
            let Some(&(used, total)) = p.iter().rev().find(|(_, t)| *t > 0.0) else {
                return Err(TraceError::at(
                    no,
                    "expected the NPU's `used / total` memory (MB) in the row's last cell",
                ));
            };
            self.rows += 1;
            b.describe(npu, None, Some(&name), Some(total));
            b.sample(npu, None, None, used);
            return Ok(());
        }
        // The NPU row: `| 0     910B3 | OK | 93.2  35  0 / 0 |`.
        if first.len() >= 2 {
            if let Ok(id) = first[0].parse::<u32>() {
                self.pending = Some((id, first[1..].join(" ")));
            }
        }
        Ok(())
    }

    fn finish(&mut self, _b: &mut Builder) -> Result<(), TraceError> {
        if self.rows == 0 {
            return Err(TraceError::whole(
                "npu-smi output without an NPU's memory row (`| 0 | 0000:C1:00.0 | 0  0 / 0  3162 / \
                 65536 |`): paste the whole `npu-smi info` table",
            ));
        }
        Ok(())
    }
}
