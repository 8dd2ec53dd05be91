//! `nvidia-smi`'s default table, every driver generation (396 … 570+): one
//! snapshot or many concatenated (`watch`, loops), the GPU rows, the
//! `MIG devices:` section and the `Processes:` table; CRLF and truncated
//! names (`NVIDIA A800 80G...`) are fine. Also `nvitop -1`, which draws the
//! same table with box-drawing characters (`│`), sizes such as `18.64GiB`,
//! and its own process columns.

use super::{parse_ctime, parse_joined_mib, Builder, LineParser, ProcessUse, TraceError};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Section {
    #[default]
    Gpus,
    Mig,
    Processes,
}

#[derive(Default)]
pub struct TableParser {
    section: Section,
    /// GPU whose first row was read; its memory is on the next row.
    pending: Option<(u32, String)>,
    /// MIG instance whose memory is on this row.
    time: Option<f64>,
    /// Snapshot number (for samples without a date).
    snapshots: u64,
    seen_header: bool,
    /// nvitop's table (its process rows have their own columns).
    nvitop: bool,
    /// What a launcher wrote before every line of the table, learnt from
    /// the first border line ([`LinePrefix`]).
    prefix: Option<LinePrefix>,
}

/// Text before each line of a table that the reader's launcher prefixes
/// (`trace::LaunchPrefix`: `srun --label`, `pdsh`, `docker compose logs`, …,
/// taken off before any format reads a line) do not cover — a tag of no known
/// shape (`[gpu-node-07] `). Learnt from the table's top border (`+---…` at
/// the start of every capture): the text before it, and the table's width
/// from there for a prefix whose length varies.
struct LinePrefix {
    text: String,
    /// Characters from the border's first `+` to its last.
    width: usize,
}

impl LinePrefix {
    /// A prefixed border line (`node7: +-----…-----+`), giving the prefix.
    fn learn(line: &str) -> Option<LinePrefix> {
        let t = line.trim_end();
        let at = t.find("+---")?;
        let (text, border) = t.split_at(at);
        // The top border is one run of dashes between two corners (the rules
        // under the header have a corner at every column).
        let run = border
            .strip_prefix('+')
            .and_then(|b| b.strip_suffix('+'))
            .is_some_and(|b| b.len() >= 40 && b.bytes().all(|c| c == b'-'));
        if text.trim().is_empty() || !run {
            return None;
        }
        Some(LinePrefix {
            text: text.to_string(),
            width: border.chars().count(),
        })
    }

    /// The line without the prefix: the learnt text, else (a prefix whose
    /// length varies, a time or another host's name) the table's width from
    /// the end of a line that ends as table lines do.
    fn strip<'a>(&self, line: &'a str) -> &'a str {
        if let Some(rest) = line.strip_prefix(self.text.as_str()) {
            return rest;
        }
        let t = line.trim_end();
        let n = t.chars().count();
        if n > self.width && t.ends_with(['|', '+']) {
            if let Some((i, _)) = t.char_indices().nth(n - self.width) {
                return &t[i..];
            }
        }
        line
    }
}

/// A cell border: nvidia-smi's `|`, or the box-drawing `│` nvitop draws.
const BORDERS: [char; 2] = ['|', '│'];

/// The cells between borders of a table row (`None` if not a row).
fn cells(line: &str) -> Option<Vec<&str>> {
    let t = line.trim();
    if !t.starts_with(BORDERS) {
        return None;
    }
    let inner = t.trim_start_matches(BORDERS).trim_end_matches(BORDERS);
    Some(inner.split(BORDERS).collect())
}

/// A row of the `Processes:` section, recognised without the section's
/// header (people paste the rows of their own processes alone):
/// `|    0   N/A  N/A     12345      C   python      70123MiB |` (450 on; before
/// it no GI/CI columns) — a GPU index, a PID before the type, a size in MiB last.
pub fn is_process_row(line: &str) -> bool {
    let Some(c) = cells(line) else {
        return false;
    };
    if c.len() != 1 {
        return false;
    }
    let toks: Vec<&str> = c[0].split_whitespace().collect();
    let kind = toks.iter().position(|t| PROCESS_TYPES.contains(t));
    toks.len() >= 5
        && toks[0].parse::<u32>().is_ok()
        && kind.is_some_and(|k| k >= 2 && toks[k - 1].parse::<u64>().is_ok())
        && toks
            .last()
            .is_some_and(|t| t.ends_with("MiB") && parse_joined_mib(t).is_some())
}

