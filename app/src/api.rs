//! Saved plans on the wire: the request and response types of the JSON API
//! and the server functions, and the one validation path both go through.
//! Pure (no I/O): compiled into the browser bundle and the server alike.

use cost_model::schema::{strip_position, PlanLoadError};
use cost_model::{query, Bytes, Plan};
use serde::{Deserialize, Serialize};

/// Longest title, in characters.
pub const TITLE_MAX_CHARS: usize = 200;
/// Longest notes, in characters.
pub const NOTES_MAX_CHARS: usize = 20_000;
/// Longest author name, in characters.
pub const AUTHOR_MAX_CHARS: usize = 100;
/// Largest request body the API reads, in bytes (a plan JSON is about 2 KiB).
pub const MAX_BODY_BYTES: u32 = 256 * 1024;
/// Largest trace upload, in bytes (kept gzip-compressed).
pub const MAX_TRACE_BYTES: u64 = 64 * 1024 * 1024;
/// Saved plans per page of `/plans` and `GET /api/v1/plans`.
pub const PAGE_SIZE: u32 = 20;
/// Characters of a plan id: 72 random bits in URL-safe base64.
pub const ID_CHARS: usize = 12;

/// Whether `s` has the shape of a plan id (checked before any lookup).
pub fn is_plan_id(s: &str) -> bool {
    s.len() == ID_CHARS
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Encodes 9 random bytes as a 12-character URL-safe id.
pub fn encode_id(bytes: [u8; 9]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(ID_CHARS);
    for chunk in bytes.chunks(3) {
        let n = (chunk[0] as u32) << 16 | (chunk[1] as u32) << 8 | chunk[2] as u32;
        for shift in [18, 12, 6, 0] {
            out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
        }
    }
    out
}

/// Why a request was refused: where, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum InputError {
    /// The body is not JSON (HTTP 400).
    #[error("request body, line {line} column {column}: {message}")]
    Syntax {
        line: u64,
        column: u64,
        message: String,
    },
    /// A field is missing, unknown, of the wrong type or out of range (HTTP 422).
    #[error("{field}: {message}")]
    Field { field: String, message: String },
}

impl InputError {
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError::Field {
            field: field.into(),
            message: message.into(),
        }
    }

    fn from_plan_load(prefix: &str, e: PlanLoadError) -> Self {
        let field = match &e.field {
            Some(f) => format!("{prefix}.{f}"),
            None => prefix.to_string(),
        };
        InputError::Field {
            field,
            message: e.message,
        }
    }
}

/// A plan to be saved, validated: what every save path builds first.
#[derive(Clone, Debug, PartialEq)]
pub struct NewPlan {
    pub title: String,
    pub notes: String,
    pub author: String,
    pub plan: Plan,
    pub forked_from: Option<String>,
}

/// `POST /api/v1/plans` body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SaveBody {
    title: String,
    #[serde(default)]
    notes: Option<String>,
    #[serde(default)]
    author: Option<String>,
    plan: serde_json::Value,
    #[serde(default)]
    forked_from: Option<String>,
}

fn check_text(field: &str, s: &str, max: usize, multiline: bool) -> Result<(), InputError> {
    let n = s.chars().count();
    if n > max {
        return Err(InputError::field(
            field,
            format!("is {n} characters long; at most {max} are kept"),
        ));
    }
    if let Some(c) = s
        .chars()
        .find(|&c| c.is_control() && !(multiline && matches!(c, '\n' | '\r' | '\t')))
    {
        return Err(InputError::field(
            field,
            format!("contains the control character U+{:04X}", c as u32),
        ));
    }
    Ok(())
}

