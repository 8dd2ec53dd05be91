//! Server side of saved plans: the [`PlanStore`] trait the server's SQLite
//! and PostgreSQL stores implement, and the service functions that the JSON
//! API handlers and the server functions both call (one validation path).

use crate::api::{
    encode_id, is_plan_id, NewPlan, PlanList, PlanSummary, SavedPlan, StoredPlan, PAGE_SIZE,
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