/// The process types nvidia-smi prints: compute, graphics, both, and with
/// MPS (`M`).
const PROCESS_TYPES: [&str; 7] = ["C", "G", "C+G", "M", "M+C", "M+G", "M+C+G"];

/// The first row of a GPU in the GPU section: `|   0  NVIDIA H800   On   | 00000000:18:00.0 Off | … |`.
pub fn is_gpu_row(line: &str) -> bool {
    gpu_row(line).is_some()
}

fn gpu_row(line: &str) -> Option<(u32, String)> {
    let c = cells(line)?;
    // Two cells suffice: a terminal narrower than the table (`watch` in an
    // 80-column window) cuts the right-hand cells off.
    if c.len() < 2 {
        return None;
    }
    let toks: Vec<&str> = c[0].split_whitespace().collect();
    if toks.len() < 3 {
        return None;
    }
    let idx: u32 = toks[0].parse().ok()?;
    let last = *toks.last()?;
    // Persistence mode, or on Windows the driver model (`TCC/WDDM` header).
    if !matches!(last, "On" | "Off" | "N/A" | "WDDM" | "TCC" | "MCDM") {
        return None;
    }
    // Bus-Id cell: `00000000:18:00.0 Off`.
    if !c[1].contains(':') {
        return None;
    }
    let name = toks[1..toks.len() - 1].join(" ");
    name.chars()
        .next()
        .filter(|ch| ch.is_ascii_alphabetic())
        .map(|_| (idx, name))
}

/// `65759MiB / 81559MiB` in a cell.
fn used_total(cell: &str) -> Option<(f64, f64)> {
    let (u, t) = cell.split_once('/')?;
    Some((parse_joined_mib(u)?, parse_joined_mib(t)?))
}

/// Where the command begins in an nvitop process row's tokens: after the
/// elapsed-time column (`H:MM:SS`, `MM:SS`, `D-HH:MM:SS`, `N days`, `N/A`)
/// that follows `%MEM` (a decimal, where `%SM` and `%GMBW` are whole numbers
/// or `N/A`); else after the nine columns of the release without `%GMBW`.
fn nvitop_command_start(toks: &[&str]) -> usize {
    let clock = |t: &str| {
        t.contains(':')
            && t.chars()
                .all(|c| c.is_ascii_digit() || matches!(c, ':' | '-'))
    };
    let decimal = |t: &str| t.contains('.') && t.parse::<f64>().is_ok();
    (6..toks.len())
        .filter(|&i| decimal(toks[i - 1]))
        .find_map(|i| {
            let t = toks[i];
            if clock(t) || t == "N/A" {
                Some(i + 1)
            } else if t.parse::<u32>().is_ok()
                && matches!(toks.get(i + 1).copied(), Some("day" | "days"))
            {
                Some(i + 2)
            } else {
                None
            }
        })
        .unwrap_or(9)
}

impl TableParser {
    pub fn nvitop() -> Self {
        TableParser {
            nvitop: true,
            ..Self::default()
        }
    }

    /// nvitop's process row: `GPU PID TYPE USER GPU-MEM %SM %CPU %MEM TIME
    /// COMMAND`, with `%GMBW` after `%SM` in releases that show the memory
    /// bandwidth: the command starts after the elapsed time (`1:02:03`,
    /// `12:34`, `3 days`, `N/A`), wherever that column falls.
    fn nvitop_process_row(c: &[&str], b: &mut Builder) {
        let inner = c.join(" ");
        let toks: Vec<&str> = inner.split_whitespace().collect();
        let (Some(gpu), Some(pid)) = (
            toks.first().and_then(|t| t.parse::<u32>().ok()),
            toks.get(1).and_then(|t| t.parse::<u64>().ok()),
        ) else {
            return;
        };
        let kind = toks.get(2).copied().unwrap_or("");
        if !matches!(kind, "C" | "G" | "C+G") {
            return;
        }
        b.processes.push(ProcessUse {
            gpu: Some(gpu),
            pid: Some(pid),
            name: toks
                .get(nvitop_command_start(&toks)..)
                .map(|n| n.join(" "))
                .unwrap_or_default(),
            kind: Some(kind.to_string()),
            used_mib: toks.get(4).and_then(|m| parse_joined_mib(m)),
        });
    }

