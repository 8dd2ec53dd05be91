//! NVIDIA DCGM's frame-buffer fields, as clusters collect them: the
//! `dcgm-exporter` metrics page (Prometheus text: `DCGM_FI_DEV_FB_USED{gpu="0",
//! modelName="NVIDIA A100-SXM4-80GB",…} 59870`, one block a scrape) and
//! `dcgmi dmon -e 250,251,252` (`#Entity FBTTL FBFRE FBUSD` over rows
//! `GPU 0 81559 2233 78795`). DCGM reports `FB_TOTAL`, `FB_FREE`, `FB_USED` and
//! `FB_RESERVED` (fields 250–253) in MiB (dcgm_fields.h: "Total/Free/Used
//! Frame Buffer of the GPU in MB", the MiB nvidia-smi prints: the same NVML
//! `nvmlDeviceGetMemoryInfo` figures); used is what nvidia-smi shows as used,
//! so these compare with a plan's `device_used`.

use super::{Builder, LineParser, TraceError};

/// The exporter's metric names (`DCGM_FI_DEV_FB_USED`), or dmon's column
/// tags (`FBUSD`) — or the field names (`fb_used`) some versions print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Total,
    Free,
    Used,
    Reserved,
}

fn metric_field(name: &str) -> Option<Field> {
    match name {
        "DCGM_FI_DEV_FB_TOTAL" => Some(Field::Total),
        "DCGM_FI_DEV_FB_FREE" => Some(Field::Free),
        "DCGM_FI_DEV_FB_USED" => Some(Field::Used),
        "DCGM_FI_DEV_FB_RESERVED" => Some(Field::Reserved),
        _ => None,
    }
}

fn tag_field(tag: &str) -> Option<Field> {
    match tag.to_ascii_uppercase().as_str() {
        "FBTTL" | "FB_TOTAL" => Some(Field::Total),
        "FBFRE" | "FB_FREE" => Some(Field::Free),
        "FBUSD" | "FB_USED" => Some(Field::Used),
        "FBRSV" | "FBRES" | "FB_RESV" | "FB_RESERVED" => Some(Field::Reserved),
        _ => None,
    }
}

/// A line of the exporter's page with a frame-buffer metric.
pub fn is_exporter_line(l: &str) -> bool {
    l.starts_with("DCGM_FI_DEV_FB_")
}

/// `dcgmi dmon`'s header (`#Entity   FBTTL  FBFRE  FBUSD`) naming a
/// frame-buffer field.
pub fn is_dmon_header(l: &str) -> bool {
    let t = l.trim_start();
    t.starts_with('#')
        && t[1..].trim_start().starts_with("Entity")
        && t.split_whitespace().any(|w| tag_field(w).is_some())
}

/// What one GPU reported last, to give its capacity once used and free are
/// both known.
#[derive(Clone, Copy, Default)]
struct Last {
    used: Option<f64>,
    free: Option<f64>,
    reserved: Option<f64>,
    total: Option<f64>,
}

#[derive(Default)]
pub struct DcgmParser {
    /// Per (GPU, MIG instance).
    last: Vec<((u32, Option<String>), Last)>,
    /// dmon's columns after the entity and its id.
    dmon_cols: Vec<Option<Field>>,
    /// The exporter's host, when it labels one: a page gathered from several
    /// hosts would mix their GPU 0s.
    host: Option<String>,
    other_hosts: u64,
    rows: u64,
    used_seen: bool,
}

/// `key="value"` from a Prometheus label set (values are quoted; `\"`
/// escapes are left as they are).
fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    let mut rest = labels;
    while let Some(i) = rest.find(key) {
        let before_ok = i == 0 || matches!(rest.as_bytes()[i - 1], b',' | b'{' | b' ');
        let after = &rest[i + key.len()..];
        if before_ok {
            if let Some(v) = after.strip_prefix("=\"") {
                return v.find('"').map(|end| &v[..end]);
            }
        }
        rest = after;
    }
    None
}

/// Where a reading belongs: the GPU (and MIG instance), its name where
/// stated, and when.
struct At<'a> {
    gpu: u32,
    mig: Option<&'a str>,
    name: Option<&'a str>,
    t: Option<f64>,
}