impl NewPlan {
    /// Validates every field; the plan must estimate (no field at fault).
    pub fn new(
        title: &str,
        notes: &str,
        author: &str,
        plan: Plan,
        forked_from: Option<&str>,
    ) -> Result<Self, InputError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(InputError::field("title", "must not be empty"));
        }
        check_text("title", title, TITLE_MAX_CHARS, false)?;
        check_text("notes", notes, NOTES_MAX_CHARS, true)?;
        let author = author.trim();
        check_text("author", author, AUTHOR_MAX_CHARS, false)?;
        let forked_from = match forked_from.map(str::trim).filter(|s| !s.is_empty()) {
            Some(id) if is_plan_id(id) => Some(id.to_string()),
            Some(id) => {
                return Err(InputError::field(
                    "forked_from",
                    format!("`{id}` is not a plan id ({ID_CHARS} characters of A–Z a–z 0–9 - _)"),
                ))
            }
            None => None,
        };
        cost_model::validate::validate(&plan)
            .map_err(|e| InputError::field(format!("plan.{}", e.field()), format!("{e}")))?;
        Ok(NewPlan {
            title: title.to_string(),
            notes: notes.to_string(),
            author: author.to_string(),
            plan,
            forked_from,
        })
    }

    /// Reads a `POST /api/v1/plans` body (`{"title", "notes"?, "author"?,
    /// "plan", "forked_from"?}`); the plan may be of any known schema version.
    pub fn from_json_body(body: &[u8]) -> Result<Self, InputError> {
        // A UTF-8 byte-order mark (a file saved by a Windows editor) is skipped.
        let body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
        let de = &mut serde_json::Deserializer::from_slice(body);
        let b: SaveBody = read_save_body(de)?;
        let plan = cost_model::schema::load_plan_value(b.plan)
            .map_err(|e| InputError::from_plan_load("plan", e))?;
        Self::new(
            &b.title,
            b.notes.as_deref().unwrap_or(""),
            b.author.as_deref().unwrap_or(""),
            plan,
            b.forked_from.as_deref(),
        )
    }

    /// Reads the planner page's save form: the plan is its URL query.
    pub fn from_form(
        title: &str,
        notes: &str,
        author: &str,
        plan_query: &str,
        forked_from: &str,
    ) -> Result<Self, InputError> {
        let plan = query::decode_str(plan_query)
            .map_err(|e| InputError::field(format!("plan ({})", e.param), e.reason))?;
        Self::new(title, notes, author, plan, Some(forked_from))
    }
}

/// Deserialises the top-level body, telling syntax (400) from data (422) errors.
fn read_save_body<'de, T: Deserialize<'de>>(
    de: &mut serde_json::Deserializer<serde_json::de::SliceRead<'de>>,
) -> Result<T, InputError> {
    T::deserialize(&mut *de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| {
            use serde_json::error::Category;
            match e.classify() {
                Category::Syntax | Category::Eof | Category::Io => InputError::Syntax {
                    line: e.line() as u64,
                    column: e.column() as u64,
                    message: strip_position(&e),
                },
                Category::Data => InputError::field(top_field(&e), strip_position(&e)),
            }
        })
}

/// The top-level field a serde data error is about (serde names it in the
/// message: "missing field `title`", "unknown field `x`", "invalid type … for
/// `title`" is not said, so fall back to "body").
fn top_field(e: &serde_json::Error) -> String {
    let s = e.to_string();
    for marker in ["missing field `", "unknown field `"] {
        if let Some(i) = s.find(marker) {
            let rest = &s[i + marker.len()..];
            if let Some(j) = rest.find('`') {
                return rest[..j].to_string();
            }
        }
    }
    "body".to_string()
}

/// One saved plan as a store row: immutable once written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredPlan {
    pub id: String,
    pub title: String,
    pub notes: String,
    pub author: String,
    /// Milliseconds since the Unix epoch (UTC).
    pub created_at_ms: i64,
    pub forked_from: Option<String>,
    /// Plan schema version of `plan_json`.
    pub schema_version: u32,
    /// `cost_model::estimate::MODEL_VERSION` when it was saved.
    pub model_version: u32,
    /// Searchable copies of plan fields.
    pub model: String,
    pub gpu: String,
    pub num_gpus: u32,
    /// The plan exactly as saved.
    pub plan_json: String,
}

impl NewPlan {
    /// The row to store under `id`.
    pub fn into_stored(self, id: String, created_at_ms: i64) -> StoredPlan {
        StoredPlan {
            id,
            title: self.title,
            notes: self.notes,
            author: self.author,
            created_at_ms,
            forked_from: self.forked_from,
            schema_version: self.plan.version,
            model_version: cost_model::estimate::MODEL_VERSION,
            model: self.plan.model.name.clone(),
            gpu: format!("{} {}", self.plan.gpu.id, self.plan.gpu.name),
            num_gpus: self.plan.parallel.num_gpus,
            plan_json: serde_json::to_string(&self.plan).unwrap_or_default(),
        }
    }
}

/// A saved plan as pages and clients see it: the stored plan migrated to the
/// current schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedPlan {
    pub id: String,
    pub title: String,
    pub notes: String,
    pub author: String,
    pub created_at_ms: i64,
    pub forked_from: Option<String>,
    /// Plan schema version it was saved under (older ones were migrated).
    pub saved_schema_version: u32,
    /// Memory-model version that computed its estimate when it was saved.
    pub saved_model_version: u32,
    pub plan: Plan,
}