    fn process_row(&mut self, c: &[&str], b: &mut Builder) {
        let inner = c.join(" ");
        let toks: Vec<&str> = inner.split_whitespace().collect();
        if toks.len() < 4 {
            return;
        }
        let Ok(gpu) = toks[0].parse::<u32>() else {
            return;
        };
        let Some(ti) = toks.iter().position(|t| PROCESS_TYPES.contains(t)) else {
            return;
        };
        if ti == 0 {
            return;
        }
        let last = *toks.last().unwrap_or(&"");
        let used = parse_joined_mib(last);
        let name_end = if used.is_some() || last == "N/A" {
            toks.len() - 1
        } else {
            toks.len()
        };
        b.processes.push(ProcessUse {
            gpu: Some(gpu),
            pid: toks[ti - 1].parse().ok(),
            name: toks[ti + 1..name_end.max(ti + 1)].join(" "),
            kind: Some(toks[ti].to_string()),
            used_mib: used,
        });
    }
}

impl LineParser for TableParser {
    fn line(&mut self, _no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        if !line.trim_start().starts_with(['|', '+', '│']) {
            if let Some(p) = LinePrefix::learn(line) {
                self.prefix = Some(p);
            }
        }
        let line = match &self.prefix {
            Some(p) => p.strip(line),
            None => line,
        };
        if (line.contains("NVIDIA-SMI") || line.contains("NVITOP"))
            && line.contains("Driver Version")
        {
            self.section = Section::Gpus;
            self.pending = None;
            self.snapshots += 1;
            self.seen_header = true;
            return Ok(());
        }
        if line.contains("MIG devices:") {
            self.section = Section::Mig;
            if !self.seen_header {
                self.snapshots += 1;
                self.seen_header = true;
            }
            return Ok(());
        }
        if line.contains("Processes:") {
            self.section = Section::Processes;
            return Ok(());
        }
        let Some(c) = cells(line) else {
            if !line.trim_start().starts_with('+') {
                if let Some(t) = parse_ctime(line) {
                    self.time = Some(t);
                }
            }
            return Ok(());
        };
        // Process rows pasted without the table or the section's header.
        if self.section == Section::Gpus && !self.seen_header && is_process_row(line) {
            self.section = Section::Processes;
        }
        match self.section {
            Section::Gpus => {
                if let Some((idx, name)) = gpu_row(line) {
                    if !self.seen_header {
                        // A capture that starts at the table border.
                        self.snapshots += 1;
                        self.seen_header = true;
                    }
                    self.pending = Some((idx, name));
                    return Ok(());
                }
                if let Some((idx, name)) = self.pending.take() {
                    if let Some((used, total)) = c.get(1).and_then(|x| used_total(x)) {
                        b.describe(idx, None, Some(&name), Some(total));
                        b.sample(idx, None, self.time, used);
                    } else {
                        self.pending = Some((idx, name));
                    }
                }
            }
            Section::Mig => {
                let toks: Vec<&str> = c[0].split_whitespace().collect();
                if toks.len() == 4 && toks.iter().all(|t| t.parse::<u32>().is_ok()) {
                    if let Some((used, total)) = c.get(1).and_then(|x| used_total(x)) {
                        let gpu: u32 = toks[0].parse().unwrap_or(0);
                        let mig = format!("GI {} CI {} MIG dev {}", toks[1], toks[2], toks[3]);
                        b.describe(gpu, Some(&mig), None, Some(total));
                        b.sample(gpu, Some(&mig), self.time, used);
                    }
                }
            }
            Section::Processes if self.nvitop => Self::nvitop_process_row(&c, b),
            Section::Processes => self.process_row(&c, b),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::trace::{parse, ParseOptions};

    #[test]
    fn rows_cut_at_the_terminal_edge_still_read() {
        // A 535-format table in an 80-column `watch`: the right-hand cells are cut.
        let text = "Every 2.0s: nvidia-smi          node7: Fri Jun 30 19:25:22 2023\n\
            | NVIDIA-SMI 535.104.12             Driver Version: 535.104.12   CUDA Versio\n\
            |   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |         \n\
            | N/A   30C    P0             100W /  700W |  70001MiB /  81559MiB |     \n\
            |   1  NVIDIA H100 80GB HBM3          On  | 00000000:2A:00.0 Off \n\
            | N/A   30C    P0              82W /  700W |  69999MiB /  81559MiB \n";
        let t = parse(text, &ParseOptions::default()).unwrap();
        assert_eq!(t.gpus.len(), 2);
        assert_eq!(t.gpus[0].peak_used_mib, Some(70001.0));
        assert_eq!(t.gpus[1].total_mib, Some(81559.0));
    }
}