impl DcgmParser {
    fn record(&mut self, b: &mut Builder, at: At<'_>, field: Field, mib: f64) {
        if !mib.is_finite() || mib < 0.0 {
            return;
        }
        let At { gpu, mig, name, t } = at;
        let key = (gpu, mig.map(str::to_string));
        let i = match self.last.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                self.last.push((key, Last::default()));
                self.last.len() - 1
            }
        };
        let last = &mut self.last[i].1;
        match field {
            Field::Used => last.used = Some(mib),
            Field::Free => last.free = Some(mib),
            Field::Reserved => last.reserved = Some(mib),
            Field::Total => last.total = Some(mib),
        }
        let total = last.total.or_else(|| {
            let (u, f) = (last.used?, last.free?);
            Some(u + f + last.reserved.unwrap_or(0.0))
        });
        b.describe(gpu, mig, name, total);
        if field == Field::Used {
            self.used_seen = true;
            b.sample(gpu, mig, t, mib);
        }
    }

    fn exporter_line(&mut self, no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        let (name, rest) = match line.find('{') {
            Some(i) => (&line[..i], &line[i..]),
            None => match line.find(char::is_whitespace) {
                Some(i) => (&line[..i], &line[i..]),
                None => (line, ""),
            },
        };
        let Some(field) = metric_field(name) else {
            return Ok(()); // FB_USED_PERCENT and the like
        };
        let (labels, values) = match rest.strip_prefix('{') {
            Some(r) => match r.rfind('}') {
                Some(end) => (&r[..end], &r[end + 1..]),
                None => {
                    return Err(TraceError::at(
                        no,
                        format!("`{name}{{…`: the label set has no closing `}}`"),
                    ))
                }
            },
            None => ("", rest),
        };
        let mut vals = values.split_whitespace();
        let Some(v) = vals.next().and_then(|v| v.parse::<f64>().ok()) else {
            return Err(TraceError::at(
                no,
                format!("`{name}`: expected a value in MiB after the labels"),
            ));
        };
        // An optional timestamp in milliseconds since the epoch.
        let t = vals
            .next()
            .and_then(|t| t.parse::<f64>().ok())
            .map(|ms| ms / 1000.0);
        if let Some(h) = label(labels, "Hostname").or_else(|| label(labels, "instance")) {
            match &self.host {
                None => self.host = Some(h.to_string()),
                Some(first) if first != h => {
                    self.other_hosts += 1;
                    return Ok(());
                }
                Some(_) => {}
            }
        }
        let Some(gpu) = label(labels, "gpu").and_then(|g| g.parse::<u32>().ok()) else {
            return Err(TraceError::at(
                no,
                format!("`{name}`: expected a `gpu=\"N\"` label naming the GPU"),
            ));
        };
        let mig = label(labels, "GPU_I_PROFILE")
            .filter(|p| !p.is_empty())
            .map(|p| match label(labels, "GPU_I_ID") {
                Some(id) => format!("{p} #{id}"),
                None => p.to_string(),
            });
        let model = label(labels, "modelName").map(str::to_string);
        self.rows += 1;
        let at = At {
            gpu,
            mig: mig.as_deref(),
            name: model.as_deref(),
            t,
        };
        self.record(b, at, field, v);
        Ok(())
    }

    fn dmon_line(&mut self, no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        if is_dmon_header(line) {
            let t = line.trim_start().trim_start_matches('#');
            // `Entity` then the fields; the entity column spans its kind and id.
            self.dmon_cols = t.split_whitespace().skip(1).map(tag_field).collect();
            return Ok(());
        }
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(kind) = toks.first() else {
            return Ok(());
        };
        // `ID` (the units row) and anything not an entity row.
        if !matches!(*kind, "GPU" | "GPU-I" | "GPU-CI") || self.dmon_cols.is_empty() {
            return Ok(());
        }
        let Some(id) = toks.get(1).and_then(|i| i.parse::<u32>().ok()) else {
            return Err(TraceError::at(
                no,
                format!("expected `{kind} <id>` then the dmon fields"),
            ));
        };
        // A GPU instance's rows are read as MIG instances of GPU 0's id space:
        // dmon names them by their own id alone.
        let (gpu, mig) = match *kind {
            "GPU" => (id, None),
            other => (0, Some(format!("{other} {id}"))),
        };
        self.rows += 1;
        for (i, v) in toks.iter().skip(2).enumerate() {
            if let (Some(Some(f)), Ok(v)) = (self.dmon_cols.get(i).copied(), v.parse::<f64>()) {
                let at = At {
                    gpu,
                    mig: mig.as_deref(),
                    name: None,
                    t: None,
                };
                self.record(b, at, f, v);
            }
        }
        Ok(())
    }
}

impl LineParser for DcgmParser {
    fn line(&mut self, no: u64, line: &str, b: &mut Builder) -> Result<(), TraceError> {
        let t = line.trim();
        if t.is_empty() || (t.starts_with('#') && !is_dmon_header(t)) {
            return Ok(()); // `# HELP` / `# TYPE`
        }
        if t.starts_with("DCGM_FI_") {
            return self.exporter_line(no, t, b);
        }
        self.dmon_line(no, line, b)
    }

    fn finish(&mut self, b: &mut Builder) -> Result<(), TraceError> {
        if self.other_hosts > 0 {
            b.warnings.push(format!(
                "the metrics come from more than one host: {} lines of other hosts were left out, \
                 and only {}'s GPUs are shown",
                self.other_hosts,
                self.host.as_deref().unwrap_or("the first host")
            ));
        }
        if !self.used_seen {
            return Err(TraceError::whole(format!(
                "DCGM output without the used frame buffer ({} rows read): collect \
                 DCGM_FI_DEV_FB_USED (field 252; `dcgmi dmon -e 252`)",
                self.rows
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_reads_a_quoted_value_and_not_a_longer_key() {
        let l = r#"gpu="1",UUID="GPU-x",GPU_I_ID="3",device="nvidia1""#;
        assert_eq!(label(l, "gpu"), Some("1"));
        assert_eq!(label(l, "GPU_I_ID"), Some("3"));
        assert_eq!(label(l, "ID"), None);
        assert_eq!(label(l, "Hostname"), None);
    }

    #[test]
    fn dmon_tags_are_fields() {
        assert!(is_dmon_header("#Entity   FBTTL      FBFRE      FBUSD"));
        assert!(is_dmon_header("# Entity  FBUSD"));
        assert!(!is_dmon_header("#Entity   POWER  TEMP"));
        assert!(!is_dmon_header("# gpu   pwr  fb"));
    }
}
