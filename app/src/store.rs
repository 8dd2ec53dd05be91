//! Server side of saved plans: the [`PlanStore`] trait the server's SQLite
//! and PostgreSQL stores implement, and the service functions that the JSON
//! API handlers and the server functions both call (one validation path).

use crate::api::{
    encode_id, is_plan_id, InputError, NewPlan, PlanList, PlanSummary, SavedPlan, StoredPlan,
    StoredTrace, TraceView, MAX_TRACE_BYTES, PAGE_SIZE,
};
use async_trait::async_trait;
use cost_model::schema::PlanLoadError;
use std::sync::Arc;

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The id is taken (the caller draws another).
    #[error("plan id already exists")]
    Conflict,
    /// The database failed; the message is logged, never shown to users.
    #[error("database error: {0}")]
    Backend(String),
}

/// Durable storage of saved plans. Rows are immutable: there is no update
/// and no delete. `insert` returns only once the row is durable.
#[async_trait]
pub trait PlanStore: Send + Sync + 'static {
    /// `sqlite` or `postgres`.
    fn backend(&self) -> &'static str;
    async fn insert(&self, plan: &StoredPlan) -> Result<(), StoreError>;
    async fn get(&self, id: &str) -> Result<Option<StoredPlan>, StoreError>;
    /// Plans whose title, model or GPU contains `query` (case-insensitive;
    /// empty matches all), newest first, and how many match in all.
    async fn list(
        &self,
        query: &str,
        offset: u64,
        limit: u32,
    ) -> Result<(Vec<StoredPlan>, u64), StoreError>;
    /// Stores a verification (durable on return).
    async fn insert_trace(&self, trace: &StoredTrace) -> Result<(), StoreError>;
    /// The verifications of a plan, oldest first, without their bodies.
    async fn traces(&self, plan_id: &str) -> Result<Vec<StoredTrace>, StoreError>;
    /// The compressed upload of one verification.
    async fn trace_body(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError>;
}

/// The store the server built in `main`, handed to handlers and server functions.
pub type SharedStore = Arc<dyn PlanStore>;

/// What a service call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Input(#[from] crate::api::InputError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No saved plan has this id.
    #[error("no saved plan has the id `{0}`")]
    NotFound(String),
    /// A stored plan no longer loads (a migration is missing): a server bug.
    #[error("stored plan {id} does not load: {error}")]
    Corrupt { id: String, error: PlanLoadError },
}