impl StoredPlan {
    /// Reads the stored plan JSON, migrating an older schema version.
    pub fn load(self) -> Result<SavedPlan, PlanLoadError> {
        let plan = cost_model::schema::load_plan(&self.plan_json)?;
        Ok(SavedPlan {
            id: self.id,
            title: self.title,
            notes: self.notes,
            author: self.author,
            created_at_ms: self.created_at_ms,
            forked_from: self.forked_from,
            saved_schema_version: self.schema_version,
            saved_model_version: self.model_version,
            plan,
        })
    }
}

/// One row of the team page and of `GET /api/v1/plans`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanSummary {
    pub id: String,
    pub title: String,
    pub author: String,
    pub created_at_ms: i64,
    pub model: String,
    pub gpu: String,
    pub num_gpus: u32,
    /// By the current model; `None` when the plan no longer estimates.
    pub fits: Option<bool>,
    pub peak_device_used: Option<Bytes>,
    pub capacity: Option<Bytes>,
    /// Capacity minus peak when it fits, peak minus capacity when not.
    pub headroom: Option<Bytes>,
    pub shortfall: Option<Bytes>,
}

impl PlanSummary {
    /// Summarises a stored row, estimating it with the current model.
    pub fn of(row: StoredPlan) -> Self {
        // One parse of the stored JSON serves the GPU columns and the estimate.
        let plan = cost_model::schema::load_plan(&row.plan_json).ok();
        let est = plan.as_ref().and_then(|p| cost_model::estimate(p).ok());
        let (gpu_name, num_gpus) = match &plan {
            Some(p) => (p.gpu.name.clone(), p.parallel.num_gpus),
            None => (row.gpu.clone(), row.num_gpus),
        };
        PlanSummary {
            id: row.id,
            title: row.title,
            author: row.author,
            created_at_ms: row.created_at_ms,
            model: row.model,
            gpu: gpu_name,
            num_gpus,
            fits: est.as_ref().map(|e| e.fits),
            peak_device_used: est.as_ref().map(|e| e.peak.device_used),
            capacity: est.as_ref().map(|e| e.capacity),
            headroom: est.as_ref().map(|e| e.headroom),
            shortfall: est.as_ref().map(|e| e.shortfall),
        }
    }
}

/// A page of saved plans, newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanList {
    pub query: String,
    /// 1-based.
    pub page: u32,
    pub per_page: u32,
    /// Plans matching the query, all pages.
    pub total: u64,
    pub plans: Vec<PlanSummary>,
}

impl PlanList {
    pub fn pages(&self) -> u64 {
        self.total.div_ceil(self.per_page.max(1) as u64).max(1)
    }
}

/// A verification as stored: the upload (gzip) and its parsed report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredTrace {
    pub id: String,
    pub plan_id: String,
    pub created_at_ms: i64,
    pub filename: String,
    pub format: String,
    /// Size of the upload before compression.
    pub raw_bytes: u64,
    /// Empty when listed (bodies are read only on download).
    pub body_gz: Vec<u8>,
    pub report_json: String,
}

/// A verification as pages and clients see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceView {
    pub id: String,
    pub plan_id: String,
    pub created_at_ms: i64,
    pub filename: String,
    pub raw_bytes: u64,
    pub report: cost_model::trace::findings::VerifyReport,
}

impl StoredTrace {
    pub fn view(&self) -> Option<TraceView> {
        Some(TraceView {
            id: self.id.clone(),
            plan_id: self.plan_id.clone(),
            created_at_ms: self.created_at_ms,
            filename: self.filename.clone(),
            raw_bytes: self.raw_bytes,
            report: serde_json::from_str(&self.report_json).ok()?,
        })
    }
}

/// What the saved-plan page shows: the plan and its verifications.
///
/// It travels to the browser (the page's resource, hydrated) with the plan
/// as its URL query ([`PlanPageWire`]), which holds every setting
/// (`every_setting_of_a_plan_reaches_the_url` in cost-model's property
/// tests): the browser reads it with the planner's own decoder instead of a
/// JSON deserializer for every plan type, 44 KB less WASM (gzip).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "PlanPageWire", try_from = "PlanPageWire")]
pub struct PlanPage {
    pub saved: SavedPlan,
    pub traces: Vec<TraceView>,
}