/// Draws a fresh 72-bit id from the operating system.
pub fn new_id() -> Result<String, StoreError> {
    let mut b = [0u8; 9];
    getrandom::fill(&mut b).map_err(|e| StoreError::Backend(format!("no randomness: {e}")))?;
    Ok(encode_id(b))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Saves a validated plan under a new id and returns the id.
pub async fn save(store: &dyn PlanStore, new: NewPlan) -> Result<String, ServiceError> {
    let now = now_ms();
    for _ in 0..4 {
        let id = new_id()?;
        match store
            .insert(&new.clone().into_stored(id.clone(), now))
            .await
        {
            Ok(()) => return Ok(id),
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(StoreError::Backend("four id collisions in a row".into()).into())
}

/// Loads a saved plan (`None`: no such id, or not an id at all).
pub async fn load(store: &dyn PlanStore, id: &str) -> Result<Option<SavedPlan>, ServiceError> {
    if !is_plan_id(id) {
        return Ok(None);
    }
    match store.get(id).await? {
        None => Ok(None),
        Some(row) => row.load().map(Some).map_err(|error| ServiceError::Corrupt {
            id: id.to_string(),
            error,
        }),
    }
}

/// One page (1-based) of saved plans matching `query`.
pub async fn list(store: &dyn PlanStore, query: &str, page: u32) -> Result<PlanList, ServiceError> {
    let query = query.trim();
    if query.chars().count() > 200 {
        return Err(crate::api::InputError::field("query", "is longer than 200 characters").into());
    }
    let page = page.max(1);
    let offset = (page as u64 - 1) * PAGE_SIZE as u64;
    let (rows, total) = store.list(query, offset, PAGE_SIZE).await?;
    Ok(PlanList {
        query: query.to_string(),
        page,
        per_page: PAGE_SIZE,
        total,
        plans: rows.into_iter().map(PlanSummary::of).collect(),
    })
}

/// How far a gzip-compressed trace may expand (a log compressed for upload;
/// the cap keeps a decompression bomb from running for long).
pub const MAX_TRACE_DECOMPRESSED_BYTES: u64 = 4 << 30;

/// A reader that fails, naming the cap, once more than `left` bytes are read.
struct Capped<R> {
    inner: R,
    left: u64,
    cap: u64,
}

impl<R: std::io::Read> std::io::Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            return Err(std::io::Error::other(format!(
                "the decompressed trace is larger than {} MiB",
                self.cap >> 20
            )));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// The text of a trace as uploaded or read from a file: gzip (magic bytes
/// 1f 8b, `nvidia-smi … | gzip`) is decompressed on the fly, up to
/// [`MAX_TRACE_DECOMPRESSED_BYTES`]; anything else is read as it is.
pub fn trace_text<'a, R: std::io::BufRead + 'a>(
    r: R,
) -> std::io::Result<Box<dyn std::io::BufRead + 'a>> {
    capped_text(r, MAX_TRACE_DECOMPRESSED_BYTES)
}

fn capped_text<'a, R: std::io::BufRead + 'a>(
    mut r: R,
    cap: u64,
) -> std::io::Result<Box<dyn std::io::BufRead + 'a>> {
    if r.fill_buf()?.starts_with(&[0x1F, 0x8B]) {
        let gz = flate2::bufread::MultiGzDecoder::new(r);
        Ok(Box::new(std::io::BufReader::with_capacity(
            1 << 20,
            Capped {
                inner: gz,
                left: cap,
                cap,
            },
        )))
    } else {
        Ok(Box::new(r))
    }
}

/// Parses an uploaded trace (gzip-compressed or not), judges it against the
/// saved plan, and stores both (the upload gzip-compressed).
pub async fn attach_trace(
    store: &dyn PlanStore,
    plan_id: &str,
    body: &[u8],
    filename: &str,
    opts: &cost_model::trace::ParseOptions,
) -> Result<TraceView, ServiceError> {
    use std::io::Write;
    let Some(saved) = load(store, plan_id).await? else {
        return Err(ServiceError::NotFound(plan_id.to_string()));
    };
    if body.len() as u64 > MAX_TRACE_BYTES {
        return Err(InputError::field(
            "trace",
            format!("is larger than {} MiB", MAX_TRACE_BYTES >> 20),
        )
        .into());
    }
    let filename: String = filename
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect();
    let text = trace_text(body).map_err(|e| InputError::field("trace", e.to_string()))?;
    let trace = cost_model::trace::parse_reader(text, opts).map_err(|e| {
        InputError::field(
            "trace",
            match e.line {
                Some(l) => format!("line {l}: {}", e.message),
                None => e.message,
            },
        )
    })?;
    let report = cost_model::trace::findings::report(&trace, Some(&saved.plan));
    // An upload that came compressed is kept as it came.
    let body_gz = if body.starts_with(&[0x1F, 0x8B]) {
        body.to_vec()
    } else {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(body)
            .and_then(|()| gz.flush())
            .map_err(|e| StoreError::Backend(format!("gzip: {e}")))?;
        gz.finish()
            .map_err(|e| StoreError::Backend(format!("gzip: {e}")))?
    };
    let report_json =
        serde_json::to_string(&report).map_err(|e| StoreError::Backend(e.to_string()))?;
    let row = StoredTrace {
        id: new_id()?,
        plan_id: plan_id.to_string(),
        created_at_ms: now_ms(),
        filename,
        format: report.format.id().to_string(),
        raw_bytes: body.len() as u64,
        body_gz,
        report_json,
    };
    store.insert_trace(&row).await?;
    row.view()
        .ok_or_else(|| StoreError::Backend("stored report does not read back".into()).into())
}

/// The verifications of a saved plan, oldest first.
pub async fn list_traces(
    store: &dyn PlanStore,
    plan_id: &str,
) -> Result<Vec<TraceView>, ServiceError> {
    if !is_plan_id(plan_id) {
        return Ok(Vec::new());
    }
    Ok(store
        .traces(plan_id)
        .await?
        .iter()
        .filter_map(StoredTrace::view)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_is_read_as_its_text_and_plain_text_as_it_is() {
        let text = b"timestamp, index, memory.used [MiB]\n1, 0, 100 MiB\n";
        for input in [gzip(text), text.to_vec()] {
            let mut out = Vec::new();
            trace_text(&input[..])
                .unwrap()
                .read_to_end(&mut out)
                .unwrap();
            assert_eq!(out, text);
        }
        // Two members back to back (`cat a.gz b.gz`) are one text.
        let two = [gzip(b"a\n"), gzip(b"b\n")].concat();
        let mut out = String::new();
        trace_text(&two[..])
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "a\nb\n");
    }

    #[test]
    fn a_decompression_bomb_stops_at_the_cap_with_a_reason() {
        // 64 MiB of zeros compress to ~64 KiB; a 1 MiB cap stops it.
        let bomb = gzip(&vec![0u8; 64 << 20]);
        assert!(bomb.len() < 1 << 20);
        let mut out = Vec::new();
        let err = capped_text(&bomb[..], 1 << 20)
            .unwrap()
            .read_to_end(&mut out)
            .unwrap_err();
        assert!(err.to_string().contains("larger than 1 MiB"), "{err}");
        assert!(out.len() <= 1 << 20);
        // A cut-off stream is an error, not a silently short text.
        let whole = gzip(&vec![b'x'; 1 << 16]);
        let mut out = Vec::new();
        assert!(trace_text(&whole[..whole.len() / 2])
            .unwrap()
            .read_to_end(&mut out)
            .is_err());
    }
}