/// [`PlanPage`] as sent: the saved plan's plan as `query::encode` writes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlanPageWire {
    id: String,
    title: String,
    notes: String,
    author: String,
    created_at_ms: i64,
    forked_from: Option<String>,
    saved_schema_version: u32,
    saved_model_version: u32,
    plan: String,
    traces: Vec<TraceView>,
}

impl From<PlanPage> for PlanPageWire {
    fn from(p: PlanPage) -> Self {
        let s = p.saved;
        PlanPageWire {
            plan: cost_model::query::encode(&s.plan),
            id: s.id,
            title: s.title,
            notes: s.notes,
            author: s.author,
            created_at_ms: s.created_at_ms,
            forked_from: s.forked_from,
            saved_schema_version: s.saved_schema_version,
            saved_model_version: s.saved_model_version,
            traces: p.traces,
        }
    }
}

impl TryFrom<PlanPageWire> for PlanPage {
    type Error = String;
    fn try_from(w: PlanPageWire) -> Result<Self, String> {
        let plan = cost_model::query::decode_str(&w.plan).map_err(|e| e.to_string())?;
        Ok(PlanPage {
            saved: SavedPlan {
                id: w.id,
                title: w.title,
                notes: w.notes,
                author: w.author,
                created_at_ms: w.created_at_ms,
                forked_from: w.forked_from,
                saved_schema_version: w.saved_schema_version,
                saved_model_version: w.saved_model_version,
                plan,
            },
            traces: w.traces,
        })
    }
}

/// Reads `format` / `columns` options of an upload (query string or form).
pub fn trace_options(
    format: &str,
    columns: &str,
) -> Result<cost_model::trace::ParseOptions, InputError> {
    use cost_model::trace::{Format, ParseOptions};
    let format = match format.trim() {
        "" | "auto" => None,
        f => Some(Format::from_id(f).ok_or_else(|| {
            InputError::field(
                "format",
                format!(
                    "unknown format `{f}`; known formats: {}",
                    Format::known_list()
                ),
            )
        })?),
    };
    let cols: Vec<String> = columns
        .split(',')
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    Ok(ParseOptions {
        format,
        csv_columns: (!cols.is_empty()).then_some(cols),
    })
}

/// `2026-11-29 21:30 UTC` for a Unix time in milliseconds.
pub fn format_utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant, "chrono-Compatible
    // Low-Level Date Algorithms").
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_page_travels_with_its_plan_as_the_url_query() {
        let mut plan = Plan::default();
        plan.training.micro_batch = 3;
        plan.gpu.capacity_mib = 40192;
        plan.model.name = "custom".into();
        plan.model.linear_bias = true;
        let page = PlanPage {
            saved: SavedPlan {
                id: "abc".into(),
                title: "t".into(),
                notes: String::new(),
                author: "a".into(),
                created_at_ms: 1,
                forked_from: None,
                saved_schema_version: 1,
                saved_model_version: 2,
                plan: plan.clone(),
            },
            traces: Vec::new(),
        };
        let json = serde_json::to_value(&page).unwrap();
        assert_eq!(json["plan"], cost_model::query::encode(&plan).as_str());
        let back: PlanPage = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, page);
        // A query the decoder refuses is an error, not a default plan.
        let mut bad = json;
        bad["plan"] = "mb=lots".into();
        assert!(serde_json::from_value::<PlanPage>(bad).is_err());
    }

    fn body(v: serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn ids_are_url_safe_and_checked() {
        let id = encode_id([0xff, 0xee, 0xdd, 0, 1, 2, 0xfb, 0xef, 0xbe]);
        assert_eq!(id.len(), ID_CHARS);
        assert!(is_plan_id(&id), "{id}");
        assert_eq!(encode_id([0; 9]), "AAAAAAAAAAAA");
        assert_eq!(encode_id([0xff; 9]), "____________");
        assert!(!is_plan_id("short"));
        assert!(!is_plan_id("abc/def?ghij"));
        assert!(!is_plan_id("ABCDEFGHIJKLM"));
    }

    #[test]
    fn a_valid_body_is_accepted_and_trimmed() {
        let b = body(serde_json::json!({
            "title": "  8B on 8 × H100  ", "author": "ana", "plan": Plan::default()
        }));
        let p = NewPlan::from_json_body(&b).unwrap();
        assert_eq!(p.title, "8B on 8 × H100");
        assert_eq!(p.notes, "");
        assert_eq!(p.plan, Plan::default());
    }

    #[test]
    fn bad_bodies_name_the_line_or_field() {
        let e = NewPlan::from_json_body(b"{\n\"title\": \"x\",\n oops}").unwrap_err();
        assert!(matches!(e, InputError::Syntax { line: 3, .. }), "{e}");
        // A body saved with a UTF-8 byte-order mark reads as without it.
        let mut bom = b"\xef\xbb\xbf".to_vec();
        bom.extend(body(
            serde_json::json!({"title": "t", "plan": Plan::default()}),
        ));
        assert_eq!(NewPlan::from_json_body(&bom).unwrap().title, "t");
        let e = NewPlan::from_json_body(b"").unwrap_err();
        assert!(matches!(e, InputError::Syntax { .. }), "{e}");

        let e = NewPlan::from_json_body(&body(serde_json::json!({"plan": Plan::default()})))
            .unwrap_err();
        assert_eq!(e, InputError::field("title", "missing field `title`"));

        let e = NewPlan::from_json_body(&body(
            serde_json::json!({"title": "t", "plan": Plan::default(), "colour": 1}),
        ))
        .unwrap_err();
        assert!(
            matches!(&e, InputError::Field { field, .. } if field == "colour"),
            "{e}"
        );

        let mut plan = serde_json::to_value(Plan::default()).unwrap();
        plan["parallel"]["tp"] = serde_json::json!(3);
        let e = NewPlan::from_json_body(&body(serde_json::json!({"title": "t", "plan": plan})))
            .unwrap_err();
        assert!(
            matches!(&e, InputError::Field { field, .. } if field == "plan.model.heads"),
            "{e}"
        );

        let mut plan = serde_json::to_value(Plan::default()).unwrap();
        plan["training"]["micro_batch"] = serde_json::json!(-1);
        let e = NewPlan::from_json_body(&body(serde_json::json!({"title": "t", "plan": plan})))
            .unwrap_err();
        assert!(
            matches!(&e, InputError::Field { field, .. } if field == "plan.training.micro_batch"),
            "{e}"
        );

        let e = NewPlan::from_json_body(&body(
            serde_json::json!({"title": " ", "plan": Plan::default()}),
        ))
        .unwrap_err();
        assert!(
            matches!(&e, InputError::Field { field, .. } if field == "title"),
            "{e}"
        );

        let long = "x".repeat(TITLE_MAX_CHARS + 1);
        let e = NewPlan::new(&long, "", "", Plan::default(), None).unwrap_err();
        assert!(e.to_string().contains("at most 200"), "{e}");
        let e = NewPlan::new("t", "", "a\u{7}", Plan::default(), None).unwrap_err();
        assert!(e.to_string().starts_with("author"), "{e}");
        let e = NewPlan::new("t", "", "", Plan::default(), Some("../etc")).unwrap_err();
        assert!(e.to_string().starts_with("forked_from"), "{e}");
    }

    #[test]
    fn the_form_reads_the_plan_from_its_query() {
        let p = NewPlan::from_form("t", "line 1\nline 2", "", "mb=4&gpus=16", "").unwrap();
        assert_eq!(p.plan.training.micro_batch, 4);
        assert_eq!(p.plan.parallel.num_gpus, 16);
        assert_eq!(p.forked_from, None);
        let e = NewPlan::from_form("t", "", "", "mb=lots", "").unwrap_err();
        assert!(e.to_string().contains("mb"), "{e}");
    }

    #[test]
    fn stored_rows_load_back_equal() {
        let new = NewPlan::new("t", "n", "a", Plan::default(), Some("AAAAAAAAAAAA")).unwrap();
        let row = new
            .clone()
            .into_stored("BBBBBBBBBBBB".into(), 1_764_451_800_000);
        let saved = row.clone().load().unwrap();
        assert_eq!(saved.plan, new.plan);
        assert_eq!(saved.forked_from.as_deref(), Some("AAAAAAAAAAAA"));
        let s = PlanSummary::of(row);
        assert_eq!(s.num_gpus, 8);
        assert!(s.fits.is_some());
    }

    #[test]
    fn dates_are_utc() {
        assert_eq!(format_utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_utc(951_782_400_000), "2000-02-29 00:00 UTC");
        assert_eq!(format_utc(1_796_000_000_000), "2026-11-30 00:53 UTC");
        assert_eq!(format_utc(-1), "1969-12-31 23:59 UTC");
    }
}
